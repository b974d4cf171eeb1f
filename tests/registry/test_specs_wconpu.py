"""The WConPU (paper 004) specs: shape, exact reported values, the Table I protocol; Fig. 3, 5, 6."""

from __future__ import annotations

import re

import pytest

from pubench.registry import get_spec
from pubench.registry.changes import deviation_lines
from pubench.registry.spec import match_cell

METRICS6 = ["acc", "precision", "recall", "f1", "auc", "ap"]
TABLE2_ROWS = ["uPU", "nnPU", "RP", "PUSB", "PUBN", "Self-PU", "aPU", "VPU", "ImbPU", "Dist-PU",
               "puNCE", "PiCO", "WConPU"]
DATASETS = ["CIFAR-10", "SVHN", "STL-10", "Alzheimer"]


def cell(spec, row, col, metric=None):
    metric = metric or next(iter(spec.metrics))
    found = [c for c in spec.reported if (c.row, c.col, c.metric) == (row, col, metric)]
    assert len(found) == 1, (row, col, metric)
    return found[0]


def n_cells(spec):
    return sum(1 for r in spec.rows for c in spec.cols
               if not any(match_cell(p, r, c) for p in spec.exclude))


@pytest.mark.parametrize("sid, rows, cols, metrics, cells, reported", [
    ("table2-wconpu", 13, 4, 6, 52, 312),
    ("table3-wconpu", 5, 1, 6, 5, 30),
    ("table4-wconpu", 2, 3, 1, 6, 6),
    ("table5-wconpu", 2, 3, 2, 6, 12),
])
def test_shape(sid, rows, cols, metrics, cells, reported):
    s = get_spec(sid)
    assert (len(s.rows), len(s.cols), len(s.metrics)) == (rows, cols, metrics)
    assert n_cells(s) == cells
    assert len(s.reported) == reported
    assert all(c.mean is not None for c in s.reported)  # the conversion lost no cell of this paper
    assert s.reported_seeds == 5 and s.pm
    assert s.experiment["task"] == "pu_benchmark"
    assert s.tiers["paper"].seeds == 5 and s.tiers["reduced"].seeds == 3 and s.tiers["smoke"].seeds == 1


def test_table2_values():
    s = get_spec("table2-wconpu")
    assert s.rows == TABLE2_ROWS and s.cols == DATASETS and list(s.metrics) == METRICS6
    c = cell(s, "uPU", "CIFAR-10", "acc")
    assert (c.mean, c.std, c.mark) == (88.41, 0.41, "✓")
    c = cell(s, "uPU", "Alzheimer", "precision")
    assert (c.mean, c.std, c.mark) == (69.71, 3.44, None)
    c = cell(s, "Dist-PU", "Alzheimer", "recall")
    assert (c.mean, c.std, c.mark) == (80.09, 5.10, None)
    c = cell(s, "WConPU", "SVHN", "f1")
    assert (c.mean, c.std, c.mark) == (90.45, 0.35, None)
    c = cell(s, "RP", "STL-10", "ap")
    assert (c.mean, c.std, c.mark) == (95.58, 2.29, "✓")
    c = cell(s, "PUBN", "Alzheimer", "acc")
    assert (c.mean, c.std) == (70.00, 1.02)
    c = cell(s, "aPU", "CIFAR-10", "f1")
    assert c.mean == 86.41 and c.note  # inconsistent with its Prec / Rec, recorded as printed
    assert all(c.std is not None for c in s.reported)
    assert all(c.mark is None for c in s.reported if c.row == "WConPU")
    assert sum(c.mark == "✓" for c in s.reported) == 267  # 288 baseline cells, 21 without a mark
    assert {c.mark for c in s.reported} == {"✓", None}


