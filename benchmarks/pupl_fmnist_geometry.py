"""Why puPL's 2-means is at chance on F-MNIST-I/II where a linear probe on the same encoder is
not (issue 60 item 4): the geometry of the reduced table2-pupl encoders.

Usage: python benchmarks/pupl_fmnist_geometry.py [--jobs NAME ...] [--out FILE.json]

Each job reruns two committed reduced-tier records of table2-pupl that share one encoder, the
nnPU probe's and puPL's (the encoder cache kept in a private temporary folder: one
pre-training, and a hit leaves the second job exactly where a fresh pre-training would),
checks that both reproduce their records bit for bit (``reproduced``), and measures on the
encoder's training features (the unlabeled set = the whole training subset):

* ``classes``: the ten source classes' means; the distances between them, positive-positive
  against positive-negative against negative-negative pairs, in units of the classes' RMS
  spread about their own mean; the share of the total variance between the ten classes;
* ``binary``: the distance between the positive and negative means against the RMS spread
  about them, the share of the variance between P and N (what 2-means maximizes for its
  split: it finds P/N only if P/N is the split of largest between-share), the variance along
  the P-N direction against the first principal component's;
* ``two_means``: Algorithm 2's clustering (``pu_two_means`` + the spec's naming,
  nearest_positive_mean, labeled positives pinned): the job's own draw on the spec's
  L2-normalized features, then draws 0-2 on each feature view; each cluster's size, positive
  share and source classes, its between-share against P/N's, the angle of its centre
  difference to the P-N direction, the pseudo-label accuracy on U under the spec's naming and
  under the better naming;
* ``linear_pn``: a logistic regression given every true label (sklearn, z-scored features):
  test accuracy and AUC, what a linear read-out of the features can do at best;
* ``tight``: the tight-class limit, every feature moved towards its class mean by a factor
  t (f -> m + t (f - m)), the class being P/N (``binary``; t = 0 leaves two points: 2-means
  must then find P/N, a sanity check) or the ten source classes (``classes``; t = 0 leaves ten
  points, the class means: what 2-means does however tight the classes).

Feature views: ``l2`` (the spec clusters these: L2-normalized backbone output), ``l2_z``
(puPL's classifier reads these: z-scored after L2), ``raw`` and ``raw_z`` (the nnPU probe
reads these). ``--jobs``: ``fm1``, ``fm2``, ``cifar1`` (ssCL (1), seed 0 of F-MNIST-I,
F-MNIST-II, CIFAR-I), ``fm1-s1`` (F-MNIST-I seed 1), ``fm1-pucl`` (puCL (1), F-MNIST-I seed 0),
``fm1-2x`` / ``fm1-4x`` (ssCL (1), F-MNIST-I seed 0 with 20 / 40 pre-training epochs, else as
the record; no record to reproduce), ``fm1-b2`` (ssCL (2), F-MNIST-I seed 0: block 2, 500
labeled positives). Default: fm1 fm2 cifar1 fm1-pucl fm1-2x fm1-4x. Nothing is written to a
store; one thread (the canonical numerics).

Measured 2026-12-07 at 85eebbd (benchmarks/results/pupl-fmnist-geometry-2026-12-07.json, the
default jobs; ...-block2.json, fm1-b2): CPU per job 39-46 s (F-MNIST), 76 s (CIFAR-I), 72 s and
145 s (2x, 4x); the six default jobs 7 min 40 s of CPU, 77 min of wall time at load 8-13 on the
2 cores. puCL's records reproduced bit for bit;
the ssCL records (made at d5d292d) did not on this host (the reruns' accuracy within 1.5
points, AUC within 6.5, pseudo-label accuracy within 1.3; ``pubench verify`` on an ssCL
record of the cell fails alike), so the ssCL figures are those of the rerun encoders.
"""

from __future__ import annotations

import argparse
import copy
import datetime
import json
import os
import tempfile
import time

from reduced_internals import (
    RECORDS,
    Capture,
    _capture_classes,
    _pupl_capture,
    _record,
    _reexec,
    _run,
)

