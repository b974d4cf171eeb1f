"""The PU baselines of issue 16 in the table specs: each wired row resolves to its method's
settings, passes the method's checks at every tier that runs it, and the reduced tier of
table2-wconpu runs only the CIFAR-10 cells designed for it."""

from __future__ import annotations

import pytest

from pubench.pu import PU_METHODS
from pubench.registry import get_spec
from pubench.train.loop import TrainConfig
from pubench.utils.config import build_config

WIRED = {
    "table2-wconpu": {"PUSB": "pusb", "ImbPU": "imbpu", "Dist-PU": "dist_pu", "PUBN": "pubn", "RP": "rank_pruning",
                      "aPU": "apu", "PiCO": "pico"},
    "table4-pupl": {"PUSB": "pusb", "ImbPU": "imbpu", "Dist-PU": "dist_pu", "PUbN": "pubn", "RP": "rank_pruning",
                    "aPU": "apu", "PiCO": "pico"},
    "table3-pupl": {"nnPU† (MixUp) (1)": "nnpu_mixup", "RP (2)": "rank_pruning"},
}


def _runs(spec, tier, row, col) -> bool:
    from pubench.registry.spec import match_cell
    unavailable = spec.tiers[tier].unavailable or {}
    return not any(match_cell(p, row, col) for p in unavailable)


@pytest.mark.parametrize("sid", sorted(WIRED))
def test_wired_rows_pass_their_method_checks(sid):
    spec = get_spec(sid)
    checked = 0
    for row, name in WIRED[sid].items():
        for col in (c for c in spec.cols if c not in spec.derived_cols):  # Mean is computed, not run
            for tier in spec.tiers:
                if not _runs(spec, tier, row, col):
                    continue
                params = spec.resolve(tier, row, col)["params"]
                unit = PU_METHODS.get(params["pu_method"]["name"])
                assert params["pu_method"]["name"] == name
                cfg = unit.config(params["pu_method"], "pu_method")
                unit.check(cfg)
                unit.check_train(cfg, build_config(TrainConfig, params["train"]), "params")
                checked += 1
    assert checked


def test_table2_wconpu_baseline_settings():
    spec = get_spec("table2-wconpu")
    dist = spec.resolve("paper", "Dist-PU", "CIFAR-10")["params"]
    assert dist["train"]["epochs"] == 800 and dist["pu_method"]["warmup_epochs"] == 400
    assert dist["pu_method"]["mixup_optimizer"] == {"lr": 1.0e-3}
    assert dist["pu_method"]["loss_scale"] == "released_code" and dist["pu_method"]["mix_alpha"] == 6.0
    pusb = spec.resolve("paper", "PUSB", "SVHN")["params"]["pu_method"]
    assert pusb == {"name": "pusb", "loss": "logistic", "beta": 0.0, "gamma": 1.0, "threshold_sample": "unlabeled"}
    imb = spec.resolve("paper", "ImbPU", "STL-10")["params"]["pu_method"]
    assert imb["target_prior"] == 0.5 and imb["loss"] == "sigmoid"
    assert spec.resolve("paper", "Dist-PU", "Alzheimer")["params"]["train"]["batch_size"] == 8
    reduced_data = spec.resolve("reduced", "Dist-PU", "CIFAR-10")["params"]["data"]
    # the reduced tier: the CIFAR-10 cells of every row
    running = {(r, c) for r in spec.rows for c in spec.cols if _runs(spec, "reduced", r, c)}
    assert running == {(r, "CIFAR-10") for r in spec.rows}
    punce = spec.resolve("reduced", "puNCE", "CIFAR-10")["params"]
    assert "train" not in punce and punce["pretrain"]["epochs"] == 8 and punce["downstream"]["epochs"] == 30
    assert punce["pretrain"]["optimizer"] == {"name": "adam", "lr": 1.0e-3, "weight_decay": 1.0e-4}
    # like for like (issue 36): every row on WConPU's data and network
    assert punce["data"] == reduced_data and punce["model"]["backbone"] == {"name": "cnn13", "width": 0.25,
                                                                           "fc_width": 128}
    assert spec.resolve("paper", "PUBN", "SVHN")["params"]["pu_method"]["tau"] == 0.9
    reduced = spec.resolve("reduced", "Dist-PU", "CIFAR-10")["params"]
    assert reduced["train"]["epochs"] == 8 and reduced["pu_method"]["warmup_epochs"] == 4
    assert reduced["train"]["optimizer"] == {"name": "adam", "lr": 1.0e-3, "weight_decay": 1.0e-4}
    assert reduced["pu_method"]["mixup_optimizer"] == {"lr": 1.0e-4}
    assert reduced["data"]["split"]["n_labeled"] == 80 and reduced["data"]["dataset"] == "cifar10_jpeg"
    wconpu = spec.resolve("reduced", "WConPU", "CIFAR-10")["params"]
    assert reduced["data"] == wconpu["data"] and reduced["model"]["backbone"] == wconpu["model"]["backbone"]


def test_table3_pupl_nnpu_mixup_row():
    spec = get_spec("table3-pupl")
    p = spec.resolve("paper", "nnPU† (MixUp) (1)", "CIFAR-I")["params"]["pu_method"]
    assert p == {"name": "nnpu_mixup", "loss": "sigmoid", "beta": 0.0, "gamma": 1.0,
                 "mixup": {"mode": "separate_positive_and_unlabeled", "alpha": 1.0}}


