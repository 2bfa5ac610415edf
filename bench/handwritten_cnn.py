"""A hand-written CNN of the pytorch-patterns guide's shape, trained the plain way: the
reference the generated project's default image models are measured against.

    python bench/handwritten_cnn.py ROOT --size 32 --epochs 10 --seed 1

The guide's model: one conv-bn-relu block of 64 channels, a 2x2 max-pool, and a linear
layer on the flattened feature map (64 x size/2 x size/2; the guide hard-codes 64 * 16 *
16 for 32x32 inputs). Adam at 1e-3, batch 32, no schedule, no clipping, no AMP. Images
are read as the generated project reads them (Pillow, RGB, bilinear resize) and
normalised with the training split's per-channel mean and std. Prints one line per epoch,
`epoch N accuracy A`, so that a caller can time each epoch from the outside.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch
from PIL import Image
from torch import nn


class GuideCNN(nn.Module):
    def __init__(self, size: int, num_classes: int, dropout: float = 0.5) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 64, kernel_size=3, padding=1),
            nn.BatchNorm2d(64),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
        )
        self.classifier = nn.Sequential(
            nn.Dropout(dropout), nn.Linear(64 * (size // 2) ** 2, num_classes)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x).flatten(1))


def load_split(root: Path, size: int, classes: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
    images, labels = [], []
    for label, name in enumerate(classes):
        for path in sorted((root / name).glob("*.png")):
            with Image.open(path) as image:
                rgb = image.convert("RGB").resize((size, size), Image.Resampling.BILINEAR)
            pixels = torch.frombuffer(bytearray(rgb.tobytes()), dtype=torch.uint8)
            images.append(pixels.view(size, size, 3).permute(2, 0, 1).float() / 255)
            labels.append(label)
    return torch.stack(images), torch.tensor(labels)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--size", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    classes = sorted(p.name for p in (args.root / "train").iterdir() if p.is_dir())
    x_train, y_train = load_split(args.root / "train", args.size, classes)
    x_val, y_val = load_split(args.root / "val", args.size, classes)
    mean = x_train.mean(dim=(0, 2, 3), keepdim=True)
    std = x_train.std(dim=(0, 2, 3), keepdim=True)
    x_train, x_val = (x_train - mean) / std, (x_val - mean) / std
    model = GuideCNN(args.size, len(classes))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(1, args.epochs + 1):
        model.train()
        order = torch.randperm(len(x_train))
        for i in range(0, len(order) - args.batch_size + 1, args.batch_size):
            batch = order[i : i + args.batch_size]
            loss = nn.functional.cross_entropy(model(x_train[batch]), y_train[batch])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            accuracy = float((model(x_val).argmax(dim=1) == y_val).float().mean())
        print(f"epoch {epoch} accuracy {accuracy:.4f}", flush=True)


if __name__ == "__main__":
    main()
