"""pubench preflight: the step cap and its projection, the cost keys, the stand-ins, the
worker process and its memory watchdog, the CLI (a broken paper-tier config fails in
seconds with one line). Real paper cells checked end to end (--steps 1, --resume,
--retry-skipped, a smaller batch) and the cache `run --dry-run` reads: test_preflight_workers.py."""

from __future__ import annotations

import copy
import dataclasses
import json
import shutil
import statistics
import time
from pathlib import Path

import pytest
import torch

from pubench.cli import main
from pubench.jobs.plan import Job
from pubench.numerics import resolve
from pubench.preflight import Options, preflight, read_resume
from pubench.preflight import standins as S
from pubench.preflight.meter import Meter, Stage
from pubench.preflight.plan import cost_key, kind, sample, select, step_flops
from pubench.preflight.report import render, table_costs
from pubench.registry import get_spec
from pubench.train.context import JobContext
from pubench.train.loop import Step, Trainer, batches, predict

pytestmark = pytest.mark.usefixtures("one_thread")
EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"
#: two cheap real paper-tier cells (LeNet-5 on Fashion-MNIST: an end-to-end PU method and
#: contrastive pre-training + puPL)
CHEAP = ["uPU† (1)|F-MNIST-I", "puCL(puPL) (1)|F-MNIST-I"]


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    """The preflight cache and result store in tmp_path (the project's are never touched)."""
    monkeypatch.setenv("PUBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PUBENCH_RESULTS", str(tmp_path / "results"))
    return tmp_path


# ------------------------------------------------------------------ the meter
def toy_run(epochs: int, n: int = 40, bs: int = 4, chunk: int = 8, cap: Meter | None = None):
    """A toy stage and a predict, in a job context with ``cap`` as its step cap."""
    ctx = JobContext(cap=cap)
    net = torch.nn.Linear(3, 1)
    trainer = Trainer([net], torch.optim.SGD(net.parameters(), lr=0.1), desc="toy", ctx=ctx)
    gen = torch.Generator().manual_seed(0)
    seen = []

    def step(idx, epoch):
        seen.append(epoch)
        return Step(net(torch.ones(len(idx), 3)).square().mean(), weight=len(idx))

    hist = trainer.run(epochs, lambda e: batches(n, bs, gen), step,
                       end_epoch=lambda s: predict(lambda i: net(torch.ones(len(i), 3)), n, ctx, chunk))
    out = predict(lambda i: net(torch.ones(len(i), 3)) + i.view(-1, 1), n, ctx, chunk)
    return hist, seen, out


def test_the_meter_runs_the_first_and_last_epoch_for_k_steps_and_counts_the_batches():
    meter = Meter(2)
    hist, seen, out = toy_run(epochs=50, cap=meter)
    assert seen == [0, 0, 49, 49] and [h.epoch for h in hist] == [0, 49]
    (stage,) = meter.stages
    assert stage.desc == "toy" and stage.epochs == 50 and stage.batches_per_epoch == 10 and stage.steps == 500
    assert len(stage.step_s) == 4 and stage.step_flops > 0
    # predict computes one chunk (8 rows) and repeats it to the full length
    assert out.shape == (40, 1) and torch.equal(out[:8], out[8:16])
    # the net's output plus the row index (float rounding of c + i - c: close, not equal)
    assert torch.allclose(out[:8, 0] - out[0, 0], torch.arange(8.0), atol=1e-5)


def test_outside_the_cap_nothing_changes():
    hist, seen, out = toy_run(epochs=3)
    assert len(hist) == 3 and len(seen) == 30
    assert torch.allclose(out[8:16, 0] - out[0, 0], torch.arange(8.0, 16.0), atol=1e-5)