def test_table3_pupl_rank_pruning_row():
    spec = get_spec("table3-pupl")
    assert spec.resolve("paper", "RP (2)", "STL-I")["params"]["pu_method"] == {"name": "rank_pruning", "cv_folds": 3}
    reduced = spec.resolve("reduced", "RP (2)", "CIFAR-II")["params"]
    assert reduced["train"]["epochs"] == 8 and reduced["data"]["split"]["n_labeled"] == 240
    assert reduced["model"]["backbone"] == {"name": "cnn13", "width": 0.25, "fc_width": 128}


def test_table2_wconpu_apu_and_pico_rows():
    spec = get_spec("table2-wconpu")
    assert spec.resolve("paper", "aPU", "SVHN")["params"]["pu_method"] == {
        "name": "apu", "estimator": "purr", "loss": "sigmoid", "gamma": 1.0}
    pico = spec.resolve("paper", "PiCO", "CIFAR-10")["params"]
    assert pico["model"]["projector"] == {"layers": 2, "hidden": "features", "out": 128}
    pm = pico["pu_method"]
    assert (pm["momentum"], pm["prototype_momentum"], pm["temperature"], pm["queue"]) == (0.999, 0.99, 0.07, 8192)
    assert pm["contrastive_weight"] == 0.5 and pm["pseudo_target_momentum"] == [0.95, 0.8]
    assert pm["dist_loss"] == {"name": "dist_pu", "weight": 1.0} and pico["train"]["epochs"] == 800
    assert spec.resolve("paper", "PiCO", "Alzheimer")["params"]["pu_method"]["queue"] == 4096
    assert spec.resolve("paper", "PiCO", "Alzheimer")["params"]["train"]["batch_size"] == 8
    reduced = spec.resolve("reduced", "PiCO", "CIFAR-10")["params"]
    assert reduced["pu_method"]["queue"] == 1024 and reduced["pu_method"]["augment"]["key"]["num_ops"] == 1
    assert reduced["train"]["epochs"] == 8 and reduced["data"]["split"]["n_labeled"] == 80
    assert spec.resolve("reduced", "aPU", "CIFAR-10")["params"]["train"]["optimizer"]["name"] == "adam"
    # table4-pupl reruns 004's experiment: the same aPU / PiCO configs
    t4 = get_spec("table4-pupl")
    for row, col, col4 in (("aPU", "SVHN", "SVHN-I"), ("PiCO", "CIFAR-10", "CIFAR-III"), ("PiCO", "Alzheimer", "Alzheimer")):
        assert t4.resolve("paper", row, col4)["params"] == spec.resolve("paper", row, col)["params"]


def test_self_pu_rows():
    """Self-PU: the released code's settings (VITA-Group/Self-PU), its 200-epoch schedule
    stretched to 004's 800 epochs, 003's paces; every reduced / smoke config fits its epochs."""
    released = {"pace1": 0.2, "pace2": 0.3, "pace_ramp_epochs": 100, "self_paced_start": 10, "self_paced_stop": 50,
                "self_paced_every": 10, "ema_start": 50, "meta_lr": 1.0e-3, "entropy_budget": 0.0625,
                "mutual_alpha": 0.1, "consistency": 0.0, "reported_network": "teacher_1", "loss": "sigmoid"}
    punce = get_spec("table2-punce").resolve("paper", "AllConv SelfPU", "n_P=1k")["params"]
    assert all(punce["pu_method"][k] == v for k, v in released.items())
    assert punce["train"] == {"epochs": 200, "batch_size": 256, "schedule": {"name": "cosine"},
                              "optimizer": {"name": "adam", "lr": 5.0e-4, "weight_decay": 5.0e-3}}
    pupl3 = get_spec("table3-pupl").resolve("paper", "Self-PU† (1)", "CIFAR-I")["params"]
    assert all(pupl3["pu_method"][k] == v for k, v in released.items()) and pupl3["train"]["epochs"] == 200
    for sid, row, col in (("table2-wconpu", "Self-PU", "SVHN"), ("table4-pupl", "Self-PU†", "CIFAR-III")):
        p = get_spec(sid).resolve("paper", row, col)["params"]
        assert p["train"]["epochs"] == 800
        assert {k: p["pu_method"][k] for k in ("self_paced_start", "self_paced_stop", "self_paced_every",
                                               "pace_ramp_epochs", "ema_start")} == {
            "self_paced_start": 40, "self_paced_stop": 200, "self_paced_every": 40, "pace_ramp_epochs": 400,
            "ema_start": 200}
    for sid, tier, row, col in (("table2-wconpu", "reduced", "Self-PU", "CIFAR-10"),
                                ("table3-pupl", "reduced", "Self-PU† (1)", "F-MNIST-I"),
                                ("table3-pupl", "reduced", "Self-PU† (1)", "CIFAR-II"),
                                ("table3-pupl", "smoke", "Self-PU† (1)", "CIFAR-I"),
                                ("table2-punce", "reduced", "AllConv SelfPU", "n_P=3k")):
        p = get_spec(sid).resolve(tier, row, col)["params"]
        epochs, m = p["train"]["epochs"], p["pu_method"]
        assert m["self_paced_start"] >= 1 and m["self_paced_stop"] <= epochs and m["ema_start"] < epochs
    punce = get_spec("table2-punce")  # a reduced config (table3-pupl's CIFAR compression); none at smoke
    assert punce.unavailable_reason("reduced", "AllConv SelfPU", "n_P=1k") is None
    assert punce.unavailable_reason("smoke", "AllConv SelfPU", "n_P=1k")
