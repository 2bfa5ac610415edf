"""`ptgen add feature NAME` and `ptgen remove feature NAME`: thin wrappers over ptgen.features."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ptgen.cli import app
from ptgen.cli._common import user_errors
from ptgen.cli.add import DryRunOption, ProjectOption, add_app

remove_app = typer.Typer(help="Remove a feature from a generated project.", no_args_is_help=True)
app.add_typer(remove_app, name="remove")

FeatureArgument = Annotated[
    str, typer.Argument(metavar="NAME[,NAME...]", help="Feature(s), see `ptgen list`.")
]


def _change(project: Path, dry_run: bool, add: str = "", remove: str = "") -> None:
    from ptgen.features import change_features, parse_features

    with user_errors():
        change = change_features(project, parse_features(add), parse_features(remove), dry_run)
    for line in change.lines():
        typer.echo(line)
    if change.needs_action:
        raise typer.Exit(1)


@add_app.command("feature")
def add_feature_command(
    name: FeatureArgument, project: ProjectOption = Path("."), dry_run: DryRunOption = False
) -> None:
    """Add a feature: its files, commands, config keys and README section.

    Needs a clean git working tree; the template is re-rendered at the project's own
    version with the feature and merged in, so your edits stay. Conflicts are listed
    (exit 1) as `ptgen update` lists them. Leaves the change uncommitted for review.
    All or nothing, and one feature change at a time per project.

    \b
    Example:
        ptgen add feature sweep
        ptgen add feature export,plot --project my-project --dry-run
    """
    _change(project, dry_run, add=name)


@remove_app.command("feature")
def remove_feature_command(
    name: FeatureArgument, project: ProjectOption = Path("."), dry_run: DryRunOption = False
) -> None:
    """Remove a feature and every trace of it (files, commands, config keys, README).

    Works like `ptgen add feature`: your edits in shared files stay; a file of the
    feature you edited is kept, as a conflict to resolve; your configs that still set
    its keys are named. Example: ptgen remove feature sweep
    """
    _change(project, dry_run, remove=name)
