"""What the subcommands share: the one-line argument errors, argument types, the numerics
options and the process environment they need, and reading specs by id."""

from __future__ import annotations

import argparse
import functools
import os
import sys

from pubench.errors import UsageError
from pubench.registry.spec import TIERS as TIER_CHOICES

#: the tier of every command that works on one tier (run, expand, verify, compare) unless --tier says
#: otherwise: the configs that run on a laptop CPU (preflight, which projects the paper's cost, says paper)
DEFAULT_TIER = "reduced"

FMT = argparse.RawDescriptionHelpFormatter  # every subcommand's help keeps its examples' lines

__all__ = ["DEFAULT_TIER", "FMT", "TIER_CHOICES", "Parser", "UsageError", "added_row_options", "added_rows", "baselines_option",
           "bounded_int", "ensure_process_env", "local_numerics",
           "numerics_options", "one_line", "positive_float", "quiet_jobs_when_asked", "spec", "specs"]


class Parser(argparse.ArgumentParser):
    """argparse, but a bad argument is one line (and the hint where help is), exit 2."""

    def error(self, message: str):  # noqa: D401 - argparse's signature
        from pubench.errors import shorten

        self.exit(2, f"{self.prog}: error: {shorten(' '.join(message.split()), 600)} (see `{self.prog} --help`)\n")


def spec(spec_id: str):
    from pubench.registry import get_spec

    return get_spec(spec_id)


def specs(ids: list[str] | None):
    """Every spec (``ids`` empty), else only these files: a broken spec elsewhere does not block them."""
    from pubench.registry import load_all

    if not ids:
        return load_all()
    return {i: spec(i) for i in ids}


# ---- argument types -------------------------------------------------------------------
def bounded_int(name: str, lo: int, hi: int):
    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be an integer, got {text!r}") from None
        if not lo <= v <= hi:
            raise argparse.ArgumentTypeError(f"{name} must be in {lo}..{hi}, got {v}")
        return v

    return parse


def positive_float(name: str):
    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be a number, got {text!r}") from None
        if not v >= 0 or v == float("inf"):
            raise argparse.ArgumentTypeError(f"{name} must be a finite number >= 0, got {text!r}")
        return v

    return parse


# ---- rows added to a table --------------------------------------------------------------
def added_row_options(s: argparse.ArgumentParser, overlay: bool = True) -> None:
    s.add_argument("--add-row", dest="add_rows", action="append", metavar="NAME=YAML",
                   help="add a row of your own to the table: NAME=the params it sets, as YAML (e.g. 'MyPU=pu_method: "
                        "{name: my_pu}'); it runs like the --like row at --tier (that row's config, the tier's budget "
                        "included, with these keys on top) and is stored in the tier 'custom', never mixed with the "
                        "spec's records (repeatable). Where a table's methods are its columns, it adds a column")
    s.add_argument("--like", metavar="ROW", help="the baseline row (column) every --add-row runs like")
    if overlay:
        s.add_argument("--overlay", action="append", metavar="FILE.yaml",
                       help="rows to add from a file: `rows: {NAME: {like: ROW, set: {...}}}` (repeatable; "
                            "`pubench validate FILE --spec ID` checks one)")


def baselines_option(s: argparse.ArgumentParser) -> None:
    s.add_argument("--baselines", metavar="DIR",
                   help="the result store the table's own rows are read from where this store ($PUBENCH_RESULTS) "
                        "has no record of a cell, for rows added with --add-row / --overlay (default: "
                        "$PUBENCH_BASELINES, else the committed results/ of the checkout)")


def added_rows(args) -> list | None:
    """The rows ``--add-row`` / ``--like`` / ``--overlay`` add (:mod:`pubench.registry.added_rows`), or None."""
    from pubench.registry.added_rows import parse_add_row, read_overlay

    texts, like, files = getattr(args, "add_rows", None), getattr(args, "like", None), getattr(args, "overlay", None)
    if like and not texts:
        raise UsageError("--like names the row an --add-row runs like: give --add-row NAME=YAML too")
    rows = [parse_add_row(text, like) for text in texts or []] + [r for f in files or [] for r in read_overlay(f)]
    return rows or None


# ---- numerics and the process environment ---------------------------------------------
def numerics_options(s: argparse.ArgumentParser) -> None:
    s.add_argument("--threads", type=bounded_int("--threads", 1, 256),
                   help="torch threads per job (default 1, the canonical setting: give parallelism with --jobs). "
                        "Another count changes the numbers, so it makes other job ids")
    s.add_argument("--numerics", default="avx2", choices=["avx2", "native"],
                   help="avx2 (default, canonical): pin every numeric library to its AVX2 code path, so a job "
                        "reproduces bit for bit on any x86-64 CPU with AVX2; native: let them pick (faster on "
                        "AVX-512, not reproducible across machines; other job ids)")
    s.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"],
                   help="auto (default): cpu, or cuda for a SLURM profile that asks for GPUs")
    s.add_argument("--fast-numerics", action="store_true",
                   help="the opt-in fast profile: conv nets in channels_last and every module a training step "
                        "calls compiled with torch.compile (about 1.3-1.6x on the CPU, docs/performance.md). Other "
                        "numbers, so other job ids; reports never compare its records with the canonical ones")


def local_numerics(args):
    """The numerics profile of a local run, from the command line (``--device auto``: cpu)."""
    from pubench import numerics

    device = getattr(args, "device", "auto")
    return numerics.resolve(device="cpu" if device == "auto" else device, threads=getattr(args, "threads", None),
                            isa=getattr(args, "numerics", "avx2"), fast=getattr(args, "fast_numerics", False))


def ensure_process_env(num) -> None:
    """The numerics variables are read when the libraries load, so restart once with them
    (and with the allocator settings, unless ``PUBENCH_NO_MALLOC_TUNING``) unless this
    process already has them; ``PUBENCH_NO_REEXEC`` forbids the restart."""
    from pubench import numerics

    want = numerics.process_env(num)
    if os.environ.get("PUBENCH_NO_MALLOC_TUNING"):
        want = {k: v for k, v in want.items() if k not in numerics.MALLOC_ENV}
    missing = {k: v for k, v in want.items() if os.environ.get(k) != v}
    if not missing:
        return
    pinned = numerics.env_missing(num)
    if os.environ.get("PUBENCH_NO_REEXEC"):
        if pinned:
            raise UsageError("this process lacks the numerics environment ("
                             + " ".join(f"{k}={v}" for k, v in sorted(pinned.items()))
                             + "); unset PUBENCH_NO_REEXEC or export these")
        return
    sys.stdout.flush()
    os.execve(sys.executable, [sys.executable, "-m", "pubench", *sys.argv[1:]], {**os.environ, **missing})


def quiet_jobs_when_asked(command):
    """``--no-progress`` also silences the epoch progress inside jobs: worker processes
    inherit ``PUBENCH_PROGRESS=0``."""

    @functools.wraps(command)
    def wrapped(args) -> int:
        if not getattr(args, "no_progress", False):
            return command(args)
        previous = os.environ.get("PUBENCH_PROGRESS")
        os.environ["PUBENCH_PROGRESS"] = "0"
        try:
            return command(args)
        finally:
            if previous is None:
                os.environ.pop("PUBENCH_PROGRESS", None)
            else:
                os.environ["PUBENCH_PROGRESS"] = previous

    return wrapped


def one_line(e: BaseException) -> str:
    from pubench.errors import shorten

    return shorten(" ".join(str(e).split()) or type(e).__name__, 600)