SPEC = "table2-pupl"
#: name -> (pre-training loss row prefix, col, seed index, pre-training epoch factor, row block)
JOBS = {
    "fm1": ("ssCL", "F-MNIST-I", 0, 1, 1),
    "fm2": ("ssCL", "F-MNIST-II", 0, 1, 1),
    "cifar1": ("ssCL", "CIFAR-I", 0, 1, 1),
    "fm1-s1": ("ssCL", "F-MNIST-I", 1, 1, 1),
    "fm1-pucl": ("puCL", "F-MNIST-I", 0, 1, 1),
    "fm1-2x": ("ssCL", "F-MNIST-I", 0, 2, 1),
    "fm1-4x": ("ssCL", "F-MNIST-I", 0, 4, 1),
    "fm1-b2": ("ssCL", "F-MNIST-I", 0, 1, 2),
}
DEFAULT = ["fm1", "fm2", "cifar1", "fm1-pucl", "fm1-2x", "fm1-4x"]
SHRINK = (1.0, 0.5, 0.25, 0.1, 0.05, 0.0)
DRAWS = (0, 1, 2)


# ------------------------------------------------------------------ geometry
def _r(x: float, nd: int = 4) -> float:
    return round(float(x), nd)


def _zscore(f, ref=None):
    ref = f if ref is None else ref
    sd = ref.std(0)
    return (f - ref.mean(0)) / sd.where(sd > 1e-8, sd.new_ones(()))


def between_share(f, groups) -> float:
    """Share of the total variance (trace) between the groups' means: 1 - within SS / total SS."""
    import torch

    total = ((f - f.mean(0)) ** 2).sum()
    within = sum(((f[groups == g] - f[groups == g].mean(0)) ** 2).sum() for g in torch.unique(groups))
    return float(1 - within / total)


def class_geometry(f, classes, positive: list[int]) -> dict:
    import torch

    ids = sorted(int(c) for c in torch.unique(classes))
    means = torch.stack([f[classes == c].mean(0) for c in ids])
    spread = float(torch.sqrt(sum(((f[classes == c] - means[i]) ** 2).sum() for i, c in enumerate(ids)) / len(f)))
    dist = torch.cdist(means, means)
    pairs = {"pos_pos": [], "pos_neg": [], "neg_neg": []}
    for i, a in enumerate(ids):
        for j, b in enumerate(ids[i + 1:], i + 1):
            kind = {2: "pos_pos", 1: "pos_neg", 0: "neg_neg"}[(a in positive) + (b in positive)]
            pairs[kind].append(float(dist[i, j]) / spread)
    # each positive class's nearest other class, positive or negative
    nearest = {}
    for i, a in enumerate(ids):
        if a in positive:
            d = dist[i].clone()
            d[i] = float("inf")
            nearest[str(a)] = ids[int(d.argmin())]
    return {"rms_spread_within_class": _r(spread),
            "mean_distance_over_spread": {k: _r(sum(v) / len(v), 3) for k, v in pairs.items() if v},
            "min_max_distance_over_spread": {k: [_r(min(v), 3), _r(max(v), 3)] for k, v in pairs.items() if v},
            "nearest_class_of_each_positive_class": nearest,
            "between_share_10_classes": _r(between_share(f, classes))}


def binary_geometry(f, y) -> dict:
    import torch

    mu_p, mu_n = f[y == 1].mean(0), f[y == 0].mean(0)
    spread = torch.sqrt((((f - torch.where((y == 1)[:, None], mu_p, mu_n)) ** 2).sum(1)).mean())
    w = (mu_p - mu_n) / (mu_p - mu_n).norm()
    centred = f - f.mean(0)
    total = float((centred ** 2).sum(1).mean())
    evals, evecs = torch.linalg.eigh(centred.T @ centred / len(f))
    pc1 = evecs[:, -1]
    return {"distance_pn_over_rms_spread": _r((mu_p - mu_n).norm() / spread, 3),
            "between_share_pn": _r(between_share(f, y)),
            "variance_share_along_pn_direction": _r(float(((centred @ w) ** 2).mean()) / total),
            "variance_share_pc1_pc2": [_r(evals[-1] / total), _r(evals[-2] / total)],
            "abs_cos_pn_direction_pc1": _r(abs(float(w @ pc1)), 3)}


