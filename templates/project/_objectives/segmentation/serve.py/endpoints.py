{% include "_features/serve/predict_routes.py" %}

OUTPUTS = "per input: the mask (class id per pixel) as a base64 PNG, each class's pixel share"


def results(inference: Inference, outputs: torch.Tensor) -> list[dict[str, Any]]:
    """Per input: the mask `predict` would write (palette PNG, base64) and the class shares."""
    task = inference.task
    saved = [tuple(c) for c in inference.state.get("palette") or []]
    palette = [c for colour in saved or colour_table(task.num_classes) for c in colour]
    records = []
    for ids in outputs.argmax(dim=1):  # (H, W) class ids
        mask = Image.fromarray(ids.numpy().astype(np.uint8), mode="P")
        mask.putpalette(palette)
        png = BytesIO()
        mask.save(png, format="PNG")
        counts = torch.bincount(ids.flatten(), minlength=task.num_classes)  # (K,)
        shares = (counts.double() / ids.numel()).tolist()
        records.append(
            {
                "mask_png": base64.b64encode(png.getvalue()).decode("ascii"),
                "class_shares": dict(zip(task.class_names, shares, strict=True)),
            }
        )
    return records
