"""``pubench preflight``: before cluster hours are spent, check that every cell of a tier
builds, fits in memory, and what it will cost.

For every configuration of the selected cells (:mod:`pubench.preflight.plan`: cells that
differ only in a loss hyperparameter or a class prior share one), a worker process
(:mod:`pubench.preflight.worker`) runs the cell's seed-0 job as ``pubench run`` would, with
its full-size data pipeline (real data where the data root has it, a synthetic stand-in of
the data set's shape and size where not: :mod:`pubench.preflight.standins`), model,
optimizer and schedule, but with every training stage capped at ``steps`` steps of its
first and of its last epoch and every ``predict`` at one chunk
(:mod:`pubench.preflight.meter`). Per cell: ok / failed (one line) / skipped (why it cannot
be checked here), the step time, the peak memory (resident set on the CPU,
``max_memory_allocated`` on CUDA), and the projected job and table cost on this device.
Nothing is written to a result store; each ok configuration's projection goes to the
preflight cache (:mod:`pubench.preflight.report`), where ``run --dry-run`` finds it.

Library use: ``preflight(specs, Options(...), say=print) -> Report``.
"""

from __future__ import annotations

import concurrent.futures
import re
import time
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from pubench.errors import PubenchError
from pubench.preflight.plan import Cell, Group, group, sample, select, step_flops


class PreflightError(PubenchError):
    """A preflight that cannot start (no CUDA device, nothing selected)."""


@dataclass
class Options:
    tier: str = "paper"
    device: str = "cpu"
    steps: int = 2
    threads: int | None = None
    only: list[str] | None = None
    sample: bool = False            # one cell per task kind and backbone
    max_step_gflop: float | None = None  # only cells whose largest batch's forward is at most this (estimated)
    max_memory: int | None = None   # bytes a CPU check may hold (default: 3/4 of the available memory)
    max_seconds: float | None = None
    flops: bool = True
    cache: bool = True              # write the projections to the preflight cache
    overrides: tuple[str, ...] = ()  # --set key.path=value: the variant `run --set` runs
    jobs: int = 1                   # checks at once (CPU: each gets 1/jobs of the memory budget)
    #: --resume: configuration key -> (status, reason, check) of an earlier run's JSON, taken as is,
    #: and that run's wall time; so a check of the whole paper tier can span several sittings
    resumed: dict[str, tuple[str, str | None, dict[str, Any]]] = field(default_factory=dict)
    resumed_wall_s: float = 0.0
    #: --retry-skipped: check again the resumed configurations that were skipped, except those skipped for
    #: memory with at least this run's share of it (:func:`worth_retrying`)
    retry_skipped: bool = False


@dataclass
class CellResult:
    cell: Cell
    status: str                     # ok | failed | skipped
    reason: str | None = None       # the error or why it was skipped (one line)
    shares: str | None = None       # the cell whose check this one shares
    check: dict[str, Any] = field(default_factory=dict)  # the worker's result

    @property
    def figures(self) -> dict[str, Any]:
        return self.check.get("figures") or {}

    @property
    def skipped_for(self) -> str | None:
        """Why a skipped check did not run: ``memory`` (more of it would mend that) or ``data``."""
        return self.check.get("skipped_for") if self.status == "skipped" else None

    @property
    def job_s(self) -> float | None:
        return self.figures.get("job_s") if self.status == "ok" else None


@dataclass
class Report:
    options: Options
    device_name: str
    torch: str
    date: str
    cells: list[CellResult]
    unavailable: list[tuple[str, str]]
    wall_s: float = 0.0
    complete: bool = True           # false: written while checks were still running (or the run was killed)

    @property
    def failed(self) -> list[CellResult]:
        return [r for r in self.cells if r.status == "failed"]


def _device_name(device: str) -> str:
    from pubench.train.accel import device_name

    return device_name(device)


def _default_budget() -> int | None:
    from pubench.preflight.runner import available_memory

    free = available_memory()
    return None if free is None else int(0.75 * free)


def _check_group(g: Group, opts: Options, budget: int | None) -> tuple[str, str | None, dict[str, Any]]:
    """(status, reason, worker result) of one configuration; never raises for the cell's own error."""
    try:
        status, reason, res = _run_group(g, opts, budget)
    except Exception as exc:  # noqa: BLE001 - e.g. a data block the stand-ins cannot read: the cell's result
        status, reason, res = "failed", f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:400], {}
    if opts.device == "cpu" and budget is not None:  # what the check had: a later --retry-skipped compares it
        res = res | {"memory_budget": budget}
    return status, reason, res


