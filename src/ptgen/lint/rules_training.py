"""PGN106-PGN111, PGN303: training-loop bugs that run without an error but train wrongly."""

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
    receiver,
)
from ptgen.lint.dataflow import aliases, last_binding, produced_by, qualified
from ptgen.lint.model import Severity
from ptgen.lint.patterns import (
    is_backward,
    is_dataloader,
    is_model_expr,
    is_optimizer_step,
    nearest_loop,
)
from ptgen.lint.registry import Hit, rule
from ptgen.lint.rules_correctness import no_grad_regions

SOFTMAXES = ("softmax", "log_softmax")
SIGMOIDS = ("sigmoid",)
REQUIRES_GRAD_TYPOS = {"require_grad", "requires_grads", "require_grads", "required_grad"}
CLEARS_GRADS_RE = re.compile(
    r"zero_grad|\.grad\s*=\s*None|\.grad(\.data)?\.zero_\(|\.grad(\.data)?\.detach_\("
)
EVAL_SPLIT_RE = re.compile(
    r"(^|[^a-z])(val|valid|validation|test|testing|eval|evaluation|dev)([^a-z]|$)", re.I
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


@rule(
    "PGN106",
    "softmax-before-cross-entropy",
    Severity.ERROR,
    "A softmax / log_softmax output fed to `CrossEntropyLoss` / `F.cross_entropy`.",
)
def softmax_before_cross_entropy(ctx: FileContext) -> Iterator[Hit]:
    for value in _loss_inputs(ctx, "cross_entropy", "CrossEntropyLoss"):
        made = produced_by(ctx, value, SOFTMAXES)
        if made:
            yield value, (
                f"`{ast.unparse(value)[:40]}` is already a {made} output, but cross entropy "
                "applies log_softmax itself (a double softmax flattens the gradients); pass "
                "the raw logits"
            )


@rule(
    "PGN107",
    "sigmoid-before-bce-with-logits",
    Severity.ERROR,
    "A sigmoid output fed to `BCEWithLogitsLoss` / `F.binary_cross_entropy_with_logits`.",
)
def sigmoid_before_bce_with_logits(ctx: FileContext) -> Iterator[Hit]:
    loss = "binary_cross_entropy_with_logits"
    for value in _loss_inputs(ctx, loss, "BCEWithLogitsLoss"):
        if produced_by(ctx, value, SIGMOIDS):
            yield value, (
                f"`{ast.unparse(value)[:40]}` is already a sigmoid output, but "
                "BCEWithLogitsLoss applies the sigmoid itself; pass the raw logits (or use "
                "BCELoss on probabilities)"
            )


def _function_text(ctx: FileContext, node: ast.AST) -> str:
    scope = ctx.scope(node)
    return ctx.source if scope is ctx.tree else ctx.segment(scope)


@rule(
    "PGN108",
    "step-without-zero-grad",
    Severity.ERROR,
    "A loop that runs `backward()` and `optimizer.step()` with no `zero_grad()` in the function.",
)
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
            yield call, (
                f"`{ast.unparse(call)}` in a loop with `backward()` but no `zero_grad()` "
                "anywhere in the function: gradients add up across steps; call "
                "`optimizer.zero_grad(set_to_none=True)` each step"
            )


@rule(
    "PGN109",
    "requires-grad-typo",
    Severity.ERROR,
    "`require_grad` (or a similar misspelling) set where `requires_grad` was meant.",
    fix="rename-attr:requires_grad",
    unsafe_fix=True,
)
def requires_grad_typo(ctx: FileContext) -> Iterator[Hit]:
    for node in ctx.of_type(ast.Assign, ast.AugAssign, ast.AnnAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]  # type: ignore[attr-defined]
        for target in targets:
            if isinstance(target, ast.Attribute) and target.attr in REQUIRES_GRAD_TYPOS:
                yield target, (
                    f"`{dotted(target) or target.attr}` is a new attribute that PyTorch never "
                    "reads, so nothing is frozen or unfrozen; did you mean `requires_grad`?"
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


@rule(
    "PGN110",
    "backward-under-no-grad",
    Severity.ERROR,
    "`loss.backward()` on a loss computed inside `torch.no_grad()` / `inference_mode()`.",
)
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
            yield call, (
                f"`{what}` was computed under no_grad/inference_mode, so `{what}.backward()` "
                "has no graph to go through; run the forward pass with gradients enabled"
            )


def _training_loop_calls(ctx: FileContext, loop: ast.AST) -> list[ast.Call]:
    scope = ctx.scope(loop)
    return [
        c for c in ctx.calls if ctx.scope(c) is scope and any(a is loop for a in ctx.ancestors(c))
    ]


@rule(
    "PGN111",
    "eval-without-train",
    Severity.ERROR,
    "`model.eval()` inside an epoch loop that trains, with no `model.train()` back in the loop.",
)
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
        yield first, (
            f"`{model}.eval()` inside the training loop with no `{model}.train()` back in it: "
            "from the next iteration on, dropout and batch-norm stay in eval mode while training"
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


def _names_around(ctx: FileContext, call: ast.Call) -> list[str]:
    """The loader's assigned name, its dataset argument, and the function it is built in."""
    parent = ctx.parents.get(call)
    names = [dotted(t) for t in getattr(parent, "targets", [])]
    first = call.args[0] if call.args else getattr(kwarg(call, "dataset"), "value", None)
    names.append(ast.unparse(first) if first is not None else "")
    names.append(getattr(ctx.scope(call), "name", ""))
    return names


@rule(
    "PGN303",
    "shuffled-eval-loader",
    Severity.WARNING,
    "`shuffle=True` on a validation or test DataLoader.",
    fix="drop-kwarg:shuffle",
    unsafe_fix=True,
)
def shuffled_eval_loader(ctx: FileContext) -> Iterator[Hit]:
    if ctx.is_test_file:
        return
    for call in ctx.calls:
        shuffle = kwarg(call, "shuffle")
        if not is_dataloader(call) or shuffle is None or not is_const(shuffle.value, True):
            continue
        names = [n for n in _names_around(ctx, call) if n]
        if any("train" in n.lower() for n in names):
            continue
        which = next((n for n in names if EVAL_SPLIT_RE.search(n)), None)
        if which is not None and not has_unpacking(call):
            yield call, (
                f"`shuffle=True` on an evaluation loader (`{which[:40]}`): the order of "
                "predictions changes every run and nothing is gained; use `shuffle=False`"
            )
