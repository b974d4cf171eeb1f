"""`pubench preflight` end to end: real paper-tier cells checked in worker processes, a minute
each on 2 busy cores (tests/markers.py: subprocess); the rest of the preflight is tested in
test_preflight.py."""

from __future__ import annotations

import json

import pytest

from pubench.cli import main
from pubench.numerics import resolve
from pubench.preflight import Options, preflight, read_resume
from pubench.preflight.plan import select
from pubench.preflight.report import cached
from pubench.registry import get_spec
from tests.preflight.test_preflight import CHEAP

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    """The preflight cache and result store in tmp_path (the project's are never touched)."""
    monkeypatch.setenv("PUBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PUBENCH_RESULTS", str(tmp_path / "results"))
    return tmp_path


def main_batches(r) -> int:
    return max(s["batches_per_epoch"] for s in r.cells[0].figures["stages"])


# ------------------------------------------------------------------ end to end (worker processes)
def test_real_paper_cells_pass_with_one_step_and_the_dry_run_uses_their_figures(scratch, capsys, monkeypatch):
    import pubench.preflight as pf

    out = scratch / "pf.json"
    written = []  # the file after each write: a killed run keeps the checks done so far
    real_write = pf.write_json
    monkeypatch.setattr(pf, "write_json", lambda r, p: (real_write(r, p), written.append(json.loads(p.read_text()))))
    args = ["preflight", "table3-pupl", "--steps", "1", "--json", str(out)]
    for cell in CHEAP:
        args += ["--only", cell]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "[1/2]" in text and "[2/2]" in text and "2 ok, 0 failed, 0 skipped" in text
    data = json.loads(out.read_text())
    assert [(w["complete"], len(w["cells"])) for w in written] == [(False, 1), (True, 2)]
    assert written[0]["cells"][0] == data["cells"][0] | {"figures": written[0]["cells"][0]["figures"]}
    assert {c["status"] for c in data["cells"]} == {"ok"}
    for c in data["cells"]:
        fig = c["figures"]
        assert c["peak_memory"]["bytes"] > 50 * 2**20 and fig["job_s"] > 0 and fig["job_flops"] > 0
        for st in fig["stages"]:
            assert st["batches_per_epoch"] > 0 and len(st["step_s"]) <= 2 and st["projected_s"] > 0
    (table,) = data["tables"]
    assert table["jobs"] == 10 and table["jobs_estimated"] == 10 and table["hours"] > 0
    job = select({"table3-pupl": get_spec("table3-pupl")}, "paper", [CHEAP[0]], resolve())[0][0].job
    assert cached(job)["job_s"] == pytest.approx(data["cells"][0]["job_s"])
    assert main(["run", "table3-pupl", "--tier", "paper", "--only", CHEAP[0], "--dry-run"]) == 0
    dry = capsys.readouterr().out
    assert "for the 5 of 5 job(s) from preflight figures" in dry and "estimated by `pubench preflight`" in dry


def test_resume_takes_an_earlier_runs_checks_and_checks_the_rest(scratch, capsys):
    out = scratch / "pf.json"
    assert main(["preflight", "table3-pupl", "--steps", "1", "--only", CHEAP[0], "--json", str(out)]) == 0
    first = json.loads(out.read_text())
    capsys.readouterr()
    args = ["preflight", "table3-pupl", "--steps", "1", "--only", CHEAP[0], "--only", CHEAP[1], "--json", str(out)]
    assert main([*args, "--resume"]) == 0
    text = capsys.readouterr().out
    assert "1 configuration(s) taken from the earlier run (--resume)" in text and "[1/1]" in text
    assert "config error" not in text  # a resumed check is not a config error
    assert "2 ok, 0 failed, 0 skipped" in text
    both = json.loads(out.read_text())
    assert both["complete"] and [c["row"] for c in both["cells"]] == ["uPU† (1)", "puCL(puPL) (1)"]
    assert both["cells"][0]["figures"] == first["cells"][0]["figures"] and both["wall_s"] > first["wall_s"]
    # a file of other settings is not continued; --resume needs the file
    assert main([*args[:2], "--steps", "2", *args[4:], "--resume"]) == 2
    assert "was checked with" in capsys.readouterr().err
    assert main(["preflight", "table3-pupl", "--only", CHEAP[0], "--resume"]) == 2
    assert "--resume needs --json" in capsys.readouterr().err


