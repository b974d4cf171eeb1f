"""A GPU lease simulated on the CPU, as the lease runs it (docs/gpu.md, "The lease, step by step"):

* **what travels, exactly**: the files git would copy (tracked, and untracked ones it does not
  ignore) plus the carried ``.campaign/`` and ``.whl/``, nothing of ``../shared``, into a fresh
  folder, its size counted in 4-KiB blocks within the lease's 64 MiB;
* **the image's python**: this interpreter, with ``pydantic`` (and its parts) and ``submitit``
  taken out of its site-packages: a ``sitecustomize`` on ``PYTHONPATH`` (every child process
  inherits it) replaces the site-packages folder on ``sys.path`` with a folder of links to
  everything in it but those, so they are simply not installed there, as on the GPU image,
  while wheels installed elsewhere still import (a blocker that refused the names everywhere
  would also refuse the wheels' copies, which the recipe must be able to install). ``.whl/``
  holds wheels built from this interpreter's own installed files of those packages (the same
  versions the docs' ``pip download`` fetches, tagged for this interpreter);
* ``make gpu-paper`` there with ``--device cpu`` on one cheap paper-tier cell (a BCL
  simulation's sixth seed, which no committed record holds) in a 150-second budget (the window
  ends once nothing else fits: on this project's loaded 2 cores its set-up alone took 40 s), and, where
  ../shared/data has MNIST, an MNIST cell that travels in ``.campaign/`` and is unpacked there
  but does not fit the budget; then ``$OUT`` against the tool's limits (files, sizes, depth,
  names), ``pubench campaign import`` and ``report`` here.

Before the wheel step came from pubench/tools, this failed at ``No module named 'gpu_check'``.
The other two tests carry a stopped job's checkpoint from one lease to the next through
``import`` and ``pack``, and measure the packing ratio as a window's first minutes do.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import site
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from pubench.campaign import lease, travel
from pubench.cli import main

ROOT = Path(__file__).resolve().parents[2]
#: what the GPU image lacks: pydantic with the packages only it brings, and submitit
HIDDEN = ("pydantic", "pydantic_core", "annotated_types", "typing_inspection", "submitit")
QUEUE = """\
tier: paper
device: cpu
entries:
  - spec: fig5-bcl
    only: ["BCL|N=16"]
    seeds: 6
    why: the sixth seed of a cheap paper-tier cell (a BCL simulation, seconds on one core); seeds 0-4 are committed
"""
MNIST_ENTRY = """\
  - spec: table1-punce
    only: ["MNIST n_P=1k|infoNCE"]
    seeds: 1
    why: its data travel in .campaign/ and are unpacked there; the job (13 CPU-hours) never fits the budget
"""


def travelling(root: Path) -> list[str]:
    """What the lease copies of a working tree: tracked files and untracked ones git does not ignore."""
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=root,
                         capture_output=True, check=True, timeout=60)
    return sorted({p for p in out.stdout.decode().split("\0") if p and (root / p).is_file()})


def image_python(tmp: Path) -> Path:
    """A folder to put first on PYTHONPATH: this interpreter then runs without :data:`HIDDEN`."""
    site_dirs = [d for d in site.getsitepackages() if Path(d).is_dir()]
    view, shim = tmp / "image-site-packages", tmp / "image-shim"
    view.mkdir()
    shim.mkdir()
    for d in site_dirs:
        for entry in Path(d).iterdir():
            top = entry.name.split("-")[0].split(".")[0].lower().replace("-", "_")
            if top not in HIDDEN and not (view / entry.name).exists():
                (view / entry.name).symlink_to(entry)
    (shim / "sitecustomize.py").write_text(
        "import sys\n"
        f"_SITE, _VIEW = {site_dirs!r}, {str(view)!r}\n"
        "sys.path[:] = list(dict.fromkeys(_VIEW if p in _SITE else p for p in sys.path))\n")
    return shim


def wheels_of_installed(folder: Path, names=HIDDEN) -> list[Path]:
    """Wheels of this interpreter's installed ``names``, built from their installed files."""
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for name in names:
        dist = importlib.metadata.distribution(name)
        tag = next(line.split(":", 1)[1].strip() for line in dist.read_text("WHEEL").splitlines()
                   if line.startswith("Tag:"))
        path = folder / f"{dist.metadata['Name'].replace('-', '_')}-{dist.version}-{tag}.whl"
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
            for f in dist.files:
                src = Path(dist.locate_file(f))
                if ".." in f.parts or "__pycache__" in f.parts or not src.is_file():
                    continue
                z.write(src, f.as_posix())
        out.append(path)
    return out


