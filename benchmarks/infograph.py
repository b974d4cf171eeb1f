"""Time InfoGraph pre-training per epoch and the SVM evaluation, per graph data set.

    python benchmarks/infograph.py                       # ptc_mr enzymes dd reddit_binary, 3 epochs
    python benchmarks/infograph.py dd --epochs 5 --loss hard --threads 2

Needs the data under $PUBENCH_DATA (``pubench prepare --from ../shared/data``). Prints the
mean seconds per epoch (first epoch excluded when more than one), the embedding and SVM
times, and the extrapolated time of one job (``--paper-epochs`` epochs + SVM).
"""

from __future__ import annotations

import argparse
import time

import torch

LOSSES = {
    "info_nce": {"name": "info_nce", "temperature": 1.0},
    "debiased": {"name": "debiased", "temperature": 1.0, "tau_plus": 0.5},
    "hard": {"name": "hard", "temperature": 1.0, "tau_plus": 0.5, "beta": 1.0},
    "ring": {"name": "ring", "temperature": 1.0, "lower": 0.1, "upper": 0.9},
    "pu_corrected": {"name": "pu_corrected", "temperature": 1.0, "alpha": 0.1, "c": 0.1},
    "infograph_jsd": {"name": "infograph_jsd"},
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("datasets", nargs="*", default=["ptc_mr", "enzymes", "dd", "reddit_binary"])
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--paper-epochs", type=int, default=200)
    ap.add_argument("--loss", default="pu_corrected", choices=sorted(LOSSES))
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--no-svm", action="store_true")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    from pubench.data.graphs import load_graphs
    from pubench.models.gin import gin
    from pubench.train.infograph import InfoGraph, LocalGlobalObjective, embed, pretrain
    from pubench.train.svm_eval import svm_cv

    obj = LocalGlobalObjective.from_config(LOSSES[args.loss])
    print(f"threads {torch.get_num_threads()}, loss {args.loss}")
    print(f"{'dataset':15s} {'graphs':>6s} {'s/epoch':>8s} {'embed s':>8s} {'svm s':>7s} {'job s @' + str(args.paper_epochs):>12s}")
    for name in args.datasets:
        gs = load_graphs(name)
        torch.manual_seed(0)
        model = InfoGraph(gin(gs.num_features, 32, 3))
        hist = pretrain(model, gs.graphs, obj, epochs=args.epochs, batch_size=128, lr=1e-3, seed=0)
        ep = hist["epoch_s"][1:] if len(hist["epoch_s"]) > 1 else hist["epoch_s"]
        per_epoch = sum(ep) / len(ep)
        t = time.perf_counter()
        x = embed(model.encoder, gs.graphs)
        t_embed = time.perf_counter() - t
        t_svm = 0.0
        if not args.no_svm:
            t = time.perf_counter()
            svm_cv(x, gs.labels.numpy(), seed=0)
            t_svm = time.perf_counter() - t
        job = per_epoch * args.paper_epochs + t_embed + t_svm
        print(f"{name:15s} {len(gs):6d} {per_epoch:8.2f} {t_embed:8.2f} {t_svm:7.1f} {job:12.0f}")


if __name__ == "__main__":
    main()
