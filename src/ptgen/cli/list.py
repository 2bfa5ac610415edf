"""`ptgen list`: tasks, and the model and dataset kinds that fit each."""

from __future__ import annotations

import typer

from ptgen.cli import app
from ptgen.options import component_kinds, tasks


@app.command("list")
def list_command() -> None:
    """Show tasks, model kinds and dataset kinds, and which fit which task.

    Example: ptgen list
    """
    typer.secho("tasks", bold=True)
    for task in tasks().values():
        typer.echo(f"  {task.name:<26}{task.summary}")
    typer.echo("")
    names = list(tasks())
    for group in ("model", "dataset"):
        typer.secho(f"{group} kinds", bold=True)
        header = f"  {'kind':<14}" + "".join(f"{t:<26}" for t in names)
        typer.echo(header.rstrip())
        for kind in component_kinds(group).values():
            marks = "".join(f"{'yes' if t in kind.tasks else '-':<26}" for t in names)
            typer.echo(f"  {kind.name:<14}{marks}".rstrip())
            typer.secho(f"  {'':<14}{kind.summary}", dim=True)
        typer.echo("")
    typer.secho("options", bold=True)
    typer.echo("  --amp  --compile  --grad-checkpointing  (see `ptgen new project --help`)")
    typer.echo("  --variable-length/--fixed-length  (sequence datasets)")
