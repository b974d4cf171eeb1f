"""Building blocks of Self-PU (Chen, Chen, Chen, Yuan, Gong, Chen & Wang, ICML 2020,
"Self-PU: Self Boosted and Calibrated Positive-Unlabeled Training"), reimplemented from the
paper's description and its released code (VITA-Group/Self-PU, ``train_2s2t_mix.py``, the
full method that its README runs with ``--soft-label``; ``datasets.py`` ``update_ids``;
``utils/util.py`` ``pu_risk_estimators_sigmoid_eps``). Not a registered method yet: the
full training schedule (two students, two mean teachers, periodic re-selection) is not
assembled (``experiments/_planned.yaml``, ``self_pu``).

The three "self" parts, each a pure function here:

* self-paced selection (:func:`self_paced_active`, :func:`is_selection_epoch`,
  :func:`confident_count`, :func:`select_confident`): from the ``self_paced_start``-th
  epoch, every ``self_paced_every`` epochs until ``self_paced_stop``, the unlabeled
  examples a network scores lowest / highest become confident negatives / positives; their
  number grows linearly with the epoch (``min(epoch / ramp_epochs, 1)``); the confident
  set is trained with :func:`confident_set_loss`, the rest with the (re-weighted) nnPU risk;
* self-calibration (:func:`weighted_pu_terms`, :func:`weighted_nnpu_objective`,
  :func:`look_ahead_weight_gradient`, :func:`calibration_weights`): per unlabeled example
  a weight on its nnPU loss and one on its entropy, learned by one look-ahead SGD step
  (learning to re-weight: the gradient of a meta loss after the step w.r.t. zero weights);
* self-distillation (:func:`mutual_distillation`, :func:`consistency_loss`,
  :func:`consistency_ramp`, :func:`ema_update`): two students teach each other (a gated
  MSE between their probabilities) and each follows its mean teacher.

Where the released code differs from the paper or is order dependent, the choice is in
``docs/losses.md`` (Self-PU) and written at the function.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call

from pubench.pu.risks import surrogate
from pubench.train.momentum import momentum_update_

# ------------------------------------------------------------------ self-paced selection


def self_paced_active(epoch: int, start: int, stop: int) -> bool:
    """Whether ``epoch`` (0-based) is a self-paced epoch: ``start <= epoch < stop`` (released
    code ``check_self_paced``: 10 and 50). In these epochs the noisy set is trained with the
    meta re-weighted loss."""
    return start <= epoch < stop


def is_selection_epoch(epoch: int, start: int, stop: int, every: int) -> bool:
    """Whether the confident set is re-selected after ``epoch`` (0-based): a self-paced epoch
    with ``(epoch - start) % every == 0`` (released code: after epochs 10, 20, 30, 40)."""
    if every < 1:
        raise ValueError(f"every must be >= 1, got {every}")
    return self_paced_active(epoch, start, stop) and (epoch - start) % every == 0


def confident_count(n_unlabeled: int, epoch: int, ramp_epochs: int, pace: float) -> int:
    """How many confident examples of each class are selected after ``epoch`` (0-based):
    ``floor(n_U pace min(epoch / ramp_epochs, 1))``. The released code (``update_ids`` with
    ``increasing``) computes ``floor(n_U (1 - ratio) min(epoch / 100, 1) top)`` with ``ratio``
    0.5 (passed by ``update_dataset``) and ``top`` 0.4 / 0.6 for its two networks: ``pace``
    = ``(1 - ratio) top`` = 0.2 / 0.3, the "Pace1 = 0.2, Pace2 = 0.3" that 003 (App. B.2)
    quotes from Li et al. (2022)."""
    if ramp_epochs < 1 or not 0.0 <= pace <= 0.5:
        raise ValueError(f"ramp_epochs must be >= 1 and pace in [0, 0.5], got {ramp_epochs}, {pace}")
    return int(n_unlabeled * pace * min(epoch / ramp_epochs, 1))


def select_confident(prob: torch.Tensor, labeled: torch.Tensor, count: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(positive rows, negative rows): among the unlabeled examples ranked by ``prob``
    (P(y = +1 | x)), the ``count`` highest and the ``count`` lowest. Ties keep the row
    order (a stable sort; the released code's ``np.argsort`` is not stable). ``count`` 0
    selects nothing (the released code's ``al[-0:]`` would select every unlabeled example
    as positive; its schedule never asks for 0 after the first selection epoch on the
    papers' data)."""
    prob = prob.reshape(-1)
    labeled = torch.as_tensor(labeled, device=prob.device).reshape(-1).bool()
    unlabeled_rows = torch.nonzero(~labeled).squeeze(1)
    if count < 0 or 2 * count > len(unlabeled_rows):
        raise ValueError(f"count must be in [0, n_U / 2], got {count} for {len(unlabeled_rows)} unlabeled examples")
    ranked = unlabeled_rows[torch.sort(prob[unlabeled_rows], stable=True).indices]
    if count == 0:
        empty = ranked[:0]
        return empty, empty
    return ranked[-count:], ranked[:count]


