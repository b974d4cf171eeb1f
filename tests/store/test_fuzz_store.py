"""Generated files in a store and a cache (issue 55, item 3): mutations of real result
records, failure records, claims and metadata-cache entries, read by the commands that read
them (`status`, `report`, `failures`, `export`, `compare`, `prune --dry-run`, a resumed `run`,
`list`, `show`, `expand`). Every case ends in success or one line and exit 2; the store's
other valid records are never lost (still there, byte for byte, still counted as done).

Budgets and how a failure is replayed: tests/fuzzing.py."""

from __future__ import annotations

import json
import os
import shutil
import socket
import time
from pathlib import Path

import pytest
from hypothesis import note
from hypothesis import strategies as st

from tests.conftest import selftest_spec
from tests.fuzzing import NOT_A_CASE, assert_clean_end, call_cli, time_limit

SPEC = selftest_spec().replace(
    "    params: {sleep: 0.0}\n", "    params: {sleep: 0.0}\n    cells: {'B|y': {fail_if_missing: /nonexistent/gate}}\n    rows: {A: {}}\n")

json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(10**30), 10**30), st.floats(), st.text(max_size=12),
    st.sampled_from(["", "ok", "failed", "..", "../../x", "*", "\u202e", "\U0001F600", "x" * 3000, "NaN", "0" * 16]),
)
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.text(max_size=8), inner, max_size=3), max_leaves=5)


