"""PGN1xx: code that computes the wrong thing or raises."""

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
from ptgen.lint.model import Severity
from ptgen.lint.patterns import is_dataloader, is_model_expr
from ptgen.lint.registry import UNSAFE, Hit, rule

NO_GRAD = ("no_grad", "inference_mode")
EVAL_NAME_RE = re.compile(
    r"^_*(eval|evaluate|evaluation|validate|validation|val|test|predict|infer|inference)(_|$)"
)
DETACHING = ("item", "tolist")
TORCH_LOADERS = ("DataLoader", "StatefulDataLoader")  # both default to num_workers=0


def _is_no_grad(node: ast.AST) -> bool:
    call = node.func if isinstance(node, ast.Call) else node
    return dotted(call).split(".")[-1] in NO_GRAD


def no_grad_regions(ctx: FileContext) -> Iterator[tuple[ast.AST, ast.AST]]:
    """(region, scope) for `with torch.no_grad():` blocks and `@torch.no_grad()` functions."""
    for node in ctx.of_type(ast.With, ast.AsyncWith):
        if any(_is_no_grad(item.context_expr) for item in node.items):  # type: ignore[attr-defined]
            yield node, ctx.scope(node)
    for node in ctx.of_type(ast.FunctionDef, ast.AsyncFunctionDef):
        if any(_is_no_grad(d) for d in node.decorator_list):  # type: ignore[attr-defined]
            yield node, node


def _mode_before(ctx: FileContext, scope: ast.AST, model: str, use: ast.Call) -> str:
    """ "train", "eval" or "" from the last `model.train()/.eval()` before `use`."""
    mode = ""
    for call in ctx.calls:
        if (call.lineno, call.col_offset) >= (use.lineno, use.col_offset):
            break
        if ctx.scope(call) is not scope:
            continue
        name, target = call_name(call), dotted(receiver(call) or ast.Constant(None))
        if name == "eval" and _assigned_to(ctx, call) == model:  # model = build().eval()
            mode = "eval"
        elif name == "eval" and target in (model, "self"):
            mode = "eval"
        elif name == "train" and target in (model, "self"):
            arg = call.args[0] if call.args else None
            mode = "train" if arg is None or is_const(arg, True) else "eval"
    return mode


def _assigned_to(ctx: FileContext, call: ast.Call) -> str | None:
    """The name a call's result is assigned to (`x = f().eval()` -> "x"), if any."""
    for node in ctx.of_type(ast.Assign):
        if node.value is call and len(node.targets) == 1:  # type: ignore[attr-defined]
            return dotted(node.targets[0])  # type: ignore[attr-defined]
    return None


@rule(
    "PGN101",
    "no-grad-in-train-mode",
    Severity.ERROR,
    "Evaluation under `no_grad` with the model still in train mode.",
)
def no_grad_in_train_mode(ctx: FileContext) -> Iterator[Hit]:
    for region, scope in no_grad_regions(ctx):
        for call in ctx.calls:
            if not _inside(ctx, call, region, scope) or not is_model_expr(call.func):
                continue
            model = dotted(call.func)
            mode = _mode_before(ctx, scope, model, call)
            if mode == "train":
                yield call, (
                    f"`{model}` is called under no_grad while in train mode (dropout and "
                    f"batch-norm statistics stay on); call `{model}.eval()` first"
                )
            elif mode == "" and _is_eval_function(scope):
                yield call, (
                    f"`{model}` is called under no_grad in `{scope.name}` without `{model}.eval()` "
                    "before it in the function; dropout and batch-norm stay in train mode"
                )  # type: ignore[attr-defined]
            break


def _inside(ctx: FileContext, node: ast.AST, region: ast.AST, scope: ast.AST) -> bool:
    return ctx.scope(node) is scope and any(a is region for a in ctx.ancestors(node))


def _is_eval_function(scope: ast.AST) -> bool:
    if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    return bool(EVAL_NAME_RE.match(scope.name)) and not scope.name.endswith("_step")


def _detaches(value: ast.AST) -> bool:
    if not isinstance(value, ast.Call):
        return False
    if call_name(value) in DETACHING and receiver(value) is not None and not value.args:
        return True
    return isinstance(value.func, ast.Name) and value.func.id == "float" and len(value.args) == 1


@rule(
    "PGN102",
    "item-before-backward",
    Severity.ERROR,
    "A loss turned into a Python number and then `.backward()`ed.",
)
def item_before_backward(ctx: FileContext) -> Iterator[Hit]:
    last: dict[tuple[int, str], ast.AST | None] = {}
    events = ctx.of_type(ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Call)
    for node in events:
        key_scope = id(ctx.scope(node))
        if isinstance(node, ast.Call):
            target = receiver(node)
            if call_name(node) == "backward" and isinstance(target, ast.Name):
                detached = last.get((key_scope, target.id))
                if detached is not None:
                    yield detached, (
                        f"`{target.id}` is a Python number here "
                        f"(`{ast.unparse(detached)[:40]}`), so `{target.id}.backward()` fails; "
                        "keep the tensor and call `.item()` only for logging"
                    )
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        value = node.value if not isinstance(node, ast.AugAssign) else None
        for name in (t.id for t in targets if isinstance(t, ast.Name)):
            last[(key_scope, name)] = value if value is not None and _detaches(value) else None


@rule(
    "PGN105",
    "persistent-workers-without-workers",
    Severity.ERROR,
    "`persistent_workers=True` with `num_workers` 0 or unset: DataLoader raises ValueError.",
    fix="drop-kwarg:persistent_workers",
)
def persistent_workers_without_workers(ctx: FileContext) -> Iterator[Hit]:
    for call in ctx.calls:
        if not is_dataloader(call) or has_unpacking(call) or len(call.args) >= 6:
            continue
        persistent = kwarg(call, "persistent_workers")
        workers = kwarg(call, "num_workers")
        if persistent is None or not is_const(persistent.value, True):
            continue
        if workers is None or is_const(workers.value, 0):
            state = "unset (0)" if workers is None else "0"
            # another loader class may default to worker processes: removing is then a change
            known = call_name(call) in TORCH_LOADERS or workers is not None
            yield call, (
                f"`persistent_workers=True` with `num_workers` {state} raises ValueError; "
                "drop `persistent_workers` or use worker processes"
            ), ("" if known else UNSAFE)
