"""How three baselines behave where their papers or released code leave room: Rank Pruning's
confident counts, PULNS's selector, PAN's classifier eps (the fidelity follow-ups of issue 50
item 7).

Usage: python benchmarks/baseline_fidelity.py {rp,pulns,pan} [--col COL] [--seed N] [--out FILE.jsonl]

Each subcommand reruns committed reduced-tier jobs of table3-pupl (their records' params and
seeds) in this process with the canonical numerics, as benchmarks/reduced_internals.py does; a run
of the record's own config checks that its metrics reproduce the record bit for bit
(``reproduced``), a variant says which key it changed. One JSON line per run; nothing is
written to a store. Needs PUBENCH_DATA.

* ``rp``: RP (2) | F-MNIST-II (default), seed 0: why Rank Pruning calls every test image
  positive. Per cross-validation fold: the confident-count threshold LB (mean out-of-sample
  P(s=1|x) of the fold's labeled positives), the examples at or above it by observed label
  and by hidden label, the fold's rho_1 estimate against the fold's true P(s=0|y=1), and the
  AUC of P(s=1|x) for the hidden label on the fold's unlabeled images; then rho_1, the
  implied P(y=1) = P(s=1) / (1 - rho_1), pi_0, the unlabeled images kept after pruning (and
  how many are negatives), the labeled weight 1 / (1 - rho_1), and the final network's test
  scores. pi_0 reaches 1 exactly when rho_1 >= P(s=0) (the unlabeled share of the training
  set): ``saturates_when_rho1_at_least``. About 1-2 core-minutes (four LeNet-5 trainings).
* ``pulns``: puLNS (1) | CIFAR-I (default), seed 0: the selected share of U per episode
  with the selector as recorded (Adam lr 1e-3, one step per episode) and frozen
  (``--set pu_method.selector_lr=1e-12``: every Adam step moves a weight by about 1e-12),
  and the selector's final weight norm. Does the selection grow because the selector
  learns, or because its inputs (the classifier's features) drift? About 1 core-minute a
  run on CIFAR-I, 40 s on F-MNIST-I.
* ``pan``: PAN (1) | F-MNIST-I (default), seed 0: the record's config (the formula,
  classifier_eps 0) and the released code's eps = 0.01 inside the classifier's logs
  (``--set pu_method.classifier_eps=0.01``): metrics, the final value and the classifier's
  test logits (mean, min, max, share above 0). About 1 core-minute a run.

The lines behind the spec's and the docs' sentences: benchmarks/results/baseline-fidelity-2026-11-29.jsonl.
"""

from __future__ import annotations

import argparse
import copy
import glob
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from reduced_internals import Capture, _reexec  # noqa: E402

SPEC = "table3-pupl"
DEFAULT_COL = {"rp": "F-MNIST-II", "pulns": "CIFAR-I", "pan": "F-MNIST-I"}
ROW = {"rp": "RP (2)", "pulns": "puLNS (1)", "pan": "PAN (1)"}


def _record(row: str, col: str, seed: int) -> dict:
    found = []
    for f in sorted(glob.glob(str(ROOT / "results" / "reduced" / SPEC / "*.json"))):
        rec = json.loads(Path(f).read_text())
        job = rec.get("job", {})
        if (job.get("row"), job.get("col"), job.get("seed_index")) == (row, col, seed) and rec.get("status") == "ok":
            found.append(rec)
    if len(found) != 1:
        raise SystemExit(f"expected one ok record of {SPEC} {row}|{col} seed {seed}, found {len(found)}")
    return found[0]


def _run(record: dict, changes: dict | None = None):
    """The record's job in this process (its params, seeds and numerics), with ``changes``
    ({'pu_method.key': value}) applied to its params."""
    from pubench import numerics
    from pubench.jobs.plan import Job
    from pubench.tasks import TASKS
    from pubench.train.context import JobContext

    os.environ["PUBENCH_ENCODER_CACHE"] = "0"
    job = Job.from_dict(record["job"])
    params = copy.deepcopy(job.params)
    for key, value in (changes or {}).items():
        node = params
        *path, last = key.split(".")
        for part in path:
            node = node[part]
        node[last] = value
    num = numerics.Numerics.from_dict(job.numerics)
    numerics.check_process(num)
    numerics.apply(num)
    return TASKS.get(job.task).run(params, dict(job.seeds), JobContext(numerics=num))


