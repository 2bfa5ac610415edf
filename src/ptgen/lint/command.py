"""What `ptgen lint` does once its options are parsed, without Typer, and a lean parser.

`ptgen lint` is run often (in pre-commit hooks, CI, editors' save actions), so its start-up
is part of its speed. The Typer command (ptgen.cli.lint) owns the options, the help and
every usage error; it parses and calls `run`. For the common case, `ptgen.cli.main` first
tries `parse_argv`: it accepts only arguments it reads exactly as Typer does (known
options, valid choices) and returns None for anything else (`--help`, an unknown or
misspelt option, a missing value, `--server`, shell completion), which then goes through
Typer unchanged. Neither this module nor what it imports loads Typer, Click or Pydantic:
Typer builds a Pydantic validator per option of the command it runs, and those imports
and validators cost more than linting a small project.
"""

from __future__ import annotations

import difflib
import errno
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from ptgen.lint import LintConfig, LintRun

OUTPUT_FORMATS = ("text", "json", "sarif", "github")
FAIL_ON = ("info", "warning", "error")
VALUE_OPTIONS = {  # option -> LintOptions field (CHOICES: the values Typer accepts as given)
    "--select": "select",
    "--ignore": "ignore",
    "--output-format": "output_format",
    "--fail-on": "fail_on",
    "--target-torch": "target_torch",
    "--max-file-size": "max_file_size",
}
CHOICES = {"--output-format": OUTPUT_FORMATS, "--fail-on": FAIL_ON}
MULTIPLE = {"--select", "--ignore"}
FLAGS = {
    "--fix": "fix",
    "--unsafe-fixes": "unsafe_fixes",
    "--diff": "diff",
    "--exit-zero": "exit_zero",
    "--statistics": "statistics",
    "--show-fixes": "show_fixes",
}


@dataclass
class LintOptions:
    """`ptgen lint`'s options, as the Typer command receives them (enums as their values)."""

    paths: list[Path] | None = None
    select: list[str] | None = None
    ignore: list[str] | None = None
    output_format: str = "text"
    fix: bool = False
    unsafe_fixes: bool = False
    diff: bool = False
    fail_on: str | None = None
    exit_zero: bool = False
    target_torch: str | None = None
    statistics: bool = False
    show_fixes: bool = False
    max_file_size: str | None = None


def parse_argv(args: list[str]) -> LintOptions | None:
    """The options of `ptgen lint ARGS`, or None where Typer must parse them (see above).

    Like Click: options and paths may be mixed, `--opt=value` or `--opt value`, a repeated
    option keeps its last value (`--select` and `--ignore` collect theirs), `--` ends the
    options. A value that starts with "-" or is empty is left to Typer, as is every path
    that is empty.
    """
    if os.name == "nt" or any(key.endswith("_COMPLETE") for key in os.environ):
        return None  # Click expands wildcards on Windows; shell completion is Typer's
    options, rest = LintOptions(), list(args)
    values: dict[str, list[str]] = {}
    paths: list[str] = []
    while rest:
        arg = rest.pop(0)
        if arg == "--":
            paths += rest
            break
        if not arg.startswith("-") or arg == "-":
            paths.append(arg)
            continue
        name, equals, value = arg.partition("=")
        if name in FLAGS and not equals:
            setattr(options, FLAGS[name], True)
            continue
        if name not in VALUE_OPTIONS:
            return None  # --help, --server, an unknown option, a flag given a value
        if not equals:
            if not rest:
                return None
            value = rest.pop(0)
        if not value or value.startswith("-") or value not in CHOICES.get(name, (value,)):
            return None
        values.setdefault(name, []).append(value)
    if any(not path for path in paths):
        return None
    for name, given in values.items():
        setattr(options, VALUE_OPTIONS[name], given if name in MULTIPLE else given[-1])
    options.paths = [Path(path) for path in paths] or None
    return options


