{% if objective == "classification" %}

def write_reports(
    result: dict[str, Any], checkpoint: str, output_dir: str | None
) -> dict[str, str]:
    """The confusion matrix of `result` as CSV (rows: true class, columns: predicted) and,
    with matplotlib, as a PNG, named after the checkpoint and split, beside the checkpoint
    or in `output_dir`; returns their paths by name."""
    folder = Path(output_dir) if output_dir else Path(checkpoint).parent
    folder.mkdir(parents=True, exist_ok=True)
    stem = folder / f"{Path(checkpoint).stem}-{result['split']}-confusion"
    names, matrix = list(result["per_class"]), result["confusion_matrix"]
    with open(stem.with_suffix(".csv"), "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["true \\ predicted", *names])
        writer.writerows([name, *row] for name, row in zip(names, matrix, strict=True))
    written = {"confusion_matrix_csv": str(stem.with_suffix(".csv"))}
    if importlib.util.find_spec("matplotlib") is not None:  # the plot extra
        from .plot import plot_confusion

        written["confusion_matrix_png"] = str(plot_confusion(matrix, names, stem))
    return written
{%- endif %}
