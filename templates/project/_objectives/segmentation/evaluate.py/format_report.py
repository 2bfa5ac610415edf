    width = max(len(name) for name in [*result["per_class"], "class"])
    lines.append(f"{'class':<{width}}     iou     pixels")
    for name, m in result["per_class"].items():
        lines.append(f"{name:<{width}}  {m['iou']:6.4f}  {m['pixels']:9d}")
