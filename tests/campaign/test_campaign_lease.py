"""A GPU lease as the code plans it (pubench.campaign.lease): one lease holds one window of one
command; a dry run for each machine a lease may bring fits it, every figure marked measured or
conservative; data travel whole or not at all and are checked before anything is packed; a
job planned far below its CPU cost is flagged; the packing on a GPU without a figure of its
own is R(N) = 1 until measured; what comes back keeps to the tool's limits, stopped jobs'
checkpoints with it, and goes on to the next lease. (The same on a simulated device, through
`make gpu-paper`: tests/campaign/test_simulated_device.py.)"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from pubench.campaign import archive, lease, travel
from pubench.cli import main

ROOT = Path(__file__).resolve().parents[2]
MNIST_ONLY = """\
tier: paper
device: cuda
entries:
  - spec: table1-punce
    only: ["MNIST n_P=1k|infoNCE"]
    seeds: 1
    why: a test
"""


def tiny_files(root: Path, names=("mnist", "fashion_mnist"), size: int = 2000) -> Path:
    """Every file of ``names``, a few bytes of gzip each (what `pubench prepare` places)."""
    for k, name in enumerate(names):
        for j, f in enumerate(travel.files_of(name)):
            path = root / f.path
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(gzip.compress(os.urandom(size) if k else bytes(range(j, j + 100)) * (size // 100)))
    return root


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    monkeypatch.setenv("PUBENCH_RESULTS", str(tmp_path / "results"))
    monkeypatch.setenv("PUBENCH_DATA", str(tmp_path / "data"))
    monkeypatch.delenv("PUBENCH_CAMPAIGN_STARTED", raising=False)
    return tmp_path


def test_one_lease_holds_one_window():
    assert lease.windows_per_lease() == 1  # 15 min - a 3-min start = 12 min: one command of 10, 2 min left
    assert lease.windows_per_lease(start_s=60) == 1  # 14 min: still under two commands
    assert lease.DEVICE_TIME_S - lease.START_S[1] - lease.COMMAND_LIMIT_S < lease.NEW_START_NEEDS_S
    assert lease.WINDOW_BUDGET_S < lease.COMMAND_LIMIT_S == lease.TIMEOUT_S
    assert "1 window per lease" in lease.lines()[0]
    assert lease.KINDS["nvidia-h100-x1"].cores == lease.KINDS["nvidia-h200"].cores == 16
    assert "pydantic" in lease.IMAGE_LACKS and "submitit" in lease.IMAGE_LACKS


def test_what_would_not_come_back_is_named(tmp_path):
    out = tmp_path / "out"
    (out / "a" / "b" / "c").mkdir(parents=True)
    for k in range(8):
        (out / f"f{k}.json").write_text("{}")
    assert lease.out_problems(out) == []
    (out / "a" / "b" / "c" / "deep.json").write_text("{}")
    (out / "odd name.json").write_text("{}")
    with open(out / "big.tar.gz", "wb") as f:
        f.truncate(17 * 2**20)
    problems = "\n".join(lease.out_problems(out))
    assert "more than 2 folders down" in problems and "not a plain name" in problems
    assert "over 16 MiB" in problems and "11 files, over 8" in problems


def test_sizes_count_in_blocks(tmp_path):
    (tmp_path / "one").write_bytes(b"x")
    (tmp_path / "two").write_bytes(b"x" * 4097)
    assert lease.tree_blocks([tmp_path / "one", tmp_path / "two"]) == 3 * 4096
    assert travel.folder_bytes(tmp_path) == 3 * 4096


@pytest.mark.parametrize("kind", sorted(lease.KINDS))
def test_a_dry_run_for_each_lease_machine_fits_one_command_and_one_lease(kind, scratch, capsys):
    tiny_files(scratch / "data", ("mnist",))
    travel.pack(["mnist"], scratch / ".campaign", scratch / "data", say=lambda _: None, preset=0)
    assert main(["campaign", "--for", kind, "--carry", str(scratch / ".campaign")]) == 0
    out = capsys.readouterr().out
    machine = lease.KINDS[kind]
    assert f"on {machine.gpu} (cuda, planned for a lease's {kind}); budget 570 s" in out
    assert f"cores: 16 (16 usable core(s), stated for {kind}" in out
    assert f"{machine.gpu_memory_gib:.2f} GiB stated for {kind}" in out
    assert "data missing: fashion_mnist (not carried whole in .campaign/)" in out  # left out, not counted:
    assert "of 75 pending job(s)" in out  # the three MNIST entries' 25 + 40 + 10 jobs
    assert "packing (conservative): R(" in out and "no packing measured on " + machine.gpu in out
    assert "calibration: " in out and "measure R(N) for N = 1, 2, 4, 8" in out
    assert "flagged, not trusted: 15 job(s)" in out and "untrained encoder" in out
    assert "one command, one lease" in out and "timeout_s 600" in out
    started = next(line for line in out.splitlines() if line.startswith("  job times of those started"))
    assert "measured" in started and "conservative" in started
    if kind == "nvidia-h100-x1":  # no figure of its own: the H200's, scaled by the worst ratio the two GPUs showed
        assert "NVIDIA H200 figures x 1.28 on NVIDIA H100 80GB HBM3 (conservative" in out
        assert "(conservative)" in next(line for line in out.splitlines() if line.startswith("  [1]"))
    else:
        assert "5 measured, 20 conservative" in next(line for line in out.splitlines() if line.startswith("  [1]"))


def test_pack_checks_every_data_set_first_and_leaves_nothing(scratch, capsys):
    (scratch / "q.yaml").write_text(MNIST_ONLY)
    folder = scratch / ".campaign"
    assert main(["campaign", "pack", "--queue", str(scratch / "q.yaml"), "--carry", str(folder), "--allow-dirty"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "the data root lacks mnist" in err[0]
    assert "`pubench prepare mnist --from ../shared/data`" in err[0] and "nothing was written" in err[0]
    assert not folder.exists()


def test_a_data_set_travels_whole_or_not_at_all(tmp_path):
    data = tiny_files(tmp_path / "data", size=40_000)  # fashion_mnist's random bytes do not compress
    said = []
    probe = travel.pack(["mnist"], tmp_path / "probe", data, say=lambda _: None, preset=0)
    room = sum(-(-f["packed_bytes"] // 4096) * 4096 for f in probe["files"]) + 3 * 40_000
    folder = tmp_path / ".campaign"
    manifest = travel.pack(["mnist", "fashion_mnist"], folder, data, room=room, say=said.append, preset=0)
    assert manifest["datasets"] == ["mnist"] and {f["dataset"] for f in manifest["files"]} == {"mnist"}
    assert not list(folder.glob("FashionMNIST*")) and travel.carried(folder) == ["mnist"]
    assert any("fashion_mnist: left out whole" in s and "travels whole or not at all" in s for s in said)
    # a folder holding part of a data set (packed by older code) unpacks none of it
    m = json.loads((folder / "data.json").read_text())
    m["files"] = m["files"][:2]
    (folder / "data.json").write_text(json.dumps(m))
    assert travel.carried(folder) == [] and travel.unpack(folder, tmp_path / "there", {"mnist"}, say=print) == []


def test_a_job_planned_far_below_its_cpu_cost_is_flagged():
    from pubench import numerics
    from pubench.campaign import plan as plans
    from pubench.campaign.queue import load

    queue = load(ROOT / "campaigns" / "paper-gpu.yaml")
    plan = plans.make(queue, "paper", numerics.resolve(device="cuda"), _EmptyStore())
    plans.for_device(plan, "NVIDIA H200")
    by_cell = {(p.job.row, p.job.col): p for p in plan.pending if p.job.seed_index == 0}
    probe = by_cell[("MNIST n_P=1k", "untrained encoder")]
    assert probe.base_s < 1.0 and probe.projected_s > 60 and probe.mark == "conservative"  # 0.4 s: not trusted
    assert "not trusted: its CPU figure spends 61 s outside training" in probe.flag
    info = by_cell[("MNIST n_P=1k", "infoNCE")]
    assert info.mark == "measured" and info.flag is None and info.projected_s == info.base_s
    plans.for_device(plan, "NVIDIA H100 80GB HBM3", (1.1, "a test's measurement"))  # re-planned from the base
    assert info.projected_s == pytest.approx(info.base_s * 1.1) and info.mark == "measured"


class _EmptyStore:
    def scan(self, tier, spec_id):
        return type("Scan", (), {"done": set(), "records": []})()

    def claims(self, tier, spec_id):
        return type("Claims", (), {"live_ids": staticmethod(lambda: set())})()


def test_a_gpu_without_a_packing_figure_of_its_own_packs_nothing_until_measured(tmp_path):
    from pubench.preflight.packing import campaign_packing

    (tmp_path / "packing-cuda-2026-12-01.json").write_text(json.dumps(
        {"device": "cuda", "device_name": "NVIDIA H200", "date": "2026-12-01 10:00 UTC", "ratios": {"2": 1.8, "4": 2.9}}))
    other = campaign_packing("cuda", "NVIDIA H100 80GB HBM3", tmp_path)
    assert other.basis == "conservative" and other.ratio(8) == 1.0 and other.slowdown(4) == 4.0
    assert "only on NVIDIA H200" in other.source
    own = campaign_packing("cuda", "NVIDIA H200", tmp_path)
    assert own.basis == "measured" and own.ratio(4) == 2.9 and own.ratio(16) == 2.9  # no gain past what was seen


def _stopped_store(tmp_registry, tmp_path):
    """A store with the selftest table's records, one job of it stopped with two checkpoint files."""
    from pubench.campaign import plan as plans
    from pubench.campaign.queue import Entry, Queue
    from pubench.numerics import resolve
    from pubench.store import ResultStore
    from pubench.train.checkpoint import checkpoint_root
    from tests.conftest import selftest_spec

    tmp_registry(selftest_spec())
    assert main(["run", "table1-bcl", "--tier", "smoke", "--no-progress", "--only", "A|x"]) == 0
    store = ResultStore(tmp_path / "results")
    queue = Queue(tmp_path / "q.yaml", "smoke", "cpu", (Entry("table1-bcl", (), "a test"),))
    plan = plans.make(queue, "smoke", resolve(device="cpu"), store)
    stopped = plan.pending[0].job
    folder = checkpoint_root(store.root) / stopped.id
    folder.mkdir(parents=True)
    for name in ("pretrain_info_nce.0.pt", "linear_probe__nnpu_.0.pt"):
        (folder / name).write_bytes(os.urandom(3000))
    return store, stopped


