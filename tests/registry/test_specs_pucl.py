"""The PUCL (paper 000) specs: shape, exact reported values, the configs the cells resolve to."""

from __future__ import annotations

import inspect

import pytest
import torch

from pubench.losses import LOSSES
from pubench.registry import get_spec
from pubench.registry.spec import match_cell

BLOCKS = ["SimCLR", "CMC", "MoCo"]
VARIANTS = ["", "+DEB", "+Hard", "+Ring", "+PUCL"]
LOSS_OF = {"": "info_nce", "+DEB": "debiased", "+Hard": "hard", "+Ring": "ring_official", "+PUCL": "pu_corrected"}
GRAPH_ROWS = ["InfoGraph", "InfoGraph+DEB", "InfoGraph+Hard", "InfoGraph+Ring",
              "InfoGraph+PUCL(alpha=0.1)", "InfoGraph+PUCL(alpha=0.5)"]
GRAPH_REFERENCE_ROWS = ["InfoGraph+InfoNCE (no correction)", "untrained encoder"]  # not in the paper
IMAGE_REFERENCE_ROWS = ["untrained encoder", "untrained CMC encoders"]  # not in the paper (issue 36)


def cell(spec, row, col):
    found = [c for c in spec.reported if (c.row, c.col) == (row, col)]
    assert len(found) == 1, (row, col)
    return found[0]


def n_cells(spec):
    return sum(1 for r in spec.rows for c in spec.cols
               if not any(match_cell(p, r, c) for p in spec.exclude))


def loss_args(name):
    """The hyperparameters a two-view pubench loss takes (its keyword arguments but the views)."""
    params = inspect.signature(LOSSES.get(name)).parameters
    return set(params) - {"z1", "z2", "reduction"}


@pytest.mark.parametrize("sid, kind, rows, cols, cells, reported, task, paper_seeds, seeds", [
    ("table1-pucl", "table", 17, 3, 51, 51, "contrastive_probe", None, 5),
    ("table2-pucl", "table", 8, 4, 32, 32, "infograph", 10, 10),
    ("fig3-pucl", "figure", 7, 10, 70, 0, "contrastive_probe", None, 5),
])
def test_shape(sid, kind, rows, cols, cells, reported, task, paper_seeds, seeds):
    s = get_spec(sid)
    assert s.paper == "pucl" and s.kind == kind
    assert (len(s.rows), len(s.cols)) == (rows, cols)
    assert list(s.metrics) == ["acc"]
    assert n_cells(s) == cells
    assert len(s.reported) == reported
    paper_cells = [c for c in s.reported if c.row not in GRAPH_REFERENCE_ROWS + IMAGE_REFERENCE_ROWS]
    assert all(c.mean is not None and c.std is None for c in paper_cells)  # no ± printed, none lost
    assert s.reported_seeds == paper_seeds and s.pm is None
    assert s.experiment["task"] == task
    assert s.tiers["paper"].seeds == seeds
    assert s.tiers["reduced"].seeds == 3 and s.tiers["smoke"].seeds == 1
    assert s.decisions and s.claims


def test_table1_values_and_layout():
    s = get_spec("table1-pucl")
    assert s.rows == [b + v for b in BLOCKS for v in VARIANTS] + IMAGE_REFERENCE_ROWS
    assert s.cols == ["CIFAR10", "CIFAR100", "STL10"]
    assert list(s.row_groups.values()) == [[b + v for v in VARIANTS] for b in BLOCKS] + [IMAGE_REFERENCE_ROWS]
    assert all(cell(s, r, c).mean is None for r in IMAGE_REFERENCE_ROWS for c in s.cols)  # the paper has no such row
    for r, fw in zip(IMAGE_REFERENCE_ROWS, ("simclr", "cmc")):
        for tier in ("paper", "reduced"):
            p = s.resolve(tier, r, "CIFAR10")["params"]
            assert p["pretrain"]["epochs"] == 0 and p["pretrain"]["framework"]["name"] == fw
    assert [(b.reference[0], b.baseline, b.margin) for b in s.regime] == [
        ("SimCLR", "untrained encoder", 10.0), ("CMC", "untrained CMC encoders", 10.0),
        ("MoCo", "untrained encoder", 10.0)]
    assert cell(s, "SimCLR", "STL10").mean == 80.50
    assert cell(s, "SimCLR+DEB", "CIFAR10").mean == 90.21
    assert cell(s, "CMC+Ring", "CIFAR100").mean == 60.99
    assert cell(s, "MoCo+PUCL", "STL10").mean == 93.68
    assert cell(s, "MoCo", "CIFAR10").mean == 85.62