def confident_set_loss(logits: torch.Tensor, pseudo_positive: torch.Tensor, kind: str) -> torch.Tensor:
    """The loss on a batch of the confident set: ``entropy``, the mean binary entropy of the
    predictions (the released code's ``--soft-label``, which its README runs: the pseudo
    labels are not used, the confident examples are pushed to be confident), or
    ``cross_entropy`` with the pseudo labels (``pseudo_positive``; the paper's hard pseudo
    labels, the released code without ``--soft-label``)."""
    z = logits.reshape(-1)
    if kind == "entropy":
        return entropy_per_example(z).mean()
    if kind == "cross_entropy":
        return F.binary_cross_entropy_with_logits(z, pseudo_positive.reshape(-1).to(device=z.device, dtype=z.dtype))
    raise ValueError(f"kind must be entropy or cross_entropy, got {kind!r}")


# ------------------------------------------------------------------ self-calibration


def entropy_per_example(logits: torch.Tensor) -> torch.Tensor:
    """``H_i = -(s_i log s_i + (1 - s_i) log(1 - s_i))``, ``s_i = sigmoid(z_i)``, from the
    logits (the released code adds 1e-10 inside the logs; the difference is below 1e-9)."""
    z = logits.reshape(-1)
    s = torch.sigmoid(z)
    return s * F.softplus(-z) + (1.0 - s) * F.softplus(z)


def weighted_pu_terms(scores: torch.Tensor, labeled: torch.Tensor, weights: torch.Tensor, prior: float,
                      loss: str = "sigmoid") -> dict[str, torch.Tensor]:
    """The instance-weighted nnPU terms (released code ``pu_risk_estimators_sigmoid_eps``):
    with per-example weights ``w_i`` on both losses of an example,

        positive = pi / n_P sum_{i in P} w_i l(g_i, +1)
        negative = 1 / n_U sum_{i in U} w_i l(g_i, -1) - pi / n_P sum_{i in P} w_i l(g_i, -1)

    (``n_P``, ``n_U``: the batch's counts, at least 1). All weights 1: nnPU's terms."""
    z = scores.reshape(-1)
    lab = torch.as_tensor(labeled, device=z.device).reshape(-1).bool()
    w = weights.reshape(-1).to(z.dtype)
    if lab.shape != z.shape or w.shape != z.shape:
        raise ValueError("scores, labeled and weights must have the same length")
    ell = surrogate(loss)
    p = lab.to(z.dtype)
    n_p, n_u = p.sum().clamp(min=1), (1 - p).sum().clamp(min=1)
    positive = (prior * w * ell(z, +1) * p / n_p).sum()
    negative = (((1 - p) / n_u - prior * p / n_p) * w * ell(z, -1)).sum()
    return {"positive": positive, "negative": negative}


def weighted_nnpu_objective(scores, labeled, weights, prior: float, loss: str, beta: float, gamma: float
                            ) -> tuple[torch.Tensor, torch.Tensor]:
    """(objective, reported risk) of one step on the weighted nnPU risk (Kiryo et al. 2017,
    Algorithm 1, on :func:`weighted_pu_terms`): ``positive + negative``, or
    ``-gamma * negative`` when ``negative < -beta`` (released code ``pu_loss``, whose
    non-negative branch is ``R_p + R_n`` unclamped)."""
    t = weighted_pu_terms(scores, labeled, weights, prior, loss)
    risk = (t["positive"] + t["negative"].clamp(min=0)).detach()
    if bool(t["negative"].detach() < -beta):
        return -gamma * t["negative"], risk
    return t["positive"] + t["negative"], risk


def look_ahead_weight_gradient(model: nn.Module, x: torch.Tensor, labeled: torch.Tensor, x_meta: torch.Tensor,
                               prior: float, loss: str, inner_lr: float) -> torch.Tensor:
    """``d L_meta(theta') / d eps`` at ``eps = 0``, shape ``(n, 2)``: the learning-to-re-weight
    step of Self-PU's self-calibration (released code ``train_with_meta``). With per-example
    weights ``eps_i0`` on the nnPU losses and ``eps_i1`` on the negative entropies,

        L_f(theta, eps) = weighted nnPU(theta; eps_0) + (1/n) sum_i eps_i1 (-H_i(theta))
        theta' = theta - inner_lr * grad_theta L_f(theta, eps)
        L_meta = mean binary entropy of model(x_meta; theta')

    Only ``model``'s parameters move (functional call: the model and its buffers are left
    as they are; batch norm uses the batch's statistics in train mode). ``x_meta`` is the
    meta batch (see ``docs/losses.md``: the released code takes a test batch)."""
    params = {k: v for k, v in model.named_parameters()}
    buffers = {k: v.clone() for k, v in model.named_buffers()}
    eps = torch.zeros(x.shape[0], 2, dtype=torch.float32 if not x.is_floating_point() else x.dtype,
                      device=x.device, requires_grad=True)
    logits = functional_call(model, {**params, **buffers}, (x,)).reshape(-1)
    terms = weighted_pu_terms(logits, labeled, eps[:, 0], prior, loss)
    inner = terms["positive"] + terms["negative"] - (eps[:, 1] * entropy_per_example(logits)).mean()
    names = list(params)
    grads = torch.autograd.grad(inner, [params[k] for k in names], create_graph=True, allow_unused=True)
    moved = {k: params[k] if g is None else params[k] - inner_lr * g for k, g in zip(names, grads)}
    meta_logits = functional_call(model, {**moved, **buffers}, (x_meta,))
    meta_loss = entropy_per_example(meta_logits).mean()
    return torch.autograd.grad(meta_loss, eps)[0].detach()


