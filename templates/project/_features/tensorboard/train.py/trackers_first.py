    if run.config.train.logger == "tensorboard":
        from .tensorboard_logger import TensorBoardTracker

        found.append(TensorBoardTracker(run.out_dir / "tensorboard"))