def test_stopped_jobs_checkpoints_come_back_and_go_on_to_the_next_lease(tmp_registry, tmp_path, monkeypatch, capsys):
    from pubench.store import ResultStore
    from pubench.train.checkpoint import checkpoint_root

    store, stopped = _stopped_store(tmp_registry, tmp_path)
    records = [p for p in (store.root / "smoke" / "table1-bcl").glob("*.json")]
    summary = {"jobs": [{"id": stopped.id, "name": stopped.name, "spec": "table1-bcl", "tier": "smoke",
                         "status": "interrupted"}], "device": {"name": "test"}}
    checkpoints = travel.checkpoint_files(checkpoint_root(store.root), [stopped.id, "0123456789abcdef"])
    out = tmp_path / "out"
    files = archive.bundle(records, store.root, summary, out, "campaign-x", checkpoints)
    assert lease.out_problems(out) == []
    with tarfile.open(files[0]) as tar:
        names = tar.getnames()
    assert f"checkpoints/{stopped.id}/pretrain_info_nce.0.pt" in names and len(names) == 1 + len(records) + 2
    assert json.loads(files[-1].read_text())["checkpoints"] == [stopped.id]

    # into another store (here, after the lease): the records and the checkpoints where the job resumes from
    monkeypatch.setenv("PUBENCH_RESULTS", str(tmp_path / "here"))
    assert main(["campaign", "import", str(files[0]), "--allow-dirty"]) == 0
    assert "checkpoints of 1 stopped job(s) written" in capsys.readouterr().out
    here = ResultStore(tmp_path / "here")
    got = checkpoint_root(here.root) / stopped.id
    assert sorted(p.read_bytes() for p in got.iterdir()) == sorted(p.read_bytes() for p in checkpoints[stopped.id])

    # pack carries them; the next lease's window puts them back in its own store
    carry = tmp_path / ".campaign"
    assert travel.pack_checkpoints(here.root, [stopped.id], carry, room=None, say=print) == [stopped.id]
    assert travel.pack_checkpoints(here.root, [stopped.id], carry, room=10, say=print) == []  # over the room: none
    assert not (carry / "checkpoints" / stopped.id).exists()
    travel.pack_checkpoints(here.root, [stopped.id], carry, room=None, say=print)
    there = tmp_path / "there"
    assert travel.restore_checkpoints(carry, there, [stopped.id], say=print) == 1
    assert sorted(p.name for p in (checkpoint_root(there) / stopped.id).iterdir()) == sorted(
        p.name for p in checkpoints[stopped.id])
    assert travel.restore_checkpoints(carry, there, [stopped.id], say=print) == 0  # its own are kept


