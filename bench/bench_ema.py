"""EMA of the weights (the ema feature) against the raw weights, on real data, at defaults:

    PYTHONPATH=src python bench/bench_ema.py [--seeds 1,2,3] [--out-dir DIR] [--json PATH]

scikit-learn's 1797 8x8 digits as PNG files (bench/real_data.py's digits_folder: every 5th
image of a digit is validation, 1433 train / 364 val), an image-classification project
with the ema feature and the image-folder kind, the default `cnn` and every default
(10 epochs, batch 32, AdamW 1e-3 cosine, train.ema_decay 0.999, ema_warmup_steps 10).
Each seed trains once; its last.pt is then evaluated twice on the validation split, with
the averaged weights (train.ema_eval=true, the default) and with the raw weights
(train.ema_eval=false): a paired comparison, the same run. Two seeds run at a time, one
thread each (a 2-core machine). `--set KEY=VALUE` (repeatable) changes a default for
every run, e.g. `--set train.scheduler=constant`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from real_data import digits_folder

from ptgen.components import add_component
from ptgen.project import ProjectOptions, new_project


def run(project: Path, *args: str) -> str:
    env = dict(os.environ, PYTHONPATH=str(project / "src"), OMP_NUM_THREADS="1")
    result = subprocess.run(
        [sys.executable, "-m", "digits", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed:\n{result.stderr[-3000:]}")
    return result.stdout


def one_seed(project: Path, root: Path, seed: int, changed: list[str]) -> dict:
    out = project / "runs" / "-".join([f"seed-{seed}", *changed]).replace("=", "-")
    sets = [f"data.root={root}", "data.name=digits", f"train.seed={seed}", *changed]
    args = [a for s in sets for a in ("--set", s)]
    run(project, "train", *args, "--set", f"train.out_dir={out}")
    scores = {}
    for weights, flag in (("ema", "true"), ("raw", "false")):
        report = run(
            project, "evaluate", "--checkpoint", str(out / "last.pt"), "--json",
            "--set", f"train.ema_eval={flag}",
        )  # fmt: skip
        result = json.loads(report.strip().splitlines()[-1])
        scores[weights] = {k: result[k] for k in ("accuracy", "loss", "macro_f1")}
    print(f"seed {seed}: {json.dumps(scores)}", flush=True)
    return {"seed": seed, **scores}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--out-dir", help="keep the project and runs here (default: a temp dir)")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--set", dest="changed", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    workdir = Path(args.out_dir or tempfile.mkdtemp(prefix="bench-ema-"))
    root = workdir / "digit-images"
    root = root if root.exists() else digits_folder(root)
    options = ProjectOptions(name="digits", features=("ema",))
    project = workdir / "digits"
    if not project.exists():  # a second benchmark in the same --out-dir reuses the project
        project = new_project(options, workdir, run_smoke=False).path
        add_component(project, "dataset", "digits", "image-folder")
    with ThreadPoolExecutor(max_workers=2) as pool:
        rows = list(pool.map(lambda seed: one_seed(project, root, seed, args.changed), seeds))
    print("| seed | val accuracy EMA | raw | val loss EMA | raw |")
    print("|---|---|---|---|---|")
    for row in rows:
        ema, raw = row["ema"], row["raw"]
        print(
            f"| {row['seed']} | {ema['accuracy']:.2%} | {raw['accuracy']:.2%} "
            f"| {ema['loss']:.4f} | {raw['loss']:.4f} |"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
