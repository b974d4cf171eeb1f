"""The README's commands do what it says (issue 54, item 7): its first real run does real work on a
fresh clone (the committed store already holds table1-punce's reduced jobs, so the run points the
store at a folder of its own)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from pubench.cli import main

ROOT = Path(__file__).resolve().parents[2]


def _first_run_block() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## A first real run", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, flags=re.S).group(1)
    return [line for line in block.splitlines() if line.strip()]


def test_the_first_real_run_runs_jobs_on_a_fresh_clone(tmp_path, monkeypatch, capsys):
    lines = _first_run_block()
    export = shlex.split(lines[0], comments=True)
    assert export[0] == "export"
    for assignment in export[1:]:
        name, value = assignment.split("=", 1)
        monkeypatch.setenv(name, value.replace("$PWD", str(tmp_path)))
    run = next(shlex.split(line, comments=True) for line in lines if line.startswith("pubench run "))
    assert main([*run[1:], "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "90 job(s): 0 already done, 90 to run" in out, out[-2000:]
    # without the export, the committed store already holds them: the reason for the first line
    monkeypatch.delenv("PUBENCH_RESULTS")
    assert main([*run[1:], "--dry-run"]) == 0
    assert "90 job(s): 90 already done, 0 to run" in capsys.readouterr().out


def test_no_docs_page_is_titled_by_an_issue_number():
    """docs/cli.md was titled "the commands added for issue 39", a number a reader cannot follow."""
    for page in sorted((ROOT / "docs").glob("*.md")):
        title = page.read_text(encoding="utf-8").splitlines()[0]
        assert not re.search(r"\bissues? \d", title), f"{page.name}: {title}"


def test_the_demo_says_pdflatex_is_optional():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    line = next(line for line in makefile.splitlines() if "pdflatex" in line)
    assert "Optional" in line and "LaTeX is installed" in line, line


def test_the_readme_quotes_no_time_it_did_not_measure_at_a_stated_load():
    """Issue 64, item 8: "~25 s", "~70 s" and "about 4 minutes idle" were times a newcomer on a busy
    machine could not match; each time is now given with its load (or its CPU time), and an idle
    figure only where it was measured idle."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert not re.search(r"~\s?\d", text)
    for sentence in re.split(r"(?<=[.;])\s", " ".join(text.split())):
        if re.search(r"\bidle\b", sentence, flags=re.I):
            # "idle" only beside the load it was measured at (below 1 on these 2 cores), or saying it was not
            assert re.search(r"(never|not) measured idle", sentence, flags=re.I) or re.search(r"load 0\.\d", sentence), \
                sentence
