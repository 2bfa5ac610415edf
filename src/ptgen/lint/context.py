"""One parsed file and the questions rules ask about it (parents, scopes, names).

Everything is computed in a single walk so that each rule only filters lists.
"""

from __future__ import annotations

import ast
import functools
import operator
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

Scope = ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
FUNCTION_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
LOOP_TYPES = (ast.For, ast.AsyncFor, ast.While)
LINE_COL = operator.attrgetter("lineno", "col_offset")  # `position` of a node that has one
PARSER_LINE_RE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")  # ast's _splitlines_no_ff


@dataclass
class FileContext:
    path: Path
    source: str
    tree: ast.Module
    target_torch: tuple[int, int]
    lines: list[str] = field(default_factory=list)
    parents: dict[ast.AST, ast.AST] = field(default_factory=dict)
    scope_of: dict[ast.AST, Scope] = field(default_factory=dict)
    calls: list[ast.Call] = field(default_factory=list)
    nodes_by_type: dict[type, list[ast.AST]] = field(default_factory=dict)
    cache: dict[str, object] = field(default_factory=dict)  # per-file facts rules share
    qualified_names: dict[ast.AST, str] = field(default_factory=dict)  # dataflow.qualified's

    @classmethod
    def build(
        cls, path: Path, source: str, tree: ast.Module, target: tuple[int, int]
    ) -> FileContext:
        ctx = cls(path, source, tree, target, source.splitlines())
        ctx._index()
        return ctx

    def _index(self) -> None:
        """One walk: every node's parent and scope, and the nodes of each type in file order.

        `ast.iter_child_nodes` inlined (the same children in the same order, so ties in
        position keep their order): this walk visits every node of the file, and the
        generator per node was most of its cost.
        """
        node_type, function_types, parents, scope_of = ast.AST, FUNCTION_TYPES, {}, {}
        by_type: dict[type, list[ast.AST]] = {}
        stack: list[tuple[ast.AST, Scope]] = [(self.tree, self.tree)]
        pop, push = stack.pop, stack.append
        while stack:
            node, scope = pop()
            found = by_type.get(type(node))
            if found is None:
                by_type[type(node)] = [node]
            else:
                found.append(node)
            inner = node if isinstance(node, function_types) else scope
            for name in node._fields:
                value = getattr(node, name, None)
                if isinstance(value, node_type):
                    parents[value] = node
                    scope_of[value] = inner
                    push((value, inner))
                elif isinstance(value, list):
                    for child in value:
                        if isinstance(child, node_type):
                            parents[child] = node
                            scope_of[child] = inner
                            push((child, inner))
        for kind, found in by_type.items():
            located = "lineno" in kind._attributes and "col_offset" in kind._attributes
            found.sort(key=LINE_COL if located else position)
        self.parents, self.scope_of, self.nodes_by_type = parents, scope_of, by_type
        self.calls = by_type.get(ast.Call, [])  # type: ignore[assignment]

    def of_type(self, *types: type) -> list[ast.AST]:
        if len(types) == 1:
            return self.nodes_by_type.get(types[0], [])
        key = f"of_type:{','.join(t.__name__ for t in types)}"
        if key not in self.cache:  # several rules ask for the same mix: sort it once
            found = [n for t in types for n in self.nodes_by_type.get(t, [])]
            self.cache[key] = sorted(found, key=position)
        return self.cache[key]  # type: ignore[return-value]

    def ancestors(self, node: ast.AST) -> Iterator[ast.AST]:
        while node in self.parents:
            node = self.parents[node]
            yield node

    def scope(self, node: ast.AST) -> Scope:
        return self.scope_of.get(node, self.tree)

    def in_scope(self, scope: Scope, *types: type) -> list[ast.AST]:
        """Nodes of the given types directly in `scope` (not inside nested functions)."""
        return [n for n in self.of_type(*types) if self.scope(n) is scope]

    def segment(self, node: ast.AST) -> str:
        """`ast.get_source_segment(self.source, node) or ""`, without splitting the whole
        source again on every call (the standard function does; rules call this per node)."""
        try:
            first, last = node.lineno - 1, node.end_lineno - 1  # type: ignore[attr-defined,operator]
            start, end = node.col_offset, node.end_col_offset  # type: ignore[attr-defined]
        except (AttributeError, TypeError):  # no position (or no end position): no segment
            return ""
        if end is None:
            return ""
        lines = self._parser_lines
        if first == last:
            return lines[first].encode()[start:end].decode()
        head = lines[first].encode()[start:].decode()
        tail = lines[last].encode()[:end].decode()
        return "".join([head, *lines[first + 1 : last], tail])

    @functools.cached_property
    def _parser_lines(self) -> list[str]:
        """The source's lines as the parser counts them (ends kept; a form feed ends none)."""
        return PARSER_LINE_RE.findall(self.source)

    def span(self, node: ast.AST) -> tuple[int, int, int, int]:
        """1-based (line, col, end_line, end_col) in characters (ast counts UTF-8 bytes)."""
        line, end_line = node.lineno, node.end_lineno or node.lineno  # type: ignore[attr-defined]
        col = self._chars(line, node.col_offset)  # type: ignore[attr-defined]
        end_col = self._chars(end_line, node.end_col_offset or 0)  # type: ignore[attr-defined]
        return line, col + 1, end_line, end_col + 1

    def _chars(self, line: int, byte_col: int) -> int:
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        if text.isascii():
            return byte_col
        return len(text.encode("utf-8")[:byte_col].decode("utf-8", "replace"))

    @property
    def is_test_file(self) -> bool:
        name = self.path.name
        return name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"


def position(node: ast.AST) -> tuple[int, int]:
    return (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))


def dotted(node: ast.AST) -> str:
    """`torch.nn.functional.relu` for a Name/Attribute chain; "" for anything else."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return ""
    parts.append(node.id)
    return ".".join(reversed(parts))


def call_name(call: ast.Call) -> str:
    """The last identifier of the called expression: `step` for `opt.step()`."""
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def kwarg(call: ast.Call, name: str) -> ast.keyword | None:
    return next((k for k in call.keywords if k.arg == name), None)


def has_unpacking(call: ast.Call) -> bool:
    """`f(*args)` or `f(**options)`: arguments we cannot see, so rules stay quiet."""
    return any(k.arg is None for k in call.keywords) or any(
        isinstance(a, ast.Starred) for a in call.args
    )


def is_const(node: ast.AST | None, value: object) -> bool:
    """A literal equal to `value` (True is not 1 here)."""
    if not isinstance(node, ast.Constant):
        return False
    if isinstance(value, bool) or value is None or isinstance(node.value, bool):
        return node.value is value
    return node.value == value


def receiver(call: ast.Call) -> ast.AST | None:
    """`model` for `model.to(device)`; None for a plain function call."""
    return call.func.value if isinstance(call.func, ast.Attribute) else None
