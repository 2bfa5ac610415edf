"""PGN2xx: code tied to one device."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from ptgen.lint.context import FileContext, call_name, dotted, kwarg, receiver
from ptgen.lint.model import Hit, Rule, Severity
from ptgen.lint.patterns import cuda_guarded, is_model_expr, step_loops

DEVICE_NAME_RE = re.compile(r"(^|_)device$")


TRAINING_ITER_RE = re.compile(r"loader|batch|data|epoch", re.I)


NOT_A_DEVICE_RE = re.compile(r"float|half|bfloat|dtype|int\d|memory_format")


def _cuda_literal(node: ast.AST | None) -> bool:
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value.startswith("cuda")
    )


def _hardcoded_cuda(call: ast.Call) -> str:
    """How `call` hard-codes CUDA ("" when it does not)."""
    name = call_name(call)
    if name == "cuda" and receiver(call) is not None and dotted(receiver(call)) != "torch":
        return f"`{dotted(call.func) or '.cuda'}()`"
    if name == "device" and call.args and _cuda_literal(call.args[0]):
        return f"`torch.device({call.args[0].value!r})`"  # type: ignore[attr-defined]
    if name == "to" and call.args and _cuda_literal(call.args[0]):
        return f"`.to({call.args[0].value!r})`"  # type: ignore[attr-defined]
    device = kwarg(call, "device")
    if device is not None and _cuda_literal(device.value) and name != "autocast":
        return f"`device={device.value.value!r}`"  # type: ignore[attr-defined]
    return ""


def hardcoded_cuda(ctx: FileContext) -> Iterator[Hit]:
    for call in ctx.calls:
        how = _hardcoded_cuda(call)
        if how and not cuda_guarded(ctx, call):
            yield (
                call,
                (
                    f'{how} fails on machines without CUDA; choose the device once (`"cuda" if '
                    'torch.cuda.is_available() else "cpu"`) and use `.to(device)`'
                ),
            )


def _training_loop(ctx: FileContext, node: ast.AST) -> ast.AST | None:
    for parent in ctx.ancestors(node):
        if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            return None
        if isinstance(parent, (ast.For, ast.AsyncFor)) and TRAINING_ITER_RE.search(
            ctx.segment(parent.iter)
        ):
            return parent
        if isinstance(parent, (ast.For, ast.AsyncFor, ast.While)) and id(parent) in step_loops(ctx):
            return parent
    return None


def _rebound_in_loop(loop: ast.AST, name: str, move: ast.Call) -> bool:
    """The loop makes a new model each time (`for m in models`, `model = build()`)."""
    for node in ast.walk(loop):
        targets = [node.target] if isinstance(node, (ast.For, ast.AsyncFor)) else []
        if isinstance(node, ast.Assign) and not any(n is move for n in ast.walk(node.value)):
            targets = node.targets
        if any(isinstance(n, ast.Name) and n.id == name for t in targets for n in ast.walk(t)):
            return True
    return False


def model_to_device_in_loop(ctx: FileContext) -> Iterator[Hit]:
    for call in ctx.calls:
        model = receiver(call)
        if call_name(call) not in ("to", "cuda") or not is_model_expr(model):
            continue
        if call_name(call) == "to" and (
            not call.args or NOT_A_DEVICE_RE.search(ast.unparse(call.args[0]))
        ):
            continue
        loop = _training_loop(ctx, call)
        if loop is None or _rebound_in_loop(loop, dotted(model), call):
            continue
        yield (
            call,
            (
                f"`{dotted(model)}` is moved to the device on every iteration of the loop; "
                "move it once before the loop"
            ),
        )


def _uses_device_variable(ctx: FileContext, scope: ast.AST) -> bool:
    for node in ast.walk(scope):
        name = (
            node.id if isinstance(node, ast.Name) else node.arg if isinstance(node, ast.arg) else ""
        )
        if isinstance(node, ast.Attribute):
            name = node.attr
        if name and DEVICE_NAME_RE.search(name):
            return True
    return False


def hardcoded_autocast_device(ctx: FileContext) -> Iterator[Hit]:
    for call in ctx.calls:
        if call_name(call) != "autocast":
            continue
        first = call.args[0] if call.args else getattr(kwarg(call, "device_type"), "value", None)
        legacy = dotted(call.func).endswith("cuda.amp.autocast")
        if not (_cuda_literal(first) or legacy) or cuda_guarded_by_if(ctx, call):
            continue
        if _uses_device_variable(ctx, ctx.scope(call)):
            what = "torch.cuda.amp.autocast()" if legacy else 'autocast("cuda")'
            yield (
                call,
                (
                    f"`{what}` ignores the `device` variable in scope; use "
                    "`torch.autocast(device_type=device.type)` so CPU/MPS runs work"
                ),
            )


def cuda_guarded_by_if(ctx: FileContext, node: ast.AST) -> bool:
    return any(
        isinstance(p, (ast.If, ast.IfExp)) and "cuda" in ctx.segment(p.test)
        for p in ctx.ancestors(node)
    )


RULES: tuple[Rule, ...] = (
    Rule(
        "PGN201",
        "hardcoded-cuda",
        Severity.WARNING,
        'CUDA hard-coded (`.cuda()`, `device="cuda"`) with no availability check.',
        hardcoded_cuda,
    ),
    Rule(
        "PGN202",
        "model-to-device-in-loop",
        Severity.WARNING,
        "A model moved to a device inside the training loop.",
        model_to_device_in_loop,
    ),
    Rule(
        "PGN203",
        "hardcoded-autocast-device",
        Severity.WARNING,
        '`autocast("cuda")` where the device is a variable.',
        hardcoded_autocast_device,
    ),
)
