"""PGN7xx: removed, deprecated and non-public torch and torchvision APIs.

PGN701, PGN702, PGN703: torch APIs removed, deprecated or non-public.

The table covers TorchFix's TOR001/TOR101/TOR004/TOR103/TOR202 symbols plus the AMP and
functional aliases that warn at run time, each with the release that deprecated or
removed it (torchvision's with the torch release it ships with). A fix is offered where
the replacement computes the same: a drop-in rename, or a rewrite of the call
(`torch.qr(A, some=False)` -> `torch.linalg.qr(A, mode="complete")`), safe only where
every argument is one the rewrite understands.

PGN704: torchvision's old `pretrained=` API.

torchvision 0.13 (with torch 1.12) replaced `pretrained=True` by `weights=`; the weights
can be named by string (`weights="IMAGENET1K_V1"`), which is what the fix writes, so
that no import is needed. `pretrained=True` meant one specific set of weights per
family, listed below; a model outside the list gets no fix for `True`.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ptgen.lint.context import FileContext, dotted, has_unpacking, kwarg
from ptgen.lint.dataflow import aliases, qualified
from ptgen.lint.fixers import rewrites
from ptgen.lint.model import NO_FIX, UNSAFE, Hit, Rule, RuleFix, Severity
from ptgen.lint.symbols import references


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


@dataclass(frozen=True)
class ApiFix:
    """How a use of an API in the table is fixed: renamed (`rewrite` None, the reference
    replaced by the new name), or its call rewritten by `rewrite(call, old name)` (LibCST,
    only when fixing). `check(node, name)` says for this use: "" safe, UNSAFE or NO_FIX."""

    check: Callable[[ast.AST, str], str]
    rewrite: Callable[[Any, str], Any] | None = None


RENAME = ApiFix(lambda node, name: "")  # a drop-in: same arguments, same result
RENAME_UNSAFE = ApiFix(lambda node, name: UNSAFE)  # close, but not every argument means the same
QR = ApiFix(_check_qr, lambda call, old: rewrites().rewrite_qr(call))
CHOLESKY = ApiFix(_check_cholesky, lambda call, old: rewrites().rewrite_cholesky(call))
CHAIN_MATMUL = ApiFix(_check_chain_matmul, lambda call, old: rewrites().rewrite_chain_matmul(call))
RANGE = ApiFix(_check_range, lambda call, old: rewrites().rewrite_range(call))
AMP = ApiFix(_check_amp, lambda call, old: rewrites().rewrite_amp(call, old))


@dataclass(frozen=True)
class Api:
    deprecated: tuple[int, int]
    removed: tuple[int, int] | None = None
    replacement: str = ""
    fix: ApiFix | None = None


TORCH_1_9 = (1, 9)


AMP_2_4 = (2, 4)


TORCHVISION_0_16 = (2, 1)  # torchvision 0.16 ships with torch 2.1


DEPRECATED: dict[str, Api] = {
    "torch.solve": Api(TORCH_1_9, (1, 13), "torch.linalg.solve"),
    "torch.symeig": Api(TORCH_1_9, (1, 13), "torch.linalg.eigh"),
    "torch.eig": Api(TORCH_1_9, (1, 13), "torch.linalg.eig"),
    "torch.matrix_rank": Api(TORCH_1_9, (1, 13), "torch.linalg.matrix_rank"),
    "torch.lstsq": Api(TORCH_1_9, (1, 13), "torch.linalg.lstsq"),
    "torch.qr": Api(TORCH_1_9, None, "torch.linalg.qr", QR),
    "torch.cholesky": Api(TORCH_1_9, None, "torch.linalg.cholesky", CHOLESKY),
    "torch.chain_matmul": Api(TORCH_1_9, None, "torch.linalg.multi_dot", CHAIN_MATMUL),
    "torch.norm": Api(TORCH_1_9, None, "torch.linalg.vector_norm / matrix_norm"),
    "torch.ger": Api(TORCH_1_9, None, "torch.outer", RENAME),
    "torch.lu": Api((1, 13), None, "torch.linalg.lu_factor"),
    "torch.lu_solve": Api((1, 13), None, "torch.linalg.lu_solve"),
    "torch.range": Api((0, 4), None, "torch.arange (whose end is exclusive)", RANGE),
    "torch.svd": Api(TORCH_1_9, None, "torch.linalg.svd"),
    "torch.triangular_solve": Api((1, 11), None, "torch.linalg.solve_triangular"),
    "torch.nn.UpsamplingNearest2d": Api((0, 4), None, "torch.nn.Upsample(mode='nearest')"),
    "torch.nn.UpsamplingBilinear2d": Api((0, 4), None, "torch.nn.Upsample(mode='bilinear')"),
    "torch.nn.functional.upsample": Api((0, 4), None, "torch.nn.functional.interpolate", RENAME),
    "torch.testing.assert_allclose": Api((1, 12), None, "torch.testing.assert_close"),
    "torch.nn.utils.weight_norm": Api((2, 1), None, "torch.nn.utils.parametrizations.weight_norm"),
    "torch.utils._pytree._register_pytree_node": Api(
        (2, 2), None, "torch.utils._pytree.register_pytree_node", RENAME_UNSAFE
    ),
    "torch.backends.cuda.sdp_kernel": Api((2, 3), None, "torch.nn.attention.sdpa_kernel"),
    "torch.cuda.amp.autocast": Api(AMP_2_4, None, 'torch.amp.autocast("cuda", ...)', AMP),
    "torch.cuda.amp.GradScaler": Api(AMP_2_4, None, 'torch.amp.GradScaler("cuda", ...)', AMP),
    "torch.cuda.amp.custom_fwd": Api(AMP_2_4, None, 'torch.amp.custom_fwd(device_type="cuda")'),
    "torch.cuda.amp.custom_bwd": Api(AMP_2_4, None, 'torch.amp.custom_bwd(device_type="cuda")'),
    "torch.cpu.amp.autocast": Api(AMP_2_4, None, 'torch.amp.autocast("cpu", ...)', AMP),
    "torch.autograd.Variable": Api((0, 4), None, "plain tensors (requires_grad=True)"),
    "torchvision.transforms.v2.ToTensor": Api(
        TORCHVISION_0_16,
        None,
        "v2.Compose([v2.ToImage(), v2.ToDtype(torch.float32, scale=True)])",
    ),
    **{
        f"functorch.{name}": Api((2, 0), None, f"torch.func.{name}", RENAME)
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
    rewrites_call = api.fix is not None and api.fix.rewrite is not None
    if rewrites_call and isinstance(parent, ast.Call) and parent.func is node:
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
    if found is not None and found[1].fix in (RENAME, RENAME_UNSAFE):
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
    if api is not None and api.fix in (RENAME, RENAME_UNSAFE):
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
    return UNSAFE if DEPRECATED.get(name, Api((0, 0))).fix is RENAME_UNSAFE else ""


def _resolves(ctx: FileContext, node: ast.AST, name: str) -> bool:
    """The replacement's name resolves here: `torch` imported as itself, and the old
    name written out (`torch.x`, `F.x`, `nn.x`), so the fix can name the new one."""
    func = node.func if isinstance(node, ast.Call) else node
    return aliases(ctx).get("torch") == "torch" and spelled_as(dotted(func), name)


def _applicability(ctx: FileContext, node: ast.AST, name: str, api: Api) -> str:
    """ "" (safe), UNSAFE or NO_FIX for this use, by the API's fix kind and the call."""
    if isinstance(node, ast.alias):
        return _import_applicability(ctx, node, name)
    if api.fix is None or not _resolves(ctx, node, name):
        return NO_FIX
    if api.fix.rewrite is not None and (not isinstance(node, ast.Call) or has_unpacking(node)):
        return NO_FIX
    return api.fix.check(node, name)


