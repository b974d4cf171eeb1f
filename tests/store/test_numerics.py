"""Numerics identity: what can change a job's numbers is in its id, pinned, or recorded;
``pubench verify``; provenance that looks at code and specs only."""

from __future__ import annotations

import json
import subprocess

import pytest

from pubench import numerics
from pubench.cli import main
from pubench.jobs import expand
from pubench.registry import get_spec
from pubench.store import ResultStore
from tests.conftest import selftest_spec


def _jobs(**kw):
    return expand(get_spec("table1-bcl"), "smoke", numerics=numerics.resolve(**kw)).jobs


def test_numerics_profile_is_part_of_the_job_id(tmp_registry):
    tmp_registry(selftest_spec())
    canonical = {j.id for j in _jobs()}
    assert canonical == {j.id for j in _jobs()}
    assert canonical.isdisjoint({j.id for j in _jobs(threads=2)})
    assert canonical.isdisjoint({j.id for j in _jobs(isa="native")})
    assert canonical.isdisjoint({j.id for j in _jobs(device="cuda")})
    assert all(j.numerics == {"device": "cpu", "threads": 1, "isa": "avx2", "torch": numerics.torch_version()}
               for j in _jobs())


def test_canonical_profile_and_its_environment():
    n = numerics.resolve()
    assert n.canonical and n.threads == 1 and n.isa == "avx2"
    env = numerics.process_env(n)
    assert env["ATEN_CPU_CAPABILITY"] == "avx2" and env["MKL_CBWR"] == "AVX2,STRICT" and env["OMP_NUM_THREADS"] == "1"
    assert numerics.env_missing(n, {}) and not numerics.env_missing(n, env)
    assert "ATEN_CPU_CAPABILITY" not in numerics.process_env(numerics.resolve(isa="native"))
    assert not numerics.resolve(threads=2).canonical


def test_this_test_process_runs_the_pinned_code_paths():
    import torch

    assert numerics.isa_problem(numerics.resolve()) is None
    assert torch.backends.cpu.get_cpu_capability() == "AVX2"


def test_a_process_without_the_environment_is_refused():
    code = ("from pubench import numerics; import torch; "
            "print(numerics.isa_problem(numerics.resolve()))")
    out = subprocess.run([__import__("sys").executable, "-c", code], capture_output=True, text=True,
                         env={"PATH": "/usr/bin:/bin"}, cwd=str(__import__("pathlib").Path(__file__).parents[2]))
    assert "did not start with" in out.stdout


@pytest.mark.parametrize("bad", [{"threads": 0}, {"threads": True}, {"isa": "sse"}, {"device": "tpu"}])
def test_bad_profiles_are_refused(bad):
    with pytest.raises(numerics.NumericsError):
        numerics.resolve(**bad)


def test_a_job_whose_numerics_this_process_cannot_deliver_fails_with_the_reason(tmp_registry):
    from pubench.executors.worker import execute_job

    tmp_registry(selftest_spec())
    job = _jobs()[0]
    job.numerics["torch"] = "0.0.1"
    store = ResultStore(tmp_registry.root / "results")
    assert execute_job(job, store.root) == "failed"
    rec = store.records("smoke", "table1-bcl", failed=True)[0]
    assert rec["error"]["type"] == "NumericsError" and "torch 0.0.1" in rec["error"]["message"]


def test_records_name_the_machine_and_numerics(tmp_registry):
    tmp_registry(selftest_spec())
    assert main(["run", "table1-bcl", "--tier", "smoke", "--no-progress"]) == 0
    rec = ResultStore(tmp_registry.root / "results").records("smoke", "table1-bcl")[0]
    m = rec["machine"]
    assert m["cpu_model"] and m["cpu_native_isa"] and m["torch_cpu_capability"] == "AVX2"
    assert m["env"]["MKL_CBWR"] == "AVX2,STRICT" and m["torch_threads"] == 1 and m["onednn"] and m["mkl"]
    assert rec["job"]["numerics"]["isa"] == "avx2"


def test_cpu_jobs_run_without_the_nan_fill_and_cuda_jobs_keep_it():
    """Deterministic algorithms on for every job; the NaN fill of new tensors (on by default
    under them) off on the CPU, where the verified records reproduce without it, kept on CUDA;
    a job's record says which."""
    import torch

    try:
        numerics.apply(numerics.resolve())
        assert torch.are_deterministic_algorithms_enabled()
        assert torch.utils.deterministic.fill_uninitialized_memory is False
        numerics.apply(numerics.resolve(device="cuda"))
        assert torch.utils.deterministic.fill_uninitialized_memory is True
        assert torch.isnan(torch.empty(64)).all()  # the fill itself: what CUDA jobs keep
    finally:
        torch.use_deterministic_algorithms(False)
        torch.utils.deterministic.fill_uninitialized_memory = True


