"""Per-step time of the text track's fine-tuning loop (``pubench.tasks.text_fewshot.fine_tune``,
through ``pubench.train.loop.Trainer``) against the model's own step alone.

    OMP_NUM_THREADS=1 MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=100000000000 \\
        python benchmarks/text_step.py [--backbone minilm_l6] [--layers 2] [--steps 10] [--repeats 3]
                                       [--objective punce|scl|ce]

Both run the same real SST-2 sentences (``$PUBENCH_DATA/sst2/train.tsv``; a
fixed generated sentence when absent), in batches of the same sizes (the loop draws their
members at random, the baseline takes them in order): the baseline is a bare Python loop over
batches padded beforehand, each step the encoder forward on the stacked two views, the head, the
same objective, backward and the AdamW step. The loop adds the padding of id lists, the
batch / unlabeled draws, the schedule and the loop's bookkeeping. The two alternate
``--repeats`` times and the fastest pass of each counts, timed in CPU seconds of this
process (``time.process_time``; with one thread the step's own work: on a shared machine
wall time mostly measures the other jobs). Prints milliseconds per step of both and their ratio
(target <= 1.10). Defaults: the reduced tier of table5-punce (2 MiniLM blocks, mean pooling,
32 tokens, batch 16 + 16 unlabeled).
"""

from __future__ import annotations

import argparse
import time

import torch
from torch import nn

from pubench.losses.ce_contrastive import ce_plus_contrastive
from pubench.models import build_backbone
from pubench.tasks.text_fewshot import TextTrainConfig, _objective, fine_tune
from pubench.train.context import PLAIN
from pubench.train.optim import build_optimizer, optimizer_config, schedule_config
from pubench.utils.seeding import torch_generator

OBJECTIVES = {
    "ce": {"name": "ce"},
    "scl": {"name": "ce_plus_contrastive", "lam": 0.9, "loss": {"name": "supcon", "temperature": 0.3}},
    "punce": {"name": "ce_plus_contrastive", "lam": 0.9,
              "loss": {"name": "punce_pnu", "temperature": 0.3, "prior": 0.5578256544269403}},
}


def sentences(n: int) -> tuple[list[str], torch.Tensor]:
    try:
        from pubench.data import DATASETS

        s = DATASETS.get("sst2").load("train")
        return s.sentences[:n], s.labels[:n]
    except FileNotFoundError:
        return ["a charming and often affecting journey through a bleak city ."] * n, torch.arange(n) % 2


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backbone", default="minilm_l6")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--pooling", default="mean")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--max-length", type=int, default=32)
    ap.add_argument("--objective", choices=sorted(OBJECTIVES), default="punce")
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    objective, loss = _objective(OBJECTIVES[a.objective], "objective")
    unl_batch = a.batch if a.objective == "punce" else None
    n_l, n_u = a.batch * a.steps, a.batch * a.steps
    text, labels = sentences(n_l + n_u)
    torch.manual_seed(0)
    encoder = build_backbone(a.backbone, 0, layers=a.layers, pooling=a.pooling)
    head = nn.Linear(encoder.out_dim, 2)
    ids = encoder.tokenize(text, a.max_length)
    train_ids, unl_ids, y = ids[:n_l], ids[n_l:], labels[:n_l]
    train = TextTrainConfig(epochs=1, batch_size=a.batch, optimizer=optimizer_config({"name": "adamw", "lr": 1e-5, "weight_decay": 0.01}),
                            schedule=schedule_config({"name": "linear"}), views="dropout", objective=OBJECTIVES[a.objective],
                            unlabeled_batch_size=unl_batch)

    # the bare step's batches, padded beforehand, in the loop's order of sizes
    opt = build_optimizer(train.optimizer, [p for m in (encoder, head) for p in m.parameters()])
    pre = []
    for i in range(0, n_l, a.batch):
        lab = train_ids[i:i + a.batch]
        batch = lab + (unl_ids[i:i + a.batch] if unl_batch else [])
        views = batch + batch if loss is not None else batch
        pre.append((*encoder.pad(views), y[i:i + a.batch], len(batch), len(lab)))

    def bare() -> float:
        encoder.train()
        head.train()
        t = time.process_time()
        for x, mask, yb, n, n_lab in pre:
            h = encoder(x, mask)
            if loss is None:
                value = ce_plus_contrastive(head(h[:n_lab]), yb, None, 1.0)
            else:
                obs = torch.cat([yb, torch.full((n - n_lab,), -1, dtype=torch.long)])
                value = ce_plus_contrastive(head(h[:n_lab]), yb, loss(h[:n], h[n:], obs, 0), objective.lam)
            opt.zero_grad(set_to_none=True)
            value.backward()
            opt.step()
        return (time.process_time() - t) / len(pre)

    def loop() -> float:
        t = time.process_time()
        hist = fine_tune(encoder, head, train_ids, y, unl_ids, train, objective, loss, torch_generator(2), PLAIN)
        return (time.process_time() - t) / hist[0].steps

    # warm-up (allocator, first-call overheads), then alternate
    fine_tune(encoder, head, train_ids[:a.batch], y[:a.batch], unl_ids, train, objective, loss, torch_generator(1), PLAIN)
    loops, bares = [], []
    for _ in range(a.repeats):
        loops.append(loop())
        bares.append(bare())
    loop_step, bare_step = min(loops), min(bares)
    print(f"{a.backbone} ({a.layers} blocks, {a.pooling} pooling, {a.max_length} tokens), objective {a.objective}, batch {a.batch} labeled"
          f"{f' + {unl_batch} unlabeled' if unl_batch else ''}, {a.steps} steps x {a.repeats} repeats, {a.threads} thread(s)")
    print(f"fine-tuning loop: {loop_step * 1000:.1f} CPU ms/step; model step alone: {bare_step * 1000:.1f} CPU ms/step; "
          f"ratio {loop_step / bare_step:.3f} (target <= 1.10)")


if __name__ == "__main__":
    main()
