"""Command line: `python -m language_model COMMAND`, where COMMAND is one of
train, evaluate, generate, smoke, defaults."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from . import generate
from .checkpoint import CheckpointError
from .config import ConfigError, defaults_toml, load_config

DEFAULTS_FILE = Path("configs/default.toml")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f"python -m {__package__}", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    def add(name: str, help_text: str) -> argparse.ArgumentParser:
        command = commands.add_parser(name, help=help_text, description=help_text)
        command.add_argument("--config", help="a TOML config file: what it sets over the defaults")
        command.add_argument(
            "--set",
            dest="overrides",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="override one config value, e.g. --set train.lr=3e-4 (repeatable)",
        )
        return command

    add("train", "Train a model; also runs under `torchrun --nproc_per_node=N`.")
    evaluate = add("evaluate", "Evaluate a checkpoint on the validation or test split.")
    evaluate.add_argument("--checkpoint", required=True, help="e.g. runs/default/best.pt")
    evaluate.add_argument(
        "--split", choices=("val", "test"), default="val", help="the split to score (default: val)"
    )
    evaluate.add_argument("--json", action="store_true", help="print one JSON line")
    generate.add_arguments(
        add("generate", "Continue a prompt with the trained model: sampled, the same per --seed.")
    )
    smoke = add("smoke", "Prove in seconds that training, evaluation and checkpoints work.")
    smoke.add_argument("--steps", type=int, default=5, help="optimiser steps to run (default 5)")
    smoke.add_argument("--json", action="store_true", help="print one JSON object")
    defaults = commands.add_parser("defaults", help="Print every option, its default and help.")
    defaults.add_argument("--write", action="store_true", help=f"write {DEFAULTS_FILE} instead")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "train":
            from .stopping import EXIT_STATUS
            from .train import fit

            stopped_by = fit(load_config(args.config, args.overrides))["stopped_by"]
            return EXIT_STATUS[stopped_by] if stopped_by else 0
        elif args.command == "defaults":
            text = defaults_toml(load_config(), __package__)
            if args.write:
                DEFAULTS_FILE.parent.mkdir(exist_ok=True)
                DEFAULTS_FILE.write_text(text, encoding="utf-8")
                print(f"wrote {DEFAULTS_FILE}")
            else:
                print(text, end="")
        elif args.command == "evaluate":
            from .evaluate import evaluate_checkpoint, format_report

            result = evaluate_checkpoint(args.checkpoint, args.config, args.overrides, args.split)
            print(json_line(result) if args.json else format_report(result))
        elif args.command == "generate":
            generate.generate(args)
        else:
            from .smoke import run_smoke

            return run_smoke(load_config(args.config, args.overrides), args.steps, args.json)
    except (ConfigError, CheckpointError, RuntimeError, OSError) as exc:  # one line, no traceback
        print(f"error: {error_message(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted; continue a training run with --set train.resume=auto", file=sys.stderr)
        return 130
    return 0


def error_message(exc: Exception) -> str:
    """The error's message (of one raised in a loader worker: without the traceback)."""
    message = str(exc)
    if "Original Traceback" not in message:
        return message
    last = message.strip().splitlines()[-1]  # "package.config.ConfigError: cannot read ..."
    return last.split(": ", 1)[-1]


def json_line(values: dict[str, object]) -> str:
    """One JSON object; NaN and infinities (which JSON lacks) become null."""
    finite = {
        k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in values.items()
    }
    return json.dumps(finite)
