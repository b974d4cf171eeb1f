"""Compute accounting (CPU core-hours, GPU-hours from the records), run estimates, and the
significance of a reproduced cell against the printed number."""

import math
import statistics

import pytest
import yaml
from scipy import stats as sps

from pubench.cli import main
from pubench.jobs import expand
from pubench.numerics import resolve
from pubench.registry import parse_spec
from pubench.report import collect
from pubench.report.collect import CellStats
from pubench.report.compute import Compute, describe, estimate, fmt_hours, of_records, past_walls, render_estimate
from pubench.report.stats import BETTER, SAME, WORSE, delta_test
from pubench.store import ResultStore
from tests.conftest import selftest_spec


def _record(wall, threads=1, device="cpu", gpu=None, numerics=True):
    """A record as the store writes it, reduced to what compute accounting reads."""
    job = {"numerics": {"device": device, "threads": threads, "isa": "avx2"}} if numerics else {}
    machine = {"cpu_model": "CPU X", **({"gpu": gpu} if gpu else {})}
    return {"job": job, "timing": {"wall_s": wall}, "machine": machine}


def test_compute_sums_wall_times_threads_and_gpus_like_a_loop():
    ok = [_record(10.0, 1), _record(20.0, 4), _record(30.0, 2, "cuda", "H100"), _record(5.0, numerics=False)]
    failed = [_record(7.0, 2)]
    c = of_records(ok, failed)
    core = gpu = wall = 0.0
    for rec in ok + failed:  # the definition, one record at a time
        threads = (rec["job"].get("numerics") or {}).get("threads") or 1
        wall += rec["timing"]["wall_s"]
        core += rec["timing"]["wall_s"] * threads
        gpu += rec["timing"]["wall_s"] if (rec["job"].get("numerics") or {}).get("device") == "cuda" else 0
    assert (c.jobs, c.failed, c.threads_unrecorded) == (5, 1, 1)
    assert c.wall_s == pytest.approx(wall) and c.core_s == pytest.approx(core) and c.gpu_s == pytest.approx(gpu)
    assert c.core_h == pytest.approx(core / 3600) and c.gpus == {"H100": 1} and c.cpus["CPU X"] == 5
    text = describe(c)
    assert "CPU core-hours" in text and "GPU-hours on H100" in text and "1 failed" in text
    assert "1 record(s) without a thread count" in text


def test_cache_hits_are_named_and_left_out_of_estimates():
    hit = _record(2.0) | {"info": {"encoder_cache": {"hit": True}}}
    assert of_records([hit, _record(50.0)]).cache_hits == 1
    assert "1 job(s) reused a cached encoder" in describe(of_records([hit]))
    job = {"spec_id": "s", "tier": "paper", "row": "A", "col": "x", "spec_version": 1, "params": {}}
    both = [{**_record(50.0), "job": {**job, "numerics": {}}}, {**hit, "job": {**job, "numerics": {}}}]
    assert [w for _, w in next(iter(past_walls(both).values()))] == [50.0]  # the hit skipped pre-training
    assert [w for _, w in next(iter(past_walls(both[1:]).values()))] == [2.0]  # only hits: better than nothing


def test_compute_leaves_out_records_without_a_wall_time_and_merges():
    c = of_records([_record(10.0), {"job": {}, "timing": {}}, {"job": {}, "timing": {"wall_s": -1}}])
    assert c.jobs == 1 and c.untimed == 2 and "2 record(s) without a wall time" in describe(c)
    m = c.merge(of_records([_record(3600.0, 2)]))
    assert m.jobs == 2 and m.core_s == pytest.approx(10.0 + 7200.0)
    assert describe(Compute()) == "no timed records"


@pytest.mark.parametrize("hours,text", [(0, "0"), (0.0064, "0.0064"), (0.35, "0.35"), (0.999, "1.0"), (1.23, "1.2"),
                                        (9.96, "10"), (12.4, "12"), (340.2, "340"), (0.0000123, "0.000012")])
def test_fmt_hours_two_significant_digits(hours, text):
    assert fmt_hours(hours) == text


def _store_with_timings(tmp_path, walls):
    spec = parse_spec(yaml.safe_load(selftest_spec(seeds=3)), "<t>")
    store = ResultStore(tmp_path)
    jobs = expand(spec, "paper", 3).jobs
    for job in jobs:
        if (job.row, job.col) in walls:
            store.write_ok(job, {"score": 1.0}, {}, {"wall_s": walls[(job.row, job.col)][job.seed_index]})
    return spec, store, jobs


def test_collect_reports_compute_of_its_records(tmp_path):
    walls = {("A", "x"): [10.0, 20.0, 30.0], ("B", "x"): [1.0, 2.0, 3.0]}
    spec, store, _ = _store_with_timings(tmp_path, walls)
    res = collect(spec, "paper", store)
    assert res.compute.jobs == 6 and res.compute.core_s == pytest.approx(66.0)  # 1 thread per job
    edited = parse_spec(yaml.safe_load(selftest_spec(seeds=3).replace("A: {value: 1.0}", "A: {value: 7.0}")), "<t>")
    stale = collect(edited, "paper", store)  # A's records are stale: not aggregated, still spent
    assert stale.compute.jobs == 3 and stale.compute_all.jobs == 6


