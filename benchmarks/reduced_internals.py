"""What four committed reduced-tier jobs do inside, which their records do not hold: puNCE's
weights by label share, Ring's band, puPL's 2-means clusters (the measurements behind issue
36 item 6's four findings).

Usage: python benchmarks/reduced_internals.py {punce,ring,pupl-fmnist,sscl-mnist} [--variant NAME]

Each subcommand reruns one committed reduced-tier job (its record's params and seeds) in
this process, with the canonical numerics (the script restarts itself once with the pins,
as ``pubench run`` does) and the caches off, checks that the job's metrics reproduce the
record's bit for bit (``reproduced: True``; variants that change the job say so), and
prints what the record does not hold. Nothing is written to a store.

* ``punce``: table4-punce 10% | puNCE, seed 0 (eq. 10, ``punce_pnu``). Per epoch, over the
  unlabeled anchors: the weight eq. 10 puts on the anchor's own view a(i), the softmax
  probability the encoder gives a(i), the floor of the anchor's loss (the entropy of its
  target weights) and its loss; per batch the labeled views. ``--variant hide-negatives``:
  the same job with the labeled negatives passed to the loss as unlabeled (the loss is
  then eq. 8, ``punce``; the PN probe still sees every label).
* ``ring``: table1-pucl SimCLR+Ring (``ring_official``, lower 0.9, upper 0.99), seed 0.
  Per epoch: the band's kept ranks and size, the positive's rank and how often it falls in
  the band, the share of same-class views among the band and among all negatives, and the
  mean cosine between views (collapse). ``--variant simclr``: the SimCLR job, with the same
  statistics of the band it would keep. ``--variant released-band``: the Ring job with the
  band of the released SimCLR config (thres_outer 0.5, thres_inner 0.1: lower 0.5, upper 0.95).
* ``pupl-fmnist``: table2-pupl ssCL + puPL (1) | F-MNIST-I, seed 0 (``--variant puCL``: the
  puCL + puPL (1) row). The 2-means clusters against the ten Fashion-MNIST classes, the
  positive share of each cluster, the pseudo-label accuracy of both namings; then the same
  2-means on the raw pixels.
* ``sscl-mnist``: table1-pupl MNIST-I n_L=10k | ssCL, seed 1 (test AUC 43). The clusters
  against the ten digits, where the pinned labeled positives sit, each naming's pseudo-label
  accuracy and the test metrics of the puPL classifier under each orientation.
"""

from __future__ import annotations

import argparse
import glob
import json
import math
import os
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: (spec, row, col, seed index) of the committed reduced record each measurement reruns
RECORDS = {
    "punce": ("table4-punce", "10%", "puNCE", 0),
    "ring": ("table1-pucl", "SimCLR+Ring", "CIFAR10", 0),
    "ring/simclr": ("table1-pucl", "SimCLR", "CIFAR10", 0),
    "pupl-fmnist": ("table2-pupl", "ssCL + puPL (1)", "F-MNIST-I", 0),
    "pupl-fmnist/puCL": ("table2-pupl", "puCL + puPL (1)", "F-MNIST-I", 0),
    "sscl-mnist": ("table1-pupl", "MNIST-I n_L=10k", "ssCL", 1),
}


def _reexec() -> None:
    from pubench import numerics

    num = numerics.resolve()
    env = numerics.process_env(num)
    if all(os.environ.get(k) == v for k, v in env.items()):
        return
    os.environ.update(env)
    os.environ.setdefault("PUBENCH_ENCODER_CACHE", "0")
    os.execv(sys.executable, [sys.executable, *sys.argv])


def _record(key: str) -> dict:
    spec, row, col, seed = RECORDS[key]
    found = []
    for f in sorted(glob.glob(str(ROOT / "results" / "reduced" / spec / "*.json"))):
        rec = json.loads(Path(f).read_text())
        job = rec.get("job", {})
        if (job.get("row"), job.get("col"), job.get("seed_index")) == (row, col, seed) and rec.get("status") == "ok":
            found.append(rec)
    if len(found) != 1:
        raise SystemExit(f"{key}: expected one ok record of {spec} {row}|{col} seed {seed}, found {len(found)}")
    return found[0]


