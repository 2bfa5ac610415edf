"""The Typer application: the root callback and every command (each module registers itself)."""

from __future__ import annotations

from typing import Annotated

import typer

from ptgen import __version__

app = typer.Typer(
    name="ptgen",
    help="Generate PyTorch projects that already train; grow, update and lint them.",
    no_args_is_help=True,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        from ptgen.errors import PtgenError
        from ptgen.template_source import template_version  # no Copier, no torch: fast

        try:
            template = template_version()
        except PtgenError as exc:  # a damaged releases.toml: say so, still print ptgen's
            template = f"unknown: {exc}"
        typer.echo(f"ptgen {__version__} (template {template})")
        raise typer.Exit()


@app.callback()
def root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Generate PyTorch projects that already train; grow, update and lint them."""


def _register() -> None:
    # Command modules import only typer and ptgen's light modules at import time.
    # Each command module registers itself on `app` when imported.
    from ptgen.cli import add, feature, lint, list, new, smoke, update  # noqa: F401


_register()