def test_the_projection_counts_the_warm_up_once_and_every_epoch_of_hooks():
    s = Stage("x", epochs=100, batches_per_epoch=20, step_s=[5.0, 1.0, 1.2, 1.4], step_flops=3.0, hooks_s=0.5,
              hooks_flops=7.0)
    assert s.projected_s() == pytest.approx(5.0 + statistics.median([1.0, 1.2, 1.4]) * 1999 + 0.5 * 100)
    assert s.projected_flops() == pytest.approx(3.0 * 2000 + 7.0 * 100)
    meter = Meter(1)
    toy_run(epochs=10, n=40, chunk=8, cap=meter)
    fig = meter.figures(wall_s=10.0)
    (st,) = fig["stages"]
    assert st["steps"] == 100 and st["projected_s"] > 0 and fig["job_s"] >= st["projected_s"]
    # each predict (per epoch and at the end) is counted at its 5 chunks
    assert fig["eval_flops"] > 0 and st["hooks_flops"] == pytest.approx(fig["eval_flops"], rel=0.5)


# ------------------------------------------------------------------ plan
def test_cells_differing_only_in_loss_hyperparameters_or_priors_share_a_check():
    params = {"data": {"dataset": "cifar10", "prior": 0.4, "split": {"kind": "pu", "n_labeled": 1000}},
              "pretrain": {"batch_size": 512, "epochs": 200, "loss": {"name": "punce", "temperature": 0.5}}}
    other = copy.deepcopy(params)
    other["data"]["prior"] = 0.6
    other["pretrain"]["loss"]["temperature"] = 0.1
    assert cost_key("contrastive_probe", params) == cost_key("contrastive_probe", other)
    for path, value in ((("pretrain", "batch_size"), 256), (("pretrain", "epochs"), 100),
                        (("data", "split"), {"kind": "pu", "n_labeled": 3000})):
        changed = copy.deepcopy(params)
        changed[path[0]][path[1]] = value
        assert cost_key("contrastive_probe", changed) != cost_key("contrastive_probe", params), path
    named = copy.deepcopy(params)
    named["pretrain"]["loss"]["name"] = "info_nce"
    assert cost_key("contrastive_probe", named) != cost_key("contrastive_probe", params)


def test_the_sample_has_one_cell_per_task_kind_and_backbone():
    cells, _ = select({i: get_spec(i) for i in ("table3-pupl", "table2-pucl", "table5-punce")}, "paper", None,
                      resolve())
    picked = sample(cells)
    kinds = {(kind(c.job), json.dumps(c.job.params["model"]["backbone"], sort_keys=True)) for c in picked}
    assert len(kinds) == len(picked) >= 6
    assert all(c.error is None for c in cells)
    lenet = [c for c in picked if c.job.params["model"]["backbone"]["name"] == "lenet5"]
    assert lenet and all(step_flops(c.job) <= min(step_flops(d.job) for d in cells if kind(d.job) == kind(c.job)
                                                  and d.job.params["model"]["backbone"]["name"] == "lenet5")
                         for c in lenet)


# ------------------------------------------------------------------ stand-ins
def test_synthetic_images_have_the_data_sets_sizes_and_class_counts():
    stl = S.synthetic_images("stl10", "train+unlabeled")
    assert tuple(stl.x.shape) == (105000, 3, 96, 96) and int((stl.y == -1).sum()) == 100000
    assert torch.bincount(stl.y[stl.y >= 0]).tolist() == [500] * 10
    svhn = S.synthetic_images("svhn", "test")
    assert torch.bincount(svhn.y).tolist() == list(S.IMAGE_SETS["svhn"].splits["test"])
    assert S.IMAGE_SETS["imagenet"].size("train") == 118 * 260 + 882 * 25


def test_synthetic_graphs_and_text_have_the_data_sets_statistics():
    from pubench.data.graphs import SPECS

    gs = S.synthetic_graphs("ptc_mr")
    assert len(gs.graphs) == 344 and gs.num_features == 18 and gs.num_classes == 2
    nodes = sum(g.num_nodes for g in gs.graphs)
    assert abs(nodes - SPECS["ptc_mr"].nodes) < 0.1 * SPECS["ptc_mr"].nodes
    text = S.synthetic_text("sst2", "dev")
    assert len(text) == 872 and torch.bincount(text.labels).tolist() == [428, 444]
    tok = S.WordHashTokenizer(50265)
    ids = tok(["a film , at last", "x " * 100], max_length=10)["input_ids"]
    assert ids[0][0] == 0 and ids[0][-1] == 2 and len(ids[0]) == 7 and len(ids[1]) == 10


