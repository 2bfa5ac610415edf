    mask = item["targets"]  # class ids per pixel, or the ignore index
    assert mask.dtype == torch.long and mask.shape == item["inputs"].shape[1:]
    labelled = mask[mask != bundle.spec.ignore_index]
    assert labelled.numel() > 0 and 0 <= int(labelled.min()) <= int(labelled.max())
    assert int(labelled.max()) < bundle.spec.num_outputs