def device_env(shim: Path, tmp: Path, out: Path) -> dict[str, str]:
    """The environment there: no store, data root or cache of this machine, the image's python."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PUBENCH_", "PYTHON"))}
    return env | {"PYTHONPATH": str(shim), "PUBENCH_SITE": str(tmp / "site"), "OUT": str(out),
                  "PUBENCH_CORE_SLOTS": "off",  # this machine's slots are held by other runs; the device has its own
                  "PUBENCH_CACHE": str(tmp / "device-cache")}


def test_make_gpu_paper_on_a_simulated_device(tmp_path, data_root, monkeypatch, capsys):
    if shutil.which("make") is None:
        pytest.skip("needs make")
    device, out = tmp_path / "device", tmp_path / "out"
    out.mkdir()
    files = travelling(ROOT)
    for rel in files:
        (device / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, device / rel)
    queue = device / "campaigns" / "simulated-device.yaml"
    queue.write_text(QUEUE + (MNIST_ENTRY if data_root is not None else ""))
    wheels_of_installed(device / ".whl")
    shim = image_python(tmp_path)
    env = device_env(shim, tmp_path, out)
    for name in ("pydantic", "submitit"):
        probe = subprocess.run([sys.executable, "-c", f"import {name}"], env=env, capture_output=True, text=True)
        assert probe.returncode != 0 and "No module named" in probe.stderr, name  # the image's python

    # here: pack what the queue's pending jobs need (the same command, a fast xz preset: the content is the same)
    monkeypatch.setattr(travel, "XZ_PRESET", 0)
    monkeypatch.setenv("PUBENCH_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("PUBENCH_RESULTS", str(ROOT / "results"))  # the committed store decides what is pending
    if data_root is not None:
        assert main(["prepare", "mnist", "--from", str(data_root)]) == 0
    assert main(["campaign", "pack", "--queue", str(queue), "--carry", str(device / ".campaign"),
                 "--allow-dirty"]) == 0
    assert (data_root is None) == (travel.carried(device / ".campaign") == [])
    size = lease.tree_blocks([device / rel for rel in files] + [queue]) + travel.folder_bytes(
        device / ".campaign") + travel.folder_bytes(device / ".whl")
    assert size <= lease.TRAVEL_LIMIT, f"{size / 2**20:.1f} MiB travel"
    assert not (device / ".git").exists() and not (device / "data").exists()

    # there: one command
    t0 = time.time()
    proc = subprocess.run(["make", "-s", "gpu-paper", f"GPU_PY={sys.executable}", "GPU_BUDGET=150s",
                           "GPU_PAPER_ARGS=--device cpu --queue campaigns/simulated-device.yaml"],
                          cwd=device, env=env, capture_output=True, text=True, timeout=300)
    said = proc.stdout + proc.stderr
    assert proc.returncode == 0, said[-3000:]
    assert time.time() - t0 < 200, said[-2000:]
    assert f"installed {len(HIDDEN)} wheel(s) from .whl/" in said  # past the wheel step
    assert "campaign: 1 ok, 0 failed" in said
    if data_root is not None:
        assert "mnist: MNIST/raw/train-images-idx3-ubyte unpacked from .campaign/" in said
    assert lease.out_problems(out) == []
    names = sorted(p.name for p in out.iterdir())
    assert len(names) == 2 and names[0].endswith(".json") and names[1].endswith(".tar.gz"), names

    # back here: import, then report
    monkeypatch.setenv("PUBENCH_RESULTS", str(tmp_path / "store"))
    monkeypatch.setenv("PUBENCH_REPORTS", str(tmp_path / "reports"))
    capsys.readouterr()
    assert main(["campaign", "import", *map(str, sorted(out.iterdir())), "--allow-dirty"]) == 0
    assert "wrote 1 record(s)" in capsys.readouterr().out
    (record,) = (tmp_path / "store" / "paper" / "fig5-bcl").glob("BCL__N=16__s5--*.json")
    assert main(["report", "fig5-bcl", "--tier", "paper"]) == 0
    assert (tmp_path / "reports" / "paper" / "fig5-bcl.md").is_file()


STOPPED_QUEUE = """\
tier: smoke
device: cpu
entries:
  - spec: table1-punce
    only: ["MNIST n_P=1k|infoNCE"]
    why: a training job stopped at an epoch's end and resumed by the next window
    projected_min: 0.2