def test_table2_dispatch_and_protocol():
    s = get_spec("table2-wconpu")
    table1 = {  # dataset, positive classes (0-based), n_P, n_U, n_test, prior, backbone
        "CIFAR-10": ("cifar10", [0, 1, 8, 9], 1000, 50000, 10000, 0.4, "cnn13"),
        "SVHN": ("svhn", [0, 2, 4, 6, 8], 1000, 73257, 26032, 0.46, "cnn13"),
        "STL-10": ("stl10", [0, 2, 8, 9], 500, 5000, 8000, 0.4, "resnet18"),
        "Alzheimer": ("alzheimer_kaggle", ["MildDemented", "ModerateDemented", "VeryMildDemented"],
                      769, 5121, 1279, 0.5, "resnet50"),
    }
    for col, (ds, pos, n_p, n_u, n_test, prior, backbone) in table1.items():
        for row in s.rows:
            p = s.resolve("paper", row, col)["params"]
            d = p["data"]
            assert (d["dataset"], d["labels"]["positive"], d["split"]["n_labeled"], d["split"]["n_unlabeled"],
                    d["n_test"], d["prior"]) == (ds, pos, n_p, n_u, n_test, prior)
            assert d["split"]["scheme"] == "case_control"
            assert p["model"]["backbone"]["name"] == backbone
            if row == "puNCE":  # two-step: contrastive_probe path
                assert "pu_method" not in p and "train" not in p
                assert p["pretrain"]["loss"] == {"name": "punce", "temperature": 0.5, "prior": prior}
                assert p["downstream"]["risk"] == "nnpu"
            else:  # end to end: pu_train path
                assert p["train"]["epochs"] == 800
                assert p["train"]["batch_size"] == (8 if col == "Alzheimer" else 256)
                assert "pretrain" not in p
    w = s.resolve("paper", "WConPU", "CIFAR-10")["params"]["pu_method"]
    assert w["name"] == "wconpu" and w["temperature"] == 0.07 and w["momentum"] == 0.999 and w["alpha"] == 0.9
    assert w["queue"] == 8192
    assert s.resolve("paper", "WConPU", "Alzheimer")["params"]["pu_method"]["queue"] == 4096


def test_table3_values():
    s = get_spec("table3-wconpu")
    assert s.cols == ["CIFAR-10"]
    c = cell(s, "I: w/o L_con", "CIFAR-10", "recall")
    assert (c.mean, c.std) == (61.60, 6.11)
    c = cell(s, "III: w/o L_dis", "CIFAR-10", "auc")
    assert (c.mean, c.std) == (98.51, 0.56)
    c = cell(s, "IV: w/o hard negative mining", "CIFAR-10", "f1")
    assert (c.mean, c.std) == (94.76, 1.35) and c.note
    # variant V is Table II's WConPU CIFAR-10 row
    t2 = get_spec("table2-wconpu")
    for m in METRICS6:
        a, b = cell(s, "V: WConPU", "CIFAR-10", m), cell(t2, "WConPU", "CIFAR-10", m)
        assert (a.mean, a.std) == (b.mean, b.std)
    p = s.resolve("paper", "I: w/o L_con", "CIFAR-10")["params"]
    assert p["pu_method"]["con_loss"] == {"name": "none"} and "gamma0" not in p["pu_method"]["tuning"]["grid"]
    assert p["data"]["dataset"] == "cifar10" and p["data"]["split"]["n_labeled"] == 1000
    p = s.resolve("paper", "IV: w/o hard negative mining", "CIFAR-10")["params"]
    assert p["pu_method"]["hard_negatives"]["mining"] == "none"


def test_table4_values():
    s = get_spec("table4-wconpu")
    assert s.cols == ["CIFAR-10", "SVHN", "STL-10"]
    c = cell(s, "Pseudo Label-based", "CIFAR-10")
    assert (c.mean, c.std) == (96.72, 0.19)
    c = cell(s, "Pseudo Label-based", "SVHN")
    assert (c.mean, c.std) == (91.11, 0.32)
    c = cell(s, "Pseudo Label-based", "STL-10")
    assert (c.mean, c.std) == (96.79, 0.21)
    t2 = get_spec("table2-wconpu")
    for col in s.cols:
        a, b = cell(s, "WConPU", col), cell(t2, "WConPU", col, "acc")
        assert (a.mean, a.std) == (b.mean, b.std)
    p = s.resolve("paper", "Pseudo Label-based", "STL-10")["params"]
    assert p["pu_method"]["hard_negatives"]["mining"] == "pseudo_label"
    assert p["model"]["backbone"]["name"] == "resnet18"


