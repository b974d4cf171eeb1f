"""``make gpu-paper``: one campaign window in one command, on a machine that got a copy of the
working tree (docs/gpu.md, "The lease, step by step").

Run from the source tree with the machine's own python (``PYTHONPATH=.``, no install), it

1. takes the command's start as the window's (``PUBENCH_CAMPAIGN_STARTED``: the budget
   counts from here, so the wheels, the data's unpacking and the bundling are inside it);
2. where ``pydantic`` is missing (the GPU image has neither it nor submitit), installs the
   wheels of ``.whl/`` into ``$PUBENCH_SITE`` (default ``/tmp/pubench-site``) and puts that
   folder on the path (:func:`pubench.tools.gpu_check.install_wheels`);
3. checks that this python has what ``pubench campaign`` imports
   (:data:`pubench.campaign.lease.CAMPAIGN_NEEDS`; for ``--dry-run`` or ``--for``, what a plan
   imports, :data:`~pubench.campaign.lease.PLAN_NEEDS`): one line naming what is missing and
   exit 2, never a traceback;
4. replaces itself with ``python -m pubench campaign --budget B --out OUT ...`` (the
   default budget the lease's: :data:`pubench.campaign.lease.WINDOW_BUDGET_S`).

Usage: python -m pubench.tools.gpu_paper [--budget 9m30s] [--out DIR] [campaign options ...]
Imports nothing that needs pydantic or torch.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STARTED_ENV = "PUBENCH_CAMPAIGN_STARTED"  # pubench.cli.campaign's
SITE_ENV = "PUBENCH_SITE"


def say(line: str) -> None:
    print(f"gpu-paper: {line}", flush=True)


def _on_path(site: Path) -> None:
    if str(site) not in sys.path:
        sys.path.insert(0, str(site))
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if str(site) not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([str(site), *paths])
    importlib.invalidate_caches()


def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def main(argv: list[str] | None = None) -> int:
    from pubench.campaign.lease import CAMPAIGN_NEEDS, PLAN_NEEDS, WINDOW_BUDGET_S
    from pubench.tools.gpu_check import SITE, install_wheels

    os.environ.setdefault(STARTED_ENV, repr(time.time()))
    args = list(sys.argv[1:] if argv is None else argv)
    site = Path(os.environ.get(SITE_ENV) or SITE)
    if site.is_dir():  # installed by an earlier command on this machine
        _on_path(site)
    t0 = time.time()
    installed = install_wheels(ROOT / ".whl", site)
    if installed:
        _on_path(site)
        say(f"{installed} in {time.time() - t0:.1f} s")
    planning = any(a == "--dry-run" or a == "--for" or a.startswith("--for=") for a in args)
    missing = [m for m in (PLAN_NEEDS if planning else CAMPAIGN_NEEDS) if not _importable(m)]
    if missing:
        wheels = " (.whl/ holds no wheels for it: docs/gpu.md says how to fill it)" if "pydantic" in missing else ""
        say(f"{sys.executable} lacks {', '.join(missing)}, which `pubench campaign{' --dry-run' if planning else ''}` "
            f"imports{wheels}; a lease's "
            "machine has them all (pydantic from .whl/). Here: `make gpu-paper GPU_PY=.venv/bin/python "
            "GPU_PAPER_ARGS=--dry-run`, or `pubench campaign --for KIND` to plan a lease's window")
        return 2
    if "--budget" not in args and not any(a.startswith("--budget=") for a in args):
        args = ["--budget", f"{WINDOW_BUDGET_S:g}s", *args]
    if "--out" not in args and not any(a.startswith("--out=") for a in args):
        args = ["--out", os.environ.get("OUT") or "campaign-out", *args]
    paths = [str(ROOT), *[p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != str(ROOT)]]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths), "PYTHONUNBUFFERED": "1"}
    sys.stdout.flush()
    os.execve(sys.executable, [sys.executable, "-m", "pubench", "campaign", *args], env)
    return 0  # not reached


if __name__ == "__main__":
    raise SystemExit(main())
