"""Name-based recognisers shared by rules: what looks like a model, an optimizer, a loop.

A linter without type inference guesses from names; these guesses are deliberately
narrow so that a miss is likelier than a false positive.
"""

from __future__ import annotations

import ast
import re

from ptgen.lint.context import FUNCTION_TYPES, LOOP_TYPES, FileContext, call_name, dotted, receiver

MODEL_RE = re.compile(r"(^|_)(model|net|network|classifier|encoder|decoder)$|[a-z]net$", re.I)
OPTIMIZER_RE = re.compile(r"optimi[sz]er|(^|_)optim($|_)|(^|_)opt(_|\d|$)", re.I)
GUARD_RE = re.compile(r"cuda|gpu|is_available|device_count", re.I)


def last_identifier(node: ast.AST | None) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def is_model_expr(node: ast.AST | None) -> bool:
    """`model`, `net`, `self.model`, `teacher_model`, `resnet`: a name that says nn.Module."""
    if isinstance(node, ast.Attribute) and not isinstance(node.value, (ast.Name, ast.Attribute)):
        return False
    return bool(MODEL_RE.search(last_identifier(node)))


def is_optimizer_step(call: ast.Call) -> bool:
    """`optimizer.step()`, `self.opt.step()`, `scaler.step(optimizer)`."""
    if call_name(call) != "step":
        return False
    if OPTIMIZER_RE.search(last_identifier(receiver(call))):
        return True
    return bool(call.args) and bool(OPTIMIZER_RE.search(last_identifier(call.args[0])))


def is_backward(call: ast.Call) -> bool:
    return call_name(call) == "backward" and receiver(call) is not None


def nearest_loop(ctx: FileContext, node: ast.AST, stop_at_if: bool = False) -> ast.AST | None:
    """The innermost loop around `node` in its own function; None past an `if` if asked."""
    for parent in ctx.ancestors(node):
        if isinstance(parent, FUNCTION_TYPES + (ast.ClassDef,)):
            return None
        if stop_at_if and isinstance(parent, (ast.If, ast.IfExp, ast.Try)):
            return None
        if isinstance(parent, LOOP_TYPES):
            return parent
    return None


def is_dataloader(call: ast.Call) -> bool:
    return call_name(call).endswith("DataLoader")  # also StatefulDataLoader


def cuda_guarded(ctx: FileContext, node: ast.AST) -> bool:
    """Inside `if <mentions cuda/gpu>`, a function that checks availability, or a CUDA test."""
    for parent in ctx.ancestors(node):
        if isinstance(parent, (ast.If, ast.IfExp, ast.While, ast.Assert)):
            if GUARD_RE.search(ctx.segment(parent.test)):
                return True
        if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if GUARD_RE.search(parent.name) or any(
                GUARD_RE.search(ctx.segment(d)) for d in parent.decorator_list
            ):
                return True
    return checks_availability(ctx, ctx.scope(node))


def checks_availability(ctx: FileContext, scope: ast.AST) -> bool:
    scopes = ctx.cache.get("availability")
    if scopes is None:
        names = ("is_available", "device_count")
        scopes = {id(ctx.scope(c)) for c in ctx.calls if call_name(c) in names}
        ctx.cache["availability"] = scopes
    return id(scope) in scopes  # type: ignore[operator]


def is_torch_call(call: ast.Call, name: str) -> bool:
    """`torch.load(...)` (or a bare `load` imported from torch is not assumed)."""
    func = call.func  # the attribute first: asked of every call, it is rarely the one
    last = name.rpartition(".")[2]
    return isinstance(func, ast.Attribute) and func.attr == last and dotted(func) == f"torch.{name}"


def step_loops(ctx: FileContext) -> set[int]:
    """ids of the loops whose own body runs `backward()` or `optimizer.step()`."""
    loops = ctx.cache.get("step_loops")
    if loops is None:
        calls = [c for c in ctx.calls if is_backward(c) or is_optimizer_step(c)]
        loops = {id(nearest_loop(ctx, c)) for c in calls} - {id(None)}
        ctx.cache["step_loops"] = loops
    return loops  # type: ignore[return-value]


def in_forward(ctx: FileContext, node: ast.AST, method: bool = True) -> bool:
    """`node` is in a function named `forward` (a method of a class, when `method`)."""
    scope = ctx.scope(node)
    return (
        isinstance(scope, ast.FunctionDef)
        and scope.name == "forward"
        and (not method or isinstance(ctx.parents.get(scope), ast.ClassDef))
    )
