    if run.config.train.logger == "wandb":
        from .wandb_logger import WandbTracker

        found.append(WandbTracker(run.out_dir, run.state))  # a resumed run: its W&B run
