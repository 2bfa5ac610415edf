"""Fixes as input/expected-output pairs: formatting and comments survive."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from ptgen.lint import RULES, LintConfig, fix_paths, lint_source
from ptgen.lint.fixes import fix_source

SAFE: list[tuple[str, str]] = [
    (
        "loader = DataLoader(ds, batch_size=32, persistent_workers=True)  # keep\n",
        "loader = DataLoader(ds, batch_size=32)  # keep\n",
    ),
    (
        """\
        loader = DataLoader(
            ds,
            num_workers=0,  # debugging
            persistent_workers=True,
        )
        """,
        """\
        loader = DataLoader(
            ds,
            num_workers=0,  # debugging
        )
        """,
    ),
    (
        "loader = DataLoader(ds, persistent_workers=True, batch_size=4)\n",
        "loader = DataLoader(ds, batch_size=4)\n",
    ),
    (
        """\
        class Block(nn.Module):
            def forward(self, x, residual):
                x = torch.sigmoid(self.fc(x))
                x += residual  # skip connection
                return x
        """,
        """\
        class Block(nn.Module):
            def forward(self, x, residual):
                x = torch.sigmoid(self.fc(x))
                x = x + residual  # skip connection
                return x
        """,
    ),
    (
        """\
        class Block(nn.Module):
            def forward(self, x, a, b):
                h = self.act(x).tanh()
                h -= a + b
                y = torch.exp(h)
                y *= a * b
                return y
        """,
        """\
        class Block(nn.Module):
            def forward(self, x, a, b):
                h = self.act(x).tanh()
                h = h - (a + b)
                y = torch.exp(h)
                y = y * (a * b)
                return y
        """,
    ),
    (
        """\
        class Block(nn.Module):
            def forward(self, x):
                h = torch.tanh(self.fc(x))
                h = F.relu(h, inplace=True)
                return h
        """,
        """\
        class Block(nn.Module):
            def forward(self, x):
                h = torch.tanh(self.fc(x))
                h = F.relu(h)
                return h
        """,
    ),
    (
        "optimizer.zero_grad(set_to_none=False)\n",
        "optimizer.zero_grad()\n",
    ),
]

UNSAFE: list[tuple[str, str]] = [
    # the forward's input: in place, the caller's tensor changes too; out of place it does not
    (
        """\
        class Block(nn.Module):
            def forward(self, x, residual):
                x += residual
                return x
        """,
        """\
        class Block(nn.Module):
            def forward(self, x, residual):
                x = x + residual
                return x
        """,
    ),
    # another name reads the tensor before the change, so it sees the in-place update
    (
        """\
        class Block(nn.Module):
            def forward(self, x):
                h = torch.sigmoid(x)
                self.cache.append(h)
                h += 1
                return h
        """,
        """\
        class Block(nn.Module):
            def forward(self, x):
                h = torch.sigmoid(x)
                self.cache.append(h)
                h = h + 1
                return h
        """,
    ),
    # relu(inplace=True) returns its input: `x` and the outer tensor are one object
    (
        "x = F.relu(x, inplace=True)\nx += residual\n",
        "x = F.relu(x)\nx = x + residual\n",  # and PGN103's unsafe fix
    ),
    (
        'torch.save(model, "model.pt")  # whole module\n',
        'torch.save(model.state_dict(), "model.pt")  # whole module\n',
    ),
    (
        'state = torch.load("x.pt", map_location="cpu", weights_only=False)\n',
        'state = torch.load("x.pt", map_location="cpu", weights_only=True)\n',
    ),
    (
        "state = torch.load(path, map_location=device)\n",
        "state = torch.load(path, map_location=device, weights_only=True)\n",
    ),
    (
        """\
        state = torch.load(
            path,
            map_location=device,
        )
        """,
        """\
        state = torch.load(
            path,
            map_location=device,
            weights_only=True,
        )
        """,
    ),
]


def fixed(source: str, unsafe: bool, target: tuple[int, int] = (2, 13)) -> str:
    source = textwrap.dedent(source)
    config = LintConfig(target_torch=target)
    return fix_source(source, lint_source(source, Path("m.py"), config), unsafe)[0]


@pytest.mark.parametrize(("before", "after"), SAFE)
def test_safe_fix(before: str, after: str) -> None:
    assert fixed(before, unsafe=False) == textwrap.dedent(after)


@pytest.mark.parametrize(("before", "after"), UNSAFE)
def test_unsafe_fix_needs_unsafe(before: str, after: str) -> None:
    assert fixed(before, unsafe=False, target=(2, 5)) == textwrap.dedent(before)
    assert fixed(before, unsafe=True, target=(2, 5)) == textwrap.dedent(after)


def test_fixed_code_lints_clean_for_the_fixed_rules() -> None:
    for before, _ in SAFE:
        after = fixed(before, unsafe=False)
        left = {f.code for f in lint_source(after, Path("m.py"), LintConfig())}
        assert not left & {"PGN103", "PGN104", "PGN105", "PGN504"}


def test_noqa_is_honoured_by_fixing() -> None:
    source = "optimizer.zero_grad(set_to_none=False)  # noqa: PGN504\n"
    assert fixed(source, unsafe=True) == source


def test_fix_paths_writes_and_reports(tmp_path: Path) -> None:
    target = tmp_path / "train.py"
    target.write_text(
        "opt.zero_grad(set_to_none=False)\ntorch.save(model, 'm.pt')\n", encoding="utf-8"
    )
    preview = fix_paths([tmp_path], write=False)
    assert [len(r.applied) for r in preview] == [1]
    assert "set_to_none" in target.read_text(encoding="utf-8")  # not written
    fix_paths([tmp_path])
    assert target.read_text(encoding="utf-8") == "opt.zero_grad()\ntorch.save(model, 'm.pt')\n"


def test_edits_describe_the_fix() -> None:
    source = "loader = DataLoader(ds, persistent_workers=True)\n"
    findings = lint_source(source, Path("m.py"), LintConfig())
    fix_source(source, findings)
    (edit,) = findings[0].fix.edits  # type: ignore[union-attr]
    assert (edit.content, edit.row, edit.column, edit.end_row, edit.end_column) == (
        "DataLoader(ds)",
        1,
        10,
        1,
        49,
    )


# Look-alikes of every rule with a safe fix, where that fix would change what the code
# does: the finding may stay, but `--fix` (safe only) must leave the file as it is.
WITHHELD: dict[str, list[str]] = {
    "PGN103": [
        # a bare call: without inplace=True it computes a value nobody keeps
        "class B(nn.Module):\n    def forward(self, x):\n        h = torch.tanh(x)\n"
        "        F.relu(h, inplace=True)\n        return h\n",
        # the forward's input: in place, the caller's tensor changes too
        "class B(nn.Module):\n    def forward(self, x):\n        x = F.relu(x, inplace=True)\n"
        "        return x\n",
    ],
    "PGN104": [
        "class B(nn.Module):\n    def forward(self, x, r):\n        x += r\n        return x\n",
        "class B(nn.Module):\n    def forward(self, x):\n        h = torch.exp(x)\n"
        "        saved = h\n        h *= 2\n        return h, saved\n",
    ],
    "PGN105": [
        # a loader of another library may start workers by default
        "loader = FastDataLoader(ds, persistent_workers=True)\n",
    ],
    "PGN504": [
        # parameter server: zeros are accumulated into (the rule does not even fire)
        "def apply(optimizer, params, grads):\n"
        "    optimizer.zero_grad(set_to_none=False)\n"
        "    for p, g in zip(params, grads):\n"
        "        p.grad += g\n",
        "optimizer.zero_grad(set_to_none=False)\nfor p, g in zip(ps, gs):\n    p.grad.add_(g)\n",
        "optimizer.zero_grad(set_to_none=False)\nfor p, g in zip(ps, gs):\n"
        "    p.grad.data.copy_(g)\n",
        "optimizer.zero_grad(set_to_none=False)\nfor p in ps:\n    p.grad[mask] = 0\n",
        # reads .grad: a parameter without gradient would give None instead of zeros
        "optimizer.zero_grad(set_to_none=False)\nnorms = [p.grad.norm() for p in params]\n",
    ],
    "PGN702": [
        "import torch as th\ny = th.ger(a, b)\n",  # `torch` is not a name in this file
        "import torch.nn.functional as F\ny = F.upsample(x, scale_factor=2)\n",
        # one name of the import has no replacement: the statement is left alone
        "from torch.nn.functional import upsample, relu\ny = upsample(relu(x), scale_factor=2)\n",
    ],
}


def test_every_safe_fix_has_look_alikes_where_it_is_withheld() -> None:
    from test_lint_torchfix import WITHHELD as TORCHFIX_WITHHELD

    safe_fixes = {code for code, rule in RULES.items() if rule.fix and not rule.unsafe_fix}
    assert safe_fixes == set(WITHHELD) | set(TORCHFIX_WITHHELD)


@pytest.mark.parametrize(
    ("code", "source"), [(c, s) for c, sources in WITHHELD.items() for s in sources]
)
def test_safe_fix_is_withheld_where_it_would_change_behaviour(code: str, source: str) -> None:
    findings = lint_source(source, Path("m.py"), LintConfig(target_torch=(2, 13)))
    mine = [f for f in findings if f.code == code]
    assert all(f.fix is None or f.fix.applicability == "unsafe" for f in mine)
    assert fixed(source, unsafe=False) == source


def test_grad_accumulating_code_is_not_flagged_by_pgn504() -> None:
    source = WITHHELD["PGN504"][0]
    assert "PGN504" not in {f.code for f in lint_source(source, Path("ps.py"), LintConfig())}
    plain = "optimizer.zero_grad(set_to_none=False)\nloss.backward()\noptimizer.step()\n"
    assert (
        fixed(plain, unsafe=False) == "optimizer.zero_grad()\nloss.backward()\noptimizer.step()\n"
    )


def test_save_fix_is_not_offered_when_the_file_loads_a_whole_module() -> None:
    source = (
        'torch.save(model, "m.pt")\n'
        "def restore(f):\n    model = torch.load(f, weights_only=False)\n    model.eval()\n"
    )
    (finding,) = [f for f in lint_source(source, Path("m.py"), LintConfig()) if f.code == "PGN401"]
    assert finding.fix is None
    assert "PGN402" in {f.code for f in lint_source(source, Path("m.py"), LintConfig())}
    assert "torch.save(model," in fixed(source, unsafe=True)
    other = 'torch.save(model, "m.pt")\nstate = torch.load(f, weights_only=True)\n'
    assert "model.state_dict()" in fixed(other, unsafe=True)


def test_weights_only_fix_is_not_offered_when_the_file_saves_a_whole_module() -> None:
    source = 'torch.save(model, "m.pt")\nmodel = torch.load("m.pt", weights_only=False)\n'
    found = {f.code: f for f in lint_source(source, Path("m.py"), LintConfig())}
    assert found["PGN402"].fix is None and found["PGN401"].fix is None
    assert fixed(source, unsafe=True) == source
