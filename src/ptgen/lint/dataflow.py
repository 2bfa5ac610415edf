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
    """`torch.nn.functional.softmax` for `F.softmax` after `import torch.nn.functional as F`."""
    name = dotted(node)
    if not name:
        return ""
    head, _, rest = name.partition(".")
    full = aliases(ctx).get(head, head)
    return f"{full}.{rest}" if rest else full


def last_binding(ctx: FileContext, name: str, before: ast.AST) -> ast.AST | None:
    """The value last assigned to the plain name `name` in `before`'s scope, before it."""
    scope, where = ctx.scope(before), position(before)
    value = None
    for node in ctx.of_type(ast.Assign, ast.AnnAssign):
        if position(node) >= where:
            break
        if ctx.scope(node) is not scope:
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]  # type: ignore[attr-defined]
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            value = node.value  # type: ignore[attr-defined]
    return value


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
