"""Fixed vs variable length (vs variable + bucketing) for token sequences: padding and speed.

    PYTHONPATH=src python bench/bench_padding.py --repeats 5 --json bench/bench_padding.json

Generates a sequence-classification project with ptgen's library API (the project's
default `transformer`: width 32, depth 2, 4 heads) and adds two `text` datasets:
`text_var` (`variable_length=True`: `pad_collate` pads each batch to its own longest
sequence, with lengths and padding mask; optional `data.bucket_by_length`) and
`text_fixed` (`variable_length=False`: `PadTo` pads or cuts every sample to
`data.max_length` in the dataset). Three modes per data source:

- fixed:             text_fixed
- variable:          text_var, data.bucket_by_length=false
- variable + bucket: text_var, data.bucket_by_length=true

Data sources:
  - real text: four categories of Debian's `fortunes` (apt-get install fortunes; 2942
    training texts), tokenised by the text kind, data.max_length=128,
    data.vocab_size=8000;
  - the project's synthetic sequences (the same two components with an empty
    `data.root`: uniform lengths 4..64, 4096 training samples).

For each mode everything comes from the project's own code: `train.build_run` (model,
the project's fused AdamW, `runtime.precision`, the real training DataLoader with its
sampler and, for bucketing, its BucketBatchSampler), seed 42, batch size 32,
`drop_last`, one thread.

(a) Padding share: padded positions / all positions, summed over every batch the
    training DataLoader yields in epoch 0, read from each batch's `padding_mask`.
(b) Training speed: the epoch-0 batches are collected once (collation is not timed);
    a round is one pass over all of them with the project's training step,
    `engine.forward_backward` + `engine.optimizer_step` (clipping at
    `train.grad_clip`; the scheduler is not stepped). Rounds of the three modes are
    interleaved (rotating order) and repeated `--repeats` times after a short warm-up;
    steps/s and samples/s are medians over rounds, and the speed ratio vs fixed is the
    median over repeats of (fixed round time / mode round time). Wall and process CPU
    time are both reported; the table shows CPU time (it moves less with other load).
(c) Loader: one pass of the real training DataLoader (sampler, dataset, collation),
    timed the same way; ms per batch.

All three modes start from the same initial weights (same vocabulary, so the same
model). As a check that padding does not change what the model computes, 32 validation
samples go through the model as one fixed-length batch and each alone without padding,
and the eval-mode logits are compared (`max_logit_diff`).
Prints a Markdown table and writes JSON (default bench/bench_padding.json).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import torch
from _common import (
    PACKAGE,
    Times,
    clocks,
    generate_project,
    import_project,
    interleaved,
    machine,
    median,
    print_table,
    since,
    write_json,
)

from ptgen.components import add_component

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from real_data import CATEGORIES, fortunes_tsv  # noqa: E402  (a sibling script)

MODES = {  # name: [data.* overrides]
    "fixed": ["data.name=text_fixed"],
    "variable": ["data.name=text_var", "data.bucket_by_length=false"],
    "variable + bucket": ["data.name=text_var", "data.bucket_by_length=true"],
}


def sources(tsv: Path) -> dict[str, tuple[str, list[str]]]:
    """--sources key: (label, data.* overrides)."""
    return {
        "text": (
            "text: fortunes, max_length 128",
            [f"data.root={tsv}", "data.max_length=128", "data.vocab_size=8000"],
        ),
        # an empty data.root: the project's synthetic sequences, through the same components
        "synthetic": ("synthetic, lengths 4..64", ["data.num_samples=4096"]),
    }


class Mode:
    """One mode's run (from the project's build_run), its epoch-0 batches and its step."""

    def __init__(self, mods: dict[str, Any], overrides: list[str], out_dir: Path) -> None:
        self.mods = mods
        config = mods["config"].load_config(
            None, [*overrides, "train.device=cpu", f"train.out_dir={out_dir}"]
        )
        self.run = mods["train"].build_run(config, mods["runtime"].DistInfo(), torch.device("cpu"))
        self.run.sampler.set_epoch(0)
        self.batches = list(self.run.train_loader)
        self.run.train_model.train()

    def padding(self) -> dict[str, Any]:
        masks = [batch["padding_mask"] for batch in self.batches]
        padded = sum(int(mask.sum()) for mask in masks)
        positions = sum(mask.numel() for mask in masks)
        real = [int(length) for batch in self.batches for length in batch["lengths"]]
        return {
            "padding_share": padded / positions,
            "batches": len(masks),
            "positions": positions,
            "real_tokens": positions - padded,
            "mean_padded_length": positions / sum(len(mask) for mask in masks),
            "mean_length": sum(real) / len(real),
            "samples": len(self.run.train_loader.dataset),
        }

    def train_epoch(self, batches: list[dict[str, torch.Tensor]] | None = None) -> Times:
        """The project's training step on every batch of epoch 0 (or on `batches`)."""
        engine, run = self.mods["engine"], self.run
        start = clocks()
        for batch in self.batches if batches is None else batches:
            engine.forward_backward(run.train_model, batch, run.task, run.precision)
            engine.optimizer_step(run.optimizer, run.precision.scaler, run.config.train.grad_clip)
        return since(start)

    def load_epoch(self) -> Times:
        """One pass of the real training DataLoader, epoch 0."""
        self.run.sampler.set_epoch(0)
        start = clocks()
        for _ in self.run.train_loader:
            pass
        return since(start)


