"""`ptgen add model|dataset NAME`: grow an existing project."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ptgen.cli import app
from ptgen.cli._common import user_errors

add_app = typer.Typer(
    help="Add a model or dataset component to a generated project.", no_args_is_help=True
)
app.add_typer(add_app, name="add")

ProjectOption = Annotated[
    Path, typer.Option("--project", "-p", help="Project directory (default: the current one).")
]
DryRunOption = Annotated[bool, typer.Option("--dry-run", help="Print the plan; write nothing.")]
ForceOption = Annotated[bool, typer.Option("--force", help="Rewrite this component's own files.")]


def _run(
    group: str,
    project: Path,
    name: str,
    kind: str | None,
    variable_length: bool | None,
    force: bool,
    dry_run: bool,
) -> None:
    from ptgen.components import add_component, missing_suggestions

    with user_errors():
        plan = add_component(project, group, name, kind, variable_length, force, dry_run)
        suggested = missing_suggestions(project, group, kind)
    for line in plan.describe() if dry_run else [f"wrote {rel}" for rel in plan.files]:
        typer.echo(line)
    if dry_run:
        typer.echo("dry run: nothing written")
    else:
        key = "model.name" if group == "model" else "data.name"
        typer.secho(f"use it with: --set {key}={name}", fg=typer.colors.GREEN)
    for feature in suggested:
        typer.echo(f"this data suits the {feature} feature: ptgen add feature {feature}")


@add_app.command("model")
def add_model_command(
    name: Annotated[
        str, typer.Argument(help="Module name, e.g. wide_cnn (lower case, digits, _).")
    ],
    kind: Annotated[
        str | None, typer.Option(help="Model kind (see `ptgen list`); default fits the task.")
    ] = None,
    project: ProjectOption = Path("."),
    dry_run: DryRunOption = False,
    force: ForceOption = False,
) -> None:
    """Write src/PKG/models/NAME.py and tests/test_model_NAME.py.

    The model is picked up automatically: train it with --set model.name=NAME.
    Example: ptgen add model wide_cnn --kind resnet
    """
    _run("model", project, name, kind, None, force, dry_run)


@add_app.command("dataset")
def add_dataset_command(
    name: Annotated[str, typer.Argument(help="Module name, e.g. reviews (lower case, digits, _).")],
    kind: Annotated[
        str | None, typer.Option(help="Dataset kind (see `ptgen list`); default: synthetic.")
    ] = None,
    variable_length: Annotated[
        bool | None,
        typer.Option(
            "--variable-length/--fixed-length",
            help="Token sequences: pad each batch to its own longest sequence, with lengths and "
            "a padding mask (default), or pad/cut every sequence to data.max_length in the "
            "dataset. Sequence projects only.",
            show_default=False,
        ),
    ] = None,
    project: ProjectOption = Path("."),
    dry_run: DryRunOption = False,
    force: ForceOption = False,
) -> None:
    """Write src/PKG/data/NAME.py and tests/test_data_NAME.py.

    The dataset is picked up automatically: train on it with --set data.name=NAME.
    Example: ptgen add dataset reviews --kind text --fixed-length
    """
    _run("dataset", project, name, kind, variable_length, force, dry_run)