def test_table1_configs():
    s = get_spec("table1-pucl")
    frameworks = {"SimCLR": "simclr", "CMC": "cmc", "MoCo": "moco"}
    for b in BLOCKS:
        for v in VARIANTS:
            for col, ds in zip(s.cols, ["cifar10", "cifar100", "stl10"]):
                p = s.resolve("paper", b + v, col)["params"]
                data = p["data"]
                assert data["dataset"] == ds and data["split"] == {"kind": "none"}  # no PU split
                assert "labels" not in data  # multi-class evaluation, no binarization
                if ds == "stl10":
                    assert data["pretrain_split"] == "train+unlabeled"
                assert p["model"]["backbone"]["name"] == "resnet50"
                assert p["pretrain"]["framework"]["name"] == frameworks[b]
                assert p["downstream"]["name"] == "linear_probe" and p["downstream"]["risk"] == "pn"
                loss = p["pretrain"]["loss"]
                assert loss["name"] == LOSS_OF[v]
                assert set(loss) - {"name"} == loss_args(loss["name"]), (b + v, col)
    # N = 510 in SimCLR (batch 256), a 4096 bank / queue in CMC / MoCo
    assert s.resolve("paper", "SimCLR", "CIFAR10")["params"]["pretrain"]["batch_size"] == 256
    assert s.resolve("paper", "CMC+PUCL", "STL10")["params"]["pretrain"]["framework"] == {
        "name": "cmc", "negatives": 4096, "bank_momentum": 0.5}
    assert s.resolve("paper", "MoCo+Hard", "CIFAR10")["params"]["pretrain"]["framework"] == {
        "name": "moco", "queue": 4096, "momentum": 0.99, "bn_splits": 8}
    # every framework block builds, at every tier
    from pubench.frameworks.pretrain import framework_class

    for tier in ("paper", "reduced", "smoke"):
        for b in BLOCKS:
            block = s.resolve(tier, b + "+PUCL", "CIFAR10")["params"]["pretrain"]["framework"]
            assert framework_class(block).config(block, "framework").name == frameworks[b]


def test_table1_reduced_blocks():
    # issue 13: all three blocks at the reduced tier, N below one epoch of the 4,000-image subset
    s = get_spec("table1-pucl")
    for b in BLOCKS:
        for v in VARIANTS:
            p = s.resolve("reduced", b + v, "CIFAR10")["params"]
            assert p["model"]["backbone"] == {"name": "resnet18_cifar", "width": 0.125}
            assert p["pretrain"]["batch_size"] == 256 and p["pretrain"]["epochs"] == 10  # issue 36: the regime budget
            fw = p["pretrain"]["framework"]
            if b == "MoCo":
                assert (fw["queue"], fw["momentum"]) == (1024, 0.9)
            if b == "CMC":
                assert fw["negatives"] == 1024
            assert fw.get("queue", fw.get("negatives", 0)) < p["data"]["subset"]["train"] - 256
    pucl = s.resolve("paper", "SimCLR+PUCL", "STL10")["params"]["pretrain"]["loss"]
    assert (pucl["alpha"], pucl["c"]) == (0.15, 0.1)
    assert s.resolve("paper", "SimCLR+DEB", "CIFAR100")["params"]["pretrain"]["loss"]["tau_plus"] == 0.01
    # Ring: the band of each framework's released config (test_table1_ring_bands_are_the_released_configs)
    for b in BLOCKS:
        ring = s.resolve("paper", b + "+Ring", "CIFAR10")["params"]["pretrain"]["loss"]
        assert (ring["lower"], ring["upper"]) == RELEASED_RING_BAND[b]


