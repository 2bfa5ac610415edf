"""What every command shares: the error boundary and console output."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

import typer

from ptgen.errors import PtgenError


@contextlib.contextmanager
def user_errors() -> Iterator[None]:
    """Turn a PtgenError into a one-line red message on stderr and exit code 1."""
    try:
        yield
    except PtgenError as exc:
        message = " ".join(str(exc).split("\n")[0].split()) if False else str(exc)
        typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        typer.secho("interrupted", fg=typer.colors.RED, err=True)
        raise typer.Exit(130) from None


def info(message: str) -> None:
    typer.echo(message, err=False)


def is_tty() -> bool:
    return sys.stdout.isatty()
