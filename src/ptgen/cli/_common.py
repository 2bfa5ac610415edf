"""What every command shares: the error boundary and report printing."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

import typer

from ptgen.errors import PtgenError

if TYPE_CHECKING:
    from ptgen.smoke import SmokeReport


@contextlib.contextmanager
def user_errors() -> Iterator[None]:
    """Turn a PtgenError into a one-line red message on stderr and exit code 1."""
    try:
        yield
    except PtgenError as exc:
        message = " ".join(str(exc).split())  # always one line
        typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        typer.secho("interrupted", fg=typer.colors.RED, err=True)
        raise typer.Exit(130) from None


def print_smoke(report: SmokeReport) -> None:
    for stage in report.stages:
        mark = (
            typer.style("PASS", fg=typer.colors.GREEN)
            if stage.ok
            else typer.style("FAIL", fg=typer.colors.RED)
        )
        typer.echo(f"{mark} {stage.name:<10} {stage.seconds:6.2f}s  {stage.detail}")
    typer.echo(
        f"smoke: {report.total_seconds:.1f}s in all "
        f"({report.startup_seconds:.1f}s start-up and imports)"
    )
