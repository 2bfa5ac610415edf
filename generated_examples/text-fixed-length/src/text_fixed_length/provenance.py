"""Where a checkpoint came from (`record`, in every checkpoint), and MODEL_CARD.md beside
best.pt (`write_card`). Recording never fails a run, nor keeps an environment variable or secret."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import platform
import re
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

import torch

from .config import flatten, load_config

PROJECT = Path(__file__).resolve().parents[2]  # src/PACKAGE/provenance.py in the project
TIME = "%Y-%m-%dT%H:%M:%S%z"
STARTED = time.strftime(TIME)  # the command line imports this module as it starts
# KEY=VALUE (or --set=KEY=VALUE) where KEY names a secret (api_key, hf_token; not tokenizer)
SECRET = re.compile(r"(?is)^((?:--set=)?[^=]*(?:token|key|secret|password)(?![a-z])[^=]*=).*")
redact = functools.partial(SECRET.sub, r"\1<redacted>")  # "a.api_key=x" -> "a.api_key=<redacted>"
WATCHED = (("git", "commit"), ("data", "sha256"))  # a resume warns when one has changed
USES = [  # this project's commands for a checkpoint, for the card
    "python -m {package} evaluate --checkpoint {path} --split test",
    "python -m {package} predict --checkpoint {path} INPUT...",
]


def record(config: dict[str, Any]) -> dict[str, Any]:
    """The run's provenance, JSON-able; `ended` is now (a checkpoint's writing)."""
    data = fingerprint(json.dumps(config["data"], sort_keys=True))
    return {**run_facts(), "data": data, "ended": time.strftime(TIME)}


@functools.cache
def run_facts() -> dict[str, Any]:
    """What holds for the whole run, taken at its first save (every module it uses imported)."""
    owners = metadata.packages_distributions()  # top-level module -> its distributions
    imported = sorted({name for module in list(sys.modules) for name in owners.get(module, [])})
    return {
        "git": git_state(),
        "command": " ".join([f"python -m {__package__}", *map(redact, sys.argv[1:])]),
        "template_version": template_version(),
        "python": platform.python_version(),
        "torch": str(torch.__version__),
        "cuda": torch.version.cuda,
        "host": platform.node(),
        "packages": {name: metadata.version(name) for name in imported},
        "started": STARTED,
    }


def git_state() -> dict[str, Any]:
    """The project's commit, and whether tracked files differ from it (the diff's hash)."""
    try:
        git = functools.partial(subprocess.run, cwd=PROJECT, capture_output=True, check=True)
        commit = git(["git", "rev-parse", "HEAD"], timeout=60).stdout.decode().strip()
        diff = git(["git", "diff", "HEAD"], timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "note": "no git, or not in a git repository with a commit"}
    return {"commit": commit, "dirty": bool(diff), "diff_sha256": hashlib.sha256(diff).hexdigest()}


def template_version() -> str:
    """The ptgen template version of this project (`_commit` of .copier-answers.yml)."""
    answers = PROJECT / ".copier-answers.yml"
    found = answers.is_file() and re.search(r"^_commit: *(\S+)", answers.read_text("utf-8"), re.M)
    return found[1] if found else "unknown"


@functools.cache
def fingerprint(data: str) -> dict[str, Any]:
    """The data, never read: a hash of its files' (name, size, mtime_ns), or of its options."""
    options = json.loads(data)
    root = Path(options.get("root") or "").expanduser()
    if not options.get("root") or not root.exists():  # synthetic data, or data elsewhere
        return {"source": options["name"], "sha256": hashlib.sha256(data.encode()).hexdigest()}
    rows = [
        (path.relative_to(root).as_posix(), path.stat().st_size, path.stat().st_mtime_ns)
        for path in (sorted(root.rglob("*")) if root.is_dir() else [root])
        if path.is_file() and not any(p.startswith(".") for p in path.relative_to(root).parts)
    ]
    digest = hashlib.sha256(json.dumps(rows).encode()).hexdigest()
    where = os.path.relpath(root, PROJECT)
    return {"source": options["name"], "root": where, "files": len(rows), "sha256": digest}


def warn_changes(checkpoint: dict[str, Any], config: dict[str, Any]) -> None:
    """One line when the code's commit or the data changed since `checkpoint` was written."""
    now = {"git": git_state(), "data": fingerprint(json.dumps(config["data"], sort_keys=True))}
    was = checkpoint.get("provenance") or now  # none from an older template: nothing to compare
    changed = [f"{k} {was[k][f]} -> {now[k][f]}" for k, f in WATCHED if was[k][f] != now[k][f]]
    if changed:
        print(f"warning: since the checkpoint was written: {'; '.join(changed)}", file=sys.stderr)


def write_card(path: str | Path, model: torch.nn.Module, saved: dict, test: Any = None) -> None:
    """MODEL_CARD.md (Hugging Face's layout) beside best.pt `path`: its `saved` dict, `test`."""
    config, facts = saved["config"], saved["provenance"]
    where = os.path.relpath(path, PROJECT)
    scores = {"validation": saved.get("best_scores") or {}, "test": test or {}}
    metrics = {f"{s} {k}": v for s, d in scores.items() for k, v in d.items() if type(v) is float}
    default = dict(flatten(load_config().to_dict()))
    changed = [redact(f"{k}={json.dumps(v)}") for k, v in flatten(config) if default.get(k) != v]
    classes = (saved.get("data_state") or {}).get("classes") or ["not named"]
    listed = "\n".join(f"- {name}: {value:.6g}" for name, value in metrics.items())
    uses = "\n".join(use.format(package=__package__, path=where) for use in USES)
    text = f"""---
library_name: pytorch
tags: [pytorch, ptgen, {config["task"]}]
metrics: {json.dumps(list(metrics))}
---

# {__package__}: {config["task"]} (`{where}`, step {saved["step"]})

- data: `{json.dumps(facts["data"])}`; classes: {", ".join(map(str, classes))}
- model: {config["model"]["name"]}, {sum(p.numel() for p in model.parameters()):,} parameters
- training settings that differ from the defaults: `{" ".join(changed) or "none"}`

## Metrics

{listed}

## Provenance

- code: `{json.dumps(facts["git"])}`, ptgen template {facts["template_version"]}
- command: `{facts["command"]}`
- Python {facts["python"]}, torch {facts["torch"]}, CUDA {facts["cuda"]}, on {facts["host"]}
- from {facts["started"]} to {facts["ended"]}; packages: in the checkpoint's `provenance`

## How to use

```bash
{uses}
```

In Python, `{__package__}.evaluate.trained_model("{where}")` rebuilds the model from the
checkpoint alone, and `{__package__}.checkpoint.load_model_state` loads its weights.
"""
    try:
        Path(path).with_name("MODEL_CARD.md").write_text(text, encoding="utf-8")
    except OSError as exc:  # the card is a courtesy: a run never ends over it
        print(f"warning: MODEL_CARD.md not written: {exc}", file=sys.stderr)
