    predict.add_arguments(
        add("predict", "Run a trained model on new inputs: a result per input, JSON lines or CSV.")
    )
