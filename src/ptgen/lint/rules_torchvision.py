"""PGN704, PGN602, PGN603: torchvision's old `pretrained=` API, module imports, torch.library.

torchvision 0.13 (with torch 1.12) replaced `pretrained=True` by `weights=`; the weights
can be named by string (`weights="IMAGENET1K_V1"`), which is what the fix writes, so
that no import is needed. `pretrained=True` meant one specific set of weights per
family, listed below; a model outside the list gets no fix for `True`.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ptgen.lint.context import FileContext, call_name, dotted, has_unpacking
from ptgen.lint.dataflow import qualified
from ptgen.lint.model import Severity
from ptgen.lint.registry import NO_FIX, Hit, rule

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
SUBMODULES = {"models", "datasets", "transforms", "ops", "io", "utils"}


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


@rule(
    "PGN704",
    "torchvision-pretrained",
    Severity.WARNING,
    "`pretrained=` of a torchvision model builder, deprecated since torchvision 0.13.",
    fix="weights",
)
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


@rule(
    "PGN602",
    "torchvision-submodule-import",
    Severity.INFO,
    "`import torchvision.models as models`; `from torchvision import models` says the same.",
    fix="from-import",
)
def torchvision_submodule_import(ctx: FileContext) -> Iterator[Hit]:
    for node in ctx.of_type(ast.Import):
        names = node.names  # type: ignore[attr-defined]
        for alias in names:
            package, _, sub = alias.name.partition(".")
            if package == "torchvision" and sub in SUBMODULES and alias.asname == sub:
                yield node, (
                    f"`import torchvision.{sub} as {sub}` is `from torchvision import {sub}`"
                ), ("" if len(names) == 1 else NO_FIX)


@rule(
    "PGN603",
    "unscoped-torch-library",
    Severity.INFO,
    "`torch.library.Library(...)` in a test: registrations outlive it (PyTorch's own tests).",
)
def unscoped_torch_library(ctx: FileContext) -> Iterator[Hit]:
    for call in ctx.calls:
        if call_name(call) == "Library" and qualified(ctx, call.func) == "torch.library.Library":
            yield call, (
                "`torch.library.Library` keeps its registrations for the whole process; "
                "in tests use `torch.library._scoped_library` (a context manager)"
            )
