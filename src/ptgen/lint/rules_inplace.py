"""PGN103, PGN104: in-place changes to a tensor that autograd still needs.

An in-place op is harmless on most activations (a convolution or a normalisation does
not keep its output for backward, which is why `nn.ReLU(inplace=True)` after them is a
safe idiom). It breaks backward when the tensor is the output of an op that saves its
output (relu, sigmoid, tanh, exp, softmax: "modified by an inplace operation"), and it
changes the caller's tensor when it is the forward's own input. Only those are flagged.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ptgen.lint.context import FileContext, call_name, dotted, is_const, kwarg, position
from ptgen.lint.dataflow import binding_statement
from ptgen.lint.model import Severity
from ptgen.lint.patterns import in_forward
from ptgen.lint.registry import NO_FIX, UNSAFE, Hit, rule
from ptgen.lint.rules_correctness import no_grad_regions

TENSOR_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}
# Ops whose backward reads their own output, so it must not change before backward.
SAVES_OUTPUT = {
    "relu",
    "relu6",
    "sigmoid",
    "tanh",
    "exp",
    "exp2",
    "softmax",
    "log_softmax",
    "sqrt",
    "rsqrt",
    "elu",
    "selu",
    "celu",
    "hardtanh",
}


def _checked_scope(ctx: FileContext, node: ast.AST) -> bool:
    """In an `nn.Module.forward` (or at module level, as in the guide), outside no_grad."""
    if not (in_forward(ctx, node) or ctx.scope(node) is ctx.tree):
        return False
    return not any(
        any(a is region for a in ctx.ancestors(node)) for region, _ in no_grad_regions(ctx)
    )


def _saving_op(binding: ast.AST | None) -> str:
    """`relu` for `x = F.relu(...)` / `x = self.relu(x)`; "" for anything else."""
    value = getattr(binding, "value", None)
    single = (
        isinstance(binding, (ast.Assign, ast.AnnAssign))
        and len(getattr(binding, "targets", [binding])) == 1
    )
    if not single or not isinstance(value, ast.Call):
        return ""
    last = call_name(value).rstrip("_").lower()
    return last if last in SAVES_OUTPUT else ""


def _read_between(ctx: FileContext, name: str, binding: ast.AST, at: ast.AST) -> bool:
    """`name` is read after its binding and before `at`: another reference may alias it."""
    start, end = (binding.end_lineno, binding.end_col_offset), position(at)  # type: ignore[attr-defined]
    scope = ctx.scope(at)
    return any(
        isinstance(n.ctx, ast.Load) and start <= position(n) < end and ctx.scope(n) is scope
        for n in ctx.of_type(ast.Name)
        if n.id == name  # type: ignore[attr-defined]
    )


def _parameters(scope: ast.AST) -> set[str]:
    if not isinstance(scope, ast.FunctionDef):
        return set()
    args = scope.args
    return {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs} - {"self"}


def hazard(ctx: FileContext, name: str, at: ast.AST) -> tuple[str, str] | None:
    """(why changing `name` in place at `at` is unsafe, fix applicability) or None if harmless."""
    binding = binding_statement(ctx, name, at)
    if binding is None and name in _parameters(ctx.scope(at)):
        return (
            "is the forward's input (the caller's tensor; a leaf that requires grad raises)",
            UNSAFE,
        )
    if binding is None and ctx.scope(at) is ctx.tree:
        return "comes from elsewhere and may be needed by autograd", UNSAFE
    op = _saving_op(binding)
    if not op:
        return None
    why = f"holds the output of `{op}`, which autograd keeps for backward"
    aliased = _aliases_input(binding) or _read_between(ctx, name, binding, at)  # type: ignore[arg-type]
    return why, UNSAFE if aliased else ""


def _aliases_input(binding: ast.AST) -> bool:
    """`x = F.relu(y, inplace=True)` / `x = y.relu_()`: `x` is `y`, so other names see changes."""
    value = getattr(binding, "value", None)
    if not isinstance(value, ast.Call):
        return False
    inplace = kwarg(value, "inplace")
    return call_name(value).endswith("_") or (
        inplace is not None and not is_const(inplace.value, False)
    )


@rule(
    "PGN103",
    "inplace-functional-in-forward",
    Severity.WARNING,
    "`F.relu(x, inplace=True)` on a tensor autograd still needs (or the forward's input).",
    fix="drop-kwarg:inplace",
)
def inplace_functional_in_forward(ctx: FileContext) -> Iterator[Hit]:
    for call in ctx.calls:
        flag = kwarg(call, "inplace")
        if flag is None or not is_const(flag.value, True) or not call.args:
            continue
        first = call.args[0]
        if not isinstance(first, ast.Name) or not _checked_scope(ctx, call):
            continue
        found = hazard(ctx, first.id, call)
        if found is not None:
            why, applicability = found
            yield call, (
                f"`{dotted(call.func)}({first.id}, inplace=True)` overwrites `{first.id}`, which "
                f"{why}; use the out-of-place form"
            ), _inplace_fix(ctx, call, first.id, applicability)


def _inplace_fix(ctx: FileContext, call: ast.Call, name: str, applicability: str) -> str:
    """Dropping `inplace=True` keeps behaviour only when the result replaces the same name."""
    parent = ctx.parents.get(call)
    assigned_back = (
        isinstance(parent, ast.Assign)
        and len(parent.targets) == 1
        and isinstance(parent.targets[0], ast.Name)
        and parent.targets[0].id == name
    )
    return applicability if assigned_back else NO_FIX


@rule(
    "PGN104",
    "augmented-assign-in-forward",
    Severity.WARNING,
    "`x += y` in `forward` on a tensor autograd still needs (or the forward's input).",
    fix="augassign",
)
def augmented_assign_in_forward(ctx: FileContext) -> Iterator[Hit]:
    for node in ctx.of_type(ast.AugAssign):
        target, op = node.target, TENSOR_OPS.get(type(node.op))  # type: ignore[attr-defined]
        if not isinstance(target, ast.Name) or op is None or not _checked_scope(ctx, node):
            continue
        found = hazard(ctx, target.id, node)
        if found is not None:
            why, applicability = found
            name = target.id
            yield node, (
                f"`{ast.unparse(node)}` modifies `{name}` in place, and `{name}` {why}; "
                f"write `{name} = {name} {op} ...`"
            ), applicability
