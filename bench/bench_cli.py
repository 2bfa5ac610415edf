"""The CLI: `ptgen --help` vs `copier --help`, `ptgen new project` vs a bare `copier copy`.

Every command runs as a fresh subprocess (interpreter start-up and imports included),
the two sides of each comparison interleaved, `--repeats` times; medians and the
median of per-pair ratios. The bare `copier copy` renders the same template source
(ptgen's template cache, same commit) with the same answers; `ptgen new project
--no-smoke` also renders the model and dataset components, formats the tree with
black and makes the first git commit.

    PYTHONPATH=src python bench/bench_cli.py --repeats 11 --json /tmp/cli.json
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import ROOT, interleaved, machine, median, print_table, write_json

ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "PYTHONDONTWRITEBYTECODE": "1"}


def timed(command: list[str], cwd: Path | None = None) -> float:
    start = time.perf_counter()
    result = subprocess.run(command, cwd=cwd, env=ENV, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        sys.exit(f"failed: {' '.join(command)}\n{result.stderr}")
    return elapsed


def fresh_dir(parent: Path) -> Path:
    """An empty output directory per run, so no run finds another's project."""
    path = Path(tempfile.mkdtemp(dir=parent))
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=11)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    copier = shutil.which("copier")
    if copier is None:
        sys.exit("copier is not installed")
    from ptgen.template_source import resolve_template

    ref = resolve_template()  # builds the template cache once, outside the timing
    ptgen = [sys.executable, "-m", "ptgen"]
    with tempfile.TemporaryDirectory(prefix="bench-cli-") as tmp:
        work = Path(tmp)
        copy = [copier, "copy", "--defaults", "--quiet", "-d", "project_name=demo"]
        if ref.vcs_ref:
            copy += ["--vcs-ref", ref.vcs_ref]
        groups = {
            "help": {
                "ptgen --help": lambda: timed([*ptgen, "--help"]),
                "copier --help": lambda: timed([copier, "--help"]),
            },
            "new project": {
                "ptgen new project --no-smoke": lambda: timed(
                    [*ptgen, "new", "project", "demo", "--no-smoke"], cwd=fresh_dir(work)
                ),
                "copier copy (same template)": lambda: timed(
                    [*copy, str(ref.src_path), str(fresh_dir(work) / "demo")]
                ),
            },
        }
        results = {}
        for name, contenders in groups.items():
            interleaved(contenders, 1)  # warm-up: file caches, .pyc
            results[name] = interleaved(contenders, args.repeats)
    report(args, results)


def report(args: argparse.Namespace, results: dict[str, dict[str, list[float]]]) -> None:
    rows, summary = [], {}
    for group, times in results.items():
        (a, ta), (b, tb) = times.items()
        paired = median([x / y for x, y in zip(ta, tb, strict=True)])
        summary[group] = {"median_s": {a: median(ta), b: median(tb)}, "paired_ratio": paired}
        rows.append([a, median(ta), f"{paired:.2f}x of {b}"])
        rows.append([b, median(tb), "1"])
    print(f"\n{args.repeats} interleaved runs each, wall time of the whole command\n")
    print_table(["command", "median [s]", "time ratio (median of pairs)"], rows)
    write_json(
        args.json,
        {
            "benchmark": "cli",
            "settings": {"repeats": args.repeats},
            "machine": machine(),
            "times_s": results,
            "summary": summary,
        },
    )


if __name__ == "__main__":
    main()
