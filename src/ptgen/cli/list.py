"""`ptgen list`: tasks, and the model and dataset kinds that fit each."""

from __future__ import annotations

import typer

from ptgen.cli import app
from ptgen.options import Task, component_kinds


@app.command("list")
def list_command() -> None:
    """Show tasks, model kinds and dataset kinds, and which fit which task.

    Example: ptgen list
    """
    tasks = [t.value for t in Task]
    for group in ("model", "dataset"):
        typer.secho(f"{group} kinds", bold=True)
        header = f"  {'kind':<14}" + "".join(f"{t:<26}" for t in tasks)
        typer.echo(header.rstrip())
        for kind in component_kinds(group).values():
            marks = "".join(f"{'yes' if t in kind.tasks else '-':<26}" for t in tasks)
            typer.echo(f"  {kind.name:<14}{marks}".rstrip())
            typer.secho(f"  {'':<14}{kind.summary}", dim=True)
        typer.echo("")
    typer.secho("options", bold=True)
    typer.echo("  --amp  --compile  --grad-checkpointing  (see `ptgen new project --help`)")
