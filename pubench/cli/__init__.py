"""Command line: ``pubench list | show | expand | schema | validate | coverage | prepare | run | status |
failures | log | cancel | report | site | export | crossref | agreement | verdicts | ladder | verify | compare |
preflight | prune | campaign``.

One module per subcommand (or small group) in this package: a parser function that adds the
subcommand with its worked examples, and a ``cmd_*`` function that parses nothing more and
calls the library (``pubench run`` calls :mod:`pubench.runner`). A new subcommand is one
module plus its parser function in :data:`SUBCOMMANDS` (the order of ``pubench --help``).

Bad input exits with status 2 and a one-line reason (a :class:`~pubench.errors.PubenchError`;
anything else is a bug and keeps its traceback); failed jobs make ``run`` exit with status
1; an interrupted run exits with 130 (SIGINT) or 143 (SIGTERM).
"""

from __future__ import annotations

import os
import sys

from pubench.cli import (
    agreement,
    verdicts,
    campaign,
    cancel,
    compare,
    coverage,
    crossref,
    export,
    failures,
    ladder,
    preflight,
    prepare,
    prune,
    report,
    run,
    specs,
    status,
    validate,
    verify,
)
from pubench.cli._common import FMT, Parser, UsageError, one_line
from pubench.errors import PubenchError

__all__ = ["SUBCOMMANDS", "UsageError", "build_parser", "main"]

#: the parser function of every subcommand, in the order ``pubench --help`` lists them
SUBCOMMANDS = (specs.list_parser, specs.show_parser, specs.expand_parser, specs.schema_parser, validate.parser,
               coverage.parser,
               prepare.parser, run.parser, status.parser, failures.failures_parser,
               failures.log_parser, cancel.parser, report.report_parser, report.site_parser, export.parser,
               crossref.parser,
               agreement.parser, verdicts.parser, ladder.parser, verify.parser, compare.parser, preflight.parser,
               prune.parser, campaign.parser)


def build_parser() -> Parser:
    p = Parser(
        prog="pubench", formatter_class=FMT,
        description="Rerun the tables of five PU / debiased contrastive learning papers and compare with "
                    "the reported numbers.",
        epilog="examples:\n  pubench list\n  pubench show table2-punce\n  pubench run fig5-bcl --seeds 5\n"
               "  pubench report fig5-bcl\n  pubench site\n  pubench verify table2-punce --tier reduced --sample 4\n"
               "  pubench coverage\n\nenvironment: PUBENCH_DATA (data root, default ./data), PUBENCH_RESULTS, "
               "PUBENCH_REPORTS,\n  PUBENCH_LOGS, PUBENCH_EXPERIMENTS, PUBENCH_HOME, PUBENCH_SLURM_PROFILES, "
               "PUBENCH_CACHE,\n  PUBENCH_ENCODER_CACHE=0, PUBENCH_CORE_SLOTS, PUBENCH_NO_REEXEC, PUBENCH_DEBUG; "
               "see the README (Environment)",
    )
    sub = p.add_subparsers(dest="cmd", required=True, metavar="command")
    for add in SUBCOMMANDS:
        add(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    import signal

    from pubench.errors import JobInterrupted, StorageError, install_warning_format

    install_warning_format()
    try:
        parser = build_parser()  # names from the registries: an installed unit package may fail to load here
    except PubenchError as e:
        print(f"pubench: error: {one_line(e)}", file=sys.stderr)
        return e.exit_code
    args = parser.parse_args(argv)
    baselines = getattr(args, "baselines", None)
    previous = os.environ.get("PUBENCH_BASELINES")
    try:
        if baselines:  # --baselines DIR: read wherever the baselines store is asked for (pubench.paths)
            if not os.path.isdir(baselines):
                raise UsageError(f"--baselines {baselines}: no such folder (a result store: <dir>/<tier>/<id>/*.json)")
            os.environ["PUBENCH_BASELINES"] = os.path.abspath(baselines)
        return args.fn(args)
    except PubenchError as e:
        if os.environ.get("PUBENCH_DEBUG"):
            raise
        hint = "; finished work is kept: make room (or fix the folder) and run again" \
            if isinstance(e, StorageError) else ""
        print(f"pubench: error: {one_line(e)}{hint}", file=sys.stderr)
        return e.exit_code
    except (KeyboardInterrupt, JobInterrupted) as e:  # verify, prepare, ...: `run` says more when it submits
        signum = getattr(e, "signum", 2)
        print(f"pubench: interrupted ({signal.Signals(signum).name}); finished jobs are saved, rerun to continue",
              file=sys.stderr)
        return 128 + signum
    except BrokenPipeError:  # `pubench list | head`
        sys.stderr.close()
        return 0
    finally:
        if baselines:
            if previous is None:
                os.environ.pop("PUBENCH_BASELINES", None)
            else:
                os.environ["PUBENCH_BASELINES"] = previous


if __name__ == "__main__":
    raise SystemExit(main())
