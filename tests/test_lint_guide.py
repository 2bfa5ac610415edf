"""The guide's own snippets, read from its text: every "Bad" snippet is caught by the rule
docs/lint.md names for it, and every "Good" snippet lints clean.

The snippets come from the four translations in tests/data/pytorch-patterns (copied from
shared/seeds; see the README there). Snippets are compared across translations by their
syntax tree, so translated comments do not matter.
"""

from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path

import pytest

from ptgen.lint import LintConfig, lint_source

GUIDE = Path(__file__).parent / "data" / "pytorch-patterns"
REFERENCE = "003_73c8433b45c51c83.txt"  # a complete translation
MARKER_RE = re.compile(r"^# (Good|Bad|Bueno|Malo|Gut|Schlecht|Bom|Ruim)\b.*:", re.I)
BAD_WORDS = ("bad", "malo", "schlecht", "ruim")

# Bad snippets in the order of the guide -> the rules that catch them (docs/lint.md table).
BAD_RULES: list[set[str]] = [
    {"PGN201"},  # hard-coded device
    {"PGN301"},  # no seed control (in a script that trains; see IN_CONTEXT)
    {"PGN601"},  # no shape tracking (opt-in style rule)
    {"PGN113"},  # everything in forward: a weight created each call
    {"PGN501"},  # slow DataLoader defaults
    {"PGN404"},  # only model weights saved (in the training loop; see IN_CONTEXT)
    {"PGN101"},  # model.eval() forgotten
    {"PGN103", "PGN104"},  # in-place ops breaking autograd
    {"PGN201", "PGN202"},  # model moved to the GPU in the loop
    {"PGN102"},  # .item() before backward
    {"PGN401"},  # torch.save of the whole module
]
# Two Bad snippets are, line for line, code that the guide also shows as Good (a bare
# `model = MyModel()`; `torch.save(model.state_dict(), ...)`): what makes them bad is
# their setting. They are linted inside a minimal training script, and so is the Good
# code they are confused with, which stays clean.
TRAINING = "for x, y in loader:\n    F.mse_loss(model(x), y).backward()\n    optimizer.step()\n"
IN_CONTEXT = {
    1: ("{snippet}" + TRAINING, "import torch\ntorch.manual_seed(0)\n{snippet}" + TRAINING),
    5: (
        TRAINING + "    {indented}",
        TRAINING + "    torch.save({{'model': model.state_dict(), "
        "'optimizer': optimizer.state_dict()}}, 'ckpt.pt')\n",
    ),
}
# Good snippets that carry the guide's own lapses, each named in docs/lint.md ("The
# guide's snippets"); a Good snippet not listed here must have no finding at all.
GOOD_EXCEPTIONS = {
    "def train_one_epoch(": {"PGN203", "PGN503"},  # autocast("cuda"); .item() every step
    "collate_fn=collate_fn)": {"PGN501"},  # the same slow DataLoader as the Bad snippet
    'GradScaler("cuda")': {"PGN301"},  # a training loop at module level that never seeds
    "class ImageClassifier(": {"PGN601"},  # flattens without a shape comment (opt-in rule)
}


def snippets(path: Path) -> list[tuple[str, str]]:
    """(kind, code) for each `# Good:` / `# Bad:` block: paragraphs while they still parse."""
    lines, found = path.read_text(encoding="utf-8").splitlines(), []
    paragraphs = "\n".join(lines).split("\n\n")
    current: list[str] | None = None
    for paragraph in paragraphs:
        first = paragraph.strip().splitlines()[0] if paragraph.strip() else ""
        if MARKER_RE.match(first):
            if current:
                found.append(_finish(current))
            current = [paragraph]
        elif current is not None and _is_code(paragraph, current):
            current.append(paragraph)
        elif current is not None:
            found.append(_finish(current))
            current = None
    if current:
        found.append(_finish(current))
    return found


def _is_code(paragraph: str, before: list[str]) -> bool:
    """Still code: the snippet parses with it, and it is not a heading that happens to
    parse (`模型架构模式` is a name, `Kurzreferenz: PyTorch-Idiome` an annotation)."""
    if not _parses("\n\n".join([*before, paragraph])):
        return False
    body = ast.parse(textwrap.dedent(paragraph)).body if _parses(paragraph) else []
    heading = len(body) == 1 and (
        (isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Name))
        or (isinstance(body[0], ast.AnnAssign) and body[0].value is None)
    )
    return not heading


def _parses(code: str) -> bool:
    try:
        ast.parse(textwrap.dedent(code))
    except SyntaxError:
        return False
    return True


def _finish(paragraphs: list[str]) -> tuple[str, str]:
    code = "\n\n".join(paragraphs).strip("\n") + "\n"
    word = MARKER_RE.match(code).group(1).lower()  # type: ignore[union-attr]
    return ("bad" if word in BAD_WORDS else "good"), code


def tree(code: str) -> str:
    """The syntax tree with string literals blanked (the translations translate messages)."""
    parsed = ast.parse(code)
    for node in ast.walk(parsed):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            node.value = ""
    return ast.dump(parsed)


def found(code: str, select: list[str] | None = None) -> set[str]:
    config = LintConfig(target_torch=(2, 13), select=select)
    return {f.code for f in lint_source(code, Path("guide.py"), config)}


REFERENCE_SNIPPETS = snippets(GUIDE / REFERENCE)
BAD = [code for kind, code in REFERENCE_SNIPPETS if kind == "bad"]
GOOD = [code for kind, code in REFERENCE_SNIPPETS if kind == "good"]


def test_the_four_translations_carry_the_same_snippets() -> None:
    reference = [(kind, tree(code)) for kind, code in REFERENCE_SNIPPETS]
    assert len(BAD) == len(BAD_RULES) == 11 and len(GOOD) == 19
    for path in sorted(GUIDE.glob("*.txt")):
        mine = [(kind, tree(code)) for kind, code in snippets(path)]
        if path.name.startswith("001"):  # cut short inside its 10th snippet
            assert len(mine) == 10 and mine[:9] == reference[:9]
        else:
            assert mine == reference, path.name


@pytest.mark.parametrize("index", range(len(BAD)))
def test_every_bad_snippet_is_caught(index: int) -> None:
    rules, snippet = BAD_RULES[index], BAD[index]
    if index in IN_CONTEXT:
        bad, good = IN_CONTEXT[index]
        indented = textwrap.indent(snippet, "    ").lstrip()
        assert rules <= found(bad.format(snippet=snippet, indented=indented))
        assert not rules & found(good.format(snippet=snippet, indented=indented))
    else:
        assert rules <= found(snippet, select=["ALL"])


@pytest.mark.parametrize("index", range(len(GOOD)))
def test_every_good_snippet_lints_clean(index: int) -> None:
    snippet = GOOD[index]
    allowed = next((v for k, v in GOOD_EXCEPTIONS.items() if k in snippet), set())
    assert found(snippet, select=["ALL"]) == allowed


def test_the_docs_table_names_the_same_rules() -> None:
    docs = (Path(__file__).parents[1] / "docs" / "lint.md").read_text(encoding="utf-8")
    table = docs[docs.index("## The guide's snippets") :]
    rows = [line for line in table.splitlines() if line.startswith("| Bad ")]
    assert len(rows) == len(BAD_RULES)
    for row, rules in zip(rows, BAD_RULES, strict=True):
        assert set(re.findall(r"PGN\d{3}", row)) == rules, row