def same_logits(modes: dict[str, Mode]) -> float:
    """Largest |logit difference| between 32 validation samples as a fixed-length batch
    (padded to data.max_length) and each alone through `pad_collate` (no padding at all),
    same weights, eval mode: what padding changes in the outputs."""
    fixed, variable = modes["fixed"].run, modes["variable"].run
    variable.model.load_state_dict(fixed.model.state_dict())
    pad_collate = importlib.import_module(f"{PACKAGE}.data._sequences").pad_collate
    inputs = modes["fixed"].mods["engine"].model_inputs
    indices = range(min(32, len(fixed.val_loader.dataset)))
    batch = torch.utils.data.default_collate([fixed.val_loader.dataset[i] for i in indices])
    singles = [pad_collate([variable.val_loader.dataset[i]]) for i in indices]
    fixed.model.eval()
    variable.model.eval()
    with torch.no_grad():
        padded = fixed.model(**inputs(batch))
        alone = torch.cat([variable.model(**inputs(single)) for single in singles])
    fixed.model.train()
    variable.model.train()
    return float((padded - alone).abs().max())


def measure(
    mods: dict[str, Any], overrides: list[str], tmp: Path, args: argparse.Namespace
) -> dict[str, Any]:
    modes = {name: Mode(mods, [*overrides, *extra], tmp / name) for name, extra in MODES.items()}
    base = modes["fixed"].run.model.state_dict()
    for mode in modes.values():  # identical initial weights (same vocabulary, same model)
        mode.run.model.load_state_dict(base)
    logit_diff = same_logits(modes)
    for mode in modes.values():
        mode.run.model.load_state_dict(base)
    warmup = {n: (lambda m=m: m.train_epoch(m.batches[: args.warmup])) for n, m in modes.items()}
    interleaved(warmup, 1)
    train = interleaved({n: m.train_epoch for n, m in modes.items()}, args.repeats)
    load = interleaved({n: m.load_epoch for n, m in modes.items()}, args.repeats)
    model = modes["fixed"].run.model
    result: dict[str, Any] = {
        "overrides": overrides,
        "parameters": sum(p.numel() for p in model.parameters()),
        "max_logit_diff": logit_diff,
        "modes": {},
    }
    for name, mode in modes.items():
        steps = len(mode.batches)
        samples = steps * mode.run.config.train.batch_size
        row: dict[str, Any] = {**mode.padding(), "round_s": train[name], "load_s": load[name]}
        for index, clock in enumerate(("wall", "cpu")):
            rounds = [t[index] for t in train[name]]
            ratios = [f[index] / t[index] for f, t in zip(train["fixed"], train[name], strict=True)]
            row[clock] = {
                "steps_per_s": median([steps / r for r in rounds]),
                "samples_per_s": median([samples / r for r in rounds]),
                "ms_per_step": median(rounds) / steps * 1e3,
                "speed_vs_fixed": median(ratios),
                "loader_ms_per_batch": median([t[index] for t in load[name]]) / steps * 1e3,
            }
        result["modes"][name] = row
    return result


