"""Precision and recall of PGN701/PGN702 against TorchFix 0.7 on hand-labelled real uses.

The labels (bench/lint_deprecated_labels.txt) say, for each place in the corpus that
mentions a deprecated or removed torch API, whether it is a real use on torch 2.13.
Findings of either tool at a labelled "yes" are hits; at a "no", false positives; any
finding at an unlabelled place is printed for review (and counted as a false positive
until labelled).

    bash bench/fetch_lint_corpus.sh /tmp/lintreal/src
    (cd /tmp/lintreal && torchfix src > /tmp/torchfix.txt)   # slow: minutes
    PYTHONPATH=src python bench/lint_deprecated_recall.py --tree /tmp/lintreal/src \\
        --torchfix-output /tmp/torchfix.txt
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
LABELS = Path(__file__).resolve().parent / "lint_deprecated_labels.txt"
TORCHFIX_DEPRECATION = {"TOR001", "TOR004", "TOR101", "TOR103"}


def labels() -> dict[str, bool]:
    found = {}
    for line in LABELS.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            place, verdict = line.split()[:2]
            found[place] = verdict == "yes"
    return found


def ptgen_places(tree: Path) -> set[str]:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    command = [sys.executable, "-m", "ptgen", "lint", str(tree), "--select", "PGN7"]
    out = subprocess.run(
        command + ["--output-format", "json", "--exit-zero"],
        capture_output=True,
        text=True,
        env=env,
    )
    rows = json.loads(out.stdout)
    return {f"{Path(r['filename']).relative_to(tree)}:{r['location']['row']}" for r in rows}


def torchfix_places(tree: Path, output: Path) -> set[str]:
    places = set()
    for line in output.read_text(encoding="utf-8").splitlines():
        match = re.match(r"(.+?):(\d+):\d+:? (TOR\d+)", line)
        if match and match.group(3) in TORCHFIX_DEPRECATION:
            path = Path(match.group(1))
            path = path if path.is_absolute() else tree.parent / path  # run from tree's parent
            places.add(f"{path.resolve().relative_to(tree.resolve())}:{match.group(2)}")
    return places


def score(name: str, places: set[str], truth: dict[str, bool]) -> None:
    positives = {p for p, real in truth.items() if real}
    hits = places & positives
    false = places - positives
    print(
        f"{name:10s} findings {len(places):3d}  true {len(hits):3d}  false {len(false):3d}  "
        f"recall {len(hits)}/{len(positives)}"
    )
    for place in sorted(false):
        why = "labelled no" if place in truth else "unlabelled"
        print(f"    false or unlabelled: {place} ({why})")
    for place in sorted(positives - places):
        print(f"    missed: {place}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, default=Path("/tmp/lintreal/src"))
    parser.add_argument("--torchfix-output", type=Path, required=True)
    args = parser.parse_args()
    truth = labels()
    score("ptgen lint", ptgen_places(args.tree), truth)
    score("TorchFix", torchfix_places(args.tree, args.torchfix_output), truth)


if __name__ == "__main__":
    main()
