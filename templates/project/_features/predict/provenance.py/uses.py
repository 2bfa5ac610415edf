    "python -m {package} predict --checkpoint {path} INPUT...",