def main(options: LintOptions) -> NoReturn:
    """`run`, then exit with its code; an interrupt or a closed pipe ends it as Typer does."""
    try:
        code = run(options)
    except KeyboardInterrupt:
        code = 130
    except OSError as exc:
        if exc.errno != errno.EPIPE:
            raise
        _silence_output()  # `ptgen lint | head`: no second error while flushing at exit
        code = 1
    sys.exit(code)


def _silence_output() -> None:
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        try:
            os.dup2(devnull, stream.fileno())
        except (OSError, ValueError):
            pass


def run(options: LintOptions) -> int:
    """Lint (and fix) as `ptgen lint` does, print the report; the exit code."""
    from ptgen.errors import PtgenError
    from ptgen.lint import LintUsageError, lint_run, load_config

    targets = options.paths or [Path(".")]
    try:
        config = load_config(
            targets[0],
            _codes(options.select),
            _codes(options.ignore),
            options.target_torch,
            options.fail_on,
            options.max_file_size,
        )
        if options.fix or options.diff:
            _apply_fixes(targets, config, options)
        run = lint_run(targets, config)
        findings = run.findings
        if options.output_format in ("json", "sarif") or options.show_fixes:
            _fill_edits(findings, config)
    except LintUsageError as exc:
        _error(f"error: {exc}")
        return 2
    except (PtgenError, OSError, RecursionError) as exc:
        _error(f"error: internal: {exc}")
        return 2
    report = _report(findings, options)
    if report and not (findings or options.output_format != "text" or _all_read(run)):
        report = ""  # never "All checks passed!" about files that were not read
    if report:
        echo(report)
    if not _all_read(run):
        from ptgen.lint.reporters import files_summary

        summary = files_summary(len(run.checked), run.skipped)
        echo(summary, err=options.output_format != "text")
    failing = any(f.severity >= config.fail_on for f in findings)
    return 1 if failing and not options.exit_zero and not options.diff else 0


def echo(message: str, err: bool = False, nl: bool = True) -> None:
    """Print and flush, as `typer.echo` does for text."""
    stream = sys.stderr if err else sys.stdout
    stream.write(message + "\n" if nl else message)
    stream.flush()


def _error(message: str) -> None:
    """One error line on stderr, red on a terminal (`typer.secho(..., fg="red", err=True)`)."""
    echo(f"\x1b[31m{message}\x1b[0m" if sys.stderr.isatty() else message, err=True)


def _codes(values: list[str] | None) -> list[str] | None:
    if values is None:
        return None
    return [code for value in values for code in value.split(",") if code.strip()]


def _all_read(run: LintRun) -> bool:
    return bool(run.checked) and not run.skipped


def _report(findings: list, options: LintOptions) -> str:
    from ptgen.lint import reporters

    unsafe = options.unsafe_fixes
    if options.statistics:
        return reporters.statistics(findings, unsafe)
    if options.show_fixes and options.output_format == "text":
        return reporters.fixes_shown(findings, unsafe)
    return reporters.REPORTERS[options.output_format](findings, unsafe)


def _apply_fixes(targets: list[Path], config: LintConfig, options: LintOptions) -> None:
    from ptgen.lint import fix_paths
    from ptgen.lint.reporters import fixed_enumeration

    diff = options.diff
    results = fix_paths(targets, unsafe=options.unsafe_fixes, write=not diff, config=config)
    for result in results:
        if diff:
            name = str(result.path)
            lines = difflib.unified_diff(
                result.original.splitlines(True), result.fixed.splitlines(True), name, name
            )
            echo("".join(lines), nl=False)
    count = sum(len(r.applied) for r in results)
    verb = "Would fix" if diff else "Fixed"
    echo(f"{verb} {count} finding{'s' * (count != 1)}.", err=True)
    if options.show_fixes and count:
        applied = {str(r.path): r.applied for r in results if r.applied}
        echo(fixed_enumeration(applied), err=True)


def _fill_edits(findings: list, config: LintConfig) -> None:
    if any(f.fix is not None for f in findings):
        from ptgen.lint.fixes import fill_edits

        fill_edits(findings, config)