def _places(node, path=()):
    """Every (path, value) inside a parsed JSON document."""
    yield path, node
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _places(v, (*path, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _places(v, (*path, i))


def mutate_json(doc, draw):
    """1-3 structure-aware changes to a parsed JSON document (a copy): a key dropped or
    renamed, a value retyped, out of range or huge, the whole document replaced."""
    doc = json.loads(json.dumps(doc))
    done = []
    for _ in range(draw(st.integers(1, 3))):
        places = [(p, v) for p, v in _places(doc) if p]
        if not places:
            break
        names = sorted({str(p[-1]) for p, _ in places})
        name = draw(st.sampled_from(names))
        path, value = draw(st.sampled_from([(p, v) for p, v in places if str(p[-1]) == name]))
        parent = doc
        for k in path[:-1]:
            parent = parent[k]
        key = path[-1]
        op = draw(st.sampled_from(["drop", "rename", "retype", "range", "deep"]))
        if op == "drop":
            del parent[key]
        elif op == "rename" and isinstance(parent, dict):
            parent[draw(st.text(max_size=6) | st.just(str(key).upper()))] = parent.pop(key)
        elif op == "range" and isinstance(value, (int, float)) and not isinstance(value, bool):
            parent[key] = draw(st.sampled_from([-1, 0, 10**20, -(10**20), 1e308, -1e308, float("nan"), float("inf"),
                                                2**63, 0.5, -0.0]))
        elif op == "range" and isinstance(value, str):
            parent[key] = draw(st.sampled_from(["", value * 100, value + "\u0301", "../" + value, value.upper(),
                                                "\x00", "\ud800"]))
        elif op == "deep":  # nested past Python's recursion limit: written by encode()
            parent[key] = DEEP
        else:
            parent[key] = draw(json_values)
        done.append(f"{op} at {'.'.join(map(str, path))}")
    if draw(st.integers(0, 9)) == 0:
        doc = draw(json_values)
        done.append("replaced whole")
    return doc, done


DEEP = "<nested 3000 levels deep>"


def encode(doc, draw) -> bytes:
    text = json.dumps(doc, indent=draw(st.sampled_from([None, 1])), allow_nan=True, ensure_ascii=draw(st.booleans()))
    text = text.replace(json.dumps(DEEP), "[" * 3000 + "]" * 3000)
    data = text.encode("utf-8", "surrogatepass")
    how = draw(st.sampled_from(["as is"] * 8 + ["truncate", "bytes"]))
    if how == "truncate":
        data = data[:draw(st.integers(0, len(data)))]
    elif how == "bytes":
        i = draw(st.integers(0, len(data)))
        data = data[:i] + draw(st.binary(min_size=1, max_size=4)) + data[i:]
    return data


def mutated(doc, draw) -> tuple[bytes, list[str]]:
    """The file of ``doc`` after :func:`mutate_json` and :func:`encode`, and what was done."""
    with time_limit():
        doc, done = mutate_json(doc, draw)
        return encode(doc, draw), done


# ---- a small real store ------------------------------------------------------------------
@pytest.fixture(scope="module")
def fuzz_store(tmp_path_factory):
    """A registry with the self-test spec and its smoke tier run once: 3 ok records and a
    failure record (cell B|y fails until a file exists)."""
    root = tmp_path_factory.mktemp("fuzz-store")
    for name in ("experiments", "results", "reports", "logs", "cache", "baseline"):
        (root / name).mkdir()
    (root / "experiments" / "bcl").mkdir()
    (root / "experiments" / "bcl" / "table1-bcl.yaml").write_text(SPEC)
    env = {"PUBENCH_EXPERIMENTS": "experiments", "PUBENCH_RESULTS": "results", "PUBENCH_REPORTS": "reports",
           "PUBENCH_LOGS": "logs", "PUBENCH_CACHE": "cache"}
    with pytest.MonkeyPatch.context() as mp:
        for k, v in env.items():
            mp.setenv(k, str(root / v))
        mp.setenv("PUBENCH_NO_REEXEC", "1")
        mp.setenv("PUBENCH_NO_MALLOC_TUNING", "1")
        first = call_cli(["run", "table1-bcl", "--tier", "smoke", "--no-progress"])
        assert first.rc == 1, first.err  # the failing cell
        folder = root / "results" / "smoke" / "table1-bcl"
        shutil.copytree(root / "results", root / "baseline", dirs_exist_ok=True)
        originals = {p.name: p.read_bytes() for p in folder.glob("*.json")}
        assert len(originals) == 4
        yield Store(root, folder, originals)


class Store(tuple):
    """(root, the smoke folder, its files' names -> bytes), shown short in a failure report."""

    def __new__(cls, root, folder, originals):
        return super().__new__(cls, (root, folder, originals))

    def __repr__(self) -> str:
        return f"Store({self[0]})"


def _reset(folder: Path, originals: dict[str, bytes]) -> None:
    for p in folder.iterdir():
        if p.is_dir():
            shutil.rmtree(p)
        elif p.name not in originals:
            p.unlink()
    for name, data in originals.items():
        (folder / name).write_bytes(data)


READERS = (["status", "--json"], ["status", "table1-bcl", "--tier", "smoke"], ["report", "table1-bcl", "--tier", "smoke"],
           ["report", "--format", "latex"], ["failures"], ["failures", "--json"], ["export", "--format", "json"],
           ["export"], ["compare", "--baseline", "{baseline}", "--tier", "smoke"], ["prune", "--dry-run"],
           ["run", "table1-bcl", "--tier", "smoke", "--no-progress"], ["agreement"], ["log", "{job}"])


def _lost(folder: Path, originals: dict[str, bytes], victim: str, ran: bool) -> list[str]:
    """The valid records of the store before the case that are not there, whole, now."""
    from pubench.store import ResultStore

    done = ResultStore(folder.parents[1]).done_ids("smoke", "table1-bcl")
    lost = []
    for name, data in originals.items():
        if name == victim or name.endswith(".failed.json"):
            continue
        job_id = name.split("--")[-1].split(".")[0]
        here = folder / name
        if job_id not in done or not here.exists() or (not ran and here.read_bytes() != data):
            lost.append(name)
    return lost


def test_a_mutated_record_is_read_or_set_aside_in_one_line(fuzz_store, fuzz):
    fuzz.run(40, _a_mutated_record_is_read_or_set_aside_in_one_line, fuzz_store)


def _a_mutated_record_is_read_or_set_aside_in_one_line(fuzz_store, data):
    root, folder, originals = fuzz_store
    _reset(folder, originals)
    victim = data.draw(st.sampled_from(sorted(originals)), label="record")
    blob, done = mutated(json.loads(originals[victim]), data.draw)
    note(f"{victim}: {done}")
    (folder / victim).write_bytes(blob)
    argv = [a.format(baseline=root / "baseline", job=victim.split("--")[-1][:8])
            for a in data.draw(st.sampled_from(READERS), label="command")]
    out = call_cli(argv)
    assert_clean_end(out, argv)
    assert not _lost(folder, originals, victim, ran=argv[0] == "run"), out.err


# ---- claims --------------------------------------------------------------------------------
def _claim(pid: int) -> dict:
    from pubench.store.claims import _proc_start

    return {"host": socket.gethostname(), "pid": pid, "proc_start": _proc_start(pid), "claimed_unix": 1.8e9}


def test_a_planted_claim_never_crashes_a_runner(fuzz_store, fuzz):
    """A claim file of any content (valid JSON of the wrong type or shape, a half-written or
    binary file): `status` and `run` go on; the job it names runs or is reported held, once."""
    fuzz.run(40, _a_planted_claim_never_crashes_a_runner, fuzz_store)


def _a_planted_claim_never_crashes_a_runner(fuzz_store, data):
    from pubench.store.claims import ClaimBook

    root, folder, originals = fuzz_store
    _reset(folder, originals)
    victim = data.draw(st.sampled_from(sorted(originals)), label="job")
    job_id = victim.split("--")[-1].split(".")[0]
    (folder / victim).unlink()  # the job is to run: its claim decides
    blob, done = mutated(_claim(os.getpid()), data.draw)
    note(f"claim: {done}: {blob[:200]!r}")
    book = ClaimBook(folder / ".claims")
    book.folder.mkdir(exist_ok=True)
    book.path(job_id).write_bytes(blob)
    age = data.draw(st.sampled_from([0, 3600, -3600, 10**9]))
    os.utime(book.path(job_id), (time.time() - age, time.time() - age))
    for argv in (["status", "table1-bcl", "--tier", "smoke"], ["run", "table1-bcl", "--tier", "smoke", "--no-progress"]):
        out = call_cli(argv)
        assert_clean_end(out, argv)
    with time_limit():  # reading, judging and taking over a claim never raises
        claim = book.acquire(job_id)
        if claim is not None:
            claim.release()


# ---- the metadata cache ----------------------------------------------------------------------
CACHED_COMMANDS = (["list"], ["show", "table1-bcl"], ["expand", "table1-bcl", "--tier", "smoke"],
                   ["status", "table1-bcl", "--tier", "smoke"], ["report", "table1-bcl", "--tier", "smoke"],
                   ["coverage", "table1-bcl"])


def test_a_planted_meta_cache_entry_is_a_miss_or_the_same_answer(fuzz_store, fuzz):
    """Each entry of the metadata cache (a parsed spec, its resolved cells, unit names, store
    scans, ...) with its fields dropped, retyped or replaced: the command that reads it answers
    as it does from a clean cache (the entry is a miss and rebuilt), never with a traceback."""
    fuzz.run(40, _a_planted_meta_cache_entry_is_a_miss_or_the_same_answer, fuzz_store)


def _a_planted_meta_cache_entry_is_a_miss_or_the_same_answer(fuzz_store, data):
    root, folder, originals = fuzz_store
    _reset(folder, originals)
    argv = data.draw(st.sampled_from(CACHED_COMMANDS), label="command")
    meta = root / "cache" / "meta"
    shutil.rmtree(meta, ignore_errors=True)
    clean = call_cli(argv)
    assert clean.rc == 0, clean.err
    # a kind, then an entry of it by its rank: which entries exist depends on timing (a store
    # scan remembers only files older than 3 s), and the draws must not
    kind = data.draw(st.sampled_from(["specs", "resolved", "designed", "units", "scans", "verdicts", "plots"]),
                     label="kind")
    rank = data.draw(st.integers(0, 20), label="rank")
    entries = sorted((meta / kind).glob("*.json"))
    if not entries:
        return NOT_A_CASE
    entry = entries[rank % len(entries)]
    blob, done = mutated(json.loads(entry.read_bytes()), data.draw)
    note(f"{entry.relative_to(meta)}: {done}")
    entry.write_bytes(blob)
    _forget_memos()
    planted = call_cli(argv)
    assert_clean_end(planted, argv)
    assert planted.rc == clean.rc, planted.err


def _forget_memos() -> None:
    """A new command in this process reads the cache's files again (a real command is a new process)."""
    from pubench.registry import cache, units

    cache._memo.clear()
    units._index.cache_clear()
    units.known.cache_clear()