def test_plan_replaces_only_what_the_data_root_lacks_and_respects_the_memory_budget(tmp_path, monkeypatch):
    monkeypatch.setenv("PUBENCH_DATA", str(tmp_path))  # an empty data root
    data = {"dataset": "stl10", "split": {"kind": "pu", "unlabeled_split": "unlabeled"}, "input_size": [3, 96, 96]}
    got = S.plan("contrastive_probe", {"data": data})
    assert got.synthetic == {"stl10": "image"} and got.skip is None
    assert got.bytes == S.IMAGE_SETS["stl10"].bytes("train+unlabeled") + S.IMAGE_SETS["stl10"].bytes("test")
    small = S.plan("contrastive_probe", {"data": data}, max_bytes=2**20)
    assert "memory budget" in small.skip and "\n" not in small.skip and small.skipped_for == "memory"
    assert S.plan("bcl_simulation", {"data": {"M": 5}}).synthetic == {}
    assert S.plan("infograph", {"data": {"dataset": "dd"}}).synthetic == {"dd": "graph"}
    monkeypatch.setattr(S, "stand_in_names", lambda modality: set())
    none = S.plan("contrastive_probe", {"data": data}, max_bytes=2**20)
    assert "no synthetic stand-in" in none.skip and none.skipped_for == "data"  # more memory would not mend it


def test_roberta_large_falls_back_to_random_init_without_its_weights():
    def factory(in_channels=0, pretrained=True, layers=None, pooling="first"):
        if pretrained:
            raise FileNotFoundError("no weights")
        from pubench.models.text import roberta_large

        return roberta_large(0, pretrained=False, layers=1, pooling=pooling)

    notes = []
    enc = S.roberta_stand_in(factory, notes)(0, pooling="first")
    assert notes and "random initialisation" in notes[0]
    assert enc.tokenize(["a b c"], 8) == [[0, *S.WordHashTokenizer(50265)(["a b c"])["input_ids"][0][1:-1], 2]]


def test_a_retry_pass_checks_again_only_skips_with_less_memory_and_a_stopped_one_keeps_the_rest(monkeypatch):
    import pubench.preflight as pf

    gib = 2**30
    spec = {"table3-pupl": get_spec("table3-pupl")}
    first, second = (c.key for c in select(spec, "paper", CHEAP, resolve(device="cpu"))[0])
    skip = ("skipped", "over the budget", {"skipped_for": "memory", "figures": {}})
    checked = []

    def check(g, opts, budget):
        checked.append((g.key, budget))
        return "ok", None, {"figures": {"job_s": 1.0}, "memory_budget": budget}

    monkeypatch.setattr(pf, "_check_group", check)
    had = {first: skip[:2] + ({**skip[2], "memory_budget": 4 * gib},),
           second: skip[:2] + ({**skip[2], "memory_budget": 2 * gib},)}
    opts = Options(steps=1, only=CHEAP, cache=False, max_memory=4 * gib, resumed=had, retry_skipped=True)
    r = preflight(spec, opts, say=lambda line: None)
    assert checked == [(second, 4 * gib)]  # the first had this run's 4 GiB already
    assert [c.status for c in r.cells] == ["skipped", "ok"]
    assert not pf.worth_retrying(had[first][2], int(4.1 * gib)) and pf.worth_retrying(had[first][2], 5 * gib)
    assert pf.worth_retrying({"skipped_for": "data"}, None)  # a data set missing then may be here now

    def stopped_at_the_second(g, opts, budget):
        if g.key == second:
            raise KeyboardInterrupt
        return check(g, opts, budget)

    monkeypatch.setattr(pf, "_check_group", stopped_at_the_second)
    both_small = {k: skip[:2] + ({**skip[2], "memory_budget": 2 * gib},) for k in (first, second)}
    partial = []
    with pytest.raises(KeyboardInterrupt):
        preflight(spec, dataclasses.replace(opts, resumed=both_small), say=lambda line: None,
                  on_check=partial.append)
    # the file written after the first retried check still holds the second's skip, not yet retried
    assert [(c.cell.key, c.status) for c in partial[-1].cells] == [(first, "ok"), (second, "skipped")]
    assert not partial[-1].complete


