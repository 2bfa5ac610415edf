    if run.config.train.logger == "mlflow":
        from .mlflow_logger import MlflowTracker

        found.append(MlflowTracker(run.out_dir, run.state))  # a resumed run: its MLflow run
