"""Tasks ``contrastive_probe`` and ``pu_benchmark`` end to end on tiny synthetic image sets
with the real backbones at small widths: metrics, the split in every result, determinism,
dispatch and param validation. Real data only in ``slow`` tests."""

from __future__ import annotations

import copy

import pytest
import torch

from pubench.data.images import ImageSet
from pubench.tasks import TASKS
from pubench.tasks import _image_common as common
from pubench.train.context import PLAIN
from pubench.utils.config import ConfigError

BINARY = {"acc", "precision", "recall", "f1", "auc", "ap"}


pytestmark = pytest.mark.usefixtures("one_thread")


def _fake(n: int, seed: int, c: int = 1, side: int = 12) -> ImageSet:
    """Class k (0..9) = a bright 3x3 block at one of 10 positions, plus noise."""
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(n) % 10
    x = torch.randint(0, 60, (n, c, side, side), generator=g)
    for k in range(10):
        r, q = divmod(k, 4)
        x[y == k, :, 3 * r:3 * r + 3, 3 * q:3 * q + 3] += 180
    return ImageSet(x.clamp(0, 255).to(torch.uint8), y.long(), [str(k) for k in range(10)], f"synthetic (seed {seed})")


@pytest.fixture
def fake_data(monkeypatch):
    calls = []

    def load(source, name, split):
        calls.append((name, split))
        sets = {"train": _fake(300, 0), "test": _fake(100, 1), "unlabeled": _fake(120, 2)}
        if split == "train+unlabeled":
            a, b = sets["train"], sets["unlabeled"]
            return ImageSet(torch.cat([a.x, b.x]), torch.cat([a.y, torch.full_like(b.y, -1)]), a.classes, "synthetic t+u")
        return sets[split]

    monkeypatch.setattr(common, "_load", load)
    return calls


def _params(**over):
    p = {
        "data": {"dataset": "mnist", "labels": {"positive": [1, 3, 5, 7, 9]},
                 "split": {"kind": "pu", "n_labeled": 40, "scheme": "single_training_set"}},
        "model": {"backbone": {"name": "mlp_001", "hidden": 32, "out_dim": 8, "input_size": 12},
                  "projector": {"hidden": 16, "out": 8}},
        "pretrain": {"framework": {"name": "simclr"}, "loss": {"name": "punce", "temperature": 0.5}, "epochs": 2,
                     "batch_size": 64, "optimizer": {"name": "lars", "lr": 0.5, "momentum": 0.9, "weight_decay": 1e-6},
                     "schedule": {"name": "cosine", "warmup_epochs": 1},
                     "augment": {"name": "mnist_crop", "scale": [0.7, 1.0]}},
        "downstream": {"name": "linear_probe", "risk": "nnpu", "epochs": 5, "batch_size": 64,
                       "optimizer": {"name": "adam", "lr": 0.01}},
    }
    for k, v in over.items():
        if v is None:
            p.pop(k)
        else:
            p[k] = v
    return p


SEEDS = {"data": 11, "init": 22}


def _check_record(out):
    info = out.info
    assert set(info["split"]) == {"definition", "counts", "prior", "checksum"}
    assert info["split"]["counts"]["n_labeled"] >= 0 and len(info["split"]["checksum"]) == 64
    assert "train" in info["data_source"] and "test" in info["data_source"]
    assert "epochs_run" in info


def test_contrastive_probe_pu(fake_data):
    out = TASKS.get("contrastive_probe").run(_params(), SEEDS, ctx=PLAIN)
    assert set(out.metrics) == BINARY
    _check_record(out)
    info = out.info
    assert info["epochs_run"] == 2 and len(info["pretrain"]["loss"]) == 2
    assert info["pretrain"]["prior_filled"] and info["split"]["prior"] == pytest.approx(110 / 260)
    assert info["downstream"]["prior_used"] == pytest.approx(110 / 260)
    assert info["split"]["counts"]["n_labeled"] == 40


