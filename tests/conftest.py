"""Shared fixtures: a throwaway registry and result store, so pipeline tests never touch
the real experiments/, results/ or reports/."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

# The canonical numerics environment must be in place before torch or numpy load (they read
# it at start-up): tests then run jobs exactly as `pubench run` does, on any CPU with AVX2.
import sys  # noqa: E402

from pubench.numerics import process_env  # noqa: E402  (imports neither torch nor numpy)

_late = [k for k, v in process_env().items() if os.environ.get(k) != v]
if _late and ("torch" in sys.modules or "numpy" in sys.modules):
    raise RuntimeError(f"torch/numpy loaded before tests/conftest.py could set {_late}")
for _k, _v in process_env().items():
    os.environ[_k] = _v
# Core slots of this test session only: other pubench runs on the machine never make a test wait.
if not os.environ.get("PUBENCH_TEST_SLOTS"):
    import tempfile

    os.environ["PUBENCH_TEST_SLOTS"] = tempfile.mkdtemp(prefix="pubench-test-slots-")
os.environ["PUBENCH_CORE_SLOTS"] = os.environ["PUBENCH_TEST_SLOTS"]

import pytest  # noqa: E402

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def selftest_spec(spec_id: str = "table1-bcl", rows=("A", "B"), cols=("x", "y"), extra: str = "",
                  seeds: int = 2) -> str:
    """A minimal valid spec running the ``selftest`` task (paper must match the id); its paper and
    reduced tiers register ``seeds`` seeds (a report reads no record of a seed beyond them)."""
    paper = spec_id.rsplit("-", 1)[1]
    kind = "table" if spec_id.startswith("table") else "figure"
    return textwrap.dedent(f"""\
        id: {spec_id}
        paper: {paper}
        kind: {kind}
        title: Test
        caption: A test table.
        version: 1
        source: tests
        metrics:
          score: {{label: Score, higher_is_better: true}}
        rows: {list(rows)}
        cols: {list(cols)}
        reported:
          seeds: 3
          pm: std over 3 runs
          cells:
            - {{row: {rows[0]}, col: {cols[0]}, mean: 1.0, std: 0.1}}
            - {{row: {rows[1]}, col: {cols[0]}, mean: 2.0}}
            - {{row: {rows[1]}, col: {cols[1]}, mean: null, note: not printed}}
        experiment:
          task: selftest
          params: {{value: 0.0}}
          rows:
            {rows[0]}: {{value: 1.0}}
            {rows[1]}: {{value: 2.0}}
        tiers:
          paper: {{seeds: {seeds}}}
          reduced: {{seeds: {seeds}}}
          smoke:
            seeds: 1
            params: {{sleep: 0.0}}
            deviations: [no sleep]
        """) + extra


def selftest_results(registry, spec_id: str, tier: str, seeds: int, metrics, spec_text: str | None = None):
    """Register ``spec_text`` (default: ``selftest_spec(spec_id)``, registering the ``seeds`` written)
    in a ``tmp_registry`` and write an ok record for every job of ``tier`` with ``seeds`` seeds for
    which ``metrics(job)`` gives a dict (None: no record). Returns (spec, store)."""
    from pubench.jobs import expand
    from pubench.registry import load_all
    from pubench.store import ResultStore

    registry(spec_text or selftest_spec(spec_id, seeds=max(seeds, 2)))
    spec = load_all()[spec_id]
    store = ResultStore(registry.root / "results")
    for job in expand(spec, tier, seeds).jobs:
        if (values := metrics(job)) is not None:
            store.write_ok(job, values, {}, {"wall_s": 2.0})
    return spec, store


@pytest.fixture
def tmp_registry(tmp_path, monkeypatch):
    """An empty experiments/ results/ reports/ logs/ under tmp_path, wired by environment.

    Returns a function ``write(spec_text, paper=None) -> Path`` that adds a spec file.
    """
    for name, env in (("experiments", "PUBENCH_EXPERIMENTS"), ("results", "PUBENCH_RESULTS"),
                      ("reports", "PUBENCH_REPORTS"), ("logs", "PUBENCH_LOGS")):
        (tmp_path / name).mkdir()
        monkeypatch.setenv(env, str(tmp_path / name))
    monkeypatch.setenv("PUBENCH_NO_MALLOC_TUNING", "1")

    def write(text: str) -> Path:
        import yaml

        data = yaml.safe_load(text)
        path = tmp_path / "experiments" / data["paper"] / f"{data['id']}.yaml"
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
        return path

    def plan(kind: str, name: str, why: str = "planned for a test") -> None:
        """List a unit as planned (not implemented yet) in the throwaway registry."""
        import yaml

        path = tmp_path / "experiments" / "_planned.yaml"
        data = yaml.safe_load(path.read_text()) if path.exists() else {}
        data.setdefault(kind, {})[name] = why
        path.write_text(yaml.safe_dump(data))

    write.root = tmp_path
    write.plan = plan
    return write


@pytest.fixture
def scratch_store(tmp_path, monkeypatch):
    """The real registry (experiments/) with a throwaway result store, reports and logs under
    tmp_path: smoke runs of committed specs that never touch results/ or reports/."""
    for name, env in (("results", "PUBENCH_RESULTS"), ("reports", "PUBENCH_REPORTS"), ("logs", "PUBENCH_LOGS")):
        (tmp_path / name).mkdir()
        monkeypatch.setenv(env, str(tmp_path / name))
    monkeypatch.delenv("PUBENCH_EXPERIMENTS", raising=False)
    monkeypatch.setenv("PUBENCH_NO_MALLOC_TUNING", "1")
    monkeypatch.setenv("PUBENCH_ENCODER_CACHE", "0")
    return tmp_path


@pytest.fixture
def one_thread():
    """Tiny models: one torch thread avoids OpenMP overhead on a shared 2-core machine."""
    import torch

    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture(scope="session")
def chromium():
    """The path of a headless-capable Chromium, or skip (``.ci/run`` installs it where it can)."""
    from tests.chromium import find_chromium

    path = find_chromium()
    if path is None:
        pytest.skip("no chromium on PATH (Debian: apt-get install chromium); .ci/run installs it where it can")
    return path


@pytest.fixture(scope="session")
def data_root():
    """The shared real data when present, else None (tests then generate tiny data)."""
    return SHARED_DATA if SHARED_DATA.is_dir() else None


@pytest.fixture(scope="session")
def shared_image_root(data_root, tmp_path_factory):
    """One data root for the whole session whose image files are symlinks into
    ../shared/data (nothing copied): the processed caches the loaders write under it are
    built once and shared by every real-data test. Skips without the shared data."""
    if data_root is None:
        pytest.skip("../shared/data not present")
    root = tmp_path_factory.mktemp("shared-images")
    for shared, folder in (("mnist", "MNIST"), ("fashion-mnist", "FashionMNIST")):
        raw = root / folder / "raw"
        raw.mkdir(parents=True)
        for f in (data_root / shared).glob("*.gz"):
            (raw / f.name).symlink_to(f)
    (root / "cifar10-jpeg").symlink_to(data_root / "cifar10-jpeg")
    return root


@pytest.fixture(scope="session")
def shared_graph_root(data_root, tmp_path_factory):
    """(source, root): ../shared/data and one session data root the graph tests prepare
    into, so each graph set is copied and processed once per session."""
    if data_root is None:
        pytest.skip("../shared/data not present")
    return data_root, tmp_path_factory.mktemp("shared-graphs")


def pytest_collection_modifyitems(config, items):
    from tests.markers import mark_slow

    mark_slow(items)


def pytest_configure(config):
    os.environ.setdefault("PUBENCH_NO_MALLOC_TUNING", "1")
    os.environ.setdefault("PUBENCH_ENCODER_CACHE", "0")  # tests never read or write the project's cache
    if not hasattr(config, "workerinput"):  # the controller: a folder of this session's own (xdist workers inherit it)
        import tempfile

        os.environ["PUBENCH_TEST_RELIABILITY"] = tempfile.mkdtemp(prefix="pubench-test-reliability-")
        # decoded data of the tests' data roots: a folder of the session's, not the project's cache
        os.environ["PUBENCH_DATA_CACHE"] = tempfile.mkdtemp(prefix="pubench-test-data-cache-")
        # the thorough generated inputs' seed (tests/fuzzing.py): one for the session, its workers included
        os.environ.setdefault("PUBENCH_FUZZ_SEED", str(FUZZ_CI_SEED))  # CI repeats one seed; the nightly moves it daily


#: the thorough generated inputs' seed when none is given: make test-all and CI try the same cases every
#: time (a new crash fails the nightly, which draws the date's seed, not an unrelated push)
FUZZ_CI_SEED = 55


@pytest.fixture(params=["fast", "thorough"])
def fuzz(request):
    """A generated-input test at each budget (tests/fuzzing.py): ``fuzz.run(n, case, ...)``
    tries its cases; the session prints how many. The thorough one is slow (tests/markers.py)."""
    from tests.fuzzing import Fuzz

    f = Fuzz(request.param, request.node.nodeid)
    yield f
    f.record()


# ---- reliability figures (README "Reliability"): tests record, the session prints -----


def record_reliability(kind: str, case: str, data: dict) -> None:
    """Remember one reliability outcome (``kind``: malformed | corrupt | kill | runners ...)."""
    import json

    folder = os.environ.get("PUBENCH_TEST_RELIABILITY")
    if folder:
        name = "".join(c if c.isalnum() or c in "-_. " else "_" for c in f"{kind}--{case}")
        (Path(folder) / f"{name}.json").write_text(json.dumps({"kind": kind, "case": case, **data}))


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    import json

    folder = os.environ.get("PUBENCH_TEST_RELIABILITY")
    rows = [json.loads(p.read_text()) for p in sorted(Path(folder).glob("*.json"))] if folder else []
    if not rows:
        return
    by: dict[str, list[dict]] = {}
    for r in rows:
        by.setdefault(r["kind"], []).append(r)
    out = []
    if "malformed" in by:
        m = by["malformed"]
        out.append(f"malformed inputs: {len(m)} cases, {sum(r['ok'] for r in m)} gave one clear line and a non-zero "
                   f"exit (slowest {max(r['seconds'] for r in m):.1f} s)")
    if "corrupt" in by:
        out.append(f"corrupt records: {len(by['corrupt'])} kinds, {sum(r['ok'] for r in by['corrupt'])} counted, "
                   "skipped with one warning, quarantined and rerun")
    if "fuzz" in by:
        for budget in ("fast", "thorough"):
            f = [r for r in by["fuzz"] if r["budget"] == budget]
            if f:
                seeds = sorted({r["seed"] for r in f})
                out.append(f"generated inputs, {budget} budget: {sum(r['cases'] for r in f)} cases in {len(f)} tests "
                           f"(seed {', '.join(map(str, seeds))}), each ending in success or one line (tests/fuzzing.py)")
    for kind in sorted(set(by) - {"malformed", "corrupt", "fuzz"}):
        for r in by[kind]:
            out.append(f"{kind}: {r['case']}: " + ", ".join(f"{k}={v}" for k, v in r.items() if k not in ("kind", "case")))
    terminalreporter.write_sep("-", "pubench reliability")
    for line in out:
        terminalreporter.write_line(line)
