"""``pubench validate``: check a new or edited spec file, or the rows you would add to a table
(an overlay file, ``--add-row`` values), without running anything."""

from __future__ import annotations

from pathlib import Path

from pubench.cli._common import DEFAULT_TIER, FMT, TIER_CHOICES, UsageError, added_row_options


def parser(sub) -> None:
    s = sub.add_parser(
        "validate", help="check a spec file, or rows to add to a table (an overlay, --add-row), with line numbers",
        formatter_class=FMT,
        description="Check spec files as the registry checks them when it loads them: the schema, the unit names "
                    "(registered, or planned in experiments/_planned.yaml), the reported-cell layout, the references "
                    "across fields, and every cell's config at every tier; a spec's notes file (<id>.notes.yaml) is "
                    "checked with it; experiments/_ladders.yaml against the specs it names (pubench ladder). An overlay file (`rows: {NAME: {like: ROW, set: {...}}}`) and --add-row "
                    "values get every check `pubench run --overlay / --add-row` makes before a job starts, against "
                    "the table named by --spec at --tier: names, the --like row, every unit the rows' keys name "
                    "registered by an installed package, every added cell's config accepted by its task. The first "
                    "problem of each file is one line `file:line: dotted.key: problem`. Runs nothing, writes nothing; "
                    "exit 0 when everything is valid, 2 otherwise.",
        epilog="examples:\n  pubench validate experiments/bcl/fig5-bcl.yaml\n"
               "  pubench validate experiments/punce/*.yaml\n  pubench validate experiments/_ladders.yaml\n"
               "  pubench validate mine.yaml --spec table2-punce --tier reduced   # an overlay of rows to add\n"
               "  pubench validate --spec table2-punce --add-row 'MyPU=pu_method: {name: upu}' --like 'MLP nnPU'")
    s.add_argument("files", nargs="*", metavar="FILE.yaml",
                   help="spec files (need not be in experiments/ yet), their notes files, or overlay files (with --spec)")
    s.add_argument("--spec", metavar="ID", help="the table an overlay file or --add-row adds rows to, e.g. table2-punce")
    s.add_argument("--tier", default=DEFAULT_TIER, choices=TIER_CHOICES,
                   help=f"the tier the added rows would run at (default: {DEFAULT_TIER})")
    added_row_options(s, overlay=False)
    s.set_defaults(fn=cmd_validate)


def is_overlay(path: Path) -> bool:
    """An overlay file (rows to add to a table) rather than a spec: a mapping whose only key is ``rows``."""
    from pubench.errors import SpecError
    from pubench.utils.yamlio import parse_yaml

    try:
        data = parse_yaml(path.read_text(encoding="utf-8"), path)
    except (SpecError, UnicodeDecodeError, OSError):  # then it is checked as a spec, which names the problem
        return False
    return isinstance(data, dict) and set(data) == {"rows"}


def cmd_validate(args) -> int:
    from pubench.cli._common import added_rows, one_line
    from pubench.errors import PubenchError
    from pubench.registry import notes
    from pubench.registry.added_rows import read_overlay
    from pubench.registry.loader import validate_file
    from pubench.registry.spec import SpecError
    from pubench.utils.yamlio import problem_line

    if not args.files and not args.add_rows:
        raise UsageError("name spec or overlay files, or rows to check with --spec ID --add-row NAME=YAML --like ROW")
    if args.add_rows and not args.spec:
        raise UsageError("--add-row: name the table the row is added to with --spec ID")
    bad, seen = 0, set()
    for name in args.files:
        path = Path(name)
        if not path.is_file():
            raise UsageError(f"no such file {name!r}")
        if is_overlay(path):
            if not args.spec:
                raise UsageError(f"{name} is an overlay (rows to add to a table): name the table with --spec ID")
            try:
                print(f"{name}: ok ({check_rows(args.spec, args.tier, read_overlay(path))})")
            except PubenchError as e:
                bad += 1
                print(one_line(e))
            continue
        spec_file = notes.spec_of(path) if notes.is_notes(path) else path
        if spec_file.resolve() in seen:  # a spec and its notes file, checked together once
            continue
        seen.add(spec_file.resolve())
        if path.name == LADDERS_FILE:
            bad += _validate_ladders(path)
            continue
        if path.parent.name.startswith("_"):
            print(f"{path}: skipped: not a spec (experiments/_*/ holds presets and the planned units)")
            continue
        try:
            spec = validate_file(path)
        except SpecError as e:
            bad += 1
            print(one_line(problem_line(e)))
            continue
        print(f"{spec_file}: ok ({spec.id}, version {spec.version}: {len(spec.cells())} cells, "
              f"{len(spec.reported)} reported number(s), tiers {', '.join(spec.tiers)})")
    if args.add_rows:
        rows = added_rows(args)
        label = ", ".join(f"--add-row {r.name!r}" for r in rows)
        try:
            print(f"{label}: ok ({check_rows(args.spec, args.tier, rows)})")
        except PubenchError as e:
            bad += 1
            print(one_line(e))
    return 2 if bad else 0


LADDERS_FILE = "_ladders.yaml"


def _validate_ladders(path: Path) -> int:
    """The budget ladders file (:mod:`pubench.registry.ladders`): each entry against its spec; 1 when invalid."""
    from pubench.cli._common import one_line
    from pubench.registry.ladders import load_ladders
    from pubench.registry.spec import SpecError
    from pubench.utils.yamlio import problem_line

    try:
        ladders = load_ladders(path)
    except SpecError as e:
        print(one_line(problem_line(e)))
        return 1
    print(f"{path}: ok ({len(ladders)} budget ladder(s): {', '.join(lad.id for lad in ladders) or 'none'})")
    return 0


def check_rows(spec_id: str, tier: str, rows: list) -> str:
    """Every check ``pubench run`` makes on ``rows`` added to ``spec_id`` at ``tier`` before a job
    starts (raising its error), and what would run, in words. Data sets missing under the data root
    are said, not counted as a problem: they are this machine's, not the rows'."""
    from pubench.jobs import expand
    from pubench.registry import get_spec
    from pubench.registry.added_checks import check_added, config_problem
    from pubench.registry.spec import CUSTOM
    from pubench.runner import missing_data, split_unimplemented

    spec = get_spec(spec_id)
    if tier not in spec.tiers:
        raise UsageError(f"{spec_id} has no tier {tier!r} (tiers: {', '.join(spec.tiers)})")
    check_added(spec, rows)
    view = spec.with_added_rows(tier, tuple(rows))
    plan = expand(view, CUSTOM)
    jobs, lacking = split_unimplemented(plan.jobs)
    problem = config_problem(view, jobs)
    if problem is not None:
        raise problem
    cells = {(j.row, j.col) for j in jobs}
    text = (f"{', '.join(r.name for r in rows)} added to {spec.id} at tier {tier}: {len(cells)} cell(s), "
            f"{len(jobs)} job(s) with the tier's seeds")
    if lacking:
        text += f"; {len(lacking)} cell(s) not run: their baseline names a unit not implemented yet"
    if plan.unavailable:
        text += f"; {len(plan.unavailable)} cell(s) the tier does not run"
    missing = missing_data(jobs)
    if missing:
        text += f"; data not under the data root here: {', '.join(missing)} (`pubench prepare --check`)"
    return text
