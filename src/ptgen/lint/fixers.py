"""Builders of the fixes rules attach (RuleFix) for the common kinds of rewrite.

A rewrite reaches ptgen.lint.rewrites (and LibCST) only when it runs, so that linting
never imports LibCST.
"""

from __future__ import annotations

import ast
from types import ModuleType

from ptgen.lint.context import kwarg
from ptgen.lint.model import RuleFix


def rewrites() -> ModuleType:
    """ptgen.lint.rewrites, imported on first use."""
    from ptgen.lint import rewrites as module

    return module


def drop_kwarg(name: str, message: str, unsafe: bool = False) -> RuleFix:
    """Remove the keyword argument `name` from the reported call (where it has one)."""

    def offered(node: ast.AST) -> bool:
        return isinstance(node, ast.Call) and kwarg(node, name) is not None

    return RuleFix(message, lambda call: rewrites().drop_kwarg(call, name), unsafe, offered)


def rename_attr(new: str, message: str, unsafe: bool = False) -> RuleFix:
    """Rename the reported attribute (`x.require_grad` -> `x.requires_grad`)."""

    def offered(node: ast.AST) -> bool:
        return isinstance(node, ast.Attribute)

    return RuleFix(message, lambda node: rewrites().rename_attr(node, new), unsafe, offered)
