"""The project template's own facts, read the way Copier reads them: YAML.

copier.yml registers the features (`feature_names`); each `_features/NAME/feature.yml` and
`_tasks/NAME/task.yml` describes one. Copier's templates read the same files (through
`from_yaml`), so every fact about a feature or a task is stated once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ptgen.errors import PtgenError
from ptgen.paths import templates_dir


def read_yaml(path: Path) -> dict[str, Any]:
    """A mapping from a YAML file of the template; a broken one names the file."""
    import yaml  # Copier's own dependency; not imported at start-up

    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=safe_loader())
    except (OSError, yaml.YAMLError) as exc:
        raise PtgenError(f"cannot read the template's {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise PtgenError(f"the template's {path} is not a mapping")
    return data


def safe_loader() -> type:
    """PyYAML's safe loader, in C where PyYAML was built with libyaml (several times faster:
    a project's generation reads hundreds of the template's small files)."""
    import yaml

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def template_question(name: str, missing: Any = ()) -> Any:
    """The default of question `name` in templates/project/copier.yml (`missing` for a
    template without it, e.g. a test's tiny one)."""
    question = read_yaml(templates_dir() / "project" / "copier.yml").get(name)
    return question["default"] if isinstance(question, dict) else missing