def test_table5_values():
    s = get_spec("table5-wconpu")
    assert list(s.metrics) == ["time", "acc"] and s.metrics["time"].higher_is_better is False
    c = cell(s, "Re-compute", "SVHN", "time")
    assert (c.mean, c.std) == (0.75, None)
    c = cell(s, "WConPU", "CIFAR-10", "time")
    assert (c.mean, c.std) == (0.45, None)
    c = cell(s, "Re-compute", "STL-10", "acc")
    assert (c.mean, c.std) == (96.98, 0.23)
    t2 = get_spec("table2-wconpu")
    for col in s.cols:
        a, b = cell(s, "WConPU", col, "acc"), cell(t2, "WConPU", col, "acc")
        assert (a.mean, a.std) == (b.mean, b.std)
    p = s.resolve("paper", "Re-compute", "CIFAR-10")["params"]
    assert p["pu_method"]["prototypes"]["update"] == "recompute_epoch"


def test_wconpu_paper_tier_is_the_printed_protocol():
    """Every WConPU cell (Tables II-V, 003 Table 4): batch 256 (8 on Alzheimer), 800 epochs, SGD
    lr 1e-2 momentum 0.9 cosine, queue 8192 (4096 on Alzheimer), lambda 0.999, rho 0.07,
    alpha 0.9, the gamma grid {1e-3, 1e-2, 1e-1, 1}^2 selected on the 10% clean validation set."""
    grid = [1.0e-3, 1.0e-2, 1.0e-1, 1.0]
    cells = [("table2-wconpu", "WConPU", c) for c in DATASETS]
    cells += [("table3-wconpu", "V: WConPU", "CIFAR-10"), ("table4-wconpu", "WConPU", "SVHN"),
              ("table5-wconpu", "WConPU", "STL-10"), ("table4-pupl", "WConPU†", "Alzheimer")]
    for sid, row, col in cells:
        p = get_spec(sid).resolve("paper", row, col)["params"]
        pm, t = p["pu_method"], p["train"]
        alz = col == "Alzheimer"
        assert pm["name"] == "wconpu" and (t["epochs"], t["batch_size"]) == (800, 8 if alz else 256), (sid, col)
        assert t["optimizer"] == {"name": "sgd", "lr": 1.0e-2, "momentum": 0.9, "weight_decay": 1.0e-4}
        assert t["schedule"] == {"name": "cosine"}
        assert (pm["queue"], pm["momentum"], pm["temperature"], pm["alpha"]) == (4096 if alz else 8192, 0.999, 0.07, 0.9)
        assert pm["tuning"] == {"grid": {"gamma0": grid, "gamma1": grid}, "select_on": "validation", "metric": "acc"}
        assert p["data"]["validation"]["fraction"] == 0.1
        assert p["model"]["projector"]["out"] == 128 and p["model"]["classifier"]["shared_encoder"] is True