def test_deterministic_and_split_shared(fake_data):
    a = TASKS.get("contrastive_probe").run(_params(), SEEDS, ctx=PLAIN)
    b = TASKS.get("contrastive_probe").run(_params(), SEEDS, ctx=PLAIN)
    assert a.metrics == b.metrics and a.info["pretrain"]["loss"] == b.info["pretrain"]["loss"]
    c = TASKS.get("contrastive_probe").run(_params(), {"data": 11, "init": 23}, ctx=PLAIN)
    assert c.info["split"]["checksum"] == a.info["split"]["checksum"]
    assert c.info["pretrain"]["loss"] != a.info["pretrain"]["loss"]
    d = TASKS.get("contrastive_probe").run(_params(), {"data": 12, "init": 22}, ctx=PLAIN)
    assert d.info["split"]["checksum"] != a.info["split"]["checksum"]


def test_global_rng_untouched(fake_data):
    torch.manual_seed(5)
    before = torch.random.get_rng_state()
    TASKS.get("contrastive_probe").run(_params(), SEEDS, ctx=PLAIN)
    assert torch.equal(before, torch.random.get_rng_state())


@pytest.mark.parametrize("down", [
    {"name": "finetune", "risk": "upu", "epochs": 2, "batch_size": 64, "optimizer": {"name": "adam", "lr": 1e-3}},
    {"name": "pupl", "orientation": "nearest_positive_mean", "normalize": True, "epochs": 3, "batch_size": 64},
    {"name": "linear_probe", "risk": "pn", "epochs": 2, "batch_size": 64, "prior": 0.3},
])
def test_other_downstreams(fake_data, down):
    out = TASKS.get("contrastive_probe").run(_params(downstream=down), SEEDS, ctx=PLAIN)
    assert set(out.metrics) == BINARY
    _check_record(out)


def test_multiclass_none_split_with_pretrain_split_and_bcl_schedules(fake_data):
    p = _params(
        data={"dataset": "stl10", "split": {"kind": "none"}, "pretrain_split": "train+unlabeled",
              "subset": {"train": 200, "test": 80, "pretrain": 300}},
        model={"backbone": {"name": "resnet18_cifar", "width": 0.0625}, "projector": {"hidden": "features", "out": 8}},
        downstream={"name": "linear_probe", "risk": "pn", "epochs": 2, "batch_size": 64},
    )
    p["pretrain"]["loss"] = {"name": "bayesian", "temperature": 0.5, "tau_plus": 0.1,
                             "alpha_schedule": [{"until_epoch": 1, "value": 0.5}, {"until_epoch": 2, "value": 0.7}],
                             "beta_schedule": {"kind": "linear", "start": 2.0, "per_epoch": -0.005, "update_every": 20}}
    out = TASKS.get("contrastive_probe").run(p, SEEDS, ctx=PLAIN)
    assert set(out.metrics) == {"acc"}
    info = out.info
    assert info["n_pretrain"] == 300 and info["n_train_examples"] == 200 and info["n_test"] == 80
    assert "pretrain" in info["data_source"]
    assert info["pretrain"]["scheduled"]["alpha"] == [0.5, 0.7]
    assert ("stl10", "train+unlabeled") in fake_data


def test_input_size_resizes_and_rgb(fake_data, monkeypatch):
    monkeypatch.setattr(common, "_load", lambda source, name, split: _fake(200 if split == "train" else 60, 3, c=3,
                                                                            side=16))
    p = _params(
        data={"dataset": "cifar10", "labels": {"positive": [0, 1, 8, 9]}, "input_size": [3, 12, 12],
              "split": {"kind": "pnu", "labeled_fraction": 0.2}},
        model={"backbone": {"name": "mlp_001", "hidden": 16, "out_dim": 8, "input_size": 12},
               "projector": {"hidden": 8, "out": 8}},
        downstream={"name": "linear_probe", "risk": "pn", "epochs": 2, "batch_size": 64},
    )
    p["pretrain"]["loss"] = {"name": "punce_pnu", "temperature": 0.5, "prior": 0.4}
    p["pretrain"]["augment"] = {"name": "simclr"}
    out = TASKS.get("contrastive_probe").run(p, SEEDS, ctx=PLAIN)
    assert out.info["input_shape"] == [3, 12, 12] and "resized" in out.info
    assert out.info["split"]["counts"]["n_labeled_pos"] > 0


