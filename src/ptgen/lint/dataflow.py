"""Where a value came from, within one function: the narrow data flow rules need.

Without type inference the linter follows a name back to its last plain assignment in
the same scope (`x = F.softmax(y)` ... `loss(x, t)`), and no further.
"""

from __future__ import annotations

import ast

from ptgen.lint.context import FileContext, dotted, position

IMPORTS_KEY = "aliases"


def aliases(ctx: FileContext) -> dict[str, str]:
    """Local name -> full dotted name from the file's imports (`F` -> torch.nn.functional)."""
    found = ctx.cache.get(IMPORTS_KEY)
    if found is None:
        found = {}
        for node in ctx.of_type(ast.Import):
            for alias in node.names:  # type: ignore[attr-defined]
                found[alias.asname or alias.name.split(".")[0]] = (
                    alias.name if alias.asname else alias.name.split(".")[0]
                )
        for node in ctx.of_type(ast.ImportFrom):
            module = node.module or ""  # type: ignore[attr-defined]
            for alias in node.names:  # type: ignore[attr-defined]
                found[alias.asname or alias.name] = f"{module}.{alias.name}"
        ctx.cache[IMPORTS_KEY] = found
    return found  # type: ignore[return-value]


def qualified(ctx: FileContext, node: ast.AST) -> str:
    """`torch.nn.functional.softmax` for `F.softmax` after `import torch.nn.functional as F`.

    Remembered per node: many rules ask it of every call in the file."""
    found = ctx.qualified_names.get(node)
    if found is None:
        name = dotted(node)
        head, _, rest = name.partition(".")
        full = aliases(ctx).get(head, head)
        found = "" if not name else f"{full}.{rest}" if rest else full
        ctx.qualified_names[node] = found
    return found


BINDINGS = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor, ast.With)


def binding_statement(ctx: FileContext, name: str, before: ast.AST) -> ast.AST | None:
    """The last statement in `before`'s scope, ending before it, that binds `name`."""
    scope, where, found = ctx.scope(before), position(before), None
    for node in ctx.of_type(*BINDINGS):
        if position(node) >= where:
            break
        ends_before = (node.end_lineno, node.end_col_offset) <= where  # type: ignore[attr-defined]
        if ends_before and ctx.scope(node) is scope and name in _bound(node):
            found = node
    return found


def last_binding(ctx: FileContext, name: str, before: ast.AST) -> ast.AST | None:
    """The value last assigned to `name` before `before` (None: unknown or not assigned)."""
    statement = binding_statement(ctx, name, before)
    if isinstance(statement, (ast.Assign, ast.AnnAssign)):
        return statement.value
    return None


def _bound(node: ast.AST) -> set[str]:
    if isinstance(node, ast.With):
        targets = [i.optional_vars for i in node.items if i.optional_vars is not None]
    else:
        targets = getattr(node, "targets", None) or [node.target]  # type: ignore[attr-defined]
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}


def producer(ctx: FileContext, expr: ast.AST) -> ast.AST | None:
    """The call that made `expr`: itself, or the last value assigned to its name."""
    if isinstance(expr, ast.Name):
        return last_binding(ctx, expr.id, expr)
    return expr


def produced_by(ctx: FileContext, expr: ast.AST | None, names: tuple[str, ...]) -> str:
    """The op name in `names` that produced `expr` (`softmax` for `x.softmax(1)`), or ""."""
    made = producer(ctx, expr) if expr is not None else None
    if not isinstance(made, ast.Call):
        return ""
    last = dotted(made.func).split(".")[-1]
    return last if last in names else ""
