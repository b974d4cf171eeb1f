"""The registry's transcription of paper 001 (puNCE): shapes, exact values, configs."""

from __future__ import annotations

import pytest

from pubench.registry import get_spec
from pubench.registry.changes import deviation_lines

# (rows, cols, runnable cells, reported cells) per spec
SHAPES = {
    "table1-punce": (6, 5, 30, 30),  # 4 losses and the untrained-encoder reference column (issue 36)
    "table2-punce": (17, 3, 50, 50),
    "table3-punce": (3, 2, 6, 6),
    "table4-punce": (3, 3, 9, 9),
    "table5-punce": (3, 3, 9, 9),
    "fig4-punce": (9, 16, 41, 0),
}

# A.1.1: pi* = (P* - n_P) / (P* + N* - n_P), training counts
MNIST_ODD, MNIST_EVEN = 30508, 29492
CIFAR_P, CIFAR_N = 20000, 30000


def prior(p: int, n: int, n_p: int) -> float:
    return (p - n_p) / (p + n - n_p)


def uses_prior(pu_method: str) -> bool:
    """A risk-based PU method whose risk needs the class prior (not PN, not the prior-free
    vPU); a planned method (not implemented yet) states its prior like these."""
    from pubench.pu import PU_METHODS
    from pubench.pu.end_to_end import RiskMethod

    if pu_method not in PU_METHODS:
        return True
    unit = PU_METHODS.get(pu_method)
    return issubclass(unit, RiskMethod) and unit.risk != "pn"


def cell(spec, row, col):
    c = spec.reported_cell(row, col, "acc")
    assert c is not None, (row, col)
    return c


@pytest.mark.parametrize("spec_id", sorted(SHAPES))
def test_shapes(spec_id):
    s = get_spec(spec_id)
    n_rows, n_cols, n_cells, n_reported = SHAPES[spec_id]
    assert s.paper == "punce"
    assert len(s.rows) == n_rows
    assert len(s.cols) == n_cols
    assert len(s.cells()) == n_cells
    assert len(s.reported) == n_reported
    assert s.reported_seeds == 5
    assert s.tiers["paper"].seeds == 5
    assert s.tiers["reduced"].seeds == 3
    assert s.tiers["smoke"].seeds == 1
    # every reported cell is a runnable cell
    runnable = set(s.cells())
    assert all((c.row, c.col) in runnable for c in s.reported)


def test_table1_values_and_config():
    s = get_spec("table1-punce")
    c = cell(s, "MNIST n_P=1k", "infoNCE")
    assert (c.mean, c.std) == (94.15, 0.15)
    c = cell(s, "MNIST n_P=10k", "SCL")
    assert (c.mean, c.std, c.mark) == (98.29, 0.08, "(bold)")
    c = cell(s, "CIFAR n_P=10k", "DCL")
    assert (c.mean, c.std) == (96.50, 0.02)
    assert cell(s, "CIFAR n_P=1k", "puNCE").mean == 97.59
    assert all((c.mean is None) == (c.col == "untrained encoder") for c in s.reported)
    for tier in ("paper", "reduced", "smoke"):  # the reference column: the same encoder, not pre-trained
        for r in s.rows:
            p = s.resolve(tier, r, "untrained encoder")["params"]
            assert p["pretrain"]["epochs"] == 0
            assert p["model"] == s.resolve(tier, r, "infoNCE")["params"]["model"]
            assert p["downstream"] == s.resolve(tier, r, "infoNCE")["params"]["downstream"]

    p = s.resolve("paper", "CIFAR n_P=3k", "puNCE")["params"]
    assert p["data"]["labels"]["positive"] == [0, 1, 8, 9]
    assert p["data"]["split"] == {"kind": "pu", "n_labeled": 3000, "scheme": "single_training_set"}
    assert p["model"]["backbone"]["name"] == "resnet18_cifar"
    assert p["pretrain"]["loss"] == {"name": "punce", "temperature": 0.5, "prior": prior(CIFAR_P, CIFAR_N, 3000)}
    assert (p["pretrain"]["epochs"], p["pretrain"]["batch_size"]) == (300, 2048)
    assert p["pretrain"]["optimizer"]["name"] == "lars" and p["pretrain"]["optimizer"]["lr"] == 0.01
    assert p["downstream"]["risk"] == "nnpu"
    assert p["downstream"]["prior"] == prior(CIFAR_P, CIFAR_N, 3000)

    p = s.resolve("paper", "MNIST n_P=10k", "DCL")["params"]
    assert p["data"]["dataset"] == "mnist" and p["data"]["labels"]["positive"] == [1, 3, 5, 7, 9]
    assert p["model"]["backbone"]["name"] == "mlp_001"
    assert (p["pretrain"]["epochs"], p["pretrain"]["batch_size"]) == (200, 1024)
    assert p["pretrain"]["loss"] == {"name": "debiased", "temperature": 0.5, "tau_plus": 0.5}
    assert p["downstream"]["prior"] == prior(MNIST_ODD, MNIST_EVEN, 10000)
    # losses without a prior get none
    assert "prior" not in s.resolve("paper", "MNIST n_P=1k", "SCL")["params"]["pretrain"]["loss"]