def test_a_file_written_before_checks_recorded_their_memory_budget_reads_it_from_the_reason(tmp_path):
    out = tmp_path / "pf.json"
    cell = {"key": "k", "status": "skipped", "shares": None, "skipped_for": "memory",
            "reason": "stopped at 8.6 GiB of resident memory, above this machine's memory budget (8.5 GiB; "
                      "--max-memory), before training began"}
    out.write_text(json.dumps({"device": "cpu", "tier": "paper", "steps": 1, "threads": 1, "cells": [cell]}))
    taken, _ = read_resume(out, Options(steps=1))
    assert taken["k"][2]["memory_budget"] == int(8.5 * 2**30)


def test_each_checks_line_comes_as_it_ends_and_the_report_keeps_the_cells_order(scratch, monkeypatch):
    import threading

    import pubench.preflight as pf

    second_said = threading.Event()
    lines, partial = [], []

    def say(line):
        lines.append(line)
        if line.startswith("[") and CHEAP[1] in line:
            second_said.set()

    def check(g, opts, budget):  # the first configuration is the long one: it ends after the second's line
        if g.cells[0].row == CHEAP[0].split("|")[0]:
            assert second_said.wait(60)
        return "skipped", f"checked {g.cells[0].row}", {"skipped_for": "data"}

    monkeypatch.setattr(pf, "_check_group", check)
    r = preflight({"table3-pupl": get_spec("table3-pupl")}, Options(steps=1, only=CHEAP, jobs=2, cache=False),
                  say=say, on_check=partial.append)
    checked = [s for s in lines if s.startswith("[")]
    assert [s.split("] ")[1].split(":")[0] for s in checked] == [f"table3-pupl {CHEAP[1]}", f"table3-pupl {CHEAP[0]}"]
    assert [s[:5] for s in checked] == ["[1/2]", "[2/2]"]
    assert [c.cell.row for c in r.cells] == [c.split("|")[0] for c in CHEAP]  # the cells' order, not the ends'
    assert [c.cell.row for c in partial[0].cells] == [CHEAP[1].split("|")[0]] and not partial[0].complete


def broken_registry(tmp_path, monkeypatch, edit) -> None:
    """The project's experiments/ in tmp_path, table3-pupl changed by ``edit(spec as data)``."""
    import yaml

    shutil.copytree(EXPERIMENTS, tmp_path / "experiments")
    path = tmp_path / "experiments" / "pupl" / "table3-pupl.yaml"
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    edit(raw)
    path.write_text(yaml.safe_dump(raw, sort_keys=False, allow_unicode=True, width=1000), encoding="utf-8")
    monkeypatch.setenv("PUBENCH_EXPERIMENTS", str(tmp_path / "experiments"))


def test_a_broken_paper_config_fails_in_seconds_with_one_line(scratch, monkeypatch, capsys):
    spec = get_spec("table3-pupl")
    params = spec.resolve("paper", "uPU† (1)", "F-MNIST-I")["params"]
    assert "epochs" in params["train"]
    broken_registry(scratch, monkeypatch, lambda raw: raw["experiment"]["params"]["train"].update(epochz=3))
    t0 = time.perf_counter()
    assert main(["preflight", "table3-pupl", "--only", CHEAP[0]]) == 1
    took = time.perf_counter() - t0
    out = capsys.readouterr().out
    (line,) = [s for s in out.splitlines() if s.startswith("  config error:")]
    assert "epochz" in line and CHEAP[0].split("|")[0] in line
    assert "0 ok, 1 failed" in out and "[1/" not in out and took < 20  # nothing ran