def test_resize_in_chunks_equals_one_resize_of_all(monkeypatch):
    """The resize goes a bounded number of values at a time (its float copies fit a CPU's memory); each
    image is resized on its own, so the chunks change no value."""
    import torch.nn.functional as F

    import pubench.data.pixels as A

    x = torch.randint(0, 256, (7, 1, 10, 9), generator=torch.Generator().manual_seed(0), dtype=torch.uint8)
    whole = F.interpolate(x.float(), size=(12, 12), mode="bilinear", antialias=True, align_corners=False)
    whole = whole.round().clamp(0, 255).to(torch.uint8)
    images = ImageSet(x, torch.arange(7), ["a"], "fake")
    sizes, interpolate = [], F.interpolate
    monkeypatch.setattr(F, "interpolate", lambda v, **kw: sizes.append(len(v)) or interpolate(v, **kw))
    monkeypatch.setattr(A, "FLOAT_CHUNK_VALUES", 12 * 12 * 2)  # 2 resized images a chunk
    out, note = common._resize(images, [1, 12, 12])
    assert sizes == [2, 2, 2, 1]
    assert out.x.dtype == torch.uint8 and torch.equal(out.x, whole) and "resized (10, 9) -> (12, 12)" in note
    monkeypatch.setattr(A, "FLOAT_CHUNK_VALUES", 1)  # one image a chunk
    assert torch.equal(common._resize(images, [1, 12, 12])[0].x, whole)


def test_pu_benchmark_end_to_end(fake_data):
    p = {"data": _params()["data"], "model": {"backbone": {"name": "mlp_001", "hidden": 32, "out_dim": 8,
                                                           "input_size": 12}},
         "pu_method": {"name": "nnpu", "loss": "sigmoid", "beta": 0.0, "gamma": 1.0},
         "train": {"epochs": 3, "batch_size": 64, "optimizer": {"name": "adam", "lr": 1e-3, "weight_decay": 5e-3}}}
    out = TASKS.get("pu_benchmark").run(p, SEEDS, ctx=PLAIN)
    assert set(out.metrics) == BINARY
    _check_record(out)
    assert out.info["pu_method"]["name"] == "nnpu" and out.info["epochs_run"] == 3
    again = TASKS.get("pu_benchmark").run(copy.deepcopy(p), SEEDS, ctx=PLAIN)
    assert again.metrics == out.metrics
    # the contrastive row of the same table sees the same split
    con = TASKS.get("pu_benchmark").run(_params(), SEEDS, ctx=PLAIN)
    assert con.info["split"]["checksum"] == out.info["split"]["checksum"]
    _check_record(con)


def test_data_prior_and_case_control(fake_data):
    p = _params()
    p["data"]["prior"] = 0.45
    p["data"]["split"] = {"kind": "pu", "n_labeled": 30, "scheme": "case_control"}
    out = TASKS.get("contrastive_probe").run(p, SEEDS, ctx=PLAIN)
    assert out.info["split"]["prior"] == 0.45
    assert out.info["split"]["counts"]["prior_exact"] == pytest.approx(0.5)
    assert out.info["downstream"]["prior_used"] == 0.45
    assert out.info["n_train_examples"] == 330


def test_eval_at_epoch_is_a_prefix_of_the_full_run(fake_data):
    full = _params()
    full["pretrain"]["epochs"] = 3
    part = copy.deepcopy(full)
    part["pretrain"]["eval_at_epoch"] = 2
    a = TASKS.get("contrastive_probe").run(full, SEEDS, ctx=PLAIN).info
    b = TASKS.get("contrastive_probe").run(part, SEEDS, ctx=PLAIN).info
    assert b["epochs_run"] == 2 and b["pretrain"]["loss"] == a["pretrain"]["loss"][:2]


