"""Time and peak memory of `ptgen lint` on one generated file, by file size.

Backs the default `--max-file-size` (1 MB): each size is linted in a fresh process with
the limit lifted, and the table shows wall time and peak RSS, so the cost of the largest
file linted by default is a measured figure, not a guess.

    PYTHONPATH=src python bench/bench_lint_limits.py --sizes 0.25 0.5 1 2 4
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
# Typical training code: a model call, a loss, a backward, an optimizer step per function.
UNIT = (
    "def step_{i}(model, batch, optimizer):\n"
    "    x, y = batch\n"
    "    loss = F.cross_entropy(model(x.to(device)), y)\n"
    "    loss.backward()\n"
    "    optimizer.step()\n"
    "    return loss.detach()\n\n"
)
PROBE = """
import resource, sys, time
from pathlib import Path
from ptgen.lint import LintConfig, lint_paths
start = time.perf_counter()
found = lint_paths([Path(sys.argv[1])], config=LintConfig(max_file_size=10**12))
elapsed = time.perf_counter() - start
print(elapsed, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, len(found))
"""


def generated(megabytes: float, folder: Path) -> Path:
    path = folder / f"gen_{megabytes}.py"
    chunks, size, i = [], 0, 0
    while size < megabytes * 1_000_000:
        chunks.append(UNIT.format(i=i))
        size += len(chunks[-1])
        i += 1
    path.write_text("".join(chunks), encoding="utf-8")
    return path


def measure(path: Path) -> tuple[float, int]:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(path)], capture_output=True, text=True, env=env
    )
    seconds, rss_kb, _ = out.stdout.split()
    return float(seconds), int(rss_kb)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=float, nargs="+", default=[0.25, 0.5, 1, 2, 4])
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for megabytes in args.sizes:
            seconds, rss_kb = measure(generated(megabytes, Path(folder)))
            rows.append({"megabytes": megabytes, "seconds": seconds, "peak_rss_mb": rss_kb / 1024})
    print(f"{'file MB':>8} {'lint s':>8} {'peak RSS MB':>12} {'s/MB':>6}")
    for r in rows:
        per = r["seconds"] / r["megabytes"]
        print(f"{r['megabytes']:8.2f} {r['seconds']:8.2f} {r['peak_rss_mb']:12.0f} {per:6.2f}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
