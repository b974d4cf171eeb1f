"""One job context, passed down (pubench.train.context, issue 53): what a job runs with
besides its config and seeds reaches the task and every training loop as an argument,
never through module-level state that job code reads implicitly, and nothing swaps a
loader or a registered unit at run time.

The checks read the source (every module of the package), so a stack, a ``global`` or a
swap that comes back fails here before it can change a number."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.project.test_contracts import generated_data  # noqa: F401 - a fixture
from pubench.train.context import PLAIN

ROOT = Path(__file__).resolve().parents[2] / "pubench"
#: the code a job runs (the science packages, the tasks, the workers that run a job)
JOB_CODE = [ROOT / "numerics.py", *(p for pkg in ("train", "frameworks", "pu", "downstream", "tasks", "data",
                                                  "models", "losses", "sim", "utils")
                                    for p in sorted((ROOT / pkg).rglob("*.py"))),
            ROOT / "executors" / "worker.py", *(ROOT / "preflight" / f for f in ("worker.py", "standins.py", "meter.py"))]
#: module-level memos that are the same for every job: name -> why
MEMOS = {("utils/registry.py", "_HINTS"): "the committed unit index file, read once",
         ("utils/unit_packages.py", "_state"): "the installed pubench.units entry points, loaded once per process",
         ("utils/unit_packages.py", "_origins"): "which installed package registered a unit, noted as the registries "
                                                 "fill (once per process)"}
MUTATORS = {"append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault", "popitem", "add",
            "discard", "appendleft", "popleft"}
CONTAINERS = {"list", "dict", "set", "deque", "defaultdict", "OrderedDict", "Counter"}


def _parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT.parent)) if path.is_relative_to(ROOT.parent) else path.name


def _mutable_globals(tree: ast.Module) -> set[str]:
    """Module-level names bound to a mutable container (a display, a comprehension, or a
    ``list()`` / ``dict()`` / ... call)."""
    out = set()
    for node in tree.body:
        targets, value = ((node.targets, node.value) if isinstance(node, ast.Assign)
                          else ([node.target], node.value) if isinstance(node, ast.AnnAssign) and node.value else ((), None))
        mutable = isinstance(value, (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)) or (
            isinstance(value, ast.Call) and getattr(value.func, "id", getattr(value.func, "attr", None)) in CONTAINERS)
        if mutable:
            out |= {t.id for t in targets if isinstance(t, ast.Name)}
    return out


def hidden_state(path: Path) -> list[str]:
    """``global`` statements, and module-level containers that functions change (a stack, a
    registry of the running job, a cache of its settings)."""
    tree = _parse(path)
    names = {n for n in _mutable_globals(tree) if (str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else "",
                                                   n) not in MEMOS}
    found = []
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.Global):
                found.append(f"{_rel(path)}:{node.lineno}: global {', '.join(node.names)}")
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATORS
                  and isinstance(node.func.value, ast.Name) and node.func.value.id in names):
                found.append(f"{_rel(path)}:{node.lineno}: {node.func.value.id}.{node.func.attr}(...) in {fn.name}")
            elif isinstance(node, (ast.Assign, ast.AugAssign, ast.Delete)):
                for t in node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]:
                    if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id in names:
                        found.append(f"{_rel(path)}:{node.lineno}: {t.value.id}[...] written in {fn.name}")
    return found


def test_no_module_level_state_that_job_code_reads_implicitly():
    found = [line for path in JOB_CODE for line in hidden_state(path)]
    assert not found, "module-level state a job reads implicitly (pass it in the JobContext):\n" + "\n".join(found)


def test_the_state_check_finds_a_stack_and_a_global(tmp_path):
    """The check would have found the four stacks this context replaced."""
    stack = tmp_path / "stack.py"
    stack.write_text("_SCOPES: list = []\n\ndef push(s):\n    _SCOPES.append(s)\n\ndef pop():\n    _SCOPES.pop()\n")
    current = tmp_path / "current.py"
    current.write_text("_current = None\n\ndef activate(s):\n    global _current\n    _current = s\n")
    table = tmp_path / "table.py"
    table.write_text("TABLE = {}\n\ndef put(k, v):\n    TABLE[k] = v\n")
    assert [len(hidden_state(p)) for p in (stack, current, table)] == [2, 1, 1]


def swaps(path: Path) -> list[str]:
    """Assignments to an attribute of a module or class imported from pubench
    (``images.load_images = ...``, ``Trainer.run = ...``), ``setattr`` on one, and writes
    into a registry's ``_items`` outside the registry itself."""
    tree = _parse(path)
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {(a.asname or a.name).split(".")[0] for a in node.names if a.name.startswith("pubench")}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pubench"):
            imported |= {a.asname or a.name for a in node.names}
    found = []
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, (ast.AugAssign, ast.AnnAssign)) else []
        for t in targets:
            for el in (t.elts if isinstance(t, ast.Tuple) else [t]):
                base = el.value if isinstance(el, (ast.Attribute, ast.Subscript)) else None
                while isinstance(base, (ast.Attribute, ast.Subscript)):
                    if isinstance(base, ast.Attribute) and base.attr == "_items":
                        found.append(f"{_rel(path)}:{node.lineno}: a registry's _items written")
                    base = base.value
                if isinstance(el, ast.Attribute) and isinstance(el.value, (ast.Name, ast.Attribute)):
                    root = el.value
                    while isinstance(root, ast.Attribute):
                        root = root.value
                    if isinstance(root, ast.Name) and root.id in imported:
                        found.append(f"{_rel(path)}:{node.lineno}: {ast.unparse(el)} assigned")
        if (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "setattr" and node.args
                and isinstance(node.args[0], ast.Name) and node.args[0].id in imported):
            found.append(f"{_rel(path)}:{node.lineno}: setattr({node.args[0].id}, ...)")
    return found


