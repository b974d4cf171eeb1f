"""``pubench ladder list | run ID... | report [ID...]``: the budget ladders of
``experiments/_ladders.yaml`` (issue 61; :mod:`pubench.registry.ladders`,
:mod:`pubench.report.ladders`). ``run`` prints the cost first, then runs each missing step of
each cell as ``pubench run --set`` would (:func:`pubench.runner.run`: the same jobs, ids and
records), in the file's fixed order."""

from __future__ import annotations

import statistics
import sys
from dataclasses import dataclass

from pubench.cli._common import FMT, UsageError, bounded_int, ensure_process_env, local_numerics, \
    quiet_jobs_when_asked

ACTIONS = ("list", "run", "report")
RUN_ONLY = ("dry_run", "jobs", "allow_dirty", "no_progress")


def parser(sub) -> None:
    s = sub.add_parser(
        "ladder", help="budget ladders: a claim's deciding pair at growing budgets, its trend test",
        formatter_class=FMT,
        description="A ladder (experiments/_ladders.yaml, registered before it runs) reruns a claim's deciding pair "
                    "of cells along one budget axis (epochs, pre-training epochs, ...) at factors of a tier's value, "
                    "each step a `pubench run --set` variant of that tier, seeds paired across steps. list: the "
                    "ladders and how many of their jobs are done. run ID...: print the cost first (each missing job "
                    "at its base cell's median record wall time x the factor, per step, in core-hours, and the jobs "
                    "already done), then run the missing steps in the registered order: every named ladder's 2x step "
                    "before any 4x step, ladders in the file's order. report [ID...]: write "
                    "<reports>/ladders/<id>.md and <id>.png: per step the pair's difference d (> 0: the claim's "
                    "direction) with its 95% interval and one-sided p, the paper's difference, the regime of the "
                    "pair's block, and the trend test (docs/reports.md, \"Budget ladders\").",
        epilog="examples:\n  pubench ladder list\n  pubench ladder run wconpu-vs-pico-epochs --dry-run\n"
               "  pubench ladder report wconpu-vs-pico-epochs --print\n  pubench ladder report")
    s.add_argument("action", choices=ACTIONS, help="list, run or report")
    s.add_argument("ids", nargs="*", metavar="ID", help="ladder ids (run: at least one; report: default every ladder)")
    s.add_argument("--dry-run", action="store_true", help="run: print the cost and the `pubench run` lines; run "
                                                          "nothing")
    s.add_argument("--jobs", type=bounded_int("--jobs", 1, 64), default=1,
                   help="run: local worker processes (default 1: in this process)")
    s.add_argument("--allow-dirty", action="store_true",
                   help="run: write into the committed store from a tree with uncommitted code/spec changes")
    s.add_argument("--no-progress", action="store_true", help="run: no progress bar or per-job log lines")
    s.add_argument("--print", action="store_true", help="report: also print each report (markdown)")
    s.set_defaults(fn=cmd_ladder)


@quiet_jobs_when_asked
def cmd_ladder(args) -> int:
    for name in RUN_ONLY:
        if args.action != "run" and getattr(args, name) not in (False, 1):
            raise UsageError(f"--{name.replace('_', '-')} goes with `pubench ladder run`")
    if args.print and args.action != "report":
        raise UsageError("--print goes with `pubench ladder report`")
    if args.action == "list" and args.ids:
        raise UsageError("ladder list takes no id (it lists every ladder)")
    if args.action == "run":
        if not args.ids:
            raise UsageError("ladder run: name the ladder(s) to run (`pubench ladder list` shows them)")
        if not args.dry_run:
            ensure_process_env(local_numerics(args))  # before anything loads torch: a restart prints nothing twice
    from pubench.registry.ladders import get_ladder, load_ladders

    ladders = load_ladders()
    chosen = [get_ladder(i, ladders) for i in dict.fromkeys(args.ids)] if args.ids else ladders
    chosen = [lad for lad in ladders if lad in chosen]  # the file's order
    if args.action == "list":
        return _list(ladders)
    if args.action == "report":
        return _report(chosen, args.print)
    return _run(chosen, args)


