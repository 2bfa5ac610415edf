"""PGN103, PGN104: in-place changes to a tensor that autograd still needs.

An in-place op is harmless on most activations (a convolution or a normalisation does
not keep its output for backward, which is why `nn.ReLU(inplace=True)` after them is a
safe idiom). It breaks backward when the tensor is the output of an op that saves its
output (relu, sigmoid, tanh, exp, softmax: "modified by an inplace operation"), and it
changes the caller's tensor when it is the forward's own input. Only those are flagged.

Helpers count too: a function or method that a forward calls (directly or through
other helpers, in the same file) is checked like the forward, and its parameter is a
hazard when some caller passes it one: the forward's input, or the output of an op
that saves its output. A helper called with a fresh tensor (`block(self.conv(x), r)`)
may change that argument in place.

Any other function is checked too, for what it shows itself: a name bound to the output
of a torch op that saves it (`x = F.relu(x, inplace=True)`, then `x += residual`) is
flagged wherever it stands. Its parameters are not judged (its callers are unknown), and
`math.exp` / `np.tanh` are not torch ops.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ptgen.lint.context import (
    FileContext,
    call_name,
    dotted,
    has_unpacking,
    is_const,
    kwarg,
    position,
)
from ptgen.lint.dataflow import aliases, binding_statement
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


NOT_TORCH = {"math", "cmath", "np", "numpy", "jnp", "jax", "scipy", "sympy", "tf", "random"}
HELPERS_KEY = "inplace:helpers"
Function = ast.FunctionDef | ast.AsyncFunctionDef


def _checked_scope(ctx: FileContext, node: ast.AST) -> bool:
    """Outside no_grad / inference_mode (where autograd keeps nothing)."""
    return not any(
        any(a is region for a in ctx.ancestors(node)) for region, _ in no_grad_regions(ctx)
    )


def _saving_op(ctx: FileContext, binding: ast.AST | None) -> str:
    """`relu` for `x = F.relu(...)` / `x = self.relu(x)`; "" for anything else."""
    value = getattr(binding, "value", None)
    single = (
        isinstance(binding, (ast.Assign, ast.AnnAssign))
        and len(getattr(binding, "targets", [binding])) == 1
    )
    return _saving_call(ctx, value) if single else ""


def _maybe_torch(ctx: FileContext, call: ast.Call) -> bool:
    """`F.relu`, `torch.exp`, `x.exp()`, `self.act(x)`; not `math.exp` or an imported
    module's function of another library (`np.tanh`, `cute.math.exp2`)."""
    head = dotted(call.func).split(".")[0]
    module = aliases(ctx).get(head, head if head in NOT_TORCH else "torch")
    return module.split(".")[0] == "torch"


def _saving_call(ctx: FileContext, value: ast.AST | None) -> str:
    """`relu` for `F.relu(...)` / `self.relu(x)` / `x.relu_()`; "" for anything else."""
    if not isinstance(value, ast.Call) or not _maybe_torch(ctx, value):
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


def _parameters(scope: ast.AST) -> list[str]:
    """The parameters that callers fill, in order (without `self`)."""
    if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return []
    args = scope.args
    names = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
    return names[1:] if names[:1] == ["self"] else names


def forward_helpers(ctx: FileContext) -> dict[ast.AST, list[ast.Call]]:
    """Each function that an `nn.Module.forward` reaches through calls in this file
    (`block(x)` for a module-level `def block`, `self.block(x)` for a method of the same
    class), with its call sites there."""
    found = ctx.cache.get(HELPERS_KEY)
    if found is None:
        found = {}
        queue = [f for f in ctx.of_type(ast.FunctionDef) if _is_forward(ctx, f)]
        seen = set(queue)
        while queue:
            caller = queue.pop()
            for call in ctx.in_scope(caller, ast.Call):
                helper = _called_function(ctx, caller, call)  # type: ignore[arg-type]
                if helper is None or _is_forward(ctx, helper):
                    continue
                found.setdefault(helper, []).append(call)
                if helper not in seen:
                    seen.add(helper)
                    queue.append(helper)
        ctx.cache[HELPERS_KEY] = found
    return found  # type: ignore[return-value]


def _is_forward(ctx: FileContext, function: ast.AST) -> bool:
    return getattr(function, "name", "") == "forward" and isinstance(
        ctx.parents.get(function), ast.ClassDef
    )


def _called_function(ctx: FileContext, caller: ast.AST, call: ast.Call) -> Function | None:
    """The function of this file that `call` runs, when its name says so unambiguously."""
    func = call.func
    if isinstance(func, ast.Name):
        return _defined_in(ctx.tree, func.id)
    owner = ctx.parents.get(caller)
    is_self = isinstance(func, ast.Attribute) and dotted(func.value) == "self"
    if is_self and isinstance(owner, ast.ClassDef):
        return _defined_in(owner, func.attr)  # type: ignore[union-attr]
    return None


def _defined_in(body_owner: ast.Module | ast.ClassDef, name: str) -> Function | None:
    found = [
        n
        for n in body_owner.body
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name
    ]
    return found[0] if len(found) == 1 else None


def _argument(call: ast.Call, helper: ast.AST, name: str) -> ast.AST | None:
    """The expression a call passes for the helper's parameter `name` (None: not visible)."""
    index = _parameters(helper).index(name)
    if has_unpacking(call):
        return None
    if index < len(call.args):
        return call.args[index]
    given = kwarg(call, name)
    return given.value if given is not None else None


def _passed_hazard(
    ctx: FileContext, helper: ast.AST, name: str, seen: frozenset[ast.AST]
) -> tuple[str, str] | None:
    """Why changing the helper's parameter in place is unsafe: a caller passes it the
    forward's input or a saved output (None when every caller passes a fresh tensor)."""
    for call in forward_helpers(ctx).get(helper, []):
        passed = _argument(call, helper, name)
        why = None
        if isinstance(passed, ast.Name) and ctx.scope(call) not in seen:
            found = hazard(ctx, passed.id, call, seen | {helper})
            why = found[0] if found else None
        elif _saving_call(ctx, passed):
            op = _saving_call(ctx, passed)
            why = f"holds the output of `{op}`, which autograd keeps for backward"
        if why:
            caller = getattr(ctx.scope(call), "name", "?")
            return f"comes from `{caller}`, where it {why}", UNSAFE
    return None


def hazard(
    ctx: FileContext, name: str, at: ast.AST, seen: frozenset[ast.AST] = frozenset()
) -> tuple[str, str] | None:
    """(why changing `name` in place at `at` is unsafe, fix applicability) or None if harmless."""
    binding = binding_statement(ctx, name, at)
    scope = ctx.scope(at)
    if binding is None and name in _parameters(scope) and scope in forward_helpers(ctx):
        return _passed_hazard(ctx, scope, name, seen)
    if binding is None and name in _parameters(scope) and in_forward(ctx, at):
        return (
            "is the forward's input (the caller's tensor; a leaf that requires grad raises)",
            UNSAFE,
        )
    if binding is None and ctx.scope(at) is ctx.tree:
        return "comes from elsewhere and may be needed by autograd", UNSAFE
    op = _saving_op(ctx, binding)
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