def removed_api(ctx: FileContext) -> Iterator[Hit]:
    for node, name, api in _found(ctx, removed=True):
        yield (
            node,
            (
                f"`{name}` was removed in torch {_version(api.removed)} (target "  # type: ignore[arg-type]
                f"{_version(ctx.target_torch)}); use `{api.replacement}`"
            ),
        )


def deprecated_api(ctx: FileContext) -> Iterator[Hit]:
    for node, name, api in _found(ctx, removed=False):
        message = (
            f"`{name}` is deprecated since torch {_version(api.deprecated)}; "
            f"use `{api.replacement}`"
        )
        yield node, message, _applicability(ctx, node, name, api)


def non_public_api(ctx: FileContext) -> Iterator[Hit]:
    for node, name in references(ctx, NON_PUBLIC):
        public = NON_PUBLIC[name]
        if isinstance(node, ast.alias):
            fix = _import_applicability(ctx, node, name)
        else:
            fix = "" if _resolves_private(ctx, node, name) else NO_FIX
        yield (
            node,
            (
                f"`{name}` is private (it may change or go without notice); use `{public}`, "
                "the same function"
            ),
            fix,
        )


def _resolves_private(ctx: FileContext, node: ast.AST, name: str) -> bool:
    return aliases(ctx).get("torch") == "torch" and dotted(node) == name