#: a skip for memory is checked again only with this much more than the budget it had: the default budget
#: (3/4 of the memory available as the run starts) moves a little between runs
RETRY_MEMORY_MARGIN = 1.05


def worth_retrying(check: dict[str, Any], share: int | None) -> bool:
    """Whether ``--retry-skipped`` checks a skipped configuration again with ``share`` bytes (None: no
    budget): a data set missing then may be here now; one over its memory budget only if this share is
    larger (a check that had unknown memory is retried)."""
    if check.get("skipped_for") != "memory":
        return True
    had = check.get("memory_budget")
    return had is None or share is None or share > RETRY_MEMORY_MARGIN * had


#: on the CPU a configuration over the memory budget at the paper's batch is checked at that batch
#: divided by 2, 4 or 8 (:data:`pubench.preflight.plan.DIVIDED_STAGES`) rather than skipped
MAX_BATCH_DIVISOR = 8
#: a CPU check's peak resident memory over its training stages' layer outputs counted on the meta device
#: (:func:`pubench.preflight.plan.trained_activation_bytes`): median 4.6 (2.3-10) over the 130 checks of the
#: paper tier's CPU run with the count above 0.5 GiB (2026-11-28; the backward pass's buffers, weights,
#: optimizer state, data and torch itself), so a check starts at the batch this ratio says fits
PEAK_OVER_LAYER_OUTPUTS = 4


def _run_group(g: Group, opts: Options, budget: int | None) -> tuple[str, str | None, dict[str, Any]]:
    from pubench.preflight.plan import smaller_batch, trained_activation_bytes, trained_batches
    from pubench.preflight.runner import run_check
    from pubench.preflight.standins import plan as plan_inputs

    job = checked = g.job
    divisor, over = 1, None
    cpu_budget = budget if opts.device == "cpu" else None
    need = trained_activation_bytes(job) if cpu_budget is not None else 0.0
    if cpu_budget is not None and need * PEAK_OVER_LAYER_OUTPUTS > cpu_budget:
        # a check that cannot fit would spend minutes building its data and net before the watchdog stops it
        over = (f"training keeps about {need / 2**30:.1f} GiB of layer outputs at its batch size (counted on the "
                f"meta device; a CPU check's peak is about {PEAK_OVER_LAYER_OUTPUTS}x that, measured), above this "
                f"machine's budget for it ({cpu_budget / 2**30:.1f} GiB; --max-memory)")
        # the count is a lower bound: start where the measured ratio says the batch fits, try 1/8 if it may
        divisor = next((d for d in (2, 4, 8) if need / d * PEAK_OVER_LAYER_OUTPUTS <= cpu_budget),
                       MAX_BATCH_DIVISOR if need / MAX_BATCH_DIVISOR <= cpu_budget / 2 else None)
        checked = smaller_batch(job, divisor) if divisor is not None else None
        if checked is None:
            return ("skipped", f"{over}, even at 1/{MAX_BATCH_DIVISOR} of its batch: check it on a GPU",
                    {"skipped_for": "memory"})
    inputs = plan_inputs(job.task, job.params, cpu_budget)
    if inputs.skip:
        return "skipped", inputs.skip, {"inputs": inputs.describe(), "skipped_for": inputs.skipped_for}
    eval_divisor, eval_over = 1, None
    while True:
        res = run_check(checked.to_dict(), opts.steps, inputs.synthetic, flops=opts.flops, max_bytes=cpu_budget,
                        max_seconds=opts.max_seconds, eval_divisor=eval_divisor)
        res["inputs"] = inputs.describe()
        if res.get("stopped") != "memory":
            break
        # stopped in a stage that trains: half the batch; outside the stages (evaluation: predict's chunks): half
        # the evaluation chunk; before any stage (the data and the net alone), neither would fit
        if res.get("stopped_in") and divisor < MAX_BATCH_DIVISOR and (halved := smaller_batch(job, divisor * 2)):
            over, divisor, checked = over or res["error"], divisor * 2, halved
        elif res.get("training_began") and not res.get("stopped_in") and eval_divisor < MAX_BATCH_DIVISOR:
            eval_over, eval_divisor = eval_over or res["error"], eval_divisor * 2
        else:
            break
    if divisor > 1:
        res["batch_divisor"] = divisor
        res.setdefault("notes", []).append(
            f"checked at 1/{divisor} of the paper's batch ({trained_batches(checked)}): over this machine's memory "
            f"at its own ({over}); the step time and peak memory are at the smaller batch, the job's cost projects "
            f"its {divisor}x steps (the same examples)")
    if eval_divisor > 1:
        res["eval_divisor"] = eval_divisor
        res.setdefault("notes", []).append(
            f"evaluated 1/{eval_divisor} of each evaluation chunk, counted at the whole chunk: over this machine's "
            f"memory at the whole ({eval_over}); the peak memory is at the smaller chunk")
    if res.get("ok"):
        return "ok", None, res
    at = ", ".join(([f"at 1/{divisor} of its batch"] if divisor > 1 else [])
                   + ([f"1/{eval_divisor} of its evaluation chunk"] if eval_divisor > 1 else []))
    if res.get("stopped") == "memory":
        return "skipped", res["error"] + (f", {at}" if at else ""), res | {"skipped_for": "memory"}
    return "failed", (res.get("error") or "unknown error") + (f" ({at})" if at else ""), res


