"""Lint speed: `ptgen lint` against TorchFix on the same tree of real PyTorch code.

Both tools run side by side in one process of this script, alternating, `--repeat`
times; the table shows every run, the medians and the ratio, in wall time (the headline)
and in CPU time of each command and its children (less moved by other jobs on a shared
machine; TorchFix spreads its work over all cores), and the load average around the runs.
By default the tree is the `torch/optim` package of the installed torch (found without
importing torch).

    PYTHONPATH=src python bench/bench_lint.py --repeat 3 --json /tmp/lint_speed.json
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"


def default_tree() -> Path:
    spec = importlib.util.find_spec("torch")  # locates the package; does not import it
    if spec is None or not spec.submodule_search_locations:
        sys.exit("torch is not installed; pass --tree DIR")
    return Path(list(spec.submodule_search_locations)[0]) / "optim"


def count_lines(tree: Path) -> tuple[int, int]:
    files = list(tree.rglob("*.py"))
    return len(files), sum(len(p.read_bytes().splitlines()) for p in files)


def timed(command: list[str]) -> tuple[float, float]:
    """Wall time of the whole command, and the CPU time (user + system) of it and its
    children: on a shared machine the first moves with the load, the second much less."""
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def commands(tree: Path) -> dict[str, list[str]]:
    torchfix = shutil.which("torchfix")
    if torchfix is None:
        sys.exit("torchfix is not installed: pip install torchfix")
    return {
        "ptgen lint": [sys.executable, "-m", "ptgen", "lint", str(tree), "--exit-zero"],
        "torchfix": [torchfix, str(tree)],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, default=None, help="directory of Python files")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = parser.parse_args()
    tree = args.tree or default_tree()
    files, lines = count_lines(tree)
    load = os.getloadavg()
    runs: dict[str, list[float]] = {name: [] for name in commands(tree)}
    cpu: dict[str, list[float]] = {name: [] for name in commands(tree)}
    for _ in range(args.repeat):
        for name, command in commands(tree).items():
            wall, used = timed(command)
            runs[name].append(wall)
            cpu[name].append(used)
    medians = {name: statistics.median(times) for name, times in runs.items()}
    cpu_medians = {name: statistics.median(times) for name, times in cpu.items()}
    ratio = medians["torchfix"] / medians["ptgen lint"]
    cpu_ratio = cpu_medians["torchfix"] / cpu_medians["ptgen lint"]
    print(f"tree: {tree} ({files} files, {lines} lines), {args.repeat} runs each")
    print(
        f"load average before: {' '.join(f'{x:.2f}' for x in load)}, after: "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    for name, times in runs.items():
        shown = " ".join(f"{t:7.2f}" for t in times)
        print(f"{name:12s} runs [s]: {shown}   median {medians[name]:7.2f} s")
    for name, times in cpu.items():
        shown = " ".join(f"{t:7.2f}" for t in times)
        print(f"{name:12s} CPU  [s]: {shown}   median {cpu_medians[name]:7.2f} s")
    print(f"ptgen lint is {ratio:.1f}x faster than TorchFix (median wall time)")
    print(f"ptgen lint uses {cpu_ratio:.1f}x less CPU time than TorchFix (median)")
    if args.json:
        result = {"tree": str(tree), "files": files, "lines": lines, "runs": runs, "cpu": cpu}
        summary = {"medians": medians, "ratio": ratio, "cpu_medians": cpu_medians}
        args.json.write_text(json.dumps({**result, **summary, "cpu_ratio": cpu_ratio}, indent=2))


if __name__ == "__main__":
    main()
