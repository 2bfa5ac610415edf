"""Recall of the new lint rules on real code: plant each bug once in a real file.

Each mutation below is hand-written: one real file of the corpus (bench/fetch_lint_corpus.sh),
one exact piece of its text, the buggy version of it, and the rule that should catch it.
The script applies each mutation to a copy, lints original and copy with `ptgen lint`
and TorchFix, and counts a bug as found when the expected code appears on the mutated
copy and not on the original. Deprecated APIs are measured separately (docs/lint.md).

    bash bench/fetch_lint_corpus.sh /tmp/lintreal/src
    PYTHONPATH=src python bench/lint_recall.py --tree /tmp/lintreal/src --json /tmp/recall.json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
BIC = "avalanche_lib/avalanche/training/plugins/bic.py"
D2L = "d2l/d2l/torch.py"
UPDATABLE = "avalanche_lib/examples/updatable_objects.py"
SE = "timm/timm/layers/squeeze_excite.py"
MLP = "timm/timm/layers/mlp.py"
# (file, original text, planted bug, rule that should find it, TorchFix code or "")
MUTATIONS: list[tuple[str, str, str, str, str]] = [
    (
        "timm/timm/loss/poly_loss.py",
        "F.binary_cross_entropy_with_logits(x, y, reduction='none')",
        "F.binary_cross_entropy_with_logits(p, y, reduction='none')",
        "PGN107",
        "",
    ),
    (
        BIC,
        "loss = torch.nn.functional.cross_entropy(outputs, y_real)",
        "loss = torch.nn.functional.cross_entropy(torch.softmax(outputs, 1), y_real)",
        "PGN106",
        "",
    ),
    (BIC, "                bic_optimizer.zero_grad()\n", "", "PGN108", ""),
    (
        BIC,
        "        for param in self.bias_layer.parameters():\n"
        "            param.requires_grad = True",
        "        for param in self.bias_layer.parameters():\n            param.require_grad = True",
        "PGN109",
        "TOR002",
    ),
    (
        "stable_baselines3/stable_baselines3/ppo/ppo.py",
        "                self.policy.optimizer.zero_grad()\n",
        "",
        "PGN108",
        "",
    ),
    (
        D2L,
        "            loss = self.model.training_step(self.prepare_batch(batch))\n"
        "            self.optim.zero_grad()\n            with torch.no_grad():\n",
        "            self.optim.zero_grad()\n            with torch.no_grad():\n"
        "                loss = self.model.training_step(self.prepare_batch(batch))\n",
        "PGN110",
        "",
    ),
    (
        UPDATABLE,
        "DataLoader(exp.dataset.eval(), batch_size=512, num_workers=8)",
        "DataLoader(exp.dataset.eval(), batch_size=512, num_workers=8, shuffle=True)",
        "PGN303",
        "",
    ),
    (
        "torchtune/recipes/full_finetune_single_device.py",
        "            self.epochs_run += 1\n",
        "            self._model.eval()\n            self.epochs_run += 1\n",
        "PGN111",
        "",
    ),
    (
        SE,
        "        x_se = self.fc(x_se)\n        return x * self.gate(x_se)",
        "        x_se = self.fc(x_se)\n        x *= self.gate(x_se)\n        return x",
        "PGN104",
        "",
    ),
    (
        SE,
        "        x_se = self.act(self.bn(x_se))\n        x_se = self.fc2(x_se)\n"
        "        return x * self.gate(x_se)",
        "        x_se = self.act(self.bn(x_se))\n        x_se = torch.sigmoid(self.fc2(x_se))\n"
        "        x_se += 0.5\n        return x * x_se",
        "PGN104",
        "",
    ),
    (
        SE,
        "        x_se = x.mean((1, 2), keepdims=True)",
        "        x = F.relu(x, inplace=True)\n        x_se = x.mean((1, 2), keepdims=True)",
        "PGN103",
        "",
    ),
    (
        MLP,
        "        x = self.fc2(x)\n        x = self.drop2(x)\n        return x\n\n\nclass GluMlp",
        "        x = nn.Linear(x.shape[-1], 8)(x)\n        x = self.drop2(x)\n"
        "        return x\n\n\n"
        "class GluMlp",
        "PGN113",
        "",
    ),
    (
        UPDATABLE,
        "            agent_state.opt.step()\n",
        "            agent_state.opt.step()\n"
        '        torch.save(agent_state.model.state_dict(), "c.pt")\n',
        "PGN404",
        "",
    ),
]


def ptgen_codes(path: Path) -> list[str]:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    command = [sys.executable, "-m", "ptgen", "lint", str(path), "--output-format", "json"]
    out = subprocess.run(command + ["--exit-zero"], capture_output=True, text=True, env=env)
    return [row["code"] for row in json.loads(out.stdout)]


def torchfix_codes(path: Path) -> list[str]:
    torchfix = shutil.which("torchfix")
    if torchfix is None:
        sys.exit("torchfix is not installed: pip install torchfix==0.7.0")
    out = subprocess.run([torchfix, str(path)], capture_output=True, text=True)
    return re.findall(r"\b(TOR\d+)\b", out.stdout)


def new(before: list[str], after: list[str], code: str) -> bool:
    return bool(code) and after.count(code) > before.count(code)


def measure(tree: Path, folder: Path) -> list[dict[str, object]]:
    rows, originals = [], {}
    for i, (name, old, bug, code, tor) in enumerate(MUTATIONS):
        text = (tree / name).read_text(encoding="utf-8")
        assert text.count(old) == 1, f"{name}: the original text must occur once"
        if name not in originals:
            original = folder / f"o{i}_{Path(name).name}"
            original.write_text(text, encoding="utf-8")
            originals[name] = (ptgen_codes(original), torchfix_codes(original))
        mutated = folder / f"m{i}_{Path(name).name}"
        mutated.write_text(text.replace(old, bug), encoding="utf-8")
        ours = new(originals[name][0], ptgen_codes(mutated), code)
        theirs = new(originals[name][1], torchfix_codes(mutated), tor)
        rows.append({"file": name, "rule": code, "ptgen": ours, "torchfix": theirs})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, default=Path("/tmp/lintreal/src"))
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        rows = measure(args.tree, Path(folder))
    for row in rows:
        print(
            f"{row['rule']}  ptgen {'found' if row['ptgen'] else 'MISSED':6s}  "
            f"torchfix {'found' if row['torchfix'] else '-':6s}  {row['file']}"
        )
    found = sum(bool(r["ptgen"]) for r in rows)
    theirs = sum(bool(r["torchfix"]) for r in rows)
    print(f"recall: ptgen lint {found}/{len(rows)}, TorchFix 0.7 {theirs}/{len(rows)}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
