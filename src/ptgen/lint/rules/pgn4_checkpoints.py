"""PGN4xx: checkpoints that are fragile or unsafe to load."""

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
from ptgen.lint.fixers import rewrites
from ptgen.lint.model import NO_FIX, Hit, Rule, RuleFix, Severity
from ptgen.lint.patterns import (
    is_backward,
    is_model_expr,
    is_optimizer_step,
    is_torch_call,
)


def _training_loops(ctx: FileContext) -> list[ast.AST]:
    """Loops that contain (at any depth in their function) a backward or optimizer step."""
    loops = {}
    for call in ctx.calls:
        if is_backward(call) or is_optimizer_step(call):
            for parent in ctx.ancestors(call):
                if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                    break
                if isinstance(parent, (ast.For, ast.AsyncFor, ast.While)):
                    loops[id(parent)] = parent
    return list(loops.values())


def checkpoint_without_optimizer(ctx: FileContext) -> Iterator[Hit]:
    if "optimizer" in ctx.source and re.search(r"optim\w*\.state_dict\(\)", ctx.source):
        return  # the file saves optimizer state somewhere: it can resume
    loops = _training_loops(ctx)
    for call in ctx.calls:
        if not is_torch_call(call, "save") or not call.args:
            continue
        saved = call.args[0]
        if not (isinstance(saved, ast.Call) and call_name(saved) == "state_dict"):
            continue
        if any(any(a is loop for a in ctx.ancestors(call)) for loop in loops):
            model = dotted(receiver(saved) or saved) or "model"
            yield (
                call,
                (
                    f"checkpoint of `{model}.state_dict()` alone inside the training loop: without "
                    "the optimizer (and scheduler, epoch) state the run cannot resume; save a dict "
                    "with both"
                ),
            )


MODULE_USES = {"eval", "train", "parameters", "named_parameters", "modules", "forward", "children"}


WEIGHTS_ONLY_DEFAULT = (2, 6)  # torch.load defaults to weights_only=True from 2.6 on


def save_whole_module(ctx: FileContext) -> Iterator[Hit]:
    for call in ctx.calls:
        if is_torch_call(call, "save") and call.args and is_model_expr(call.args[0]):
            name = dotted(call.args[0])
            message = (
                f"`torch.save({name}, ...)` pickles the class by import path (breaks when "
                f"code moves); save `{name}.state_dict()`"
            )
            if loads_whole_module(ctx):  # the fix would break this file's own loading
                yield call, message + " and load it into a built model", NO_FIX
            else:
                yield call, message


def loads_whole_module(ctx: FileContext) -> bool:
    """The file loads a module back: `model = torch.load(f)`, or a loaded name used as one."""
    loaded = set()
    for node in ctx.of_type(ast.Assign):
        value = node.value  # type: ignore[attr-defined]
        if isinstance(value, ast.Call) and is_torch_call(value, "load"):
            for target in node.targets:  # type: ignore[attr-defined]
                if is_model_expr(target):
                    return True
                loaded.add(dotted(target))
    loaded.discard("")
    for call in ctx.calls:
        if dotted(call.func) in loaded:  # called like a module: `net(x)`
            return True
        target = receiver(call)
        if call_name(call) in MODULE_USES and target is not None and dotted(target) in loaded:
            return True
    return False


def load_without_weights_only(ctx: FileContext) -> Iterator[Hit]:
    for call in ctx.calls:
        if not is_torch_call(call, "load") or has_unpacking(call):
            continue
        flag = kwarg(call, "weights_only")
        # the file pickles whole modules: `weights_only=True` could not load them back
        fix = NO_FIX if _saves_whole_module(ctx) else ""
        if flag is not None and is_const(flag.value, False):
            yield (
                call,
                (
                    "`torch.load(..., weights_only=False)` runs arbitrary code from the file; "
                    "load tensors with `weights_only=True`"
                ),
                fix,
            )
        elif flag is None and ctx.target_torch < WEIGHTS_ONLY_DEFAULT:
            version = ".".join(map(str, ctx.target_torch))
            yield (
                call,
                (
                    "`torch.load` without `weights_only=True` unpickles arbitrary code on torch "
                    f"{version} (< 2.6); pass `weights_only=True`"
                ),
                fix,
            )


def _saves_whole_module(ctx: FileContext) -> bool:
    return any(is_torch_call(c, "save") and c.args and is_model_expr(c.args[0]) for c in ctx.calls)


def load_without_map_location(ctx: FileContext) -> Iterator[Hit]:
    for call in ctx.calls:
        if is_torch_call(call, "load") and not has_unpacking(call) and len(call.args) < 2:
            if kwarg(call, "map_location") is None:
                yield (
                    call,
                    (
                        "`torch.load` without `map_location` fails for a CUDA checkpoint on a "
                        'machine without CUDA; pass `map_location=device` (or "cpu")'
                    ),
                )


RULES: tuple[Rule, ...] = (
    Rule(
        "PGN401",
        "save-whole-module",
        Severity.WARNING,
        "`torch.save(model, ...)` pickles the whole module instead of its state_dict.",
        save_whole_module,
        fix=RuleFix(
            "Save `.state_dict()` instead of the module",
            lambda call: rewrites().state_dict(call),
            unsafe=True,
        ),
    ),
    Rule(
        "PGN402",
        "load-without-weights-only",
        Severity.ERROR,
        "`torch.load` that may unpickle arbitrary code (`weights_only` False or "
        "unset before torch 2.6).",
        load_without_weights_only,
        fix=RuleFix(
            "Load with `weights_only=True`", lambda call: rewrites().weights_only(call), unsafe=True
        ),
    ),
    Rule(
        "PGN403",
        "load-without-map-location",
        Severity.INFO,
        "`torch.load` without `map_location`: GPU checkpoints fail to load on CPU-only machines.",
        load_without_map_location,
    ),
    Rule(
        "PGN404",
        "checkpoint-without-optimizer",
        Severity.INFO,
        "A checkpoint inside the training loop that saves only the model's weights.",
        checkpoint_without_optimizer,
    ),
)
