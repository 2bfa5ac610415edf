"""The LibCST rewrites that rules' fixes call (see RuleFix): each takes the reported node
and returns its replacement, or None where the node has a form the rewrite does not
understand (the rule decides beforehand whether a rewrite is safe for the finding).

Only fixing imports this module (and LibCST); rules reach it through `ptgen.lint.fixers`.
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

NO_SPACE = cst.SimpleWhitespace("")
BINARY_FOR = {
    cst.AddAssign: cst.Add,
    cst.SubtractAssign: cst.Subtract,
    cst.MultiplyAssign: cst.Multiply,
    cst.DivideAssign: cst.Divide,
}
PRECEDENCE = {cst.Add: 1, cst.Subtract: 1, cst.Multiply: 2, cst.Divide: 2, cst.FloorDivide: 2}
PRECEDENCE.update({cst.Modulo: 2, cst.MatrixMultiply: 2, cst.Power: 3})
LOOSE = (
    cst.BooleanOperation,
    cst.Comparison,
    cst.IfExp,
    cst.Lambda,
    cst.NamedExpr,
    cst.UnaryOperation,
)


def _name(text: str) -> cst.BaseExpression:
    return cst.parse_expression(text)


def _keyword(arg: cst.Arg, name: str) -> bool:
    return arg.keyword is not None and arg.keyword.value == name


def _bool(node: cst.BaseExpression) -> bool | None:
    if isinstance(node, cst.Name) and node.value in ("True", "False"):
        return node.value == "True"
    return None


def _without(args: list[cst.Arg], index: int) -> list[cst.Arg]:
    """`args` less one, the new last argument dropping a trailing comma it took over."""
    kept = args[:index] + args[index + 1 :]
    if kept and index == len(args) - 1:
        kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return kept


def _option(args: list[cst.Arg], position: int, name: str) -> tuple[int, cst.Arg] | None:
    """The argument at `position` (positional) or named `name`, with its index."""
    for i, arg in enumerate(args):
        if _keyword(arg, name) or (arg.keyword is None and i == position):
            return i, arg
    return None


def rewrite_qr(call: cst.Call, old: str = "") -> cst.BaseExpression | None:
    """`torch.qr(A, some=False)` -> `torch.linalg.qr(A, mode="complete")`."""
    args = list(call.args)
    found = _option(args, 1, "some")
    if found is not None:
        index, arg = found
        some = _bool(arg.value)
        if some is None:
            return None
        if some:
            args = _without(args, index)
        else:
            mode = cst.Arg(cst.SimpleString('"complete"'), keyword=cst.Name("mode"))
            args[index] = mode.with_changes(equal=_equal(), comma=arg.comma)
    return call.with_changes(func=_name("torch.linalg.qr"), args=args)


def rewrite_cholesky(call: cst.Call, old: str = "") -> cst.BaseExpression | None:
    """`torch.cholesky(A, upper=True)` -> `torch.linalg.cholesky(A).mH`."""
    args = list(call.args)
    found = _option(args, 1, "upper")
    upper = False
    if found is not None:
        upper_value = _bool(found[1].value)
        if upper_value is None:
            return None
        upper, args = upper_value, _without(args, found[0])
    new = call.with_changes(func=_name("torch.linalg.cholesky"), args=args)
    return cst.Attribute(value=new, attr=cst.Name("mH")) if upper else new


def rewrite_chain_matmul(call: cst.Call, old: str = "") -> cst.BaseExpression | None:
    """`torch.chain_matmul(a, b, c)` -> `torch.linalg.multi_dot([a, b, c])`."""
    matrices = [a for a in call.args if a.keyword is None]
    others = [a for a in call.args if a.keyword is not None]
    if len(matrices) < 2:
        return None
    elements = [cst.Element(a.value, comma=a.comma) for a in matrices]
    last = elements[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    listed = cst.Arg(
        cst.List([*elements[:-1], last]),
        comma=matrices[-1].comma if others else cst.MaybeSentinel.DEFAULT,
    )
    return call.with_changes(func=_name("torch.linalg.multi_dot"), args=[listed, *others])


def rewrite_range(call: cst.Call, old: str = "") -> cst.BaseExpression | None:
    """`torch.range(a, b, s)` -> `torch.arange(a, b + s, s)`: arange excludes its end."""
    args = list(call.args)
    step_found = _option(args, 2, "step")
    step = _integer(step_found[1].value) if step_found else 1
    end_found = _option(args, 1, "end")
    if end_found is None or step is None:
        return None
    index, arg = end_found
    args[index] = arg.with_changes(value=_plus(arg.value, step))
    return call.with_changes(func=_name("torch.arange"), args=args)


def _integer(node: cst.BaseExpression) -> int | None:
    if isinstance(node, cst.Integer):
        return int(node.value)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = _integer(node.expression)  # type: ignore[arg-type]
        return None if inner is None else -inner
    return None


def _plus(end: cst.BaseExpression, step: int) -> cst.BaseExpression:
    """`end + step` written simply: a literal is computed, `n - 1` + 1 stays readable."""
    literal = _integer(end)
    if literal is not None:
        return cst.parse_expression(str(literal + step))
    if _cancels(end, step):  # `n - 1` + 1 is `n`
        return end.left  # type: ignore[attr-defined]
    operator = cst.Add() if step > 0 else cst.Subtract()
    atom = isinstance(end, (cst.Name, cst.Attribute, cst.Call, cst.Subscript))
    additive = isinstance(end, cst.BinaryOperation) and isinstance(
        end.operator, (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.FloorDivide)
    )
    if not (atom or additive or end.lpar):
        end = end.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return cst.BinaryOperation(end, operator, cst.Integer(str(abs(step))))


def _cancels(end: cst.BaseExpression, step: int) -> bool:
    if not isinstance(end, cst.BinaryOperation) or end.lpar:
        return False
    right = _integer(end.right)
    minus = isinstance(end.operator, cst.Subtract) and right == step
    return minus or (isinstance(end.operator, cst.Add) and right == -step)


def rewrite_amp(call: cst.Call, old: str) -> cst.BaseExpression | None:
    """`torch.cuda.amp.autocast(dtype=d)` -> `torch.amp.autocast("cuda", dtype=d)`."""
    if any(a.keyword is None for a in call.args):
        return None
    device = "cpu" if ".cpu." in old else "cuda"
    new_name = "torch.amp." + old.rsplit(".", 1)[1]
    first = cst.Arg(cst.SimpleString(f'"{device}"'))
    if call.args:
        first = first.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    return call.with_changes(func=_name(new_name), args=[first, *call.args])


def rewrite_pretrained(
    call: cst.Call,
    keywords: dict[str, str],
    new_weights: Callable[[str, str, object], str | None],
) -> cst.Call | None:
    """`resnet50(pretrained=True)` -> `resnet50(weights="IMAGENET1K_V1")`, and
    `pretrained_backbone=` -> `weights_backbone=` (the legacy weights of the builder):
    `keywords` maps the old keywords to the new, `new_weights` names the weights."""
    name = cst.Module([]).code_for_node(call.func)
    args = list(call.args)
    for i, arg in enumerate(args):
        old = arg.keyword.value if arg.keyword else ("pretrained" if i == 0 else "")
        value = _bool(arg.value)
        if old not in keywords or value is None:
            continue
        weights = new_weights("torchvision.models." + name.rsplit(".", 1)[-1], old, value)
        if weights is None:
            return None
        keyword = cst.Name(keywords[old])
        args[i] = arg.with_changes(keyword=keyword, value=_name(weights), equal=_equal())
    return call.with_changes(args=args)


def rewrite_import_from(
    node: cst.ImportFrom,
    import_replacements: Callable[[str, list[str]], tuple[str, list[str]] | None],
) -> cst.ImportFrom | None:
    """`from torch import ger` -> `from torch import outer as ger`: the public or new name
    (`import_replacements` gives them), bound to the old local name, so the rest of the file
    is unchanged."""
    module = cst.Module([]).code_for_node(node.module) if node.module else ""
    aliases = list(node.names)  # type: ignore[arg-type]
    new = import_replacements(module, [cst.Module([]).code_for_node(a.name) for a in aliases])
    if new is None or node.relative:
        return None
    new_module, names = new
    rewritten = []
    for alias, name in zip(aliases, names, strict=True):
        old = alias.asname.name.value if alias.asname else alias.name.value  # type: ignore[union-attr]
        local = alias.asname if alias.asname else cst.AsName(cst.Name(old))
        rewritten.append(
            alias.with_changes(name=cst.Name(name), asname=None if old == name else local)
        )
    return node.with_changes(module=_name(new_module), names=rewritten)


def _equal() -> cst.AssignEqual:
    return cst.AssignEqual(NO_SPACE, NO_SPACE)


def drop_kwarg(call: cst.Call, name: str) -> cst.Call | None:
    """Remove one keyword argument, keeping the commas and line breaks of the rest."""
    args = list(call.args)
    index = next((i for i, a in enumerate(args) if a.keyword and a.keyword.value == name), None)
    if index is None:
        return None
    removed = args.pop(index)
    if index == len(args) and args:  # it was the last: the one before takes its comma
        args[-1] = args[-1].with_changes(comma=_closing_comma(args[-1].comma, removed.comma))
    return call.with_changes(args=args)


def _closing_comma(kept: object, removed: object) -> object:
    """The comma for the new last argument: its own comment, the removed one's line end."""
    if not isinstance(removed, cst.Comma):
        return cst.MaybeSentinel.DEFAULT
    after = removed.whitespace_after
    if isinstance(kept, cst.Comma) and isinstance(after, cst.ParenthesizedWhitespace):
        own = kept.whitespace_after
        if isinstance(own, cst.ParenthesizedWhitespace):
            return kept.with_changes(whitespace_after=own.with_changes(last_line=after.last_line))
    return removed


