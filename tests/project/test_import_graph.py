"""The packages of pubench depend on each other one way only (docs/design.md, "Layout").

The graph is read from the source (every ``import pubench.X``, at module level or inside a
function): no cycle between packages, nor between the modules of a package (a deferred
import inside a function counts: it hides a circle, it does not remove it); the science
packages never import the pipeline;
``train`` (the loop, optimizers, checkpoints) never imports the units that train through it
(``frameworks``, ``pu``, ``downstream``), and ``pu`` never imports ``downstream``. A fresh interpreter confirms it at run time."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "pubench"
PIPELINE = {"registry", "jobs", "executors", "store", "report", "coverage", "verify", "runner", "cli", "__main__",
            "preflight", "tools"}
SCIENCE = {"losses", "models", "data", "sim", "train", "frameworks", "pu", "downstream"}
#: package -> the pubench packages it may import (besides utils, errors, paths, numerics)
ALLOWED = {
    "losses": set(),
    "models": set(),
    "data": set(),
    "sim": set(),
    "train": {"losses", "models", "data"},  # data: the job context holds the data source
    "frameworks": {"train", "losses", "models"},
    "pu": {"train", "models"},
    "downstream": {"pu", "train", "models"},
    "tasks": SCIENCE,
}
BASE = {"utils", "errors", "paths", "numerics"}


def package_graph() -> dict[str, set[str]]:
    packages = {p.stem if p.is_file() else p.name for p in ROOT.iterdir()
                if (p.is_dir() and (p / "__init__.py").exists()) or (p.suffix == ".py" and p.stem != "__init__")}
    edges: dict[str, set[str]] = defaultdict(set)
    for f in ROOT.rglob("*.py"):
        rel = f.relative_to(ROOT)
        src = rel.parts[0].removesuffix(".py") if len(rel.parts) > 1 or rel.stem != "__init__" else None
        if src is None:
            continue
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                parts = name.split(".")
                if parts[0] == "pubench" and len(parts) > 1 and parts[1] in packages and parts[1] != src:
                    edges[src].add(parts[1])
    return edges


def test_no_cycle_between_packages():
    cycle = _cycle(package_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def module_graph() -> dict[str, set[str]]:
    """module -> the pubench modules it imports. ``from pkg import sub`` imports the module
    ``pkg.sub`` (the package's ``__init__`` runs first, as for any import: not an edge of its
    own); ``from pkg import name`` imports ``pkg``."""
    files = {}
    for f in ROOT.rglob("*.py"):
        parts = f.relative_to(ROOT.parent).with_suffix("").parts
        files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = f
    edges: dict[str, set[str]] = {m: set() for m in files}

    def owner(name: str) -> str | None:
        while name and name not in files:
            name = name.rpartition(".")[0]
        return name or None

    for mod, f in files.items():
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                subs = [f"{node.module}.{a.name}" for a in node.names]
                targets = [t for t in subs if t in files]
                if len(targets) < len(subs):
                    targets.append(node.module)
            else:
                continue
            for t in targets:
                t = owner(t) if t.startswith("pubench") else None
                if t and t != mod:
                    edges[mod].add(t)
    return edges


def _cycle(edges: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = 1
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt, path + [nxt])
                if found:
                    return found
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state:
            found = visit(node, [node])
            if found:
                return found
    return None


def test_no_cycle_between_modules():
    """No import circle at module level either (issue 35: the registry had one through five
    deferred imports; train.checkpoint and train.encoder_cache another)."""
    cycle = _cycle(module_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_module_graph_finds_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    graph = module_graph()
    assert "pubench.registry.spec" in graph["pubench.registry.loader"]  # a module-level import
    assert "pubench.registry.units" in graph["pubench.registry.catalogue"]  # one inside a function


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_layers(package):
    got = package_graph().get(package, set())
    assert not got & PIPELINE, f"{package} imports the pipeline: {sorted(got & PIPELINE)}"
    extra = got - BASE - ALLOWED[package]
    assert not extra, f"{package} may not import {sorted(extra)}"


def test_nothing_in_the_package_imports_its_tools():
    """``pubench/tools`` (the GPU check and the cost tools) sits above the whole package."""
    users = sorted(src for src, targets in package_graph().items() if "tools" in targets and src != "tools")
    assert not users, users


def test_no_arrow_from_the_training_loop_to_preflight():
    """Preflight's step cap reaches every trainer in the job's context
    (:class:`pubench.train.context.JobContext`), not by an import, nor by a module-level stack
    the loop would call up through (tests/train/test_job_context.py): no module of ``train``
    imports ``preflight``."""
    assert "preflight" not in package_graph().get("train", set())
    up = sorted((m, t) for m, targets in module_graph().items() if m.startswith("pubench.train")
                for t in targets if t.startswith("pubench.preflight"))
    assert not up, up


def test_the_graph_sees_function_level_imports():
    edges = package_graph()
    assert "data" in edges["tasks"]  # tasks/_image_common imports pubench.data inside functions only
    assert "pu" in edges["downstream"] and "train" in edges["pu"]


CHECK = """
import importlib, pkgutil, sys
import pubench.{package} as p
modules = [p] + [importlib.import_module(f"pubench.{package}.{{m.name}}") for m in pkgutil.iter_modules(p.__path__)]
for mod in modules:
    for name in dir(mod):
        reg = getattr(mod, name)
        if hasattr(reg, "names") and hasattr(reg, "kind"):
            reg.names()  # discovery imports every module of the registry's package
bad = sorted(m for m in sys.modules if m.split(".")[:2] in {forbidden})
assert not bad, bad
"""


@pytest.mark.parametrize("package,forbidden", [
    ("train", ["frameworks", "pu", "downstream", "tasks"]),
    ("frameworks", ["pu", "downstream", "tasks"]),
    ("pu", ["frameworks", "downstream", "tasks"]),
])
def test_package_imports_alone(package, forbidden):
    """Importing every module of a package, and every module its registries find, loads none
    of the packages above it."""
    code = CHECK.format(package=package, forbidden=[["pubench", f] for f in forbidden])
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT.parent, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]


def test_task_registry_loads_without_torch():
    """The executors load the task registry before any job; a record written mid-interrupt
    must not wait for torch."""
    code = "import sys, pubench.tasks; assert 'torch' not in sys.modules and 'numpy' not in sys.modules"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT.parent, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
