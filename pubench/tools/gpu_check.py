"""The whole GPU path in one command (``make gpu-check``): on a machine with one CUDA GPU,
in at most 8 minutes, run

1. ``tests``: the CUDA tests (``tests/train/test_accel.py -k cuda``: channels_last, data
   placement, bf16, deterministic ResNet training twice, a stopped and resumed
   pre-training bit for bit);
2. ``determinism``: one short job (contrastive pre-training + linear probe, ResNet-18 at
   1/4 width, synthetic CIFAR-10) twice through the job worker (``execute_job``):
   identical metrics and loss curves;
3. ``resume``: the same job stopped (SIGTERM at its first epoch boundary, as SLURM's
   pre-emption does), then rerun: it resumes from its checkpoint and equals the
   uninterrupted run bit for bit;
4. ``gpu_step``: :mod:`pubench.tools.gpu_step` for SimCLR, MoCo and CMC at table1-pucl's
   paper size (images/s, step / network ratio, peak memory);
5. ``preflight``: ``pubench preflight --device cuda`` over one paper-tier cell per track
   (contrastive images, end-to-end PU, graphs, text);

then write the figures into ``docs/gpu.md`` (the section between its ``gpu-check``
markers) and all of them to ``benchmarks/results/gpu-check-<date>.json``, and copy both to
``$OUT`` when it is set. Each part runs in its own process with a time limit out of the
budget (``--budget``, default 450 s), so one failing or hanging part is recorded and the
others still run; the exit status is 1 when any part failed.

Without CUDA it prints one line and exits 0. ``--device cpu`` runs the parts a CPU can
(the CUDA tests then skip; ``--quick``: smaller job and benchmark sizes, ``--cell`` picks
cheap preflight cells), which is how it is tested. Run from the source tree
(``PYTHONPATH=.``, no install); where ``pydantic`` is missing and ``.whl/`` holds wheels,
they are installed first with ``pip install --no-index --no-deps --target /tmp/pubench-site``
(the GPU machines have no network; ``.whl/`` is an ignored folder, docs/performance.md "Speed on GPUs").
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SITE = Path(tempfile.gettempdir()) / "pubench-site"
PARTS = ("tests", "determinism", "resume", "gpu_step", "preflight")
#: part -> its time limit (s) at most; each also gets no more than the budget left
LIMITS = {"tests": 150, "determinism": 90, "resume": 90, "gpu_step": 120, "preflight": 240}
#: one paper-tier cell per track (ID:ROW|COL)
TRACK_CELLS = ("table1-pucl:SimCLR|CIFAR10", "table2-wconpu:WConPU|CIFAR-10",
               "table2-pucl:InfoGraph+PUCL(alpha=0.1)|DD", "table5-punce:20 labeled|CE + puNCE")
MARK_BEGIN, MARK_END = "<!-- gpu-check:begin -->", "<!-- gpu-check:end -->"


def say(line: str) -> None:
    print(f"gpu-check: {line}", flush=True)


# ------------------------------------------------------------------ the short job
def job_params(quick: bool) -> dict:
    """Contrastive pre-training (3 epochs) + a linear probe on synthetic CIFAR-10."""
    width, n = (0.125, 256) if quick else (0.25, 2048)
    return {
        "data": {"dataset": "cifar10", "labels": {"positive": [0, 1, 8, 9]},
                 "split": {"kind": "pu", "n_labeled": n // 8, "scheme": "single_training_set"},
                 "subset": {"train": n, "test": n // 2}},
        "model": {"backbone": {"name": "resnet18_cifar", "width": width}, "projector": {"hidden": 64, "out": 32}},
        "pretrain": {"framework": {"name": "simclr"}, "loss": {"name": "punce", "temperature": 0.5}, "epochs": 3,
                     "batch_size": 64, "optimizer": {"name": "adam", "lr": 1.0e-3},
                     "augment": {"name": "crop", "scale": [0.5, 1.0]}},
        "downstream": {"name": "linear_probe", "risk": "nnpu", "epochs": 3, "batch_size": 64,
                       "optimizer": {"name": "adam", "lr": 1.0e-3}},
    }


class StopAtFirstEpochEnd:
    """A loop callback that asks the job to stop at its first epoch boundary (what the worker's
    handler of SIGTERM does: the loop writes its checkpoint there and the job stops)."""

    def __init__(self):
        self.asked = False

    def begin(self, trainer, epochs: int, first: int) -> None:
        pass

    def epoch_end(self, trainer, stats, epochs: int) -> None:
        if not self.asked:
            self.asked = True
            trainer.ctx.session.request_stop(15)

    def end(self, trainer) -> None:
        pass


def run_job(device: str, quick: bool, store: Path, stop_after_first_epoch: bool = False) -> dict:
    """The short job through ``execute_job`` into ``store``; its record (or the failure)."""
    from pubench import numerics
    from pubench.errors import JobInterrupted
    from pubench.executors.worker import execute_job
    from pubench.jobs.plan import Job
    from pubench.preflight.standins import StandIns, plan
    from pubench.train.context import JobContext

    params = job_params(quick)
    job = Job("gpu-check", 1, "smoke", "short job", device, 0, "contrastive_probe", params, {"data": 1, "init": 2},
              numerics.resolve(device=device).to_dict())
    stop = (StopAtFirstEpochEnd(),) if stop_after_first_epoch else ()
    try:
        status = execute_job(job, store, checkpoint_every=1,
                             context=JobContext(data=StandIns(plan(job.task, params).synthetic), callbacks=stop))
    except JobInterrupted:
        status = "interrupted"
    from pubench.store import ResultStore

    st = ResultStore(store)
    ok = [r for r in st.records(job.tier, job.spec_id) if r["job"]["id"] == job.id]
    failed = [r for r in st.records(job.tier, job.spec_id, failed=True) if r["job"]["id"] == job.id]
    return {"status": status, "record": ok[-1] if ok else (failed[-1] if failed else None)}


def _same(a: dict, b: dict) -> tuple[bool, str]:
    ma, mb = a["record"]["metrics"], b["record"]["metrics"]
    la = a["record"]["info"]["pretrain"]["loss"]
    lb = b["record"]["info"]["pretrain"]["loss"]
    diff = [k for k in ma if ma[k] != mb.get(k)]
    if diff or la != lb:
        return False, f"metrics differ: {', '.join(diff) or 'none'}; loss curves {'equal' if la == lb else 'differ'}"
    return True, f"identical ({len(ma)} metrics, {len(la)} epochs of pre-training loss)"


def part_determinism(device: str, quick: bool) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        runs = [run_job(device, quick, Path(tmp) / f"run{k}") for k in (1, 2)]
    if any(r["status"] != "ok" for r in runs):
        return {"ok": False, "error": f"the job did not finish: {[r['status'] for r in runs]}",
                "failure": (runs[0]["record"] or {}).get("error")}
    same, note = _same(*runs)
    rec = runs[0]["record"]
    return {"ok": same, "note": note, "metrics": rec["metrics"], "wall_s": [r["record"]["timing"]["wall_s"] for r in runs],
            "accelerator": rec["info"].get("accelerator"), "job_id": rec["job"]["id"]}


def part_resume(device: str, quick: bool) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        whole = run_job(device, quick, Path(tmp) / "whole")
        stopped = run_job(device, quick, Path(tmp) / "resumed", stop_after_first_epoch=True)
        resumed = run_job(device, quick, Path(tmp) / "resumed")
    if stopped["status"] != "interrupted" or resumed["status"] != "ok" or whole["status"] != "ok":
        return {"ok": False, "error": f"statuses: whole {whole['status']}, stopped {stopped['status']}, "
                                      f"rerun {resumed['status']}"}
    same, note = _same(whole, resumed)
    ck = resumed["record"]["info"].get("checkpoint") or {}
    return {"ok": same and bool(ck.get("resumed")), "note": note, "checkpoint": ck}


def part_gpu_step(device: str, quick: bool, out: Path) -> dict:
    from pubench.tools import gpu_step

    args = ["--device", device, "--rounds", "2" if quick else "5", "--json", str(out)]
    rc = gpu_step.main(args + (["--small"] if quick or device == "cpu" else []))
    data = json.loads(out.read_text()) if out.is_file() else {}
    return {"ok": rc == 0 and bool(data.get("frameworks")), **data}


# ------------------------------------------------------------------ parts in their own processes
def child_env(device: str) -> dict[str, str]:
    from pubench import numerics

    env = {**os.environ, **numerics.process_env(numerics.resolve(device=device))}
    paths = [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]  # with install_wheels' site
    env.update(PYTHONPATH=os.pathsep.join(paths), PYTHONUNBUFFERED="1", PUBENCH_ENCODER_CACHE="0",
               PUBENCH_PROGRESS="0", HF_HUB_OFFLINE="1", PUBENCH_OFFLINE="1")
    return env


def run_part(name: str, args, timeout: float, work: Path) -> dict:
    """Run one part in a child process (``--part``), or the tests / preflight commands."""
    out = work / f"{name}.json"
    if name == "tests":
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:xdist", "-rs",
               "tests/train/test_accel.py", "-k", "cuda"]
    elif name == "preflight":
        return run_preflight(args, timeout, work)
    else:
        cmd = [sys.executable, "-m", "pubench.tools.gpu_check", "--part", name, "--device", args.device,
               "--part-out", str(out)] + (["--quick"] if args.quick else [])
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=ROOT, env=child_env(args.device), capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        tail = (exc.stdout or b"")[-400:] if isinstance(exc.stdout, bytes) else (exc.stdout or "")[-400:]
        return {"ok": False, "error": f"stopped after {timeout:.0f} s", "tail": str(tail)}
    took = round(time.perf_counter() - t0, 1)
    if name == "tests":
        last = [s for s in proc.stdout.splitlines() if s.strip()][-1:] or ["no output"]
        return {"ok": proc.returncode in (0, 5), "pytest": last[0], "seconds": took,
                "tail": proc.stdout[-1500:] if proc.returncode not in (0, 5) else ""}
    if out.is_file():
        return {**json.loads(out.read_text()), "seconds": took}
    lines = [s for s in (proc.stdout + proc.stderr).splitlines() if s.strip()]
    return {"ok": False, "error": lines[-1][:300] if lines else f"exit status {proc.returncode}", "seconds": took}


def run_preflight(args, timeout: float, work: Path) -> dict:
    """``pubench preflight`` over each track cell, one command per cell, within ``timeout``."""
    cells, t_end, ok = [], time.perf_counter() + timeout, True
    for k, cell in enumerate(args.cell or TRACK_CELLS):
        spec_id, only = cell.split(":", 1)
        left = t_end - time.perf_counter()
        if left < 20:
            cells.append({"cell": cell, "ok": False, "error": "no time left in the budget"})
            ok = False
            continue
        out = work / f"preflight-{k}.json"
        cmd = [sys.executable, "-m", "pubench", "preflight", spec_id, "--only", only, "--device", args.device,
               "--steps", "1" if args.quick else "3", "--json", str(out), "--max-seconds", str(int(left - 5))]
        try:
            proc = subprocess.run(cmd, cwd=ROOT, env=child_env(args.device), capture_output=True, text=True,
                                  timeout=left)
        except subprocess.TimeoutExpired:
            cells.append({"cell": cell, "ok": False, "error": f"stopped after {left:.0f} s"})
            ok = False
            continue
        if not out.is_file():
            tail = [s for s in (proc.stdout + proc.stderr).splitlines() if s.strip()][-1:] or ["no output"]
            cells.append({"cell": cell, "ok": False, "error": tail[0][:300]})
            ok = False
            continue
        data = json.loads(out.read_text())
        ok &= proc.returncode == 0
        cells.append({"cell": cell, "ok": proc.returncode == 0, "preflight": data})
    return {"ok": ok, "cells": cells}


# ------------------------------------------------------------------ results
def install_wheels(folder: Path = ROOT / ".whl", site: Path = SITE, needed: str = "pydantic") -> str | None:
    """Install ``folder/*.whl`` into ``site`` when ``needed`` is not importable, and put
    ``site`` first on this process's and its children's path; what was done (None: nothing)."""
    wheels = sorted(folder.glob("*.whl"))
    if importlib.util.find_spec(needed) is not None or not wheels:
        return None
    cmd = [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile", "--upgrade",
           "--target", str(site), *map(str, wheels)]
    how = "pip"
    if subprocess.run(cmd).returncode != 0:  # no pip here: a wheel is a zip of the installed files
        import zipfile

        for w in wheels:
            with zipfile.ZipFile(w) as z:
                z.extractall(site)
        how = "unzipped"
    sys.path.insert(0, str(site))
    os.environ["PYTHONPATH"] = os.pathsep.join([str(site), *filter(None, [os.environ.get("PYTHONPATH")])])
    return (f"installed {len(wheels)} wheel(s) from {folder.name}/ into {site} ({how}): "
            f"{', '.join(w.name.split('-')[0] for w in wheels)}")


def environment(device: str) -> dict:
    import torch

    from pubench.numerics import cpu_model  # the orchestrator imports nothing that needs pydantic

    name = torch.cuda.get_device_name() if device == "cuda" else cpu_model()
    return {"device": device, "device_name": name, "torch": torch.__version__,
            "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version() if device == "cuda" else None,
            "python": sys.version.split()[0], "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    ap.add_argument("--budget", type=float, default=450.0, help="seconds for all parts together (default 450)")
    ap.add_argument("--parts", nargs="*", choices=PARTS, default=list(PARTS))
    ap.add_argument("--cell", action="append", metavar="ID:ROW|COL", help="preflight cells (default: one per track)")
    ap.add_argument("--quick", action="store_true", help="smaller job and benchmark sizes (CPU tests)")
    ap.add_argument("--docs", type=Path, help="the page to write the figures into (default: docs/gpu.md on CUDA, "
                                              "none on the CPU)")
    ap.add_argument("--results", type=Path, default=ROOT / "benchmarks" / "results")
    ap.add_argument("--part", choices=PARTS, help=argparse.SUPPRESS)      # run one part in this process
    ap.add_argument("--part-out", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    try:
        import torch
    except ImportError:
        print("gpu-check: torch is not installed here; nothing checked")
        return 0
    if args.device == "cuda" and not torch.cuda.is_available():
        print("gpu-check: no CUDA device on this machine; nothing checked "
              "(`python -m pubench.tools.gpu_check --device cpu --quick` runs the parts a CPU can)")
        return 0
    if args.part:
        return run_one_part(args)
    t0 = time.perf_counter()
    installed = install_wheels()
    env = environment(args.device)
    say(f"{env['device_name']} ({args.device}), torch {env['torch']}, CUDA {env['cuda']}, Python {env['python']}, "
        f"budget {args.budget:.0f} s" + (f"; {installed}" if installed else ""))
    results = {"environment": env, "parts": {}}
    with tempfile.TemporaryDirectory(prefix="pubench-gpu-check-") as tmp:
        for name in args.parts:
            left = args.budget - (time.perf_counter() - t0) - 15
            if left < 20:
                results["parts"][name] = {"ok": False, "error": "no time left in the budget"}
            else:
                say(f"{name} ...")
                results["parts"][name] = run_part(name, args, min(LIMITS[name], left), Path(tmp))
            results["parts"][name]["summary"] = describe(name, results["parts"][name])
            say(f"{name}: {results['parts'][name]['summary']}")
    results["seconds"] = round(time.perf_counter() - t0, 1)
    from pubench.tools.gpu_report import publish

    docs = args.docs or (ROOT / "docs" / "gpu.md" if args.device == "cuda" else None)
    written = publish(results, docs, args.results)
    failed = [n for n, r in results["parts"].items() if not r.get("ok")]
    say(f"{'all parts ok' if not failed else 'failed: ' + ', '.join(failed)} in {results['seconds']:.0f} s; "
        f"wrote {', '.join(str(p.relative_to(ROOT)) if p.is_relative_to(ROOT) else str(p) for p in written)}")
    if os.environ.get("OUT"):
        for p in written:
            shutil.copy(p, Path(os.environ["OUT"]) / p.name)
        say(f"copied them to {os.environ['OUT']}")
    return 1 if failed else 0


def run_one_part(args) -> int:
    fn = {"determinism": lambda: part_determinism(args.device, args.quick),
          "resume": lambda: part_resume(args.device, args.quick),
          "gpu_step": lambda: part_gpu_step(args.device, args.quick, args.part_out.with_suffix(".raw.json"))}[args.part]
    try:
        res = fn()
    except Exception as exc:  # noqa: BLE001 - a failed part is a result
        res = {"ok": False, "error": f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:400]}
    args.part_out.write_text(json.dumps(res, default=str))
    return 0


def describe(name: str, r: dict) -> str:
    """One line for a part's result."""
    if not r.get("ok"):
        cells = [f"{c['cell']}: {c.get('error') or 'failed'}" for c in r.get("cells", []) if not c.get("ok")]
        return "FAILED: " + str(r.get("error") or r.get("pytest") or "; ".join(cells) or r.get("note") or "see the JSON")
    if name == "tests":
        return r.get("pytest", "")
    if name in ("determinism", "resume"):
        return r.get("note", "ok")
    if name == "gpu_step":
        return "; ".join(f"{f['name']} {f['images_per_s']:.0f} images/s, ratio {f['ratio']:.2f}" for f in r["frameworks"])
    return f"{sum(c['ok'] for c in r['cells'])}/{len(r['cells'])} cells ok"


if __name__ == "__main__":
    raise SystemExit(main())