def test_balanced_test_sampling(fake_data):
    p = _params()
    p["data"]["labels"] = {"positive": [1, 3]}  # 20 positives / 80 negatives in the fake test set
    p["data"]["test_sampling"] = "balanced"
    out = TASKS.get("contrastive_probe").run(p, SEEDS, ctx=PLAIN)
    assert out.info["n_test"] == 40 and "balanced" in out.info["data_source"]["test"]


@pytest.mark.parametrize("mutate,match", [
    (lambda p: p.update(extra=1), "unknown key 'extra'"),
    (lambda p: p.pop("downstream"), "missing key 'downstream'"),
    (lambda p: p["data"].update(subsett={}), "unknown key 'subsett'"),
    (lambda p: p["pretrain"].update(framework={"name": "moco", "queue": 4096}), "framework"),
    (lambda p: p["pretrain"]["loss"].update(tau_plus=0.1), "takes no"),
    (lambda p: p["downstream"].update(risk="hinge"), "risk"),
    (lambda p: p["downstream"].update(name="knn"), "downstream"),
    (lambda p: p["model"].update(classifier={"name": "linear"}), "classifier"),
    (lambda p: p["data"].update(subset={"train": 1}), "subset"),
    (lambda p: p["data"].update(pretrain_split="train+unlabeled"), "pretrain_split"),
    (lambda p: p["pretrain"].update(eval_at_epoch=5), "eval_at_epoch"),
    (lambda p: p["downstream"].update(risk="vpu"), "risk"),
    (lambda p: p["downstream"].update(lam=0.03), "unknown key 'lam'"),
    (lambda p: p["downstream"].update(name="nnpu_mixup_probe"), "mixup"),
    (lambda p: p["data"].update(test_sampling="stratified"), "test_sampling"),
])
def test_param_errors(fake_data, mutate, match):
    p = _params()
    mutate(p)
    with pytest.raises(ConfigError, match=match):
        TASKS.get("contrastive_probe").run(p, SEEDS, ctx=PLAIN)
    assert not fake_data  # validation fails before any data is loaded


def test_pu_benchmark_errors(fake_data):
    with pytest.raises(ConfigError, match="either"):
        TASKS.get("pu_benchmark").run({"data": {}, "model": {}}, SEEDS, ctx=PLAIN)
    p = {"data": _params()["data"], "model": {"backbone": {"name": "mlp_001"}},
         "pu_method": {"name": "no_such_method"}, "train": {"epochs": 1, "batch_size": 8, "optimizer": {"name": "adam", "lr": 1e-3}}}
    with pytest.raises(ConfigError, match="unknown pu_method"):
        TASKS.get("pu_benchmark").run(p, SEEDS, ctx=PLAIN)
    p["pu_method"] = {"name": "upu", "gamma": 2.0}
    with pytest.raises(ConfigError, match="nnPU"):
        TASKS.get("pu_benchmark").run(p, SEEDS, ctx=PLAIN)
    p["pu_method"] = {"name": "upu"}
    p["train"]["momentum"] = 0.9
    with pytest.raises(ConfigError, match="unknown key 'momentum'"):
        TASKS.get("pu_benchmark").run(p, SEEDS, ctx=PLAIN)


# ------------------------------------------------------------------ real data (make test-all)
def test_real_mnist_small(shared_image_root, monkeypatch):
    monkeypatch.setenv("PUBENCH_DATA", str(shared_image_root))
    p = _params(data={"dataset": "mnist", "labels": {"positive": [1, 3, 5, 7, 9]},
                      "split": {"kind": "pu", "n_labeled": 100, "scheme": "single_training_set"},
                      "subset": {"train": 2000, "test": 500}},
                model={"backbone": {"name": "mlp_001", "hidden": 256, "out_dim": 32},
                       "projector": {"hidden": 64, "out": 32}})
    p["pretrain"]["epochs"] = 3
    p["pretrain"]["augment"] = {"name": "mnist_crop", "size": 28, "scale": [0.5, 1.0]}
    out = TASKS.get("contrastive_probe").run(p, SEEDS, ctx=PLAIN)
    assert out.metrics["acc"] > 60
    assert "mnist" in out.info["data_source"]["train"].lower()
