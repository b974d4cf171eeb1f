"""pubench.tools.paper_cost: the FLOP model of the paper tier's GPU cost. Its per-step FLOPs
equal what PyTorch counts on a real capped step of the same paper-tier cell (pubench
preflight's meter), its split sizes are the data pipeline's, and a gpu-check JSON calibrates
its rates."""

from __future__ import annotations

import json

import pytest

from pubench.numerics import resolve
from pubench.preflight.meter import Meter
from pubench.preflight.plan import _input_shape, select
from pubench.preflight.standins import StandIns, plan
from pubench.registry import get_spec
from pubench.tasks import TASKS
from pubench.tools import paper_cost as pc
from pubench.train.context import JobContext

pytestmark = pytest.mark.usefixtures("one_thread")


def paper_job(cell: str):
    (c,), _ = select({"table3-pupl": get_spec("table3-pupl")}, "paper", [cell], resolve())
    return c.job


def counted_step_flops(job) -> float:
    """FLOPs PyTorch counts on the first step of the job's first stage (capped, in-process)."""
    meter = Meter(1)
    TASKS.get(job.task).run(job.params, dict(job.seeds),
                            JobContext(cap=meter, data=StandIns(plan(job.task, job.params).synthetic)))
    return meter.stages[0].step_flops


@pytest.mark.parametrize("cell, block", [("uPU† (1)|F-MNIST-I", "train"), ("puCL(puPL) (1)|F-MNIST-I", "pretrain")])
def test_the_model_s_step_flops_are_those_counted_on_a_real_step(cell, block):
    job = paper_job(cell)
    shape = _input_shape(job.params)
    bs = job.params[block]["batch_size"]
    if block == "pretrain":
        model = (bs * pc.pretrain_flops(job.params, shape, json.dumps(job.params["pretrain"]["framework"]))
                 + pc.loss_flops(job.params, bs))
    else:
        model = bs * 3 * pc.backbone_flops(job.params, shape)
    # 3 x forward overcounts a little: no input gradient at the first layer (about 10 % for LeNet-5)
    assert model == pytest.approx(counted_step_flops(job), rel=0.05 if block == "pretrain" else 0.12)


def test_split_sizes_come_from_the_data_pipeline_on_labels_only():
    n = pc.sizes(paper_job("uPU† (1)|STL-I").params, 7)
    assert n["train"] == 1000 + 100000 and n["test"] == 8000  # case-control: n_L + STL-10's unlabeled split
    split = paper_job("uPU† (1)|F-MNIST-I").params["data"]["split"]
    n = pc.sizes(paper_job("uPU† (1)|F-MNIST-I").params, 7)
    assert split["scheme"] == "case_control" and n["train"] == split["n_labeled"] + split["n_unlabeled"]
    assert n["test"] == 10000


def test_a_table_s_cost_and_the_calibration_by_a_gpu_check_json(tmp_path):
    rates, source = pc.calibrate(None)
    assert rates == pc.ASSUMED and "assumed" in source
    res = {"environment": {"device_name": "H100", "date": "2026-12-01", "torch": "2.11.0"},
           "parts": {"preflight": {"cells": [{"preflight": {"cells": [
               {"id": "table1-pucl", "task": "contrastive_probe",
                "figures": {"stages": [{"step_flops": 4e12, "step_s": [1.0, 0.1, 0.1]}]}}]}}]}}}
    (tmp_path / "gc.json").write_text(json.dumps(res))
    rates, source = pc.calibrate(tmp_path / "gc.json")
    assert rates["conv32"] == pytest.approx(40.0) and "H100" in source
    row = pc.table_cost(get_spec("table4-punce"), pc.ASSUMED)
    assert row["jobs"] == 45 and row["gpu_h"] > 0 and row["cpu_h"] is None
    text = pc.render([row], pc.ASSUMED, "assumed")
    assert "| table4-punce | 45 |" in text and "**all 1 specs**" in text
