"""PGN6xx: style (opt-in: select PGN6): undocumented reshapes, torchvision submodule imports,
unscoped torch.library registrations in tests."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from ptgen.lint.context import (
    FileContext,
    call_name,
)
from ptgen.lint.dataflow import qualified
from ptgen.lint.fixers import rewrites
from ptgen.lint.model import NO_FIX, Hit, Rule, RuleFix, Severity
from ptgen.lint.patterns import (
    in_forward,
)

RESHAPES = {"view", "reshape", "flatten"}


SHAPE_COMMENT_RE = re.compile(r"#.*(->|[(\[][^)\]]*,[^)\]]*[)\]]|shape)", re.I)


def undocumented_reshape(ctx: FileContext) -> Iterator[Hit]:
    for call in ctx.calls:
        if call_name(call) not in RESHAPES or not in_forward(ctx, call, method=False):
            continue
        line = ctx.lines[call.lineno - 1] if call.lineno <= len(ctx.lines) else ""
        if not SHAPE_COMMENT_RE.search(line):
            yield (
                call,
                (
                    f"`{ast.unparse(call)[:40]}` reshapes without saying the shape; add a comment "
                    "such as `# (B, C*H*W)`"
                ),
            )


SUBMODULES = {"models", "datasets", "transforms", "ops", "io", "utils"}


def torchvision_submodule_import(ctx: FileContext) -> Iterator[Hit]:
    for node in ctx.of_type(ast.Import):
        names = node.names  # type: ignore[attr-defined]
        for alias in names:
            package, _, sub = alias.name.partition(".")
            if package == "torchvision" and sub in SUBMODULES and alias.asname == sub:
                yield (
                    node,
                    (f"`import torchvision.{sub} as {sub}` is `from torchvision import {sub}`"),
                    ("" if len(names) == 1 else NO_FIX),
                )


def unscoped_torch_library(ctx: FileContext) -> Iterator[Hit]:
    for call in ctx.calls:
        if call_name(call) == "Library" and qualified(ctx, call.func) == "torch.library.Library":
            yield (
                call,
                (
                    "`torch.library.Library` keeps its registrations for the whole process; "
                    "in tests use `torch.library._scoped_library` (a context manager)"
                ),
            )


RULES: tuple[Rule, ...] = (
    Rule(
        "PGN601",
        "undocumented-reshape",
        Severity.INFO,
        "A reshape in `forward` with no shape comment (opt-in: select PGN6).",
        undocumented_reshape,
    ),
    Rule(
        "PGN602",
        "torchvision-submodule-import",
        Severity.INFO,
        "`import torchvision.models as models`; `from torchvision import models` says the same.",
        torchvision_submodule_import,
        fix=RuleFix(
            "Write it as `from torchvision import ...`", lambda node: rewrites().from_import(node)
        ),
    ),
    Rule(
        "PGN603",
        "unscoped-torch-library",
        Severity.INFO,
        "`torch.library.Library(...)` in a test: registrations outlive it (PyTorch's own tests).",
        unscoped_torch_library,
    ),
)
