"""Self-PU (Chen, Chen, Chen, Yuan, Gong, Chen & Wang, ICML 2020, "Self-PU: Self Boosted and
Calibrated Positive-Unlabeled Training"), PU_METHODS ``self_pu``: the full method of the
released code (VITA-Group/Self-PU, ``train_2s2t_mix.py`` as its README runs it,
``--soft-label``), reimplemented from its terms (:mod:`pubench.pu.self_pu_terms`), not copied.

Two students (the backbone + a linear layer, one logit each; the second student's weights
drawn afresh) and their two mean teachers. Every epoch:

1. *confident phase* (once a confident set exists): each student, in turn, trains on its
   own confident set with :func:`confident_set_loss` (+ the mean-teacher consistency);
2. the teachers follow their students (:func:`ema_update`; from ``ema_start``);
3. *noisy phase*: each student, in turn, trains on its noisy set (the labeled positives +
   the unlabeled examples not in its confident set; batches interleave one positive with
   ``floor(n_U / n_P)`` unlabeled examples, as the released data set does) with the nnPU
   risk; in the self-paced epochs (``self_paced_start <= epoch < self_paced_stop``) the
   risk is re-weighted per example and an entropy term added, with weights from one
   look-ahead step (:func:`look_ahead_weight_gradient`, :func:`calibration_weights`);
   from ``ema_start`` on, plus the gated mutual distillation with the other student and the
   mean-teacher consistency;
4. the teachers follow again; after the selection epochs (``self_paced_start`` +
   k ``self_paced_every``, below ``self_paced_stop``) each network's confident set is
   re-selected from the scores of its teacher (from ``ema_start``; before: its student):
   ``floor(n_U pace_k min(epoch / pace_ramp_epochs, 1))`` lowest and highest scored
   unlabeled examples (:func:`select_confident`).

Reported: the network ``reported_network`` names (``student_1`` | ``student_2`` |
``teacher_1`` | ``teacher_2``) after the last epoch; ``info`` holds the last-epoch test
accuracy of all four. The released code prints, per network, the best test accuracy over
the epochs and saves the best of the four on the test set: a best-test-epoch number, never
produced here. Where this differs from the released code: ``docs/losses.md`` (Self-PU).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch
from torch import nn

from pubench.pu import self_pu_terms as T
from pubench.pu.base import PU_METHODS, PUMethod
from pubench.pu.data import DownstreamData, evaluate_network
from pubench.pu.objective import resolve_prior
from pubench.pu.risks import SURROGATES
from pubench.train import accel
from pubench.train.augment import build_augment, to_float
from pubench.train.classifier import seeded_head
from pubench.train.context import JobContext
from pubench.train.loop import Step, Trainer, TrainConfig, has_batchnorm, predict
from pubench.train.optim import build_optimizer, cosine_factor, linear_factor
from pubench.utils.config import ConfigError
from pubench.utils.result import Result
from pubench.utils.seeding import sub_seeds, torch_generator

NETWORKS = ("student_1", "student_2", "teacher_1", "teacher_2")
CONFIDENT_LOSSES = ("entropy", "cross_entropy")


@dataclass(frozen=True)
class SelfPUConfig:
    name: str
    pace1: float                    # final confident fraction of U per class, network 1 (released 0.5 x 0.4 = 0.2)
    pace2: float                    # network 2 (released 0.5 x 0.6 = 0.3)
    pace_ramp_epochs: int           # the selected count grows as min(epoch / this, 1) (released 100)
    self_paced_start: int           # first self-paced epoch, 0-based (released 10)
    self_paced_stop: int            # first epoch after them (released 50)
    self_paced_every: int           # re-selection period in epochs (released 10)
    confident_loss: str             # entropy (released --soft-label) | cross_entropy (pseudo labels)
    meta_lr: float                  # learning rate of the look-ahead step (released 0.001)
    entropy_budget: float           # entropy weights per batch, as a fraction of the batch size (released 1/16)
    ema_start: int                  # first mean-teacher epoch (released 50)
    ema_decay: float                # released 0.999
    consistency: float              # mean-teacher consistency weight (released 0.3)
    consistency_offset: int         # the ramp runs on epoch - offset (released 30)
    consistency_rampup: int         # ramp length in epochs (released 400)
    mutual_alpha: float             # mutual distillation gate (released 0.1)
    reported_network: str           # student_1 | student_2 | teacher_1 | teacher_2
    loss: str                       # nnPU surrogate (released sigmoid)
    beta: float                     # nnPU (released 0)
    gamma: float                    # nnPU (released 1)
    prior: float | None = None


def noisy_order(positive_rows: torch.Tensor, unlabeled_rows: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """The epoch's order of a noisy set, as the released data set builds it: both groups
    permuted, then each positive followed by ``floor(n_U / n_P)`` unlabeled examples (the
    ``n_U mod n_P`` unlabeled examples left over are skipped this epoch)."""
    pos = positive_rows[torch.randperm(len(positive_rows), generator=gen)]
    unl = unlabeled_rows[torch.randperm(len(unlabeled_rows), generator=gen)]
    if len(pos) == 0:
        return unl
    per = len(unl) // len(pos)
    blocks = torch.cat([pos.reshape(-1, 1), unl[:per * len(pos)].reshape(len(pos), per)], dim=1)
    return blocks.reshape(-1)


def chunks(order: torch.Tensor, batch_size: int, min_size: int) -> list[torch.Tensor]:
    """Consecutive batches of ``order`` (the last one kept unless below ``min_size``)."""
    return [b for b in (order[i:i + batch_size] for i in range(0, len(order), batch_size)) if len(b) >= min_size]


def fresh_copy(module: nn.Module, seed: int) -> nn.Module:
    """A copy of ``module`` with every layer's parameters drawn afresh (``reset_parameters``)
    from ``seed``; the global random state is left alone. The released code builds its two
    networks independently; a backbone with its own initialisation (the ResNets' Kaiming
    fan-out convolutions) gets PyTorch's default layer initialisation for the second one."""
    out = copy.deepcopy(module)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        for m in out.modules():
            if hasattr(m, "reset_parameters"):
                m.reset_parameters()
    return out


