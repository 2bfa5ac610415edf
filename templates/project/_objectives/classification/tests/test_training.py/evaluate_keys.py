    assert {"accuracy", "macro_f1", "per_class", "confusion_matrix"} <= result.keys()
{{- feature_parts("tests/test_training.py", "confusion_matrix_files") }}
