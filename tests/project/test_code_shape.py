"""The size of the package's functions, read from the source (issue 63): no function of the
rooms whose code grows with the specs and the methods (``registry``, ``pu``, ``jobs``) runs
over 80 lines, and no function or method of the package takes more than 10 parameters
(``self`` / ``cls`` not counted): more is a config to pass whole (``pubench.train.loop.TrainConfig``
through ``pubench.pu.objective``), or a function to split."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "pubench"
MAX_LINES, LONG_ROOMS = 80, ("registry", "pu", "jobs")
MAX_PARAMS = 10


def functions(path: Path):
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


def parameters(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    a = fn.args
    names = [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs, *filter(None, (a.vararg, a.kwarg)))]
    return names[1:] if names[:1] in (["self"], ["cls"]) else names


def test_no_function_of_registry_pu_or_jobs_runs_over_80_lines():
    long = [f"{p.relative_to(ROOT.parent)}:{fn.lineno} {fn.name}: {fn.end_lineno - fn.lineno + 1} lines"
            for room in LONG_ROOMS for p in sorted((ROOT / room).rglob("*.py")) for fn in functions(p)
            if fn.end_lineno - fn.lineno + 1 > MAX_LINES]
    assert not long, "\n".join(long)


def test_no_function_of_the_package_takes_more_than_10_parameters():
    many = [f"{p.relative_to(ROOT.parent)}:{fn.lineno} {fn.name}: {len(parameters(fn))} parameters"
            for p in sorted(ROOT.rglob("*.py")) for fn in functions(p) if len(parameters(fn)) > MAX_PARAMS]
    assert not many, "\n".join(many)


def test_the_counts_are_of_the_signature():
    """``self`` is not counted, ``*args`` / ``**kwargs`` and keyword-only parameters are."""
    fn = next(n for n in ast.walk(ast.parse("class K:\n    def f(self, a, /, b, *c, d, **e): pass")) if
              isinstance(n, ast.FunctionDef))
    assert parameters(fn) == ["a", "b", "d", "c", "e"]
