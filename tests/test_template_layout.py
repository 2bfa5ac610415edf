"""The template reads like the code it generates (docs/extending.md, "How the project
template is laid out"): few conditionals, none on the objective in a core file, every
feature's, objective's and modality's facts in its own folder, and the folders registered
in copier.yml are the folders there are."""

from __future__ import annotations

import re

from ptgen.paths import templates_dir
from ptgen.template_meta import read_yaml, template_question

IF = re.compile(r"\{%-?\s*(?:if|elif)\b[^%]*%\}")
INLINE_IF = re.compile(r"\{\{[^}]*?\sif\s[^}]*\}\}")
# Ratchets: today's counts, never to grow (issue 47's goal: 120 in all, 10 in any file).
MOST_IN_ALL = 48
MOST_IN_A_FILE = 6
# issue 47: a feature guards at most this many template lines outside its own folder
MOST_GUARDED_OUTSIDE = 6


def conditionals() -> dict[str, int]:
    """{template file: its {% if %}, {% elif %} and inline `a if b` in its text and name}."""
    root = templates_dir()
    counts = {}
    for path in root.rglob("*"):
        if not path.is_file() or path.name in ("releases.toml", "project.bundle"):
            continue
        rel = path.relative_to(root).as_posix()
        text = path.read_text(encoding="utf-8", errors="replace")
        found = IF.findall(text) + INLINE_IF.findall(text) + IF.findall(rel)
        counts[rel] = len(found)
    return counts


def test_the_template_holds_few_conditionals() -> None:
    counts = conditionals()
    worst = max(counts, key=counts.__getitem__)
    assert sum(counts.values()) <= MOST_IN_ALL, f"{sum(counts.values())} conditionals"
    assert counts[worst] <= MOST_IN_A_FILE, f"{worst}: {counts[worst]} conditionals"


def test_no_core_file_branches_on_the_objective() -> None:
    core = templates_dir() / "project" / "src"
    branching = [
        f"{path.relative_to(core)}:{number}"
        for path in core.rglob("*")
        if path.is_file()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        for tag in re.findall(r"\{[{%].*?[}%]\}", line)
        if re.search(r"\bobjective\b", tag) and "objective_part(" not in tag
    ]
    assert branching == []


def conditionals_in_prose(text: str) -> list[tuple[int, str]]:
    """(line, tag) of each conditional (if/elif/else/endif, inline `a if b`) inside a
    triple-quoted string or after a `#` of Python template text."""
    tag = re.compile(r"\{%-?\s*(?:if|elif|else|endif)\b[^%]*%\}|" + INLINE_IF.pattern)
    found, in_string = [], False
    for number, line in enumerate(text.splitlines(), 1):
        pieces = line.split('"""')
        for i, piece in enumerate(pieces):
            prose = in_string != (i % 2 == 1)
            if not prose:  # code: only what follows a comment's `#` (not Jinja's `{#`)
                comment = re.search(r"(?<![{\"'])#", piece)
                piece = piece[comment.end() :] if comment else ""
            found += [(number, found_tag) for found_tag in tag.findall(piece)]
        in_string = in_string != (len(pieces) % 2 == 0)
    return found


def test_conditionals_in_prose_are_found() -> None:
    text = '"""Doc {% if a %}x{% endif %}\nmore {{ "y" if b else "z" }}\n"""\nx = 1  # {% if c %}\n'
    assert [number for number, _ in conditionals_in_prose(text)] == [1, 1, 2, 4]
    assert conditionals_in_prose('{% if a %}\nx = "#"\n{% endif %}\n"""{{ name }}"""\n') == []


def test_no_docstring_or_comment_branches() -> None:
    """Prose that differs by objective, modality or feature comes from its folder."""
    root = templates_dir()
    found = [
        f"{path.relative_to(root)}:{number}: {tag}"
        for path in root.rglob("*")
        if path.is_file() and path.name.endswith((".py", ".py.jinja"))
        for number, tag in conditionals_in_prose(path.read_text(encoding="utf-8"))
    ]
    assert found == []


def test_file_names_are_plain() -> None:
    named = [rel for rel in conditionals() if "{%" in rel]
    assert named == []


def test_the_registered_folders_are_the_folders_there_are() -> None:
    project = templates_dir() / "project"
    for question, folder, meta in (
        ("feature_names", "_features", "feature.yml"),
        ("objective_names", "_objectives", "objective.yml"),
        ("modality_names", "_modalities", "modality.yml"),
    ):
        present = sorted(path.parent.name for path in (project / folder).glob(f"*/{meta}"))
        assert sorted(template_question(question)) == present, question


def test_every_listed_file_is_in_the_template() -> None:
    project = templates_dir() / "project"
    missing = [
        f"{meta.relative_to(project)}: {rel}"
        for meta in project.glob("_*/*/*.yml")
        for rel in read_yaml(meta).get("files", [])
        if not any((project / name).exists() for name in (rel, rel + ".jinja"))
    ]
    assert missing == []


def guarded_lines(text: str, names: list[str]) -> dict[str, list[int]]:
    """{feature: the lines of `text` that only a project with it renders}: lines inside an
    `{% if ... "NAME" ... %}` block (any branch of it) or holding such a test; lines of
    tags alone do not count (they render nothing)."""
    block = re.compile(r"\{%-?\s*(if|elif|else|endif)\b([^%]*)%\}")
    named = {name: re.compile(rf"['\"]{re.escape(name)}['\"]") for name in names}
    stack: list[list[str]] = []
    found: dict[str, list[int]] = {}
    for number, line in enumerate(text.splitlines(), 1):
        tests = [test for branches in stack for test in branches]
        tests += [test for kind, test in block.findall(line) if kind in ("if", "elif")]
        tests += INLINE_IF.findall(line)
        if not re.fullmatch(r"\s*(\{%.*?%\}\s*)+", line):
            for name, pattern in named.items():
                if any(pattern.search(test) for test in tests):
                    found.setdefault(name, []).append(number)
        for kind, test in block.findall(line):
            if kind == "if":
                stack.append([test])
            elif kind in ("elif", "else") and stack:
                stack[-1].append(test)
            elif kind == "endif" and stack:
                stack.pop()
    return found


def test_guarded_lines_are_found() -> None:
    text = 'a\n{% if "ema" in features %}\nb\nc\n{% endif %}\nd {{ "x" if "plot" in f }}\n'
    assert guarded_lines(text, ["ema", "plot", "fsdp"]) == {"ema": [3, 4], "plot": [6]}


def test_a_feature_guards_few_lines_outside_its_folder() -> None:
    """What a feature adds to the core and to other folders comes through points: at most
    MOST_GUARDED_OUTSIDE lines anywhere else are rendered only for it."""
    root = templates_dir()
    names = template_question("feature_names")
    outside: dict[str, list[str]] = {}
    for path in root.rglob("*"):
        if not path.is_file() or path.name in ("releases.toml", "project.bundle"):
            continue
        rel = path.relative_to(root).as_posix()
        text = path.read_text(encoding="utf-8", errors="replace")
        for name, lines in guarded_lines(text, names).items():
            if f"/_features/{name}/" not in f"/{rel}":
                outside.setdefault(name, []).extend(f"{rel}:{n}" for n in lines)
    assert {n: v for n, v in outside.items() if len(v) > MOST_GUARDED_OUTSIDE} == {}