def _run(record: dict, params: dict | None = None, cache: str | None = None) -> dict:
    """Rerun ``record``'s job (``params`` instead of its params, for a variant), the encoder
    cache off, or kept under ``cache`` (a private folder: two downstreams of one encoder
    pre-train once, and a hit leaves the job exactly where a fresh pre-training would)."""
    from pubench import numerics
    from pubench.jobs.plan import Job
    from pubench.tasks import TASKS
    from pubench.train.context import JobContext

    os.environ["PUBENCH_ENCODER_CACHE"] = "0" if cache is None else "1"
    if cache is not None:
        os.environ["PUBENCH_CACHE"] = cache
    job = Job.from_dict(record["job"])
    num = numerics.Numerics.from_dict(job.numerics)
    numerics.check_process(num)
    numerics.apply(num)
    return TASKS.get(job.task).run(job.params if params is None else params, dict(job.seeds),
                                   JobContext(numerics=num))


def _report_reproduced(record: dict, out: dict, changed: bool) -> None:
    same = out.metrics == record["metrics"]
    print(f"job {record['job']['name']}: metrics {_fmt(out.metrics)}")
    print(f"  record's {_fmt(record['metrics'])}; reproduced: {same}" + (" (a variant: not expected)" if changed else ""))


def _fmt(metrics: dict) -> str:
    return ", ".join(f"{k} {v:.2f}" for k, v in sorted(metrics.items()))


# ------------------------------------------------------------------ capture helpers
class Capture:
    """Patches a few module attributes for one run (restored on exit)."""

    def __init__(self):
        self.saved: list[tuple[object, str, object]] = []

    def patch(self, owner, name: str, value) -> None:
        self.saved.append((owner, name, getattr(owner, name)))
        setattr(owner, name, value)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for owner, name, value in reversed(self.saved):
            setattr(owner, name, value)


def _capture_classes(cap: Capture, box: dict) -> None:
    """box['classes']: the original class id of every training example of the run."""
    from pubench.data import splits

    original = splits.make_split

    def make_split(y, *a, **k):
        split = original(y, *a, **k)
        box["classes"] = y[split.index].clone()
        return split

    cap.patch(splits, "make_split", make_split)


def _capture_batches(cap: Capture, box: dict) -> None:
    """box['idx']: the image indices of the pre-training step in flight."""
    import pubench.frameworks.pretrain as pre

    original = pre.pretrain_step

    def pretrain_step(*a, **k):
        inner = original(*a, **k)

        def step(idx, epoch):
            box["idx"] = idx
            return inner(idx, epoch)

        return step

    cap.patch(pre, "pretrain_step", pretrain_step)


def _wrap_loss(cap: Capture, observe, relabel=None) -> None:
    """Call ``observe(z1, z2, observed, epoch, kwargs)`` (no grad) before each loss call;
    ``relabel(observed)`` replaces what the loss sees."""
    import torch

    from pubench.frameworks.pretrain import LossCall

    original = LossCall.__call__

    def call(self, z1, z2, observed, epoch):
        if relabel is not None and observed is not None:
            observed = relabel(observed)
        with torch.no_grad():
            observe(z1.detach(), z2.detach(), observed, epoch, self.kwargs(epoch))
        return original(self, z1, z2, observed, epoch)

    cap.patch(LossCall, "__call__", call)


def _epoch_table(rows: dict[int, list[dict]], keys: list[str]) -> None:
    print("epoch  " + "  ".join(f"{k:>12}" for k in keys))
    for epoch in sorted(rows):
        vals = rows[epoch]
        print(f"{epoch:5d}  " + "  ".join(f"{sum(v[k] for v in vals) / len(vals):12.4f}" for k in keys))


