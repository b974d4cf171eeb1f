"""``pubench list | show | expand | schema``: the registry of specs, read without running anything."""

from __future__ import annotations

import argparse
import json

from pubench.cli._common import (DEFAULT_TIER, FMT, TIER_CHOICES, UsageError, added_row_options, added_rows,
                                 local_numerics, numerics_options, spec, specs)


def list_parser(sub) -> None:
    s = sub.add_parser("list", help="every table and figure in the registry", formatter_class=FMT,
                       epilog="example:\n  pubench list --paper punce")
    s.add_argument("--paper", choices=["pucl", "punce", "bcl", "pupl", "wconpu"], help="only this paper's")
    s.set_defaults(fn=cmd_list)


def show_parser(sub) -> None:
    s = sub.add_parser("show", help="a table's reported numbers, laid out as the paper prints them",
                       formatter_class=FMT, epilog="examples:\n  pubench show table1-bcl\n  pubench show table1-bcl --json")
    s.add_argument("id", help="table or figure id, e.g. table2-punce")
    s.add_argument("--json", action="store_true", help="machine-readable reported cells")
    s.set_defaults(fn=cmd_show)


class _AppendNamingOption(argparse._AppendAction):
    """``append``, keeping which of the option's names was typed (``only_option``): a pattern that selects no
    cell is named in the error as the user wrote it."""

    def __call__(self, parser, namespace, values, option_string=None):
        super().__call__(parser, namespace, values, option_string)
        namespace.only_option = option_string


def expand_parser(sub) -> None:
    s = sub.add_parser(
        "expand", help="each cell's resolved config at a tier (presets, PU data sets and priors filled in) and the "
                       "job id of seed 0, for review", formatter_class=FMT,
        epilog="examples:\n  pubench expand table1-punce --tier reduced\n"
               "  pubench expand table2-pupl --tier paper --only 'puCL*|CIFAR-I' --json\n"
               "  pubench expand fig5-bcl --tier smoke --set data.M=100\n"
               "  pubench expand table2-punce --tier reduced --diff\n"
               "  pubench expand table2-punce --tier reduced --add-row 'uPU again=pu_method: {name: upu, loss: sigmoid}' "
               "--like 'MLP nnPU'")
    s.add_argument("id", help="table or figure id, e.g. table1-punce")
    s.add_argument("--tier", default=DEFAULT_TIER, choices=TIER_CHOICES, help=f"default: {DEFAULT_TIER}")
    s.add_argument("--only", "--cell", dest="only", action=_AppendNamingOption, metavar="ROW|COL",
                   help="only cells matching this glob (repeatable; as in run and preflight; --cell: the same)")
    s.set_defaults(only_option="--only")
    s.add_argument("--json", action="store_true", help="machine-readable")
    s.add_argument("--diff", action="store_true",
                   help="what the tier changes against the paper tier instead of the configs: one line per set of rows "
                        "that shares its changes (key path, paper value -> this tier's value), each with the written "
                        "why of the spec's notes, then the tier's written deviations (the lines the reports print)")
    s.add_argument("--set", dest="overrides", action="append", metavar="KEY.PATH=VALUE",
                   help="a variant: set this key of every cell's config at --tier (repeatable; the value is YAML; "
                        "KEY=~ deletes); shown as the tier 'custom', with the job ids `pubench run --set` uses")
    added_row_options(s)
    numerics_options(s)
    s.set_defaults(fn=cmd_expand)


def schema_parser(sub) -> None:
    s = sub.add_parser("schema", help="the JSON Schema of a spec file (for editors; experiments/spec.schema.json)",
                       formatter_class=FMT, epilog="examples:\n  pubench schema > experiments/spec.schema.json\n"
                                                   "  pubench schema --notes > experiments/notes.schema.json")
    s.add_argument("--notes", action="store_true", help="the schema of a spec's notes file (<id>.notes.yaml)")
    s.set_defaults(fn=cmd_schema)


def cmd_list(args) -> int:
    from tabulate import tabulate

    rows = [
        [s.id, s.kind, s.title, len(s.cells()), sum(c.mean is not None for c in s.reported), s.caption[:60]]
        for s in specs(None).values() if not args.paper or s.paper == args.paper
    ]
    print(tabulate(rows, headers=["id", "kind", "title", "cells", "reported numbers", "caption"]))
    return 0


def cmd_show(args) -> int:
    one = spec(args.id)
    if args.json:
        cells = [{"row": c.row, "col": c.col, "metric": c.metric, "mean": c.mean, "std": c.std, "note": c.note,
                  "mark": c.mark} for c in one.reported]
        print(json.dumps({"id": one.id, "paper": one.paper, "caption": one.caption, "rows": one.rows,
                          "cols": one.cols, "metrics": list(one.metrics), "seeds": one.reported_seeds,
                          "pm": one.pm, "cells": cells}, indent=1))
        return 0
    from pubench.report import render_reported_markdown

    print(render_reported_markdown(one), end="")
    return 0


