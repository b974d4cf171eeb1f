"""Which tests ``make test`` leaves to ``make test-all``, and why. Every mark is given here, from
what a test uses (its fixtures, its file, its name), never by hand on a test, so a new test
that starts the SLURM cluster or reads the real data is slow the day it is written.

A test is ``slow`` (and carries the mark of its reason) when it

* starts a real SLURM cluster (the ``slurm_cluster`` fixture): ``slurm``;
* drives headless Chromium (the ``chromium`` fixture): ``browser``;
* compiles LaTeX (the files of :data:`LATEX_FILES`): ``latex``;
* reads the real data sets of ../shared/data (the ``data_root``, ``shared_image_root`` or
  ``shared_graph_root`` fixture): ``real_data``;
* resumes a stopped unit bit for bit (a ``test_every_*_resumes_bit_for_bit`` test, one per
  registered unit): ``resume``;
* runs pubench or pytest in subprocesses for seconds each (the files of
  :data:`SUBPROCESS_FILES`): ``subprocess``;
* tries the thorough budget of generated inputs (the ``fuzz`` fixture's ``thorough`` parameter,
  tests/fuzzing.py; its ``fast`` twin stays in ``make test``): ``fuzz``.

``make test`` runs ``-m "not slow"``; ``make test-all`` runs everything. ``pytest -m resume``
(or ``slurm``, ``browser``, ...) runs one kind.
"""

from __future__ import annotations

from pathlib import Path

import pytest

#: mark -> what makes a test slow (the ``markers`` of pyproject.toml say the same)
REASONS = {
    "slurm": "starts a real single-node SLURM cluster",
    "browser": "drives headless Chromium",
    "latex": "compiles LaTeX",
    "real_data": "reads the real data sets of ../shared/data",
    "resume": "resumes a stopped unit bit for bit",
    "subprocess": "runs pubench or pytest in subprocesses for seconds each",
    "fuzz": "tries the thorough budget of generated inputs (thousands of cases)",
}
FIXTURES = {
    "slurm_cluster": "slurm",
    "chromium": "browser",
    "data_root": "real_data",
    "shared_image_root": "real_data",
    "shared_graph_root": "real_data",
}
LATEX_FILES = {"tests/report/test_latex_compile.py"}
#: files whose tests each run pubench in subprocesses: kills, signals, concurrent runners, fresh
#: interpreters (their test time in the full suite of 2026-11-29, on the 2 cores at load 6-10)
SUBPROCESS_FILES = {
    "tests/executors/test_faults.py",             # signals, full disks, stopped runners, umasks: 390 s
    "tests/executors/test_reliability.py",        # kill -9, SIGTERM, two runners on one store: 360 s
    "tests/tools/test_gpu_check.py",          # pubench.tools.gpu_check's CPU-capable parts: 190 s
    "tests/cli/test_cli_without_torch.py",  # each command in a fresh interpreter without torch: 180 s
    "tests/executors/test_executors.py",          # worker processes, submitit, a killed runner: 100 s
    "tests/project/test_adding_units.py",       # pytest in a scratch checkout with two new units: 16-32 s
    "tests/preflight/test_preflight_workers.py",  # real paper cells checked in preflight worker processes: 210 s
    "tests/store/test_no_code_from_disk.py",  # planted files under list, status, report and a resumed run: 55-90 s
    "tests/campaign/test_campaign.py",           # two campaign windows of worker processes, and an import: 95-140 s
    "tests/registry/test_unit_packages.py",      # a package of one's own, through real smoke runs: about 60 s
    "tests/executors/test_slurm_packing.py",      # several workers in one array task, run for real: 46-50 s
    "tests/project/test_soak.py",               # the store soak's short mode, runners killed at random: about 150 s
    "tests/campaign/test_simulated_device.py",   # make gpu-paper on what travels, lease to lease, calibration: 75-300 s each
}
RESUME_NAME = "resumes_bit_for_bit"
#: the ``fuzz`` fixture's parameter whose cases are thousands (tests/fuzzing.py)
FUZZ_SLOW_BUDGET = "thorough"

ROOT = Path(__file__).resolve().parents[1]


def reasons(item: pytest.Item) -> list[str]:
    """The marks of what makes ``item`` slow (none: it belongs to ``make test``)."""
    path = Path(str(item.fspath)).resolve()
    try:
        rel = path.relative_to(ROOT).as_posix()
    except ValueError:
        rel = path.as_posix()
    found = {FIXTURES[f] for f in getattr(item, "fixturenames", ()) if f in FIXTURES}
    if rel in LATEX_FILES:
        found.add("latex")
    if rel in SUBPROCESS_FILES:
        found.add("subprocess")
    if RESUME_NAME in getattr(item, "originalname", item.name):
        found.add("resume")
    callspec = getattr(item, "callspec", None)
    if callspec is not None and callspec.params.get("fuzz") == FUZZ_SLOW_BUDGET:
        found.add("fuzz")
    return sorted(found)


def mark_slow(items: list[pytest.Item]) -> None:
    for item in items:
        why = reasons(item)
        for name in why:
            item.add_marker(getattr(pytest.mark, name))
        if why:
            item.add_marker(pytest.mark.slow)