#: (thres_outer, thres_inner) of mhw32/contrastive-ring-public's configs (dynamic_inner, no annealing):
#: config/pretrain/simclr/simclr_ring.json (SimCLRRing, commit e79c871), mocov2/moco_ring.json, and for
#: CMC's memory bank nce/nce_ring.json (the code has no CMC config)
RELEASED_RING_THRESHOLDS = {"SimCLR": (0.5, 0.1), "MoCo": (0.1, 0.1), "CMC": (0.1, 0.1)}
#: the same as ring_official's (lower, upper) = (1 - thres_outer, 1 - thres_inner thres_outer)
RELEASED_RING_BAND = {"SimCLR": (0.5, 0.95), "MoCo": (0.9, 0.99), "CMC": (0.9, 0.99)}


@pytest.mark.parametrize("tier", ["paper", "reduced", "smoke"])
@pytest.mark.parametrize("block", BLOCKS)
def test_table1_ring_bands_are_the_released_configs(tier, block):
    """Issue 36: SimCLR+Ring ran MoCo's band (0.9, 0.99). The kept ranks of ring_official at each
    tier's candidate count equal the released code's arithmetic with that framework's config:
    sorted[:int(w_o M)][int(w_i int(w_o M)):]."""
    from pubench.losses.ring import official_rank_bounds

    s = get_spec("table1-pucl")
    p = s.resolve(tier, block + "+Ring", "CIFAR10")["params"]["pretrain"]
    loss = p["loss"]
    assert (loss["lower"], loss["upper"]) == RELEASED_RING_BAND[block]
    fw = p.get("framework", {})
    # SimCLR ranks the 2b views of its batch; MoCo its queue; CMC its bank draw
    m = {"SimCLR": 2 * p["batch_size"], "MoCo": fw.get("queue"), "CMC": fw.get("negatives")}[block]
    w_o, w_i = RELEASED_RING_THRESHOLDS[block]
    outer = int(w_o * m)
    first, stop = official_rank_bounds(torch.tensor([m]), loss["lower"], loss["upper"])
    assert (int(first), int(stop)) == (int(w_i * outer), outer)
    if block == "SimCLR" and tier != "smoke":
        assert (m, int(first), int(stop)) == (512, 25, 256)  # 231 of the 512 views, not ranks [5, 51)


def test_table2_values_and_configs():
    s = get_spec("table2-pucl")
    assert s.rows == GRAPH_ROWS + GRAPH_REFERENCE_ROWS
    assert list(s.row_groups.values()) == [GRAPH_ROWS, GRAPH_REFERENCE_ROWS]
    assert s.cols == ["PTC", "ENZYMES", "DD", "REDDIT-B"]
    assert cell(s, "InfoGraph", "PTC").mean == 56.63
    assert cell(s, "InfoGraph+Hard", "PTC").mean == 56.20
    assert cell(s, "InfoGraph+DEB", "DD").mean == 70.58
    assert cell(s, "InfoGraph+PUCL(alpha=0.5)", "REDDIT-B").mean == 88.97
    for r in GRAPH_REFERENCE_ROWS:  # the paper has no such rows: no value, a note saying so
        for c in s.cols:
            assert cell(s, r, c).mean is None and cell(s, r, c).note.startswith("The paper has no such row")
    datasets = dict(zip(s.cols, ["ptc_mr", "enzymes", "dd", "reddit_binary"]))
    for r in s.rows:
        for c in s.cols:
            p = s.resolve("paper", r, c)["params"]
            assert p["data"]["dataset"] == datasets[c]
            assert p["model"]["backbone"]["name"] == "gin"
            assert p["eval"]["name"] == "svm_cv"
            pretrain = p["pretrain"]
            if r == "untrained encoder":
                assert pretrain["epochs"] == 0 and not {"score", "measure", "loss"} & set(pretrain)
            elif r == "InfoGraph":  # the published InfoGraph: JSD on raw discriminator scores
                assert (pretrain["score"], pretrain["measure"]) == ("dot", "JSD") and "loss" not in pretrain
            else:
                loss = pretrain["loss"]
                assert pretrain["score"] == "cosine" and "measure" not in pretrain
                assert set(loss) - {"name"} == loss_args(loss["name"]), (r, c)
    alphas = [s.resolve("paper", r, "DD")["params"]["pretrain"]["loss"]["alpha"] for r in GRAPH_ROWS[-2:]]
    assert alphas == [0.1, 0.5]
    for tier in ("reduced", "smoke"):
        assert s.resolve(tier, "untrained encoder", "PTC")["params"]["pretrain"]["epochs"] == 0