def two_means_summary(f_all, labeled, y_all, classes_all, km, positive: list[int]) -> dict:
    """One clustering (``km`` of ``pu_two_means``) read against the truth, on U's rows."""
    import torch

    from pubench.downstream.pupl import pseudo_labels

    labels, seeded = pseudo_labels(km, f_all, labeled, "nearest_positive_mean", True)
    unl = ~labeled
    f, y, cls, lab = f_all[unl], y_all[unl], classes_all[unl], labels[unl]
    acc = float((lab == y).float().mean())
    clusters = {}
    for name, k in (("named_positive", 1), ("named_negative", 0)):
        m = lab == k
        clusters[name] = {"size": int(m.sum()), "positive_share": _r(y[m].float().mean()) if m.any() else None,
                          "classes": {str(c): int((cls[m] == c).sum()) for c in sorted(set(cls.tolist()))}}
    fd = f.to(torch.float64)
    mu_p, mu_n = fd[y == 1].mean(0), fd[y == 0].mean(0)
    w = (mu_p - mu_n) / (mu_p - mu_n).norm()
    d = km["centers"][1] - km["centers"][0]
    return {"pseudo_label_acc_U": _r(100 * acc, 2), "better_naming_acc_U": _r(100 * max(acc, 1 - acc), 2),
            "cluster_seeded_at_mu_p_named_positive": seeded, "iterations": km["iterations"],
            "between_share_of_split": _r(between_share(fd, lab)), "between_share_pn": _r(between_share(fd, y)),
            "abs_cos_centre_difference_pn_direction": _r(abs(float(d @ w)) / float(d.norm()), 3),
            "clusters": clusters,
            "positive_classes_share_in_named_positive": {str(c): _r((lab[cls == c] == 1).float().mean(), 3)
                                                         for c in positive}}


def tight_limits(f_all, labeled, y_all, classes_all, positive: list[int]) -> dict:
    """2-means (draw 0, the spec's naming) on features moved towards their class means."""
    import numpy as np
    import torch

    from pubench.downstream.pupl import pseudo_labels, pu_two_means

    f = f_all.to(torch.float64)
    out = {}
    for kind, groups in (("binary", y_all), ("classes", classes_all)):
        means = {int(g): f[groups == g].mean(0) for g in torch.unique(groups)}
        m = torch.stack([means[int(g)] for g in groups])
        rows = []
        for t in SHRINK:
            ft = m + t * (f - m)
            km = pu_two_means(ft, labeled, np.random.default_rng(0))
            labels, _ = pseudo_labels(km, ft, labeled, "nearest_positive_mean", True)
            unl = ~labeled
            acc = float((labels[unl] == y_all[unl]).float().mean())
            row = {"t": t, "between_share_pn": _r(between_share(ft[unl], y_all[unl])),
                   "pseudo_label_acc_U": _r(100 * acc, 2), "better_naming_acc_U": _r(100 * max(acc, 1 - acc), 2)}
            if kind == "classes" and t == 0.0:
                row["classes_named_positive"] = sorted(int(c) for c in torch.unique(classes_all[unl][labels[unl] == 1]))
                row["positive_classes"] = positive
            rows.append(row)
        out[kind] = rows
    return out


