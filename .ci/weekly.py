"""The weekly preflight's report (``.ci/weekly``): what failed, and what the committed preflight had
ok and this one does not."""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path


def cell_key(cell: dict) -> tuple[str, str, str]:
    return cell["id"], cell["row"], cell["col"]


def preflight_report(current: dict, baseline: dict | None) -> tuple[str, bool]:
    """(markdown, whether anything failed or moved) for a ``pubench preflight --json`` result
    against an earlier one."""
    counts = Counter(c.get("status") for c in current.get("cells", []))
    failed = [c for c in current.get("cells", []) if c.get("status") == "failed"]
    before = {cell_key(c): c.get("status") for c in (baseline or {}).get("cells", [])}
    moved = [c for c in current.get("cells", []) if before.get(cell_key(c)) == "ok" and c.get("status") != "ok"]
    lines = [f"# Weekly preflight {current.get('date', '')}", "",
             f"Paper tier on {current.get('device', '?')}, {current.get('steps', '?')} step(s) per stage: "
             + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) + f" cells; "
             f"{float(current.get('wall_s') or 0) / 3600:.1f} h"
             + ("" if current.get("complete") else " (incomplete: the run stopped before every cell)") + ".", "",
             "## Failed", ""]
    lines += [f"- {c['id']} `{c['row']}|{c['col']}`: {str(c.get('reason') or c.get('error') or '')[:300]}"
              for c in failed] or ["Nothing."]
    lines += ["", "## Ok in the committed preflight, not now", ""]
    lines += [f"- {c['id']} `{c['row']}|{c['col']}`: {c.get('status')}: {str(c.get('reason') or '')[:300]}"
              for c in moved] or ["Nothing." if baseline else "No committed preflight to compare with."]
    return "\n".join(lines) + "\n", bool(failed or moved or not current.get("complete"))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("preflight", type=Path, help="this week's `pubench preflight --json` file")
    p.add_argument("--baseline", type=Path, help="the committed preflight JSON to compare with")
    p.add_argument("--report", type=Path, required=True, help="where to write the markdown report")
    args = p.parse_args(argv)
    if not args.preflight.exists():
        args.report.write_text("# Weekly preflight\n\nThe preflight wrote no JSON: see the job's log.\n")
        print(f"weekly: report {args.report}")
        return 1
    baseline = json.loads(args.baseline.read_text()) if args.baseline and args.baseline.exists() else None
    text, bad = preflight_report(json.loads(args.preflight.read_text()), baseline)
    args.report.write_text(text)
    print(f"weekly: report {args.report}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
