"""PGN1xx: code that computes the wrong thing or raises (autograd, training loop, numerics).

PGN103, PGN104: in-place changes to a tensor that autograd still needs.

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

PGN106-PGN111: training-loop bugs that run without an error but train wrongly.

PGN113: how modules are built.

PGN114-PGN117: numerics that lose precision, and checkpointing without its mode.

`torch.log(1 + x)`, `torch.exp(x) - 1` and `log(sum(exp(x)))` lose precision (or
overflow) where torch has an exact function; activation checkpointing without
`use_reentrant` runs the old reentrant variant with a warning.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from ptgen.lint.context import (
    LOOP_TYPES,
    FileContext,
    call_name,
    dotted,
    has_unpacking,
    is_const,
    kwarg,
    position,
    receiver,
)
from ptgen.lint.dataflow import aliases, binding_statement, last_binding, produced_by, qualified
from ptgen.lint.fixers import drop_kwarg, rename_attr, rewrites
from ptgen.lint.model import NO_FIX, UNSAFE, Hit, Rule, RuleFix, Severity
from ptgen.lint.patterns import (
    in_forward,
    is_backward,
    is_dataloader,
    is_model_expr,
    is_optimizer_step,
    nearest_loop,
)

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


def no_grad_in_train_mode(ctx: FileContext) -> Iterator[Hit]:
    for region, scope in no_grad_regions(ctx):
        for call in ctx.calls:
            if not _inside(ctx, call, region, scope) or not is_model_expr(call.func):
                continue
            model = dotted(call.func)
            mode = _mode_before(ctx, scope, model, call)
            if mode == "train":
                yield (
                    call,
                    (
                        f"`{model}` is called under no_grad while in train mode (dropout and "
                        f"batch-norm statistics stay on); call `{model}.eval()` first"
                    ),
                )
            elif mode == "" and _is_eval_function(scope):
                yield (
                    call,
                    (
                        f"`{model}` is called under no_grad in `{scope.name}` without "
                        f"`{model}.eval()` before it in the function; dropout and batch-norm stay "
                        "in train mode"
                    ),
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
                    yield (
                        detached,
                        (
                            f"`{target.id}` is a Python number here "
                            f"(`{ast.unparse(detached)[:40]}`), so `{target.id}.backward()` fails; "
                            "keep the tensor and call `.item()` only for logging"
                        ),
                    )
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        value = node.value if not isinstance(node, ast.AugAssign) else None
        for name in (t.id for t in targets if isinstance(t, ast.Name)):
            last[(key_scope, name)] = value if value is not None and _detaches(value) else None


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
            yield (
                call,
                (
                    f"`persistent_workers=True` with `num_workers` {state} raises ValueError; "
                    "drop `persistent_workers` or use worker processes"
                ),
                ("" if known else UNSAFE),
            )


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
            yield (
                call,
                (
                    f"`{dotted(call.func)}({first.id}, inplace=True)` overwrites `{first.id}`, "
                    f"which {why}; use the out-of-place form"
                ),
                _inplace_fix(ctx, call, first.id, applicability),
            )


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


def augmented_assign_in_forward(ctx: FileContext) -> Iterator[Hit]:
    for node in ctx.of_type(ast.AugAssign):
        target, op = node.target, TENSOR_OPS.get(type(node.op))  # type: ignore[attr-defined]
        if not isinstance(target, ast.Name) or op is None or not _checked_scope(ctx, node):
            continue
        found = hazard(ctx, target.id, node)
        if found is not None:
            why, applicability = found
            name = target.id
            yield (
                node,
                (
                    f"`{ast.unparse(node)}` modifies `{name}` in place, and `{name}` {why}; "
                    f"write `{name} = {name} {op} ...`"
                ),
                applicability,
            )


SOFTMAXES = ("softmax", "log_softmax")


SIGMOIDS = ("sigmoid",)


REQUIRES_GRAD_TYPOS = {"require_grad", "requires_grads", "require_grads", "required_grad"}


CLEARS_GRADS_RE = re.compile(
    r"zero_grad|\.grad\s*=\s*None|\.grad(\.data)?\.zero_\(|\.grad(\.data)?\.detach_\("
)


def _criteria(ctx: FileContext, loss_class: str) -> set[str]:
    """Names bound to a `loss_class` instance anywhere in the file (`criterion`, `self.loss`)."""
    names = set()
    for node in ctx.of_type(ast.Assign):
        value = node.value  # type: ignore[attr-defined]
        if isinstance(value, ast.Call) and dotted(value.func).split(".")[-1] == loss_class:
            names.update(dotted(t) for t in node.targets if dotted(t))  # type: ignore[attr-defined]
    return names


def _loss_inputs(ctx: FileContext, function: str, loss_class: str) -> Iterator[ast.AST]:
    """The input (first argument) of every call of the loss, functional or module."""
    criteria = _criteria(ctx, loss_class)
    for call in ctx.calls:
        name = dotted(call.func)
        functional = qualified(ctx, call.func) in (
            f"torch.nn.functional.{function}",
            f"torch.{function}",
        ) or name in (f"F.{function}", f"functional.{function}", f"nn.functional.{function}")
        constructed = isinstance(call.func, ast.Call) and call_name(call.func) == loss_class
        if (functional or name in criteria or constructed) and call.args:
            yield call.args[0]
        elif (functional or name in criteria) and kwarg(call, "input") is not None:
            yield kwarg(call, "input").value  # type: ignore[union-attr]


def softmax_before_cross_entropy(ctx: FileContext) -> Iterator[Hit]:
    for value in _loss_inputs(ctx, "cross_entropy", "CrossEntropyLoss"):
        made = produced_by(ctx, value, SOFTMAXES)
        if made:
            yield (
                value,
                (
                    f"`{ast.unparse(value)[:40]}` is already a {made} output, but cross entropy "
                    "applies log_softmax itself (a double softmax flattens the gradients); pass "
                    "the raw logits"
                ),
            )


def sigmoid_before_bce_with_logits(ctx: FileContext) -> Iterator[Hit]:
    loss = "binary_cross_entropy_with_logits"
    for value in _loss_inputs(ctx, loss, "BCEWithLogitsLoss"):
        if produced_by(ctx, value, SIGMOIDS):
            yield (
                value,
                (
                    f"`{ast.unparse(value)[:40]}` is already a sigmoid output, but "
                    "BCEWithLogitsLoss applies the sigmoid itself; pass the raw logits (or use "
                    "BCELoss on probabilities)"
                ),
            )


def _function_text(ctx: FileContext, node: ast.AST) -> str:
    scope = ctx.scope(node)
    return ctx.source if scope is ctx.tree else ctx.segment(scope)


def step_without_zero_grad(ctx: FileContext) -> Iterator[Hit]:
    if not any(v.split(".")[0] == "torch" for v in aliases(ctx).values()):
        return  # not torch code (MXNet's trainer.step overwrites gradients)
    backward_loops = {id(nearest_loop(ctx, c)) for c in ctx.calls if is_backward(c)}
    for call in ctx.calls:
        if not is_optimizer_step(call) or (call.args and isinstance(call.args[0], ast.Constant)):
            continue
        loop = nearest_loop(ctx, call)
        if loop is None or id(loop) not in backward_loops:
            continue
        if not CLEARS_GRADS_RE.search(_function_text(ctx, call)):
            yield (
                call,
                (
                    f"`{ast.unparse(call)}` in a loop with `backward()` but no `zero_grad()` "
                    "anywhere in the function: gradients add up across steps; call "
                    "`optimizer.zero_grad(set_to_none=True)` each step"
                ),
            )


def requires_grad_typo(ctx: FileContext) -> Iterator[Hit]:
    for node in ctx.of_type(ast.Assign, ast.AugAssign, ast.AnnAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]  # type: ignore[attr-defined]
        for target in targets:
            if isinstance(target, ast.Attribute) and target.attr in REQUIRES_GRAD_TYPOS:
                yield (
                    target,
                    (
                        f"`{dotted(target) or target.attr}` is a new attribute that PyTorch never "
                        "reads, so nothing is frozen or unfrozen; did you mean `requires_grad`?"
                    ),
                )
    for call in ctx.calls:
        typo = next((k for k in call.keywords if k.arg in REQUIRES_GRAD_TYPOS), None)
        if typo is not None and qualified(ctx, call.func).startswith("torch."):
            yield call, f"`{typo.arg}=` is not an argument of torch; did you mean `requires_grad=`?"


def _under_no_grad(ctx: FileContext, node: ast.AST) -> ast.AST | None:
    """The no_grad region `node` runs in (same function), unless grad is re-enabled inside."""
    for region, scope in no_grad_regions(ctx):
        if ctx.scope(node) is not scope or not any(a is region for a in ctx.ancestors(node)):
            continue
        for parent in ctx.ancestors(node):
            if parent is region:
                return region
            if isinstance(parent, (ast.With, ast.AsyncWith)) and any(
                "enable_grad" in dotted(getattr(i.context_expr, "func", i.context_expr))
                or "set_grad_enabled" in ctx.segment(i.context_expr)
                for i in parent.items
            ):
                break
    return None


def backward_under_no_grad(ctx: FileContext) -> Iterator[Hit]:
    """Backward itself may run under no_grad (d2l does, to keep clipping and the step out
    of the graph); what fails is a loss whose forward pass ran there."""
    for call in ctx.calls:
        loss = receiver(call)
        if not is_backward(call) or loss is None:
            continue
        made = last_binding(ctx, loss.id, call) if isinstance(loss, ast.Name) else loss
        if made is not None and _under_no_grad(ctx, made) is not None:
            what = ast.unparse(loss)[:40]
            yield (
                call,
                (
                    f"`{what}` was computed under no_grad/inference_mode, so `{what}.backward()` "
                    "has no graph to go through; run the forward pass with gradients enabled"
                ),
            )


def _training_loop_calls(ctx: FileContext, loop: ast.AST) -> list[ast.Call]:
    scope = ctx.scope(loop)
    return [
        c for c in ctx.calls if ctx.scope(c) is scope and any(a is loop for a in ctx.ancestors(c))
    ]


def eval_without_train(ctx: FileContext) -> Iterator[Hit]:
    evals = [c for c in ctx.calls if call_name(c) == "eval" and is_model_expr(receiver(c))]
    for loop in {id(o): o for c in evals if (o := _outermost_loop(ctx, c))}.values():
        inside = _training_loop_calls(ctx, loop)
        if not any(is_backward(c) or is_optimizer_step(c) for c in inside):
            continue
        if any(call_name(c) == "train" and not _turns_off(c) for c in inside):
            continue
        first = next(c for c in inside if call_name(c) == "eval" and is_model_expr(receiver(c)))
        model = dotted(receiver(first))
        yield (
            first,
            (
                f"`{model}.eval()` inside the training loop with no `{model}.train()` back in "
                "it: from the next iteration on, dropout and batch-norm stay in eval mode while "
                "training"
            ),
        )


def _turns_off(call: ast.Call) -> bool:
    arg = call.args[0] if call.args else getattr(kwarg(call, "mode"), "value", None)
    return arg is not None and is_const(arg, False)


def _outermost_loop(ctx: FileContext, node: ast.AST) -> ast.AST | None:
    found = None
    for parent in ctx.ancestors(node):
        if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            break
        if isinstance(parent, LOOP_TYPES):
            found = parent
    return found


# nn classes that own trainable weights (an `nn.Softmax()` built per call is harmless)
WEIGHTED_LAYER_RE = re.compile(
    r"^(Lazy)?(Linear|Bilinear|Conv\w*|ConvTranspose\w*|BatchNorm\w*|SyncBatchNorm|LayerNorm|"
    r"GroupNorm|InstanceNorm\w*|RMSNorm|Embedding\w*|LSTM\w*|GRU\w*|RNN\w*|"
    r"MultiheadAttention|Transformer\w*|PReLU|Parameter)$"
)


FUNCTIONAL_WITH_WEIGHT = {"conv1d", "conv2d", "conv3d", "linear", "bilinear", "embedding"}


MAKES_RE = re.compile(r"^_*(make|create|new|build|init|random)_?", re.I)


def _creates_weights(ctx: FileContext, call: ast.Call) -> str:
    """What `call` creates on every forward: a layer, a Parameter, or a fresh weight."""
    name = dotted(call.func)
    parts = name.split(".")
    if len(parts) >= 2 and parts[-2] == "nn" and WEIGHTED_LAYER_RE.match(parts[-1]):
        parent = ctx.parents.get(call)
        targets = getattr(parent, "targets", [])
        if any(dotted(t).startswith("self.") for t in targets):
            return ""  # lazily built and registered on the module: it is trained
        return f"`{name}(...)`"
    if call_name(call) in FUNCTIONAL_WITH_WEIGHT and len(call.args) + len(call.keywords) >= 2:
        weight = (
            call.args[1]
            if len(call.args) > 1
            else getattr(next((k for k in call.keywords if k.arg == "weight"), None), "value", None)
        )
        if isinstance(weight, ast.Call) and MAKES_RE.match(call_name(weight)):
            return f"the weight `{ast.unparse(weight)[:40]}`"
    return ""


def weights_created_in_forward(ctx: FileContext) -> Iterator[Hit]:
    for call in ctx.calls:
        if not in_forward(ctx, call):
            continue
        what = _creates_weights(ctx, call)
        if what:
            yield (
                call,
                (
                    f"{what} is created on every call of `forward`: the optimizer never sees it, "
                    "so it is never trained; build layers and parameters in `__init__`"
                ),
            )


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


def log1p_by_hand(ctx: FileContext) -> Iterator[Hit]:
    for call in ctx.calls:
        if _torch_call(ctx, call, "log") and _one_plus(call.args[0]):
            yield call, "`torch.log(1 + x)` loses precision for small `x`; use `torch.log1p(x)`"
        elif _method_call(call, "log") and _one_plus(call.func.value):  # type: ignore[attr-defined]
            yield call, "`(x + 1).log()` loses precision for small `x`; use `x.log1p()`"


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


def logsumexp_by_hand(ctx: FileContext) -> Iterator[Hit]:
    for call in ctx.calls:
        if not _torch_call(ctx, call, "log"):
            continue
        summed = _sum_over_dim(ctx, call.args[0])
        if summed is not None and _torch_call(ctx, summed, "exp"):
            yield (
                call,
                (
                    "`torch.log(torch.sum(torch.exp(x), dim))` overflows to inf for large `x`; "
                    "use `torch.logsumexp(x, dim)`"
                ),
            )


def checkpoint_without_use_reentrant(ctx: FileContext) -> Iterator[Hit]:
    if ctx.target_torch < USE_REENTRANT_WARNS:
        return
    for call in ctx.calls:
        if qualified(ctx, call.func) not in CHECKPOINTS or has_unpacking(call):
            continue
        if kwarg(call, "use_reentrant") is None:
            yield (
                call,
                (
                    "`checkpoint` without `use_reentrant` warns and runs the reentrant variant, "
                    "whose default torch is changing; pass `use_reentrant=False` (recommended) "
                    "or `True` to keep the old behaviour"
                ),
            )


RULES: tuple[Rule, ...] = (
    Rule(
        "PGN101",
        "no-grad-in-train-mode",
        Severity.ERROR,
        "Evaluation under `no_grad` with the model still in train mode.",
        no_grad_in_train_mode,
    ),
    Rule(
        "PGN102",
        "item-before-backward",
        Severity.ERROR,
        "A loss turned into a Python number and then `.backward()`ed.",
        item_before_backward,
    ),
    Rule(
        "PGN103",
        "inplace-functional-in-forward",
        Severity.WARNING,
        "`F.relu(x, inplace=True)` on a tensor autograd still needs (or the forward's input).",
        inplace_functional_in_forward,
        fix=drop_kwarg("inplace", "Remove `inplace=True`"),
    ),
    Rule(
        "PGN104",
        "augmented-assign-in-forward",
        Severity.WARNING,
        "`x += y` in `forward` on a tensor autograd still needs (or the forward's input).",
        augmented_assign_in_forward,
        fix=RuleFix(
            "Rewrite as an out-of-place assignment", lambda node: rewrites().augassign(node)
        ),
    ),
    Rule(
        "PGN105",
        "persistent-workers-without-workers",
        Severity.ERROR,
        "`persistent_workers=True` with `num_workers` 0 or unset: DataLoader raises ValueError.",
        persistent_workers_without_workers,
        fix=drop_kwarg("persistent_workers", "Remove `persistent_workers=True`"),
    ),
    Rule(
        "PGN106",
        "softmax-before-cross-entropy",
        Severity.ERROR,
        "A softmax / log_softmax output fed to `CrossEntropyLoss` / `F.cross_entropy`.",
        softmax_before_cross_entropy,
    ),
    Rule(
        "PGN107",
        "sigmoid-before-bce-with-logits",
        Severity.ERROR,
        "A sigmoid output fed to `BCEWithLogitsLoss` / `F.binary_cross_entropy_with_logits`.",
        sigmoid_before_bce_with_logits,
    ),
    Rule(
        "PGN108",
        "step-without-zero-grad",
        Severity.ERROR,
        "A loop that runs `backward()` and `optimizer.step()` with no `zero_grad()` in the "
        "function.",
        step_without_zero_grad,
    ),
    Rule(
        "PGN109",
        "requires-grad-typo",
        Severity.ERROR,
        "`require_grad` (or a similar misspelling) set where `requires_grad` was meant.",
        requires_grad_typo,
        fix=rename_attr("requires_grad", "Rename to `requires_grad`", unsafe=True),
    ),
    Rule(
        "PGN110",
        "backward-under-no-grad",
        Severity.ERROR,
        "`loss.backward()` on a loss computed inside `torch.no_grad()` / `inference_mode()`.",
        backward_under_no_grad,
    ),
    Rule(
        "PGN111",
        "eval-without-train",
        Severity.ERROR,
        "`model.eval()` inside an epoch loop that trains, with no `model.train()` back in the "
        "loop.",
        eval_without_train,
    ),
    Rule(
        "PGN113",
        "weights-created-in-forward",
        Severity.ERROR,
        "A layer, Parameter or weight created inside `forward`: new random weights every call.",
        weights_created_in_forward,
    ),
    Rule(
        "PGN114",
        "log1p-by-hand",
        Severity.INFO,
        "`torch.log(1 + x)` rounds away small `x`; `torch.log1p(x)` is exact.",
        log1p_by_hand,
    ),
    Rule(
        "PGN115",
        "expm1-by-hand",
        Severity.INFO,
        "`torch.exp(x) - 1` cancels to 0 for small `x`; `torch.expm1(x)` is exact.",
        expm1_by_hand,
    ),
    Rule(
        "PGN116",
        "logsumexp-by-hand",
        Severity.WARNING,
        "`torch.log(torch.sum(torch.exp(x), dim))` overflows for large `x`; use `torch.logsumexp`.",
        logsumexp_by_hand,
    ),
    Rule(
        "PGN117",
        "checkpoint-without-use-reentrant",
        Severity.WARNING,
        "`torch.utils.checkpoint.checkpoint` without an explicit `use_reentrant`.",
        checkpoint_without_use_reentrant,
        fix=RuleFix(
            "Pass `use_reentrant=False`", lambda call: rewrites().use_reentrant(call), unsafe=True
        ),
    ),
)