def test_the_worker_runs_a_cpu_job_without_the_nan_fill(tmp_registry):
    """The job's process gets the profile from the worker (:func:`numerics.apply`), so the
    setting is in force while the task runs, not only in a test that calls it."""
    import torch

    from pubench.executors.worker import execute_job

    tmp_registry(selftest_spec())
    torch.utils.deterministic.fill_uninitialized_memory = True
    try:
        assert execute_job(_jobs()[0], tmp_registry.root / "results") == "ok"
        assert torch.are_deterministic_algorithms_enabled()
        assert torch.utils.deterministic.fill_uninitialized_memory is False
    finally:
        torch.use_deterministic_algorithms(False)
        torch.utils.deterministic.fill_uninitialized_memory = True


def test_encoder_cache_key_depends_on_numerics():
    from pubench.train.encoder_cache import encoder_key

    base = encoder_key({"a": 1}, {"init": 1}, numerics.resolve())
    other = encoder_key({"a": 1}, {"init": 1}, numerics.resolve(threads=2))
    assert base != other and base == encoder_key({"a": 1}, {"init": 1}, numerics.resolve())


# ---- verify ------------------------------------------------------------------------------
def test_verify_passes_on_identical_reruns_and_fails_on_a_changed_record(tmp_registry, capsys):
    tmp_registry(selftest_spec())
    assert main(["run", "table1-bcl", "--tier", "paper", "--seeds", "3", "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["verify", "table1-bcl", "--tier", "paper", "--sample", "0", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "PASS: 12 identical" in out
    store = ResultStore(tmp_registry.root / "results")
    path = sorted(store.folder("paper", "table1-bcl").glob("*.json"))[0]
    rec = json.loads(path.read_text())
    rec["metrics"]["score"] += 1e-9  # one bit off: canonical records must reproduce exactly
    path.write_text(json.dumps(rec))
    assert main(["verify", "table1-bcl", "--tier", "paper", "--sample", "0", "--no-progress"]) == 1
    out = capsys.readouterr().out
    assert "within  <-- FAIL" in out and "FAIL: 11 identical, 1 within" in out
    rec["metrics"]["score"] += 100.0
    path.write_text(json.dumps(rec))
    assert main(["verify", "table1-bcl", "--tier", "paper", "--sample", "0", "--no-progress"]) == 1
    assert "outside" in capsys.readouterr().out


def test_verify_can_sample_only_the_cells_and_seeds_a_run_added(tmp_registry, capsys):
    tmp_registry(selftest_spec())
    assert main(["run", "table1-bcl", "--tier", "paper", "--seeds", "3", "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["verify", "table1-bcl", "--tier", "paper", "--sample", "0", "--only", "A|x", "--seeds-from", "1",
                 "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "PASS: 2 identical" in out and "A|x/seed=1" in out and "A|x/seed=2" in out and "seed=0" not in out


def test_verify_samples_reproducibly_and_flags_stale_records(tmp_registry, capsys):
    from pubench.verify import sample_records

    tmp_registry(selftest_spec())
    assert main(["run", "table1-bcl", "--tier", "paper", "--no-progress"]) == 0
    recs = ResultStore(tmp_registry.root / "results").records("paper", "table1-bcl")
    a, b = sample_records(recs, 3, 7), sample_records(recs, 3, 7)
    assert [r["job"]["id"] for r in a] == [r["job"]["id"] for r in b] and len(a) == 3
    tmp_registry(selftest_spec().replace("version: 1", "version: 2"))
    capsys.readouterr()
    assert main(["verify", "table1-bcl", "--tier", "paper", "--no-progress"]) == 1
    assert "8 stale record(s)" in capsys.readouterr().out


def test_verify_reruns_variants_and_added_rows_with_their_own_configs(tmp_registry, capsys):
    """--tier custom: a `run --set` variant and a `run --add-row` row are each rebuilt from the spec
    as it is now, rerun and compared; a record whose variant no longer resolves to its config is stale."""
    tmp_registry(selftest_spec())
    for extra in (["--set", "value=10", "--only", "A|x"], ["--set", "value=20", "--only", "A|x"],
                  ["--add-row", "Mine=value: 3.0", "--like", "A", "--only", "Mine|x"]):
        assert main(["run", "table1-bcl", "--tier", "paper", "--seeds", "2", *extra, "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["verify", "table1-bcl", "--tier", "custom", "--sample", "0", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "PASS: 6 identical" in out and "Mine|x/seed=1" in out and "stale" not in out
    store = ResultStore(tmp_registry.root / "results")
    path = next(p for p in sorted(store.folder("custom", "table1-bcl").glob("*.json"))
                if json.loads(p.read_text())["job"]["variant"].get("set") == ["value=20"])
    rec = json.loads(path.read_text())
    rec["job"]["variant"]["set"] = ["value=10"]  # claims to be the other variant: its params are not that one's
    path.write_text(json.dumps(rec))
    assert main(["verify", "table1-bcl", "--tier", "custom", "--sample", "0", "--no-progress"]) == 1
    assert "1 stale record(s)" in capsys.readouterr().out


# ---- provenance ----------------------------------------------------------------------------
def _git(repo, *args):
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def test_git_dirty_looks_at_code_and_specs_only(tmp_path, monkeypatch):
    from pubench.store import provenance

    repo = tmp_path / "repo"
    for rel in ("pubench/x.py", "experiments/a/t.yaml", "reports/README.md", "results/r.json"):
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text("1\n")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.email=a@b", "-c", "user.name=t", "commit", "-qm", "x")
    monkeypatch.setattr(provenance, "repo_root", lambda: repo)
    (repo / "reports/README.md").write_text("rewritten by pubench report\n")
    (repo / "results/new.json").write_text("{}\n")
    assert provenance.code_changes() == []
    (repo / "experiments/a/t.yaml").write_text("2\n")
    assert provenance.code_changes() == ["M experiments/a/t.yaml"]
    (repo / "pubench/new.py").write_text("")
    assert len(provenance.code_changes()) == 2


def test_writing_the_committed_store_from_a_dirty_tree_needs_a_flag(tmp_registry, monkeypatch, capsys):
    from pubench import paths
    from pubench.store import provenance

    tmp_registry(selftest_spec())
    monkeypatch.setattr(paths, "project_root", lambda: tmp_registry.root)
    monkeypatch.setattr(provenance, "code_changes", lambda: [" M pubench/cli.py"])
    assert main(["run", "table1-bcl", "--tier", "smoke", "--no-progress"]) == 2
    assert "uncommitted changes to code or specs" in capsys.readouterr().err
    assert main(["run", "table1-bcl", "--tier", "smoke", "--no-progress", "--allow-dirty"]) == 0


def test_verify_leaves_wall_clock_metrics_out():
    """A record's ``info.wall_clock_metrics`` (WConPU's minutes per epoch) never repeat to
    the bit; verify compares every other metric."""
    from pubench.verify import IDENTICAL, OUTSIDE, compare_metrics

    stored, rerun = {"acc": 80.0, "time": 0.51}, {"acc": 80.0, "time": 0.47}
    assert compare_metrics(stored, rerun, {}, True, "n", "id", ("time",)).verdict == IDENTICAL
    assert compare_metrics(stored, rerun, {}, True, "n", "id").verdict == OUTSIDE
    assert compare_metrics(stored, {"acc": 79.0, "time": 0.51}, {}, True, "n", "id", ("time",)).verdict == OUTSIDE


def test_verify_shows_but_does_not_judge_records_made_on_another_cpu_model(tmp_registry, capsys):
    """Bit for bit is promised on the record's own CPU model only (AMD EPYC records reran within the
    spread, not identically, on an Intel Xeon, 2026-12-07): such a record's verdict is shown and
    marked, never a failure; a rerun that crashes still fails, and a record of this machine is judged."""
    tmp_registry(selftest_spec())
    assert main(["run", "table1-bcl", "--tier", "paper", "--seeds", "1", "--no-progress"]) == 0
    capsys.readouterr()
    paths = sorted(ResultStore(tmp_registry.root / "results").folder("paper", "table1-bcl").glob("*.json"))
    for path in paths:
        rec = json.loads(path.read_text())
        rec["machine"]["cpu_model"] = "Some Other CPU"
        rec["metrics"]["score"] += 1e-9
        path.write_text(json.dumps(rec))
    assert main(["verify", "table1-bcl", "--tier", "paper", "--sample", "0", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert f"NOT JUDGED HERE: {len(paths)} outside" in out and "(other CPU, not judged)" in out, out
    assert f"{len(paths)} record(s) made on Some Other CPU; this machine is" in out
    rec = json.loads(paths[0].read_text())
    rec["machine"]["cpu_model"] = numerics.cpu_model()
    paths[0].write_text(json.dumps(rec))
    assert main(["verify", "table1-bcl", "--tier", "paper", "--sample", "0", "--no-progress"]) == 1
    assert "FAIL:" in capsys.readouterr().out
