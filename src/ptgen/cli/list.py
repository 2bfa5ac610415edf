"""`ptgen list`: tasks, the model and dataset kinds that fit each, and features."""

from __future__ import annotations

import typer

from ptgen.cli import app
from ptgen.features import DEFAULT_FEATURES, features
from ptgen.options import component_kinds, tasks


@app.command("list")
def list_command() -> None:
    """Show tasks, model and dataset kinds (which fit which task), and features.

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
    typer.secho("features (--with NAME,..., ptgen add|remove feature NAME)", bold=True)
    suggested = {name for kind in component_kinds("dataset").values() for name in kind.suggests}
    for feature in features().values():
        chosen = "default" if feature.name in DEFAULT_FEATURES else ""
        chosen = "by kinds" if feature.kinds_only else chosen
        chosen = "suggested" if feature.name in suggested else chosen  # by the kinds of files
        typer.echo(f"  {feature.name:<14}{chosen:<10}{feature.summary}".rstrip())
    typer.echo("")
    typer.secho("options", bold=True)
    typer.echo("  --amp  --compile  --grad-checkpointing  (see `ptgen new project --help`)")
    typer.echo("  --variable-length/--fixed-length  (sequence datasets)")
