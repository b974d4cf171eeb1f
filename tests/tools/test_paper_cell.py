"""pubench.tools.paper_cell: the epoch cap, the projection to full epochs and the synthetic
data root (the GPU figures of docs/ come from it; its full runs are measurements, not tests)."""

from __future__ import annotations

import pytest
import torch

from pubench.tools import paper_cell as pc
from pubench.train.context import JobContext
from pubench.train.loop import Step, Trainer, predict


def test_the_stage_timer_caps_every_trainer_of_the_job_and_times_it(one_thread):
    net = torch.nn.Linear(2, 1)
    timer = pc.StageTimer(2)
    ctx = JobContext(cap=timer)
    trainer = Trainer([net], torch.optim.SGD(net.parameters(), lr=0.1), desc="toy", ctx=ctx)
    history = trainer.run(50, lambda e: [torch.arange(4)],
                          lambda idx, e: Step(net(torch.ones(len(idx), 2)).sum(), weight=len(idx)))
    assert len(history) == 2
    assert torch.equal(predict(lambda idx: idx.float().view(-1, 1), 10, ctx, 4), torch.arange(10.0).view(-1, 1))
    (stage,) = timer.stages
    assert stage["stage"] == "toy" and stage["epochs"] == 50 and stage["ran"] == 2 and len(stage["epoch_s"]) == 2


def test_the_projection_counts_the_warm_up_once_and_scales_the_rest():
    stage = {"epochs": 100, "ran": 3, "epoch_s": [5.0, 1.0, 1.2], "call_s": 7.5}
    # first epoch + median of the others x 99 + time outside the epochs (0.3 s) x 100 / 3
    assert pc.project(stage) == pytest.approx(5.0 + 1.1 * 99 + 0.3 * 100 / 3)
    assert pc.project({"epochs": 10, "ran": 1, "epoch_s": [2.0], "call_s": 2.0}) == pytest.approx(20.0)


def test_synthetic_data_have_the_data_set_shape_and_are_read_by_the_loaders(monkeypatch):
    from pubench.preflight import standins

    monkeypatch.setitem(standins.IMAGE_SETS, "mnist", standins.ImageShape((1, 28, 28), {"train": (3,) * 10,
                                                                                         "test": (1,) * 10}))
    root = pc.synthetic_root(["mnist"])
    from pubench.data.images import load_images

    train = load_images("mnist", "train", root)
    assert tuple(train.x.shape) == (30, 1, 28, 28) and train.num_classes == 10 and "synthetic" in train.source
    with pytest.raises(SystemExit, match="--synthetic knows"):
        pc.synthetic_root(["not_a_set"])


def test_without_cuda_it_says_so_in_one_line(capsys):
    if torch.cuda.is_available():
        pytest.skip("checks the message of a machine without CUDA")
    assert pc.main(["table2-pucl", "--cell", "*|DD"]) == 0
    assert "no CUDA device" in capsys.readouterr().out