def report(results: dict[str, Any], settings: dict[str, Any]) -> None:
    parameters = ", ".join(f"{r['parameters']:,}" for r in results.values())
    print(
        f"\ntransformer (project default; {parameters} parameters), batch "
        f"{settings['batch_size']}, {settings['threads']} thread(s), seed 42; padding over all "
        f"training batches of epoch 0; speed: {settings['repeats']} interleaved rounds of one "
        "epoch each, medians (CPU time; speed vs fixed: median [min, max] of per-repeat "
        "ratios)\n"
    )
    headers = [
        "data",
        "mode",
        "batches",
        "mean length",
        "mean padded length",
        "padding share",
        "steps/s",
        "samples/s",
        "speed vs fixed",
        "wall speed vs fixed",
        "loader ms/batch",
    ]
    rows = []
    for label, result in results.items():
        fixed = result["modes"]["fixed"]["round_s"]
        for name, row in result["modes"].items():
            cpu = [f[1] / t[1] for f, t in zip(fixed, row["round_s"], strict=True)]
            rows.append(
                [
                    label,
                    name,
                    row["batches"],
                    row["mean_length"],
                    row["mean_padded_length"],
                    f"{row['padding_share']:.1%}",
                    row["cpu"]["steps_per_s"],
                    row["cpu"]["samples_per_s"],
                    f"{median(cpu):.2f}x [{min(cpu):.2f}, {max(cpu):.2f}]",
                    f"{row['wall']['speed_vs_fixed']:.2f}x",
                    row["cpu"]["loader_ms_per_batch"],
                ]
            )
    print_table(headers, rows)
    for label, result in results.items():
        print(
            f"\n{label}: eval logits of 32 samples padded to max_length vs unpadded, "
            f"max |diff| {result['max_logit_diff']:.2e}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=5, help="interleaved rounds per mode")
    parser.add_argument("--warmup", type=int, default=5, help="untimed steps per mode first")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--sources", nargs="+", default=["text", "synthetic"], choices=["text", "synthetic"]
    )
    parser.add_argument("--json", type=Path, default=HERE / "bench_padding.json")
    parser.add_argument(
        "--from-json", type=Path, help="no run: print the table of an earlier --json output"
    )
    args = parser.parse_args()
    if args.from_json:
        payload = json.loads(args.from_json.read_text(encoding="utf-8"))
        results = {k: v for k, v in payload.items() if isinstance(v, dict) and "modes" in v}
        report(results, payload["settings"])
        return
    torch.set_num_threads(args.threads)
    if args.threads == 1 and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core: no migrations
    results = {}
    with tempfile.TemporaryDirectory(prefix="bench-padding-") as tmp:
        work = Path(tmp)
        project = generate_project(work, task="sequence-classification")
        add_component(project, "dataset", "text_var", "text", variable_length=True)
        add_component(project, "dataset", "text_fixed", "text", variable_length=False)
        mods = import_project(project)
        tsv = fortunes_tsv(work / "fortunes.tsv")
        for key, (label, overrides) in sources(tsv).items():
            if key in args.sources:
                overrides = [*overrides, f"train.batch_size={args.batch_size}"]
                results[label] = measure(mods, overrides, work / key, args)
                print(f"measured {label}", flush=True)
    report(results, vars(args))
    write_json(
        args.json,
        {
            "benchmark": "padding",
            "settings": {**vars(args), "json": str(args.json), "fortunes": list(CATEGORIES)},
            "machine": machine(),
            **results,
        },
    )


if __name__ == "__main__":
    main()