@PU_METHODS.register("self_pu")
class SelfPU(PUMethod):
    """Self-PU: self-paced selection + self-calibrated (meta re-weighted) nnPU + two
    students distilled into each other and into their mean teachers (module docstring)."""

    config_cls = SelfPUConfig
    test_config = {"pace1": 0.2, "pace2": 0.3, "pace_ramp_epochs": 2, "self_paced_start": 0, "self_paced_stop": 2,
                   "self_paced_every": 1, "confident_loss": "entropy", "meta_lr": 0.001, "entropy_budget": 0.0625,
                   "ema_start": 1, "ema_decay": 0.999, "consistency": 0.3, "consistency_offset": 0,
                   "consistency_rampup": 2, "mutual_alpha": 0.1, "reported_network": "teacher_1", "loss": "sigmoid",
                   "beta": 0.0, "gamma": 1.0}

    @classmethod
    def check(cls, cfg: SelfPUConfig, where: str = "pu_method") -> None:
        for key in ("pace1", "pace2"):
            if not 0.0 <= getattr(cfg, key) <= 0.5:
                raise ConfigError(f"{where}.{key} must be in [0, 0.5] (a fraction of U per class)")
        for key in ("pace_ramp_epochs", "self_paced_every"):
            if getattr(cfg, key) < 1:
                raise ConfigError(f"{where}.{key} must be >= 1")
        for key in ("self_paced_start", "ema_start", "consistency_rampup"):
            if getattr(cfg, key) < 0:
                raise ConfigError(f"{where}.{key} must be >= 0")
        if cfg.self_paced_stop < cfg.self_paced_start:
            raise ConfigError(f"{where}.self_paced_stop must be >= self_paced_start")
        if cfg.confident_loss not in CONFIDENT_LOSSES:
            raise ConfigError(f"{where}.confident_loss: {cfg.confident_loss!r} is not one of {CONFIDENT_LOSSES}")
        for key in ("meta_lr", "entropy_budget", "consistency", "mutual_alpha", "beta", "gamma"):
            if getattr(cfg, key) < 0:
                raise ConfigError(f"{where}.{key} must be >= 0")
        if not 0.0 <= cfg.ema_decay <= 1.0:
            raise ConfigError(f"{where}.ema_decay must be in [0, 1]")
        if cfg.reported_network not in NETWORKS:
            raise ConfigError(f"{where}.reported_network: {cfg.reported_network!r} is not one of {NETWORKS}")
        if cfg.loss not in SURROGATES:
            raise ConfigError(f"{where}.loss: {cfg.loss!r} is not one of {sorted(SURROGATES)}")
        if cfg.prior is not None and not 0.0 < cfg.prior < 1.0:
            raise ConfigError(f"{where}.prior must be in (0, 1)")

    @classmethod
    def check_train(cls, cfg: SelfPUConfig, train: TrainConfig, where: str = "params") -> None:
        if cfg.reported_network.startswith("teacher") and cfg.ema_start >= train.epochs:
            raise ConfigError(f"{where}: pu_method.reported_network {cfg.reported_network} is a mean teacher, which "
                              f"starts at epoch ema_start ({cfg.ema_start}) >= train.epochs ({train.epochs})")

    @classmethod
    def run(cls, cfg: SelfPUConfig, backbone: nn.Module, train: TrainConfig, data: DownstreamData, seed: int,
            ctx: JobContext, classifier=None):
        prior, source = resolve_prior(cfg.prior, data.prior, True, "pu_method")
        if not 0.0 < prior < 1.0:
            raise ConfigError(f"self_pu needs a class prior in (0, 1), got {prior}")
        fit = _SelfPUTraining(cfg, backbone, train, data, prior, seed, ctx)
        fit.train()
        return fit.result(source)