def preflight(specs: dict[str, Any], opts: Options, say: Callable[[str], None] = print,
              on_check: Callable[[Report], None] | None = None) -> Report:
    """Check the cells of ``specs`` (module docstring); ``say`` gets one progress line per
    configuration and per cell whose config fails; ``on_check`` gets the report so far
    (``complete`` false) after each configuration, so a killed run keeps what it checked."""
    from pubench import numerics
    from pubench.preflight.report import describe_check, store_cached
    from pubench.preflight.runner import stop_all

    if opts.steps < 1:
        raise PreflightError("--steps must be >= 1")
    if opts.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise PreflightError("--device cuda: this machine has no CUDA device")
    t0 = time.perf_counter()
    num = numerics.resolve(device=opts.device, threads=opts.threads)
    cells, unavailable = select(specs, opts.tier, opts.only, num, opts.overrides)
    if opts.max_step_gflop is not None:
        cells = [c for c in cells if step_flops(c.job) <= opts.max_step_gflop * 1e9]
    if opts.sample:
        cells = sample([c for c in cells if c.error is None]) + [c for c in cells if c.error is not None]
    if not cells:
        raise PreflightError(f"no runnable {opts.tier}-tier cell selected")
    results = [CellResult(c, "failed", c.error) for c in cells if c.error is not None]
    config_errors = len(results)
    for r in results:
        say(f"  config error: {r.cell.name}: {r.reason}")
    groups = group(cells)
    budget = opts.max_memory if opts.max_memory is not None else _default_budget()
    taken = dict(opts.resumed)
    # checked again (--retry-skipped): until its new check ends, the earlier outcome stays in the partial
    # JSON, so a retry pass stopped halfway loses none of the skips it had not reached
    earlier = {}
    if opts.retry_skipped:
        provisional = None if budget is None else budget // max(1, opts.jobs)
        earlier = {k: taken.pop(k) for k, (status, _, check) in list(taken.items())
                   if status == "skipped" and worth_retrying(check, provisional)}
    for g in [g for g in groups if g.key in taken]:
        results += _group_results(g, *taken[g.key])
    if opts.resumed:
        kept = sum(g.key in taken for g in groups)
        again = sum(g.key in earlier for g in groups)
        say(f"preflight: {kept} configuration(s) taken from the earlier run (--resume)"
            + (f", {again} skipped one(s) checked again (--retry-skipped)" if opts.retry_skipped else ""))
    groups = [g for g in groups if g.key not in taken]
    say(f"preflight: {len(cells)} cell(s) of {len({c.spec_id for c in cells})} table(s) at tier '{opts.tier}', "
        f"{len(groups)} configuration(s) to check on {opts.device} ({opts.steps} step(s) of each stage's first and "
        f"last epoch)" + (f"; {config_errors} config error(s)" if config_errors else ""))
    # the report says how many checks shared the memory; with none left (all resumed), the run's own --jobs
    jobs = max(1, min(opts.jobs, len(groups) or opts.jobs))
    opts = replace(opts, jobs=jobs)
    share = None if budget is None else budget // jobs  # each check its part of the memory
    pool = concurrent.futures.ThreadPoolExecutor(jobs)  # each check is a process: the threads only wait
    futures = {pool.submit(_check_group, g, opts, share): g for g in groups}
    try:  # a line as each check ends: one long check does not hold back the lines of those after it
        for i, fut in enumerate(concurrent.futures.as_completed(futures), 1):
            g = futures[fut]
            status, reason, res = fut.result()
            head, *rest = g.cells
            results += _group_results(g, status, reason, res)
            say(f"[{i}/{len(groups)}] {head.name}" + (f" (+{len(rest)} cell(s) sharing it)" if rest else "")
                + f": {describe_check(status, reason, res)}")
            if status == "ok" and opts.cache:
                store_cached(g.key, opts.device, res, opts.steps)
            earlier.pop(g.key, None)
            if on_check is not None and i < len(groups):
                waiting = [r for w in groups if w.key in earlier for r in _group_results(w, *earlier[w.key])]
                on_check(_report(opts, num, cells, results + waiting, unavailable, t0, complete=False))
    except BaseException:  # Ctrl-C, SIGTERM: no check outlives the command
        pool.shutdown(wait=False, cancel_futures=True)
        stop_all()
        raise
    pool.shutdown()
    return _report(opts, num, cells, results, unavailable, t0)


