"""Writes GPU figures into ``docs/gpu.md``: each generator owns one section between
``<!-- NAME:begin -->`` and ``<!-- NAME:end -->`` markers and rewrites only that
(``gpu-check``: :func:`publish`, from :mod:`pubench.tools.gpu_check`; ``paper-cost``:
:mod:`pubench.tools.paper_cost`)."""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path


def replace_section(path: Path, name: str, body: str) -> None:
    """Put ``body`` between ``name``'s markers in ``path`` (appended, with the markers, when
    the page has none)."""
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    text = path.read_text() if path.is_file() else ""
    block = f"{begin}\n{body.rstrip()}\n{end}"
    if begin in text and end in text:
        text = re.sub(re.escape(begin) + r".*?" + re.escape(end), lambda _: block, text, count=1, flags=re.S)
    else:
        text = text.rstrip() + ("\n\n" if text else "") + block + "\n"
    path.write_text(text)


def _hours(s: float | None) -> str:
    return "—" if s is None else f"{s / 3600:.3g}"


def _gib(b: int | None) -> str:
    return "—" if not b else f"{b / 2**30:.2f}"


def render_measured(results: dict) -> str:
    env, parts = results["environment"], results["parts"]
    out = [f"Measured by `make gpu-check` on **{env['device_name']}** ({env['device']}), {env['date']}, torch "
           f"{env['torch']}, CUDA {env['cuda']}, Python {env['python']}; {results['seconds']:.0f} s in all. "
           "Raw figures: `benchmarks/results/" + results_name(results) + "`.", "",
           "| part | result |", "|---|---|"]
    for name, r in parts.items():
        status = "ok" if r.get("ok") else "**failed**"
        detail = str(r.get("summary") or r.get("note") or r.get("error") or "").removeprefix("FAILED: ")
        if name == "resume" and r.get("checkpoint"):
            detail += f" (resumed: {r['checkpoint'].get('resumed')})"
        out.append(f"| {name} | {status}: {str(detail).replace('|', '/')} |")
    step = parts.get("gpu_step") or {}
    if step.get("frameworks"):
        bb = step.get("backbone", {})
        out += ["", f"`python -m pubench.tools.gpu_step` ({bb.get('name')}, batch {step.get('batch')}, N = {step.get('negatives')}, "
                f"{step.get('precision')}, {'compiled' if step.get('compile') else 'eager'}, best of {step.get('rounds')}; "
                f"peak memory {_gib(step.get('peak_memory_bytes'))} GiB):", "",
                "| framework | model s | step s | step / model | images/s |", "|---|---:|---:|---:|---:|"]
        out += [f"| {f['name']} | {f['model_s']:.4f} | {f['step_s']:.4f} | {f['ratio']:.3f} | {f['images_per_s']:.0f} |"
                for f in step["frameworks"]]
    pf = parts.get("preflight") or {}
    if pf.get("cells"):
        out += ["", f"`pubench preflight --device {env['device']}`, one paper-tier cell per track:", "",
                "| cell | status | step s (main stage) | peak memory GiB | job hours | table hours (cell x seeds) |",
                "|---|---|---:|---:|---:|---:|"]
        for c in pf["cells"]:
            data = c.get("preflight") or {}
            for cell in data.get("cells", []):
                stages = [s for s in (cell.get("figures") or {}).get("stages", []) if s.get("step_s")]
                main = max(stages, key=lambda s: s["projected_s"]) if stages else None
                step_s = f"{statistics.median(main['step_s'][1:] or main['step_s']):.3g}" if main else "—"
                out.append(f"| {cell['id']} {cell['row']}\\|{cell['col']} | {cell['status']}"
                           f"{': ' + cell['reason'] if cell.get('reason') else ''} | {step_s} | "
                           f"{_gib((cell.get('peak_memory') or {}).get('bytes'))} | {_hours(cell.get('job_s'))} | "
                           f"{_hours(cell['job_s'] * cell['seeds'] if cell.get('job_s') else None)} |")
            if not data:
                out.append(f"| {c['cell']} | failed: {c.get('error')} | — | — | — | — |")
    return "\n".join(out)


def results_name(results: dict) -> str:
    env = results["environment"]
    slug = re.sub(r"[^a-z0-9]+", "-", env["device_name"].lower()).strip("-")[:40]
    return f"gpu-check-{env['date'][:10]}-{slug}.json"


def publish(results: dict, docs: Path | None, folder: Path) -> list[Path]:
    """The raw JSON under ``folder`` and, when ``docs`` is given, its section of the page."""
    folder.mkdir(parents=True, exist_ok=True)
    raw = folder / results_name(results)
    raw.write_text(json.dumps(results, indent=1, default=str))
    written = [raw]
    if docs is not None:
        replace_section(docs, "gpu-check", render_measured(results))
        written.append(docs)
    return written