def test_table3_variants_and_reduced_tier():
    s = get_spec("table3-wconpu")
    pm = {r: s.resolve("paper", r, "CIFAR-10")["params"]["pu_method"] for r in s.rows}
    assert pm["I: w/o L_con"]["con_loss"] == {"name": "none"} and "gamma0" not in pm["I: w/o L_con"]["tuning"]["grid"]
    assert pm["II: w/o pseudo label updating"]["pseudo_labels"]["update"] == "none"
    assert pm["III: w/o L_dis"]["dist_loss"] == {"name": "unlabeled_negative_ce"}
    assert pm["IV: w/o hard negative mining"]["hard_negatives"]["mining"] == "none"
    assert pm["V: WConPU"]["hard_negatives"]["mining"] == "prototype"
    # reduced: table2's WConPU|CIFAR-10 runs exactly table3's variant V
    v = s.resolve("reduced", "V: WConPU", "CIFAR-10")["params"]
    t2 = get_spec("table2-wconpu").resolve("reduced", "WConPU", "CIFAR-10")["params"]
    assert v == t2
    assert v["data"]["dataset"] == "cifar10_jpeg" and v["data"]["split"]["n_labeled"] == 80
    assert v["pu_method"]["tuning"] == {"grid": {"gamma0": [1.0], "gamma1": [1.0]}, "select_on": "none", "metric": "acc"}
    assert s.resolve("reduced", "I: w/o L_con", "CIFAR-10")["params"]["pu_method"]["tuning"]["grid"] == {"gamma1": [1.0]}
    assert deviation_lines(s, "reduced") and deviation_lines(s, "smoke")
    for tier in ("reduced", "smoke"):
        assert all(s.unavailable_reason(tier, r, c) is None for r, c in s.cells())
    t2s = get_spec("table2-wconpu")
    assert {c for c in t2s.cells() if t2s.unavailable_reason("reduced", *c) is None} == {
        (r, "CIFAR-10") for r in t2s.rows}
    vpu = t2s.resolve("reduced", "VPU", "CIFAR-10")["params"]
    assert vpu["pu_method"]["iterations_per_epoch"] == 16 and vpu["train"]["epochs"] == 8
    # like for like (issue 36): every row of the block on WConPU's data and network, for its 8 epochs
    for r in t2s.rows:
        p = t2s.resolve("reduced", r, "CIFAR-10")["params"]
        assert p["data"] == t2["data"] and p["model"]["backbone"] == t2["model"]["backbone"], r
        assert (p.get("train") or p["pretrain"])["epochs"] == t2["train"]["epochs"] == 8, r
    assert t2s.resolve("reduced", "Dist-PU", "CIFAR-10")["params"]["pu_method"]["warmup_epochs"] == 4
    assert t2s.resolve("reduced", "nnPU", "CIFAR-10")["params"]["train"] == t2s.resolve("reduced", "uPU", "CIFAR-10")["params"]["train"]


@pytest.mark.parametrize("sid, variant, key, value", [
    ("table4-wconpu", "Pseudo Label-based", "hard_negatives", {"mining": "pseudo_label", "quantile": 0.25, "weight": "inverse_dissim"}),
    ("table5-wconpu", "Re-compute", "prototypes", {"update": "recompute_epoch", "init": "zeros"}),
])
def test_table4_table5_reduced_and_smoke_tiers(sid, variant, key, value):
    """Tables IV and V at the reduced and smoke tiers: the WConPU row of the CIFAR-10 column runs
    exactly table3-wconpu's variant V (= table2-wconpu's WConPU|CIFAR-10) and the variant row
    differs from it only in the key the variant changes; SVHN and STL-10 (no data here) do not run."""
    s, t3 = get_spec(sid), get_spec("table3-wconpu")
    for tier in ("reduced", "smoke"):
        ours = s.resolve(tier, "WConPU", "CIFAR-10")["params"]
        assert ours == t3.resolve(tier, "V: WConPU", "CIFAR-10")["params"], tier
        other = s.resolve(tier, variant, "CIFAR-10")["params"]
        assert other["pu_method"][key] == value and ours["pu_method"][key] != value
        assert {k: v for k, v in other["pu_method"].items() if k != key} == {
            k: v for k, v in ours["pu_method"].items() if k != key}
        assert {k: v for k, v in other.items() if k != "pu_method"} == {k: v for k, v in ours.items() if k != "pu_method"}
        running = {c for c in s.cells() if s.unavailable_reason(tier, *c) is None}
        assert running == {(r, "CIFAR-10") for r in s.rows}, tier
        assert "SVHN" in s.unavailable_reason(tier, variant, "SVHN")
        assert "STL-10" in s.unavailable_reason(tier, "WConPU", "STL-10")
        assert deviation_lines(s, tier)
    assert s.resolve("reduced", "WConPU", "CIFAR-10")["params"] == get_spec("table2-wconpu").resolve(
        "reduced", "WConPU", "CIFAR-10")["params"]
    # the paper tier keeps 004's protocol
    paper = s.resolve("paper", variant, "CIFAR-10")["params"]
    assert paper["pu_method"][key] == value and paper["train"]["epochs"] == 800



