"""The summary feature: at the start of `train`, a table of the model's modules with their
output shapes and parameter counts for one validation batch, its FLOPs per sample, and at
the end the throughput: samples per second (also in metrics.csv) and the achieved FLOP/s;
on a CUDA device of known peak, an estimate of the model FLOPs utilisation (MFU).

The FLOPs are torch's FlopCounterMode count of one forward pass (matrix products and
convolutions; element-wise work and recurrent layers are left out), and a training step
is three forward passes (forward + backward, as in the PaLM paper's MFU). The peak is the
device's dense bf16/fp16 tensor-core rate (PEAK_TFLOPS, by device name): an estimate,
highest under train.amp; a device not listed gets no MFU.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch.utils.data import DataLoader
from torch.utils.flop_counter import FlopCounterMode

from .engine import model_inputs, to_device
from .monitor import Tracker
from .runtime import Precision

PEAK_TFLOPS = {"H200": 989.0, "H100": 989.0, "A100": 312.0, "L40S": 362.0, "L4": 121.0}
PEAK_TFLOPS |= {"A10": 125.0, "V100": 125.0, "T4": 65.0, "RTX 4090": 165.0, "RTX 3090": 71.0}


class ModelSummary(Tracker):
    """Prints the table when made (at the start of a run); the throughput at its end."""

    def __init__(
        self, model: nn.Module, loader: DataLoader, precision: Precision, depth: int
    ) -> None:
        self.device = precision.device
        with torch.random.fork_rng(devices=[]):  # the run's random streams stay untouched
            batch = to_device(next(iter(loader)), self.device)
        rows, flops = module_table(model, batch, precision, depth)
        self.flops_per_sample = 3 * flops / len(batch["targets"])  # training: 3 forwards
        print(format_table(rows, model))
        print(f"training FLOPs per sample (3 x forward): {self.flops_per_sample / 1e9:.4g} G")
        self.rates: list[float] = []

    def log_metrics(self, split: str, row: dict[str, Any], step: int) -> None:
        if split == "train":
            self.rates.append(row["samples_per_sec"])

    def close(self, interrupted: bool) -> None:
        if self.rates:
            print(throughput(sum(self.rates) / len(self.rates), self.flops_per_sample, self.device))


@torch.no_grad()
def module_table(
    model: nn.Module, batch: dict[str, torch.Tensor], precision: Precision, depth: int
) -> tuple[list[tuple[str, str, str, int, int]], float]:
    """(name, type, output shape, parameters, trainable ones) of every module down to
    `depth` levels, from one forward pass in eval mode; and that pass's FLOPs."""
    shown = [(n, m) for n, m in model.named_modules() if n and n.count(".") < depth]
    shapes: dict[str, str] = {}

    def record(name: str) -> Any:
        def hook(_module: nn.Module, _inputs: Any, output: Any) -> None:  # None: output kept
            shapes.setdefault(name, shape_of(output))

        return hook

    hooks = [module.register_forward_hook(record(name)) for name, module in shown]
    was_training = model.training
    model.eval()
    try:
        with FlopCounterMode(display=False) as counter, precision.autocast():
            model(**model_inputs(batch))
    finally:
        model.train(was_training)
        for hook in hooks:
            hook.remove()
    rows = [
        (name, type(module).__name__, shapes.get(name, "-"), *parameters(module))
        for name, module in shown
    ]
    return rows, float(counter.get_total_flops())


def shape_of(output: Any) -> str:
    """The shape of a module's output: its first tensor's (in a tuple, list or dict)."""
    if isinstance(output, torch.Tensor):
        return str(tuple(output.shape))
    if isinstance(output, dict):
        output = list(output.values())
    if isinstance(output, (tuple, list)) and output:
        return shape_of(output[0])
    return "-"


def parameters(module: nn.Module) -> tuple[int, int]:
    """All parameters of `module` (its children's included) and the trainable ones."""
    sizes = [(p.numel(), p.requires_grad) for p in module.parameters()]
    return sum(n for n, _ in sizes), sum(n for n, trainable in sizes if trainable)


def format_table(rows: list[tuple[str, str, str, int, int]], model: nn.Module) -> str:
    header = ("module", "type", "output shape", "params", "trainable")
    lines = [header, *[(n, t, s, f"{p:,}", f"{tr:,}") for n, t, s, p, tr in rows]]
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    text = [
        "  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip()
        for line in lines
    ]
    total, trainable = parameters(model)
    size = sum(p.numel() * p.element_size() for p in model.parameters()) / 2**20
    text.append(
        f"{type(model).__name__}: {total:,} parameters, {trainable:,} trainable, "
        f"{total - trainable:,} frozen ({size:.2f} MiB)"
    )
    return "\n".join(text)


def throughput(samples_per_sec: float, flops_per_sample: float, device: torch.device) -> str:
    """Samples/s and achieved FLOP/s; on a CUDA device of known peak, the MFU estimate."""
    achieved = samples_per_sec * flops_per_sample / 1e12  # TFLOP/s
    line = f"throughput: {samples_per_sec:.1f} samples/s, {achieved:.3g} TFLOP/s of model FLOPs"
    if device.type != "cuda":
        return line
    name = torch.cuda.get_device_name(device)
    peak = next((v for k, v in PEAK_TFLOPS.items() if k in name), None)
    if peak is None:
        return f"{line}; no MFU: peak of {name} unknown (summary.PEAK_TFLOPS)"
    return f"{line}; MFU ~{achieved / peak:.1%} of {name}'s {peak:.0f} TFLOP/s (bf16 dense)"