def _head(record: dict, out, changes: dict | None) -> dict:
    job = record["job"]
    line = {"job": job["name"], "id": job["id"], "changes": changes or {},
            "metrics": {k: round(v, 2) for k, v in sorted(out.metrics.items())},
            "record_metrics": {k: round(v, 2) for k, v in sorted(record["metrics"].items())}}
    if not changes:
        line["reproduced"] = out.metrics == record["metrics"]
    return line


def auc(scores, labels) -> float | None:
    """P(score of a positive > score of a negative), ties 1/2 (Mann-Whitney), in %."""
    import torch

    pos, neg = scores[labels == 1].double(), scores[labels != 1].double()
    if not len(pos) or not len(neg):
        return None
    allv = torch.cat([pos, neg])
    order = allv.argsort()
    ranks = torch.empty_like(allv)
    ranks[order] = torch.arange(1, len(allv) + 1, dtype=torch.float64)
    for v in allv.unique():           # mid-ranks for ties
        m = allv == v
        if int(m.sum()) > 1:
            ranks[m] = ranks[m].mean()
    u = float(ranks[: len(pos)].sum()) - len(pos) * (len(pos) + 1) / 2
    return round(100.0 * u / (len(pos) * len(neg)), 2)


def logit_summary(scores) -> dict:
    return {"mean": round(scores.mean().item(), 3), "min": round(scores.min().item(), 3),
            "max": round(scores.max().item(), 3), "share_positive": round((scores > 0).double().mean().item(), 4)}


def test_logits(model, data, ctx):
    import torch

    from pubench.train.classifier import predict, to_float

    model.eval()
    device = ctx.device
    with torch.no_grad():
        return predict(lambda idx: model(to_float(data.x_test[idx].to(device), data.mean, data.std)),
                       data.x_test.shape[0], ctx).reshape(-1)


