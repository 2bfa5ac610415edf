"""`ptgen lint`'s lean start: `parse_argv` reads what Typer reads, or leaves it to Typer."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import ptgen.lint.command as command
from ptgen.cli import app
from ptgen.lint.command import LintOptions, parse_argv

SRC = str(Path(__file__).parents[1] / "src")
BAD = 'import torch\n\ntorch.save(model, "m.pt")\nopt.zero_grad(set_to_none=False)\n'

READ_AS_TYPER_DOES = [
    [],
    ["src"],
    ["a.py", "b", "-"],
    ["--select", "PGN1,PGN402", "--select=PGN5", "x.py"],
    ["x.py", "--ignore", "PGN5", "y.py", "--ignore=PGN7"],
    ["--output-format", "json", "--output-format=sarif"],
    ["--output-format=github", "--fail-on", "warning"],
    ["--fix", "--unsafe-fixes", "--diff", "--exit-zero", "--statistics", "--show-fixes"],
    ["--target-torch", "2.4", "--max-file-size=2MB", "."],
    ["--fail-on=error", "--", "--select", "-"],
    ["--exit-zero", "--exit-zero", "x"],
]
LEFT_TO_TYPER = [
    ["--help"],
    ["-h"],
    ["--server"],
    ["--bogus"],
    ["--sel", "PGN1"],
    ["--fix=yes"],
    ["--select"],
    ["--select", "--fix"],
    ["--select="],
    ["--output-format", "JSON"],
    ["--output-format", "xml"],
    ["--fail-on", "fatal"],
    ["x.py", "-q"],
    [""],
]


@pytest.mark.parametrize("args", READ_AS_TYPER_DOES)
def test_parse_argv_reads_what_typer_reads(args: list[str], monkeypatch) -> None:
    seen: list[LintOptions] = []
    monkeypatch.setattr(command, "run", lambda options: seen.append(options) or 0)
    result = CliRunner().invoke(app, ["lint", *args])
    assert result.exit_code == 0, result.output
    assert parse_argv(args) == seen[0]


@pytest.mark.parametrize("args", LEFT_TO_TYPER)
def test_parse_argv_leaves_help_errors_and_the_server_to_typer(args: list[str]) -> None:
    assert parse_argv(args) is None


def test_shell_completion_is_left_to_typer(monkeypatch) -> None:
    monkeypatch.setenv("_PTGEN_COMPLETE", "bash_complete")
    assert parse_argv(["src"]) is None


def lint_process(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    check = (
        "import sys\nfrom ptgen.cli import main\nsys.argv = ['ptgen', 'lint', *sys.argv[1:]]\n"
        "try:\n    main()\nfinally:\n"
        "    print(sorted(m for m in ('typer', 'click', 'pydantic', 'ptgen.cli._app')"
        " if m in sys.modules), file=sys.stderr)\n"
    )
    env = {**os.environ, "PYTHONPATH": SRC}
    return subprocess.run(
        [sys.executable, "-c", check, *args], cwd=cwd, env=env, capture_output=True, text=True
    )


def test_lint_starts_without_typer_and_prints_what_typer_prints(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(BAD, encoding="utf-8")
    for args in (["train.py"], ["--output-format", "json", "train.py"], ["--statistics", "."]):
        lean = lint_process(*args, cwd=tmp_path)
        assert lean.stderr.splitlines()[-1] == "[]"  # nothing of Typer, Click or Pydantic
        cwd = os.getcwd()
        os.chdir(tmp_path)
        try:
            typer = CliRunner().invoke(app, ["lint", *args])
        finally:
            os.chdir(cwd)
        assert (lean.returncode, lean.stdout) == (typer.exit_code, typer.stdout)


def test_lint_errors_through_both_paths(tmp_path: Path) -> None:
    missing = lint_process("missing.py", cwd=tmp_path)
    assert missing.returncode == 2
    assert missing.stderr.splitlines()[0] == "error: missing.py: no such file or directory"
    bogus = lint_process("--bogus", cwd=tmp_path)  # Typer's usage error, as before
    assert bogus.returncode == 2 and "No such option: --bogus" in bogus.stderr
    assert "'typer'" in bogus.stderr.splitlines()[-1]


def test_lint_fix_through_the_lean_path(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    path.write_text(BAD, encoding="utf-8")
    result = lint_process("--fix", "--exit-zero", "train.py", cwd=tmp_path)
    assert result.returncode == 0
    assert result.stderr.splitlines()[0] == "Fixed 1 finding."
    assert "opt.zero_grad()" in path.read_text(encoding="utf-8")


@pytest.fixture
def plain_finders(monkeypatch) -> None:
    """The plain case's precondition: PathFinder is the one distribution finder. Another
    test in this worker may have imported an editable install's finder, or the
    importlib_metadata backport (mlflow imports it), which deletes PathFinder's
    find_distributions to give its own finder primacy."""
    import importlib.machinery
    import importlib.metadata

    if not hasattr(importlib.machinery.PathFinder, "find_distributions"):
        monkeypatch.setattr(
            importlib.machinery.PathFinder,
            "find_distributions",
            staticmethod(importlib.metadata.MetadataPathFinder.find_distributions),
            raising=False,
        )
    kept = [
        finder
        for finder in sys.meta_path
        if not hasattr(finder, "find_distributions") or finder is importlib.machinery.PathFinder
    ]
    monkeypatch.setattr(sys, "meta_path", kept)


def test_torch_version_read_without_importlib_metadata_agrees_with_it(plain_finders) -> None:
    from importlib import metadata

    from ptgen.lint.config import plain_dist_info_version

    names = {d.metadata["Name"] for d in metadata.distributions()}
    for name in names:
        assert plain_dist_info_version(name) in (metadata.version(name), None), name
    assert plain_dist_info_version("torch") == metadata.version("torch")  # the plain case


def dist_info(folder: Path, name: str, metadata_text: str | None) -> Path:
    info = folder / name
    info.mkdir(parents=True)
    if metadata_text is not None:
        (info / "METADATA").write_text(metadata_text, encoding="utf-8")
    return folder


@pytest.mark.parametrize(
    ("entries", "expected"),
    [
        ({"torch-2.4.1.dist-info": "Name: torch\nVersion: 2.4.1\n\nbody\n"}, "2.4.1"),
        ({"Torch-2.4.1.dist-info": "Metadata-Version: 2.1\nversion:2.4.1+cu121\n"}, "2.4.1+cu121"),
        ({"torch-2.4.1.dist-info": "Name: torch\nVersion: 2.4\n 1\n"}, None),  # folded
        ({"torch-2.4.1.dist-info": None}, None),  # no METADATA
        ({"torch-2.4.1.egg-info": "Version: 2.4.1\n"}, None),  # an egg
        (
            {"torch-2.4.1.dist-info": "Version: 2.4.1\n", "torch-2.5.dist-info": "Version: 2.5"},
            None,
        ),
        ({"torchvision-0.19.dist-info": "Version: 0.19\n"}, None),  # no torch there
    ],
)
def test_plain_dist_info_version_or_none(
    tmp_path: Path, monkeypatch, plain_finders, entries: dict[str, str | None], expected: str | None
) -> None:
    from ptgen.lint.config import plain_dist_info_version

    for name, text in entries.items():
        dist_info(tmp_path / "site", name, text)
    monkeypatch.setattr(sys, "path", [str(tmp_path / "missing"), str(tmp_path / "site")])
    assert plain_dist_info_version("torch") == expected
