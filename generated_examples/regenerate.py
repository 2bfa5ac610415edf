"""Regenerate the committed examples: `python generated_examples/regenerate.py`.

Each example is exactly what `ptgen new project` writes for one canonical option set
(without the smoke run and without `.git`). tests/test_examples.py fails when these
differ from what ptgen produces now, so run this after changing a template.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from ptgen.features import features
from ptgen.project import ProjectOptions, new_project

HERE = Path(__file__).resolve().parent

CANONICAL: dict[str, ProjectOptions] = {
    "image-classifier": ProjectOptions(name="image-classifier"),
    "sequence-classifier": ProjectOptions(
        name="sequence-classifier", task="sequence-classification", model="transformer"
    ),
    "text-fixed-length": ProjectOptions(
        name="text-fixed-length",
        task="sequence-classification",
        dataset="text",
        variable_length=False,
    ),
    "tabular-regressor": ProjectOptions(
        name="tabular-regressor", task="tabular-regression", model="mlp", dataset="csv"
    ),
    "multilabel-tagger": ProjectOptions(
        name="multilabel-tagger", task="multilabel-classification", dataset="image-folder"
    ),
    "language-model": ProjectOptions(
        name="language-model", task="language-modeling", model="gpt", dataset="text-corpus"
    ),
    "segmenter": ProjectOptions(
        name="segmenter", task="segmentation", dataset="image-masks", features=("export",)
    ),
    "everything-on": ProjectOptions(
        name="everything-on",
        model="resnet",
        dataset="image-folder",
        amp=True,
        compile=True,
        grad_checkpointing=True,
        description="Every option switched on",
        features=tuple(name for name, spec in features().items() if not spec.kinds_only),
    ),
}


def render_example(name: str, destination: Path) -> Path:
    """Render one canonical example into destination/NAME (which must not exist)."""
    return new_project(CANONICAL[name], destination, run_smoke=False, init_git=False).path


def main() -> int:
    for name in CANONICAL:
        with tempfile.TemporaryDirectory() as scratch:
            fresh = render_example(name, Path(scratch))
            target = HERE / name
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(fresh, target)
        print(f"regenerated generated_examples/{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