class _SelfPUTraining:
    """One Self-PU run, in named steps: ``epoch_batches`` (each student's confident-set
    batches, then its noisy nnPU batches), ``step`` (the confident-set loss, or the
    self-calibrated nnPU objective with mutual and mean-teacher distillation), ``select``
    (the self-paced confident sets) at each selection epoch's end, then ``result``.
    ``sets``, ``ema`` and ``hist`` are the state a checkpoint holds, with the teachers."""

    def __init__(self, cfg: SelfPUConfig, backbone: nn.Module, train: TrainConfig, data: DownstreamData,
                 prior: float, seed: int, ctx: JobContext):
        self.cfg, self.train_cfg, self.data, self.prior, self.ctx = cfg, train, data, prior, ctx
        self.device = device = ctx.device
        init1, init2, backbone2_seed, order_seed, aug_seed = sub_seeds(seed, 5)
        self.students = [
            nn.Sequential(backbone, seeded_head(backbone.out_dim, 1, init1)).to(device),
            nn.Sequential(fresh_copy(backbone, backbone2_seed), seeded_head(backbone.out_dim, 1, init2)).to(device)]
        self.teachers = [copy.deepcopy(s) for s in self.students]
        for t in self.teachers:
            t.requires_grad_(False)
        self.labeled = (data.observed == 1)
        self.n = data.x_train.shape[0]
        self.unlabeled_rows = torch.nonzero(~self.labeled).squeeze(1)
        self.positive_rows = torch.nonzero(self.labeled).squeeze(1)
        self.aug = build_augment(train.augment, data.mean, data.std, "train.augment") if train.augment else None
        self.gen, self.aug_gen = torch_generator(order_seed), torch_generator(aug_seed)
        self.min_size = 2 if has_batchnorm(self.students[0]) else 1
        self.paces = (cfg.pace1, cfg.pace2)
        self.budget = cfg.entropy_budget * train.batch_size
        # one Adam / SGD over both students: each step has gradients of one student only, and
        # the optimizers skip parameters without a gradient, so it equals one optimizer each
        self.optimizer = build_optimizer(train.optimizer, nn.ModuleList(self.students))
        self.base_lrs = [g["lr"] for g in self.optimizer.param_groups]
        self.schedule = train.schedule
        # confident sets (rows, pseudo label 1/0) of each network; the mean-teacher step count
        self.sets: dict[str, torch.Tensor] = {}
        self.ema = {"steps": 0}
        # per epoch: student 1's mean (weighted) nnPU risk over its noisy batches (the only steps
        # given a weight); per selection: the selected count and its accuracy on the true labels
        self.hist: dict[str, list] = {"student_1_risk": [], "selected": [], "selection_accuracy": []}

    def train(self) -> None:
        state = {"order": self.gen, "augment": self.aug_gen, "teacher_1": self.teachers[0],
                 "teacher_2": self.teachers[1], "confident_sets": self.sets, "mean_teacher": self.ema,
                 "history": self.hist}
        Trainer(self.students, self.optimizer, None, "self_pu", state=state, ctx=self.ctx).run(
            self.train_cfg.epochs, self.epoch_batches, self.step, start_epoch=self.start_epoch,
            end_epoch=self.end_epoch)

    def inputs(self, rows):
        data = self.data
        xb = data.x_train[rows].to(self.device)
        return accel.input_format(self.aug(xb, self.aug_gen) if self.aug is not None
                                  else to_float(xb, data.mean, data.std))

    def teacher_on(self, epoch):
        return epoch >= self.cfg.ema_start

    def follow(self, epoch):
        if self.teacher_on(epoch):
            for t, s in zip(self.teachers, self.students):
                T.ema_update(t, s, self.cfg.ema_decay, self.ema["steps"])
            self.ema["steps"] += 1

    def start_epoch(self, epoch):
        factor = 1.0
        if self.schedule.name != "constant":
            fn = cosine_factor if self.schedule.name == "cosine" else linear_factor
            factor = fn(epoch, self.train_cfg.epochs, int(self.schedule.warmup_epochs))
        for g, lr in zip(self.optimizer.param_groups, self.base_lrs):
            g["lr"] = lr * factor
        if epoch == self.cfg.ema_start:
            for t, s in zip(self.teachers, self.students):
                t.load_state_dict(s.state_dict())
        for t in self.teachers:
            t.train()

    def epoch_batches(self, epoch):
        sets, batch_size = self.sets, self.train_cfg.batch_size
        for k in range(2):
            if f"rows{k}" in sets:
                order = sets[f"rows{k}"][torch.randperm(len(sets[f"rows{k}"]), generator=self.gen)]
                for b in chunks(order, batch_size, self.min_size):
                    yield "confident", k, b
        self.follow(epoch)
        for k in range(2):
            chosen = sets.get(f"rows{k}", self.unlabeled_rows[:0])
            rest = self.unlabeled_rows[~torch.isin(self.unlabeled_rows, chosen)]
            for b in chunks(noisy_order(self.positive_rows, rest, self.gen), batch_size, self.min_size):
                yield "noisy", k, b

    def consistency(self, k, x, z, epoch):
        cfg = self.cfg
        if not self.teacher_on(epoch):
            return z.new_zeros(())
        # the teacher runs in train mode on every batch, also when the weight is 0: its
        # batch-norm statistics follow its own weights, as in the released code
        with torch.no_grad():
            zt = self.teachers[k](x).reshape(-1)
        if cfg.consistency == 0:
            return z.new_zeros(())
        weight = cfg.consistency * T.consistency_ramp(epoch - cfg.consistency_offset, cfg.consistency_rampup)
        return weight * T.consistency_loss(z, zt)

    def step(self, batch, epoch):
        phase, k, rows = batch
        student = self.students[k]
        x = self.inputs(rows)
        if phase == "confident":
            z = student(x).reshape(-1)
            pseudo = self.sets[f"pseudo{k}"][torch.searchsorted(self.sets[f"sorted{k}"], rows)]
            loss = T.confident_set_loss(z, pseudo, self.cfg.confident_loss)
            return Step(loss + self.consistency(k, x, z, epoch), weight=0, extra={"confident_loss": loss.detach()})
        return self.noisy_step(k, rows, x, epoch)

    def noisy_step(self, k, rows, x, epoch):
        """Student ``k``'s self-calibrated nnPU objective on a noisy batch, with the mutual and
        mean-teacher distillation terms once the teachers are on."""
        cfg, device, student = self.cfg, self.device, self.students[k]
        lab = self.labeled[rows].to(device)
        if T.self_paced_active(epoch, cfg.self_paced_start, cfg.self_paced_stop):
            meta_rows = self.unlabeled_rows[torch.randint(len(self.unlabeled_rows), (len(rows),), generator=self.gen)]
            grad = T.look_ahead_weight_gradient(student, x, lab, self.inputs(meta_rows), self.prior, cfg.loss,
                                                cfg.meta_lr)
            w = T.calibration_weights(grad, lab, self.budget)
        else:
            w = torch.stack([torch.ones(len(rows)), torch.zeros(len(rows))], dim=1).to(device)
        z = student(x).reshape(-1)
        w = w.to(z.dtype)
        obj, risk = T.weighted_nnpu_objective(z, lab, w[:, 0], self.prior, cfg.loss, cfg.beta, cfg.gamma)
        extra = {"entropy_weight": w[:, 1].sum().detach()}
        if self.teacher_on(epoch):
            with torch.no_grad():
                z_peer = self.students[1 - k](x).reshape(-1)
            aux, used = T.mutual_distillation(z, z_peer, obj, cfg.mutual_alpha)
            obj = obj + aux
            extra["mutual_used"] = float(used)
        obj = obj + self.consistency(k, x, z, epoch) + (T.entropy_per_example(z) * w[:, 1]).mean()
        return Step(obj, value=risk, weight=len(rows) if k == 0 else 0, extra=extra)

    @torch.no_grad()
    def select(self, epoch):
        cfg, data, device, sets, hist = self.cfg, self.data, self.device, self.sets, self.hist
        for k in range(2):
            scorer = self.teachers[k] if self.teacher_on(epoch) else self.students[k]
            scorer.eval()
            prob = torch.sigmoid(predict(lambda idx: scorer(accel.input_format(to_float(
                data.x_train[idx].to(device), data.mean, data.std))), self.n, self.ctx).reshape(-1))
            count = T.confident_count(len(self.unlabeled_rows), epoch, cfg.pace_ramp_epochs, self.paces[k])
            pos, neg = T.select_confident(prob, self.labeled, count)
            rows = torch.cat([pos, neg])
            pseudo = torch.cat([torch.ones(len(pos), dtype=torch.long), torch.zeros(len(neg), dtype=torch.long)])
            order = torch.argsort(rows)
            sets[f"rows{k}"], sets[f"sorted{k}"], sets[f"pseudo{k}"] = rows, rows[order], pseudo[order]
            truth = data.y_true[rows]
            hist["selection_accuracy"].append(float((truth == pseudo).float().mean()) if len(rows) else None)
            hist["selected"].append(int(len(rows)))
            scorer.train()

    def end_epoch(self, stats):
        cfg = self.cfg
        self.follow(stats.epoch)
        self.hist["student_1_risk"].append(stats.mean)
        if T.is_selection_epoch(stats.epoch, cfg.self_paced_start, cfg.self_paced_stop, cfg.self_paced_every):
            self.select(stats.epoch)

    def result(self, source: str) -> Result:
        """The reported network's test metrics, and what ``info`` records of the run."""
        cfg, data, ctx, hist = self.cfg, self.data, self.ctx, self.hist
        networks = dict(zip(NETWORKS, [*self.students, *self.teachers]))
        metrics = evaluate_network(networks[cfg.reported_network], data, ctx)
        last_acc = {name: metrics["acc"] if name == cfg.reported_network else evaluate_network(net, data, ctx)["acc"]
                    for name, net in networks.items()}
        info = {
            "risk": "Self-PU: self-paced selection + meta re-weighted nnPU + mutual and mean-teacher distillation",
            "prior_used": self.prior, "prior_source": source, "surrogate_loss": cfg.loss, "beta": cfg.beta,
            "gamma": cfg.gamma, "reported_network": cfg.reported_network, "last_epoch_acc": last_acc,
            "model_selection": "the last epoch's model",
            "student_1_risk_per_epoch": hist["student_1_risk"], "selected_per_selection": hist["selected"],
            "selection_accuracy": hist["selection_accuracy"],
            "final_train_risk": hist["student_1_risk"][-1] if hist["student_1_risk"] else None,
        }
        return Result(metrics, info)
