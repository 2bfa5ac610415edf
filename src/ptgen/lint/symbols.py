"""Where a file refers to a named torch API: attribute chains, imports, imported names.

Rules with a table of dotted names (deprecated, removed, non-public APIs) ask for every
reference to a table entry, outside version-compatibility fallbacks:
`torch.cuda.amp.autocast`, `F.upsample` (through the file's import aliases), each name
of `from torch import symeig as eig` (at the name, also in a multi-line import), and
each later use of such an imported name (`eig(A)`).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Container, Iterator

from ptgen.lint.context import FUNCTION_TYPES, FileContext
from ptgen.lint.dataflow import qualified

COMPAT_TEST_RE = re.compile(r"version|VERSION|_TORCH_|GREATER|LESS|hasattr|_AVAILABLE")
IMPORTED_KEY = "symbols:imported"
CHAINS_KEY = "symbols:chains"
USES_KEY = "symbols:uses"


def references(ctx: FileContext, table: Container[str]) -> Iterator[tuple[ast.AST, str]]:
    """(node, dotted name) for each reference to a name in `table`, in file order."""
    found = list(_attribute_references(ctx, table))
    found += _import_references(ctx, table)
    found += _imported_name_uses(ctx, table)
    found.sort(key=lambda item: (item[0].lineno, item[0].col_offset))  # type: ignore[attr-defined]
    yield from found


def _attribute_references(ctx: FileContext, table: Container[str]) -> Iterator[tuple[ast.AST, str]]:
    for node, name in _chains(ctx):
        if name in table and not compat_fallback(ctx, node):
            yield node, name


def _chains(ctx: FileContext) -> list[tuple[ast.AST, str]]:
    """Each whole attribute chain (`torch.cuda.amp.autocast`, not `torch.cuda`) and its
    qualified name, in file order; once per file for every table asked about."""
    found = ctx.cache.get(CHAINS_KEY)
    if found is None:
        parents = ctx.parents
        found = [
            (node, qualified(ctx, node))
            for node in ctx.of_type(ast.Attribute)
            if not isinstance(parents.get(node), ast.Attribute)
        ]
        ctx.cache[CHAINS_KEY] = found
    return found  # type: ignore[return-value]


def _import_references(ctx: FileContext, table: Container[str]) -> Iterator[tuple[ast.AST, str]]:
    for node in ctx.of_type(ast.ImportFrom):
        for alias in node.names:  # type: ignore[attr-defined]
            name = f"{node.module}.{alias.name}"  # type: ignore[attr-defined]
            if name in table and not compat_fallback(ctx, node):
                yield alias, name


def _imported_name_uses(ctx: FileContext, table: Container[str]) -> Iterator[tuple[ast.AST, str]]:
    """`eig(A)` after `from torch import symeig as eig`, when nothing else binds `eig`."""
    for node, name in _uses(ctx):
        if name in table:
            yield node, name


def _uses(ctx: FileContext) -> list[tuple[ast.AST, str]]:
    """Each read of a name that `imported_names` knows, with its dotted name; once per file."""
    found = ctx.cache.get(USES_KEY)
    if found is None:
        imported = imported_names(ctx)
        found = [
            (node, imported[node.id])  # type: ignore[attr-defined]
            for node in ctx.of_type(ast.Name)
            if node.id in imported and isinstance(node.ctx, ast.Load)  # type: ignore[attr-defined]
        ]
        ctx.cache[USES_KEY] = found
    return found  # type: ignore[return-value]


def imported_names(ctx: FileContext) -> dict[str, str]:
    """Local name -> dotted name, for names bound only by `from` imports (never assigned,
    defined or a parameter anywhere in the file) outside compatibility fallbacks."""
    found = ctx.cache.get(IMPORTED_KEY)
    if found is None:
        found, ambiguous = {}, _otherwise_bound(ctx)
        for node in ctx.of_type(ast.ImportFrom):
            for alias in node.names:  # type: ignore[attr-defined]
                local = alias.asname or alias.name
                full = f"{node.module}.{alias.name}"  # type: ignore[attr-defined]
                if compat_fallback(ctx, node) or found.get(local, full) != full:
                    ambiguous.add(local)
                found[local] = full
        found = {k: v for k, v in found.items() if k not in ambiguous}
        ctx.cache[IMPORTED_KEY] = found
    return found  # type: ignore[return-value]


def _otherwise_bound(ctx: FileContext) -> set[str]:
    bound = {n.id for n in ctx.of_type(ast.Name) if not isinstance(n.ctx, ast.Load)}  # type: ignore[attr-defined]
    bound |= {a.arg for a in ctx.of_type(ast.arg)}  # type: ignore[attr-defined]
    bound |= {f.name for f in ctx.of_type(*FUNCTION_TYPES[:2], ast.ClassDef)}  # type: ignore[attr-defined]
    bound |= {a.asname or a.name.split(".")[0] for i in ctx.of_type(ast.Import) for a in i.names}  # type: ignore[attr-defined]
    return bound


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