def weights_only(call: cst.Call) -> cst.Call | None:
    args = list(call.args)
    for i, arg in enumerate(args):
        if arg.keyword and arg.keyword.value == "weights_only":
            args[i] = arg.with_changes(value=cst.Name("True"))
            return call.with_changes(args=args)
    return append_kwarg(call, "weights_only", cst.Name("True"))


def append_kwarg(call: cst.Call, name: str, value: cst.BaseExpression) -> cst.Call | None:
    if not call.args:
        return None
    args, last = list(call.args), call.args[-1]
    no_space = cst.SimpleWhitespace("")
    new = cst.Arg(
        value, keyword=cst.Name(name), comma=last.comma, equal=cst.AssignEqual(no_space, no_space)
    )
    multiline = isinstance(call.whitespace_before_args, cst.ParenthesizedWhitespace)
    spacing = call.whitespace_before_args if multiline else cst.SimpleWhitespace(" ")
    args[-1] = last.with_changes(comma=cst.Comma(whitespace_after=spacing))
    return call.with_changes(args=[*args, new])


def state_dict(call: cst.Call) -> cst.Call | None:
    if not call.args or call.args[0].keyword is not None:
        return None
    first = call.args[0]
    saved = cst.Call(func=cst.Attribute(value=first.value, attr=cst.Name("state_dict")))
    return call.with_changes(args=[first.with_changes(value=saved), *call.args[1:]])


