"""Measurements behind fig6-wconpu's ``one_class_why`` (issue 38): why nnPU and Dist-PU end
one-class when given a misspecified class prior.

Usage: python benchmarks/fig6_one_class.py [--out FILE.jsonl]

Reruns committed reduced-tier jobs of fig6-wconpu (and one of its true-prior cells, taken from
table2-wconpu) in this process with the canonical numerics, as benchmarks/reduced_internals.py does,
checks that each job's metrics reproduce its record bit for bit (``reproduced``) and prints,
one JSON line per job, what the record does not hold:

* nnPU: the training risk of every epoch (the record keeps only the last);
* nnPU and Dist-PU: the final network's scores (logits) on the labeled positives, the
  unlabeled training images and the test images (all, positives, negatives): mean, min, max,
  the share above 0 (called positive) and the mean sigmoid (Dist-PU's label-distribution
  loss matches the mean sigmoid over U to the assumed prior).

Nothing is written to a store. About 2 minutes per job on one free core. The lines behind the
spec's reasons: benchmarks/results/fig6-one-class-2026-11-27.jsonl (7 of 7 reproduced).
"""

from __future__ import annotations

import argparse
import json

from reduced_internals import RECORDS, Capture, _record, _reexec, _run

JOBS = [("nnPU", "pi_P=0.2", 0), ("nnPU", "pi_P=0.3", 0), ("nnPU", "pi_P=0.3", 1), ("nnPU", "pi_P=0.3", 2),
        ("Dist-PU", "pi_P=0.2", 1), ("Dist-PU", "pi_P=0.6", 0)]
#: the true prior, for contrast: fig6-wconpu's cell there is table2-wconpu's (seeds_from)
TRUE_PRIOR = ("table2-wconpu", "nnPU", "CIFAR-10", 1)


def score_summary(model, data, ctx) -> dict:
    import torch

    from pubench.train.classifier import predict, to_float

    model.eval()
    device = ctx.device

    def scores(x):
        return predict(lambda idx: model(to_float(x[idx].to(device), data.mean, data.std)), x.shape[0],
                       ctx).reshape(-1)

    with torch.no_grad():
        train, test = scores(data.x_train), scores(data.x_test)
    labeled = data.observed == 1
    parts = {"labeled_P": train[labeled], "unlabeled": train[~labeled], "test": test,
             "test_pos": test[data.y_test == 1], "test_neg": test[data.y_test != 1]}
    return {name: {"mean": round(v.mean().item(), 3), "min": round(v.min().item(), 3),
                   "max": round(v.max().item(), 3), "share_positive": round((v > 0).float().mean().item(), 4),
                   "mean_sigmoid": round(torch.sigmoid(v).mean().item(), 4)} for name, v in parts.items()}


def measure(key: str) -> dict:
    from pubench.pu import dist_pu, end_to_end

    record = _record(key)
    box: dict = {}
    with Capture() as cap:
        train_network = end_to_end.train_network

        def train_and_keep(*a, **k):
            box["risk_per_epoch"] = [round(r, 5) for r in train_network(*a, **k)]
            return box["risk_per_epoch"]

        def evaluate(evaluate_network):
            def evaluate_and_keep(model, data, ctx):
                box["scores"] = score_summary(model, data, ctx)
                return evaluate_network(model, data, ctx)
            return evaluate_and_keep

        cap.patch(end_to_end, "train_network", train_and_keep)
        cap.patch(end_to_end, "evaluate_network", evaluate(end_to_end.evaluate_network))
        cap.patch(dist_pu, "evaluate_network", evaluate(dist_pu.evaluate_network))
        out = _run(record)
    job = record["job"]
    return {"job": job["name"], "id": job["id"], "reproduced": out.metrics == record["metrics"],
            "acc": out.metrics["acc"], "auc": round(out.metrics["auc"], 2), **box}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="also append the JSON lines to this file")
    args = ap.parse_args()
    _reexec()
    for row, col, seed in JOBS:
        RECORDS[f"{row}|{col}|{seed}"] = ("fig6-wconpu", row, col, seed)
    RECORDS["true prior"] = TRUE_PRIOR
    for key in [*(f"{r}|{c}|{s}" for r, c, s in JOBS), "true prior"]:
        line = json.dumps(measure(key))
        print(line, flush=True)
        if args.out:
            with open(args.out, "a", encoding="utf-8") as f:
                f.write(line + "\n")


if __name__ == "__main__":
    main()