def linear_pn(train, y, test, y_test) -> dict:
    """Logistic regression on every true training label: the best a linear read-out does."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    from pubench.train.metrics import binary_metrics

    z_train, z_test = _zscore(train), _zscore(test, train)
    clf = LogisticRegression(max_iter=2000).fit(z_train.numpy(), y.numpy())
    m = binary_metrics(np.asarray(clf.decision_function(z_test.numpy())), y_test.numpy())
    return {"acc": _r(m["acc"], 2), "auc": _r(m["auc"], 2)}


def measure(box: dict, positive: list[int]) -> dict:
    import numpy as np
    import torch
    import torch.nn.functional as F

    from pubench.downstream.pupl import pu_two_means
    from pubench.train.classifier import encode
    from pubench.train.context import PLAIN

    data, labeled, classes = box["data"], box["labeled"], box["classes"]
    raw = encode(box["encoder"], data.x_train, data.mean, data.std, PLAIN).to(torch.float64)
    raw_test = encode(box["encoder"], data.x_test, data.mean, data.std, PLAIN).to(torch.float64)
    l2, l2_test = F.normalize(raw, dim=1), F.normalize(raw_test, dim=1)
    views = {"l2": (l2, l2_test), "l2_z": (_zscore(l2), None), "raw": (raw, raw_test), "raw_z": (_zscore(raw), None)}
    unl, y = ~labeled, data.y_true
    out = {"n_unlabeled": int(unl.sum()), "n_labeled": int(labeled.sum()), "features": int(raw.shape[1]),
           "job_two_means_l2": two_means_summary(box["feats"].to(torch.float64), labeled, y, classes, box["km"],
                                                 positive)}
    for name, (f, _) in views.items():
        fu = f[unl]
        out[name] = {"classes": class_geometry(fu, classes[unl], positive), "binary": binary_geometry(fu, y[unl]),
                     "two_means": [two_means_summary(f, labeled, y, classes,
                                                     pu_two_means(f, labeled, np.random.default_rng(s)), positive)
                                   for s in DRAWS]}
    out["linear_pn"] = {name: linear_pn(f[unl], y[unl], ft, data.y_test) for name, (f, ft) in
                        (("raw", views["raw"]), ("l2", views["l2"]))}
    out["tight_l2"] = tight_limits(l2, labeled, y, classes, positive)
    return out


# ------------------------------------------------------------------ jobs
def _variant(record: dict, factor: int) -> dict | None:
    if factor == 1:
        return None
    params = copy.deepcopy(record["job"]["params"])
    params["pretrain"]["epochs"] *= factor
    return params


def run_job(name: str, cache: str) -> dict:
    loss, col, seed, factor, block = JOBS[name]
    rows = {down: f"{loss} + {down} ({block})" for down in ("nnPU†", "puPL")}
    rec = {}
    for down, row in rows.items():
        RECORDS[f"{row}|{col}|{seed}"] = (SPEC, row, col, seed)
        rec[down] = _record(f"{row}|{col}|{seed}")
    t0 = time.process_time()
    nnpu = _run(rec["nnPU†"], _variant(rec["nnPU†"], factor), cache)   # pre-trains, fills the cache
    box: dict = {}
    with Capture() as cap:
        _capture_classes(cap, box)
        _pupl_capture(cap, box)
        pupl = _run(rec["puPL"], _variant(rec["puPL"], factor), cache)  # the same encoder, from the cache
    t1 = time.process_time()
    positive = rec["puPL"]["job"]["params"]["data"]["labels"]["positive"]
    epochs = rec["puPL"]["job"]["params"]["pretrain"]["epochs"] * factor
    res = {"job": name, "spec": SPEC, "rows": list(rows.values()), "col": col,
           "seed_index": seed, "pretrain_epochs": epochs, "positive_classes": positive,
           "jobs_cpu_seconds": round(t1 - t0, 1)}
    for down, out in (("nnPU†", nnpu), ("puPL", pupl)):
        res[down] = {"acc": _r(out.metrics["acc"], 2), "auc": _r(out.metrics["auc"], 2)}
        if factor == 1:
            res[down].update(reproduced=out.metrics == rec[down]["metrics"],
                             record={"acc": _r(rec[down]["metrics"]["acc"], 2), "auc": _r(rec[down]["metrics"]["auc"], 2)})
    res["puPL"]["pseudo_label_acc_unlabeled"] = _r(pupl.info["downstream"]["pseudo_label_acc_unlabeled"], 2)
    if factor == 1:
        res["puPL"]["record"]["pseudo_label_acc_unlabeled"] = _r(
            rec["puPL"]["info"]["downstream"]["pseudo_label_acc_unlabeled"], 2)
    res["nnPU†"]["pretrain_loss_last"] = _r(nnpu.info["pretrain"]["loss"][-1])
    res["geometry"] = measure(box, positive)
    res["geometry_cpu_seconds"] = round(time.process_time() - t1, 1)
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", nargs="+", choices=sorted(JOBS), default=DEFAULT)
    ap.add_argument("--out", help="write the JSON here (else print it)")
    args = ap.parse_args()
    _reexec()
    with tempfile.TemporaryDirectory(prefix="pupl-geometry-") as cache:
        results = []
        for name in args.jobs:
            results.append(run_job(name, cache))
            r = results[-1]
            print(f"{name}: nnPU {r['nnPU†']} puPL {r['puPL']} ({r['jobs_cpu_seconds']} s)", flush=True)
    doc = {"script": "benchmarks/pupl_fmnist_geometry.py", "date": datetime.date.today().isoformat(),
           "loadavg_at_end": [round(x, 2) for x in os.getloadavg()], "jobs": results}
    text = json.dumps(doc, indent=1)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    else:
        print(text)


if __name__ == "__main__":
    main()
