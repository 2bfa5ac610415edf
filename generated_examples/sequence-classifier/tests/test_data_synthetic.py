"""Tests of the synthetic dataset: item shapes, batching and determinism."""

from __future__ import annotations

import torch
from torch.utils.data import DataLoader

from sequence_classifier.data import DataBundle, build_data
from sequence_classifier.data.synthetic import Options


def build(seed: int = 0) -> DataBundle:
    return build_data(Options(name="synthetic", num_samples=32), seed)


def test_items_have_the_declared_shapes() -> None:
    bundle = build()
    item = bundle.train[0]
    assert set(item) >= {"inputs", "targets"}
    assert len(bundle.train) > 0 and len(bundle.val) > 0
    assert item["inputs"].dim() == 1 and item["inputs"].dtype == torch.long
    assert int(item["inputs"].max()) < bundle.spec.vocab_size
    assert item["targets"].dtype == torch.long
    assert 0 <= int(item["targets"]) < bundle.spec.num_outputs


def test_batches_collate() -> None:
    bundle = build()
    batch = next(iter(DataLoader(bundle.train, batch_size=4, collate_fn=bundle.collate_fn)))
    assert batch["targets"].shape[0] == 4
    lengths, mask = batch["lengths"], batch["padding_mask"]
    assert batch["inputs"].shape == mask.shape == (4, int(lengths.max()))  # padded per batch
    assert torch.equal((~mask).sum(dim=1), lengths)
    assert bool((batch["inputs"][mask] == 0).all())  # padding positions hold the pad index
    assert bool((batch["inputs"][~mask] != 0).all())  # real tokens are never the pad index


def test_same_seed_same_data() -> None:
    a, b = build(seed=1), build(seed=1)
    for i in (0, len(a.train) - 1):
        assert torch.equal(a.train[i]["inputs"], b.train[i]["inputs"])
        assert torch.equal(a.train[i]["targets"], b.train[i]["targets"])