# ------------------------------------------------------------------ punce
def punce(variant: str | None) -> None:
    import torch

    from pubench.losses._pairs import view_logits

    record = _record("punce")
    prior = record["job"]["params"]["pretrain"]["loss"]["prior"]
    rows: dict[int, list[dict]] = defaultdict(list)

    def observe(z1, z2, observed, epoch, kw):
        b = z1.shape[0]
        y2 = observed.repeat(2)
        sim = view_logits(z1, z2, kw["temperature"])
        eye = torch.eye(2 * b, dtype=torch.bool)
        logq = sim.masked_fill(eye, float("-inf")).log_softmax(1)
        unl = y2 == -1
        n_p, n_n = int((y2 == 1).sum()), int((y2 == 0).sum())
        partner = (torch.arange(2 * b) + b) % (2 * b)
        # eq. 10's weights of an unlabeled anchor: pi/|P(i)| on P u {a(i)}, (1 - pi)/|N(i)| on N u {a(i)}
        # (with no labeled negative that is eq. 8: pi/(|P| + 1) on P u {a(i)}, 1 - pi more on a(i))
        w = torch.zeros(2 * b, 2 * b, dtype=sim.dtype)
        w[:, y2 == 1] += prior / (n_p + 1)
        w[:, y2 == 0] += (1 - prior) / (n_n + 1)
        w[torch.arange(2 * b), partner] += prior / (n_p + 1) + (1 - prior) / (n_n + 1)
        w = w[unl]
        lq = logq[unl].masked_fill(eye[unl], 0.0)
        entropy = -(w * w.clamp_min(1e-30).log()).sum(1)
        rows[epoch].append({
            "labeled_views": float(n_p + n_n),
            "w_own": float(w[torch.arange(len(w)), partner[unl]].mean()),
            "q_own": float(logq[unl, partner[unl]].exp().mean()),
            "floor": float(entropy.mean()),
            "loss_unl": float(-(w * lq).sum(1).mean()),
            "log(2b-1)": math.log(2 * b - 1),
        })

    relabel = (lambda obs: torch.where(obs == 0, torch.full_like(obs, -1), obs)) if variant == "hide-negatives" else None
    with Capture() as cap:
        _wrap_loss(cap, observe, relabel)
        out = _run(record)
    _report_reproduced(record, out, variant is not None)
    print(f"pre-training loss per epoch: {[round(x, 4) for x in out.info['pretrain']['loss']]}")
    print("unlabeled anchors, eq. 10's weights of the labels the loss is given (hide-negatives: no labeled negative):")
    _epoch_table(rows, ["labeled_views", "w_own", "q_own", "floor", "loss_unl", "log(2b-1)"])


# ------------------------------------------------------------------ ring
def ring(variant: str | None) -> None:
    import torch
    import torch.nn.functional as F

    from pubench.losses.ring import official_rank_bounds

    key = "ring/simclr" if variant == "simclr" else "ring"
    record = _record(key)
    band = {"lower": 0.9, "upper": 0.99}
    if variant == "released-band":  # the released SimCLR config: thres_outer 0.5, thres_inner 0.1
        band = {"lower": 0.5, "upper": 0.95}
        record["job"]["params"]["pretrain"]["loss"].update(band)
    box: dict = {}
    rows: dict[int, list[dict]] = defaultdict(list)

    def observe(z1, z2, observed, epoch, kw):
        b = z1.shape[0]
        y = box["classes"][box["idx"]]
        y2 = y.repeat(2)
        z = F.normalize(torch.cat([z1, z2]), dim=1)
        cos = z @ z.t()
        rows_ = cos[:b]  # ring_official: b anchors, each ranking all 2b views
        order = rows_.argsort(dim=1, descending=True)
        first, stop = official_rank_bounds(torch.tensor([2 * b]), band["lower"], band["upper"])
        first, stop = int(first), int(stop)
        kept = order[:, first:stop]
        partner = torch.arange(b) + b
        pos_rank = (order == partner.unsqueeze(1)).float().argmax(1)
        same = y2[kept] == y.unsqueeze(1)
        in_band_pos = (kept == partner.unsqueeze(1))
        negs_same = ((y2.unsqueeze(0) == y.unsqueeze(1)).sum(1) - 2).float() / (2 * b - 2)
        off = ~torch.eye(2 * b, dtype=torch.bool)
        rows[epoch].append({
            "kept": float(stop - first), "first_rank": float(first),
            "pos_rank": float(pos_rank.float().mean()),
            "pos_in_band": float(in_band_pos.any(1).float().mean()),
            "same_in_band": float((same & ~in_band_pos).sum(1).float().mean() / (stop - first)),
            "same_all_negs": float(negs_same.mean()),
            "cos_band": float(rows_.gather(1, kept).mean()),
            "cos_pos": float(rows_[torch.arange(b), partner].mean()),
            "cos_all": float(cos[off].mean()),
        })

    with Capture() as cap:
        _capture_classes(cap, box)
        _capture_batches(cap, box)
        _wrap_loss(cap, observe)
        out = _run(record)
    _report_reproduced(record, out, variant == "released-band")
    kept = int(rows[0][0]["kept"])
    print(f"pre-training loss per epoch: {[round(x, 4) for x in out.info['pretrain']['loss']]}; the loss of "
          f"equal logits, log(1 + {kept}) = {math.log(1 + kept):.4f}")
    print(f"ring_official's band (lower {band['lower']}, upper {band['upper']}) on the b anchors' rows of 2b "
          "views, per epoch:")
    _epoch_table(rows, ["kept", "first_rank", "pos_rank", "pos_in_band", "same_in_band", "same_all_negs",
                        "cos_band", "cos_pos", "cos_all"])


