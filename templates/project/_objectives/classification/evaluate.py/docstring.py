its data prepared with the state saved in the checkpoint, exactly as in training. Per
class: precision, recall, F1, support.
{{- feature_parts("evaluate.py", "confusion_matrix_files_doc") }}