def test_nothing_in_the_package_swaps_a_loader_or_a_unit():
    """``pubench preflight`` hands its stand-ins to the job as its data source; no module
    replaces another's function, class attribute or registered unit."""
    files = [p for p in sorted(ROOT.rglob("*.py")) if p != ROOT / "utils" / "registry.py"]
    found = [line for path in files for line in swaps(path)]
    assert not found, "a swap at run time (pass it in the JobContext instead):\n" + "\n".join(found)


def test_the_swap_check_finds_the_old_loader_swap(tmp_path):
    old = tmp_path / "standins.py"
    old.write_text("from pubench.data import images, text\nfrom pubench.models import BACKBONES\n\n"
                   "def installed(load):\n    images.load_images = load\n    text.GlueTextDataset.load = load\n"
                   "    BACKBONES._items['roberta_large'] = load\n")
    assert len(swaps(old)) == 3


def test_the_four_stacks_and_the_loader_swap_are_gone():
    from pubench import numerics
    from pubench.preflight import standins
    from pubench.train import accel, checkpoint, loop

    gone = {numerics: ("_CURRENT", "active", "current", "device"), accel: ("_SCOPES", "current", "job_scope",
                                                                            "stage_scope"),
            checkpoint: ("_current", "current", "activate", "request_stop"), loop: ("_CAPS", "capped", "current_cap"),
            standins: ("installed",)}
    back = [f"{m.__name__}.{name}" for m, names in gone.items() for name in names if hasattr(m, name)]
    assert not back, back


