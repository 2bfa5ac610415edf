"""PGN3xx: runs that cannot be repeated."""

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
)
from ptgen.lint.fixers import drop_kwarg
from ptgen.lint.model import Hit, Rule, Severity
from ptgen.lint.patterns import (
    is_dataloader,
    is_optimizer_step,
)

EVAL_SPLIT_RE = re.compile(
    r"(^|[^a-z])(val|valid|validation|test|testing|eval|evaluation|dev)([^a-z]|$)", re.I
)


def _names_around(ctx: FileContext, call: ast.Call) -> list[str]:
    """The loader's assigned name, its dataset argument, and the function it is built in."""
    parent = ctx.parents.get(call)
    names = [dotted(t) for t in getattr(parent, "targets", [])]
    first = call.args[0] if call.args else getattr(kwarg(call, "dataset"), "value", None)
    names.append(ast.unparse(first) if first is not None else "")
    names.append(getattr(ctx.scope(call), "name", ""))
    return names


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
            yield (
                call,
                (
                    f"`shuffle=True` on an evaluation loader (`{which[:40]}`): the order of "
                    "predictions changes every run and nothing is gained; use `shuffle=False`"
                ),
            )


TORCH_SEEDS = {
    "torch.manual_seed",
    "torch.cuda.manual_seed",
    "torch.cuda.manual_seed_all",
    "torch.random.manual_seed",
}


LIBRARY_SEEDS = {"manual_seed", "manual_seed_all", "seed"}


NUMPY_DRAWS_EXCEPT = {
    "seed",
    "default_rng",
    "RandomState",
    "Generator",
    "get_state",
    "set_state",
    "SeedSequence",
}


RANDOM_DRAWS = {
    "random",
    "randint",
    "shuffle",
    "choice",
    "choices",
    "sample",
    "uniform",
    "gauss",
    "randrange",
}


def _is_script(ctx: FileContext) -> bool:
    for node in ctx.tree.body:
        if isinstance(node, ast.If) and "__name__" in ctx.segment(node.test):
            return True
    return any(is_optimizer_step(c) and ctx.scope(c) is ctx.tree for c in ctx.calls)


def _unseeded(ctx: FileContext) -> list[str]:
    """The generators this module draws from but never seeds ([] when all are seeded)."""
    names = [dotted(c.func) for c in ctx.calls]
    if any(
        "seed" in n.split(".")[-1].lower() and n.split(".")[-1] not in LIBRARY_SEEDS for n in names
    ):
        return []  # a seeding helper (set_seed, seed_everything, ...) is trusted to seed all
    missing = [] if TORCH_SEEDS & set(names) else ["torch (torch.manual_seed)"]
    np_draws = [
        n
        for n in names
        if n.startswith(("np.random.", "numpy.random."))
        and n.split(".")[-1] not in NUMPY_DRAWS_EXCEPT
    ]
    if np_draws and not {"np.random.seed", "numpy.random.seed"} & set(names):
        missing.append("numpy (np.random.seed)")
    if (
        any(n.startswith("random.") and n.split(".")[-1] in RANDOM_DRAWS for n in names)
        and "random.seed" not in names
    ):
        missing.append("random (random.seed)")
    return missing


def unseeded_training(ctx: FileContext) -> Iterator[Hit]:
    steps = [c for c in ctx.calls if is_optimizer_step(c)]
    script = _is_script(ctx)
    entry = [c for c in steps if script or getattr(ctx.scope(c), "name", "") == "main"]
    if not entry:
        return
    missing = _unseeded(ctx)
    if missing:
        yield (
            entry[0],
            (
                f"training entry point never seeds {', '.join(missing)}; runs are not reproducible "
                "(seed once at start-up, e.g. a `set_seed(seed)` helper)"
            ),
        )


def _assigned_true(node: ast.AST, suffix: str) -> bool:
    return (
        isinstance(node, ast.Assign)
        and any(dotted(t).endswith(suffix) for t in node.targets)
        and is_const(node.value, True)
    )


def benchmark_with_determinism(ctx: FileContext) -> Iterator[Hit]:
    assigns = ctx.of_type(ast.Assign)
    benchmark = [a for a in assigns if _assigned_true(a, "cudnn.benchmark")]
    if not benchmark:
        return
    claims = [a for a in assigns if _assigned_true(a, "cudnn.deterministic")] + [
        c
        for c in ctx.calls
        if call_name(c) == "use_deterministic_algorithms" and c.args and is_const(c.args[0], True)
    ]
    for node in benchmark:
        if any(not _exclusive(ctx, node, claim) for claim in claims):
            yield (
                node,
                (
                    "`cudnn.benchmark = True` picks kernels by timing, so results vary run to "
                    "run despite the determinism settings here; set it to False when determinism "
                    "is wanted"
                ),
            )


def _branches(ctx: FileContext, node: ast.AST) -> dict[int, bool]:
    """For each enclosing `if`: is `node` in its body (True) or its else branch (False)?"""
    found, child = {}, node
    for parent in ctx.ancestors(node):
        if isinstance(parent, ast.If):
            found[id(parent)] = any(child is s for s in parent.body)
        child = parent
    return found


def _exclusive(ctx: FileContext, one: ast.AST, other: ast.AST) -> bool:
    """The two statements sit in different branches of one `if` (never run together)."""
    mine, theirs = _branches(ctx, one), _branches(ctx, other)
    return any(key in theirs and theirs[key] != side for key, side in mine.items())


RULES: tuple[Rule, ...] = (
    Rule(
        "PGN301",
        "unseeded-training",
        Severity.WARNING,
        "A training entry point (script or `main`) that steps an optimizer but never seeds.",
        unseeded_training,
    ),
    Rule(
        "PGN302",
        "benchmark-with-determinism",
        Severity.WARNING,
        "`cudnn.benchmark = True` in code that also asks for deterministic results.",
        benchmark_with_determinism,
    ),
    Rule(
        "PGN303",
        "shuffled-eval-loader",
        Severity.WARNING,
        "`shuffle=True` on a validation or test DataLoader.",
        shuffled_eval_loader,
        fix=drop_kwarg("shuffle", "Remove `shuffle=True`", unsafe=True),
    ),
)