# ------------------------------------------------------------------ puPL
def _pupl_capture(cap: Capture, box: dict) -> None:
    from pubench.downstream import pupl

    two_means, run = pupl.pu_two_means, pupl.PuPL.run.__func__

    def pu_two_means(feats, labeled, rng, *a, **k):
        km = two_means(feats, labeled, rng, *a, **k)
        box.update(feats=feats, labeled=labeled, km=km)
        return km

    def pupl_run(cls, cfg, encoder, data, seed, ctx):
        box.update(cfg=cfg, encoder=encoder, data=data, seed=seed)
        return run(cls, cfg, encoder, data, seed, ctx)

    cap.patch(pupl, "pu_two_means", pu_two_means)
    cap.patch(pupl.PuPL, "run", classmethod(pupl_run))


def _crosstab(assign, classes, y, labeled, names) -> None:
    unl = ~labeled
    print("cluster (km index; 1 = seeded at mu_P) x class, unlabeled rows; last columns: size, positive share")
    print("      " + " ".join(f"{c!s:>5}" for c in range(10)) + "   size  pos%")
    for k in (1, 0):
        m = unl & (assign == k)
        counts = [int((classes[m] == c).sum()) for c in range(10)]
        print(f"  {k}:  " + " ".join(f"{n:5d}" for n in counts) + f"  {int(m.sum()):5d}  {100 * float(y[m].float().mean()):5.1f}")
    print("  positive classes: " + ", ".join(str(c) for c in names))
    lab_in_seeded = float((assign[labeled] == 1).float().mean()) if bool(labeled.any()) else float("nan")
    print(f"  labeled positives assigned (pinned) to cluster 1: {100 * lab_in_seeded:.1f}%; "
          f"share of cluster 1 members that are pinned labeled positives: "
          f"{100 * float(labeled[assign == 1].float().mean()):.1f}%")


def _namings(box: dict, y) -> None:
    import torch

    from pubench.downstream.pupl import pseudo_labels

    feats, labeled, km = box["feats"], box["labeled"], box["km"]
    unl = ~labeled
    f = feats.to(torch.float64)
    mu_p = f[labeled].mean(0)
    d = ((km["centers"] - mu_p) ** 2).sum(1).sqrt()
    dist = torch.cdist(f, km["centers"])
    by_distance = (dist[:, 1] < dist[:, 0])
    print(f"  distance of the centres to mu_P: cluster 1 {float(d[1]):.4f}, cluster 0 {float(d[0]):.4f}")
    print(f"  by distance alone (no pin): labeled positives nearest centre 1 {100 * float(by_distance[labeled].float().mean()):.1f}%, "
          f"unlabeled {100 * float(by_distance[unl].float().mean()):.1f}%")
    for orientation in ("algorithm2", "nearest_positive_mean", "labeled_enrichment"):
        labels, seeded = pseudo_labels(km, feats, labeled, orientation, True)
        acc = float((labels[unl] == y[unl]).float().mean())
        print(f"  {orientation:22s}: positive = cluster {1 if seeded else 0}, pseudo-label accuracy on U {100 * acc:.2f}%")


def _pupl_job(key: str) -> tuple[dict, dict]:
    """Rerun a puPL job, capturing its classes, features, clustering and downstream inputs."""
    record = _record(key)
    box: dict = {}
    with Capture() as cap:
        _capture_classes(cap, box)
        _pupl_capture(cap, box)
        out = _run(record)
    _report_reproduced(record, out, False)
    d = record["info"]["downstream"]
    print(f"record's info: pseudo-label acc {d['pseudo_label_acc_unlabeled']:.2f}, pseudo-positive fraction "
          f"{d['pseudo_positive_fraction_unlabeled']:.4f}, seeded cluster named positive {d['positive_cluster_seeded_at_mu_p']}")
    return record, box


