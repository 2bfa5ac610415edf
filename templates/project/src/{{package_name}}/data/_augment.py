"""Image augmentation for a training split, in plain torch ops (no torchvision).

`data.augment` picks a level: "none"; "light" (a crop of 80-100% of the image, scaled
back up, and a left-right flip); "standard" (a crop of 35-100% of the area at an aspect
ratio of 3/4 to 4/3, the flip, and brightness, contrast and saturation each scaled by
0.8-1.2). Evaluation never augments.

Exact resume: sample i of epoch e is augmented with a generator seeded by (train.seed, e,
i) alone, never by a worker's or the process's random state, so a run resumed mid-epoch
(with any number of DataLoader workers, or under torchrun) augments every sample exactly
as an uninterrupted run does. The epoch reaches the worker processes through a shared
tensor that the training sampler sets before each epoch (`ResumableSampler.set_epoch`).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

LEVELS = ("none", "light", "standard")


@dataclass(frozen=True)
class Policy:
    scale: tuple[float, float]  # the crop's area, as a share of the image's
    ratio: tuple[float, float]  # the crop's width / height
    jitter: float  # brightness, contrast and saturation are scaled by 1 +- jitter


POLICIES = {
    "light": Policy(scale=(0.8, 1.0), ratio=(1.0, 1.0), jitter=0.0),
    "standard": Policy(scale=(0.35, 1.0), ratio=(3 / 4, 4 / 3), jitter=0.2),
}


class EpochSeeds:
    """One generator per (seed, epoch, sample index); the epoch is shared with workers."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        # Shared memory: DataLoader workers (persistent, forked or spawned) see every update.
        self.epoch = torch.zeros((), dtype=torch.long).share_memory_()

    def set_epoch(self, epoch: int) -> None:
        self.epoch.fill_(epoch)

    def generator(self, index: int) -> torch.Generator:
        key = f"{self.seed}/{int(self.epoch)}/{index}".encode()
        seed = int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "little")
        return torch.Generator().manual_seed(seed)


def uniform(low: float, high: float, gen: torch.Generator) -> float:
    return low + (high - low) * float(torch.rand((), generator=gen))


def crop_box(
    height: int, width: int, policy: Policy, gen: torch.Generator
) -> tuple[int, int, int, int]:
    """A random crop (top, left, h, w) of an image of height x width pixels: its area a
    share of the image's within policy.scale, its width / height within policy.ratio."""
    area = uniform(*policy.scale, gen) * height * width
    ratio = math.exp(uniform(math.log(policy.ratio[0]), math.log(policy.ratio[1]), gen))
    w = min(max(round(math.sqrt(area * ratio)), 1), width)
    h = min(max(round(math.sqrt(area / ratio)), 1), height)
    top = int(torch.randint(0, height - h + 1, (), generator=gen))
    left = int(torch.randint(0, width - w + 1, (), generator=gen))
    return top, left, h, w


def random_resized_crop(image: torch.Tensor, policy: Policy, gen: torch.Generator) -> torch.Tensor:
    """A random crop of the image (3, H, W), scaled back to (3, H, W)."""
    _, height, width = image.shape
    top, left, h, w = crop_box(height, width, policy, gen)
    crop = image[None, :, top : top + h, left : left + w]  # (1, 3, h, w)
    size = (height, width)
    return F.interpolate(crop, size=size, mode="bilinear", align_corners=False)[0]  # (3, H, W)


def colour_jitter(image: torch.Tensor, amount: float, gen: torch.Generator) -> torch.Tensor:
    """Brightness, contrast and saturation of an RGB image (3, H, W) in [0, 1]."""
    image = image * uniform(1 - amount, 1 + amount, gen)  # brightness
    mean = image.mean()  # contrast pivots on the mean intensity
    image = mean + (image - mean) * uniform(1 - amount, 1 + amount, gen)
    grey = (image * torch.tensor([0.299, 0.587, 0.114]).view(3, 1, 1)).sum(0)  # (H, W)
    image = grey + (image - grey) * uniform(1 - amount, 1 + amount, gen)  # saturation
    return image.clamp(0.0, 1.0)  # (3, H, W)


def augment(image: torch.Tensor, level: str, flip: bool, gen: torch.Generator) -> torch.Tensor:
    """An augmented copy of an RGB image (3, H, W) in [0, 1] ("none": the image itself)."""
    if level == "none":
        return image
    policy = POLICIES[level]
    image = random_resized_crop(image, policy, gen)  # (3, H, W)
    if flip and float(torch.rand((), generator=gen)) < 0.5:
        image = image.flip(-1)  # (3, H, W), mirrored left-right
    if policy.jitter > 0:
        image = colour_jitter(image, policy.jitter, gen)  # (3, H, W)
    return image
