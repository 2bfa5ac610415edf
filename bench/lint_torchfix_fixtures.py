"""Share of TorchFix's expected findings that `ptgen lint` reports on the same line.

TorchFix's own checker fixtures (vendored in tests/data/torchfix with its licence) are
`*.py` files with a `*.txt` of the findings TorchFix expects (`line:col CODE message`).
Each expected finding counts as reported when ptgen reports the mapped code (the table
in docs/lint.md) on the same line of the same file, as often as TorchFix expects it.
Every ptgen rule is selected (`--select ALL`: TorchFix's fixtures also hold its opt-in
TOR4 rules). `--target-torch` decides what is deprecated: the default, 2.5, is the one
release where every TorchFix expectation holds (its AMP deprecations are from 2.4,
`torch.load` defaults to `weights_only=True` from 2.6).

    PYTHONPATH=src python bench/lint_torchfix_fixtures.py [--target-torch 2.5] [--json F]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "data" / "torchfix" / "fixtures"
sys.path.insert(0, str(ROOT / "src"))

from ptgen.lint import LintConfig, lint_paths  # noqa: E402

# TorchFix code -> the ptgen rule that reports the same thing.
PTGEN_CODE = {
    "TOR001": "PGN701",
    "TOR004": "PGN701",
    "TOR101": "PGN702",
    "TOR103": "PGN702",
    "TOR202": "PGN702",
    "TOR002": "PGN109",
    "TOR003": "PGN117",
    "TOR102": "PGN402",
    "TOR104": "PGN703",
    "TOR105": "PGN703",
    "TOR106": "PGN114",
    "TOR107": "PGN115",
    "TOR108": "PGN116",
    "TOR201": "PGN704",
    "TOR203": "PGN602",
    "TOR401": "PGN501",
    "TOR402": "PGN504",
    "TOR901": "PGN603",
}
EXPECTED_RE = re.compile(r"^(\d+):\d+ (TOR\d+)")


@dataclass
class FixtureScore:
    fixture: str
    expected: Counter[tuple[int, str]]  # (line, TorchFix code) -> how often
    reported: Counter[tuple[int, str]]  # (line, ptgen code) -> how often

    def matched(self) -> int:
        return sum(
            min(n, self.reported[(line, PTGEN_CODE.get(code, "?"))])
            for (line, code), n in self.expected.items()
        )

    def missed(self) -> list[str]:
        return [
            f"{self.fixture}:{line} {code}"
            for (line, code), n in sorted(self.expected.items())
            if self.reported[(line, PTGEN_CODE.get(code, "?"))] < n
        ]


def expected_findings(txt: Path) -> Counter[tuple[int, str]]:
    found: Counter[tuple[int, str]] = Counter()
    for line in txt.read_text(encoding="utf-8").splitlines():
        match = EXPECTED_RE.match(line)
        if match:
            found[(int(match.group(1)), match.group(2))] += 1
    return found


def score_fixtures(target: tuple[int, int]) -> list[FixtureScore]:
    """One score per checker fixture, linting them all in one call."""
    sources = sorted(FIXTURES.glob("*/checker/*.py"))
    config = LintConfig(target_torch=target, select=["ALL"])
    reported: dict[Path, Counter[tuple[int, str]]] = {p: Counter() for p in sources}
    for finding in lint_paths(sources, config=config):
        reported[finding.path][(finding.line, finding.code)] += 1
    return [
        FixtureScore(
            str(p.relative_to(FIXTURES)), expected_findings(p.with_suffix(".txt")), reported[p]
        )
        for p in sources
    ]


def summary(scores: list[FixtureScore]) -> tuple[int, int]:
    return sum(s.matched() for s in scores), sum(sum(s.expected.values()) for s in scores)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target-torch", default="2.5")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    target = tuple(int(p) for p in args.target_torch.split(".")[:2])
    scores = score_fixtures(target)  # type: ignore[arg-type]
    for score in scores:
        total = sum(score.expected.values())
        print(f"{score.matched():3d}/{total:<3d} {score.fixture}")
    matched, total = summary(scores)
    missed = [m for s in scores for m in s.missed()]
    for miss in missed:
        print(f"    missed: {miss}")
    print(f"ptgen reports {matched}/{total} ({matched / total:.0%}) of TorchFix's expected")
    print(f"fixture findings on the same line (--target-torch {args.target_torch})")
    if args.json:
        result = {"target": args.target_torch, "matched": matched, "total": total}
        args.json.write_text(json.dumps({**result, "missed": missed}, indent=2))


if __name__ == "__main__":
    main()