def pupl_fmnist(variant: str | None) -> None:
    import dataclasses

    import numpy as np
    import torch
    import torch.nn.functional as F

    from pubench.downstream.pupl import PuPL, pu_two_means

    record, box = _pupl_job("pupl-fmnist/puCL" if variant == "puCL" else "pupl-fmnist")
    data, classes = box["data"], box["classes"]
    positive = record["job"]["params"]["data"]["labels"]["positive"]
    print("encoder features (L2-normalized backbone output), the run's 2-means:")
    _crosstab(box["km"]["labels"], classes, data.y_true, box["labeled"], positive)
    _namings(box, data.y_true)
    # the best any naming of any split of the ten classes into two groups could do is bounded
    # by how the clusters mix classes; here: the raw pixels' 2-means, same seeding and pins
    x = data.x_train.reshape(len(data.x_train), -1).to(torch.float64) / 255.0
    km = pu_two_means(F.normalize(x, dim=1), box["labeled"], np.random.default_rng(0))
    print("raw pixels (L2-normalized), the same 2-means (seed 0):")
    _crosstab(km["labels"], classes, data.y_true, box["labeled"], positive)
    _namings({"feats": F.normalize(x, dim=1), "labeled": box["labeled"], "km": km}, data.y_true)
    # normalization and k-means init: the better of the two namings, over five D^2 draws
    from pubench.train.classifier import encode
    from pubench.train.context import PLAIN

    raw = encode(box["encoder"], data.x_train, data.mean, data.std, PLAIN).to(torch.float64)
    unl = ~box["labeled"]
    y = data.y_true
    print("best naming's pseudo-label accuracy on U (max over the two namings), 2-means draws 0-4:")
    for name, f in (("L2-normalized (the spec)", F.normalize(raw, dim=1)), ("raw features", raw),
                    ("z-scored features", (raw - raw.mean(0)) / raw.std(0).clamp_min(1e-8))):
        accs = []
        for s in range(5):
            lab = pu_two_means(f, box["labeled"], np.random.default_rng(s))["labels"]
            acc = float((lab[unl] == y[unl]).float().mean())
            accs.append(100 * max(acc, 1 - acc))
        print(f"  {name:26s}: " + ", ".join(f"{a:.1f}" for a in accs))
    enriched = dataclasses.replace(box["cfg"], orientation="labeled_enrichment")
    metrics, info = PuPL.run(enriched, box["encoder"], data, box["seed"], ctx=PLAIN)
    print(f"puPL with labeled_enrichment on the same encoder: {_fmt(metrics)}; "
          f"pseudo-label acc {info['pseudo_label_acc_unlabeled']:.2f}")


def sscl_mnist(variant: str | None) -> None:
    import dataclasses

    from pubench.downstream.pupl import PuPL
    from pubench.train.context import PLAIN

    _, box = _pupl_job("sscl-mnist")
    data, classes = box["data"], box["classes"]
    print("encoder features (L2-normalized backbone output), the run's 2-means:")
    _crosstab(box["km"]["labels"], classes, data.y_true, box["labeled"], [1, 3, 5, 7, 9])
    _namings(box, data.y_true)
    for orientation in ("nearest_positive_mean", "labeled_enrichment", "algorithm2"):
        cfg = dataclasses.replace(box["cfg"], orientation=orientation)
        metrics, info = PuPL.run(cfg, box["encoder"], data, box["seed"], ctx=PLAIN)
        print(f"puPL classifier, {orientation:22s}: {_fmt(metrics)}; pseudo-label acc {info['pseudo_label_acc_unlabeled']:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=["punce", "ring", "pupl-fmnist", "sscl-mnist"])
    ap.add_argument("--variant", choices=["hide-negatives", "simclr", "released-band", "puCL"], default=None)
    args = ap.parse_args()
    _reexec()
    {"punce": punce, "ring": ring, "pupl-fmnist": pupl_fmnist, "sscl-mnist": sscl_mnist}[args.what](args.variant)


if __name__ == "__main__":
    main()