# ------------------------------------------------------------------ rp
def rp(col: str, seed: int) -> list[dict]:
    from pubench.pu import rank_pruning as rpm

    record = _record(ROW["rp"], col, seed)
    box: dict = {"folds": [], "rates": []}
    with Capture() as cap:
        def folds(observed, k, gen):
            box["folds"] = rpm_folds(observed, k, gen)
            return box["folds"]

        def rate(prob, observed):
            box["rates"].append((prob.clone(), observed.clone()))
            return rpm_rate(prob, observed)

        def prune(prob, observed, pi0):
            keep = rpm_prune(prob, observed, pi0)
            box["prune"] = (prob.clone(), observed.clone(), pi0, keep.clone())
            return keep

        def evaluate(model, data, ctx):
            box["data"], box["test_logits"] = data, test_logits(model, data, ctx)
            return rpm_eval(model, data, ctx)

        rpm_folds, rpm_rate, rpm_prune, rpm_eval = (rpm.stratified_folds, rpm.confident_noise_rate, rpm.prune_mask,
                                                    rpm.evaluate_network)
        cap.patch(rpm, "stratified_folds", folds)
        cap.patch(rpm, "confident_noise_rate", rate)
        cap.patch(rpm, "prune_mask", prune)
        cap.patch(rpm, "evaluate_network", evaluate)
        out = _run(record)
    data = box["data"]
    s, y = data.observed == 1, data.y_true == 1
    fold_lines = []
    for held, (g, s_held) in zip(box["folds"], box["rates"]):
        y_held = y[held]
        lb = float(g[s_held.bool()].mean())
        conf = g >= lb
        u, lab = ~s_held.bool(), s_held.bool()
        fold_lines.append({
            "n": len(held), "lb": round(lb, 4),
            "confident_labeled": int((conf & lab).sum()), "confident_unlabeled": int((conf & u).sum()),
            "confident_unlabeled_hidden_pos": int((conf & u & y_held).sum()),
            "confident_unlabeled_hidden_neg": int((conf & u & ~y_held).sum()),
            "rho1_hat": round(rpm.confident_noise_rate(g, s_held), 4),
            "rho1_true": round(int((u & y_held).sum()) / int(y_held.sum()), 4),
            "rho1_if_no_negative_above_lb": round(int((conf & u & y_held).sum())
                                                  / max(1, int((conf & u & y_held).sum()) + int((conf & lab).sum())), 4),
            "auc_g_hidden_label_on_U": auc(g[u], y_held[u].long()),
        })
    twins = _twin_stats(data, box["folds"], box["rates"], s, y)
    prob, observed, pi0, keep = box["prune"]
    info = out.info["pu_method"] if "pu_method" in out.info else out.info
    rho1 = info["rho1"]
    ps1 = float(s.double().mean())
    kept_u = keep & ~s
    true_rho1 = int((~s & y).sum()) / int(y.sum())
    line = _head(record, out, None)
    line.update({
        "folds": fold_lines, "twins": twins, "rho1": round(rho1, 4), "rho1_true": round(true_rho1, 4),
        "p_s1": round(ps1, 4), "saturates_when_rho1_at_least": round(1 - ps1, 4),
        "implied_prior": round(ps1 / (1 - rho1), 4), "true_prior_of_training_set": round(float(y.double().mean()), 4),
        "pi0": round(pi0, 4), "pi0_with_true_rho1": round(min(true_rho1 * ps1 / (1 - true_rho1) / (1 - ps1), 0.9999), 4),
        "n_unlabeled": int((~s).sum()), "n_unlabeled_kept": int(kept_u.sum()),
        "kept_unlabeled_hidden_neg": int((kept_u & ~y).sum()), "kept_unlabeled_hidden_pos": int((kept_u & y).sum()),
        "labeled_weight": round(1 / (1 - rho1), 2),
        "d_implied_prior_d_rho1": round(ps1 / (1 - rho1) ** 2, 1),
        "test_logits": logit_summary(box["test_logits"]),
        "test_logits_pos": logit_summary(box["test_logits"][data.y_test == 1]),
        "test_logits_neg": logit_summary(box["test_logits"][data.y_test != 1]),
    })
    return [line]


def _twin_stats(data, folds, rates, s, y) -> dict:
    """With a case-control split whose unlabeled sample is the whole training subset, every
    labeled positive's image is also an unlabeled row (its twin, ``counts.n_overlap``). In
    the cross-validation the twin of a held-out row is in a training fold (2/3 of the time
    with 3 folds) with the other label. Out-of-sample P(s=1|x) of held-out labeled rows and
    of held-out unlabeled positives, by where their twin is, and the share at or above the
    fold's LB."""
    import hashlib

    import torch

    key = [hashlib.sha1(data.x_train[i].numpy().tobytes()).hexdigest() for i in range(len(s))]
    by_key: dict[str, list[int]] = {}
    for i, k in enumerate(key):
        by_key.setdefault(k, []).append(i)
    fold_of = torch.empty(len(s), dtype=torch.long)
    g_all = torch.empty(len(s), dtype=torch.float64)
    lb_of = torch.empty(len(s), dtype=torch.float64)
    for f, (held, (g, s_held)) in enumerate(zip(folds, rates)):
        fold_of[held], g_all[held] = f, g
        lb_of[held] = float(g[s_held.bool()].mean())
    groups: dict[str, list[int]] = {"labeled_twin_in_training_folds": [], "labeled_twin_in_same_fold": [],
                                    "labeled_no_twin": [], "unlabeled_pos_twin_labeled_in_training_folds": [],
                                    "unlabeled_pos_twin_labeled_in_same_fold": [], "unlabeled_pos_no_twin": []}
    for i in range(len(s)):
        others = [j for j in by_key[key[i]] if j != i and bool(s[j]) != bool(s[i])]
        if bool(s[i]):
            name = ("labeled_no_twin" if not others else "labeled_twin_in_same_fold"
                    if int(fold_of[others[0]]) == int(fold_of[i]) else "labeled_twin_in_training_folds")
        elif bool(y[i]):
            name = ("unlabeled_pos_no_twin" if not others else "unlabeled_pos_twin_labeled_in_same_fold"
                    if int(fold_of[others[0]]) == int(fold_of[i]) else "unlabeled_pos_twin_labeled_in_training_folds")
        else:
            continue
        groups[name].append(i)
    out = {}
    for name, rows in groups.items():
        if rows:
            idx = torch.tensor(rows)
            out[name] = {"n": len(rows), "mean_g": round(float(g_all[idx].mean()), 4),
                         "share_at_or_above_lb": round(float((g_all[idx] >= lb_of[idx]).double().mean()), 4)}
        else:
            out[name] = {"n": 0}
    return out


