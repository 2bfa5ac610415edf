"""Starting from pretrained weights: `model.init_from` and `model.freeze`.

`init_from` loads weights, not a run. Tensors are matched by name (`module.` and
`_orig_mod.` prefixes dropped); those whose shape differs, a head with another number of
classes say, keep the model's own fresh initialisation. A file none of whose tensors fits
is refused (another model's file, most likely; a folder is named as one), one that fills
under half of the model's tensors is loaded with a warning. The optimizer, the schedule and
the step start from zero. Continuing a run is `train.resume`, which wins when both are set.

`freeze` turns off the gradients of parameters under some module paths; the optimizer
leaves them out, and BatchNorm layers among them stay in eval mode (`model.freeze_bn`).

`train.freeze_epochs` trains only the head (the model's last top-level module with
parameters) for the first N epochs, then the whole model: the body stays in the optimizer
throughout, without gradients while frozen (so the optimizer skips it and its state is
untouched), at its own learning rate. Which parts train follows from the epoch alone, so a
run resumed before, at or after the unfreeze continues exactly.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn

from .checkpoint import CheckpointError, clean_state_dict, load_weights_only
from .config import Config, ConfigError, ModelConfig
from .models import unwrap

BATCH_NORMS = (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d, nn.SyncBatchNorm)
WEIGHT_SUFFIXES = (".pt", ".pth", ".safetensors")  # files init_from reads


@dataclass
class InitReport:
    """Which of the model's tensors `init_from` filled from the file, and which not."""

    path: Path
    loaded: list[str] = field(default_factory=list)
    reinitialised: list[str] = field(default_factory=list)  # "name (saved) -> (model)"
    missing: list[str] = field(default_factory=list)  # in the model, not in the file
    unexpected: list[str] = field(default_factory=list)  # in the file, not in the model

    def rows(self) -> list[tuple[str, list[str]]]:
        return [
            ("loaded", self.loaded),
            ("re-initialised", self.reinitialised),
            ("missing", self.missing),
            ("unexpected", self.unexpected),
        ]

    def table(self) -> str:
        """One line per outcome: how many tensors, and the first names of all but `loaded`."""
        lines = [f"model.init_from {self.path}:"]
        for label, names in self.rows():
            shown = "" if label == "loaded" else ", ".join(names[:3])
            shown += f", ... ({len(names) - 3} more)" if len(names) > 3 and shown else ""
            lines.append(f"  {label:<15}{len(names):>5} tensors  {shown}".rstrip())
        return "\n".join(lines)

    def mismatches(self) -> str:
        """The counts of everything not loaded, in words ("" when everything was)."""
        return ", ".join(f"{len(names)} {label}" for label, names in self.rows()[1:] if names)


def read_weights(path: Path) -> dict[str, torch.Tensor]:
    """The tensors of a checkpoint of this project, a plain state_dict (.pt, .pth) or a
    .safetensors file, with wrapper prefixes dropped."""
    if path.is_dir():
        inside = sorted(
            p.name for p in path.iterdir() if p.suffix in WEIGHT_SUFFIXES and p.is_file()
        )
        found = f"it holds {', '.join(inside[:5])}" if inside else "it holds no .pt/.pth file"
        raise CheckpointError(
            f"{path} is a folder ({found}): give the weights file itself, "
            f"e.g. {path / (inside[0] if inside else 'best.pt')}"
        )
    if path.suffix == ".safetensors":
        return clean_state_dict(read_safetensors(path))
    saved = load_weights_only(path)
    weights = saved.get("model_state_dict", saved) if isinstance(saved, dict) else None
    if not weights or not all(isinstance(v, torch.Tensor) for v in weights.values()):
        raise CheckpointError(f"{path}: neither a checkpoint nor a state_dict of tensors")
    return clean_state_dict(weights)


def read_safetensors(path: Path) -> dict[str, torch.Tensor]:
    try:
        from safetensors import SafetensorError
        from safetensors.torch import load_file
    except ImportError:
        raise CheckpointError(
            f"{path}: reading .safetensors needs the safetensors package (pip install -e '.[hf]')"
        ) from None
    if not path.is_file():
        raise CheckpointError(f"{path}: no such file")
    try:
        return load_file(path)
    except (SafetensorError, OSError) as exc:
        raise CheckpointError(f"{path}: not a readable .safetensors file ({exc})") from None


