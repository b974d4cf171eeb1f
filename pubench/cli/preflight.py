"""``pubench preflight``: every cell of a tier builds, fits in memory, and what it costs."""

from __future__ import annotations

from pathlib import Path

from pubench.cli._common import FMT, TIER_CHOICES, bounded_int, positive_float, specs
from pubench.utils.io import check_writable


def parser(sub) -> None:
    s = sub.add_parser(
        "preflight", help="check that every cell of a tier builds, fits in memory, and what it costs (writes no record)",
        formatter_class=FMT,
        description="For every configuration of the selected cells (cells differing only in a loss hyperparameter "
                    "or a class prior share one), run the cell's job with its full-size data (synthetic of the data "
                    "set's shape and size where the data root lacks it), model, optimizer and schedule, but only "
                    "--steps steps of each training stage's first and last epoch and one evaluation chunk, each in "
                    "its own process. Per cell: ok / failed (one line) / skipped (why), step time, peak memory and "
                    "the projected job and table cost on this device; `run --dry-run` uses the projections. "
                    "Exit status 1 when a cell fails.",
        epilog="examples:\n  pubench preflight table2-pucl --only '*|DD'   # one table's cells: minutes\n"
               "  pubench preflight table1-pucl --device cuda --json /tmp/pf.json\n"
               "  pubench preflight --sample --steps 1 --max-step-gflop 150   # one cell per task kind and backbone (CI)\n"
               "  pubench preflight --tier paper   # every paper-tier cell on the CPU: about 12 hours on 2 cores (nightly)\n"
               "  pubench preflight --tier paper --json pf.json --resume   # continue a long run where it stopped\n"
               "  pubench preflight --tier paper --json pf.json --resume --retry-skipped --jobs 1   # what --jobs 2 "
               "skipped for memory")
    s.add_argument("ids", nargs="*", help="table or figure ids (default: all)")
    s.add_argument("--tier", default="paper", choices=TIER_CHOICES,
                   help="default: paper (preflight projects the cost of the paper's configs; every other one-tier "
                        "command defaults to reduced)")
    s.add_argument("--set", dest="overrides", action="append", metavar="KEY.PATH=VALUE",
                   help="check the variant `pubench run --set` would run: set this key of every selected cell's "
                        "config at --tier (repeatable; the value is YAML; KEY=~ deletes)")
    s.add_argument("--device", default="cpu", choices=["cpu", "cuda"], help="default: cpu")
    s.add_argument("--steps", type=bounded_int("--steps", 1, 1000), default=2,
                   help="steps of each stage's first and of its last epoch (default 2; the first is the warm-up)")
    s.add_argument("--threads", type=bounded_int("--threads", 1, 256),
                   help="torch threads per check (default 1, a job's canonical count)")
    s.add_argument("--only", action="append", metavar="ROW|COL", help="only cells matching this glob (repeatable)")
    s.add_argument("--sample", action="store_true", help="one cell per task kind and backbone (the cheapest)")
    s.add_argument("--max-step-gflop", type=positive_float("--max-step-gflop"), metavar="G",
                   help="only cells whose largest batch's forward pass is estimated at most G GFLOP (the backbone's "
                        "FLOPs per example, counted on the meta device, x the batch size): keeps a CPU run short")
    s.add_argument("--json", metavar="FILE", help="also write every figure to this JSON file (rewritten after each check, \"complete\": false until the last, so a killed run keeps what it checked)")
    s.add_argument("--resume", action="store_true",
                   help="with --json FILE: take the configurations FILE already holds (from an earlier, perhaps "
                        "killed run with the same device, tier, steps and threads) as checked and check the rest, "
                        "so the whole paper tier can be checked over several sittings; FILE then holds them all")
    s.add_argument("--retry-skipped", action="store_true",
                   help="with --resume: check again the configurations FILE holds as skipped (e.g. over the memory "
                        "budget of a run with --jobs 2: rerun them with --jobs 1, which gives a check all of it); "
                        "one skipped for memory is checked again only if this run gives a check more of it than "
                        "it had, and until its new check ends FILE keeps its skip, so a stopped retry loses none")
    s.add_argument("--max-memory", type=positive_float("--max-memory"), metavar="GIB",
                   help="on the CPU, stop a check above this resident memory and report it skipped "
                        "(default: 3/4 of the memory available at the start)")
    s.add_argument("--max-seconds", type=positive_float("--max-seconds"), metavar="S",
                   help="stop a check after this long and report it failed (default: no limit)")
    s.add_argument("--jobs", type=bounded_int("--jobs", 1, 64), default=1,
                   help="checks at once, each in its own process (default 1; on the CPU each gets 1/JOBS of the "
                        "memory budget; on one GPU keep 1)")
    s.add_argument("--no-flops", action="store_true", help="do not count FLOPs (PyTorch's FlopCounterMode)")
    s.set_defaults(fn=cmd_preflight)


def cmd_preflight(args) -> int:
    """:func:`pubench.preflight.preflight`, its closing note, the JSON."""
    from dataclasses import replace

    from pubench.errors import UsageError
    from pubench.preflight import Options, preflight, read_resume, write_json
    from pubench.preflight.report import render

    if args.json:
        check_writable(Path(args.json).resolve().parent, "--json")
    elif args.resume:
        raise UsageError("--resume needs --json FILE (the file of the run to continue)")
    if args.retry_skipped and not args.resume:
        raise UsageError("--retry-skipped goes with --resume (it re-checks the skipped configurations of FILE)")
    opts = Options(tier=args.tier, device=args.device, steps=args.steps, threads=args.threads, only=args.only,
                   sample=args.sample, max_step_gflop=args.max_step_gflop,
                   max_memory=None if args.max_memory is None else int(args.max_memory * 2**30),
                   max_seconds=args.max_seconds, flops=not args.no_flops, jobs=args.jobs,
                   overrides=tuple(args.overrides or ()))
    if args.resume:
        taken, wall = read_resume(Path(args.json), opts)
        opts = replace(opts, resumed=taken, resumed_wall_s=wall, retry_skipped=args.retry_skipped)
    save = (lambda partial: write_json(partial, Path(args.json))) if args.json else None
    report = preflight(specs(args.ids or None), opts, say=lambda line: print(line, flush=True), on_check=save)
    print(render(report))
    if args.json:
        write_json(report, Path(args.json))
    return 1 if report.failed else 0
