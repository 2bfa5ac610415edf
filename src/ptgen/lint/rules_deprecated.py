"""PGN701, PGN702: torch APIs removed or deprecated in the `--target-torch` version.

The table covers TorchFix's TOR001/TOR101/TOR004/TOR103 symbols plus the AMP and
functional aliases that warn at run time, each with the release that deprecated or
removed it. A fix is offered only where the replacement takes the same arguments.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass

from ptgen.lint.context import FileContext, dotted
from ptgen.lint.dataflow import aliases, qualified
from ptgen.lint.model import Severity
from ptgen.lint.registry import NO_FIX, Hit, rule


@dataclass(frozen=True)
class Api:
    deprecated: tuple[int, int]
    removed: tuple[int, int] | None = None
    replacement: str = ""
    same_arguments: bool = False  # the replacement is a drop-in: the call can be renamed


TORCH_1_9 = (1, 9)
COMPAT_TEST_RE = re.compile(r"version|VERSION|_TORCH_|GREATER|LESS|hasattr|_AVAILABLE")
DEPRECATED: dict[str, Api] = {
    "torch.solve": Api(TORCH_1_9, (1, 13), "torch.linalg.solve"),
    "torch.symeig": Api(TORCH_1_9, (1, 13), "torch.linalg.eigh"),
    "torch.eig": Api(TORCH_1_9, (1, 13), "torch.linalg.eig"),
    "torch.matrix_rank": Api(TORCH_1_9, (1, 13), "torch.linalg.matrix_rank"),
    "torch.lstsq": Api(TORCH_1_9, (1, 13), "torch.linalg.lstsq"),
    "torch.qr": Api(TORCH_1_9, None, "torch.linalg.qr"),
    "torch.cholesky": Api(TORCH_1_9, None, "torch.linalg.cholesky"),
    "torch.chain_matmul": Api(TORCH_1_9, None, "torch.linalg.multi_dot"),
    "torch.norm": Api(TORCH_1_9, None, "torch.linalg.vector_norm / matrix_norm"),
    "torch.ger": Api(TORCH_1_9, None, "torch.outer", same_arguments=True),
    "torch.lu": Api((1, 13), None, "torch.linalg.lu_factor"),
    "torch.lu_solve": Api((1, 13), None, "torch.linalg.lu_solve"),
    "torch.range": Api((0, 4), None, "torch.arange (whose end is exclusive)"),
    "torch.svd": Api(TORCH_1_9, None, "torch.linalg.svd"),
    "torch.triangular_solve": Api((1, 11), None, "torch.linalg.solve_triangular"),
    "torch.nn.UpsamplingNearest2d": Api((0, 4), None, "torch.nn.Upsample(mode='nearest')"),
    "torch.nn.UpsamplingBilinear2d": Api((0, 4), None, "torch.nn.Upsample(mode='bilinear')"),
    "torch.nn.functional.upsample": Api(
        (0, 4), None, "torch.nn.functional.interpolate", same_arguments=True
    ),
    "torch.testing.assert_allclose": Api((1, 12), None, "torch.testing.assert_close"),
    "torch.nn.utils.weight_norm": Api((2, 1), None, "torch.nn.utils.parametrizations.weight_norm"),
    "torch.utils._pytree._register_pytree_node": Api(
        (2, 2), None, "torch.utils._pytree.register_pytree_node"
    ),
    "torch.backends.cuda.sdp_kernel": Api((2, 3), None, "torch.nn.attention.sdpa_kernel"),
    "torch.cuda.amp.autocast": Api((2, 4), None, 'torch.amp.autocast("cuda", ...)'),
    "torch.cuda.amp.GradScaler": Api((2, 4), None, 'torch.amp.GradScaler("cuda", ...)'),
    "torch.cpu.amp.autocast": Api((2, 4), None, 'torch.amp.autocast("cpu", ...)'),
    "torch.autograd.Variable": Api((0, 4), None, "plain tensors (requires_grad=True)"),
    **{
        f"functorch.{name}": Api((2, 0), None, f"torch.func.{name}", same_arguments=True)
        for name in ("vmap", "grad", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "functionalize")
    },
}


def _version(v: tuple[int, int]) -> str:
    return f"{v[0]}.{v[1]}"


def _uses(ctx: FileContext) -> Iterator[tuple[ast.AST, str]]:
    """References to a table entry: attribute chains and `from` imports (a bare name is
    reported at its import, once), outside version-compatibility fallbacks."""
    for node in ctx.of_type(ast.Attribute):
        if isinstance(ctx.parents.get(node), ast.Attribute):
            continue  # only the whole chain (`torch.cuda.amp.autocast`, not `torch.cuda`)
        name = qualified(ctx, node)
        if name in DEPRECATED and not compat_fallback(ctx, node):
            yield node, name
    for node in ctx.of_type(ast.ImportFrom):
        for alias in node.names:  # type: ignore[attr-defined]
            name = f"{node.module}.{alias.name}"  # type: ignore[attr-defined]
            if name in DEPRECATED and not compat_fallback(ctx, node):
                yield node, name


def compat_fallback(ctx: FileContext, node: ast.AST) -> bool:
    """Code for old torch releases only: in an `except` handler (`except ImportError:
    from functorch import vmap`) or under a test of the version or of `hasattr`."""
    for parent in ctx.ancestors(node):
        if isinstance(parent, ast.ExceptHandler):
            return True
        if isinstance(parent, (ast.If, ast.IfExp)) and COMPAT_TEST_RE.search(
            ctx.segment(parent.test)
        ):
            return True
    return False


def _found(ctx: FileContext, removed: bool) -> Iterator[tuple[ast.AST, str, Api]]:
    for node, name in _uses(ctx):
        api = DEPRECATED[name]
        gone = api.removed is not None and ctx.target_torch >= api.removed
        if gone == removed and ctx.target_torch >= api.deprecated:
            yield node, name, api


CONVENTIONAL = {"torch.nn.functional.": "F.", "torch.nn.": "nn."}


def spelled_as(text: str, name: str) -> bool:
    """`text` is `name` written out, or with the usual `F.` / `nn.` import alias."""
    if text == name:
        return True
    return any(
        name.startswith(full) and text == short + name[len(full) :]
        for full, short in CONVENTIONAL.items()
    )


def replacement_for(text: str) -> str:
    """The drop-in replacement for the deprecated API spelt `text` ("" if none)."""
    for name, api in DEPRECATED.items():
        if api.same_arguments and spelled_as(text, name):
            return api.replacement
    return ""


def _fixable(ctx: FileContext, node: ast.AST, name: str) -> bool:
    """Renaming is safe when the new name resolves here: `torch` imported as itself."""
    return (
        DEPRECATED[name].same_arguments
        and aliases(ctx).get("torch") == "torch"
        and spelled_as(dotted(node), name)
    )


@rule(
    "PGN701",
    "removed-api",
    Severity.ERROR,
    "A torch API that the target torch version no longer has (AttributeError at run time).",
)
def removed_api(ctx: FileContext) -> Iterator[Hit]:
    for node, name, api in _found(ctx, removed=True):
        yield node, (
            f"`{name}` was removed in torch {_version(api.removed)} (target "  # type: ignore[arg-type]
            f"{_version(ctx.target_torch)}); use `{api.replacement}`"
        )


@rule(
    "PGN702",
    "deprecated-api",
    Severity.WARNING,
    "A torch API deprecated in the target torch version.",
    fix="rename-api",
)
def deprecated_api(ctx: FileContext) -> Iterator[Hit]:
    for node, name, api in _found(ctx, removed=False):
        message = (
            f"`{name}` is deprecated since torch {_version(api.deprecated)}; "
            f"use `{api.replacement}`"
        )
        yield node, message, ("" if _fixable(ctx, node, name) else NO_FIX)
