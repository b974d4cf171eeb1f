"""Units from the user's own package (issue 54, item 1): a package outside ``pubench/`` that names a
module in the ``pubench.units`` entry-point group registers its units into pubench's registries.

Each test installs a tiny package into a temporary folder (the module and a ``.dist-info`` with
its ``entry_points.txt``, as pip would; no network) and puts that folder on the ``PYTHONPATH`` of
a fresh process: the units are known to the spec checks, pass the contract tests that loop over
every registered unit, and run through a real ``pubench run`` as rows added to table2-punce (a
PU method) and table1-punce (a loss) at the smoke tier, tested in the report against their block.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.project.test_adding_units import TOY_LOSS, TOY_PU

ROOT = Path(__file__).resolve().parents[2]

#: the module of the package: the two units of docs/contributing.md, outside pubench/
UNITS = ('"""Units of a package outside pubench (tests/registry/test_unit_packages.py)."""\n\n'
         + TOY_LOSS.split('"""\n', 1)[1] + "\n" + TOY_PU.split('"""\n', 1)[1])


def install(site: Path, module: str = UNITS, entry: str = "toy = pubench_toy_units.units") -> Path:
    """The package ``pubench_toy_units`` and its metadata in ``site`` (what ``pip install`` leaves)."""
    pkg = site / "pubench_toy_units"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "units.py").write_text(module)
    meta = site / "pubench_toy_units-0.1.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: pubench-toy-units\nVersion: 0.1\n")
    (meta / "entry_points.txt").write_text(f"[pubench.units]\n{entry}\n")
    return site


def _env(tmp_path: Path, site: Path, data: Path | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PUBENCH_") or k in ("PUBENCH_CORE_SLOTS",)}
    env.update(PYTHONPATH=f"{ROOT}{os.pathsep}{site}", PUBENCH_HOME=str(ROOT), PUBENCH_CACHE=str(tmp_path / "cache"),
               PUBENCH_RESULTS=str(tmp_path / "results"), PUBENCH_REPORTS=str(tmp_path / "reports"),
               PUBENCH_LOGS=str(tmp_path / "logs"), PUBENCH_NO_MALLOC_TUNING="1", PUBENCH_ENCODER_CACHE="0",
               PUBENCH_PROGRESS="0")
    if data is not None:
        env["PUBENCH_DATA"] = str(data)
    return env


def _run(env: dict[str, str], *args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)


def test_an_installed_package_registers_its_units(tmp_path):
    site = install(tmp_path / "site")
    probe = ("import json\n"
             "from pubench.registry.units import known, own_names, build_index\n"
             "from pubench.pu import PU_METHODS\n"
             "from pubench.losses import LOSSES\n"
             "from pubench.utils.unit_packages import origin\n"
             "print(json.dumps({'known': 'toy_pu' in known('pu_method') and 'toy_loss' in known('loss'),\n"
             "  'module': PU_METHODS.get('toy_pu').__module__, 'loss': LOSSES.get('toy_loss').__module__,\n"
             "  'origin': origin('pu_method', 'toy_pu'), 'own': 'toy_pu' in own_names('pu_method'),\n"
             "  'index': 'toy_pu' in build_index()['names']['pu_method'],\n"
             "  'risks_are_pubench': origin('risk', 'nnpu') is None}))\n")
    out = _run(_env(tmp_path, site), "-c", probe)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got == {"known": True, "module": "pubench_toy_units.units", "loss": "pubench_toy_units.units",
                   "origin": "toy = pubench_toy_units.units (pubench-toy-units 0.1)", "own": False, "index": False,
                   "risks_are_pubench": True}


def test_a_package_that_fails_to_import_is_one_line(tmp_path):
    site = install(tmp_path / "site", module="raise RuntimeError('broken on purpose')\n")
    out = _run(_env(tmp_path, site), "-m", "pubench", "expand", "table2-punce", "--tier", "smoke", "--add-row",
               "MyPU=pu_method: {name: toy_pu}", "--like", "MLP nnPU")
    assert out.returncode == 2, out.stderr[-3000:]
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "toy = pubench_toy_units.units (pubench-toy-units 0.1)" in out.stderr and "broken on purpose" in out.stderr


def contract_command() -> list[str]:
    """The contract-test command of docs/contributing.md ("Your method in a table", step 1), as words."""
    import shlex

    text = (ROOT / "docs" / "contributing.md").read_text(encoding="utf-8")
    step = text.split("## Your method in a table", 1)[1].split("**2.", 1)[0]
    line = next(line for line in step.splitlines() if line.startswith("pytest "))
    return shlex.split(line, comments=True)


@pytest.mark.smoke
def test_the_documented_contract_command_runs_every_contract_test_of_the_units(tmp_path):
    """The docs' command for your package's contract tests runs all of them, the slow resume test
    included (it ran `1 passed, 167 deselected` for a PU method under the default -m "not slow")."""
    site = install(tmp_path / "site")
    words = contract_command()
    assert words[0] == "pytest"
    out = _run(_env(tmp_path, site), "-m", "pytest", "-p", "no:xdist", "-p", "no:cacheprovider", "-rA", *words[1:])
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert set(re.findall(r"^PASSED \S+::(\S+)", out.stdout, flags=re.M)) == {
        "test_loss[toy_loss]", "test_hyperparameters_have_no_defaults[toy_loss]", "test_pu_method[toy_pu]",
        "test_every_pu_method_resumes_bit_for_bit[toy_pu]",
        "test_every_pu_method_compiles_every_module_its_steps_call[toy_pu]"}, out.stdout[-3000:]


@pytest.mark.smoke
@pytest.mark.parametrize("spec,row,like,only,baseline", [
    ("table2-punce", "MyPU=pu_method: {name: toy_pu}", "MLP nnPU", "MyPU|n_P=1k", "MLP nnPU|n_P=1k"),
    ("table1-punce", "MyLoss=pretrain: {loss: {name: toy_loss, temperature: 0.5, margin: 0.1}}", "infoNCE",
     "MNIST n_P=1k|MyLoss", "MNIST n_P=1k|infoNCE"),
], ids=["pu-method-in-table2-punce", "loss-in-table1-punce"])
def test_its_units_run_as_rows_added_to_a_table(tmp_path, shared_image_root, spec, row, like, only, baseline):
    site = install(tmp_path / "site")
    env = _env(tmp_path, site, data=shared_image_root)
    name = row.split("=", 1)[0]
    base = _run(env, "-m", "pubench", "run", spec, "--tier", "smoke", "--seeds", "2", "--only", baseline)
    assert base.returncode == 0, base.stdout[-3000:] + base.stderr[-3000:]
    out = _run(env, "-m", "pubench", "run", spec, "--tier", "smoke", "--seeds", "2", "--add-row", row, "--like", like,
               "--only", only)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert f"added row '{name}': runs like '{like}' at tier 'smoke'" in out.stdout
    assert "pubench: 2 ok, 0 failed" in out.stdout
    records = list((tmp_path / "results" / "custom" / spec).glob("*.json"))
    assert len(records) == 2 and not list((tmp_path / "results" / "smoke" / spec).glob(f"{name}*"))
    job = json.loads(records[0].read_text())["job"]
    assert job["variant"]["row"]["like"] == like and job["variant"]["row"]["inherits"]  # the tier's budget
    report = _run(env, "-m", "pubench", "report", spec, "--tier", "custom")
    assert report.returncode == 0, report.stderr[-3000:]
    text = (tmp_path / "reports" / "custom" / f"{spec}--smoke+rows.md").read_text()
    assert "## Rows added to the paper's" in text
    # smoke registers one seed: the second seed of each cell is listed apart and compared nowhere (issue 60)
    assert re.search(rf"^\| {re.escape(name)} +\| .*\| {re.escape(like)} +\| .*paired, n=1", text, flags=re.M), text
    assert "- 2 record(s) of seeds no registration covers" in text and f"{only} seed 1" in text
