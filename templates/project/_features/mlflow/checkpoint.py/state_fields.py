    mlflow_run_id: str = ""  # train.logger=mlflow: the MLflow run a resumed run continues