# ---- list ---------------------------------------------------------------------------------
def _list(ladders) -> int:
    from tabulate import tabulate

    from pubench import paths
    from pubench.registry.ladders import describe_seeds, fmt_factor, ladders_path
    from pubench.store import ResultStore

    if not ladders:
        print(f"no ladders: {ladders_path()} holds none")
        return 0
    store = ResultStore(paths.results_root())
    rows = []
    for lad in ladders:
        plan = _plan([lad], store, local_numerics(None))
        rows.append([lad.id, lad.spec, lad.tier, f"{lad.better} vs {lad.worse} in {lad.col} ({lad.metric})",
                     lad.axis_text, ", ".join(fmt_factor(f) for f in lad.factors), describe_seeds(lad.seeds),
                     f"{sum(len(p.done) for p in plan)}/{sum(len(p.jobs) for p in plan)}", lad.registered])
    print(tabulate(rows, headers=["id", "spec", "tier", "pair", "axis", "factors", "seeds", "jobs done", "registered"],
                   tablefmt="github", disable_numparse=True))
    return 0


# ---- report -------------------------------------------------------------------------------
def _report(ladders, show: bool) -> int:
    from pubench import paths
    from pubench.registry.ladders import ladders_path
    from pubench.registry.loader import get_spec
    from pubench.report.ladders import ladder_result, render_markdown, write_ladder_report
    from pubench.store import ResultStore

    if not ladders:
        print(f"pubench: no ladders: {ladders_path()} holds none", file=sys.stderr)
        return 0
    store = ResultStore(paths.results_root(), memo=True)
    for lad in ladders:
        result = ladder_result(get_spec(lad.spec), lad, store)
        for p in write_ladder_report(result, paths.reports_root()):
            print(f"pubench: wrote {p}", file=sys.stderr)
        if show:
            print(render_markdown(result, plot=f"{lad.id}.png"))
    return 0


# ---- run ----------------------------------------------------------------------------------
@dataclass
class StepCell:
    """One cell of one step of a ladder: its jobs and which of them are done."""

    ladder: object
    index: int        # the ladder's place in the file
    factor: float
    row: str
    overrides: list[str]
    jobs: list
    done: set[str]

    @property
    def todo(self) -> int:
        return len(self.jobs) - len(self.done)


def _plan(ladders, store, numerics) -> list[StepCell]:
    """Every cell of every step of ``ladders``, in the running order the file fixes: by factor
    (every ladder's 2x before any 4x), then the ladders' order, then better before worse."""
    from pubench.jobs.ladder import step_jobs
    from pubench.registry.ladders import step_overrides
    from pubench.registry.loader import get_spec

    specs, done_ids, out = {}, {}, []
    for i, lad in enumerate(ladders):
        spec = specs.setdefault(lad.spec, get_spec(lad.spec))
        for f in lad.factors:
            for row in lad.rows:
                jobs = step_jobs(spec, lad, row, f, numerics)
                tier = jobs[0].tier if jobs else lad.tier
                if (tier, spec.id) not in done_ids:
                    done_ids[(tier, spec.id)] = set(store.scan(tier, spec.id, fields=("job",)).done)
                out.append(StepCell(lad, i, f, row, step_overrides(spec, lad, row, f), jobs,
                                    {j.id for j in jobs} & done_ids[(tier, spec.id)]))
    return sorted(out, key=lambda c: (c.factor, c.index, c.ladder.rows.index(c.row)))


def _base_walls(ladder, stores) -> dict[str, float]:
    """row -> the median wall time (s) of the base cell's records at the ladder's tier: this
    store's, else the committed one's (the current config's records where there are any)."""
    from pubench.registry.loader import get_spec

    spec = get_spec(ladder.spec)
    out = {}
    for row in ladder.rows:
        current = spec.resolve(ladder.tier, row, ladder.col)["params"]
        for store in stores:
            recs = [r for r in store.scan(ladder.tier, spec.id, fields=("job", "timing")).records
                    if (r["job"]["row"], r["job"]["col"]) == (row, ladder.col)
                    and isinstance((r.get("timing") or {}).get("wall_s"), (int, float))]
            same = [r for r in recs if r["job"].get("params") == current] or recs
            if same:
                out[row] = statistics.median(r["timing"]["wall_s"] for r in same)
                break
    return out


