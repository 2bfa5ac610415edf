"""PGN5xx: code that runs slower than it needs to."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from ptgen.lint.context import (
    FileContext,
    call_name,
    dotted,
    has_unpacking,
    is_const,
    kwarg,
    receiver,
)
from ptgen.lint.fixers import drop_kwarg
from ptgen.lint.model import UNSAFE, Hit, Rule, Severity
from ptgen.lint.patterns import is_dataloader, is_optimizer_step, nearest_loop, step_loops

TRAIN_RE = re.compile(r"train", re.I)


CPU_DEVICE_RE = re.compile(
    r"""device\(\s*["']cpu["']\s*\)|device\s*=\s*["']cpu["']|\.to\(\s*["']cpu["']"""
)


SYNCS = ("item", "cpu")


NUM_WORKERS_POSITION = (
    5  # DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, num_workers)
)


PIN_MEMORY_POSITION = 7


# `.grad += g`, `.grad.add_(g)`, `.grad.data.copy_(g)`, `.grad[i] = g`: code that needs the
# zeros `zero_grad(set_to_none=False)` leaves (a None gradient cannot be added into).
READS_GRAD_RE = re.compile(r"\.grad\b(?!\s*=[^=])")  # `p.grad.norm()`: None would break it


INPLACE_GRAD_RE = re.compile(
    r"\.grad(?:\.data)?(?:\s*\[[^\]\n]*\]\s*(?:[-+*/]?=)(?!=)|\s*[-+*/]=|\.\w+_\()"
)


def _training_path(ctx: FileContext, call: ast.Call) -> bool:
    """A loader that feeds training: shuffled, named train*, in a train* function or script."""
    if ctx.is_test_file:
        return False
    if is_const(getattr(kwarg(call, "shuffle"), "value", None), True):
        return True
    parent = ctx.parents.get(call)
    targets = parent.targets if isinstance(parent, ast.Assign) else []
    texts = [dotted(t) for t in targets] + [ast.unparse(a) for a in call.args[:1]]
    scope = ctx.scope(call)
    texts.append(getattr(scope, "name", ""))
    if any(TRAIN_RE.search(t) for t in texts):
        return True
    return scope is ctx.tree or any(is_optimizer_step(c) for c in ctx.calls)


def dataloader_default_workers(ctx: FileContext) -> Iterator[Hit]:
    for call in ctx.calls:
        if not is_dataloader(call) or has_unpacking(call):
            continue
        workers = _num_workers(call)
        if workers is None and len(call.args) <= NUM_WORKERS_POSITION:
            if _training_path(ctx, call):
                yield (
                    call,
                    (
                        "training DataLoader uses the default `num_workers=0`: batches are loaded "
                        "in the training process between steps; set `num_workers` (from config)"
                    ),
                )
        elif is_const(workers, 0) and _training_path(ctx, call):
            yield (
                call,
                (
                    "training DataLoader with `num_workers=0`: batches are loaded in the training "
                    "process between steps; set `num_workers` (from config)"
                ),
            )


def _num_workers(call: ast.Call) -> ast.AST | None:
    """The `num_workers` argument, by keyword or position (None when not given)."""
    if len(call.args) > NUM_WORKERS_POSITION:
        return call.args[NUM_WORKERS_POSITION]
    given = kwarg(call, "num_workers")
    return given.value if given is not None else None


def _mentions_cuda(ctx: FileContext) -> bool:
    return "cuda" in ctx.source


def pin_memory_mismatch(ctx: FileContext) -> Iterator[Hit]:
    for call in ctx.calls:
        if not is_dataloader(call) or has_unpacking(call) or len(call.args) > PIN_MEMORY_POSITION:
            continue
        pin = kwarg(call, "pin_memory")
        if pin is not None and is_const(pin.value, True):
            if not _mentions_cuda(ctx) and CPU_DEVICE_RE.search(ctx.source):
                yield (
                    call,
                    (
                        "`pin_memory=True` in a program that runs on the CPU only costs an extra "
                        'copy per batch; drop it or set it to `device.type == "cuda"`'
                    ),
                )
        elif pin is None and _mentions_cuda(ctx) and _training_path(ctx, call):
            yield (
                call,
                (
                    "DataLoader without `pin_memory` in CUDA code: host-to-GPU copies cannot "
                    'overlap compute; pass `pin_memory=device.type == "cuda"`'
                ),
            )


def sync_every_step(ctx: FileContext) -> Iterator[Hit]:
    loops = step_loops(ctx)
    if not loops:
        return
    for call in ctx.calls:
        if call_name(call) not in SYNCS or receiver(call) is None or call.args or call.keywords:
            continue
        if id(nearest_loop(ctx, call, stop_at_if=True)) in loops:
            what = ast.unparse(call)
            yield (
                call,
                (
                    f"`{what[-60:]}` syncs host and device on every training step; accumulate "
                    "on the device and read values at log intervals"
                ),
            )


def zero_grad_set_to_none_false(ctx: FileContext) -> Iterator[Hit]:
    if INPLACE_GRAD_RE.search(ctx.source):
        return  # the file writes into gradients in place: the zeros are needed
    for call in ctx.calls:
        if call_name(call) != "zero_grad" or has_unpacking(call):
            continue
        flag = kwarg(call, "set_to_none")
        if flag is not None and is_const(flag.value, False):
            # a file that reads `.grad` may meet None where it had zeros: fix only by hand
            reads = READS_GRAD_RE.search(ctx.source) is not None
            yield (
                call,
                (
                    "`zero_grad(set_to_none=False)` writes zeros into every gradient each step; "
                    "the default `set_to_none=True` frees them instead"
                ),
                (UNSAFE if reads else ""),
            )
        elif flag is None and not call.args and ctx.target_torch < (2, 0):
            yield (
                call,
                (
                    "bare `zero_grad()` keeps zero-filled gradients before torch 2.0; "
                    "pass `set_to_none=True`"
                ),
            )


RULES: tuple[Rule, ...] = (
    Rule(
        "PGN501",
        "dataloader-default-workers",
        Severity.INFO,
        "A training DataLoader with the default `num_workers=0` (loading blocks the training "
        "step).",
        dataloader_default_workers,
    ),
    Rule(
        "PGN502",
        "pin-memory-mismatch",
        Severity.INFO,
        "`pin_memory=True` on a CPU-only program, or no `pin_memory` where CUDA is used.",
        pin_memory_mismatch,
    ),
    Rule(
        "PGN503",
        "sync-every-step",
        Severity.WARNING,
        "`.item()` / `.cpu()` on every step of the training loop (a host-device sync each step).",
        sync_every_step,
    ),
    Rule(
        "PGN504",
        "zero-grad-set-to-none-false",
        Severity.INFO,
        "`zero_grad(set_to_none=False)` (or bare `zero_grad()` before torch 2.0) "
        "fills gradients with zeros.",
        zero_grad_set_to_none_false,
        fix=drop_kwarg("set_to_none", "Remove `set_to_none=False`"),
    ),
)
