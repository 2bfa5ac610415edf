its data prepared with the state saved in the checkpoint, exactly as in training. MAE,
RMSE and R^2 are in the target's own units; the loss is the model's (standardised) MSE.
