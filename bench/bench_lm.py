"""Language modelling on real text: a generated `language-modeling` project (gpt model,
text-corpus data, every default but `train.max_steps`) against a hand-written bigram model
on the same split and tokenisation.

Data: the Debian `fortunes` package (`apt-get install -y fortunes`), every fortune file of
/usr/share/games/fortunes (not the .dat indexes, not the .u8 copies) joined in name order.
The project's own text-corpus dataset makes the split (the last 10% held out) and the
byte tokens; the bigram model is counted on the project's training tokens and scored on
exactly the validation targets that `evaluate` scores (add-alpha smoothing, alpha chosen
on a slice of the training text).

    PYTHONPATH=src python bench/bench_lm.py --max-steps 600 --json bench/bench_lm.json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
FORTUNES = Path("/usr/share/games/fortunes")
PACKAGE = "lmbench"


def corpus(where: Path) -> tuple[Path, int, int]:
    files = [
        p
        for p in sorted(FORTUNES.iterdir())
        if p.is_file() and not p.is_symlink() and p.suffix not in (".dat", ".u8")
    ]
    if not files:
        raise SystemExit(f"no fortune files in {FORTUNES}: apt-get install -y fortunes")
    text = "\n".join(p.read_text(encoding="utf-8") for p in files)
    path = where / "fortunes.txt"
    path.write_text(text, encoding="utf-8")
    return path, len(files), len(text)


def bigram_nats(
    train: torch.Tensor, contexts: torch.Tensor, targets: torch.Tensor, vocab: int, alpha: float
) -> float:
    """Mean negative log-likelihood (nats/token) of `targets` after `contexts`."""
    counts = torch.zeros(vocab, vocab, dtype=torch.float64)
    counts.index_put_(
        (train[:-1], train[1:]), torch.ones(len(train) - 1, dtype=torch.float64), accumulate=True
    )
    probs = (counts + alpha) / (counts + alpha).sum(
        dim=1, keepdim=True
    )  # (V, V) rows: P(next|prev)
    return float(-probs[contexts, targets].log().mean())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-steps", type=int, default=600)
    parser.add_argument("--json", default=str(Path(__file__).with_suffix(".json")))
    args = parser.parse_args()
    from ptgen.components import add_component
    from ptgen.project import ProjectOptions, new_project

    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        text, n_files, n_chars = corpus(scratch)
        project = new_project(
            ProjectOptions(name=PACKAGE, task="language-modeling"), scratch, run_smoke=False
        ).path
        add_component(project, "dataset", "corpus", "text-corpus")
        env = dict(os.environ, PYTHONPATH=str(project / "src"))
        sets = [
            "data.name=corpus",
            f"data.root={text}",
            f"train.max_steps={args.max_steps}",
            "train.device=cpu",
            f"train.out_dir={scratch / 'run'}",
            "train.log_every=100",
        ]
        command = [sys.executable, "-m", PACKAGE, "train"]
        command += [a for s in sets for a in ("--set", s)]
        start = time.perf_counter()
        subprocess.run(command, cwd=project, env=env, check=True)
        train_s = time.perf_counter() - start
        evaluate = [
            sys.executable,
            "-m",
            PACKAGE,
            "evaluate",
            "--checkpoint",
            str(scratch / "run" / "best.pt"),
            "--json",
        ]
        out = subprocess.run(
            evaluate, cwd=project, env=env, check=True, capture_output=True, text=True
        ).stdout
        gpt = json.loads(out.strip().splitlines()[-1])

        sys.path.insert(0, str(project / "src"))
        from lmbench.config import load_config  # noqa: E402
        from lmbench.data import build_data  # noqa: E402

        config = load_config(overrides=sets[:2])
        bundle = build_data(config.data, config.train.seed)
        train, val = bundle.train.tokens.long(), bundle.val.tokens.long()
        block, blocks = bundle.val.block_size, len(bundle.val)
        scored = blocks * block  # evaluate scores targets val[1 : 1 + scored]
        contexts, targets = val[:scored], val[1 : scored + 1]
        held = len(train) // 10  # choose alpha on the end of the training text
        fit, tune = train[:-held], train[-held:]
        alpha = min(
            (10.0**e for e in range(-4, 1)),
            key=lambda a: bigram_nats(fit, tune[:-1], tune[1:], 256, a),
        )
        nats = bigram_nats(train, contexts, targets, 256, alpha)
        unigram = torch.bincount(train, minlength=256).double() + 1
        uni_nats = float(-(unigram / unigram.sum())[targets].log().mean())

    result = {
        "data": f"Debian fortunes, {n_files} files of {FORTUNES}",
        "chars": n_chars,
        "train_tokens": len(train),
        "val_tokens_scored": scored,
        "tokenizer": "byte",
        "max_steps": args.max_steps,
        "train_seconds": round(train_s, 1),
        "torch_threads": torch.get_num_threads(),
        "gpt": {"nats_per_token": gpt["nats_per_token"], "perplexity": gpt["perplexity"]},
        "bigram": {"alpha": alpha, "nats_per_token": nats, "perplexity": math.exp(nats)},
        "unigram": {"nats_per_token": uni_nats, "perplexity": math.exp(uni_nats)},
    }
    Path(args.json).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print("| model | val nats/token | val perplexity |\n|---|---|---|")
    for name in ("unigram", "bigram", "gpt"):
        print(
            f"| {name} | {result[name]['nats_per_token']:.4f} | {result[name]['perplexity']:.2f} |"
        )
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
