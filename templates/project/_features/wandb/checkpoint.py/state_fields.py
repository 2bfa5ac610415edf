    wandb_run_id: str = ""  # train.logger=wandb: the W&B run a resumed run continues