# ------------------------------------------------------------------ figures 3, 5, 6
def test_fig3_sweeps_one_parameter_at_a_time():
    """Fig. 3: a panel per gamma_0, gamma_1, alpha, lambda; each column changes only its
    parameter from the base point (gamma_0 = gamma_1 = 1, alpha 0.9, lambda 0.999), with no
    validation selection; every other setting is table2-wconpu's WConPU row of the data set."""
    s, t2 = get_spec("fig3-wconpu"), get_spec("table2-wconpu")
    assert s.rows == DATASETS and len(s.cols) == 16 and s.methods_in == "cols" and s.reported == []
    assert [len(g) for g in s.col_groups.values()] == [4, 4, 4, 4]
    for row in s.rows:
        base = t2.resolve("paper", "WConPU", row)["params"]
        for col in s.cols:
            p = s.resolve("paper", row, col)["params"]
            name, value = col.split(" ", 1)[1].split("=")
            pm, bpm = p["pu_method"], base["pu_method"]
            grid = {"gamma0": [float(value) if name == "gamma_0" else 1.0],
                    "gamma1": [float(value) if name == "gamma_1" else 1.0]}
            assert pm["tuning"] == {"grid": grid, "select_on": "none", "metric": "acc"}
            assert pm["alpha"] == (float(value) if name == "alpha" else 0.9)
            assert pm["momentum"] == (float(value) if name == "lambda" else 0.999)
            rest = {k: v for k, v in pm.items() if k not in ("tuning", "alpha", "momentum")}
            assert rest == {k: v for k, v in bpm.items() if k not in ("tuning", "alpha", "momentum")}, (row, col)
            assert {k: v for k, v in p.items() if k != "pu_method"} == {k: v for k, v in base.items() if k != "pu_method"}
    # reduced: the CIFAR-10 row in the shared reduced config, the sweep re-applied over it
    v = get_spec("table3-wconpu").resolve("reduced", "V: WConPU", "CIFAR-10")["params"]
    r = s.resolve("reduced", "CIFAR-10", "(d) lambda=0.9999")["params"]
    assert r["pu_method"]["momentum"] == 0.9999 and r["data"] == v["data"] and r["train"] == v["train"]
    assert s.resolve("reduced", "CIFAR-10", "(a) gamma_0=1")["params"] == v  # the base point = table3's variant V
    assert s.resolve("reduced", "CIFAR-10", "(c) alpha=0.99")["params"]["pu_method"]["momentum"] == 0.99
    running = {c for c in s.cells() if s.unavailable_reason("reduced", *c) is None}
    assert running == {("CIFAR-10", c) for c in s.cols}
    assert {c for c in s.cells() if s.unavailable_reason("smoke", *c) is None} == {
        ("CIFAR-10", "(a) gamma_0=0.001"), ("CIFAR-10", "(d) lambda=0.9")}


def test_fig5_curves_and_tiers():
    s = get_spec("fig5-wconpu")
    assert s.cells() == [("WConPU", "CIFAR-10 n_P=1k")] and s.reported == []
    assert [(c.y, c.x) for c in s.curves] == [("pu_method.pseudo_label_acc", "epoch"),
                                              ("pu_method.pseudo_label_mean_max", "epoch")]
    assert [c.kind for c in s.claims] == ["curve_rises", "curve_rises"]
    assert s.resolve("paper", "WConPU", "CIFAR-10 n_P=1k")["params"] == get_spec("table2-wconpu").resolve(
        "paper", "WConPU", "CIFAR-10")["params"]  # the run Table II reports
    assert s.resolve("reduced", "WConPU", "CIFAR-10 n_P=1k")["params"] == get_spec("table3-wconpu").resolve(
        "reduced", "V: WConPU", "CIFAR-10")["params"]
    smoke = s.resolve("smoke", "WConPU", "CIFAR-10 n_P=1k")["params"]
    assert smoke["train"]["epochs"] == 2 and smoke["data"]["subset"] == {"train": 256, "test": 128}


