"""Issue 20's budget: `ptgen new project` + `python -m PKG sweep --trials 4` on the synthetic
data (the project's own configs/sweep.toml, nothing changed) in under two minutes on 2 cores.

Prints the wall and CPU time of each part, the load average before and after (the machine
is shared: CPU time / cores is what an idle machine's wall time would approach), and writes
bench/bench_sweep.json. Needs optuna and sqlalchemy (ptgen's dev extra has them).

    python bench/bench_sweep.py
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def timed(command: list[str], cwd: Path, env: dict[str, str]) -> dict[str, float]:
    """Wall and CPU seconds (user + system, children included) of one command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, cwd=cwd, env=env, check=True, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": round(wall, 1), "cpu_s": round(cpu, 1)}


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        env = dict(os.environ)
        load_before = os.getloadavg()
        new = timed(["ptgen", "new", "project", "sweepdemo", "--no-smoke"], root, env)
        project = root / "sweepdemo"
        env["PYTHONPATH"] = str(project / "src")
        sweep = timed([sys.executable, "-m", "sweepdemo", "sweep", "--trials", "4"], project, env)
        load_after = os.getloadavg()
        out = project / "runs" / "sweep"
        assert (out / "study.db").is_file() and (out / "best.toml").is_file()
    total_wall = new["wall_s"] + sweep["wall_s"]
    total_cpu = new["cpu_s"] + sweep["cpu_s"]
    result = {
        "new_project": new,
        "sweep_4_trials": sweep,
        "total": {"wall_s": round(total_wall, 1), "cpu_s": round(total_cpu, 1)},
        "cpu_per_core_s": round(total_cpu / 2, 1),
        "cores": os.cpu_count(),
        "load_1min_before_after": [round(load_before[0], 2), round(load_after[0], 2)],
    }
    print(f"{'part':<16} {'wall [s]':>9} {'CPU [s]':>8}")
    for name in ("new_project", "sweep_4_trials", "total"):
        print(f"{name:<16} {result[name]['wall_s']:>9} {result[name]['cpu_s']:>8}")
    print(f"CPU / 2 cores: {result['cpu_per_core_s']} s; load {result['load_1min_before_after']}")
    Path(__file__).with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