TORCHVISION_0_13 = (1, 12)  # torchvision 0.13 ships with torch 1.12


LEGACY_KEYWORDS = {"pretrained": "weights", "pretrained_backbone": "weights_backbone"}


_CLASSIFIERS = (
    "alexnet googlenet inception_v3 mobilenet_v2 mobilenet_v3_large mobilenet_v3_small "
    "mnasnet0_5 mnasnet1_0 squeezenet1_0 squeezenet1_1 shufflenet_v2_x0_5 shufflenet_v2_x1_0 "
    "resnet18 resnet34 resnet50 resnet101 resnet152 resnext50_32x4d resnext101_32x8d "
    "wide_resnet50_2 wide_resnet101_2 densenet121 densenet161 densenet169 densenet201 "
    "vgg11 vgg11_bn vgg13 vgg13_bn vgg16 vgg16_bn vgg19 vgg19_bn "
    "efficientnet_b0 efficientnet_b1 efficientnet_b2 efficientnet_b3 efficientnet_b4 "
    "efficientnet_b5 efficientnet_b6 efficientnet_b7 vit_b_16 vit_b_32 vit_l_16 vit_l_32"
)


_DETECTORS = (
    "fasterrcnn_resnet50_fpn fasterrcnn_mobilenet_v3_large_fpn "
    "fasterrcnn_mobilenet_v3_large_320_fpn retinanet_resnet50_fpn maskrcnn_resnet50_fpn "
    "keypointrcnn_resnet50_fpn ssd300_vgg16 ssdlite320_mobilenet_v3_large fcos_resnet50_fpn"
)


_SEGMENTERS = (
    "fcn_resnet50 fcn_resnet101 deeplabv3_resnet50 deeplabv3_resnet101 "
    "deeplabv3_mobilenet_v3_large lraspp_mobilenet_v3_large"
)


# builder -> the weights `pretrained=True` loaded (torchvision's legacy mapping)
LEGACY_WEIGHTS: dict[str, str] = {
    **{name: "IMAGENET1K_V1" for name in _CLASSIFIERS.split()},
    **{name: "COCO_V1" for name in _DETECTORS.split()},
    **{name: "COCO_WITH_VOC_LABELS_V1" for name in _SEGMENTERS.split()},
    **{name: "KINETICS400_V1" for name in ("r3d_18", "mc3_18", "r2plus1d_18")},
}


# builder -> the backbone weights `pretrained_backbone=True` loaded
BACKBONE_WEIGHTS: dict[str, str] = {
    **{name: "IMAGENET1K_V1" for name in (_DETECTORS + " " + _SEGMENTERS).split()},
    "ssd300_vgg16": "IMAGENET1K_FEATURES",  # VGG16's feature-extractor weights
}


QUANTIZED = "torchvision.models.quantization."  # `pretrained` depends on `quantize` there


def _builder(ctx: FileContext, call: ast.Call) -> str:
    """The dotted name of a torchvision model builder being called ("" otherwise)."""
    name = qualified(ctx, call.func)
    return name if name.startswith("torchvision.models.") else ""