# ------------------------------------------------------------------ pulns
def pulns(col: str, seed: int, variants: list[str]) -> list[dict]:
    record = _record(ROW["pulns"], col, seed)
    lines = []
    for variant in variants:
        changes = {} if variant == "record" else {"pu_method.selector_lr": 1.0e-12}
        out = _run(record, changes)
        info = out.info["pu_method"] if "pu_method" in out.info else out.info
        line = _head(record, out, changes)
        line.update({"variant": variant,
                     "selected_fraction_per_episode": [round(v, 3) for v in info["selected_fraction_per_episode"]],
                     "record_selected_fraction": [round(v, 3) for v in
                                                  record["info"]["pu_method"]["selected_fraction_per_episode"]],
                     "selector_weight_norm": round(info["selector_weight_norm"], 5),
                     "record_selector_weight_norm": round(record["info"]["pu_method"]["selector_weight_norm"], 5),
                     "validation_criterion_per_epoch": [round(v, 3) for v in info["validation_criterion_per_epoch"]]})
        lines.append(line)
        print(json.dumps(line), flush=True)
    return lines


# ------------------------------------------------------------------ pan
def pan(col: str, seed: int, variants: list[str]) -> list[dict]:
    from pubench.pu import pan as panm

    record = _record(ROW["pan"], col, seed)
    lines = []
    for variant in variants:
        changes = {} if variant == "record" else {"pu_method.classifier_eps": 0.01}
        box: dict = {}
        with Capture() as cap:
            original = panm.evaluate_network

            def evaluate(model, data, ctx):
                box["logits"], box["y"] = test_logits(model, data, ctx), data.y_test
                return original(model, data, ctx)

            cap.patch(panm, "evaluate_network", evaluate)
            out = _run(record, changes)
        info = out.info["pu_method"] if "pu_method" in out.info else out.info
        line = _head(record, out, changes)
        line.update({"variant": variant, "final_value": round(info["final_value"], 4),
                     "record_final_value": round(record["info"]["pu_method"]["final_value"], 4),
                     "test_logits": logit_summary(box["logits"]),
                     "test_logits_pos": logit_summary(box["logits"][box["y"] == 1]),
                     "test_logits_neg": logit_summary(box["logits"][box["y"] != 1])})
        lines.append(line)
        print(json.dumps(line), flush=True)
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=["rp", "pulns", "pan"])
    ap.add_argument("--col", help="the column (default: rp F-MNIST-II, pulns CIFAR-I, pan F-MNIST-I)")
    ap.add_argument("--seed", type=int, default=0, help="seed index (default 0)")
    ap.add_argument("--variants", default="record,changed",
                    help="pulns / pan: record (the record's config), changed (the variant), comma-separated")
    ap.add_argument("--out", help="also append the JSON lines to this file")
    args = ap.parse_args()
    _reexec()
    col = args.col or DEFAULT_COL[args.what]
    variants = args.variants.split(",")
    if args.what == "rp":
        lines = rp(col, args.seed)
        print(json.dumps(lines[0]), flush=True)
    elif args.what == "pulns":
        lines = pulns(col, args.seed, variants)
    else:
        lines = pan(col, args.seed, variants)
    if args.out:
        with open(args.out, "a", encoding="utf-8") as f:
            for line in lines:
                f.write(json.dumps({"what": args.what, **line}) + "\n")


if __name__ == "__main__":
    main()
