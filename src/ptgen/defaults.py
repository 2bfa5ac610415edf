"""configs/default.toml of a generated project, written without importing torch.

The project's options are dataclasses: `[train]` and the bases in its `config.py`, `[data]`
and `[model]` in the `Options` class of each default component. The project writes the
file itself (`python -m PKG defaults --write`), but that imports the components and so
torch (seconds). ptgen instead loads the project's `config.py`, which imports neither,
rebuilds each component's `Options` from its source (fields declared with `option(...)`
and literal defaults, following base classes through the component's relative imports),
and calls the project's own `defaults_toml`: the same writer, the same text.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from ptgen.errors import PtgenError

DEFAULTS_FILE = "configs/default.toml"
_PACKAGES = {"data": "data", "model": "models"}


class DefaultsError(PtgenError):
    """A component's options cannot be read statically (e.g. a computed default)."""


def defaults_toml(project_dir: Path, package: str) -> str:
    """The text of configs/default.toml for the project in `project_dir`."""
    source = project_dir / "src" / package
    config = _load_module(source / "config.py", f"_ptgen_config_{package}")
    sections = {}
    for section, folder in _PACKAGES.items():
        base = getattr(config, "DataConfig" if section == "data" else "ModelConfig")
        name = base().name
        options = _options_class(source / folder / f"{name}.py", "Options", config)
        sections[section] = options()
    return config.defaults_toml(config.Config(**sections), package)


def _load_module(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise DefaultsError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while building a class
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[name]
    return module


def _options_class(path: Path, class_name: str, config: ModuleType) -> type:
    """The dataclass `class_name` of the module at `path`, rebuilt from its source."""
    if not path.is_file():
        raise DefaultsError(f"{path} does not exist")
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    node = next(
        (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name), None
    )
    if node is None:
        raise DefaultsError(f"{path} has no class {class_name}")
    bases = [_resolve_base(path, tree, b, config) for b in node.bases]
    fields = [_field(path, item, config) for item in node.body if isinstance(item, ast.AnnAssign)]
    return dataclasses.make_dataclass(class_name, fields, bases=tuple(bases))


def _resolve_base(path: Path, tree: ast.Module, base: ast.expr, config: ModuleType) -> type:
    """A base class by name: from the project's config, or a sibling module's class."""
    name = ast.unparse(base)
    if hasattr(config, name) and isinstance(getattr(config, name), type):
        return getattr(config, name)
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            if any((alias.asname or alias.name) == name for alias in node.names):
                original = next(a.name for a in node.names if (a.asname or a.name) == name)
                sibling = path.parent / f"{node.module}.py"
                return _options_class(sibling, original, config)
    if any(isinstance(n, ast.ClassDef) and n.name == name for n in tree.body):
        return _options_class(path, name, config)
    raise DefaultsError(f"{path}: cannot find the base class {name}")


def _field(path: Path, item: ast.AnnAssign, config: ModuleType) -> tuple[str, str, Any]:
    """(name, type, dataclass field) of one annotated class attribute."""
    if not isinstance(item.target, ast.Name) or item.value is None:
        raise DefaultsError(f"{path}:{item.lineno}: an option needs a name and a default")
    try:
        if isinstance(item.value, ast.Call) and ast.unparse(item.value.func) == "option":
            args = [ast.literal_eval(a) for a in item.value.args]
            kwargs = {k.arg: ast.literal_eval(k.value) for k in item.value.keywords}
            value = config.option(*args, **kwargs)
        else:
            value = ast.literal_eval(item.value)
    except (ValueError, TypeError, SyntaxError) as exc:
        raise DefaultsError(
            f"{path}:{item.lineno}: the default of {item.target.id} is not a literal ({exc})"
        ) from None
    return item.target.id, ast.unparse(item.annotation), value


def write_defaults(project_dir: Path, package: str) -> Path:
    """Write configs/default.toml into the project (used right after rendering it)."""
    target = project_dir / DEFAULTS_FILE
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(defaults_toml(project_dir, package), encoding="utf-8")
    return target
