"""`ptgen lint`: report (and optionally fix) PyTorch anti-patterns."""

from __future__ import annotations

import difflib
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ptgen.cli import app
from ptgen.errors import PtgenError

if TYPE_CHECKING:
    from ptgen.lint import LintRun


class OutputFormat(str, Enum):
    text = "text"
    json = "json"
    sarif = "sarif"
    github = "github"


class FailOn(str, Enum):
    info = "info"
    warning = "warning"
    error = "error"


def _codes(values: list[str] | None) -> list[str] | None:
    if values is None:
        return None
    return [code for value in values for code in value.split(",") if code.strip()]


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
    from ptgen.lint import LintUsageError, lint_run, load_config

    targets = paths or [Path(".")]
    try:
        config = load_config(
            targets[0],
            _codes(select),
            _codes(ignore),
            target_torch,
            fail_on and fail_on.value,
            max_file_size,
        )
        if fix or diff:
            _apply_fixes(targets, config, unsafe_fixes, diff, show_fixes)
        run = lint_run(targets, config)
        findings = run.findings
        if output_format in (OutputFormat.json, OutputFormat.sarif) or show_fixes:
            _fill_edits(findings, config)
    except LintUsageError as exc:
        typer.secho(f"error: {exc}", fg=typer.colors.RED, err=True)
        raise typer.Exit(2) from None
    except (PtgenError, OSError, RecursionError) as exc:
        typer.secho(f"error: internal: {exc}", fg=typer.colors.RED, err=True)
        raise typer.Exit(2) from None
    report = _report(findings, output_format, unsafe_fixes, statistics, show_fixes)
    if report and not (findings or output_format != OutputFormat.text or _all_read(run)):
        report = ""  # never "All checks passed!" about files that were not read
    if report:
        typer.echo(report)
    if not _all_read(run):
        from ptgen.lint.reporters import files_summary

        summary = files_summary(len(run.checked), run.skipped)
        typer.echo(summary, err=output_format != OutputFormat.text)
    failing = any(f.severity >= config.fail_on for f in findings)
    raise typer.Exit(1 if failing and not exit_zero and not diff else 0)


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


def _all_read(run: LintRun) -> bool:
    return bool(run.checked) and not run.skipped


def _report(
    findings: list, output_format: OutputFormat, unsafe: bool, statistics: bool, show_fixes: bool
) -> str:
    from ptgen.lint import reporters

    if statistics:
        return reporters.statistics(findings, unsafe)
    if show_fixes and output_format == OutputFormat.text:
        return reporters.fixes_shown(findings, unsafe)
    return reporters.REPORTERS[output_format.value](findings, unsafe)


def _apply_fixes(targets: list[Path], config: object, unsafe: bool, diff: bool, show: bool) -> None:
    from ptgen.lint import fix_paths
    from ptgen.lint.reporters import fixed_enumeration

    results = fix_paths(targets, unsafe=unsafe, write=not diff, config=config)  # type: ignore[arg-type]
    for result in results:
        if diff:
            name = str(result.path)
            lines = difflib.unified_diff(
                result.original.splitlines(True), result.fixed.splitlines(True), name, name
            )
            typer.echo("".join(lines), nl=False)
    count = sum(len(r.applied) for r in results)
    verb = "Would fix" if diff else "Fixed"
    typer.echo(f"{verb} {count} finding{'s' * (count != 1)}.", err=True)
    if show and count:
        applied = {str(r.path): r.applied for r in results if r.applied}
        typer.echo(fixed_enumeration(applied), err=True)


def _fill_edits(findings: list, config: object) -> None:
    if any(f.fix is not None for f in findings):
        from ptgen.lint.fixes import fill_edits

        fill_edits(findings, config)  # type: ignore[arg-type]
