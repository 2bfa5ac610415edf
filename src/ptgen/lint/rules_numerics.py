"""PGN114-PGN117: numerics that lose precision, and checkpointing without its mode.

`torch.log(1 + x)`, `torch.exp(x) - 1` and `log(sum(exp(x)))` lose precision (or
overflow) where torch has an exact function; activation checkpointing without
`use_reentrant` runs the old reentrant variant with a warning.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ptgen.lint.context import FileContext, has_unpacking, is_const, kwarg
from ptgen.lint.dataflow import qualified
from ptgen.lint.model import Severity
from ptgen.lint.registry import Hit, rule

CHECKPOINTS = ("torch.utils.checkpoint.checkpoint", "torch.utils.checkpoint.checkpoint_sequential")
USE_REENTRANT_WARNS = (2, 1)  # torch 2.1 warns when `use_reentrant` is not passed


def _is_one(node: ast.AST) -> bool:
    return is_const(node, 1) or is_const(node, 1.0)


def _torch_call(ctx: FileContext, node: ast.AST, name: str) -> bool:
    """`torch.<name>(x)` (through the file's imports) with exactly one argument."""
    return (
        isinstance(node, ast.Call)
        and qualified(ctx, node.func) == f"torch.{name}"
        and len(node.args) == 1
        and not node.keywords
    )


def _method_call(node: ast.AST, name: str) -> bool:
    """`(...).name()` without arguments: a tensor method (numpy arrays have no `.log()`)."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == name
        and not node.args
        and not node.keywords
    )


def _one_plus(node: ast.AST) -> bool:
    """`1 + x` or `x + 1` (1 or 1.0)."""
    return (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.Add)
        and (_is_one(node.left) or _is_one(node.right))
    )


@rule(
    "PGN114",
    "log1p-by-hand",
    Severity.INFO,
    "`torch.log(1 + x)` rounds away small `x`; `torch.log1p(x)` is exact.",
)
def log1p_by_hand(ctx: FileContext) -> Iterator[Hit]:
    for call in ctx.calls:
        if _torch_call(ctx, call, "log") and _one_plus(call.args[0]):
            yield call, "`torch.log(1 + x)` loses precision for small `x`; use `torch.log1p(x)`"
        elif _method_call(call, "log") and _one_plus(call.func.value):  # type: ignore[attr-defined]
            yield call, "`(x + 1).log()` loses precision for small `x`; use `x.log1p()`"


@rule(
    "PGN115",
    "expm1-by-hand",
    Severity.INFO,
    "`torch.exp(x) - 1` cancels to 0 for small `x`; `torch.expm1(x)` is exact.",
)
def expm1_by_hand(ctx: FileContext) -> Iterator[Hit]:
    for node in ctx.of_type(ast.BinOp):
        if not isinstance(node.op, ast.Sub) or not _is_one(node.right):  # type: ignore[attr-defined]
            continue
        left = node.left  # type: ignore[attr-defined]
        if _torch_call(ctx, left, "exp"):
            yield node, "`torch.exp(x) - 1` loses precision for small `x`; use `torch.expm1(x)`"
        elif _method_call(left, "exp"):
            yield node, "`x.exp() - 1` loses precision for small `x`; use `x.expm1()`"


def _sum_over_dim(ctx: FileContext, node: ast.AST) -> ast.AST | None:
    """The summed expression of `torch.sum(e, dim, ...)` with a dim that is not None."""
    if not isinstance(node, ast.Call) or qualified(ctx, node.func) != "torch.sum":
        return None
    if has_unpacking(node) or not node.args:
        return None
    keyword = kwarg(node, "dim")
    dim = node.args[1] if len(node.args) > 1 else (keyword.value if keyword else None)
    # torch.logsumexp needs a dim; `dim=None` sums everything, which logsumexp rejects
    return node.args[0] if dim is not None and not is_const(dim, None) else None


@rule(
    "PGN116",
    "logsumexp-by-hand",
    Severity.WARNING,
    "`torch.log(torch.sum(torch.exp(x), dim))` overflows for large `x`; use `torch.logsumexp`.",
)
def logsumexp_by_hand(ctx: FileContext) -> Iterator[Hit]:
    for call in ctx.calls:
        if not _torch_call(ctx, call, "log"):
            continue
        summed = _sum_over_dim(ctx, call.args[0])
        if summed is not None and _torch_call(ctx, summed, "exp"):
            yield call, (
                "`torch.log(torch.sum(torch.exp(x), dim))` overflows to inf for large `x`; "
                "use `torch.logsumexp(x, dim)`"
            )


@rule(
    "PGN117",
    "checkpoint-without-use-reentrant",
    Severity.WARNING,
    "`torch.utils.checkpoint.checkpoint` without an explicit `use_reentrant`.",
    fix="use-reentrant",
    unsafe_fix=True,
)
def checkpoint_without_use_reentrant(ctx: FileContext) -> Iterator[Hit]:
    if ctx.target_torch < USE_REENTRANT_WARNS:
        return
    for call in ctx.calls:
        if qualified(ctx, call.func) not in CHECKPOINTS or has_unpacking(call):
            continue
        if kwarg(call, "use_reentrant") is None:
            yield call, (
                "`checkpoint` without `use_reentrant` warns and runs the reentrant variant, "
                "whose default torch is changing; pass `use_reentrant=False` (recommended) "
                "or `True` to keep the old behaviour"
            )
