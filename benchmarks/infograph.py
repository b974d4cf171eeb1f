"""Time InfoGraph pre-training per epoch and the SVM evaluation, per graph data set.

    python benchmarks/infograph.py                       # ptc_mr enzymes dd reddit_binary, 3 epochs
    python benchmarks/infograph.py dd reddit_binary --epochs 3 --threads 1 --compare
    python benchmarks/infograph.py dd --row "InfoGraph+Ring" --no-svm

Needs the data under $PUBENCH_DATA (``pubench prepare --from ../shared/data``). The
objective is a row of table2-pucl (``--row``, its paper-tier config for the data set).
Prints the seconds per epoch (the fastest epoch, the first excluded when more than one), the one-off
batch preparation, the embedding and SVM times, and the extrapolated time of one job
(``--paper-epochs`` epochs + SVM).

``--compare`` also times the training step as it was implemented before (spec
version 1: torch-geometric ``GINConv`` message passing over the edge list and one
``global_add_pool`` per layer, PyG ``DataLoader`` batches, the own-graph mask rebuilt and
the ``(n, B)`` logits divided by the temperature at every step) on the same objective
and the same initial weights, alternating epochs of the two so that both see the same
machine load, and prints old / new ratios.
"""

from __future__ import annotations

import argparse
import copy
import time

import torch

DATASET_COL = {"ptc_mr": "PTC", "enzymes": "ENZYMES", "dd": "DD", "reddit_binary": "REDDIT-B"}


class OldStep:
    """The version-1 training step (see the module docstring), kept here as the speed reference."""

    def __init__(self, model, graphs, objective, batch_size: int, seed: int, lr: float):
        from torch_geometric.loader import DataLoader
        from torch_geometric.nn import GINConv

        self.model, self.objective = model, objective
        self.convs = []
        for mlp in model.encoder.mlps:
            conv = GINConv(torch.nn.Sequential())  # GINConv re-initialises the nn it is given
            conv.nn = mlp
            self.convs.append(conv)
        gen = torch.Generator()
        gen.manual_seed(seed)
        order = torch.randperm(len(graphs), generator=gen).tolist()
        self.batches = list(DataLoader([graphs[i] for i in order], batch_size=batch_size, shuffle=False))
        self.opt = torch.optim.Adam(model.parameters(), lr=lr)

    def encode(self, data):
        from torch_geometric.nn import global_add_pool

        x, xs = data.x, []
        for conv, bn in zip(self.convs, self.model.encoder.bns):
            x = bn(torch.relu(conv(x, data.edge_index)))
            xs.append(x)
        return torch.cat([global_add_pool(h, data.batch, size=data.num_graphs) for h in xs], 1), torch.cat(xs, 1)

    def epoch(self) -> float:
        from pubench.frameworks.infograph import local_global_scores

        obj, t0 = self.objective, time.perf_counter()
        for data in self.batches:
            self.opt.zero_grad(set_to_none=True)
            y, M = self.encode(data)
            l_enc, g_enc = self.model.local_d(M), self.model.global_d(y)
            scores = local_global_scores(l_enc, g_enc, obj.score)
            pos = scores.gather(1, data.batch.view(-1, 1)).squeeze(1)
            mask = torch.arange(g_enc.shape[0]).view(1, -1) != data.batch.view(-1, 1)
            t = obj.temperature
            obj.loss(pos / t, scores / t, mask).backward()
            self.opt.step()
        return time.perf_counter() - t0


class NewStep:
    def __init__(self, model, graphs, objective, batch_size: int, seed: int, lr: float):
        from pubench.frameworks.infograph import prepare_batches

        self.model, self.objective = model, objective
        t0 = time.perf_counter()
        self.batches = prepare_batches(graphs, batch_size, seed)
        self.prepare_s = time.perf_counter() - t0
        self.opt = torch.optim.Adam(model.parameters(), lr=lr)

    def epoch(self) -> float:
        from pubench.frameworks.infograph import train_step

        t0 = time.perf_counter()
        for pb in self.batches:
            train_step(self.model, pb, self.objective, self.opt)
        return time.perf_counter() - t0


def per_epoch(times: list[float]) -> float:
    """The fastest epoch after the first: other jobs on a shared machine only add time."""
    return min(times[1:] if len(times) > 1 else times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("datasets", nargs="*", default=list(DATASET_COL))
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--paper-epochs", type=int, default=200)
    ap.add_argument("--row", default="InfoGraph+PUCL(alpha=0.1)", help="a trained row of table2-pucl")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--no-svm", action="store_true")
    ap.add_argument("--compare", action="store_true", help="also time the version-1 step and print ratios")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    from pubench.data.graphs import load_graphs
    from pubench.frameworks.infograph import InfoGraph, embed
    from pubench.models.gin import gin
    from pubench.registry import get_spec
    from pubench.tasks.infograph import parse_params
    from pubench.train.svm_eval import svm_cv

    spec = get_spec("table2-pucl")
    print(f"threads {torch.get_num_threads()}, row {args.row}, {args.epochs} epochs (per epoch: the fastest of epochs 2..)")
    head = f"{'dataset':14s} {'graphs':>6s} {'prep s':>6s} {'s/epoch':>8s} {'embed s':>8s} {'svm s':>6s} {'job s @' + str(args.paper_epochs):>11s}"
    if args.compare:
        head += f" {'old s/epoch':>11s} {'old job s':>9s} {'epoch x':>7s} {'job x':>6s}"
    print(head)
    for name in args.datasets:
        cfg, objective = parse_params(spec.resolve("paper", args.row, DATASET_COL[name])["params"])
        pt = cfg.pretrain
        gs = load_graphs(name)
        torch.manual_seed(0)
        model = InfoGraph(gin(gs.num_features, cfg.model.backbone.hidden, cfg.model.backbone.layers))
        new = NewStep(model, gs.graphs, objective, pt.batch_size, 0, pt.optimizer.lr)
        old = OldStep(copy.deepcopy(model), gs.graphs, objective, pt.batch_size, 0, pt.optimizer.lr) if args.compare else None
        t_new, t_old = [], []
        for _ in range(args.epochs):
            t_new.append(new.epoch())
            if old:
                t_old.append(old.epoch())
        t = time.perf_counter()
        x = embed(model.encoder, gs.graphs)
        t_embed = time.perf_counter() - t
        t_svm = 0.0
        if not args.no_svm:
            t = time.perf_counter()
            svm_cv(x, gs.labels.numpy(), seed=0, folds=cfg.eval.folds, C=cfg.eval.C, inner_folds=cfg.eval.inner_folds)
            t_svm = time.perf_counter() - t
        fixed = t_embed + t_svm
        job = new.prepare_s + per_epoch(t_new) * args.paper_epochs + fixed
        line = (f"{name:14s} {len(gs):6d} {new.prepare_s:6.2f} {per_epoch(t_new):8.3f} {t_embed:8.2f} {t_svm:6.1f} "
                f"{job:11.0f}")
        if old:
            old_job = per_epoch(t_old) * args.paper_epochs + fixed
            line += f" {per_epoch(t_old):11.3f} {old_job:9.0f} {per_epoch(t_old) / per_epoch(t_new):7.2f} {old_job / job:6.2f}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
