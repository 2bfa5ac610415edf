"""`ptgen update [DIR] [--dry-run] [--to VERSION]`: thin wrapper over ptgen.update."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ptgen.cli import app
from ptgen.cli._common import user_errors


@app.command("update")
def update(
    project: Annotated[
        Path, typer.Argument(metavar="DIR", help="Project directory (default: the current one).")
    ] = Path("."),
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show what would change; change nothing.")
    ] = False,
    to: Annotated[
        str | None,
        typer.Option("--to", metavar="VERSION", help="Template version (default: the newest)."),
    ] = None,
) -> None:
    """Bring template improvements into a project, keeping your edits.

    Needs a clean git working tree; leaves the changes uncommitted for review.
    Lists every conflict and exits 1 when any remain. Your models and datasets
    are never touched; when the update changes the API they are written against,
    they are listed as `upgrade` (exit 1) with what to do.

    \b
    Example:
        ptgen update my-project --dry-run
        ptgen update my-project --to 0.2.0
    """
    from ptgen.update import update_project  # imports copier: only when the command runs

    with user_errors():
        report = update_project(project, to_version=to, dry_run=dry_run)
    for line in report.lines():
        typer.echo(line)
    if report.needs_action:
        raise typer.Exit(1)
