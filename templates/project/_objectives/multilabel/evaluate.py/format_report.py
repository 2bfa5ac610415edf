    width = max(len(name) for name in [*result["per_class"], "label"])
    lines.append(f"{'label':<{width}}  precision  recall      f1      ap  support  threshold")
    for name, m in result["per_class"].items():
        lines.append(
            f"{name:<{width}}  {m['precision']:9.4f}  {m['recall']:6.4f}  {m['f1']:6.4f}"
            f"  {m['average_precision']:6.4f}  {m['support']:7d}  {m['threshold']:9.3f}"
        )