def augassign(node: cst.AugAssign) -> cst.Assign | None:
    operator = BINARY_FOR.get(type(node.operator))
    if operator is None:
        return None
    right = node.value
    tight = (
        isinstance(right, cst.BinaryOperation)
        and PRECEDENCE.get(type(right.operator), 0) <= PRECEDENCE[operator]
    )
    if (tight or isinstance(right, LOOSE)) and not right.lpar:
        right = right.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    op = node.operator
    target = cst.AssignTarget(
        node.target,  # type: ignore[arg-type]
        whitespace_before_equal=op.whitespace_before,
        whitespace_after_equal=op.whitespace_after,
    )
    value = cst.BinaryOperation(left=node.target, operator=operator(), right=right)  # type: ignore[arg-type]
    return cst.Assign(targets=[target], value=value, semicolon=node.semicolon)


def use_reentrant(call: cst.Call) -> cst.Call | None:
    return append_kwarg(call, "use_reentrant", cst.Name("False"))


def rename_attr(node: cst.Attribute, new: str) -> cst.Attribute:
    return node.with_changes(attr=cst.Name(new))


def from_import(node: cst.Import) -> cst.ImportFrom | None:
    """`import torchvision.models as models` -> `from torchvision import models`."""
    (alias,) = node.names
    if not isinstance(alias.name, cst.Attribute):
        return None
    return cst.ImportFrom(
        module=alias.name.value,  # type: ignore[arg-type]
        names=[cst.ImportAlias(name=alias.name.attr)],
        semicolon=node.semicolon,
    )


def code(node: cst.CSTNode) -> str:
    """The source text of a node."""
    return cst.Module([]).code_for_node(node)


def expression(text: str) -> cst.BaseExpression:
    """`torch.outer` as an expression (a renamed reference)."""
    return cst.parse_expression(text)