def test_table2_values_and_config():
    s = get_spec("table2-punce")
    c = cell(s, "ResNet18 PN", "n_P=1k")
    assert (c.mean, c.std) == (68.19, 1.38)
    c = cell(s, "AllConv uPU", "n_P=10k")
    assert (c.mean, c.std) == (90.26, 1.60)
    c = cell(s, "AllConv puNCE", "n_P=10k")
    assert (c.mean, c.std, c.mark) == (98.34, 0.09, "(bold)")
    assert cell(s, "MLP nnPU", "n_P=3k").mean == 95.53
    # SelfPU at 10k is printed '-': excluded, not reported
    assert s.is_excluded("AllConv SelfPU", "n_P=10k")
    assert s.reported_cell("AllConv SelfPU", "n_P=10k", "acc") is None
    assert set(s.row_groups) == {
        "PU CIFAR (vehicle/animal), ResNet 18",
        "PU CIFAR (vehicle/animal), All Conv",
        "PU MNIST (Odd/even), MLP",
    }

    assert s.experiment["task"] == "pu_benchmark"
    p = s.resolve("paper", "AllConv nnPU", "n_P=3k")["params"]
    assert p["pu_method"]["name"] == "nnpu" and p["pu_method"]["prior"] == prior(CIFAR_P, CIFAR_N, 3000)
    assert p["model"]["backbone"]["name"] == "allconv_001"
    assert "pretrain" not in p and "downstream" not in p
    p = s.resolve("paper", "MLP puNCE", "n_P=10k")["params"]
    assert "pu_method" not in p
    assert p["pretrain"]["loss"]["prior"] == prior(MNIST_ODD, MNIST_EVEN, 10000)
    assert p["downstream"]["prior"] == prior(MNIST_ODD, MNIST_EVEN, 10000)
    assert p["downstream"]["name"] == "linear_probe" and p["downstream"]["risk"] == "nnpu"
    # every row of a dataset shares the split at a given n_P
    for col in s.cols:
        datas = {str(s.resolve("paper", r, col)["params"]["data"]) for r in s.rows if r.startswith(("ResNet18", "AllConv"))
                 and not s.is_excluded(r, col)}
        assert len(datas) == 1
    # every prior-taking method has pi*
    for r, col in s.cells():
        p = s.resolve("paper", r, col)["params"]
        n_p = p["data"]["split"]["n_labeled"]
        want = (prior(CIFAR_P, CIFAR_N, n_p) if p["data"]["dataset"] == "cifar10"
                else prior(MNIST_ODD, MNIST_EVEN, n_p))
        if "pu_method" in p and uses_prior(p["pu_method"]["name"]):
            assert p["pu_method"]["prior"] == want, (r, col)
        if "pretrain" in p:
            assert p["pretrain"]["loss"]["prior"] == want and p["downstream"]["prior"] == want


def test_table3_values_and_config():
    s = get_spec("table3-punce")
    c = cell(s, "n_P=1k", "FT")
    assert (c.mean, c.std) == (92.96, 0.19)
    assert "4.36" in c.note and "4.63" in c.note
    assert cell(s, "n_P=3k", "LP").std == 0.04
    assert cell(s, "n_P=10k", "FT").mean == 97.41
    assert s.resolve("paper", "n_P=1k", "LP")["params"]["downstream"]["name"] == "linear_probe"
    ft = s.resolve("paper", "n_P=10k", "FT")["params"]
    assert ft["downstream"]["name"] == "finetune" and ft["downstream"]["prior"] == 0.25


def test_table4_values_and_config():
    s = get_spec("table4-punce")
    c = cell(s, "1%", "infoNCE")
    assert (c.mean, c.std) == (83.96, 2.45)
    c = cell(s, "5%", "SCL")
    assert (c.mean, c.std, c.mark) == (96.16, 0.06, "(bold)")
    assert cell(s, "10%", "puNCE").mean == 96.57
    p = s.resolve("paper", "5%", "puNCE")["params"]
    assert p["data"]["split"]["kind"] == "pnu" and p["data"]["split"]["labeled_fraction"] == 0.05
    assert p["model"]["backbone"]["name"] == "allconv_001"
    assert p["pretrain"]["loss"]["name"] == "punce_pnu"
    assert p["downstream"]["risk"] == "pn"


