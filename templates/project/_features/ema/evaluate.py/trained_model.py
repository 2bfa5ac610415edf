    checkpoint = inference_weights(checkpoint, config)  # train.ema_eval: the averaged weights
