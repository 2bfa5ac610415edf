"""`ptgen lint`: report (and optionally fix) PyTorch anti-patterns.

The options, help and usage errors are this Typer command's; the work is
`ptgen.lint.command.run`, which `ptgen.cli.main` also calls directly when
`ptgen.lint.command.parse_argv` reads the arguments as Typer would (a faster start)."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from ptgen.cli import app


class OutputFormat(str, Enum):
    text = "text"
    json = "json"
    sarif = "sarif"
    github = "github"


class FailOn(str, Enum):
    info = "info"
    warning = "warning"
    error = "error"


@app.command("lint")
def lint(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(help="Files or directories to lint (default: the current directory)."),
    ] = None,
    select: Annotated[
        list[str] | None,
        typer.Option(help="Only these codes or prefixes, comma-separated (e.g. PGN1,PGN402)."),
    ] = None,
    ignore: Annotated[
        list[str] | None, typer.Option(help="Skip these codes or prefixes, comma-separated.")
    ] = None,
    output_format: Annotated[
        OutputFormat, typer.Option("--output-format", help="How findings are printed.")
    ] = OutputFormat.text,
    fix: Annotated[bool, typer.Option("--fix", help="Apply safe fixes in place.")] = False,
    unsafe_fixes: Annotated[
        bool, typer.Option("--unsafe-fixes", help="Also apply fixes that may change behaviour.")
    ] = False,
    diff: Annotated[
        bool, typer.Option("--diff", help="Print the fixes as a unified diff; write nothing.")
    ] = False,
    fail_on: Annotated[
        FailOn | None,
        typer.Option(help="Exit 1 only for findings of this severity or above [default: info]."),
    ] = None,
    exit_zero: Annotated[
        bool, typer.Option("--exit-zero", help="Exit 0 even when there are findings.")
    ] = False,
    target_torch: Annotated[
        str | None,
        typer.Option(help="torch version the code runs on, e.g. 2.4 [default: installed torch]."),
    ] = None,
    statistics: Annotated[
        bool,
        typer.Option(
            "--statistics", help="Print one line per rule code with its count, not each finding."
        ),
    ] = False,
    show_fixes: Annotated[
        bool,
        typer.Option(
            "--show-fixes",
            help=(
                "Show each finding's fix (what it rewrites, safe or unsafe) under it; "
                "with --fix, list what was fixed per file and code."
            ),
        ),
    ] = False,
    max_file_size: Annotated[
        str | None,
        typer.Option(
            help="Skip (and report as PGN002) files larger than this, e.g. 2MB [default: 1MB]."
        ),
    ] = None,
    server: Annotated[
        bool,
        typer.Option(
            "--server",
            help="Run as a Language Server on stdin/stdout for editors (needs the `lsp` extra).",
        ),
    ] = False,
) -> None:
    """Find the pytorch-patterns anti-patterns in PyTorch code.

    Example: ptgen lint src/ --ignore PGN5 --output-format github

    Exit codes: 0 clean, 1 findings at or above --fail-on, 2 usage or internal error.
    """
    if server:
        _serve()
    from ptgen.lint.command import LintOptions, run

    options = LintOptions(
        paths,
        select,
        ignore,
        output_format.value,
        fix,
        unsafe_fixes,
        diff,
        fail_on and fail_on.value,
        exit_zero,
        target_torch,
        statistics,
        show_fixes,
        max_file_size,
    )
    raise typer.Exit(run(options))


def _serve() -> None:
    try:
        from ptgen.lint.server import serve
    except ImportError as exc:
        missing = (exc.name or "pygls").split(".")[0]
        typer.secho(
            f"error: ptgen lint --server needs {missing}: pip install 'ptgen[lsp]'",
            fg=typer.colors.RED,
            err=True,
        )
        raise typer.Exit(1) from None
    serve()
    raise typer.Exit(0)