def test_a_cell_that_breaks_when_its_data_loads_fails_with_one_line(scratch, shared_image_root, monkeypatch,
                                                                    capsys):
    monkeypatch.setenv("PUBENCH_DATA", str(shared_image_root))  # the bad config fails when its data load
    r = preflight({"table3-pupl": get_spec("table3-pupl")}, Options(steps=1, only=[CHEAP[0]]), say=lambda s: None)
    assert r.cells[0].status == "ok"
    spec = get_spec("table3-pupl")
    bad = copy.deepcopy(spec.resolve("paper", "uPU† (1)", "F-MNIST-I")["params"])
    bad["data"]["n_test"] = 123  # checked once the test split is loaded: in the worker
    job = Job(spec.id, spec.version, "paper", "uPU† (1)", "F-MNIST-I", 0, "pu_benchmark", bad, {"data": 1, "init": 2},
              resolve().to_dict())
    from pubench.preflight.runner import run_check

    res = run_check(job.to_dict(), 1, {})
    assert res["ok"] is False and "n_test = 123" in res["error"] and "\n" not in res["error"]


def test_a_check_above_the_memory_budget_is_stopped_and_skipped(scratch, capsys):
    t0 = time.perf_counter()
    r = preflight({"table3-pupl": get_spec("table3-pupl")},
                  Options(steps=1, only=[CHEAP[0]], max_memory=100 * 2**20, cache=False), say=lambda s: None)
    (cell,) = r.cells
    assert cell.status == "skipped" and "memory budget" in cell.reason and time.perf_counter() - t0 < 60
    assert not r.failed and "skipped: table3-pupl" in render(r)
    assert table_costs(r)[0]["jobs_estimated"] == 0


def test_a_check_whose_layer_outputs_exceed_the_budget_is_skipped_at_once(scratch):
    from pubench.preflight.plan import trained_activation_bytes

    heavy = "ssCL|ImageNet-I gamma=0.25"  # ResNet-50 at 224 pixels, batch 1024 (fig8-pupl)
    job = select({"fig8-pupl": get_spec("fig8-pupl")}, "paper", [heavy], resolve())[0][0].job
    need = trained_activation_bytes(job)
    assert need > 20 * 2**30  # ~43 GiB: more than this 24 GiB machine holds
    t0 = time.perf_counter()
    # 4 GiB: even 1/8 of the batch (~5 GiB) is over half of it, so no smaller batch is tried either
    r = preflight({"fig8-pupl": get_spec("fig8-pupl")}, Options(steps=1, only=[heavy], max_memory=4 * 2**30,
                                                                cache=False), say=lambda s: None)
    (cell,) = r.cells
    assert cell.status == "skipped" and "GiB of layer outputs" in cell.reason and "check it on a GPU" in cell.reason
    assert "even at 1/8 of its batch" in cell.reason
    assert time.perf_counter() - t0 < 30 and not r.failed  # no data built, no process started
    # a cell that fits is checked, not skipped by the estimate; a probe on frozen features trains no backbone
    cheap = select({"table3-pupl": get_spec("table3-pupl")}, "paper", [CHEAP[0]], resolve())[0][0].job
    assert 0 < trained_activation_bytes(cheap) < 2**30
    probe = Job(cheap.spec_id, 1, "paper", "r", "c", 0, cheap.task,
                {k: v for k, v in cheap.params.items() if k != "train"} | {"downstream": {"batch_size": 4096}},
                cheap.seeds, cheap.numerics)
    assert trained_activation_bytes(probe) == 0


