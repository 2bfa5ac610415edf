"""The `hf-vision` kind on real images: a tiny ViT pretrained by the project itself,
fine-tuned through `model.pretrained` + `data.processor`, beside the same ViT from scratch
and the default `cnn`.

    PYTHONPATH=src python bench/bench_hf_vision.py [--out-dir /tmp/ptgen-hf-vision] [--json PATH]

Data as bench_transfer.py: scikit-learn's bundled 8x8 digits as PNGs (every 5th image of
a digit is validation); source digits 0-5, every training image; target digits 6-9 with
`--per-class` (25) training images each and every validation image of 6-9.

1. Pretrain: the project's small untrained ViT (`hf-vision` with model.pretrained empty:
   2 layers, width 64, patches of 4) on digits 0-5.
2. Publish it as a Hugging Face model folder: its backbone's weights as a `ViTModel`
   (`save_pretrained`) and a `ViTImageProcessor` with the source run's size and the
   mean/std it normalised with, so fine-tuning prepares pixels as pretraining did.
3. Fine-tune on digits 6-9, side by side over the same seeds: `cnn` from scratch,
   `hf-vision` from scratch, `hf-vision` from the folder (model.pretrained and
   data.processor), and the same with train.freeze_epochs=2 (head only, then everything).

All at the defaults (train.epochs 10, lr 0.001, batch 32, adamw, cosine) except
data.image_size=16 (the digits are 8x8; 32 only costs time) and, for the recipe row,
train.freeze_epochs=2. Needs scikit-learn (pip) and transformers.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch
from bench_transfer import SOURCE, TARGET, subset
from real_data import digits_folder, train_and_evaluate

from ptgen.components import add_component
from ptgen.project import ProjectOptions, new_project

HERE = Path(__file__).resolve().parent
PKG = "hfvision"


def publish(checkpoint: Path, folder: Path) -> None:
    """The source run's backbone as a ViTModel folder with its image processor."""
    from transformers import ViTConfig, ViTImageProcessor, ViTModel

    saved = torch.load(checkpoint, map_location="cpu", weights_only=True)
    state = saved["data_state"]
    size = int(saved["config"]["data"]["image_size"])
    config = ViTConfig(
        image_size=size,
        patch_size=4,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=128,
    )  # fmt: skip: the project's small ViT for 16-pixel images
    model = ViTModel(config, add_pooling_layer=False)
    weights = {
        k.removeprefix("backbone."): v
        for k, v in saved["model_state_dict"].items()
        if k.startswith("backbone.")
    }
    model.load_state_dict(weights, strict=True)
    model.save_pretrained(folder)
    ViTImageProcessor(
        size={"height": size, "width": size},
        image_mean=state["mean"].tolist(),
        image_std=state["std"].tolist(),
    ).save_pretrained(folder)


def benchmark(workdir: Path, per_class: int, seeds: list[int]) -> dict:
    digits = digits_folder(workdir / "digits")
    source_root = subset(digits, workdir / "source", SOURCE, None)
    target_root = subset(digits, workdir / "target", TARGET, per_class)
    options = ProjectOptions(
        name=PKG, task="image-classification", model="hf-vision", features=("finetune",)
    )
    project = new_project(options, workdir, run_smoke=False).path
    add_component(project, "dataset", "digits", "image-folder")
    add_component(project, "model", "cnn", "cnn")
    common = ["data.name=digits", "data.image_size=16"]
    start = time.perf_counter()
    source_run, seconds = train_and_evaluate(
        project, PKG, [*common, "model.name=hf_vision", f"data.root={source_root}"], "source"
    )
    accuracy = source_run["accuracy"]
    print(f"pretrained on digits {SOURCE}: val accuracy {accuracy:.3f} ({seconds:.0f} s)")
    folder = workdir / "tiny-vit-digits"
    publish(project / "runs" / "source" / "last.pt", folder)
    pretrained = [f"model.pretrained={folder}", f"data.processor={folder}"]
    contenders = {
        "cnn scratch": ["model.name=cnn"],
        "hf-vision scratch": ["model.name=hf_vision"],
        "hf-vision pretrained": ["model.name=hf_vision", *pretrained],
        "hf-vision pretrained, freeze_epochs=2": [
            "model.name=hf_vision",
            *pretrained,
            "train.freeze_epochs=2",
        ],
    }
    results: dict[str, list[float]] = {name: [] for name in contenders}
    for seed in seeds:  # interleaved: every contender at each seed before the next seed
        for name, extra in contenders.items():
            settings = [*common, f"data.root={target_root}", f"train.seed={seed}", *extra]
            tag = name.replace(" ", "-").replace(",", "").replace("=", "")
            result, _ = train_and_evaluate(project, PKG, settings, f"{tag}-{seed}")
            results[name].append(result["accuracy"])
            print(f"seed {seed} {name:40} val accuracy {result['accuracy']:.3f}", flush=True)
    return {
        "source_val_accuracy": source_run["accuracy"],
        "per_class": per_class,
        "num_target_train": per_class * len(TARGET),
        "num_target_val": sum(1 for _ in (target_root / "val").rglob("*.png")),
        "seeds": seeds,
        "accuracy": results,
        "settings": common,
        "seconds": round(time.perf_counter() - start, 1),
        "torch": torch.__version__,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", type=Path, default=Path("/tmp/ptgen-hf-vision"))
    parser.add_argument("--per-class", type=int, default=25)
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--json", type=Path, default=HERE / "bench_hf_vision.json")
    args = parser.parse_args()
    if args.out_dir.exists():
        sys.exit(f"{args.out_dir} exists; pass a fresh --out-dir")
    seeds = [int(s) for s in args.seeds.split(",")]
    result = benchmark(args.out_dir, args.per_class, seeds)
    print(f"\nsource (digits {SOURCE}) val accuracy {result['source_val_accuracy']:.3f}")
    print(f"{'target digits ' + TARGET:40} {'mean':>6} {'std':>6}")
    for name, values in result["accuracy"].items():
        mean, std = statistics.mean(values), statistics.stdev(values)
        print(f"{name:40} {mean:6.3f} {std:6.3f}")
    args.json.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