# ------------------------------------------------------------------ the context is passed on
def _ctx_params() -> dict[str, int | None]:
    """Module-level functions and classes of the package that take a ``ctx`` argument: name ->
    its position among the positional parameters (None: keyword-only)."""
    seen: dict[str, set] = {}
    for path in ROOT.rglob("*.py"):
        for node in _parse(path).body:
            fn = node
            if isinstance(node, ast.ClassDef):
                fn = next((b for b in node.body if isinstance(b, ast.FunctionDef) and b.name == "__init__"), None)
            if not isinstance(fn, ast.FunctionDef):
                continue
            pos = [a.arg for a in fn.args.posonlyargs + fn.args.args if a.arg not in ("self", "cls")]
            kw = [a.arg for a in fn.args.kwonlyargs]
            where = pos.index("ctx") if "ctx" in pos else (None if "ctx" in kw else "none")
            seen.setdefault(node.name, set()).add(where)
    return {name: next(iter(w)) for name, w in seen.items() if len(w) == 1 and "none" not in w}


def test_every_call_in_the_package_passes_the_job_context_on():
    """A trainer, a ``predict`` or a helper that builds one, called without the caller's
    context, would run without its checkpoints, step cap or accelerator settings."""
    takes = _ctx_params()
    assert {"Trainer", "predict", "pretrain", "fit", "train_network", "evaluate_network", "encode"} <= set(takes)
    missing = []
    for path in sorted(ROOT.rglob("*.py")):
        for node in ast.walk(_parse(path)):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in takes):
                continue
            at = takes[node.func.id]
            given = any(k.arg in ("ctx", None) for k in node.keywords) or (
                at is not None and (len(node.args) > at or any(isinstance(a, ast.Starred) for a in node.args)))
            if not given:
                missing.append(f"{_rel(path)}:{node.lineno}: {node.func.id}(...) without ctx")
    assert not missing, "\n".join(missing)


def test_no_signature_of_the_package_defaults_the_job_context():
    """``ctx`` is always passed (issue 63): a default of ``PLAIN`` would let a forgotten argument
    run silently without checkpoints, step cap or accelerator settings."""
    defaulted = []
    for path in sorted(ROOT.rglob("*.py")):
        for fn in ast.walk(_parse(path)):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            args = fn.args
            positional = args.posonlyargs + args.args
            pairs = [*zip(positional[len(positional) - len(args.defaults):], args.defaults),
                     *zip(args.kwonlyargs, args.kw_defaults)]
            defaulted += [f"{_rel(path)}:{fn.lineno}: {fn.name}" for a, d in pairs if a.arg == "ctx" and d is not None]
    assert not defaulted, "\n".join(defaulted)


@pytest.mark.usefixtures("generated_data", "one_thread")
@pytest.mark.parametrize("name", ["pu_benchmark", "contrastive_probe"])
def test_a_task_hands_its_context_to_every_trainer_and_predict(name):
    """A step cap in the context sees every training stage and every evaluation of the job
    (the preflight worker relies on it; a stage run without the context would escape it)."""
    import copy

    from pubench.tasks import TASKS
    from pubench.train.context import JobContext, StepCap
    from tests.project.test_contracts import SEEDS

    class Recorder(StepCap):
        def __init__(self):
            self.stages, self.predicts = [], 0

        def begin(self, trainer, epochs, device):
            self.stages.append(trainer.desc)

        def epochs(self, first, epochs):
            return range(first, epochs)

        def batches(self, batches):
            return batches

        def step(self):
            import contextlib

            return contextlib.nullcontext()

        def epoch_end(self, stats):
            return False

        def end(self, trainer):
            pass

        def predict(self, fn, n, chunk):
            import torch

            self.predicts += 1
            return torch.cat([fn(torch.arange(i, min(n, i + chunk))).float().cpu() for i in range(0, n, chunk)])

    task = TASKS.get(name)
    plain = task.run(copy.deepcopy(task.test_config), dict(SEEDS), ctx=PLAIN)
    cap = Recorder()
    out = task.run(copy.deepcopy(task.test_config), dict(SEEDS), JobContext(cap=cap))
    assert out.metrics == plain.metrics  # a cap that caps nothing changes no number
    want = ["nnpu"] if name == "pu_benchmark" else ["pretrain punce", "linear probe (nnpu)"]
    assert cap.stages == want and cap.predicts >= 1