def test_without_cuda_device_cuda_is_one_line(capsys):
    if torch.cuda.is_available():
        pytest.skip("checks the message of a machine without CUDA")
    assert main(["preflight", "table3-pupl", "--device", "cuda"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no CUDA device" in err[0]


# ------------------------------------------------------------------ over the memory budget: a smaller batch
def cheap_job() -> Job:
    spec = get_spec("table3-pupl")
    (cell,) = select({"table3-pupl": spec}, "paper", [CHEAP[0]], resolve())[0]
    return cell.job


def test_smaller_batch_divides_the_training_stages_batch_and_keeps_at_least_two():
    from pubench.preflight.plan import smaller_batch

    job = cheap_job()
    bs = job.params["train"]["batch_size"]
    half = smaller_batch(job, 2)
    assert half.params["train"]["batch_size"] == bs // 2 and job.params["train"]["batch_size"] == bs
    assert {k: v for k, v in half.params.items() if k != "train"} == {k: v for k, v in job.params.items()
                                                                      if k != "train"}
    assert smaller_batch(job, bs) is None  # a batch of 1: batch norm cannot train on it
    bare = copy.deepcopy(job.params)
    del bare["train"]
    assert smaller_batch(dataclasses.replace(job, params=bare), 2) is None


def test_a_check_the_watchdog_stops_is_checked_again_at_half_the_batch(scratch, monkeypatch):
    from pubench.preflight import runner

    seen = []

    stage = ["train nnpu"]

    def fake_check(job, steps, synthetic, **kw):
        seen.append(job["params"]["train"]["batch_size"])
        if len(seen) < 3:
            return {"ok": False, "stopped": "memory", "error": "stopped at 9.0 GiB of resident memory",
                    "training_began": stage[0] is not None, "stopped_in": stage[0]}
        return {"ok": True, "figures": {"stages": [], "job_s": 1.0}, "notes": []}

    monkeypatch.setattr(runner, "run_check", fake_check)
    opts = Options(steps=1, only=[CHEAP[0]], max_memory=8 * 2**30)
    bs = cheap_job().params["train"]["batch_size"]
    # stopped before any stage began (the data and the net alone): a smaller batch would not fit either
    for stage[0] in (None,):
        seen.clear()
        r = preflight({"table3-pupl": get_spec("table3-pupl")}, opts, say=lambda s: None)
        assert seen == [bs] and r.cells[0].status == "skipped" and "of its batch" not in r.cells[0].reason
    seen.clear()
    stage[0] = "train nnpu"  # stopped in a stage that trains: half the batch, until it fits
    r = preflight({"table3-pupl": get_spec("table3-pupl")}, opts, say=lambda s: None)
    assert seen == [bs, bs // 2, bs // 4]
    assert r.cells[0].status == "ok" and r.cells[0].check["batch_divisor"] == 4
    assert "over this machine's memory at its own (stopped at 9.0 GiB" in r.cells[0].check["notes"][0]
    seen.clear()
    monkeypatch.setattr(runner, "run_check", lambda job, *a, **k: (
        seen.append(job["params"]["train"]["batch_size"]),
        {"ok": False, "stopped": "memory", "error": "stopped at 9.0 GiB", "stopped_in": "train nnpu"})[1])
    r = preflight({"table3-pupl": get_spec("table3-pupl")}, opts, say=lambda s: None)
    assert seen == [bs, bs // 2, bs // 4, bs // 8]
    assert r.cells[0].status == "skipped" and r.cells[0].reason.endswith("at 1/8 of its batch")


def test_a_stopped_check_says_in_which_stage_from_the_workers_stage_lines():
    from pubench.preflight.meter import STAGE_BEGINS, STAGE_ENDS, stopped_in

    assert stopped_in(["loading", "Traceback"]) == (False, None)  # before any stage: data, model
    assert stopped_in([STAGE_BEGINS + "pretrain punce", "x"]) == (True, "pretrain punce")
    ended = [STAGE_BEGINS + "pretrain punce", STAGE_ENDS + "pretrain punce"]
    assert stopped_in(ended) == (True, None)  # between stages (evaluation)
    assert stopped_in(ended + [STAGE_BEGINS + "linear probe (pn)"]) == (True, "linear probe (pn)")
    assert stopped_in(["epoch 3/9 " + STAGE_BEGINS + "train nnpu"]) == (True, "train nnpu")  # no newline before


def test_each_stage_records_the_memory_it_began_with_and_its_peak(capsys):
    meter = Meter(1)
    toy_run(epochs=3, cap=meter)
    (stage,) = meter.stages
    assert 0 < stage.resident_begin <= stage.peak_end
    out = capsys.readouterr().out.splitlines()
    assert "pubench-preflight: stage begins: toy" in out and "pubench-preflight: stage ends: toy" in out


def test_a_check_stopped_for_memory_in_a_stage_names_it(scratch):
    from pubench.preflight.runner import run_check

    job = cheap_job()
    res = run_check(job.to_dict(), 1, {}, max_bytes=100 * 2**20)  # importing torch alone takes more
    assert res["ok"] is False and res["stopped"] == "memory" and "resident memory" in res["error"]
    assert res["training_began"] is False and res["stopped_in"] is None
    assert res["error"].endswith("before training began (loading data, building the model)")


def test_smaller_batch_divides_an_augmented_probes_batch_too():
    from pubench.preflight.plan import smaller_batch

    job = cheap_job()
    params = copy.deepcopy(job.params) | {"downstream": {"batch_size": 3}}
    half = smaller_batch(dataclasses.replace(job, params=params), 2)
    assert half.params["downstream"]["batch_size"] == 2  # a probe's batch stops at 2
    assert half.params["train"]["batch_size"] == job.params["train"]["batch_size"] // 2


def test_an_evaluation_divisor_computes_part_of_each_chunk_and_counts_the_whole():
    rows = []

    def fn(idx):
        rows.append(len(idx))
        return idx.float().view(-1, 1)

    whole, part = Meter(1), Meter(1, eval_divisor=4)
    full = predict(fn, 40, JobContext(cap=whole), 8)
    quarter = predict(fn, 40, JobContext(cap=part), 8)
    assert rows == [8, 2] and full.shape == quarter.shape == (40, 1)
    # 5 chunks of 8 rows; the part (2 rows) stands for a quarter of a chunk: counted 20 times
    assert whole.top.full_s == pytest.approx(whole.top.actual_s * 5)
    assert part.top.full_s == pytest.approx(part.top.actual_s * 20)
    assert part.figures(1.0)["eval_divisor"] == 4


def test_a_check_stopped_outside_the_stages_is_checked_again_at_a_smaller_evaluation_chunk(scratch, monkeypatch):
    from pubench.preflight import runner

    seen = []

    def fake_check(job, steps, synthetic, **kw):
        seen.append((job["params"]["train"]["batch_size"], kw["eval_divisor"]))
        if len(seen) < 3:
            return {"ok": False, "stopped": "memory", "error": "stopped at 9.0 GiB of resident memory",
                    "training_began": True, "stopped_in": None}
        return {"ok": True, "figures": {"stages": [], "job_s": 1.0}, "notes": []}

    monkeypatch.setattr(runner, "run_check", fake_check)
    bs = cheap_job().params["train"]["batch_size"]
    r = preflight({"table3-pupl": get_spec("table3-pupl")}, Options(steps=1, only=[CHEAP[0]], max_memory=8 * 2**30),
                  say=lambda s: None)
    assert seen == [(bs, 1), (bs, 2), (bs, 4)]  # the batch stays; the evaluation chunk halves
    cell = r.cells[0]
    assert cell.status == "ok" and cell.check["eval_divisor"] == 4 and "batch_divisor" not in cell.check
    assert cell.check["notes"][0].startswith("evaluated 1/4 of each evaluation chunk")


def test_the_worker_takes_the_evaluation_divisor(scratch):
    from pubench.preflight.runner import run_check

    job = cheap_job()
    stand_ins = S.plan(job.task, job.params).synthetic  # F-MNIST where the data root lacks it (a fresh clone)
    res = run_check(job.to_dict(), 1, stand_ins, eval_divisor=2)
    assert res["ok"], res.get("error")
    assert res["figures"]["eval_divisor"] == 2 and res["figures"]["eval_flops"] > 0