def cmd_expand(args) -> int:
    from pubench.jobs import expand

    one = spec(args.id)
    num = local_numerics(args)
    overrides = getattr(args, "overrides", None)
    added = added_rows(args)
    if added and overrides:
        raise UsageError("--set and --add-row: one at a time (an added row sets its own keys in its YAML)")
    if added:
        from pubench.registry.added_checks import check_added
        from pubench.registry.spec import CUSTOM

        check_added(one, added)
        view = one.with_added_rows(args.tier, tuple(added))
        plan = expand(view, CUSTOM, 1, only=args.only, numerics=num, only_option=args.only_option)
        one = view
    else:
        plan = expand(one, args.tier, 1, only=args.only, numerics=num, overrides=overrides,
                      only_option=args.only_option)
    if getattr(args, "diff", False):
        return _print_diff(one.with_variant(args.tier, overrides) if overrides else one, plan.tier, args.only, args.json)
    cells = [{"row": j.row, "col": j.col, "task": j.task, "params": j.params, "seeds": j.seeds, "job_id": j.id}
             | ({"added_row": j.variant["row"]} if added else {}) for j in plan.jobs]
    cells += [{"row": r, "col": c, "unavailable": why} for r, c, why in plan.unavailable]
    if overrides:
        import sys

        from pubench.runner import override_warnings

        for warning in override_warnings(one, args.tier, overrides):
            print(f"pubench: warning: {warning}", file=sys.stderr)
    order = {cell: i for i, cell in enumerate(one.cells())}
    cells.sort(key=lambda c: order[(c["row"], c["col"])])
    if args.json:
        variant = {"variant": {"base_tier": args.tier, "set": overrides}} if overrides else \
            {"variant": {"base_tier": args.tier, "added_rows": [r.to_dict() for r in added]}} if added else {}
        print(json.dumps({"id": one.id, "version": one.version, "tier": plan.tier, **variant, "numerics": num.to_dict(),
                          "cells": cells}, indent=1, ensure_ascii=False))
        return 0
    import yaml

    dumper = _review_dumper()
    tier = f"{plan.tier} (tier {args.tier} with --set {' --set '.join(overrides)})" if overrides else \
        f"{plan.tier} (tier {args.tier} with rows added: {', '.join(r.describe() for r in added)})" if added else \
        args.tier
    print(f"# {one.id} (version {one.version}), tier {tier}: {len(plan.jobs)} cells to run, "
          f"{len(plan.unavailable)} not run; job ids of seed 0 with numerics {num.device}, {num.threads} thread(s), "
          f"{num.isa}, torch {num.torch}")
    for c in cells:
        if "unavailable" in c:
            print(f"\n## {c['row']}|{c['col']}: not run at this tier: {c['unavailable']}")
            continue
        print(f"\n## {c['row']}|{c['col']}  job {c['job_id']}  seeds {c['seeds']}")
        if "added_row" in c:
            from pubench.registry.added_rows import budget_text, flow

            row = c["added_row"]
            print(f"# runs like {row['like']} at tier {args.tier}; inherits "
                  f"{budget_text({k: {c['col']: v} for k, v in row['inherits'].items()}, limit=100)}; sets {flow(row['set'])}"
                  + (f"; replaces {row['like']}'s {', '.join(row['replaces'])}" if row["replaces"] else ""))
        print(f"task: {c['task']}")
        print(yaml.dump({"params": c["params"]}, Dumper=dumper, sort_keys=True, allow_unicode=True,
                        width=110).rstrip())
    return 0


def _print_diff(one, tier: str, only: list[str] | None, as_json: bool) -> int:
    """``expand --diff``: the tier's changes against the paper tier (:mod:`pubench.registry.changes`)."""
    from pubench.registry.changes import tier_changes

    lines = tier_changes(one, tier, only)
    written = list(one.tiers[tier].deviations)
    if as_json:
        print(json.dumps({"id": one.id, "version": one.version, "tier": tier, "against": "paper", "changes": [
            {"rows": list(ln.rows), "text": ln.text,
             "changes": [{"path": ch.path, "values": [{"paper": a, "tier": b, "cols": list(cols)}
                                                      for a, b, cols in ch.values]} for ch in ln.changes],
             "why": [{"key": key, "text": why} for key, why in ln.whys]} for ln in lines],
            "deviations": written}, indent=1, ensure_ascii=False))
        return 0
    print(f"# {one.id} (version {one.version}), tier {tier} against the paper tier: {len(lines)} line(s) of changes, "
          f"generated from the resolved configs (key path, paper value -> this tier's value), each with its written "
          f"why; {len(written)} written deviation(s)")
    for ln in lines:
        print(f"- {ln.full_text()}")
    if written:
        print("\n# written deviations (what no config shows)")
        for d in written:
            print(f"- {d}")
    return 0


def _review_dumper():
    import yaml

    class Dumper(yaml.SafeDumper):
        """Block mappings, flow lists of scalars: one key per line, short lines."""

    def represent_list(dumper, data):
        flow = all(not isinstance(v, (list, dict)) for v in data)
        return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)

    Dumper.add_representer(list, represent_list)
    return Dumper


def cmd_schema(args) -> int:
    from pubench.registry.schema import spec_json_schema

    print(json.dumps(spec_json_schema(notes=getattr(args, "notes", False)), indent=1, ensure_ascii=False))
    return 0
