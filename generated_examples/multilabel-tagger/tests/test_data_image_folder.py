"""Tests of the image_folder dataset: item shapes, batching and determinism."""

from __future__ import annotations

import torch
from torch.utils.data import DataLoader

from multilabel_tagger.data import DataBundle, build_data
from multilabel_tagger.data.image_folder import Options


def build(seed: int = 0) -> DataBundle:
    return build_data(Options(name="image_folder", num_samples=32), seed)


def test_items_have_the_declared_shapes() -> None:
    bundle = build()
    item = bundle.train[0]
    assert set(item) >= {"inputs", "targets"}
    assert len(bundle.train) > 0 and len(bundle.val) > 0
    spec = bundle.spec
    assert item["inputs"].shape == (spec.in_channels, spec.image_size, spec.image_size)
    assert item["targets"].dtype == torch.float32
    assert item["targets"].shape == (bundle.spec.num_outputs,)  # multi-hot
    assert set(item["targets"].unique().tolist()) <= {0.0, 1.0}


def test_batches_collate() -> None:
    bundle = build()
    batch = next(iter(DataLoader(bundle.train, batch_size=4, collate_fn=bundle.collate_fn)))
    assert batch["targets"].shape[0] == 4


def test_same_seed_same_data() -> None:
    a, b = build(seed=1), build(seed=1)
    for i in (0, len(a.train) - 1):
        assert torch.equal(a.train[i]["inputs"], b.train[i]["inputs"])
        assert torch.equal(a.train[i]["targets"], b.train[i]["targets"])