"""
#: the smoke tier's one pre-training epoch, made long enough to be stopped in the middle (a copy of the specs)
SMOKE_PRETRAIN = "pretrain: {epochs: 1, batch_size: 64, loss: {prior: null}}"


def long_smoke_specs(tmp: Path) -> Path:
    shutil.copytree(ROOT / "experiments", tmp / "experiments")
    path = tmp / "experiments" / "punce" / "table1-punce.yaml"
    text = path.read_text()
    assert SMOKE_PRETRAIN in text
    path.write_text(text.replace(SMOKE_PRETRAIN, SMOKE_PRETRAIN.replace("epochs: 1,", "epochs: 60,")))
    return tmp / "experiments"


def _window(queue: Path, carry: Path, out: Path, results: Path, data: Path, stop_in_training: bool) -> str:
    env = {k: v for k, v in os.environ.items() if k != "PUBENCH_CAMPAIGN_STARTED"} | {
        "PUBENCH_RESULTS": str(results), "PUBENCH_DATA": str(data), "PUBENCH_CORE_SLOTS": "off",
        "PUBENCH_ENCODER_CACHE": "0", "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "pubench", "campaign", "--device", "cpu", "--queue", str(queue),
                             "--budget", "5m", "--out", str(out), "--carry", str(carry), "--concurrency", "1"],
                            env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if stop_in_training:  # once its first periodic checkpoint is there, the job is inside its training loop
        deadline = time.time() + 240
        while not list((results / ".checkpoints").glob("*/*.pt")) and time.time() < deadline and proc.poll() is None:
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGTERM)  # as at the budget's end: the job checkpoints its epoch and stops
    said, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0, said[-3000:]
    return said


def test_a_stopped_job_resumes_in_the_next_lease_from_its_returned_checkpoint(tmp_path, data_root, monkeypatch,
                                                                              capsys):
    if data_root is None:
        pytest.skip("../shared/data not present")
    import json

    monkeypatch.setenv("PUBENCH_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("PUBENCH_EXPERIMENTS", str(long_smoke_specs(tmp_path)))
    monkeypatch.setattr(travel, "XZ_PRESET", 0)  # pack carries MNIST too: fast, the same content
    assert main(["prepare", "mnist", "--from", str(data_root)]) == 0
    (tmp_path / "q.yaml").write_text(STOPPED_QUEUE)
    first = _window(tmp_path / "q.yaml", tmp_path / "none", tmp_path / "out1", tmp_path / "lease1", tmp_path / "data",
                    stop_in_training=True)
    assert "1 interrupted" in first and "checkpoints: 1 of the 1 stopped job(s)' checkpoints in the archive" in first
    assert lease.out_problems(tmp_path / "out1") == []

    monkeypatch.setenv("PUBENCH_RESULTS", str(tmp_path / "here"))
    capsys.readouterr()
    assert main(["campaign", "import", *map(str, sorted((tmp_path / "out1").iterdir())), "--allow-dirty"]) == 0
    assert "checkpoints of 1 stopped job(s) written" in capsys.readouterr().out
    assert main(["campaign", "pack", "--queue", str(tmp_path / "q.yaml"), "--carry", str(tmp_path / ".campaign"),
                 "--allow-dirty"]) == 0
    assert list((tmp_path / ".campaign" / "checkpoints").glob("*/*.pt"))

    second = _window(tmp_path / "q.yaml", tmp_path / ".campaign", tmp_path / "out2", tmp_path / "lease2",
                     tmp_path / "data", stop_in_training=False)
    assert "checkpoints: 1 stopped job(s) resume from what .campaign/ carried" in second and "1 ok" in second
    (record,) = (tmp_path / "lease2" / "smoke" / "table1-punce").glob("*infoNCE*s0--*.json")
    resumed = json.loads(record.read_text())["info"]["checkpoint"]["resumed"]
    assert resumed and resumed[0]["stage"].startswith("pretrain") and 10 <= resumed[0]["epoch"] < 60


def test_the_window_measures_packing_on_the_queue_first_network(tmp_path, data_root, monkeypatch):
    """What a window does first on a GPU without a packing figure of its own, here on the CPU:
    worker processes of the first network held at their first step, then run 1 and 2 at once."""
    if data_root is None:
        pytest.skip("../shared/data not present")
    import json

    from pubench import numerics
    from pubench.campaign import calibrate, concurrency, plan
    from pubench.jobs import expand
    from pubench.preflight.packing import from_measurement
    from pubench.registry import get_spec

    monkeypatch.setenv("PUBENCH_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("PUBENCH_CORE_SLOTS", "off")
    assert main(["prepare", "mnist", "--from", str(data_root)]) == 0
    # the stage must outlast the schedule (two 4 s phases): 400 smoke epochs ran out first on an idle core
    job = expand(get_spec("table1-punce"), "smoke", 1, ["MNIST n_P=1k|infoNCE"],
                 numerics=numerics.resolve(device="cpu"), overrides=["pretrain.epochs=100000"]).jobs[0]
    said = []
    result = calibrate.measure(job, [1, 2], said.append, phase_s=4.0, ready_limit_s=180)
    assert result is not None, said
    assert result["throughput"]["1"] > 0 and result["ratios"]["2"] > 0 and result["stage"] == "pretrain info_nce"
    path = calibrate.write(result, plan.Planned(job, 0, 1.0, "test"), concurrency.Device("cpu", "a CPU", None),
                           tmp_path / "out")
    doc = json.loads(path.read_text())
    assert path.name.startswith("packing-cpu-") and lease.out_problems(tmp_path / "out") == []
    assert from_measurement(doc).ratio(2) == doc["ratios"]["2"] and "campaign calibration" == doc["method"]
