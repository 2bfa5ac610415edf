"""ptgen's command line: thin Typer commands over the library (ptgen.project, ptgen.components,
ptgen.smoke, ptgen.update, ptgen.lint), which does the work and can be used on its own.

The Typer application (`app`) lives in ptgen.cli._app and is imported on first use, so that
`ptgen lint` with options read by `ptgen.lint.command.parse_argv` starts without Typer.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typer import Typer

    app: Typer


def main() -> None:
    args = sys.argv[1:]
    if args[:1] == ["lint"]:
        from ptgen.lint.command import main as lint_main
        from ptgen.lint.command import parse_argv

        options = parse_argv(args[1:])
        if options is not None:
            lint_main(options)
    from ptgen.cli._app import app

    app()


def __getattr__(name: str) -> object:
    if name == "app":  # `from ptgen.cli import app`: tests, command modules
        from ptgen.cli._app import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
