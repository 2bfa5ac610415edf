    "python -m {package} serve --checkpoint {path}  # HTTP on 127.0.0.1:8000",