def calibration_weights(weight_gradient: torch.Tensor, labeled: torch.Tensor, entropy_budget: float
                        ) -> torch.Tensor:
    """Per-example weights ``(w_nnpu, w_entropy)``, shape ``(n, 2)``, from the look-ahead
    gradient (released code, after ``grad_eps``):

    * ``w = max(-grad, 0)``, ``w_nnpu += 1e-10``;
    * a labeled positive: ``(1, 0)``;
    * an unlabeled example, in batch order: its row normalised to sum 1 while the entropy
      weights kept so far sum to less than ``entropy_budget`` (released code:
      ``gamma * batch_size`` = 256 / 16), else ``(1, 0)``.

    The budget follows the released code's second network (the sum of the rows processed
    before; its first network sums the whole column as it is being rewritten, an
    order-dependent mix of raw and normalised values)."""
    w = (-weight_gradient).clamp(min=0)
    w = torch.stack([w[:, 0] + 1e-10, w[:, 1]], dim=1)
    lab = torch.as_tensor(labeled, device=w.device).reshape(-1).bool()
    share = w[:, 1] / w.sum(dim=1)
    share = torch.where(lab, torch.zeros_like(share), share)
    spent_before = torch.cumsum(share, 0) - share
    entropy_weight = torch.where(spent_before < entropy_budget, share, torch.zeros_like(share))
    return torch.stack([1.0 - entropy_weight, entropy_weight], dim=1)


def calibrated_loss(logits: torch.Tensor, labeled: torch.Tensor, weights: torch.Tensor, prior: float, loss: str,
                    beta: float, gamma: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(objective, reported risk): the weighted nnPU step on ``weights[:, 0]`` plus the
    entropy weighted by ``weights[:, 1]``, ``(1/n) sum_i w_i1 H_i`` (released code: ``loss
    += (xent * w[:, 1]).mean()``)."""
    obj, risk = weighted_nnpu_objective(logits, labeled, weights[:, 0], prior, loss, beta, gamma)
    return obj + (entropy_per_example(logits) * weights[:, 1]).mean(), risk


# ------------------------------------------------------------------ self-distillation


def mutual_distillation(logits: torch.Tensor, peer_logits: torch.Tensor, loss_value: torch.Tensor, alpha: float
                        ) -> tuple[torch.Tensor, bool]:
    """(term, used): ``mean_i (s_i - s'_i)^2`` between the two students' probabilities (the
    peer's detached), added only when it is below ``alpha`` times the student's current
    loss (released code ``--type mu``, ``alpha`` 0.1: ``F.mse_loss`` of ``1 - s``)."""
    aux = (torch.sigmoid(logits.reshape(-1)) - torch.sigmoid(peer_logits.reshape(-1)).detach()).pow(2).mean()
    used = bool(aux.detach() < alpha * loss_value.detach())
    return (aux if used else aux.new_zeros(())), used


def consistency_loss(student_logits: torch.Tensor, teacher_logits: torch.Tensor) -> torch.Tensor:
    """Mean-teacher consistency ``mean_i (s_i - t_i)^2`` of the sigmoid probabilities (the
    two-class softmax MSE of Tarvainen & Valpola 2017, summed over the two classes, divided
    by 2). The released code applies ``softmax_mse_loss`` to one-logit outputs: a softmax
    over one column is 1, so its term is identically 0 (``docs/losses.md``)."""
    s, t = torch.sigmoid(student_logits.reshape(-1)), torch.sigmoid(teacher_logits.reshape(-1)).detach()
    return (s - t).pow(2).mean()


def consistency_ramp(epoch: float, rampup_epochs: float) -> float:
    """The sigmoid ramp-up ``exp(-5 (1 - clip(epoch, 0, L) / L)^2)`` (Laine & Aila 2017; the
    released code calls it with ``epoch - 30`` and ``L = 400``); 1 when ``L = 0``."""
    if rampup_epochs == 0:
        return 1.0
    phase = 1.0 - min(max(epoch, 0.0), rampup_epochs) / rampup_epochs
    return float(math.exp(-5.0 * phase * phase))


@torch.no_grad()
def ema_update(teacher: nn.Module, student: nn.Module, decay: float, step: int) -> None:
    """Mean teacher: ``teacher <- a teacher + (1 - a) student`` for every parameter with
    ``a = min(1 - 1 / (step + 1), decay)`` (released code ``update_ema_variables``, called
    once per epoch from ``ema_start`` on, ``decay`` 0.999)."""
    momentum_update_(list(teacher.parameters()), list(student.parameters()), min(1.0 - 1.0 / (step + 1), decay))
