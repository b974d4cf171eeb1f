"""``pubench validate FILE.yaml``: check a new or edited spec file without running anything."""

from __future__ import annotations

from pathlib import Path

from pubench.cli._common import FMT, UsageError


def parser(sub) -> None:
    s = sub.add_parser(
        "validate", help="check a new or edited spec file (schema, unit names, reported cells), with line numbers",
        formatter_class=FMT,
        description="Check spec files as the registry checks them when it loads them: the schema, the unit names "
                    "(registered, or planned in experiments/_planned.yaml), the reported-cell layout, the references "
                    "across fields, and every cell's config at every tier; a spec's notes file (<id>.notes.yaml) is checked with it; "
                    "experiments/_ladders.yaml is checked against the specs it names (pubench ladder). The first "
                    "problem of each file is one line "
                    "`file:line: dotted.key: problem`. Runs nothing, writes nothing; exit 0 when every file is valid, "
                    "2 otherwise.",
        epilog="examples:\n  pubench validate experiments/bcl/fig5-bcl.yaml\n"
               "  pubench validate experiments/punce/*.yaml\n  pubench validate experiments/_ladders.yaml")
    s.add_argument("files", nargs="+", metavar="FILE.yaml", help="spec files (need not be in experiments/ yet) or their notes files")
    s.set_defaults(fn=cmd_validate)


def cmd_validate(args) -> int:
    from pubench.cli._common import one_line
    from pubench.registry import notes
    from pubench.registry.loader import validate_file
    from pubench.registry.spec import SpecError
    from pubench.utils.yamlio import problem_line

    bad, seen = 0, set()
    for name in args.files:
        path = Path(name)
        if not path.is_file():
            raise UsageError(f"no such file {name!r}")
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