def _group_results(g: Group, status: str, reason: str | None, res: dict[str, Any]) -> list[CellResult]:
    """One configuration's outcome for each of its cells: the first checked, the rest sharing it."""
    head, *rest = g.cells
    return [CellResult(head, status, reason, None, res)] + [CellResult(c, status, reason, head.name, res) for c in rest]


def _report(opts: Options, num, cells: list, results: list[CellResult], unavailable: list, t0: float,
            complete: bool = True) -> Report:
    order = {id(c): k for k, c in enumerate(cells)}
    return Report(opts, _device_name(opts.device), num.torch, datetime.now(timezone.utc).date().isoformat(),
                  sorted(results, key=lambda r: order[id(r.cell)]), unavailable,
                  opts.resumed_wall_s + time.perf_counter() - t0, complete)


def read_resume(path: Path, opts: Options) -> tuple[dict[str, tuple[str, str | None, dict[str, Any]]], float]:
    """The checks of an earlier ``--json`` file (``--resume``): per configuration key, its status,
    reason and figures, and the earlier run's wall time. The file must come from the same device,
    tier, steps and threads; an absent file resumes nothing. Which skipped ones are checked again
    (``--retry-skipped``) :func:`preflight` decides, with this run's memory share."""
    import json

    if not path.exists():
        return {}, 0.0
    try:
        old = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise PreflightError(f"--resume: {path} does not read as a preflight JSON ({e})") from None
    mine = {"device": opts.device, "tier": opts.tier, "steps": opts.steps, "threads": opts.threads or 1}
    theirs = {k: old.get(k) for k in mine}
    if theirs != mine:
        raise PreflightError(f"--resume: {path} was checked with {theirs}, this run is {mine}")
    taken = {}
    for c in old.get("cells", []):
        if c.get("shares") is None and c.get("key") and c.get("status") in ("ok", "failed", "skipped"):
            check = ({k: c.get(k) for k in ("inputs", "notes", "peak_memory", "batch_divisor", "eval_divisor",
                                            "skipped_for", "memory_budget") if c.get(k) is not None}
                     | {"figures": c.get("figures") or {}})
            reason = c.get("reason") or ""
            if c["status"] == "skipped" and "skipped_for" not in c:  # a file written before the field existed
                check["skipped_for"] = "memory" if "budget" in reason else "data"
            if check.get("skipped_for") == "memory" and "memory_budget" not in c:  # ditto: the budget its reason names
                if m := re.search(r"\(([\d.]+) GiB; --max-memory\)", reason):
                    check["memory_budget"] = int(float(m[1]) * 2**30)
            taken[c["key"]] = (c["status"], c.get("reason"), check)
    return taken, float(old.get("wall_s") or 0.0)


def write_json(report: Report, path: Path) -> None:
    from pubench.preflight.report import to_json

    from pubench.utils.io import atomic_write_json

    atomic_write_json(path, to_json(report))
