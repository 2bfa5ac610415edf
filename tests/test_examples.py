"""generated_examples/ is exactly what ptgen writes now, and each example's tests pass."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from helpers import REPO, run_in_project, tree_snapshot

_spec = importlib.util.spec_from_file_location(
    "regenerate", REPO / "generated_examples/regenerate.py"
)
regenerate = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(regenerate)

EXAMPLES = sorted(regenerate.CANONICAL)


@pytest.mark.parametrize("name", EXAMPLES)
def test_committed_example_matches_ptgen_output(tmp_path: Path, name: str) -> None:
    fresh = tree_snapshot(regenerate.render_example(name, tmp_path))
    committed = tree_snapshot(REPO / "generated_examples" / name)
    committed = {
        k: v for k, v in committed.items() if "__pycache__" not in k and ".pytest_cache" not in k
    }
    assert sorted(committed) == sorted(fresh), "run: python generated_examples/regenerate.py"
    changed = [path for path in fresh if committed[path] != fresh[path]]
    assert not changed, f"stale examples {changed}; run: python generated_examples/regenerate.py"


@pytest.mark.slow
@pytest.mark.parametrize("name", EXAMPLES)
def test_example_own_tests_pass(name: str) -> None:
    project = REPO / "generated_examples" / name
    result = run_in_project(project, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
