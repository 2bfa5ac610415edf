    width = max(len(name) for name in [*result["per_class"], "class"])
    lines.append(f"{'class':<{width}}  precision  recall      f1  support")
    for name, m in result["per_class"].items():
        lines.append(
            f"{name:<{width}}  {m['precision']:9.4f}  {m['recall']:6.4f}  {m['f1']:6.4f}"
            f"  {m['support']:7d}"
        )
{{- feature_parts("evaluate.py", "confusion_matrix_files") }}