def test_estimate_uses_the_median_of_the_same_cell_and_config(tmp_path):
    walls = {("A", "x"): [10.0, 20.0, 90.0], ("A", "y"): [4.0, 4.0, 4.0]}
    spec, store, jobs = _store_with_timings(tmp_path, walls)
    e = estimate(jobs, past_walls(store.scan("paper", spec.id).records))
    assert e.jobs == 12 and e.known == 6 and e.unknown == 6
    assert e.job_s == pytest.approx(3 * statistics.median([10.0, 20.0, 90.0]) + 3 * 4.0)
    assert e.core_s == pytest.approx(e.job_s) and e.gpu_s == 0 and e.other_profile == 0
    text = render_estimate(e, parallel=2)
    assert "6 of 12 job(s)" in text and "2 worker(s)" in text and "6 job(s) have no past record" in text
    on_gpu = expand(spec, "paper", 3, numerics=resolve(device="cuda")).jobs
    gpu = estimate(on_gpu, past_walls(store.scan("paper", spec.id).records))
    assert gpu.known == 6 and gpu.other_profile == 6 and gpu.gpu_s == pytest.approx(gpu.job_s)
    assert "another numerics profile" in render_estimate(gpu, None) and "GPU-hours" in render_estimate(gpu, None)
    other = parse_spec(yaml.safe_load(selftest_spec().replace("A: {value: 1.0}", "A: {value: 7.0}")), "<t>")
    none = estimate(expand(other, "paper", 3).jobs, past_walls(store.scan("paper", spec.id).records))
    assert none.known == 0 and "cannot estimate" in render_estimate(none, 1)  # another config: no guess


def test_dry_run_prints_an_estimate_from_past_records(tmp_registry, capsys):
    tmp_registry(selftest_spec())
    assert main(["run", "table1-bcl", "--tier", "smoke", "--dry-run"]) == 0
    assert "cannot estimate" in capsys.readouterr().out
    assert main(["run", "table1-bcl", "--tier", "smoke", "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["run", "table1-bcl", "--tier", "smoke", "--seeds", "2", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "4 already done, 4 to run" in out and "for the 4 of 4 job(s)" in out


# ---- reproduced vs printed: the colour of a cell ------------------------------------------
def _cell(values):
    return CellStats(dict(enumerate(values)), {i: 0 for i in range(len(values))})


def test_delta_test_is_a_two_sided_one_sample_t_test():
    values, printed = [91.0, 92.5, 90.2, 93.1], 90.0
    t = delta_test(_cell(values), printed, higher_is_better=True, fmt=".2f")
    n, mean = len(values), statistics.fmean(values)
    t_stat = (mean - printed) / (statistics.stdev(values) / math.sqrt(n))  # the formula, by hand
    assert t.direction == BETTER and t.p == pytest.approx(2 * sps.t.sf(abs(t_stat), n - 1))
    assert t.significant == (t.p < 0.05)


def test_delta_test_direction_follows_the_metric_and_special_cases():
    assert delta_test(_cell([2.0, 2.2, 2.1]), 1.0, higher_is_better=False, fmt=".2f").direction == WORSE
    same = delta_test(_cell([1.001, 0.999]), 1.0, higher_is_better=True, fmt=".2f")
    assert same.direction == SAME and not same.significant  # prints the same: no colour of a sign
    one = delta_test(_cell([5.0]), 1.0, higher_is_better=True, fmt=".2f")
    assert one.direction == BETTER and one.p is None and not one.significant  # one seed: not tested
    flat = delta_test(_cell([3.0, 3.0, 3.0]), 1.0, higher_is_better=True, fmt=".2f")
    assert flat.p == 0.0 and flat.significant  # no spread: deterministic
    wide = delta_test(_cell([0.0, 4.0]), 1.0, higher_is_better=True, fmt=".2f")
    assert wide.direction == BETTER and not wide.significant


def test_compute_says_which_device_ran_the_records_of_a_table_with_gpu_records():
    gpu = _record(600.0, 1, "cuda", "NVIDIA H200")
    cpu = _record(60.0, 1)
    text = describe(of_records([gpu, gpu, cpu]))
    assert "ran on: cuda (NVIDIA H200) 2 record(s), cpu (CPU X) 1 record(s)" in text
    assert "ran on" not in describe(of_records([cpu]))  # CPU-only tables read as before


@pytest.mark.parametrize("seconds,text", [(42, "42 s"), (210, "3.5 min"), (7560, "2.1 h"), (17536.8 * 3600,
                                          "18000 h (2.0 years)"), (340 * 3600, "340 h (14 days)")])
def test_fmt_duration_gives_hours_as_fmt_hours_does(seconds, text):
    """The same total as the core-hours beside it: '17536.8 h' and '18000 core-hours' were one figure."""
    from pubench.report.compute import fmt_duration

    assert fmt_duration(seconds) == text
