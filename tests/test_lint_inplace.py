"""PGN103/PGN104 in any function: an in-place change after an op whose output autograd keeps."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from ptgen.lint import LintConfig, lint_source

HEADER = "import math\nimport numpy as np\nimport torch\nimport torch.nn.functional as F\n\n"


def codes(body: str) -> list[tuple[str, int]]:
    source = HEADER + textwrap.dedent(body)
    found = lint_source(source, Path("blocks.py"), LintConfig(select=["PGN103", "PGN104"]))
    return [(f.code, f.line - HEADER.count("\n")) for f in found]


def test_the_guides_block_on_its_own_is_flagged() -> None:
    guide = """
        def block(x, residual):
            x = F.relu(x, inplace=True)
            x += residual
            return x
    """
    # the parameter itself is not judged (callers unknown); `x +=` after relu is
    assert codes(guide) == [("PGN104", 4)]


@pytest.mark.parametrize(
    "body",
    [
        "def gate(h):\n    y = torch.sigmoid(h)\n    y *= 2\n    return y\n",
        "def act(h):\n    y = h.exp()\n    y += 1\n    return y\n",
        "def act(h):\n    y = torch.tanh(h)\n    return F.relu(y, inplace=True)\n",
        "class Head:\n    def score(self, h):\n"
        "        y = self.softmax(h)\n        y /= 3\n        return y\n",
    ],
)
def test_any_function_that_handles_tensors(body: str) -> None:
    assert len(codes(body)) == 1


@pytest.mark.parametrize(
    "body",
    [
        "def f(a):\n    y = math.exp(a)\n    y += 1\n    return y\n",
        "def f(a):\n    y = np.tanh(a)\n    y *= 2\n    return y\n",
        "def f(h):\n    y = torch.sigmoid(h).clone()\n    y *= 2\n    return y\n",  # fresh
        "def f(h):\n    with torch.no_grad():\n"
        "        y = torch.exp(h)\n        y += 1\n    return y\n",
        "@torch.inference_mode()\ndef f(h):\n    y = torch.exp(h)\n    y += 1\n    return y\n",
        "def accumulate(total, x):\n    total += x\n    return total\n",
        "def f(h):\n    return F.relu(h, inplace=True)\n",
    ],
)
def test_no_finding_where_autograd_keeps_nothing(body: str) -> None:
    assert codes(body) == []
