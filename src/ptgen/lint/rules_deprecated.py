"""PGN701, PGN702, PGN703: torch APIs removed, deprecated or non-public.

The table covers TorchFix's TOR001/TOR101/TOR004/TOR103/TOR202 symbols plus the AMP and
functional aliases that warn at run time, each with the release that deprecated or
removed it (torchvision's with the torch release it ships with). A fix is offered where
the replacement computes the same: a drop-in rename, or a rewrite of the call
(`torch.qr(A, some=False)` -> `torch.linalg.qr(A, mode="complete")`), safe only where
every argument is one the rewrite understands.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from ptgen.lint.context import FileContext, dotted, has_unpacking, kwarg
from ptgen.lint.dataflow import aliases
from ptgen.lint.model import Severity
from ptgen.lint.registry import NO_FIX, UNSAFE, Hit, rule
from ptgen.lint.symbols import references


@dataclass(frozen=True)
class Api:
    deprecated: tuple[int, int]
    removed: tuple[int, int] | None = None
    replacement: str = ""
    # How the fix rewrites a use: "rename" (a drop-in: same arguments, same result),
    # "rename-unsafe" (close, but not every argument means the same), "call:<kind>" (the
    # call's arguments are rewritten, see ptgen.lint.fixes_api), "" (no fix).
    fix: str = ""


TORCH_1_9 = (1, 9)
AMP_2_4 = (2, 4)
TORCHVISION_0_16 = (2, 1)  # torchvision 0.16 ships with torch 2.1
DEPRECATED: dict[str, Api] = {
    "torch.solve": Api(TORCH_1_9, (1, 13), "torch.linalg.solve"),
    "torch.symeig": Api(TORCH_1_9, (1, 13), "torch.linalg.eigh"),
    "torch.eig": Api(TORCH_1_9, (1, 13), "torch.linalg.eig"),
    "torch.matrix_rank": Api(TORCH_1_9, (1, 13), "torch.linalg.matrix_rank"),
    "torch.lstsq": Api(TORCH_1_9, (1, 13), "torch.linalg.lstsq"),
    "torch.qr": Api(TORCH_1_9, None, "torch.linalg.qr", "call:qr"),
    "torch.cholesky": Api(TORCH_1_9, None, "torch.linalg.cholesky", "call:cholesky"),
    "torch.chain_matmul": Api(TORCH_1_9, None, "torch.linalg.multi_dot", "call:chain_matmul"),
    "torch.norm": Api(TORCH_1_9, None, "torch.linalg.vector_norm / matrix_norm"),
    "torch.ger": Api(TORCH_1_9, None, "torch.outer", "rename"),
    "torch.lu": Api((1, 13), None, "torch.linalg.lu_factor"),
    "torch.lu_solve": Api((1, 13), None, "torch.linalg.lu_solve"),
    "torch.range": Api((0, 4), None, "torch.arange (whose end is exclusive)", "call:range"),
    "torch.svd": Api(TORCH_1_9, None, "torch.linalg.svd"),
    "torch.triangular_solve": Api((1, 11), None, "torch.linalg.solve_triangular"),
    "torch.nn.UpsamplingNearest2d": Api((0, 4), None, "torch.nn.Upsample(mode='nearest')"),
    "torch.nn.UpsamplingBilinear2d": Api((0, 4), None, "torch.nn.Upsample(mode='bilinear')"),
    "torch.nn.functional.upsample": Api((0, 4), None, "torch.nn.functional.interpolate", "rename"),
    "torch.testing.assert_allclose": Api((1, 12), None, "torch.testing.assert_close"),
    "torch.nn.utils.weight_norm": Api((2, 1), None, "torch.nn.utils.parametrizations.weight_norm"),
    "torch.utils._pytree._register_pytree_node": Api(
        (2, 2), None, "torch.utils._pytree.register_pytree_node", "rename-unsafe"
    ),
    "torch.backends.cuda.sdp_kernel": Api((2, 3), None, "torch.nn.attention.sdpa_kernel"),
    "torch.cuda.amp.autocast": Api(AMP_2_4, None, 'torch.amp.autocast("cuda", ...)', "call:amp"),
    "torch.cuda.amp.GradScaler": Api(
        AMP_2_4, None, 'torch.amp.GradScaler("cuda", ...)', "call:amp"
    ),
    "torch.cuda.amp.custom_fwd": Api(AMP_2_4, None, 'torch.amp.custom_fwd(device_type="cuda")'),
    "torch.cuda.amp.custom_bwd": Api(AMP_2_4, None, 'torch.amp.custom_bwd(device_type="cuda")'),
    "torch.cpu.amp.autocast": Api(AMP_2_4, None, 'torch.amp.autocast("cpu", ...)', "call:amp"),
    "torch.autograd.Variable": Api((0, 4), None, "plain tensors (requires_grad=True)"),
    "torchvision.transforms.v2.ToTensor": Api(
        TORCHVISION_0_16,
        None,
        "v2.Compose([v2.ToImage(), v2.ToDtype(torch.float32, scale=True)])",
    ),
    **{
        f"functorch.{name}": Api((2, 0), None, f"torch.func.{name}", "rename")
        for name in ("vmap", "grad", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "functionalize")
    },
}
# Private torch names with a public twin (the same object), for PGN703.
NON_PUBLIC: dict[str, str] = {
    "torch.utils.data._utils.collate.default_collate": "torch.utils.data.default_collate",
    "torch.utils.data._utils.collate.default_convert": "torch.utils.data.default_convert",
}


def _version(v: tuple[int, int]) -> str:
    return f"{v[0]}.{v[1]}"


def _found(ctx: FileContext, removed: bool) -> Iterator[tuple[ast.AST, str, Api]]:
    for node, name in references(ctx, DEPRECATED):
        api = DEPRECATED[name]
        gone = api.removed is not None and ctx.target_torch >= api.removed
        if gone == removed and ctx.target_torch >= api.deprecated:
            yield _reported_node(ctx, node, api), name, api


def _reported_node(ctx: FileContext, node: ast.AST, api: Api) -> ast.AST:
    """The call for an API whose fix rewrites the call's arguments, else the reference."""
    parent = ctx.parents.get(node)
    if api.fix.startswith("call:") and isinstance(parent, ast.Call) and parent.func is node:
        return parent
    return node