def test_table5_values_and_config():
    s = get_spec("table5-punce")
    c = cell(s, "20 labeled", "CE + SCL")
    assert (c.mean, c.std) == (88.18, 3.30)
    c = cell(s, "100 labeled", "CE + puNCE")
    assert (c.mean, c.std) == (93.76, 0.17)
    assert cell(s, "1000 labeled", "CE").mean == 94.03
    assert any("N=10" in n for n in s.reported_notes)
    assert s.experiment["task"] == "text_fewshot"
    p = s.resolve("paper", "20 labeled", "CE + puNCE")["params"]
    assert p["data"]["n_per_class"] * 2 == 20 and p["data"]["n_unlabeled"] == 500
    assert p["train"]["objective"]["loss"]["name"] == "punce_pnu" and p["train"]["unlabeled_batch_size"] == 16
    assert p["model"]["backbone"] == {"name": "roberta_large", "pooling": "first"}
    assert p["data"]["eval_split"] == "dev"
    # CE and CE + SCL ignore the unlabeled sentences; every column of a row draws the same ones
    for col in ("CE", "CE + SCL"):
        q = s.resolve("paper", "20 labeled", col)["params"]
        assert "unlabeled_batch_size" not in q["train"] and q["data"] == p["data"]
    assert s.resolve("paper", "20 labeled", "CE")["params"]["train"]["objective"] == {"name": "ce"}
    # reduced and smoke tiers run the MiniLM stand-in and say so
    r = s.resolve("reduced", "1000 labeled", "CE + SCL")["params"]
    assert r["model"]["backbone"]["name"] == "minilm_l6" and r["train"]["epochs"] == 1
    assert any("roberta_large -> minilm_l6" in d and "RoBERTa-large" in d for d in deviation_lines(s, "reduced"))


def test_fig4_layout():
    s = get_spec("fig4-punce")
    assert s.kind == "figure" and s.reported == []
    assert len(s.col_groups) == 3
    assert not s.is_excluded("DCL", "(a) n_P=3k")
    assert s.is_excluded("DCL", "(b) n_P=3k") and s.is_excluded("init puNCE", "(a) n_P=1k")
    p = s.resolve("paper", "init random", "(c) epoch=40")["params"]
    assert p["pretrain"]["epochs"] == 0 and p["downstream"]["epochs"] == 40
    assert p["downstream"]["name"] == "finetune"
    p = s.resolve("paper", "puNCE", "(a) n_P=10k")["params"]
    assert p["pretrain"]["loss"]["prior"] == 0.25


def test_fig4_claims_test_the_papers_direction():
    """'better as the number of labeled positives grows': n_P = 10k best (col_order lists
    the best column last; version 3 listed it first and tested the opposite)."""
    from pubench.report.checks import describe

    s = get_spec("fig4-punce")
    (grows,) = [c for c in s.claims if c.kind == "col_order"]
    assert describe(grows, s).startswith("(a) n_P=10k > (a) n_P=3k > (a) n_P=1k")


def test_printed_parameter_counts_recorded():
    """The appendix totals (MLP, All Conv, ResNet18) are in the decisions for implementers."""
    text = " ".join(get_spec("table1-punce").decisions + get_spec("table2-punce").decisions)
    for total in ("29231151", "11333825"):
        assert total in text
    assert "5,019,255" in " ".join(get_spec("table2-punce").decisions)
    assert "5019255" in " ".join(get_spec("table4-punce").decisions)


def test_table2_pvu_and_vpu_configs():
    # issue 11: PvU is the cost-sensitive P-vs-U risk with cross-entropy; vPU follows its released code
    s = get_spec("table2-punce")
    assert s.version >= 2
    for row in ("ResNet18 PvU", "AllConv PvU", "MLP PvU"):
        assert s.resolve("paper", row, "n_P=1k")["params"]["pu_method"]["loss"] == "logistic"
    for row in ("ResNet18 vPU", "AllConv vPU"):
        p = s.resolve("paper", row, "n_P=3k")["params"]
        assert p["pu_method"] == {"name": "vpu", "mix_alpha": 0.3, "lam": 0.03, "iterations_per_epoch": 30,
                                  "lr_halving_every": 20, "restart_optimizer_at_halving": True,
                                  "model_selection": "validation_loss", "validation_fraction": 0.1}
        assert p["train"]["optimizer"] == {"name": "adam", "lr": 3.0e-5, "betas": [0.5, 0.99], "weight_decay": 0.0}
        assert (p["train"]["epochs"], p["train"]["batch_size"]) == (50, 500)
        red = s.resolve("reduced", row, "n_P=3k")["params"]
        assert red["pu_method"]["model_selection"] == "validation_loss" and red["train"]["optimizer"]["betas"] == [0.5, 0.99]