def test_fig6_assumed_prior_replaces_the_true_one():
    """Fig. 6: true prior 0.4 in the data, each column's assumed prior given to every method;
    every row of a trial shares the split (the same params.data) at the paper and reduced tiers."""
    s, t2 = get_spec("fig6-wconpu"), get_spec("table2-wconpu")
    assert s.rows == ["nnPU", "Self-PU", "Dist-PU", "WConPU"] and s.reported == []
    assert s.cols == [f"pi_P={p}" for p in (0.2, 0.3, 0.4, 0.5, 0.6)]
    for tier in ("paper", "reduced"):
        for col in s.cols:
            datas = [s.resolve(tier, r, col)["params"]["data"] for r in s.rows]
            assert all(d == datas[0] for d in datas) and datas[0]["prior"] == 0.4
            for r in s.rows:  # the true prior's column reads it from the data, as table2-wconpu does
                assumed = s.resolve(tier, r, col)["params"]["pu_method"].get("prior", datas[0]["prior"])
                assert assumed == float(col.split("=")[1])
            assert ("prior" in s.resolve(tier, "nnPU", col)["params"]["pu_method"]) == (col != "pi_P=0.4")
    for r in s.rows:  # apart from the prior, the paper tier is table2-wconpu's row on CIFAR-10
        p = s.resolve("paper", r, "pi_P=0.3")["params"]
        base = t2.resolve("paper", r, "CIFAR-10")["params"]
        assert {**p, "pu_method": {k: v for k, v in p["pu_method"].items() if k != "prior"}} == base, r
    red = {r: s.resolve("reduced", r, "pi_P=0.4")["params"] for r in s.rows}
    assert red["WConPU"] == {**get_spec("table3-wconpu").resolve("reduced", "V: WConPU", "CIFAR-10")["params"],
                             "pu_method": {**red["WConPU"]["pu_method"]}}
    assert red["WConPU"]["train"]["epochs"] == 8 and red["Dist-PU"]["train"]["epochs"] == 8
    assert red["Dist-PU"]["pu_method"]["warmup_epochs"] == 4 and red["Self-PU"]["pu_method"]["ema_start"] == 3
    assert red["nnPU"]["train"]["optimizer"] == {"name": "adam", "lr": 1.0e-3, "weight_decay": 1.0e-4}
    assert red["nnPU"]["model"] == {"backbone": {"name": "cnn13", "width": 0.25, "fc_width": 128}}
    assert {c for c in s.cells() if s.unavailable_reason("smoke", *c) is None} == {
        (r, c) for r in ("nnPU", "WConPU") for c in ("pi_P=0.2", "pi_P=0.4")}


@pytest.mark.parametrize("sid, only", [
    ("fig5-wconpu", "WConPU|CIFAR-10 n_P=1k"),
    ("fig3-wconpu", "CIFAR-10|(d) lambda=0.9"),
    ("fig6-wconpu", "nnPU|pi_P=0.2"),
])
def test_figure_smoke_cell_runs_and_reports(sid, only, scratch_store, shared_image_root, monkeypatch):
    """One smoke cell of each WConPU figure end to end on the CIFAR-10 JPEG copy (seconds):
    run, report, plot; fig5-wconpu's curves reach the report."""
    from pubench.cli import main

    monkeypatch.setenv("PUBENCH_DATA", str(shared_image_root))
    assert main(["run", sid, "--tier", "smoke", "--only", only, "--no-progress", "--threads", "1"]) == 0
    assert main(["report", sid, "--tier", "smoke"]) == 0
    folder = scratch_store / "reports" / "smoke"
    assert (folder / f"{sid}.png").read_bytes()[:4] == b"\x89PNG"
    md = (folder / f"{sid}.md").read_text()
    assert "Cells with results: 1 of" in md
    if sid == "fig5-wconpu":
        assert "(a) accuracy of pseudo labels | WConPU | CIFAR-10 n_P=1k | 1: " in re.sub(" +", " ", md)
