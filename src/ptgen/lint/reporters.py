"""Output formats: text (Ruff-like), json (Ruff's fields), sarif 2.1.0, github annotations."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ptgen import __version__
from ptgen.lint.model import Finding, Severity
from ptgen.lint.registry import RULES

SARIF_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
GITHUB_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def text(findings: list[Finding], unsafe: bool = False) -> str:
    lines = []
    for f in findings:
        mark = " [*]" if f.fixable(unsafe) else ""
        lines.append(f"{f.where}: {f.code}{mark} {f.message}")
    if not findings:
        return "All checks passed!"
    fixable = sum(f.fixable(unsafe) for f in findings)
    lines.append(f"Found {len(findings)} finding{'s' * (len(findings) != 1)}.")
    if fixable:
        lines.append(f"[*] {fixable} fixable with the `--fix` option.")
    return "\n".join(lines)


def statistics(findings: list[Finding], unsafe: bool = False) -> str:
    """One line per code, most frequent first (Ruff's `--statistics`); `[*]` = fixable."""
    counts: dict[str, list[Finding]] = {}
    for finding in findings:
        counts.setdefault(finding.code, []).append(finding)
    rows = sorted(counts.items(), key=lambda item: (-len(item[1]), item[0]))
    lines = [
        f"{len(found):5d}  {code}  {'[*]' if any(f.fixable(unsafe) for f in found) else '[ ]'} "
        f"{found[0].name}"
        for code, found in rows
    ]
    return "\n".join(lines) if lines else "All checks passed!"


def fixes_shown(findings: list[Finding], unsafe: bool = False) -> str:
    """Text output with each fix under its finding: what it does and whether it is applied."""
    lines = text(findings, unsafe).splitlines()
    out = []
    for line, finding in zip(lines, findings, strict=False):  # lines also has a summary
        out.append(line)
        if finding.fix is not None:
            applied = "applied by --fix" if finding.fixable(False) else "needs --unsafe-fixes"
            edits = "; ".join(f"`{e.content}`" for e in finding.fix.edits)
            out.append(f"    fix ({finding.fix.applicability}, {applied}): {finding.fix.message}")
            if edits:
                out.append(f"      -> {edits}")
    return "\n".join(out + lines[len(findings) :])


def fixed_enumeration(applied: dict[str, list[Finding]]) -> str:
    """Per file, how many findings of each code `--fix` fixed (Ruff's `--show-fixes`)."""
    total = sum(len(found) for found in applied.values())
    lines = [f"Fixed {total} finding{'s' * (total != 1)}:"]
    for path, found in applied.items():
        lines.append(f"- {path}:")
        codes: dict[tuple[str, str], int] = {}
        for finding in found:
            codes[(finding.code, finding.name)] = codes.get((finding.code, finding.name), 0) + 1
        lines.extend(f"    {n} x {code} ({name})" for (code, name), n in sorted(codes.items()))
    return "\n".join(lines)


def _json_fix(finding: Finding) -> dict[str, Any] | None:
    if finding.fix is None:
        return None
    edits = [
        {
            "content": e.content,
            "location": {"row": e.row, "column": e.column},
            "end_location": {"row": e.end_row, "column": e.end_column},
        }
        for e in finding.fix.edits
    ]
    return {
        "applicability": finding.fix.applicability,
        "message": finding.fix.message,
        "edits": edits,
    }


def as_json(findings: list[Finding], unsafe: bool = False) -> str:
    rows = [
        {
            "code": f.code,
            "name": f.name,
            "message": f.message,
            "severity": str(f.severity),
            "location": {"row": f.line, "column": f.col},
            "end_location": {"row": f.end_line, "column": f.end_col},
            "fix": _json_fix(f),
            "url": RULES[f.code].url,
            "filename": str(f.path),
            "noqa_row": f.line,
            "cell": f.cell,
        }
        for f in findings
    ]
    return json.dumps(rows, indent=2)


def sarif(findings: list[Finding], unsafe: bool = False) -> str:
    rules = [
        {
            "id": r.code,
            "name": r.name,
            "shortDescription": {"text": r.summary},
            "helpUri": r.url,
            "defaultConfiguration": {"level": SARIF_LEVEL[r.severity]},
        }
        for r in sorted(RULES.values(), key=lambda r: r.code)
    ]
    results = [
        {
            "ruleId": f.code,
            "level": SARIF_LEVEL[f.severity],
            "message": {"text": f.message},
            "locations": [_sarif_location(f)],
            **({"properties": {"cell": f.cell}} if f.cell is not None else {}),
        }
        for f in findings
    ]
    driver = {"name": "ptgen-lint", "version": __version__, "rules": rules}
    log = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{"tool": {"driver": driver}, "results": results}],
    }
    return json.dumps(log, indent=2)


def _sarif_location(f: Finding) -> dict[str, Any]:
    region = {
        "startLine": f.line,
        "startColumn": f.col,
        "endLine": f.end_line,
        "endColumn": f.end_col,
    }
    uri = f.path.as_posix()
    return {"physicalLocation": {"artifactLocation": {"uri": uri}, "region": region}}


def github(findings: list[Finding], unsafe: bool = False) -> str:
    return "\n".join(
        f"::{GITHUB_LEVEL[f.severity]} title=ptgen lint ({f.code}),file={f.path},"
        f"line={f.line},col={f.col},endLine={f.end_line},endColumn={f.end_col}::"
        f"{f.code} {_in_cell(f)}{f.message}"
        for f in findings
    )


def _in_cell(f: Finding) -> str:
    return f"(cell {f.cell}, line {f.line}) " if f.cell is not None else ""


def files_summary(checked: int, skipped: dict[Path, str]) -> str:
    """What was read: replaces "All checks passed!" when some files were not."""
    if not checked and not skipped:
        return "No Python files or notebooks found to check."
    lines = [f"Checked {checked} file{'s' * (checked != 1)}; skipped {len(skipped)} (not read):"]
    lines += [f"  {path}: {why}" for path, why in skipped.items()]
    return "\n".join(lines)


REPORTERS: dict[str, Callable[[list[Finding], bool], str]] = {
    "text": text,
    "json": as_json,
    "sarif": sarif,
    "github": github,
}