def init_from(model: nn.Module, path: str | Path, strict: bool = False) -> InitReport:
    """Copy the tensors of `path` whose name and shape match into `model`; the others keep
    the model's initialisation. `strict` refuses any mismatch before changing anything."""
    path = Path(path).expanduser()
    saved = read_weights(path)
    own = unwrap(model).state_dict()  # these tensors share storage with the model's
    report = InitReport(path, unexpected=sorted(set(saved) - set(own)))
    for name, tensor in own.items():
        if name not in saved:
            report.missing.append(name)
        elif saved[name].shape != tensor.shape:
            shapes = f"{tuple(saved[name].shape)} -> {tuple(tensor.shape)}"
            report.reinitialised.append(f"{name} {shapes}")
        else:
            report.loaded.append(name)
    if not report.loaded:  # nothing to start from: surely another model's file
        raise CheckpointError(
            f"{path}: none of its {len(saved)} tensors fits the model by name and shape "
            f"({report.mismatches()}); is it this model's file?"
        )
    if strict and report.mismatches():
        raise CheckpointError(
            f"{path} does not fit the model exactly ({report.mismatches()}); "
            "--set model.init_strict=false loads what fits"
        )
    with torch.no_grad():
        for name in report.loaded:
            own[name].copy_(saved[name])
    return report


def init_weights(model: nn.Module, cfg: ModelConfig, resume: Path | None, is_main: bool) -> None:
    """model.init_from for a fresh run: load and print the report. A resumed run holds its
    own weights, optimizer and step, so train.resume wins; said in one line."""
    if not cfg.init_from:
        return
    if resume is not None:
        if is_main:
            print(f"model.init_from ignored: resuming from {resume}, which holds the weights")
        return
    report = init_from(model, cfg.init_from, cfg.init_strict)
    if is_main:
        print(report.table())
        own = len(report.loaded) + len(report.reinitialised) + len(report.missing)
        if 2 * len(report.loaded) < own:  # another model's weights, most likely
            print(
                f"warning: model.init_from filled only {len(report.loaded)} of the model's "
                f"{own} tensors from {report.path}: is it this model's file? "
                "(model.init_strict=true refuses any mismatch)",
                file=sys.stderr,
            )


def is_under(name: str, prefix: str) -> bool:
    """Whether a parameter or module `name` lies under the module path `prefix`."""
    return name == prefix or name.startswith(prefix + ".")


def freeze(model: nn.Module, prefixes: tuple[str, ...]) -> None:
    """No gradients for parameters under `prefixes` (module paths such as "features" or
    "features.0"); an unknown prefix is an error listing the top-level modules."""
    names = [name for name, _ in model.named_parameters()]
    for prefix in prefixes:
        if not any(is_under(name, prefix) for name in names):
            top = ", ".join(name for name, _ in model.named_children())
            raise ConfigError(
                f"model.freeze: no parameters under {prefix!r}; the model's modules: {top}"
            )
    for name, param in model.named_parameters():
        if any(is_under(name, prefix) for prefix in prefixes):
            param.requires_grad_(False)
    if prefixes and not any(p.requires_grad for p in model.parameters()):
        raise ConfigError("model.freeze leaves no parameter to train")


def frozen_batch_norm_eval(model: nn.Module, cfg: ModelConfig) -> None:
    """Called after `model.train()`: BatchNorm layers in frozen parts back to eval mode, so
    they normalise with (and keep) the running statistics they were loaded with."""
    if not cfg.freeze_bn:
        return
    for name, module in unwrap(model).named_modules():
        if isinstance(module, BATCH_NORMS) and any(is_under(name, p) for p in cfg.freeze):
            module.eval()


def head_name(model: nn.Module) -> str:
    """The head: the model's last top-level module with parameters."""
    return [name for name, part in model.named_children() if list(part.parameters())][-1]


def head_only(model: nn.Module, config: Config, epoch: int) -> None:
    """Called after `model.train()` at every epoch's start: for the first
    train.freeze_epochs epochs only the head trains (the body without gradients, its
    BatchNorm layers in eval mode when model.freeze_bn); then everything that
    model.freeze does not hold. Idempotent: the epoch decides."""
    if not config.train.freeze_epochs:
        return
    if torch.distributed.is_initialized():  # DDP would wait for gradients the body lacks
        raise ConfigError(
            "train.freeze_epochs needs a single process: train the head with model.freeze, "
            "then everything in a second run from it (model.init_from)"
        )
    model = unwrap(model)
    head, frozen = head_name(model), epoch < config.train.freeze_epochs
    for name, param in model.named_parameters():
        held = any(is_under(name, prefix) for prefix in config.model.freeze)
        param.requires_grad_(not held and (is_under(name, head) or not frozen))
    if frozen and config.model.freeze_bn:
        for name, module in model.named_modules():
            if isinstance(module, BATCH_NORMS) and not is_under(name, head):
                module.eval()
