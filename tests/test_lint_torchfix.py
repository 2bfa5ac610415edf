"""The rules that make `ptgen lint` a superset of TorchFix (issue 33), and the measure.

Each rule has snippets that fire and look-alikes that must not (merged into
test_lint.py's BAD/GOOD check), fixes as before/after pairs, and look-alikes where the
safe fix is withheld. The last test lints TorchFix's own checker fixtures
(tests/data/torchfix) and requires >= 90% of its expected findings on the same line.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import textwrap
from pathlib import Path

import pytest

from ptgen.lint import LintConfig, lint_source
from ptgen.lint.fixes import fix_source

BENCH = Path(__file__).resolve().parents[1] / "bench" / "lint_torchfix_fixtures.py"
TARGET = (2, 5)  # every TorchFix expectation holds for torch 2.5 (see the bench script)


def codes(source: str, target: tuple[int, int] = TARGET, name: str = "train.py") -> list[str]:
    config = LintConfig(target_torch=target, select=["ALL"])
    return [f.code for f in lint_source(textwrap.dedent(source), Path(name), config)]


def fixed(source: str, unsafe: bool = False, target: tuple[int, int] = TARGET) -> str:
    source = textwrap.dedent(source)
    findings = lint_source(source, Path("m.py"), LintConfig(target_torch=target, select=["ALL"]))
    return fix_source(source, findings, unsafe)[0]


BAD: list[tuple[str, str]] = [
    ("PGN114", "import torch\ny = torch.log(1 + x)\n"),
    ("PGN114", "import torch\ny = torch.log(p + 1.0)\nz = (p + 1).log()\n"),
    ("PGN115", "import torch\ny = torch.exp(x) - 1\n"),
    ("PGN115", "y = x.exp() - 1.0\n"),
    ("PGN116", "import torch\ny = torch.log(torch.sum(torch.exp(x), dim=1))\n"),
    ("PGN116", "from torch import log, sum, exp\ny = log(sum(exp(x - m), 1, keepdim=True))\n"),
    ("PGN117", "import torch.utils.checkpoint\ny = torch.utils.checkpoint.checkpoint(f, x)\n"),
    ("PGN117", "from torch.utils.checkpoint import checkpoint as ckpt\ny = ckpt(self.block, x)\n"),
    ("PGN703", "import torch\nb = torch.utils.data._utils.collate.default_collate(b)\n"),
    ("PGN703", "from torch.utils.data._utils.collate import default_convert\n"),
    ("PGN704", "import torchvision\nm = torchvision.models.resnet50(pretrained=True)\n"),
    ("PGN704", "from torchvision.models import resnet18\nm = resnet18(True)\n"),
    (
        "PGN704",
        "from torchvision import models\n"
        "m = models.detection.fcos_resnet50_fpn(pretrained_backbone=flag)\n",
    ),
    ("PGN602", "import torchvision.models as models\n"),
    ("PGN603", "import torch\nlib = torch.library.Library('aten', 'IMPL')\n"),
    # new entries of PGN702's table, and a use of a name imported from torch
    ("PGN702", "import torch\n@torch.cuda.amp.custom_fwd\ndef f(x):\n    return x\n"),
    ("PGN702", "from torchvision.transforms import v2\nt = v2.ToTensor()\n"),
    ("PGN702", "from torch import qr as old_qr\nq, r = old_qr(a)\n"),
    # PGN501 now also counts an explicit `num_workers=0` (TorchFix's TOR401)
    ("PGN501", "loader = DataLoader(ds, batch_size=8, num_workers=0)\n"),
    ("PGN501", "loader = DataLoader(ds, 8, True, None, None, 0)\n"),
]

GOOD: list[tuple[str, str]] = [
    (
        "PGN114",
        "import torch, math\ny = torch.log1p(x)\nz = torch.log(2 + x)\nw = math.log(1 + x)\n",
    ),
    ("PGN115", "import torch\ny = torch.expm1(x)\nz = torch.exp(x) - 2\nw = 1 - torch.exp(x)\n"),
    (
        "PGN116",
        """
        import torch
        y = torch.logsumexp(x, 1)
        y = torch.log(torch.sum(torch.exp(x), 1) + 2.5)
        y = torch.log(torch.sum(torch.exp(x), dim=None))  # logsumexp needs a dim
        y = torch.log(torch.sum(torch.exp(x)))
        y = torch.sum(torch.log(torch.exp(x)), 1)
    """,
    ),
    (
        "PGN117",
        """
        from torch.utils.checkpoint import checkpoint
        y = checkpoint(f, x, use_reentrant=False)
        z = checkpoint(f, x, **options)
        w = deepspeed.checkpointing.checkpoint(f, x)
    """,
    ),
    ("PGN703", "import torch\nb = torch.utils.data.default_collate(b)\n_utils = 1\n"),
    (
        "PGN704",
        """
        import torchvision
        from torchvision.models import ResNet50_Weights
        from torchvision.models.vgg import make_layers, cfgs
        m = torchvision.models.resnet50(weights=ResNet50_Weights.IMAGENET1K_V1)
        layers = make_layers(cfgs['D'], False)
        timm_model = timm.create_model("resnet50", pretrained=True)
    """,
    ),
    (
        "PGN602",
        "import torchvision.models as cnn\nimport torchvision.models\n"
        "from torchvision import models\n",
    ),
    (
        "PGN603",
        "import torch\nwith torch.library._scoped_library('aten', 'IMPL') as lib:\n    pass\n",
    ),
    # the amp deprecations are from torch 2.4 on; a name not imported from torch is not torch's
    ("PGN702", "import torch\n@torch.cuda.amp.custom_fwd\ndef f(x):\n    return x\n"),
    ("PGN702", "y = symeig(a)\nfrom torchvision.transforms.v2 import *\n"),
    ("PGN501", "loader = DataLoader(ds, batch_size=8, num_workers=workers)\n"),
]
GOOD_TARGETS = {("PGN702", 0): (2, 3)}  # GOOD index among PGN702 -> target torch


@pytest.mark.parametrize(("code", "source"), BAD, ids=[f"{c}-{i}" for i, (c, _) in enumerate(BAD)])
def test_bad_snippet_fires(code: str, source: str) -> None:
    assert code in codes(source)


@pytest.mark.parametrize(
    ("code", "source"), GOOD, ids=[f"{c}-{i}" for i, (c, _) in enumerate(GOOD)]
)
def test_good_snippet_is_quiet(code: str, source: str) -> None:
    index = [s for c, s in GOOD if c == code].index(source)
    assert code not in codes(source, target=GOOD_TARGETS.get((code, index), TARGET))


def test_use_reentrant_follows_the_target_torch() -> None:
    source = "from torch.utils.checkpoint import checkpoint\ny = checkpoint(f, x)\n"
    assert "PGN117" not in codes(source, target=(2, 0))
    assert "PGN117" in codes(source, target=(2, 1))


def test_imported_name_is_reported_at_the_name_and_at_each_use() -> None:
    source = "from torch import (\n    ones,\n    symeig as eig,\n)\nE, Z = eig(A)\n"
    config = LintConfig(target_torch=(2, 13))
    found = [(f.code, f.line) for f in lint_source(source, Path("m.py"), config)]
    assert found == [("PGN701", 3), ("PGN701", 5)]
    rebound = "from torch import symeig as eig\ndef eig(a):\n    return a\n"
    assert [f.line for f in lint_source(rebound, Path("m.py"), config)] == [1]


SAFE: list[tuple[str, str]] = [
    (
        "import torch\nq, r = torch.qr(a, some=False)\n",
        'import torch\nq, r = torch.linalg.qr(a, mode="complete")\n',
    ),
    ("import torch\nq, r = torch.qr(a, True)\n", "import torch\nq, r = torch.linalg.qr(a)\n"),
    (
        "import torch\nu = torch.cholesky(a, upper=True)\n",
        "import torch\nu = torch.linalg.cholesky(a).mH\n",
    ),
    (
        "import torch\nl = torch.cholesky(a, False)\n",
        "import torch\nl = torch.linalg.cholesky(a)\n",
    ),
    (
        "import torch\nm = torch.chain_matmul(a, b, c, out=o)\n",
        "import torch\nm = torch.linalg.multi_dot([a, b, c], out=o)\n",
    ),
    (
        "import torch\nr = torch.range(4, 2, -2, dtype=torch.long)\n",
        "import torch\nr = torch.arange(4, 0, -2, dtype=torch.long)\n",
    ),
    (
        "import torch\nwith torch.cuda.amp.autocast(dtype=torch.bfloat16, cache_enabled=c):\n"
        "    pass\n",
        'import torch\nwith torch.amp.autocast("cuda", dtype=torch.bfloat16, cache_enabled=c):\n'
        "    pass\n",
    ),
    (
        "import torch\ns = torch.cuda.amp.GradScaler(init_scale=1024)\n",
        'import torch\ns = torch.amp.GradScaler("cuda", init_scale=1024)\n',
    ),
    ("from torch import ger\ny = ger(a, b)\n", "from torch import outer as ger\ny = ger(a, b)\n"),
    (
        "from functorch import vmap, grad as g\n",
        "from torch.func import vmap, grad as g\n",
    ),
    (
        "import torch\nb = torch.utils.data._utils.collate.default_collate(b)\n",
        "import torch\nb = torch.utils.data.default_collate(b)\n",
    ),
    (
        "from torch.utils.data._utils.collate import default_collate  # batches\n",
        "from torch.utils.data import default_collate  # batches\n",
    ),
    (
        "import torchvision\nm = torchvision.models.resnet50(pretrained=True, progress=False)\n",
        "import torchvision\n"
        'm = torchvision.models.resnet50(weights="IMAGENET1K_V1", progress=False)\n',
    ),
    (
        "from torchvision.models.detection import ssdlite320_mobilenet_v3_large\n"
        "m = ssdlite320_mobilenet_v3_large(pretrained=False, pretrained_backbone=True)\n",
        "from torchvision.models.detection import ssdlite320_mobilenet_v3_large\n"
        'm = ssdlite320_mobilenet_v3_large(weights=None, weights_backbone="IMAGENET1K_V1")\n',
    ),
    (
        "from torchvision.models import vgg16\nm = vgg16(True)\n",
        'from torchvision.models import vgg16\nm = vgg16(weights="IMAGENET1K_V1")\n',
    ),
    ("import torchvision.models as models  # cnn\n", "from torchvision import models  # cnn\n"),
]

UNSAFE: list[tuple[str, str]] = [
    # torch.range returns floats, torch.arange of integers int64; `n` may be a float
    ("import torch\nr = torch.range(0, n - 1)\n", "import torch\nr = torch.arange(0, n)\n"),
    ("import torch\nr = torch.range(1, 3)\n", "import torch\nr = torch.arange(1, 4)\n"),
    # without dtype, torch.amp.autocast takes torch.get_autocast_dtype (settable)
    (
        "import torch\nwith torch.cpu.amp.autocast(dtype=torch.bfloat16):\n    pass\n",
        'import torch\nwith torch.amp.autocast("cpu", dtype=torch.bfloat16):\n    pass\n',
    ),
    (
        "import torch\nwith torch.cuda.amp.autocast():\n    pass\n",
        'import torch\nwith torch.amp.autocast("cuda"):\n    pass\n',
    ),
    # the private function takes two more positional arguments than the public one
    (
        "import torch\ntorch.utils._pytree._register_pytree_node(C, f, u)\n",
        "import torch\ntorch.utils._pytree.register_pytree_node(C, f, u)\n",
    ),
    # use_reentrant=False is the recommended variant, not the old behaviour
    (
        "from torch.utils.checkpoint import checkpoint\ny = checkpoint(f, x)\n",
        "from torch.utils.checkpoint import checkpoint\n"
        "y = checkpoint(f, x, use_reentrant=False)\n",
    ),
]


@pytest.mark.parametrize(("before", "after"), SAFE)
def test_safe_fix(before: str, after: str) -> None:
    assert fixed(before) == after
    compile(after, "m.py", "exec")


@pytest.mark.parametrize(("before", "after"), UNSAFE)
def test_unsafe_fix_needs_unsafe(before: str, after: str) -> None:
    assert fixed(before) == before
    assert fixed(before, unsafe=True) == after


# Look-alikes where the safe fix would change behaviour (or could not name the API).
WITHHELD: dict[str, list[str]] = {
    "PGN702": [
        "import torch\nm = torch.chain_matmul(*mats)\n",  # one matrix: multi_dot refuses it
        "import torch\nu = torch.cholesky(a, upper=flag)\n",
        "import torch\nq, r = torch.qr(a, some=flag)\n",
        "import torch\nr = torch.range(0, 1, 0.1)\n",  # float step: arange may add a value
        "import torch\nwith torch.cuda.amp.autocast(True):\n    pass\n",  # positional: shifts
        "from functorch import vmap, make_functional\n",  # no torch.func twin for one name
        "import torch as th\nq, r = th.qr(a)\n",
    ],
    "PGN703": [
        "from torch.utils.data import _utils\nb = _utils.collate.default_collate(b)\n",
    ],
    "PGN704": [
        "import torchvision\nm = torchvision.models.resnet50(pretrained=flag)\n",
        "import torchvision\nm = torchvision.models.convnext_tiny(pretrained=True)\n",
        # an aliased builder: the fix cannot tell which weights `True` meant
        "from torchvision.models import resnet50 as build\nm = build(pretrained=True)\n",
        # ssd300_vgg16's backbone had VGG16's feature weights, and a variable is unknown
        "import torchvision\nm = torchvision.models.detection.ssd300_vgg16(pretrained=p)\n",
        # quantized builders: which weights `True` meant depends on `quantize`
        "import torchvision\nm = torchvision.models.quantization.resnet18(pretrained=True)\n",
    ],
    "PGN602": ["import torchvision.models as models, torch\n"],
}


@pytest.mark.parametrize(
    ("code", "source"), [(c, s) for c, sources in WITHHELD.items() for s in sources]
)
def test_safe_fix_is_withheld_where_it_would_change_behaviour(code: str, source: str) -> None:
    config = LintConfig(target_torch=TARGET, select=["ALL"])
    mine = [f for f in lint_source(source, Path("m.py"), config) if f.code == code]
    assert mine and all(f.fix is None or f.fix.applicability == "unsafe" for f in mine)
    assert fixed(source) == source


def load_bench() -> object:
    spec = importlib.util.spec_from_file_location("lint_torchfix_fixtures", BENCH)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[spec.name] = module  # type: ignore[union-attr]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def test_reports_at_least_90_percent_of_torchfix_fixture_findings() -> None:
    bench = load_bench()
    matched, total = bench.summary(bench.score_fixtures(TARGET))  # type: ignore[attr-defined]
    assert total == 81 and matched / total >= 0.9, (matched, total)


def test_torchfix_codemod_inputs_still_compile_after_every_fix(tmp_path: Path) -> None:
    folder = BENCH.parents[1] / "tests" / "data" / "torchfix" / "fixtures"
    for source_path in sorted(folder.glob("*/codemod/*.in.py")):
        after = fixed(source_path.read_text(encoding="utf-8"), unsafe=True)
        compile(after, str(source_path), "exec")


def test_new_rules_have_the_usual_command_line_ux(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from ptgen.cli import app

    path = tmp_path / "m.py"
    path.write_text(
        "import torch\n"
        "a = torch.log(1 + x)\n"
        "b = torch.exp(x) - 1  # noqa: PGN115\n"
        "c = torch.utils.data._utils.collate.default_collate(x)\n",
        encoding="utf-8",
    )
    runner = CliRunner()
    base = ["lint", str(path), "--target-torch", "2.5", "--exit-zero"]
    rows = json.loads(runner.invoke(app, [*base, "--output-format", "json"]).output)
    assert [(r["code"], r["location"]["row"]) for r in rows] == [("PGN114", 2), ("PGN703", 4)]
    assert rows[1]["fix"]["applicability"] == "safe"
    only = runner.invoke(app, [*base, "--select", "PGN11", "--output-format", "json"]).output
    assert [r["code"] for r in json.loads(only)] == ["PGN114"]
    sarif = json.loads(runner.invoke(app, [*base, "--output-format", "sarif"]).output)
    assert {r["ruleId"] for r in sarif["runs"][0]["results"]} == {"PGN114", "PGN703"}
    github = runner.invoke(app, [*base, "--ignore", "PGN114", "--output-format", "github"])
    assert "PGN703" in github.output and "PGN114" not in github.output


HELPER = """\
import torch
import torch.nn.functional as F
from torch import nn


def block(x, residual):
    x = F.relu(x, inplace=True)
    x += residual
    h = torch.sigmoid(residual)
    h *= 2
    return x + h


class Net(nn.Module):
    def forward(self, x):
        return block(x, self.skip(x))
"""


def test_inplace_fixes_in_a_helper_follow_the_callers() -> None:
    # `h` is fresh in the helper (safe); `x` is the forward's input passed in (unsafe)
    safe = fixed(HELPER)
    assert "    h = h * 2\n" in safe and "F.relu(x, inplace=True)" in safe
    assert "    x += residual\n" in safe
    unsafe = fixed(HELPER, unsafe=True)
    assert "    x = F.relu(x)\n    x = x + residual\n" in unsafe
    fresh = HELPER.replace("block(x, self.skip(x))", "block(self.conv(x), self.skip(x))")
    found = lint_source(fresh, Path("m.py"), LintConfig(target_torch=TARGET))
    assert [(f.code, f.line) for f in found if f.code in ("PGN103", "PGN104")] == [
        ("PGN104", 8),
        ("PGN104", 10),
    ]
