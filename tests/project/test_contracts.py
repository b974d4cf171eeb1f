"""Contract tests: every registered unit of every kind runs the same way on generated data,
as benchopt's ``test_benchmarks.py`` runs every solver. The names come from the
registries, so a unit registered without tests of its own is still tested here: it
builds from its declared ``test_config``, its numbers are
finite, the same seed gives the same numbers, its ``info`` holds the keys its kind
promises, and an unknown config key is a ``ConfigError``. Registries refuse, at
registration, an object that does not implement their kind's interface."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch
from torch import nn

from pubench.data import DATASETS
from pubench.downstream import DOWNSTREAM
from pubench.frameworks import FRAMEWORKS
from pubench.losses import LOSSES
from pubench.losses.base import label_argument
from pubench.models import BACKBONES, build_backbone, count_parameters
from pubench.models.base import check_module
from pubench.pu import PU_METHODS, PUMethod
from pubench.pu.data import DownstreamData
from pubench.tasks import TASKS
from pubench.train.context import PLAIN
from pubench.train.loop import TrainConfig
from pubench.train.optim import optimizer_config
from pubench.utils.config import ConfigError
from pubench.utils.result import Result

pytestmark = pytest.mark.usefixtures("one_thread")

SEEDS = {"data": 3, "init": 4}
UNKNOWN = {"no_such_key": 1}


def finite_metrics(metrics: dict) -> None:
    assert metrics and all(isinstance(v, float) and math.isfinite(v) for v in metrics.values()), metrics


# ------------------------------------------------------------------ generated data
def images(n: int, seed: int, side: int = 6) -> tuple[torch.Tensor, torch.Tensor]:
    """uint8 (n, 1, side, side), binary labels: class 1 has a bright top-left block."""
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(n) % 2
    x = torch.randint(0, 80, (n, 1, side, side), generator=g)
    x[y == 1, :, :3, :3] += 150
    return x.clamp(0, 255).to(torch.uint8), y


def pu_data(n: int = 80, seed: int = 0) -> DownstreamData:
    """A binary PU split (single training set): a third of the positives labeled."""
    x, y = images(n, seed)
    xt, yt = images(40, seed + 1)
    observed = ((y == 1) & (torch.arange(n) % 3 == 0)).long()
    prior = float((y[observed == 0] == 1).float().mean())
    return DownstreamData(x_train=x, observed=observed, y_true=y, split_kind="pu", n_classes=2, prior=prior,
                          x_test=xt, y_test=yt, mean=[0.3], std=[0.3], pu_scheme="single_training_set",
                          validation={"fraction": 0.25, "labels": "clean"})


class TinyEncoder(nn.Module):
    """Flatten + Linear + ReLU, seeded: an encoder for units that take one."""

    def __init__(self, seed: int = 0, d_in: int = 36, out_dim: int = 8):
        super().__init__()
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.lin = nn.Linear(d_in, out_dim)
        self.out_dim = out_dim

    def forward(self, x):
        return torch.relu(self.lin(x.flatten(1)))


def synthetic_image_set(name: str, split: str, root=None):
    """Stands in for ``load_images``: 10 classes of 1x12x12 images, a bright block per class."""
    from pubench.data.images import ImageSet

    n = {"train": 200, "test": 80}.get(split, 80)
    g = torch.Generator().manual_seed(len(split))
    y = torch.arange(n) % 10
    x = torch.randint(0, 60, (n, 1, 12, 12), generator=g)
    for k in range(10):
        r, q = divmod(k, 4)
        x[y == k, :, 3 * r:3 * r + 3, 3 * q:3 * q + 3] += 180
    return ImageSet(x.clamp(0, 255).to(torch.uint8), y, [str(k) for k in range(10)], f"generated ({name} {split})")


def write_gin_graphs(root, spec, n_per_class: int = 12, seed: int = 0) -> None:
    """Graph data set ``spec`` under ``root`` in the format it is read from (``spec.reads``: a
    GIN-format file, or TU raw files): cycles (class 0) and stars (class 1) with random node
    tags 0..2."""
    rng = np.random.default_rng(seed)
    lines = [str(2 * n_per_class)]
    graphs = []
    for label in (0, 1):
        for _ in range(n_per_class):
            n = int(rng.integers(5, 10))
            edges = [(i, (i + 1) % n) for i in range(n)] if label == 0 else [(0, i) for i in range(1, n)]
            nbrs = [[] for _ in range(n)]
            for u, v in edges:
                nbrs[u].append(v)
                nbrs[v].append(u)
            tags = [int(rng.integers(0, 3)) for _ in range(n)]
            graphs.append((label, tags, edges))
            lines.append(f"{n} {label}")
            lines += [" ".join(map(str, [t, len(nb), *nb])) for t, nb in zip(tags, nbrs)]
    if spec.reads == "tu":
        folder, first, rows = root / "tu" / spec.tu_name, 1, {"A": [], "graph_indicator": [], "graph_labels": [],
                                                                "node_labels": []}
        for g, (label, tags, edges) in enumerate(graphs, start=1):
            rows["graph_labels"].append(str(label))
            rows["graph_indicator"] += [str(g)] * len(tags)
            rows["node_labels"] += [str(t) for t in tags]
            rows["A"] += [f"{first + u}, {first + v}" for a, b in edges for u, v in ((a, b), (b, a))]
            first += len(tags)
        folder.mkdir(parents=True, exist_ok=True)
        for part, lines_ in rows.items():
            (folder / f"{spec.tu_name}_{part}.txt").write_text("\n".join(lines_) + "\n")
        return
    path = root / "gin" / spec.gin_name / f"{spec.gin_name}.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


def write_glue_tsv(root, folder: str) -> None:
    """Tiny GLUE-layout train/dev tsv files (12 / 6 sentences, both classes) under ``root/folder``."""
    words = ["good", "great", "fine", "warm", "witty", "smart", "bad", "dull", "ugly", "weak", "tired", "flat"]
    rows = "".join(f"a {w} film\t{int(k < 6)}\n" for k, w in enumerate(words))
    (root / folder).mkdir(parents=True, exist_ok=True)
    (root / folder / "train.tsv").write_text("sentence\tlabel\n" + rows)
    (root / folder / "dev.tsv").write_text("sentence\tlabel\n" + "".join(rows.splitlines(True)[::2]))


def skip_without(unit) -> None:
    """Skip a unit whose optional dependencies (``requires``: module names) are missing."""
    import importlib.util

    missing = [m for m in getattr(unit, "requires", ()) if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"needs {', '.join(missing)} (an optional extra, e.g. pip install -e '.[text]')")


@pytest.fixture
def generated_data(tmp_path, monkeypatch):
    """Image data sets read generated images; graph data sets find generated GIN files and
    text data sets generated GLUE tsv files under a temporary data root."""
    import pubench.data.images as images_mod
    from pubench.data import source
    from pubench.data.graphs import GraphDatasetSpec

    monkeypatch.setattr(images_mod, "load_images", synthetic_image_set)
    for name in DATASETS.names():
        ds = DATASETS.get(name)
        if isinstance(ds, GraphDatasetSpec):
            write_gin_graphs(tmp_path, ds)
        elif ds.modality == "text":
            write_glue_tsv(tmp_path, ds.folder)
    monkeypatch.setenv("PUBENCH_DATA", str(tmp_path))
    source._graphs.cache_clear()
    yield tmp_path
    source._graphs.cache_clear()


# ------------------------------------------------------------------ tasks
@pytest.mark.parametrize("name", TASKS.names())
def test_task(name, generated_data):
    task = TASKS.get(name)
    skip_without(task)
    params = copy.deepcopy(task.test_config)
    task.validate(copy.deepcopy(params))
    a = task.run(copy.deepcopy(params), dict(SEEDS), ctx=PLAIN)
    b = task.run(copy.deepcopy(params), dict(SEEDS), ctx=PLAIN)
    assert isinstance(a, Result)
    finite_metrics(a.metrics)
    assert a.metrics == b.metrics
    assert set(task.info_keys) <= set(a.info), set(task.info_keys) - set(a.info)
    with pytest.raises(ConfigError, match="no_such_key"):
        task.validate({**copy.deepcopy(params), **UNKNOWN})


# ------------------------------------------------------------------ losses
def _label_kwargs(fn, b: int, g: torch.Generator) -> dict:
    arg = label_argument(fn)
    if arg == "labeled":
        return {"labeled": torch.arange(b) % 3 == 0}
    if arg == "labels":
        return {"labels": torch.randint(0, 2, (b,), generator=g)}
    return {}


@pytest.mark.parametrize("name", LOSSES.names())
def test_loss(name):
    from pubench.frameworks.pretrain import LossCall

    fn = LOSSES.get(name)
    hyper = dict(fn.test_config)
    g = torch.Generator().manual_seed(0)
    b = 6
    z1 = torch.randn(b, 5, generator=g, dtype=torch.float64, requires_grad=True)
    z2 = torch.randn(b, 5, generator=g, dtype=torch.float64)
    labels = _label_kwargs(fn, b, g)
    loss = fn(z1, z2, **labels, **hyper)
    assert loss.dim() == 0 and torch.isfinite(loss)
    assert torch.equal(loss, fn(z1, z2, **labels, **hyper))
    per_anchor = fn(z1, z2, **labels, **hyper, reduction="none")
    assert per_anchor.dim() == 1 and torch.isfinite(per_anchor).all()
    torch.testing.assert_close(per_anchor.mean(), loss)
    torch.testing.assert_close(fn(z1, z2, **labels, **hyper, reduction="sum"), per_anchor.sum())
    loss.backward()
    assert torch.isfinite(z1.grad).all()
    # the spec's path: LossCall builds the loss from its config, and refuses unknown keys
    LossCall({"name": name, **hyper}, prior=0.5)
    with pytest.raises(ConfigError, match="no_such_key"):
        LossCall({"name": name, **hyper, **UNKNOWN}, prior=0.5)
    logits = getattr(fn, "from_logits", None)
    if logits is not None:
        import inspect

        takes = inspect.signature(logits).parameters
        pos = torch.randn(4, generator=g, dtype=torch.float64)
        neg = torch.randn(4, 5, generator=g, dtype=torch.float64)
        mask = torch.ones(4, 5, dtype=torch.bool)
        mask[0, :2] = False
        out = logits(pos, neg, neg_mask=mask, reduction="none", **{k: v for k, v in hyper.items() if k in takes})
        assert out.shape == (4,) and torch.isfinite(out).all()


# ------------------------------------------------------------------ frameworks
@pytest.mark.parametrize("name", FRAMEWORKS.names())
def test_framework(name):
    from pubench.frameworks.pretrain import PretrainConfig, build_framework, build_models, pretrain
    from pubench.models.heads import projection_head

    cls = FRAMEWORKS.get(name)
    block = {"name": name, **cls.test_config}
    with pytest.raises(ConfigError, match="no_such_key"):
        cls.config({**block, **UNKNOWN}, "framework")
    x = torch.cat([images(48, 0)[0], images(48, 1)[0], images(48, 2)[0]], dim=1)  # RGB (CMC needs colour)
    mean, std = [0.3] * 3, [0.3] * 3
    cfg = PretrainConfig(framework=block, loss={"name": "info_nce", "temperature": 0.5}, epochs=2, batch_size=16,
                         optimizer=optimizer_config({"name": "adam", "lr": 0.01}), augment={"name": "mnist_crop", "scale": [0.7, 1.0]})

    def models():
        return build_models(block, lambda ch, s: TinyEncoder(s % 1000, d_in=36 * ch),
                            lambda dim, s: projection_head(dim, 8, 4), 3, (1, 2), mean, std)

    def run():
        torch.manual_seed(0)
        enc, proj = models()
        hist = pretrain(enc, proj, x, None, cfg, normalization=(mean, std), prior=None, seed=5, ctx=PLAIN)
        return hist, enc

    (h1, e1), (h2, e2) = run(), run()
    assert len(h1["loss"]) == 2 and all(math.isfinite(v) for v in h1["loss"])
    assert h1["loss"] == h2["loss"]
    assert all(torch.equal(a, b) for a, b in zip(e1.state_dict().values(), e2.state_dict().values(), strict=True))
    assert e1(torch.rand(5, 3, 6, 6)).shape == (5, e1.out_dim)
    framework = build_framework(block, *models())
    v = torch.rand(5, 3, 6, 6)
    z1, z2 = framework.projections(v, v.flip(0))
    assert z1.shape == z2.shape == (5, 4)
    assert {id(p) for m in framework.modules() for p in m.parameters()}


# ------------------------------------------------------------------ PU methods
TRAIN = TrainConfig(epochs=2, batch_size=16, optimizer=optimizer_config({"name": "adam", "lr": 0.01}))


@pytest.mark.parametrize("name", PU_METHODS.names())
def test_pu_method(name):
    unit = PU_METHODS.get(name)
    block = {"name": name, **unit.test_config}
    cfg = unit.config(block, "pu_method")
    unit.check_train(cfg, TRAIN, "params")
    with pytest.raises(ConfigError, match="no_such_key"):
        unit.config({**block, **UNKNOWN}, "pu_method")
    data = pu_data()

    def extra():
        from pubench.models.heads import projection_head

        torch.manual_seed(3)
        return {"projector": projection_head(8, 8, 4)} if unit.uses_projector else {}

    unit.check_run(cfg, TRAIN, data, **extra())  # the caller checks: the method trusts its inputs
    first = unit.run(cfg, TinyEncoder(2), TRAIN, data, seed=7, ctx=PLAIN, **extra())
    assert isinstance(first, Result)
    m1, i1 = first
    m2, i2 = unit.run(cfg, TinyEncoder(2), TRAIN, data, seed=7, ctx=PLAIN, **extra())
    finite_metrics(m1)
    for key in unit.wall_clock_metrics:
        assert m1.pop(key) > 0 and m2.pop(key) > 0
    assert m1 == m2
    assert set(unit.info_keys) <= set(i1), set(unit.info_keys) - set(i1)
    if unit.classifier_config is None:
        with pytest.raises(ConfigError, match="classifier"):
            unit.classifier({"name": "linear"}, "params.model.classifier")


def test_every_unit_is_named_by_its_registration():
    """A unit never repeats its own name: registering it sets ``name`` (classes and
    functions); a data set instance carries the name it is registered under."""
    for registry in (TASKS, LOSSES, FRAMEWORKS, PU_METHODS, DOWNSTREAM, BACKBONES, DATASETS, EXECUTORS):
        for name in registry.names():
            assert registry.get(name).name == name, (registry.kind, name)


def test_a_minimal_pu_method_needs_no_check_of_its_own(generated_data):
    """A new PU method that declares only its config, test config and ``run`` runs through
    the task: the caller's ``check_run`` uses the base ``check`` (issue 35: it called
    ``check(cfg)`` without ``where``, a TypeError for any method that did not override it),
    and the registration names it."""
    from dataclasses import dataclass

    from pubench.pu.objective import RiskSettings, make_targets, train_and_evaluate
    from pubench.train.classifier import seeded_head

    @dataclass(frozen=True)
    class MinimalConfig:
        name: str

    class Minimal(PUMethod):
        config_cls = MinimalConfig
        test_config = {}

        @classmethod
        def run(cls, cfg, backbone, train, data, seed, ctx, classifier=None):
            model = nn.Sequential(backbone, seeded_head(backbone.out_dim, 1, seed))
            targets = make_targets("upu", "pu", data.observed, data.y_true, 2)
            metrics, risks = train_and_evaluate(model, train, targets, RiskSettings("upu", data.prior), data, seed,
                                                seed, ctx, cls.name)
            return Result(metrics, {"risk": "upu", "prior_used": data.prior, "prior_source": "run"})

    task = TASKS.get("pu_benchmark")
    params = copy.deepcopy(task.test_config)
    params["pu_method"] = {"name": "minimal"}
    with PU_METHODS.registered("minimal", Minimal):
        assert Minimal.name == "minimal" and "check" not in vars(Minimal)
        out = task.run(copy.deepcopy(params), dict(SEEDS), ctx=PLAIN)
        finite_metrics(out.metrics)
        assert out.info["pu_method"]["name"] == "minimal"
        with pytest.raises(ConfigError, match="needs a binary PU split"):
            Minimal.check_run(MinimalConfig("minimal"), TRAIN, DownstreamData(**{**vars(pu_data()), "split_kind": "pnu"}))


def test_a_pu_method_may_bring_its_own_classifier_head(generated_data):
    """``model.classifier`` is routed to a method that declares ``classifier_config`` (WConPU
    will) and refused for the others, with the key named."""
    from dataclasses import dataclass

    from pubench.pu.end_to_end import NNPU

    @dataclass(frozen=True)
    class HeadConfig:
        name: str
        hidden: int

    seen = {}

    class WithHead(NNPU):
        classifier_config = HeadConfig

        @classmethod
        def run(cls, cfg, backbone, train, data, seed, ctx=PLAIN, classifier=None):
            seen["classifier"] = classifier
            return super().run(cfg, backbone, train, data, seed, ctx)

    task = TASKS.get("pu_benchmark")
    params = copy.deepcopy(task.test_config)
    params["model"]["classifier"] = {"name": "mlp", "hidden": 4}
    with pytest.raises(ConfigError, match="params.model.classifier"):
        task.validate(copy.deepcopy(params))  # nnpu trains the standard head
    with PU_METHODS.registered("nnpu_with_head", WithHead):
        params["pu_method"]["name"] = "nnpu_with_head"
        task.run(copy.deepcopy(params), dict(SEEDS), ctx=PLAIN)
        assert seen["classifier"] == HeadConfig("mlp", 4)
        params["model"]["classifier"]["depth"] = 2
        with pytest.raises(ConfigError, match="params.model.classifier: unknown key 'depth'"):
            task.validate(params)
    assert "nnpu_with_head" not in PU_METHODS


def test_wconpu_through_pu_benchmark(generated_data):
    """The task hands WConPU its projector (model.projector), its classifier block and the
    clean validation rows (data.validation), and records that the validation set was used."""
    task = TASKS.get("pu_benchmark")
    unit = PU_METHODS.get("wconpu")
    params = copy.deepcopy(task.test_config)
    params["data"]["validation"] = {"fraction": 0.2, "labels": "clean", "use": "trade_off_selection"}
    params["pu_method"] = {"name": "wconpu", **copy.deepcopy(unit.test_config)}
    params["pu_method"]["augment"] = {"query": {"name": "mnist_crop"}, "key": {"name": "randaugment", "num_ops": 1}}
    with pytest.raises(ConfigError, match="classifier"):
        task.validate(copy.deepcopy(params))
    params["model"]["classifier"] = {"name": "linear", "shared_encoder": True}
    with pytest.raises(ConfigError, match="projector"):
        task.validate(copy.deepcopy(params))
    params["model"]["projector"] = {"hidden": 8, "out": 4}
    out = task.run(copy.deepcopy(params), dict(SEEDS), ctx=PLAIN)
    pm = out.info["pu_method"]
    assert pm["name"] == "wconpu" and pm["validation_used"] and pm["n_validation"] == 24
    assert out.info["validation"]["used"] is True
    assert {"acc", "auc", "ap", "f1", "precision", "recall", "time"} <= set(out.metrics)
    assert out.info["wall_clock_metrics"] == ["time"]


# ------------------------------------------------------------------ downstream classifiers
@pytest.mark.parametrize("name", DOWNSTREAM.names())
def test_downstream(name):
    unit = DOWNSTREAM.get(name)
    block = {"name": name, **unit.test_config}
    cfg = unit.config(block, "downstream")
    with pytest.raises(ConfigError, match="no_such_key"):
        unit.config({**block, **UNKNOWN}, "downstream")
    data = pu_data()
    first = unit.run(cfg, TinyEncoder(3), data, seed=9, ctx=PLAIN)
    assert isinstance(first, Result)
    m1, i1 = first
    m2, i2 = unit.run(cfg, TinyEncoder(3), data, seed=9, ctx=PLAIN)
    finite_metrics(m1)
    assert m1 == m2
    assert set(unit.info_keys) <= set(i1), set(unit.info_keys) - set(i1)


# ------------------------------------------------------------------ optimizers and schedules
from pubench.train.optim import OPTIMIZERS, SCHEDULES, build_optimizer, build_scheduler, schedule_config  # noqa: E402


@pytest.mark.parametrize("name", OPTIMIZERS.names())
def test_optimizer(name):
    """Every registered optimizer builds from a config with the options it ``uses``, takes a
    finite step on a seeded model, and refuses an unknown key."""
    block = {"name": name, "lr": 0.1, **({"momentum": 0.9} if "momentum" in OPTIMIZERS.get(name).uses else {})}
    torch.manual_seed(0)
    model = nn.Linear(3, 1)
    before = [p.detach().clone() for p in model.parameters()]
    opt = build_optimizer(optimizer_config(block), model)
    model(torch.ones(4, 3)).square().mean().backward()
    opt.step()
    after = list(model.parameters())
    assert all(torch.isfinite(p).all() for p in after) and any(not torch.equal(a, b) for a, b in zip(before, after))
    with pytest.raises(ConfigError, match="no_such_key"):
        optimizer_config({**block, **UNKNOWN})


@pytest.mark.parametrize("name", SCHEDULES.names())
def test_schedule(name):
    """Every registered schedule multiplies the base lr by a factor in [0, 1] at each step."""
    block = {"name": name, **({"warmup_epochs": 1.0} if SCHEDULES.get(name).warmup else {})}
    opt = torch.optim.SGD(nn.Linear(2, 1).parameters(), lr=1.0)
    sched = build_scheduler(schedule_config(block), opt, steps_per_epoch=3, epochs=4)
    lrs = []
    for _ in range(12):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    assert all(0.0 <= lr <= 1.0 for lr in lrs), lrs


# ------------------------------------------------------------------ backbones
def _graph_batch(features: int, seed: int = 0):
    from torch_geometric.data import Batch, Data

    g = torch.Generator().manual_seed(seed)
    graphs = []
    for n in (4, 5, 6):
        ring = torch.tensor([[i, (i + 1) % n] for i in range(n)]).t()
        graphs.append(Data(x=torch.rand(n, features, generator=g), edge_index=torch.cat([ring, ring.flip(0)], 1)))
    b = Batch.from_data_list(graphs)
    return (b.x, b.edge_index, b.batch, b.num_graphs), b.num_graphs


@pytest.mark.parametrize("name", BACKBONES.names())
def test_backbone(name):
    factory = BACKBONES.get(name)
    skip_without(factory)
    tc = factory.test_config
    text = isinstance(tc["input"], dict) and "tokens" in tc["input"]
    graph = isinstance(tc["input"], dict) and not text
    channels = tc["input"]["graph_features"] if graph else 0 if text else tc["input"][0]
    # the paper-size model on the meta device: built without allocating any weight (a text
    # backbone's architecture, without its pretrained weights)
    with torch.device("meta"):
        big = factory(channels, **(tc["kwargs"] if graph else {"pretrained": False} if text else {}))
    check_module(name, big)
    assert count_parameters(big) > 0 and all(p.is_meta for p in big.parameters())
    # the small one: seeded init, forward and backward on generated input
    state = torch.get_rng_state()
    m = build_backbone(name, channels, seed=1, **tc["kwargs"])
    again = build_backbone(name, channels, seed=1, **tc["kwargs"])
    assert torch.equal(torch.get_rng_state(), state)
    assert all(torch.equal(a, b) for a, b in zip(m.state_dict().values(), again.state_dict().values()))
    check_module(name, m)
    if graph:
        args, n = _graph_batch(channels)
        out = m(*args)
        out = out[0] if isinstance(out, tuple) else out
    elif text:
        n = 4
        out = m(torch.randint(0, tc["input"]["tokens"], (n, 7), generator=torch.Generator().manual_seed(0)))
    else:
        n = 4
        out = m(torch.rand(n, *tc["input"], generator=torch.Generator().manual_seed(0)))
    assert out.shape == (n, m.out_dim) and torch.isfinite(out).all()
    out.square().mean().backward()
    grads = [p.grad for p in m.parameters() if p.requires_grad]
    assert grads and all(gr is not None and torch.isfinite(gr).all() for gr in grads)


# ------------------------------------------------------------------ datasets
@pytest.mark.parametrize("name", DATASETS.names())
def test_dataset_miss_says_what_to_place(name, tmp_path):
    """On an empty data root: ``availability`` names the data set and the prepare command,
    and ``load`` raises FileNotFoundError with that message (jobs never download)."""
    ds = DATASETS.get(name)
    assert ds.name == name and ds.modality in ("image", "graph", "text")
    why = ds.availability(tmp_path)
    assert why and name in why and "pubench prepare" in why
    with pytest.raises(FileNotFoundError, match="pubench prepare"):
        ds.load(tmp_path) if ds.modality == "graph" else ds.load("train", tmp_path)


# ------------------------------------------------------------------ registration checks
def _loss_without_test_config(z1, z2, temperature, *, reduction="mean"):
    return z1.sum()


def _loss_with_a_default(z1, z2, temperature=0.5, *, reduction="mean"):
    return z1.sum()


REFUSED = [
    (TASKS, "a function", lambda params, seeds: {}, "must subclass"),
    (PU_METHODS, "a plain class", type("Plain", (), {"config_cls": dict, "test_config": {}}), "must subclass"),
    (PU_METHODS, "no run", type("NoRun", (PUMethod,), {"config_cls": dict, "test_config": {}}), "does not implement run"),
    (DOWNSTREAM, "no test_config", None, "test_config"),
    (FRAMEWORKS, "a function", lambda enc, proj, cfg: None, "must subclass"),
    (LOSSES, "no test_config", _loss_without_test_config, "test_config"),
    (LOSSES, "a default", _loss_with_a_default, "have defaults"),
    (LOSSES, "wrong views", lambda x, y, *, reduction="mean": x, "z1, z2"),
    (BACKBONES, "no test_config", lambda in_channels: nn.Identity(), "test_config"),
    (DATASETS, "not a Dataset", object(), "Dataset"),
]


@pytest.mark.parametrize("registry,what,obj,match", REFUSED, ids=[f"{r.kind}-{w}" for r, w, _, _ in REFUSED])
def test_registries_refuse_what_does_not_implement_their_interface(registry, what, obj, match):
    if obj is None:  # a downstream class without test_config
        from pubench.downstream import Downstream

        obj = type("NoTestConfig", (Downstream,), {"config_cls": dict, "run": classmethod(lambda cls, *a: ({}, {}))})
    with pytest.raises(TypeError, match=match):
        registry.register("refused_unit", obj)
    assert "refused_unit" not in registry


REGISTRIES = [TASKS, LOSSES, FRAMEWORKS, PU_METHODS, DOWNSTREAM, BACKBONES, DATASETS]


@pytest.mark.parametrize("registry", REGISTRIES, ids=[r.kind for r in REGISTRIES])
def test_a_spec_block_names_its_unit(registry):
    """``Registry.named``: the one way a spec block ``{name: ...}`` becomes its unit, with a
    ConfigError that says where for a block without a name or with a misspelt one."""
    name = registry.names()[0]
    assert registry.named({"name": name, "any_option": 1}, "params.x") is registry.get(name)
    with pytest.raises(ConfigError, match=r"^params\.x: expected a mapping with 'name'"):
        registry.named([name], "params.x")
    with pytest.raises(ConfigError, match=rf"^params\.x\.name: unknown .*did you mean {name!r}"):
        registry.named({"name": name + "_"}, "params.x")


# ------------------------------------------------------------------ executors
from pubench.executors import EXECUTORS  # noqa: E402
from pubench.executors.base import ExecutorContext, Submission  # noqa: E402


@pytest.mark.parametrize("name", EXECUTORS.names())
def test_executor(name, tmp_registry, tmp_path):
    """Every executor plans, submits and (after ``wait``) has written one record per job, with
    the numbers the job gives anywhere; it runs from its ``test_config`` (no cluster here)."""
    from tests.conftest import selftest_spec

    from pubench.jobs import expand
    from pubench.registry import get_spec
    from pubench.store import ResultStore

    tmp_registry(selftest_spec())
    spec = get_spec("table1-bcl")
    jobs = expand(spec, "smoke").jobs
    cls = EXECUTORS.get(name)
    context = ExecutorContext(results_root=tmp_path / "results", logs_root=tmp_path / "logs", spec_id=spec.id,
                              tier="smoke", **cls.test_config)
    assert isinstance(cls.runs_here, bool)
    assert cls.default_device(context) in {"cpu", "cuda"}
    assert isinstance(cls.active_ids(context), set)
    ex = cls.from_context(context)
    plan = ex.plan(jobs)
    assert all(j.id in plan for j in jobs)
    sub = ex.submit(jobs)
    assert isinstance(sub, Submission)
    assert (sub.counts is not None) == cls.runs_here
    if sub.counts is not None:
        assert sub.counts["ok"] == len(jobs)
    ex.wait()
    records = {r["job"]["id"]: r["metrics"] for r in ResultStore(tmp_path / "results").records("smoke", spec.id)}
    assert set(records) == {j.id for j in jobs}
    assert records == {j.id: TASKS.get(j.task).run(j.params, j.seeds, ctx=PLAIN).metrics for j in jobs}
