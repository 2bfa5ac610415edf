"""Copier migration, run before every update inside the project: keep what it has.

Template 0.5.0 made parts that every earlier project held into features (their code is
rendered only when the `features` answer lists them). A project that holds such a part
but does not list its feature gets the feature added to its answers here, before Copier
renders the new template, so the update keeps the part and the project's edits to it.
A project that lists its features already, or never had the part, is left as it is.
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml  # Copier's own dependency: this runs with Copier's interpreter

ANSWERS = Path(".copier-answers.yml")


def held(package: Path) -> dict[str, bool]:
    """Each feature split off the core in 0.5.0: whether the project holds its code."""

    def text(name: str) -> str:
        path = package / name
        return path.read_text(encoding="utf-8") if path.is_file() else ""

    return {
        "predict": (package / "predict.py").is_file(),
        "inputs": (package / "data" / "_inputs.py").is_file(),
        "optim": "nesterov" in text("config.py"),
        "imbalance": "balanced_sampler" in text("config.py"),
        "profiler": "data_wait" in text("monitor.py"),  # the share of time waiting for data
        "plot": "confusion_matrix_csv" in text("evaluate.py"),  # evaluate's CSV file
    }


def main() -> int:
    if not ANSWERS.is_file():
        return 0
    answers = yaml.safe_load(ANSWERS.read_text(encoding="utf-8")) or {}
    features = answers.get("features")
    package = Path("src") / str(answers.get("package_name", ""))
    if not isinstance(features, list) or not package.is_dir():
        return 0  # before template 0.3.0: copier.yml's default lists every feature
    has = held(package)
    added = [name for name, present in has.items() if present and name not in features]
    if "inputs" in added and "predict" in features:  # predict alone renders data/_inputs.py
        added.remove("inputs")
    if added:
        answers["features"] = sorted({*features, *added})
        ANSWERS.write_text(yaml.safe_dump(answers, sort_keys=False), encoding="utf-8")
        print(f"keeping what this project holds: features + {', '.join(added)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
