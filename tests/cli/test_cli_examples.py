"""Every worked example in a ``--help`` (``pubench --help`` and each subcommand's) runs and, where
it selects cells, selects something (issue 39).

The examples are parsed from the parsers' epilogs and run in this process against a scratch
store: the real specs, records made up for every job of the tables and tiers the examples read
(:data:`SEEDED`; the numbers do not matter here, and the committed store changes), and
throwaway reports, logs and output files (the working directory is a scratch folder). ``run``
examples get ``--dry-run``; ``pubench log`` and ``pubench cancel`` find the failure record and
the SLURM submission they name (a stand-in ``scancel`` records its arguments). The few
examples that would run real jobs for minutes or copy gigabytes are listed in :data:`NOT_RUN`
with the test that runs them; a new example runs here unless it is added there.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shlex
import shutil
from pathlib import Path

import pytest

from pubench.cli import SUBCOMMANDS, build_parser, main

ROOT = Path(__file__).resolve().parents[2]

#: examples not run here (exact text after "pubench "), and why
NOT_RUN = {
    "verify table2-punce --tier reduced --sample 4": "reruns 4 training jobs (tests/store/test_numerics.py runs verify)",
    "verify fig5-bcl --tier paper --sample 0": "reruns 360 jobs (tests/store/test_numerics.py runs verify)",
    "verify table2-wconpu --tier custom --sample 1": "reruns a 40-minute training job (tests/store/test_numerics.py "
                                                     "verifies variants and added rows)",
    "prepare --from ../shared/data": "copies the shared data sets (tests/data/test_prepare.py)",
    "preflight --tier paper": "measures training steps of every paper cell (tests/preflight/test_preflight.py)",
    "preflight --tier paper --json pf.json --resume": "measures training steps of every paper cell (the resume: "
                                                      "tests/preflight/test_preflight.py)",
    "preflight --tier paper --json pf.json --resume --retry-skipped --jobs 1":
        "measures training steps of every paper cell skipped before (tests/preflight/test_preflight.py)",
    "preflight table1-pucl --device cuda --json /tmp/pf.json": "needs a GPU (make gpu-check)",
    "preflight --sample --steps 1 --max-step-gflop 150": "measures training steps (.ci/run, test_preflight.py)",
    "preflight table2-pucl --only '*|DD'": "measures training steps (tests/preflight/test_preflight.py)",
    "campaign --device cuda --budget 9m --out /tmp/out": "needs a GPU (make gpu-paper)",
    "campaign pack": "compresses the MNIST and F-MNIST files for minutes (tests/campaign/test_campaign_travel.py packs "
                     "a small data set)",
    "campaign import '/tmp/out/campaign-*.tar.gz'": "needs a window's archive (tests/campaign/test_campaign.py imports)",
    "campaign --device cpu --tier smoke --queue q.yaml --budget 1m --out /tmp/o --concurrency 2":
        "runs jobs in worker processes (tests/campaign/test_campaign.py runs it on its own queue)",
}
#: the tables and tiers the examples read, each given an ok record per job in the scratch store
SEEDED = [("paper", "fig5-bcl"), ("reduced", "table1-bcl"), ("reduced", "table2-punce"), ("reduced", "table1-punce"),
          ("reduced", "table5-punce")]
#: examples whose exit status is their answer: the statuses that are right here
EXIT = {"prepare --check": (0, 1)}  # 1: a data set is missing here (the machine decides, not the code)
LOG_JOB = "94c0635ab5d9cee7"  # the job id of `pubench log`'s examples


def _parsers():
    yield "pubench", build_parser()
    for add in SUBCOMMANDS:
        sub = argparse.ArgumentParser().add_subparsers()
        add(sub)
        (name, parser), = sub.choices.items()
        yield name, parser


def examples() -> list[str]:
    """Every example line (``[VAR=value ...] pubench ...``) of every epilog, in order, once."""
    out = []
    for _, parser in _parsers():
        for line in (parser.epilog or "").splitlines():
            text = line.strip()
            words = shlex.split(text, comments=True) if text else []
            while words and "=" in words[0] and not words[0].startswith("-"):
                words = words[1:]
            if words[:1] == ["pubench"] and len(words) > 1 and text not in out:
                out.append(text)
    return out


def _args(example: str) -> str:
    words = shlex.split(example, comments=True)
    return shlex.join(words[[w == "pubench" for w in words].index(True) + 1:])


def test_examples_are_found_for_every_subcommand():
    found = {_args(e).split()[0] for e in examples()}
    assert found == {name for name, _ in _parsers() if name != "pubench"}


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    """A store with an ok record per job of :data:`SEEDED` (made once; each test copies it)."""
    from pubench.jobs import expand
    from pubench.registry import get_spec
    from pubench.store import ResultStore

    root = tmp_path_factory.mktemp("seeded") / "results"
    store = ResultStore(root)
    for tier, sid in SEEDED:
        spec = get_spec(sid)
        for job in expand(spec, tier, min(spec.tiers[tier].seeds, 3)).jobs:
            store.write_ok(job, {m: 50.0 + job.seed_index for m in spec.metrics}, {}, {"wall_s": 1.0})
    return root


@pytest.fixture
def scratch(tmp_path, monkeypatch, seeded):
    shutil.copytree(seeded, tmp_path / "results")
    for name, env in (("results", "PUBENCH_RESULTS"), ("reports", "PUBENCH_REPORTS"), ("logs", "PUBENCH_LOGS")):
        (tmp_path / name).mkdir(exist_ok=True)
        monkeypatch.setenv(env, str(tmp_path / name))
    monkeypatch.delenv("PUBENCH_EXPERIMENTS", raising=False)
    monkeypatch.setenv("PUBENCH_NO_MALLOC_TUNING", "1")
    monkeypatch.setenv("PUBENCH_NO_REEXEC", "1")
    # the failure record `pubench log 94c0635a` finds
    job = {"id": LOG_JOB, "spec_id": "table1-pucl", "tier": "reduced", "row": "SimCLR", "col": "CIFAR10",
           "seed_index": 0, "task": "contrastive_probe", "params": {}, "seeds": {"data": 1, "init": 2},
           "name": "table1-pucl/SimCLR|CIFAR10/seed=0", "spec_version": 1}
    rec = tmp_path / "results" / "reduced" / "table1-pucl" / f"SimCLR__CIFAR10__s0--{LOG_JOB}.failed.json"
    rec.parent.mkdir(parents=True)
    rec.write_text(json.dumps({"schema": 2, "status": "failed", "job": job, "timing": {}, "error": {
        "type": "RuntimeError", "message": "example", "traceback_tail": "Traceback ...\nRuntimeError: example\n"}}))
    # the SLURM submissions `pubench cancel` cancels, and a stand-in scancel
    for tier, sid in (("paper", "table1-punce"), ("reduced", "fig5-bcl")):
        folder = tmp_path / "logs" / tier / sid
        folder.mkdir(parents=True)
        (folder / "manifest-20260101T000000000000.json").write_text(json.dumps({
            "cluster": "slurm", "spec": sid, "tier": tier, "params": {"timeout_min": 5}, "submitted_unix": 0,
            "jobs": [{"id": "0" * 16, "name": f"{sid}/x|y/seed=0", "slurm_id": "77_0", "stdout": "", "stderr": ""}]}))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "scancel").write_text("#!/bin/sh\nexit 0\n")
    (bin_dir / "scancel").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    # the store of compare's example: what its `run` line would have written (the same records)
    shutil.copytree(tmp_path / "results", tmp_path / "env" / "nightly")
    work = tmp_path / "cwd"
    work.mkdir()
    (work / "experiments").symlink_to(ROOT / "experiments")
    (work / "results").symlink_to(tmp_path / "results")
    # the overlay `pubench validate mine.yaml --spec table2-punce` checks
    (work / "mine.yaml").write_text("rows:\n  MyPU: {like: MLP nnPU, set: {pu_method: {name: upu}}}\n")
    monkeypatch.chdir(work)
    return tmp_path


def _argv(example: str, scratch: Path, monkeypatch) -> list[str]:
    """The example's arguments as a shell would give them: ``VAR=value`` prefixes set (paths
    moved into the scratch folder), globs expanded, a ``> file`` redirect dropped."""
    words = shlex.split(example, comments=True)
    while words[0] != "pubench":
        var, _, value = words.pop(0).partition("=")
        monkeypatch.setenv(var, str(scratch / "env" / Path(value).name) if value.startswith("/") else value)
    words = words[1:]
    if ">" in words:
        words = words[:words.index(">")]
    argv = []
    for w in words:
        if any(c in w for c in "*?") and "/" in w:  # a shell glob (a cell pattern has no slash)
            hits = sorted(glob.glob(w))
            argv += hits or [w]
        elif w.startswith("/tmp/"):
            argv.append(str(scratch / "env" / Path(w).name))
        else:
            argv.append(w)
    if argv[0] == "run" and "--dry-run" not in argv:
        argv.append("--dry-run")
    return argv


@pytest.mark.parametrize("example", [e for e in examples() if _args(e) not in NOT_RUN], ids=_args)
def test_every_help_example_runs_and_selects_something(example, scratch, monkeypatch, capsys):
    argv = _argv(example, scratch, monkeypatch)
    code = main(argv)
    out, err = capsys.readouterr()
    if "parquet" in argv and not _have_pyarrow():
        assert code == 2 and "install it" in err and "pyarrow" in err  # the one-line error the example notes
        return
    assert code in EXIT.get(_args(example), (0,)), f"`{example}` exited {code}: {err.strip()[-600:]}"
    if argv[0] == "run":
        counts = [line for line in out.splitlines() if " job(s): " in line]
        assert counts and not counts[0].strip().startswith("0 job(s)"), out[-800:]
    if argv[0] == "expand":
        assert ": 0 cells to run" not in out and '"cells": []' not in out


def _have_pyarrow() -> bool:
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return False
    return True


def test_every_example_left_out_exists():
    assert set(NOT_RUN) | set(EXIT) <= {_args(e) for e in examples()}