def _legacy_arguments(call: ast.Call, name: str) -> Iterator[tuple[str, ast.AST]]:
    """(old keyword, value) of `pretrained=`, `pretrained_backbone=` or a positional bool."""
    for keyword in call.keywords:
        if keyword.arg in LEGACY_KEYWORDS:
            yield keyword.arg, keyword.value
    first = call.args[0] if call.args else None
    known = name.rsplit(".", 1)[-1] in LEGACY_WEIGHTS
    if known and isinstance(first, ast.Constant) and isinstance(first.value, bool):
        yield "pretrained", first


def new_weights(name: str, old: str, value: object) -> str | None:
    """The `weights=` value for a literal `pretrained=value` of builder `name` (None: unknown)."""
    if value is False:
        return "None"
    if value is not True or name.startswith(QUANTIZED):
        return None
    if old == "pretrained_backbone":
        legacy = BACKBONE_WEIGHTS.get(name.rsplit(".", 1)[-1])
    else:
        legacy = LEGACY_WEIGHTS.get(name.rsplit(".", 1)[-1])
    return f'"{legacy}"' if legacy else None


def torchvision_pretrained(ctx: FileContext) -> Iterator[Hit]:
    if ctx.target_torch < TORCHVISION_0_13:
        return
    for call in ctx.calls:
        name = _builder(ctx, call)
        if not name or has_unpacking(call):
            continue
        found = list(_legacy_arguments(call, name))
        if not found:
            continue
        # the fixer sees the name as written: `ssd` for an aliased import is unknown there
        local = "torchvision.models." + dotted(call.func).rsplit(".", 1)[-1]
        fixable = not name.startswith(QUANTIZED) and all(
            _literal_weights(local, o, v) for o, v in found
        )
        yield call, _pretrained_message([old for old, _ in found]), ("" if fixable else NO_FIX)


def _pretrained_message(olds: list[str]) -> str:
    verb = "is" if len(olds) == 1 else "are"
    new = ", ".join(f"`{LEGACY_KEYWORDS[old]}=`" for old in olds)
    return (
        f"{', '.join(f'`{old}`' for old in olds)} {verb} deprecated since torchvision 0.13 "
        f'(it may be removed); pass {new} (an enum member, a name such as "IMAGENET1K_V1", '
        "or None)"
    )


def _literal_weights(name: str, old: str, value: ast.AST) -> bool:
    literal = isinstance(value, ast.Constant) and isinstance(value.value, bool)
    return literal and new_weights(name, old, value.value) is not None  # type: ignore[attr-defined]


def _rewrite_api(node: Any) -> Any:
    """PGN702/PGN703's fix: a `from` import of such names, a call whose arguments change, or
    a reference renamed."""
    module = rewrites()
    cst = module.cst
    if isinstance(node, cst.ImportFrom):
        return module.rewrite_import_from(node, import_replacements)
    if isinstance(node, cst.Call):
        found = api_spelt(module.code(node.func))
        fix = found[1].fix if found else None
        return fix.rewrite(node, found[0]) if found and fix and fix.rewrite else None
    new = replacement_for(module.code(node))
    return module.expression(new) if new else None


def _rewrite_pretrained(call: Any) -> Any:
    return rewrites().rewrite_pretrained(call, LEGACY_KEYWORDS, new_weights)


RULES: tuple[Rule, ...] = (
    Rule(
        "PGN701",
        "removed-api",
        Severity.ERROR,
        "A torch API that the target torch version no longer has (AttributeError at run time).",
        removed_api,
    ),
    Rule(
        "PGN702",
        "deprecated-api",
        Severity.WARNING,
        "A torch API deprecated in the target torch version.",
        deprecated_api,
        fix=RuleFix("Use the replacement", _rewrite_api),
    ),
    Rule(
        "PGN703",
        "non-public-api",
        Severity.WARNING,
        "A private torch name (`_utils`, `_private`) that has a public twin.",
        non_public_api,
        fix=RuleFix("Use the replacement", _rewrite_api),
    ),
    Rule(
        "PGN704",
        "torchvision-pretrained",
        Severity.WARNING,
        "`pretrained=` of a torchvision model builder, deprecated since torchvision 0.13.",
        torchvision_pretrained,
        fix=RuleFix("Pass `weights=` instead of `pretrained=`", _rewrite_pretrained),
    ),
)
