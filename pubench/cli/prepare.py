"""``pubench prepare``: make data sets available offline under ``$PUBENCH_DATA`` and check them."""

from __future__ import annotations

from pathlib import Path

from pubench import paths
from pubench.cli._common import FMT, UsageError
from pubench.utils.io import check_writable


def parser(sub) -> None:
    s = sub.add_parser("prepare", help="make datasets available offline under $PUBENCH_DATA (default ./data) "
                       "and check them", formatter_class=FMT,
                       epilog="examples:\n  pubench prepare --from ../shared/data\n  pubench prepare --check")
    s.add_argument("datasets", nargs="*", help="dataset names (default: all)")
    s.add_argument("--from", dest="source", help="folder holding local copies (e.g. ../shared/data)")
    s.add_argument("--check", action="store_true", help="only check what is present")
    s.set_defaults(fn=cmd_prepare)


def cmd_prepare(args) -> int:
    from pubench.data.prepare import prepare

    if args.source and not Path(args.source).is_dir():
        raise UsageError(f"--from {args.source}: no such folder")
    root = paths.data_root()
    if not args.check:
        check_writable(root, "data ($PUBENCH_DATA)")
    return prepare(names=args.datasets or None, source=Path(args.source) if args.source else None,
                   root=root, check_only=args.check)