def _say_cost(ladders, plan: list[StepCell], stores) -> float:
    from pubench.registry.ladders import describe_seeds, fmt_factor
    from pubench.report.compute import fmt_hours

    total_h, unknown = 0.0, 0
    for lad in ladders:
        walls = _base_walls(lad, stores)
        print(f"ladder {lad.id}: {lad.spec} at tier '{lad.tier}', {lad.better} vs {lad.worse} in {lad.col} "
              f"({lad.metric}) along {lad.axis_text} at {', '.join(fmt_factor(f) for f in lad.factors)}, seeds "
              f"{describe_seeds(lad.seeds)}")
        for f in lad.factors:
            cells = [c for c in plan if c.ladder is lad and c.factor == f]
            step_h, step_unknown = 0.0, False
            for c in cells:
                wall = walls.get(c.row)
                where = " ".join(f"--set {o}" for o in c.overrides) or f"tier '{lad.tier}' (its own records)"
                cost = ""
                if c.todo:
                    if wall is None:
                        step_unknown = True
                        cost = ", cost unknown (no record of the base cell to time it by)"
                    else:
                        h = c.todo * wall * f / 3600
                        step_h += h
                        cost = f", about {fmt_hours(h)} core-hours ({wall:.0f} s a job at 1x, x {f:g})"
                print(f"  {fmt_factor(f):>4}  {c.row}|{lad.col}  {where}: {len(c.jobs)} jobs, {len(c.done)} done, "
                      f"{c.todo} to run{cost}")
            todo = sum(c.todo for c in cells)
            print(f"  step {fmt_factor(f)}: {sum(len(c.jobs) for c in cells)} jobs, {sum(len(c.done) for c in cells)} "
                  f"done, {todo} to run" + (f", about {fmt_hours(step_h)} core-hours" if todo else "")
                  + (" (and jobs of unknown cost)" if step_unknown else ""))
            total_h += step_h
            unknown += step_unknown
    todo = sum(c.todo for c in plan)
    print(f"total: {sum(len(c.jobs) for c in plan)} jobs, {sum(len(c.done) for c in plan)} done, {todo} to run, about "
          f"{fmt_hours(total_h)} core-hours (one core per job; each job at its base cell's median record wall time "
          f"x the factor)" + (" plus jobs of unknown cost" if unknown else ""))
    return total_h


def _missing_data(todo: list[StepCell]) -> str | None:
    """One line per spec whose steps to run read data missing under the data root, else None."""
    from pubench.runner import missing_data, missing_data_line

    by_spec: dict[str, list] = {}
    for c in todo:
        by_spec.setdefault(c.ladder.spec, []).extend(j for j in c.jobs if j.id not in c.done)
    lines = [missing_data_line(spec_id, jobs, lacking, ran=False)
             for spec_id, jobs in by_spec.items() if (lacking := missing_data(jobs))]
    return "; ".join(lines) or None


def _run(ladders, args) -> int:
    from pubench import paths
    from pubench.registry.ladders import cell_pattern, fmt_factor, run_command
    from pubench.runner import RunRequest, run
    from pubench.store import ResultStore

    store = ResultStore(paths.results_root())
    committed = paths.project_root() / "results"
    stores = [store] + ([ResultStore(committed)] if committed.resolve() != store.root.resolve() else [])
    plan = _plan(ladders, store, local_numerics(args))
    _say_cost(ladders, plan, stores)
    todo = [c for c in plan if c.todo]
    if not todo:
        print("pubench: every step of " + ", ".join(lad.id for lad in ladders) + " is done; `pubench ladder report` "
              "renders it")
        return 0
    if lacking := _missing_data(todo):  # before any step: a step that stops later would leave a ladder half run
        if not args.dry_run:
            raise UsageError(lacking)
        print(f"  {lacking}")
    steps = ", ".join(fmt_factor(f) for f in sorted({c.factor for c in todo}))
    print(f"order (fixed by experiments/_ladders.yaml): the {steps} steps in turn, each over the ladders in the "
          "file's order")
    if args.dry_run:
        for c in todo:
            print(f"  {run_command(c.ladder, c.row, c.overrides)}   # {c.ladder.id} {fmt_factor(c.factor)}: "
                  f"{c.todo} job(s)")
        return 0
    terminal = sys.stderr.isatty()
    worst = 0
    for c in todo:
        lad = c.ladder
        print(f"== ladder {lad.id}, step {fmt_factor(c.factor)}, {c.row}|{lad.col}: "
              f"`{run_command(lad, c.row, c.overrides)}`", flush=True)
        rc = run(RunRequest(spec_id=lad.spec, tier=lad.tier, seeds=lad.seeds, only=[cell_pattern(c.row, lad.col)],
                            jobs=args.jobs, allow_dirty=args.allow_dirty, overrides=c.overrides or None,
                            progress=not args.no_progress and terminal, log_lines=not args.no_progress and not terminal))
        if rc >= 128:  # interrupted: what finished is saved; a rerun continues
            return rc
        worst = max(worst, rc)
    print("pubench: ladder run finished" + (" with failed jobs (rerun to retry them)" if worst else "")
          + f"; `pubench ladder report {' '.join(lad.id for lad in ladders)}` renders the steps and the trend")
    return worst
