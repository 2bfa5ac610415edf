"""Batching variable-length token sequences."""

from __future__ import annotations

import torch
from torch.nn.utils.rnn import pad_sequence

PAD_INDEX = 0


def pad_collate(batch: list[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """Pad 1-D token tensors to the longest in the batch, with lengths and a padding mask.

    Example, two samples of lengths 3 and 1:
        [{"inputs": tensor([5, 6, 7]), "targets": tensor(1)},
         {"inputs": tensor([8]),       "targets": tensor(0)}]
    becomes
        {"inputs":       tensor([[5, 6, 7], [8, 0, 0]]),          # (B, T)
         "lengths":      tensor([3, 1]),                          # (B,)
         "padding_mask": tensor([[False, False, False],
                                 [False, True,  True ]]),         # (B, T), True = padding
         "targets":      tensor([1, 0])}                          # (B,)
    The mask follows PyTorch's `src_key_padding_mask` convention (True marks padding).
    """
    sequences = [item["inputs"] for item in batch]
    inputs = pad_sequence(sequences, batch_first=True, padding_value=PAD_INDEX)  # (B, T)
    lengths = torch.tensor([len(s) for s in sequences], dtype=torch.long)  # (B,)
    positions = torch.arange(inputs.shape[1])  # (T,)
    padding_mask = positions[None, :] >= lengths[:, None]  # (B, T)
    targets = torch.stack([item["targets"] for item in batch])  # (B,)
    return {"inputs": inputs, "lengths": lengths, "padding_mask": padding_mask, "targets": targets}
