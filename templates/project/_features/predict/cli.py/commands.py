predict
