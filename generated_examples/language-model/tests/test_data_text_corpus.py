"""Tests of the text_corpus dataset: item shapes, batching and determinism."""

from __future__ import annotations

import torch
from torch.utils.data import DataLoader

from language_model.data import DataBundle, build_data
from language_model.data.text_corpus import Options


def build(seed: int = 0) -> DataBundle:
    return build_data(Options(name="text_corpus", num_samples=32), seed)


def test_items_have_the_declared_shapes() -> None:
    bundle = build()
    item = bundle.train[0]
    assert set(item) >= {"inputs", "targets"}
    assert len(bundle.train) > 0 and len(bundle.val) > 0
    assert item["inputs"].shape == (bundle.spec.block_size,)
    assert item["inputs"].dtype == torch.long
    assert int(item["inputs"].max()) < bundle.spec.num_outputs
    assert torch.equal(item["targets"][:-1], item["inputs"][1:])  # the next tokens
    following = bundle.train[1]["inputs"]
    assert torch.equal(item["targets"][-1:], following[:1])  # blocks are contiguous


def test_batches_collate() -> None:
    bundle = build()
    batch = next(iter(DataLoader(bundle.train, batch_size=4, collate_fn=bundle.collate_fn)))
    assert batch["targets"].shape[0] == 4


def test_same_seed_same_data() -> None:
    a, b = build(seed=1), build(seed=1)
    for i in (0, len(a.train) - 1):
        assert torch.equal(a.train[i]["inputs"], b.train[i]["inputs"])
        assert torch.equal(a.train[i]["targets"], b.train[i]["targets"])
