"""`make gpu-check` (pubench.tools.gpu_check): one line and exit 0 without CUDA; with CUDA
faked away and submitit unimportable (the GPU machines have no submitit), its CPU-capable
parts (--device cpu) all run and write their figures."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from pubench.tools import gpu_check

ROOT = Path(__file__).resolve().parents[2]
CHEAP_CELL = "table3-pupl:uPU† (1)|F-MNIST-I"


@pytest.fixture
def no_cuda(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


@pytest.fixture
def no_submitit(tmp_path, monkeypatch):
    """``import submitit`` fails here and in every child process."""
    hide = tmp_path / "hide"
    (hide / "submitit").mkdir(parents=True)
    (hide / "submitit" / "__init__.py").write_text("raise ImportError('submitit is hidden (as on the GPU machines)')\n")
    monkeypatch.setenv("PYTHONPATH", f"{hide}:{ROOT}")
    monkeypatch.setitem(sys.modules, "submitit", None)
    return hide


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_gpu_check_without_cuda_prints_one_line_and_exits_0():
    if torch.cuda.is_available():
        pytest.skip("checks the message of a machine without CUDA")
    out = subprocess.run(["make", "-s", "gpu-check", f"GPU_PY={sys.executable}"], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 1 and "no CUDA device" in lines[0]


def test_with_cuda_faked_away_the_entry_point_says_one_line(no_cuda, capsys):
    assert gpu_check.main([]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and out[0].startswith("gpu-check: no CUDA device")


def test_the_cpu_capable_parts_run_without_submitit_and_write_their_figures(no_cuda, no_submitit, tmp_path,
                                                                             monkeypatch, capsys):
    monkeypatch.setenv("OUT", str(tmp_path / "out"))
    monkeypatch.setenv("PUBENCH_CACHE", str(tmp_path / "cache"))
    (tmp_path / "out").mkdir()
    docs = tmp_path / "gpu.md"
    docs.write_text("# GPU\n\n<!-- gpu-check:begin -->\nold\n<!-- gpu-check:end -->\n\nkept\n")
    rc = gpu_check.main(["--device", "cpu", "--quick", "--cell", CHEAP_CELL,
                         "--results", str(tmp_path / "results"), "--docs", str(docs)])
    out = capsys.readouterr().out
    assert rc == 0, out
    (raw,) = (tmp_path / "results").glob("gpu-check-*.json")
    res = json.loads(raw.read_text())
    assert set(res["parts"]) == {"tests", "determinism", "resume", "gpu_step", "preflight"}
    assert all(p["ok"] for p in res["parts"].values()), res["parts"]
    assert res["parts"]["determinism"]["note"].startswith("identical")
    assert res["parts"]["resume"]["checkpoint"]["resumed"][0]["epoch"] == 1
    assert [f["name"] for f in res["parts"]["gpu_step"]["frameworks"]] == ["simclr", "moco", "cmc"]
    assert res["parts"]["preflight"]["cells"][0]["preflight"]["cells"][0]["status"] == "ok"
    page = docs.read_text()
    assert "old" not in page and page.endswith("kept\n") and "| determinism | ok: identical" in page
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted([raw.name, "gpu.md"])
    progress = [line for line in out.splitlines() if line.startswith("gpu-check: ")]
    assert len(progress) >= 11  # a line before and after each part, the header and the closing lines


def _wheel(folder: Path, name: str) -> Path:
    """A minimal pure-Python wheel of a module ``name``."""
    import zipfile

    path = folder / f"{name}-1.0-py3-none-any.whl"
    info = f"{name}-1.0.dist-info"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(f"{name}/__init__.py", "VALUE = 42\n")
        z.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
        z.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        z.writestr(f"{info}/RECORD", "")
    return path


@pytest.mark.parametrize("pip_works", [True, False])
def test_wheels_are_installed_only_where_the_module_is_missing(tmp_path, monkeypatch, pip_works):
    gc = gpu_check
    (tmp_path / "whl").mkdir()
    _wheel(tmp_path / "whl", "pubench_fake_dep")
    monkeypatch.setenv("PYTHONPATH", "")
    monkeypatch.setattr(sys, "path", list(sys.path))
    if not pip_works:
        real = subprocess.run
        monkeypatch.setattr(subprocess, "run", lambda cmd, *a, **k: subprocess.CompletedProcess(cmd, 1)
                            if "pip" in cmd else real(cmd, *a, **k))
    assert gc.install_wheels(tmp_path / "whl", tmp_path / "site", needed="json") is None  # present: nothing
    note = gc.install_wheels(tmp_path / "whl", tmp_path / "site", needed="pubench_fake_dep")
    assert note and ("pip" if pip_works else "unzipped") in note
    out = subprocess.run([sys.executable, "-c", "import pubench_fake_dep; print(pubench_fake_dep.VALUE)"],
                         capture_output=True, text=True)
    assert out.stdout.strip() == "42"