def test_fig3_grid():
    s = get_spec("fig3-pucl")
    assert s.reported == []
    assert list(s.col_groups) == ["CIFAR10", "STL10"]
    assert len(s.row_groups) == 2
    p = s.resolve("paper", "M_u=62", "STL10 alpha=0.12")["params"]
    assert p["data"]["dataset"] == "stl10"
    assert p["pretrain"]["batch_size"] == 32  # M^u = N = 2b - 2 = 62
    assert p["pretrain"]["loss"] == {"name": "pu_corrected", "temperature": 0.5, "alpha": 0.12, "c": 0.01}
    q = s.resolve("paper", "c=0.02", "CIFAR10 alpha=0.2")["params"]["pretrain"]
    assert (q["batch_size"], q["loss"]["c"], q["loss"]["alpha"]) == (256, 0.02, 0.2)
    for r in s.rows:
        for c in s.cols:
            loss = s.resolve("paper", r, c)["params"]["pretrain"]["loss"]
            assert set(loss) - {"name"} == loss_args("pu_corrected")
    sizes = [s.resolve("paper", f"M_u={m}", "CIFAR10 alpha=0.1")["params"]["pretrain"]["batch_size"]
             for m in (62, 126, 254, 510)]
    assert [2 * b - 2 for b in sizes] == [62, 126, 254, 510]


def test_fig3_reduced_is_table1s_simclr_block():
    fig3, table1 = get_spec("fig3-pucl"), get_spec("table1-pucl")
    ref = table1.resolve("reduced", "SimCLR+PUCL", "CIFAR10")["params"]
    for r in fig3.rows:
        p = fig3.resolve("reduced", r, "CIFAR10 alpha=0.12")["params"]
        assert p["model"] == ref["model"] and p["downstream"] == ref["downstream"]
        assert {k: v for k, v in p["pretrain"].items() if k not in ("batch_size", "loss", "epochs")} == \
            {k: v for k, v in ref["pretrain"].items() if k not in ("batch_size", "loss", "epochs")}
        assert p["pretrain"]["epochs"] == 4  # table1-pucl moved to 10 (issue 36); fig3 keeps 4, out of regime (its spec)
        assert p["data"]["subset"] == {"train": 2000, "test": 2000}
    assert fig3.resolve("reduced", "M_u=62", "CIFAR10 alpha=0.12")["params"]["pretrain"]["batch_size"] == 32


def test_fig3_probe_is_table1s():
    # issue 13: fig3-pucl evaluates with table1-pucl's SimCLR-block probe (augmented training images)
    table1 = get_spec("table1-pucl").resolve("paper", "SimCLR+PUCL", "CIFAR10")["params"]["downstream"]
    fig3 = get_spec("fig3-pucl")
    for r in fig3.rows:
        for c in fig3.cols:
            assert fig3.resolve("paper", r, c)["params"]["downstream"] == table1
    assert table1["augment"] == {"name": "simclr"}
