

def plot_confusion(matrix: list[list[int]], names: list[str], stem: Path) -> Path:
    """The confusion matrix as a PNG (rows: true class, columns: predicted), counts written
    in the cells when there are few classes."""
    plt = pyplot()
    size = min(4 + 0.4 * len(names), 30)
    figure, axes = plt.subplots(figsize=(size, size))
    image = axes.imshow(matrix, cmap="Blues")
    figure.colorbar(image, ax=axes, fraction=0.046)
    if len(names) <= 30:  # beyond that, labels and counts no longer fit
        axes.set_xticks(range(len(names)), names, rotation=90)
        axes.set_yticks(range(len(names)), names)
        dark = max(max(row) for row in matrix) / 2  # white counts on the darker cells
        for i, row in enumerate(matrix):
            for j, count in enumerate(row):
                colour = "white" if count > dark else "black"
                axes.text(j, i, str(count), ha="center", va="center", color=colour, fontsize=8)
    axes.set(xlabel="predicted", ylabel="true", title="confusion matrix")
    target = stem.with_suffix(".png")
    figure.tight_layout()
    figure.savefig(target, dpi=100)
    plt.close(figure)
    return target
