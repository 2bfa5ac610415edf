"""`ptgen new project NAME`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ptgen.cli import app
from ptgen.cli._common import print_smoke, user_errors
from ptgen.options import package_name, tasks

new_app = typer.Typer(help="Create something new.", no_args_is_help=True)
app.add_typer(new_app, name="new")


@new_app.command("project")
def new_project_command(
    name: Annotated[
        str, typer.Argument(help="Project name, e.g. my-classifier (package: my_classifier).")
    ],
    output_dir: Annotated[
        Path, typer.Option("--output-dir", "-o", help="Where to create NAME/.")
    ] = Path("."),
    task: Annotated[
        str,
        typer.Option(
            help="What the project learns (see `ptgen list`).", autocompletion=lambda: list(tasks())
        ),
    ] = "image-classification",
    model: Annotated[
        str | None, typer.Option(help="Model kind (see `ptgen list`); default depends on --task.")
    ] = None,
    dataset: Annotated[
        str | None,
        typer.Option(help="Dataset kind (see `ptgen list`); default: synthetic data of the task."),
    ] = None,
    variable_length: Annotated[
        bool | None,
        typer.Option(
            "--variable-length/--fixed-length",
            help="Token sequences: pad each batch to its longest (default) or every sequence "
            "to data.max_length.",
            show_default=False,
        ),
    ] = None,
    description: Annotated[str, typer.Option(help="One-line description.")] = "A PyTorch project",
    author: Annotated[str, typer.Option(help="Author name.")] = "",
    amp: Annotated[
        bool,
        typer.Option(
            "--amp/--no-amp",
            help="Mixed precision: bfloat16 where supported, else float16 + GradScaler.",
        ),
    ] = False,
    compile_: Annotated[
        bool,
        typer.Option("--compile/--no-compile", help="torch.compile the model (slow first step)."),
    ] = False,
    grad_checkpointing: Annotated[
        bool,
        typer.Option(
            "--grad-checkpointing/--no-grad-checkpointing", help="Trade compute for memory."
        ),
    ] = False,
    with_: Annotated[
        str | None,
        typer.Option(
            "--with",
            metavar="FEATURE,...",
            help="Optional features, comma-separated, e.g. sweep,export (see `ptgen list`), "
            "besides those the dataset kind suggests (predict, for data read from files). "
            "Add or remove them later with `ptgen add|remove feature`.",
        ),
    ] = None,
    smoke: Annotated[
        bool, typer.Option("--smoke/--no-smoke", help="Train a few steps to prove it works.")
    ] = True,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the files it would write; write nothing.")
    ] = False,
    force: Annotated[
        bool, typer.Option("--force", help="Write into an existing non-empty directory.")
    ] = False,
) -> None:
    """Create a PyTorch project that has already trained on this machine.

    Example: ptgen new project my-classifier --dataset image-folder --with sweep,export
    """
    from ptgen.features import parse_features
    from ptgen.project import ProjectOptions, new_project

    with user_errors():
        options = ProjectOptions(
            name,
            task,
            model,
            dataset,
            description,
            author,
            amp,
            compile_,
            grad_checkpointing,
            variable_length,
            tuple(parse_features(with_)),
        )
        result = new_project(
            options,
            output_dir,
            run_smoke=smoke,
            dry_run=dry_run,
            force=force,
            progress=lambda message: typer.secho(message, dim=True, err=True),
        )
    if dry_run:
        typer.echo(f"would create {result.path}/ with {len(result.files)} files:")
        for path in result.files:
            typer.echo(f"  {path}")
        return
    if result.smoke is not None:
        print_smoke(result.smoke)
    typer.secho(f"created {result.path}", fg=typer.colors.GREEN, bold=True)
    package = package_name(name)
    typer.echo(f"next: cd {result.path} && python -m pip install -e . && python -m {package} train")
