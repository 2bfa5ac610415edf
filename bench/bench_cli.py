"""The CLI: `ptgen --help` vs `copier --help`, `ptgen new project` vs a bare `copier copy`.

Every command runs as a fresh subprocess (interpreter start-up and imports included),
the two sides of each comparison interleaved, `--repeats` times; medians and the
median of per-pair ratios, of wall time and of CPU time (user + system of the command
and every process it started: on a shared machine CPU time moves less with the load).
The bare `copier copy` renders the same template source (ptgen's template cache, same
commit) with the same answers; `ptgen new project --no-smoke` also renders and
black-formats the model and dataset components and makes the first git commit.

`--parts` adds where `ptgen new project` spends its time: the same steps, one after
another in fresh processes, each timed alone.

    PYTHONPATH=src python bench/bench_cli.py --repeats 7 --parts 5 --json /tmp/cli.json
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import ROOT, interleaved, machine, median, print_table, write_json

ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "PYTHONDONTWRITEBYTECODE": "1"}
Times = tuple[float, float]  # wall, CPU seconds

# One `ptgen new project --no-smoke` taken apart, in the order it runs; prints JSON.
PARTS = """
import json, resource, sys, time
from pathlib import Path

def clock():
    own, kids = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return time.perf_counter(), own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime

parts, last = {}, clock()
def mark(name):
    global last
    now = clock()
    parts[name] = [now[0] - last[0], now[1] - last[1]]
    last = now

import ptgen.cli, ptgen.project as p
mark("import ptgen (CLI, library)")
import copier
mark("import copier")
staged = Path(sys.argv[1]) / "demo"
job = p._Job.of(p.ProjectOptions(name="demo"))
p.resolve_template()
mark("template cache check")
p._copy_template(job, staged)
mark("copier copy (in process)")
import black
mark("import black")
project = p.ProjectInfo(staged, "demo", job.package, job.task.name, job.features)
plans = [
    p.plan_component(project, "model", job.model_kind, job.model_kind),
    p.plan_component(project, "dataset", job.dataset_name, job.dataset_kind),
]
mark("render + black-format the 2 components")
for plan in plans:
    plan.apply()
mark("write the components")
p._first_commit(staged, "demo", print)
mark("git init + add + commit")
print(json.dumps(parts))
"""


def timed(command: list[str], cwd: Path | None = None) -> Times:
    before = _children_cpu()
    start = time.perf_counter()
    result = subprocess.run(command, cwd=cwd, env=ENV, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        sys.exit(f"failed: {' '.join(command)}\n{result.stderr}")
    return elapsed, _children_cpu() - before


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def fresh_dir(parent: Path) -> Path:
    """An empty output directory per run, so no run finds another's project."""
    return Path(tempfile.mkdtemp(dir=parent))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--parts", type=int, default=0, help="runs of the breakdown (0: none)")
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
        parts = [run_parts(fresh_dir(work)) for _ in range(args.parts)]
        results = {}
        for name, contenders in groups.items():
            interleaved(contenders, 1)  # warm-up: file caches, .pyc
            results[name] = interleaved(contenders, args.repeats)
    report(args, results, parts)


def run_parts(output: Path) -> dict[str, Times]:
    proc = subprocess.run(
        [sys.executable, "-c", PARTS, str(output)], env=ENV, capture_output=True, text=True
    )
    if proc.returncode != 0:
        sys.exit(f"the breakdown failed:\n{proc.stderr}")
    return {name: (wall, cpu) for name, (wall, cpu) in json.loads(proc.stdout).items()}


def report(
    args: argparse.Namespace,
    results: dict[str, dict[str, list[Times]]],
    parts: list[dict[str, Times]],
) -> None:
    rows, summary = [], {}
    for group, times in results.items():
        (a, ta), (b, tb) = times.items()
        ratios = [median([x[i] / y[i] for x, y in zip(ta, tb, strict=True)]) for i in (0, 1)]
        walls, cpus = ({k: median([t[i] for t in v]) for k, v in times.items()} for i in (0, 1))
        summary[group] = {"median_wall_s": walls, "median_cpu_s": cpus, "paired_ratio": ratios}
        rows.append([a, walls[a], cpus[a], f"{ratios[0]:.2f}x", f"{ratios[1]:.2f}x"])
        rows.append([b, walls[b], cpus[b], "1", "1"])
    print(f"\n{args.repeats} interleaved runs each, the whole command (median of pairs: ratio)\n")
    print_table(["command", "wall [s]", "CPU [s]", "wall ratio", "CPU ratio"], rows)
    if parts:
        print(f"\n`ptgen new project --no-smoke` step by step, median of {len(parts)} runs\n")
        print_table(
            ["step", "wall [s]", "CPU [s]"],
            [
                [n, median([p[n][0] for p in parts]), median([p[n][1] for p in parts])]
                for n in parts[0]
            ],
        )
    write_json(
        args.json,
        {
            "benchmark": "cli",
            "settings": {"repeats": args.repeats, "parts": args.parts},
            "machine": machine(),
            "times_s": results,
            "summary": summary,
            "parts_s": parts,
        },
    )


if __name__ == "__main__":
    main()
