"""The one reader of a project's `.copier-answers.yml`, with one set of clear errors.

`ptgen add`, `ptgen smoke` and `ptgen update` all read it here; whatever is wrong with
the file (missing, not UTF-8, not YAML, not a mapping, a key missing or not a plain
value), the result is a NotAProject naming the file and what is wrong with it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ptgen.errors import NotAProject

ANSWERS_FILE = ".copier-answers.yml"
_RESTORE = "restore it from git (`git checkout -- .copier-answers.yml`) or regenerate"


def read_answers(project_dir: Path, required: tuple[str, ...] = ()) -> dict[str, Any]:
    """The answers as YAML gives them; each `required` key holds a non-empty plain value."""
    answers = _load(project_dir)
    missing = [key for key in required if answers.get(key) in (None, "")]
    if missing:
        raise NotAProject(
            f"{project_dir / ANSWERS_FILE} has no {', '.join(missing)}: it was not written "
            f"by ptgen, or was edited; {_RESTORE}"
        )
    nested = [key for key in required if isinstance(answers[key], dict | list)]
    if nested:
        raise NotAProject(
            f"{project_dir / ANSWERS_FILE}: {', '.join(nested)} must be plain text; {_RESTORE}"
        )
    return answers


def _load(project_dir: Path) -> dict[str, Any]:
    import yaml  # PyYAML comes with Copier; imported here to keep start-up fast

    path = project_dir / ANSWERS_FILE
    if not path.is_file():
        raise NotAProject(
            f"{project_dir} is not a ptgen project (it has no {ANSWERS_FILE}): "
            "run inside one or pass its directory"
        )
    try:
        answers = yaml.safe_load(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError:
        raise NotAProject(f"{path} is not UTF-8 text; {_RESTORE}") from None
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" (line {where.line + 1})" if where is not None else ""
        raise NotAProject(f"{path} is not valid YAML{line}; {_RESTORE}") from None
    if answers is None:
        return {}
    if not isinstance(answers, dict):
        kind = type(answers).__name__
        raise NotAProject(f"{path} is not a mapping of answers (a YAML {kind}); {_RESTORE}")
    return {str(key): value for key, value in answers.items()}
