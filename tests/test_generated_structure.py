"""The structure a reader of a generated project relies on, read from its source.

The training loop is one function of train.py in which every decision (log, checkpoint,
stop, evaluate) is visible; the monitor only records; no module imports another in a
circle; a project holds only its own task's plumbing.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from helpers import generate

from ptgen.features import features, serves
from ptgen.options import tasks
from ptgen.project import ProjectOptions, new_project

PACKAGE = "demo_proj"


def module_name(path: Path, package_dir: Path) -> str:
    parts = path.relative_to(package_dir.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(package_dir: Path) -> dict[str, set[str]]:
    """module -> the modules of the same package it imports (relative imports resolved)."""
    graph: dict[str, set[str]] = {}
    for path in sorted(package_dir.rglob("*.py")):
        name = module_name(path, package_dir)
        is_package = path.name == "__init__.py"
        graph[name] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                base = name.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith(package_dir.name):
                continue
            for alias in node.names:  # `from . import cnn` imports the submodule
                candidate = f"{target}.{alias.name}"
                graph[name].add(candidate if candidate in module_names(package_dir) else target)
    return graph


def module_names(package_dir: Path) -> set[str]:
    return {module_name(p, package_dir) for p in package_dir.rglob("*.py")}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every import cycle found by depth-first search (empty when the graph is acyclic)."""
    found, done = [], set()

    def visit(node: str, path: list[str]) -> None:
        if node in path:
            found.append(path[path.index(node) :] + [node])
            return
        if node in done:
            return
        for target in sorted(graph.get(node, ())):
            visit(target, path + [node])
        done.add(node)

    for node in sorted(graph):
        visit(node, [])
    return found


def import_cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan): each is a set of
    modules that import one another in a circle, however long the circle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                component.add(member)
                if member == node:
                    break
            if len(component) > 1 or node in graph.get(node, ()):
                found.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def function(tree: ast.Module, name: str) -> ast.FunctionDef:
    return next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)


def names_in(node: ast.AST) -> set[str]:
    """Every attribute and variable name used inside `node`."""
    return {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)} | {
        n.id for n in ast.walk(node) if isinstance(n, ast.Name)
    }


def test_no_module_imports_another_in_a_circle(default_project: Path) -> None:
    graph = import_graph(default_project / "src" / PACKAGE)
    assert f"{PACKAGE}.train" in graph and graph[f"{PACKAGE}.train"]
    assert cycles(graph) == []


# The one cycle left, not of fsdp's making: data/_inputs.texts, kept for dataset files written
# before data/_text_files.text_inputs, calls back into the module that imports _inputs. It
# goes with that shim (a change to every project with a text task and `inputs`).
@pytest.mark.parametrize("task", sorted(tasks()))
def test_no_import_cycle_with_every_feature(tmp_path: Path, task: str) -> None:
    """Every task with every feature that serves it: no module of the package imports
    another that (through any chain, imports inside functions counted) imports it back."""
    chosen = tuple(name for name in features() if serves(name, task))
    options = ProjectOptions(name="demo-proj", task=task, features=chosen)
    project = new_project(options, tmp_path, run_smoke=False, init_git=False).path
    graph = import_graph(project / "src" / PACKAGE)
    assert len(graph) > 20 and graph[f"{PACKAGE}.train"]
    assert [sorted(c) for c in import_cycles(graph)] == []


def test_the_cycle_finder_finds_a_cycle(tmp_path: Path) -> None:
    """The check above could fail: a real import cycle in a copy of the project is found."""
    project = generate(tmp_path, name="demo-proj")
    monitor = project / "src" / PACKAGE / "monitor.py"
    monitor.write_text("from .train import Run\n" + monitor.read_text(encoding="utf-8"))
    graph = import_graph(project / "src" / PACKAGE)
    assert {f"{PACKAGE}.monitor", f"{PACKAGE}.train"} <= set().union(*import_cycles(graph))
    found = cycles(graph)
    # the search may enter the cycle at either module (e.g. from experiments -> train)
    assert {f"{PACKAGE}.monitor", f"{PACKAGE}.train"} in [set(c[-3:]) for c in found]


def test_the_monitor_only_records(default_project: Path) -> None:
    package = default_project / "src" / PACKAGE
    graph = import_graph(package)
    assert graph[f"{PACKAGE}.monitor"] <= {f"{PACKAGE}.runtime"}  # never the run or the loop
    used = names_in(ast.parse((package / "monitor.py").read_text(encoding="utf-8")))
    assert not used & {"save", "save_checkpoint", "max_steps", "checkpoint_every", "log_every"}
    assert not used & {"early_stopping_patience", "improves", "signals", "agreed"}


def test_every_decision_of_the_loop_is_in_one_function(default_project: Path) -> None:
    tree = ast.parse((default_project / "src" / PACKAGE / "train.py").read_text(encoding="utf-8"))
    loop = function(tree, "train")
    used = names_in(loop)
    decisions = {"log_every", "checkpoint_every", "max_steps", "epochs", "grad_accum_steps"}
    decisions |= {"early_stopping_patience", "early_stopping_min_delta"}
    assert decisions <= used, decisions - used
    assert {"save", "evaluate", "forward_backward", "optimizer_step", "is_better"} <= used
    assert {"improves", "agreed"} <= used  # early stop, stop signal
    assert any(isinstance(n, ast.Break) for n in ast.walk(loop))  # the max_steps stop
    # the only other functions of train.py build the run or are called from the loop
    helpers = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)} - {"train"}
    assert helpers <= {
        "fit",
        "start_monitor",
        "build_run",
        "warmup_cosine",
        "wrap_model",
        "check_finite",
        "save",
        "trained_model",
        "consolidate",
        "data_advice",
        "say_stopped",  # prints where a signal stopped the run (the loop decides)
    }


def test_a_project_holds_only_its_own_task(tmp_path: Path) -> None:
    image = generate(tmp_path / "image", name="imgs")
    sequence = generate(tmp_path / "seq", name="seqs", task="sequence-classification")
    assert not (image / "src" / "imgs" / "data" / "_sequences.py").exists()
    assert (sequence / "src" / "seqs" / "data" / "_sequences.py").is_file()
    assert not (image / "src" / "imgs" / "data" / "_augment.py").exists()  # image-folder's
    assert not (sequence / "src" / "seqs" / "data" / "_augment.py").exists()
    image_code = "\n".join(p.read_text() for p in (image / "src").rglob("*.py"))
    for foreign in ("pad_collate", "vocab_size", "num_features", "BucketBatchSampler", "mse_loss"):
        assert foreign not in image_code, foreign
