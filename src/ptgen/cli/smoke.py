"""`ptgen smoke [DIR]`."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import typer

from ptgen.cli import app
from ptgen.cli._common import print_smoke, user_errors


@app.command("smoke")
def smoke_command(
    project: Annotated[Path, typer.Argument(help="Project directory.")] = Path("."),
    steps: Annotated[
        int, typer.Option(min=1, max=1000, help="Optimiser steps in the train stage.")
    ] = 5,
    overrides: Annotated[
        list[str] | None, typer.Option("--set", help="Config override KEY=VALUE (repeatable).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON report.")] = False,
) -> None:
    """Train a generated project for a few steps and check evaluation and checkpoints.

    Example: ptgen smoke my-classifier --steps 10
    """
    from ptgen.smoke import smoke

    with user_errors():
        report = smoke(project, steps, overrides, check=False)
    if as_json:
        payload = {
            "ok": report.ok,
            "total_seconds": round(report.total_seconds, 3),
            "startup_seconds": round(report.startup_seconds, 3),
            "stages": [asdict(stage) for stage in report.stages],
        }
        typer.echo(json.dumps(payload))
    else:
        print_smoke(report)
    if not report.ok:
        failed = next((s.name for s in report.stages if not s.ok), "incomplete")
        typer.secho(f"error: smoke failed at stage '{failed}'", fg=typer.colors.RED, err=True)
        raise typer.Exit(1)
