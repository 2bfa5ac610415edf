    "python -m {package} export --checkpoint {path} --format onnx",
