extra; run it with onnxruntime). Both take any batch size and image size (height and width
each at least MIN_SIDE). Beside the model,
FILE.json says what a consumer needs: the inputs (names, dtypes, shapes),
the class names,
the preprocessing of raw inputs (from the dataset's `raw_inputs`), and the torch and
