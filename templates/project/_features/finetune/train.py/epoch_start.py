        head_only(run.model, run.config, state.epoch)  # train.freeze_epochs
        frozen_batch_norm_eval(run.model, run.config.model)  # model.freeze_bn