CONVENTIONAL = {"torch.nn.functional.": "F.", "torch.nn.": "nn."}


def spelled_as(text: str, name: str) -> bool:
    """`text` is `name` written out, or with the usual `F.` / `nn.` import alias."""
    if text == name:
        return True
    return any(
        name.startswith(full) and text == short + name[len(full) :]
        for full, short in CONVENTIONAL.items()
    )


def api_spelt(text: str) -> tuple[str, Api] | None:
    """The table entry whose name `text` spells (for the fixer, which sees only text)."""
    for name, api in DEPRECATED.items():
        if spelled_as(text, name):
            return name, api
    return None


def replacement_for(text: str) -> str:
    """The renamed API for the deprecated or non-public API spelt `text` ("" if none)."""
    found = api_spelt(text)
    if found is not None and found[1].fix in ("rename", "rename-unsafe"):
        return found[1].replacement
    return next((new for old, new in NON_PUBLIC.items() if text == old), "")


def import_replacements(module: str, names: list[str]) -> tuple[str, list[str]] | None:
    """(new module, new names) for `from module import names` when every name has a
    drop-in rename within one new module; None otherwise."""
    new = [_renamed(f"{module}.{name}") for name in names]
    modules = {n.rpartition(".")[0] for n in new if n}
    if not all(new) or len(modules) != 1:
        return None
    return modules.pop(), [n.rpartition(".")[2] for n in new]


def _renamed(name: str) -> str:
    api = DEPRECATED.get(name)
    if api is not None and api.fix in ("rename", "rename-unsafe"):
        return api.replacement
    return NON_PUBLIC.get(name, "")


def _import_applicability(ctx: FileContext, node: ast.alias, name: str) -> str:
    """An imported name is fixed by rewriting its whole `from` import (see fixes)."""
    statement = ctx.parents.get(node)
    if not isinstance(statement, ast.ImportFrom) or statement.level:
        return NO_FIX
    names = [a.name for a in statement.names]
    if import_replacements(statement.module or "", names) is None:
        return NO_FIX
    return UNSAFE if DEPRECATED.get(name, Api((0, 0))).fix == "rename-unsafe" else ""


