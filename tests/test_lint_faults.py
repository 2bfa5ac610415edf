"""`ptgen lint` on hostile inputs (issue 18, items 9 and 10): each test builds the real
thing (a FIFO, a link to /dev/zero, a 5 MB file, a deeply nested expression) and runs the
real command in a subprocess, under a time limit and an address-space limit, so that the
old behaviour (hang, unbounded memory, whole-run abort) fails the test instead of the
machine.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from ptgen.lint import LintConfig, lint_paths

GUARD_SECONDS = 60  # a hang fails here, it is no performance bound
MEMORY_LIMIT = 2 * 1024**3  # address space: the /dev/zero read grew past 8 GB before
BAD = 'torch.save(model, "m.pt")\n'


def run_lint(*args: str) -> subprocess.CompletedProcess[str]:
    def limit_memory() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))

    return subprocess.run(
        [sys.executable, "-m", "ptgen", "lint", *args],
        capture_output=True,
        text=True,
        timeout=GUARD_SECONDS,
        preexec_fn=limit_memory,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "src")},
    )


def tree_with(tmp_path: Path) -> Path:
    """A directory with one ordinary file that has a finding (the run must reach it)."""
    (tmp_path / "ok.py").write_text(BAD, encoding="utf-8")
    return tmp_path


def assert_reported(result: subprocess.CompletedProcess[str], name: str, why: str) -> None:
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 1, result.stderr
    line = next(x for x in result.stdout.splitlines() if f"{name}:1:1: PGN002" in x)
    assert why in line
    assert "ok.py:1:1: PGN401" in result.stdout  # the other file was still linted


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifo_named_like_python_is_reported_not_read(tmp_path: Path) -> None:
    os.mkfifo(tree_with(tmp_path) / "x.py")
    assert_reported(run_lint(str(tmp_path)), "x.py", "not a regular file (a FIFO)")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifo_given_by_name_says_what_it_is(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "x.py")
    result = run_lint(str(tmp_path / "x.py"))
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "not checked: not a regular file (a FIFO)" in result.stdout


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_symlink_to_dev_zero_is_not_read(tmp_path: Path) -> None:
    (tree_with(tmp_path) / "z.py").symlink_to("/dev/zero")
    result = run_lint(str(tmp_path))
    assert_reported(result, "z.py", "a character device via a symbolic link to /dev/zero")


def test_broken_symlink_is_reported(tmp_path: Path) -> None:
    (tree_with(tmp_path) / "gone.py").symlink_to(tmp_path / "missing.py")
    assert_reported(run_lint(str(tmp_path)), "gone.py", "a broken symbolic link")


def test_five_megabyte_generated_file_is_one_finding(tmp_path: Path) -> None:
    line = "def f(model, x):\n    return model(x).sum() + 1\n"
    (tree_with(tmp_path) / "generated.py").write_text(line * 110_000, encoding="utf-8")
    result = run_lint(str(tmp_path))
    assert_reported(result, "generated.py", "5.2 MB is over the 1.0 MB limit (--max-file-size)")


def test_size_limit_is_configurable(tmp_path: Path) -> None:
    (tree_with(tmp_path) / "big.py").write_text("x = 1\n" * 1000, encoding="utf-8")  # 6 kB
    assert lint_paths([tmp_path / "big.py"]) == []
    limited = LintConfig(max_file_size=5000)
    (finding,) = lint_paths([tmp_path / "big.py"], config=limited)
    assert (finding.code, finding.message) == (
        "PGN002",
        "not checked: 6.0 kB is over the 5.0 kB limit (--max-file-size)",
    )
    result = run_lint(str(tmp_path), "--max-file-size", "5KB")
    assert_reported(result, "big.py", "over the")
    (tmp_path / "pyproject.toml").write_text('[tool.ptgen.lint]\nmax-file-size = "5KB"\n')
    assert_reported(run_lint(str(tmp_path)), "big.py", "over the")


def test_bad_size_is_a_usage_error(tmp_path: Path) -> None:
    result = run_lint(str(tree_with(tmp_path)), "--max-file-size", "lots")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip() == "error: not a file size: 'lots' (expected e.g. 2MB or 500000)"


@pytest.mark.parametrize("expression", ["1+" * 100_000 + "1", "-" * 100_000 + "1"])
def test_deeply_nested_expression_is_one_finding(tmp_path: Path, expression: str) -> None:
    (tree_with(tmp_path) / "deep.py").write_text(f"x = {expression}\n", encoding="utf-8")
    result = run_lint(str(tmp_path))
    assert_reported(result, "deep.py", "nested too deeply to analyse")


def test_fix_skips_what_lint_reports(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "x.py")
    (tmp_path / "deep.py").write_text("x = " + "-" * 100_000 + "1\n", encoding="utf-8")
    (tmp_path / "fixable.py").write_text("opt.zero_grad(set_to_none=False)\n", encoding="utf-8")
    result = run_lint(str(tmp_path), "--fix")
    assert "Traceback" not in result.stderr and "Fixed 1 finding." in result.stderr
    assert (tmp_path / "fixable.py").read_text() == "opt.zero_grad()\n"
