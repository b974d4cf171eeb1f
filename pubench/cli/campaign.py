"""``pubench campaign``: the paper tier a short GPU window at a time (:mod:`pubench.campaign`)."""

from __future__ import annotations

import argparse
import os
import re
import time
from pathlib import Path

from pubench.campaign.lease import KINDS, WINDOW_BUDGET_S
from pubench.cli._common import FMT, TIER_CHOICES, UsageError, bounded_int, ensure_process_env, positive_float

ACTIONS = ("run", "pack", "import")
#: the variable that carries the command's start across its restart with the numerics environment
STARTED_ENV = "PUBENCH_CAMPAIGN_STARTED"


def duration(text: str) -> float:
    """Seconds of ``9m``, ``90s``, ``1h30m`` or ``540``."""
    parts = re.fullmatch(r"(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m)?(?:(\d+(?:\.\d+)?)s?)?", text.strip())
    if not text.strip() or parts is None:
        raise argparse.ArgumentTypeError(f"--budget: a duration such as 9m, 90s or 1h30m, got {text!r}")
    h, m, s = (float(x) if x else 0.0 for x in parts.groups())
    total = 3600 * h + 60 * m + s
    if total <= 0:
        raise argparse.ArgumentTypeError(f"--budget must be positive, got {text!r}")
    return total


def concurrency(text: str) -> int | str:
    return "auto" if text == "auto" else bounded_int("--concurrency", 1, 64)(text)


def parser(sub) -> None:
    s = sub.add_parser(
        "campaign", help="run the paper tier a GPU window at a time: several jobs at once, within a budget",
        formatter_class=FMT,
        description="run (the default): take the queue's cells in order (campaigns/paper-gpu.yaml), leave out "
                    "what the store holds, run several jobs at once on the device (--concurrency auto: from the "
                    "preflight's memory and throughput figures and the device's free memory), start only jobs "
                    "whose projected time fits what is left of --budget, stop the others cleanly before it ends, "
                    "and keep the new records in one archive in --out, rewritten as jobs end (at the end with the "
                    "stopped jobs' checkpoints); on a GPU without a packing figure of its own the window's first "
                    "minutes measure it. pack: write what a machine without the data or the git history needs "
                    "(.campaign/: the queue's data sets, each whole or not at all, xz-compressed; the stopped "
                    "jobs' checkpoints; the commit). import: check an archive's records and bring them, the "
                    "checkpoints and a window's measurement into the store (docs/gpu.md, \"The lease\").",
        epilog="examples:\n  pubench campaign --device cuda --budget 9m --out /tmp/out       # on the GPU machine "
               "(make gpu-paper)\n"
               "  pubench campaign --budget 9m --out /tmp/out --dry-run            # what a window would start\n"
               "  pubench campaign --for nvidia-h100-x1                            # the lease's window, planned\n"
               "  pubench campaign pack                                            # here, before the window\n"
               "  pubench campaign import /tmp/out/campaign-*.tar.gz               # here, after it\n"
               "  pubench campaign --device cpu --tier smoke --queue q.yaml --budget 1m --out /tmp/o --concurrency 2")
    s.add_argument("action", nargs="?", choices=ACTIONS, default="run", help="run (default), pack or import")
    s.add_argument("archives", nargs="*", type=Path, help="import: the archive(s) a window wrote")
    s.add_argument("--queue", type=Path, help="the queue file (default: campaigns/paper-gpu.yaml)")
    s.add_argument("--tier", choices=TIER_CHOICES, help="default: the queue's (paper)")
    s.add_argument("--device", choices=["cpu", "cuda"], help="default: the queue's (cuda)")
    s.add_argument("--budget", type=duration, help="run: the window, from the command's start (9m, 540s, 1h)")
    s.add_argument("--out", type=Path, help="run: where the archive and the summary go (e.g. $OUT)")
    s.add_argument("--concurrency", type=concurrency, default="auto",
                   help="run: jobs at once on the device (default auto: the least of the memory, throughput and "
                        "cores bounds, each printed with its figures)")
    s.add_argument("--packing-slowdown", type=positive_float("--packing-slowdown"), metavar="X",
                   help="run: take each packed job to run X times its time alone (default: the packing ratio "
                        "measured by benchmarks/packing.py, else assumed; printed)")
    s.add_argument("--carry", type=Path, help="run, pack: the folder that travels (default .campaign/)")
    s.add_argument("--datasets", nargs="+", metavar="NAME",
                   help="pack: only these data sets (default: those the queue's pending jobs read)")
    s.add_argument("--dry-run", action="store_true",
                   help="run: plan and say what the window would start, run nothing; import: check only")
    s.add_argument("--for", dest="for_kind", choices=sorted(KINDS), metavar="KIND",
                   help="run: a dry run for a lease's machine (" + ", ".join(sorted(KINDS)) + "): its GPU's name, "
                        "memory and cores as stated, only the data .campaign/ carries whole, the lease's window "
                        "budget unless --budget; each figure marked measured or conservative")
    s.add_argument("--calibrate", choices=("auto", "always", "never"), default="auto",
                   help="run: measure the packing ratio and the step alone on the queue's first network in the "
                        "window's first minutes (auto: on CUDA where no packing figure of this GPU is committed)")
    s.add_argument("--allow-dirty", action="store_true",
                   help="run, pack: with uncommitted code changes; import: take records of such code")
    s.set_defaults(fn=cmd_campaign)


def cmd_campaign(args) -> int:
    from pubench.campaign import commands

    os.environ.setdefault(STARTED_ENV, repr(time.time()))  # before a restart: the budget counts from here
    if args.action == "import":
        if not args.archives:
            raise UsageError("campaign import: name the archive(s) a window wrote")
        return commands.import_(args.archives, allow_dirty=args.allow_dirty, dry_run=args.dry_run)
    if args.archives:
        raise UsageError(f"campaign {args.action}: takes no archive (did you mean `campaign import`?)")
    if args.action == "pack":
        from pubench.campaign.travel import DEFAULT_FOLDER
        from pubench.paths import project_root

        return commands.pack(args.queue, args.tier, args.carry or project_root() / DEFAULT_FOLDER, args.datasets,
                             allow_dirty=args.allow_dirty)
    if args.for_kind:
        if args.device == "cpu":
            raise UsageError(f"campaign --for {args.for_kind}: plans for its GPU; not with --device cpu")
        args.dry_run = True  # a lease's machine is not this one: plan only
        args.budget = args.budget or WINDOW_BUDGET_S
    if args.budget is None or (args.out is None and not args.dry_run):
        raise UsageError("campaign: --budget (e.g. 9m) and --out DIR are needed (--out not with --dry-run; "
                         "--for KIND plans the lease's window)")
    opts = commands.WindowOptions(
        budget_s=args.budget, out=args.out or Path("."), started=float(os.environ[STARTED_ENV]), queue=args.queue,
        tier=args.tier, device=args.device, concurrency=args.concurrency, slowdown=args.packing_slowdown,
        carry=args.carry, dry_run=args.dry_run, allow_dirty=args.allow_dirty, for_kind=args.for_kind,
        calibrate=args.calibrate)
    if not args.dry_run:
        from pubench import numerics
        from pubench.campaign.queue import default_path, load

        ensure_process_env(numerics.resolve(device=args.device or load(args.queue or default_path()).device))
    return commands.run_window(opts)
