"""Tests of the image_masks dataset: item shapes, batching and determinism."""

from __future__ import annotations

import torch
from torch.utils.data import DataLoader

from segmenter.data import DataBundle, build_data
from segmenter.data.image_masks import Options


def build(seed: int = 0) -> DataBundle:
    return build_data(Options(name="image_masks", num_samples=32), seed)


def test_items_have_the_declared_shapes() -> None:
    bundle = build()
    item = bundle.train[0]
    assert set(item) >= {"inputs", "targets"}
    assert len(bundle.train) > 0 and len(bundle.val) > 0
    spec = bundle.spec
    assert item["inputs"].shape == (spec.in_channels, spec.image_size, spec.image_size)
    mask = item["targets"]  # class ids per pixel, or the ignore index
    assert mask.dtype == torch.long and mask.shape == item["inputs"].shape[1:]
    labelled = mask[mask != bundle.spec.ignore_index]
    assert labelled.numel() > 0 and 0 <= int(labelled.min()) <= int(labelled.max())
    assert int(labelled.max()) < bundle.spec.num_outputs


def test_batches_collate() -> None:
    bundle = build()
    batch = next(iter(DataLoader(bundle.train, batch_size=4, collate_fn=bundle.collate_fn)))
    assert batch["targets"].shape[0] == 4


def test_same_seed_same_data() -> None:
    a, b = build(seed=1), build(seed=1)
    for i in (0, len(a.train) - 1):
        assert torch.equal(a.train[i]["inputs"], b.train[i]["inputs"])
        assert torch.equal(a.train[i]["targets"], b.train[i]["targets"])
