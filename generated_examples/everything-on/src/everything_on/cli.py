"""Command line: `python -m everything_on COMMAND`, where COMMAND is one of
train, evaluate, predict, export, smoke, plot, defaults, sweep, repeat, cv, consolidate,
lr-find, serve."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from . import export, predict
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
    evaluate.add_argument(
        "--checkpoint", required=True, help="e.g. runs/default/best.pt, or a sharded best.dcp"
    )
    evaluate.add_argument(
        "--split", choices=("val", "test"), default="val", help="the split to score (default: val)"
    )
    evaluate.add_argument("--json", action="store_true", help="print one JSON line")
    evaluate.add_argument(
        "--output-dir",
        help="where report files go, e.g. the confusion matrix (default: beside --checkpoint)",
    )
    predict.add_arguments(
        add("predict", "Run a trained model on new inputs: a result per input, JSON lines or CSV.")
    )
    export.add_arguments(
        add("export", "Export a trained model (torch.export or ONNX) and a JSON sidecar, checked.")
    )
    smoke = add("smoke", "Prove in seconds that training, evaluation and checkpoints work.")
    smoke.add_argument("--steps", type=int, default=5, help="optimiser steps to run (default 5)")
    smoke.add_argument("--json", action="store_true", help="print one JSON object")
    plot = commands.add_parser("plot", help="Draw loss/metric curves from a run's metrics.csv.")
    plot.add_argument("--run-dir", default="runs/default", help="run directory (train.out_dir)")
    plot.add_argument("--output", help="PNG file to write (default: RUN_DIR/metrics.png)")
    defaults = commands.add_parser("defaults", help="Print every option, its default and help.")
    defaults.add_argument("--write", action="store_true", help=f"write {DEFAULTS_FILE} instead")
    sweep = add("sweep", "Search hyperparameters with Optuna (default --config configs/sweep.toml)")
    sweep.add_argument("--trials", type=positive, required=True, help="trials the study holds")
    sweep.add_argument("--study", default="sweep", help="study name (default: sweep)")
    sweep.add_argument("--out", help="folder of the trials (default: runs/STUDY)")
    sweep.add_argument(
        "--storage", help="SQLAlchemy URL of the study (default: sqlite:///OUT/study.db)"
    )
    sweep.add_argument(
        "--resume", action="store_true", help="continue the study, or join it from another process"
    )
    repeat = add("repeat", "Train once per seed; each seed's final metrics and mean +/- std.")
    repeat.add_argument("--seeds", type=seed_list, required=True, help="e.g. 1,2,3")
    repeat.add_argument("--out", default="runs/repeat", help="folder of the runs")
    cv = add("cv", "K-fold cross-validation on the training split; mean +/- std metrics.")
    cv.add_argument("--folds", type=positive, required=True, help="number of folds, K >= 2")
    cv.add_argument("--seed", type=int, help="seed of the fold assignment (default: train.seed)")
    cv.add_argument("--out", default="runs/cv", help="folder of the runs")
    lr_find = add("lr-find", "Sweep the learning rate up exponentially; plot; suggest train.lr.")
    lr_find.add_argument("--steps", type=int, default=100, help="optimizer steps (default 100)")
    lr_find.add_argument("--start-lr", type=float, default=1e-7, help="first lr (default 1e-7)")
    lr_find.add_argument("--end-lr", type=float, default=10.0, help="last lr (default 10)")
    lr_find.add_argument("--output-dir", default="runs/lr-find", help="for the CSV and the PNG")
    serve = add("serve", "Serve the model over HTTP (FastAPI): /predict or /generate, batched.")
    serve.add_argument("--checkpoint", required=True, help="e.g. runs/default/best.pt")
    serve.add_argument("--host", default="127.0.0.1", help="address (default: this machine only)")
    serve.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    serve.add_argument("--max-batch-size", type=int, default=32, help="per forward (default 32)")
    serve.add_argument("--max-wait-ms", type=float, default=5.0, help="batching wait (default 5)")
    serve.add_argument("--max-body-bytes", type=int, default=8 * 2**20, help="(default 8 MiB)")
    serve.add_argument("--max-inputs", type=int, default=64, help="per request (default 64)")
    consolidate = commands.add_parser(
        "consolidate",
        help="Write a sharded checkpoint (train.strategy=fsdp) as one file.",
        description="Gather a sharded checkpoint directory (train.strategy=fsdp, e.g. "
        "runs/default/best.dcp) into one checkpoint file, in this one process: evaluate, "
        "resume and any single process load it like last.pt.",
    )
    consolidate.add_argument("--checkpoint", required=True, help="a .dcp checkpoint directory")
    consolidate.add_argument("--output", required=True, help="the file to write, e.g. best.pt")
    return parser


def positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expects a positive whole number, got {text!r}")
    return int(text)


def seed_list(text: str) -> list[int]:
    parts = [part.strip() for part in text.split(",")]
    if not all(part.isdigit() for part in parts):
        raise argparse.ArgumentTypeError(f"expects seeds like 1,2,3, got {text!r}")
    return [int(part) for part in parts]


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "train":
            from .stopping import EXIT_STATUS
            from .train import fit

            stopped_by = fit(load_config(args.config, args.overrides))["stopped_by"]
            return EXIT_STATUS[stopped_by] if stopped_by else 0
        elif args.command == "sweep":
            from .sweep import run_sweep

            return run_sweep(args)
        elif args.command in ("repeat", "cv"):
            from .experiments import run_experiment

            return run_experiment(args)
        elif args.command == "defaults":
            text = defaults_toml(load_config(), __package__)
            if args.write:
                DEFAULTS_FILE.parent.mkdir(exist_ok=True)
                DEFAULTS_FILE.write_text(text, encoding="utf-8")
                print(f"wrote {DEFAULTS_FILE}")
            else:
                print(text, end="")
        elif args.command == "plot":
            from .plot import plot_metrics

            print(f"wrote {plot_metrics(args.run_dir, args.output)}")
        elif args.command == "lr-find":
            from .lr_find import run_lr_find

            return run_lr_find(args)
        elif args.command == "serve":
            from .serve import serve

            return serve(args)
        elif args.command == "consolidate":
            from .consolidate import consolidate

            done = consolidate(args.checkpoint, args.output)
            print(f"wrote {args.output}: step {done['step']}, {done['parameters']:,} parameters")
        elif args.command == "evaluate":
            from .evaluate import evaluate_checkpoint, format_report, write_reports

            result = evaluate_checkpoint(args.checkpoint, args.config, args.overrides, args.split)
            result.update(write_reports(result, args.checkpoint, args.output_dir))
            print(json_line(result) if args.json else format_report(result))
        elif args.command == "predict":
            return 1 if predict.predict(args) else 0  # failed inputs are named on stderr
        elif args.command == "export":
            target = export.export(args)
            print(f"wrote {target} and its sidecar {target}.json")
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
