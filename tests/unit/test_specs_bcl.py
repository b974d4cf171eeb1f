"""The BCL (paper 002) Table 1 spec: shape, exact reported values, the configs of its cells.

(fig5-bcl has its own tests in test_bcl_simulation.py.)
"""

from __future__ import annotations

import inspect

from pubench.losses import LOSSES
from pubench.registry import get_spec
from pubench.registry.spec import match_cell

NS = [30, 62, 126, 254, 510]
COLS = [f"{d} N={n}" for d in ("CIFAR10", "STL10") for n in NS]


def cell(spec, row, col):
    found = [c for c in spec.reported if (c.row, c.col) == (row, col)]
    assert len(found) == 1, (row, col)
    return found[0]


def loss_args(name):
    params = inspect.signature(LOSSES.get(name)).parameters
    return set(params) - {"z1", "z2", "reduction"}


def test_shape():
    s = get_spec("table1-bcl")
    assert s.paper == "bcl" and s.kind == "table"
    assert s.rows == ["SimCLR", "DCL", "HCL", "BCL"]
    assert s.cols == COLS
    assert s.col_groups == {"CIFAR10": COLS[:5], "STL10": COLS[5:]}
    assert list(s.metrics) == ["acc"]
    n_cells = sum(1 for r in s.rows for c in s.cols if not any(match_cell(p, r, c) for p in s.exclude))
    assert n_cells == 40
    assert len(s.reported) == 40
    assert all(c.mean is not None and c.std is None for c in s.reported)
    assert s.reported_seeds is None and s.pm is None
    assert s.experiment["task"] == "contrastive_probe"
    assert (s.tiers["paper"].seeds, s.tiers["reduced"].seeds, s.tiers["smoke"].seeds) == (5, 3, 1)
    assert s.decisions and s.claims


def test_values():
    s = get_spec("table1-bcl")
    assert cell(s, "SimCLR", "CIFAR10 N=30").mean == 80.21
    assert cell(s, "DCL", "CIFAR10 N=62").mean == 87.60
    assert cell(s, "BCL", "CIFAR10 N=510").mean == 92.18
    assert cell(s, "SimCLR", "STL10 N=30").mean == 61.20
    assert cell(s, "HCL", "STL10 N=62").mean == 73.38
    assert cell(s, "BCL", "STL10 N=62").mean == 73.36  # below HCL: noted as a paper inconsistency


def test_configs():
    s = get_spec("table1-bcl")
    names = {"SimCLR": "info_nce", "DCL": "debiased", "HCL": "hard", "BCL": "bayesian"}
    for r in s.rows:
        for c in s.cols:
            p = s.resolve("paper", r, c)["params"]
            n = int(c.split("N=")[1])
            assert 2 * p["pretrain"]["batch_size"] - 2 == n  # N = 2b - 2 negatives
            data = p["data"]
            assert data["dataset"] == c.split()[0].lower() and data["split"] == {"kind": "none"}
            assert "labels" not in data  # multi-class evaluation, no binarization
            if data["dataset"] == "stl10":
                assert data["pretrain_split"] == "train+unlabeled"
            assert p["model"]["backbone"]["name"] == "resnet50"
            assert p["model"]["projector"]["out"] == 128
            assert p["pretrain"]["framework"] == {"name": "simclr"}
            assert p["pretrain"]["epochs"] == 400
            assert p["pretrain"]["optimizer"]["lr"] == 1.0e-3
            loss = p["pretrain"]["loss"]
            assert loss["name"] == names[r] and loss["temperature"] == 0.5
            if r != "BCL":
                assert set(loss) - {"name"} == loss_args(loss["name"]), (r, c)
    bcl = s.resolve("paper", "BCL", "STL10 N=510")["params"]["pretrain"]["loss"]
    # BCL's alpha and beta are schedules (App. B.2), the rest are the loss's arguments
    assert set(bcl) - {"name", "alpha_schedule", "beta_schedule"} == loss_args("bayesian") - {"alpha", "beta"}
    assert bcl["alpha_schedule"] == [{"until_epoch": 300, "value": 0.5}, {"until_epoch": 400, "value": 0.7}]
    assert bcl["beta_schedule"] == {"kind": "linear", "start": 2.0, "per_epoch": -0.005, "update_every": 20}
    assert bcl["tau_plus"] == 0.1
