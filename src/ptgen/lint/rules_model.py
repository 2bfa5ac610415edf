"""PGN113, PGN404, PGN601: how modules are built and checkpoints kept."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from ptgen.lint.context import FileContext, call_name, dotted, receiver
from ptgen.lint.model import Severity
from ptgen.lint.patterns import in_forward, is_backward, is_optimizer_step, is_torch_call
from ptgen.lint.registry import Hit, rule

# nn classes that own trainable weights (an `nn.Softmax()` built per call is harmless)
WEIGHTED_LAYER_RE = re.compile(
    r"^(Lazy)?(Linear|Bilinear|Conv\w*|ConvTranspose\w*|BatchNorm\w*|SyncBatchNorm|LayerNorm|"
    r"GroupNorm|InstanceNorm\w*|RMSNorm|Embedding\w*|LSTM\w*|GRU\w*|RNN\w*|"
    r"MultiheadAttention|Transformer\w*|PReLU|Parameter)$"
)
FUNCTIONAL_WITH_WEIGHT = {"conv1d", "conv2d", "conv3d", "linear", "bilinear", "embedding"}
MAKES_RE = re.compile(r"^_*(make|create|new|build|init|random)_?", re.I)
RESHAPES = {"view", "reshape", "flatten"}
SHAPE_COMMENT_RE = re.compile(r"#.*(->|[(\[][^)\]]*,[^)\]]*[)\]]|shape)", re.I)


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


@rule(
    "PGN113",
    "weights-created-in-forward",
    Severity.ERROR,
    "A layer, Parameter or weight created inside `forward`: new random weights every call.",
)
def weights_created_in_forward(ctx: FileContext) -> Iterator[Hit]:
    for call in ctx.calls:
        if not in_forward(ctx, call):
            continue
        what = _creates_weights(ctx, call)
        if what:
            yield call, (
                f"{what} is created on every call of `forward`: the optimizer never sees it, "
                "so it is never trained; build layers and parameters in `__init__`"
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


@rule(
    "PGN404",
    "checkpoint-without-optimizer",
    Severity.INFO,
    "A checkpoint inside the training loop that saves only the model's weights.",
)
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
            yield call, (
                f"checkpoint of `{model}.state_dict()` alone inside the training loop: without "
                "the optimizer (and scheduler, epoch) state the run cannot resume; save a dict "
                "with both"
            )


@rule(
    "PGN601",
    "undocumented-reshape",
    Severity.INFO,
    "A reshape in `forward` with no shape comment (opt-in: select PGN6).",
)
def undocumented_reshape(ctx: FileContext) -> Iterator[Hit]:
    for call in ctx.calls:
        if call_name(call) not in RESHAPES or not in_forward(ctx, call, method=False):
            continue
        line = ctx.lines[call.lineno - 1] if call.lineno <= len(ctx.lines) else ""
        if not SHAPE_COMMENT_RE.search(line):
            yield call, (
                f"`{ast.unparse(call)[:40]}` reshapes without saying the shape; add a comment "
                "such as `# (B, C*H*W)`"
            )