def test_import_refuses_checkpoints_of_a_job_not_stopped(tmp_registry, tmp_path, monkeypatch, capsys):
    from pubench.train.checkpoint import checkpoint_root

    store, stopped = _stopped_store(tmp_registry, tmp_path)
    summary = {"jobs": [], "device": {"name": "test"}}
    files = archive.bundle([], store.root, summary, tmp_path / "out", "campaign-y",
                           travel.checkpoint_files(checkpoint_root(store.root), [stopped.id]))
    monkeypatch.setenv("PUBENCH_RESULTS", str(tmp_path / "here"))
    assert main(["campaign", "import", str(files[0])]) == 1
    assert "does not list as stopped" in capsys.readouterr().out
    assert not (checkpoint_root(tmp_path / "here") / stopped.id).exists()


def test_make_gpu_paper_where_python_lacks_what_the_campaign_imports_says_one_line(tmp_path):
    """The dry run on a python without tabulate (this project's system python): one line, exit 2."""
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "sitecustomize.py").write_text(
        "import sys\nclass _Hide:\n    def find_spec(self, name, path=None, target=None):\n"
        "        if name.partition('.')[0] == 'tabulate':\n"
        "            raise ModuleNotFoundError(\"No module named 'tabulate'\", name='tabulate')\n"
        "sys.meta_path.insert(0, _Hide())\n")
    env = {k: v for k, v in os.environ.items() if k != "PUBENCH_CAMPAIGN_STARTED"}
    out = subprocess.run(["make", "-s", "gpu-paper", f"GPU_PY={sys.executable}", "GPU_PAPER_ARGS=--dry-run",
                          f"OUT={tmp_path / 'out'}"], cwd=ROOT, env=env | {"PYTHONPATH": str(shim)},
                         capture_output=True, text=True, timeout=120)
    assert out.returncode != 0 and "Traceback" not in out.stdout + out.stderr
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 1 and "lacks tabulate, which `pubench campaign --dry-run` imports" in lines[0]
