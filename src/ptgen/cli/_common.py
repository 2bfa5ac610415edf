"""What every command shares: the error boundary and report printing."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, NoReturn

import typer

from ptgen.errors import PtgenError

if TYPE_CHECKING:
    from ptgen.smoke import SmokeReport


@contextlib.contextmanager
def user_errors() -> Iterator[None]:
    """Turn a PtgenError, or an OSError (a full disk, permissions), into one red line and exit 1."""
    try:
        yield
    except PtgenError as exc:
        _fail(str(exc))
    except OSError as exc:  # the disk, the file system, permissions: not a bug in ptgen
        _fail(f"{exc.strerror or exc}: {exc.filename}" if exc.filename else str(exc))
    except KeyboardInterrupt:
        typer.secho("interrupted", fg=typer.colors.RED, err=True)
        raise typer.Exit(130) from None


def _fail(message: str) -> NoReturn:
    one_line = " ".join(message.split())
    typer.secho(f"error: {one_line}", fg=typer.colors.RED, err=True)
    raise typer.Exit(1) from None


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
