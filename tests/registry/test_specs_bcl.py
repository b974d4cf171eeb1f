"""The BCL (paper 002) specs: Table 1 (shape, exact reported values, the configs of its cells),
Fig. 4 and Fig. 8 (settings, smoke runs).

(fig5-bcl has its own tests in test_bcl_simulation.py.)
"""

from __future__ import annotations

import inspect

from pubench.losses import LOSSES
from pubench.registry import get_spec
from pubench.registry.changes import deviation_lines
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
    assert s.rows == ["SimCLR", "DCL", "HCL", "BCL", "untrained encoder"]  # the last: a reference row (issue 36)
    assert s.row_groups == {"Table 1": ["SimCLR", "DCL", "HCL", "BCL"],
                            "Reference rows (not in the paper)": ["untrained encoder"]}
    assert s.cols == COLS
    assert s.col_groups == {"CIFAR10": COLS[:5], "STL10": COLS[5:]}
    assert list(s.metrics) == ["acc"]
    n_cells = sum(1 for r in s.rows for c in s.cols if not any(match_cell(p, r, c) for p in s.exclude))
    assert n_cells == 50
    assert len(s.reported) == 50
    assert all((c.mean is None) == (c.row == "untrained encoder") and c.std is None for c in s.reported)
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
    for r in names:
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


# ------------------------------------------------------------------ fig4-bcl, fig8-bcl
ALPHAS4 = ["alpha=0.5", "alpha=0.7", "alpha=0.9", "alpha=1.0"]


def test_fig4_shape_and_settings():
    """Fig. 4: the paper's own settings (t = 2, M = 1, N = 20000, Sec. 4.2), phi = N(0, 1) (Fig. 3),
    a TN and an FN density per alpha, no printed numbers."""
    s = get_spec("fig4-bcl")
    assert s.kind == "figure" and s.rows == ["TN", "FN"] and s.cols == ALPHAS4
    assert s.reported == [] and s.reported_notes and s.decisions
    assert [c.title for c in s.curves] == ["density of exp(x/t)"]
    assert (s.curves[0].x, s.curves[0].y, s.curves[0].cols) == ("density.x", "density.y", tuple(ALPHAS4))
    for tier in ("paper", "reduced"):
        for r, c in s.cells():
            p = s.resolve(tier, r, c)
            assert p["task"] == "bcl_score_density"
            d = p["params"]["data"]
            assert (d["t"], d["M"], d["N"], d["tau_plus"]) == (2.0, 1, 20000, 0.5)
            assert d["proposal"] == {"name": "normal", "mean": 0.0, "std": 1.0}
            assert d["alpha"] == float(c.split("=")[1]) and p["params"]["scores"] == r.lower()
    # TN and FN of a column read the same simulated sample: equal params.data
    assert s.resolve("paper", "TN", "alpha=0.9")["params"]["data"] == s.resolve("paper", "FN", "alpha=0.9")["params"]["data"]
    assert s.resolve("smoke", "FN", "alpha=0.7")["params"]["data"]["N"] == 2000 and deviation_lines(s, "smoke")
    kinds = {(c.kind, c.metric, c.rows) for c in s.claims}
    assert ("col_order", "auc", ("FN",)) in kinds and ("greater", "mean", ("FN", "TN")) in kinds


def test_fig8_shape_and_settings():
    """Fig. 8: fig5-bcl's process at App. B.1's base point; panel (a) sweeps gamma, (b) alpha;
    rows theta (theta_SUP) and the three estimators."""
    s, f5 = get_spec("fig8-bcl"), get_spec("fig5-bcl")
    assert s.rows == ["theta", "BIASED", "DCL", "BCL"] and len(s.cols) == 12 and s.reported == []
    assert list(s.metrics) == ["mean_estimate", "abs_bias"]
    assert [len(v) for v in s.col_groups.values()] == [6, 6]
    base = f5.resolve("paper", "BCL", "alpha=0.9")["params"]
    for tier in ("paper", "reduced"):
        p = s.resolve(tier, "BCL", "(b) alpha=0.9")["params"]
        assert p == base  # the same process and estimator as fig5-bcl's base point
    names = {r: s.resolve("paper", r, "(a) gamma=0.4")["params"]["estimator"]["name"] for r in s.rows}
    assert names == {"theta": "sup", "BIASED": "biased", "DCL": "dcl", "BCL": "bcl"}
    assert s.resolve("paper", "DCL", "(a) gamma=1.0")["params"]["data"] == {**base["data"], "gamma": 1.0, "alpha": 0.9}
    assert all(c.kind in ("col_order", "greater") for c in s.claims)
    assert s.resolve("smoke", "BCL", "(b) alpha=0.5")["params"]["data"]["M"] == 40


def test_fig4_fig8_smoke_runs_and_reports(scratch_store, capsys):
    """Both simulations end to end at the smoke tier (seconds): run, report with plot, curves."""
    from pubench.cli import main

    for sid in ("fig4-bcl", "fig8-bcl"):
        assert main(["run", sid, "--tier", "smoke", "--no-progress"]) == 0
        assert main(["report", sid, "--tier", "smoke"]) == 0
        folder = scratch_store / "reports" / "smoke"
        assert (folder / f"{sid}.png").read_bytes()[:4] == b"\x89PNG"
        md = (folder / f"{sid}.md").read_text()
        assert "Cells with results: " + str(len(get_spec(sid).cells())) in md
    md = (scratch_store / "reports" / "smoke" / "fig4-bcl.md").read_text()
    assert "### Curves" in md and "density of exp(x/t)" in md