def test_retry_skipped_checks_again_what_an_earlier_run_skipped(scratch, capsys):
    out = scratch / "pf.json"
    args = ["preflight", "table3-pupl", "--steps", "1", "--only", CHEAP[0], "--json", str(out)]
    assert main([*args, "--max-memory", "0.001"]) == 0  # over this budget: skipped before it runs
    assert {k: json.loads(out.read_text())["cells"][0][k] for k in ("status", "skipped_for", "memory_budget")} == {
        "status": "skipped", "skipped_for": "memory", "memory_budget": int(0.001 * 2**30)}
    assert main([*args, "--resume"]) == 0  # a plain resume takes the skip as checked
    assert "1 configuration(s) taken from the earlier run" in capsys.readouterr().out
    assert main([*args, "--resume", "--retry-skipped", "--max-memory", "0.001"]) == 0  # no more memory: kept
    assert "1 configuration(s) taken from the earlier run (--resume), 0 skipped one(s) checked again" in (
        capsys.readouterr().out)
    assert main([*args, "--resume", "--retry-skipped"]) == 0
    text = capsys.readouterr().out
    assert "[1/1]" in text and "1 ok, 0 failed, 0 skipped" in text
    assert json.loads(out.read_text())["cells"][0]["status"] == "ok"
    assert main([*args, "--retry-skipped"]) == 2
    assert "--retry-skipped goes with --resume" in capsys.readouterr().err
    both = [*args[:6], "--only", CHEAP[1], "--max-memory", "0.001"]  # two checks at once, each 1/2 of the memory
    two = scratch / "two.json"
    assert main([*both, "--jobs", "2", "--json", str(two)]) == 0
    assert "2 configuration(s) skipped over a check's 1/2 share" in capsys.readouterr().out
    assert main([*both, "--jobs", "2", "--json", str(two), "--resume"]) == 0  # none left: the hint still comes
    assert "2 configuration(s) skipped over a check's 1/2 share" in capsys.readouterr().out
    legacy = json.loads(two.read_text())  # a file written before skips said what they were for
    for c in legacy["cells"]:
        del c["skipped_for"]
    two.write_text(json.dumps(legacy))
    taken, _ = read_resume(two, Options(steps=1))
    assert sorted(check["skipped_for"] for _, _, check in taken.values()) == ["memory", "memory"]
    assert main([*both, "--jobs", "1"]) == 0
    assert "share of the memory" not in capsys.readouterr().out


def test_a_configuration_over_the_memory_estimate_is_checked_at_a_smaller_batch(scratch, monkeypatch):
    from pubench.preflight import plan

    opts = Options(steps=1, only=[CHEAP[0]], max_memory=4 * 2**30)
    full = preflight({"table3-pupl": get_spec("table3-pupl")}, opts, say=lambda s: None)
    assert full.cells[0].status == "ok" and "batch_divisor" not in full.cells[0].check
    # 4x the count (the measured peak) at 1/4 of the batch fits the 4 GiB, at 1/2 it does not
    monkeypatch.setattr(plan, "trained_activation_bytes", lambda job: 4 * 2**30)
    r = preflight({"table3-pupl": get_spec("table3-pupl")}, opts, say=lambda s: None)
    cell = r.cells[0]
    assert cell.status == "ok" and cell.check["batch_divisor"] == 4
    assert any(n.startswith("checked at 1/4 of the paper's batch") for n in cell.check["notes"])
    assert 4 * main_batches(full) - 3 <= main_batches(r) <= 4 * main_batches(full)  # the worker ran batch / 4
    monkeypatch.setattr(plan, "trained_activation_bytes", lambda job: 12 * 2**30)  # 1/8 of it may fit: tried
    r = preflight({"table3-pupl": get_spec("table3-pupl")}, opts, say=lambda s: None)
    assert r.cells[0].status == "ok" and r.cells[0].check["batch_divisor"] == 8
    monkeypatch.setattr(plan, "trained_activation_bytes", lambda job: 64 * 2**30)  # even 1/8 is over: skipped
    r = preflight({"table3-pupl": get_spec("table3-pupl")}, opts, say=lambda s: None)
    assert r.cells[0].status == "skipped" and "even at 1/8 of its batch: check it on a GPU" in r.cells[0].reason