def _resolves(ctx: FileContext, node: ast.AST, name: str) -> bool:
    """The replacement's name resolves here: `torch` imported as itself, and the old
    name written out (`torch.x`, `F.x`, `nn.x`), so the fix can name the new one."""
    func = node.func if isinstance(node, ast.Call) else node
    return aliases(ctx).get("torch") == "torch" and spelled_as(dotted(func), name)


def _applicability(ctx: FileContext, node: ast.AST, name: str, api: Api) -> str:
    """ "" (safe), UNSAFE or NO_FIX for this use, by the API's fix kind and the call."""
    if isinstance(node, ast.alias):
        return _import_applicability(ctx, node, name)
    if not api.fix or not _resolves(ctx, node, name):
        return NO_FIX
    if api.fix == "rename":
        return ""
    if api.fix == "rename-unsafe":
        return UNSAFE
    if not isinstance(node, ast.Call) or has_unpacking(node):
        return NO_FIX
    return CALL_CHECKS[api.fix](node, name)


def _literal(node: ast.AST | None, *types: type) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) in types


def _int_literal(node: ast.AST | None) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    return _literal(node, int)


def _argument(call: ast.Call, index: int, keyword: str) -> ast.AST | None:
    if len(call.args) > index:
        return call.args[index]
    found = kwarg(call, keyword)
    return found.value if found is not None else None


def _check_qr(call: ast.Call, name: str) -> str:
    some = _argument(call, 1, "some")
    return "" if some is None or _literal(some, bool) else NO_FIX


def _check_cholesky(call: ast.Call, name: str) -> str:
    upper = _argument(call, 1, "upper")
    if upper is None or (_literal(upper, bool) and not upper.value):  # type: ignore[attr-defined]
        return ""
    return "" if _literal(upper, bool) and kwarg(call, "out") is None else NO_FIX


def _check_chain_matmul(call: ast.Call, name: str) -> str:
    extra = {k.arg for k in call.keywords} - {"out"}
    return "" if len(call.args) >= 2 and not extra else NO_FIX


def _check_range(call: ast.Call, name: str) -> str:
    """Safe only with integer literals and an explicit dtype: `torch.range` returns the
    default float dtype where `torch.arange` of integers returns int64, and a
    non-literal end could be a float, whose `end + step` bound includes a further value."""
    start, end, step = (_argument(call, i, k) for i, k in enumerate(("start", "end", "step")))
    if end is None or (step is not None and not _int_literal(step)):
        return NO_FIX
    exact = all(_int_literal(a) for a in (start, end)) and kwarg(call, "dtype") is not None
    return "" if exact else UNSAFE


def _check_amp(call: ast.Call, name: str) -> str:
    """`torch.amp.autocast("cuda", ...)` takes the device first, so positional arguments
    would shift; without `dtype` / `cache_enabled` it falls back to
    `torch.get_autocast_dtype` / `torch.is_autocast_cache_enabled`, which
    `torch.set_autocast_dtype` / `set_autocast_cache_enabled` may have changed from the
    old fixed defaults (float16 or bfloat16, True)."""
    if call.args:
        return NO_FIX
    defaults = [kwarg(call, "dtype"), kwarg(call, "cache_enabled")]
    if name.endswith("autocast") and None in defaults:
        return UNSAFE
    return ""


CALL_CHECKS = {
    "call:qr": _check_qr,
    "call:cholesky": _check_cholesky,
    "call:chain_matmul": _check_chain_matmul,
    "call:range": _check_range,
    "call:amp": _check_amp,
}


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
        yield node, message, _applicability(ctx, node, name, api)


@rule(
    "PGN703",
    "non-public-api",
    Severity.WARNING,
    "A private torch name (`_utils`, `_private`) that has a public twin.",
    fix="rename-api",
)
def non_public_api(ctx: FileContext) -> Iterator[Hit]:
    for node, name in references(ctx, NON_PUBLIC):
        public = NON_PUBLIC[name]
        if isinstance(node, ast.alias):
            fix = _import_applicability(ctx, node, name)
        else:
            fix = "" if _resolves_private(ctx, node, name) else NO_FIX
        yield node, (
            f"`{name}` is private (it may change or go without notice); use `{public}`, "
            "the same function"
        ), fix


def _resolves_private(ctx: FileContext, node: ast.AST, name: str) -> bool:
    return aliases(ctx).get("torch") == "torch" and dotted(node) == name
