"""PU classification risks: PN, PvU, uPU (du Plessis et al. 2014/2015), nnPU (Kiryo et al.
2017), and the variational loss of vPU (Chen et al. 2020a).

Notation: ``g`` is the real-valued score (logit) of a binary classifier, positive class
``+1``; ``l(z, y)`` a surrogate loss of the margin ``y z``. From a labeled-positive set
``P`` and an unlabeled set ``U`` whose positive fraction is the class prior ``pi``:

    R_P^+ = E_P[l(g, +1)],   R_P^- = E_P[l(g, -1)],   R_U^- = E_U[l(g, -1)]

    PN  (plain):  E_{x,y}[l(g(x), y)]                        (targets given, e.g. U -> -1)
    uPU:          pi R_P^+ + R_U^- - pi R_P^-                 (du Plessis et al. 2014 / 2015)
    nnPU:         pi R_P^+ + max(0, R_U^- - pi R_P^-)         (Kiryo et al. 2017, eq. 6)
    PvU:          2 pi R_P^+ + R_U^-                          (cost-sensitive P-vs-U classifier,
                                                               du Plessis et al. 2014; 001's "PvU")

``U`` is the unlabeled part only: in 001's single-training-set setting the labeled
positives are training samples too but are not in ``U``, and ``pi`` is the positive
fraction among the unlabeled samples (001 A.1.1, the Split's ``prior``). In a
case-control split the labeled positives are drawn separately and ``U`` is the whole
unlabeled sample. Either way the caller passes scores and a boolean ``labeled`` mask.

PvU is the biased baseline of 001 Table 2: a plain classifier of labeled positives (class
+1) against unlabeled examples (class -1), made cost-sensitive (Elkan 2001: reweighting a
class moves the decision threshold) with the costs under which P-vs-U classification
is PN classification (du Plessis, Niu & Sugiyama 2014, "Analysis of learning from
positive and unlabeled data": with the 0-1 loss, ``R(f) = 2 pi R_P^+ + R_U^- - pi``). Its
minimizer decides positive iff ``2 pi p_P(x) > p_U(x)``, i.e. ``pi p_P(x) > (1 - pi) p_N(x)``,
the Bayes decision, whatever classification-calibrated surrogate is used; it is "biased"
because, unlike uPU, it keeps the positives of U inside the negative term (with a
non-symmetric loss such as the logistic one the risk value is not the PN risk). With the
symmetric sigmoid loss (``l(z, +1) + l(z, -1) = 1``) it is exactly ``uPU + pi``, so the
spec uses it with the logistic loss (cross-entropy, 001's "standard loss (e.g. CE)"; the
PvU of Garg et al. 2021's code (acmi-lab/PU_learning; 001 cites the paper for its
benchmarks) is a cross-entropy P-vs-U classifier too, made cost-sensitive by moving its
threshold with the prior instead of reweighting). The earlier ``pi R_P^+ + R_U^-`` (uPU without its correction) scores the
perfect and the all-negative classifier alike on the positives (both ``pi`` with the
sigmoid loss) and trained into "everything negative".

vPU (Chen et al. 2020a, "A Variational Approach for Learning from Positive and Unlabeled
Data", NeurIPS 2020; code HC-Feynman/vpu) models ``Phi(x) = sigmoid(g(x))`` (its code: the
second output of a 2-way log-softmax, the same family) and minimizes the variational loss

    L_var(Phi) = log E_x[Phi(x)] - E_P[log Phi(x)]                 (x ~ p(x), the whole data)

plus ``lam`` times the MixUp regularizer ``E[(log Phi~ - log Phi(x~))^2]`` with
``x~ = mu x_u + (1 - mu) x_p``, ``Phi~ = mu Phi(x_u) + (1 - mu) * 1``, ``mu ~ Beta(a, a)``:
:func:`vpu_variational_loss`, :func:`vpu_mixup`, :func:`vpu_mixup_regularizer`. The
training loop is :class:`pubench.pu.end_to_end.VPU`.

Empirical means over a mini-batch: a term whose set is empty in the batch is 0 (the
nnPU reference code divides by ``max(1, n)``).

Training with nnPU (Kiryo et al. 2017, Algorithm 1) does not simply descend the
non-negative risk: when the negative-risk estimate ``r = R_U^- - pi R_P^-`` falls below
``-beta`` it takes a step along ``-gamma * grad r`` ("defeat" the overfitting), else a
step along ``grad`` of the non-negative risk. :func:`nnpu_objective` returns the
surrogate whose gradient is that step, together with the risk value to report. Note:
the authors' chainer code uses the gradient of the *uPU* risk in the first branch; for
``r >= 0`` (always the case with the default ``beta = 0``) both coincide; for
``-beta <= r < 0`` we follow the paper's Algorithm 1 (gradient of ``pi R_P^+`` only).

Surrogate losses (``l(z, y)``, ``y`` in {+1, -1}):
``sigmoid``: ``sigmoid(-y z)`` (Kiryo et al.'s choice); ``logistic``: ``log(1 + exp(-y z))``
(= binary cross-entropy with logits).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F

from pubench.utils.registry import Registry

SurrogateLoss = Callable[[torch.Tensor, int], torch.Tensor]


def sigmoid_loss(z: torch.Tensor, y: int) -> torch.Tensor:
    return torch.sigmoid(-y * z)


def logistic_loss(z: torch.Tensor, y: int) -> torch.Tensor:
    return F.softplus(-y * z)


SURROGATES: dict[str, SurrogateLoss] = {"sigmoid": sigmoid_loss, "logistic": logistic_loss}


def surrogate(loss: str | SurrogateLoss) -> SurrogateLoss:
    """The surrogate loss ``l(z, y)`` by name (or the callable itself)."""
    if callable(loss):
        return loss
    try:
        return SURROGATES[loss]
    except KeyError:
        raise ValueError(f"unknown surrogate loss {loss!r}; one of {sorted(SURROGATES)}") from None


def _check(scores: torch.Tensor, mask: torch.Tensor, name: str) -> tuple[torch.Tensor, torch.Tensor]:
    scores = scores.reshape(-1) if scores.dim() == 2 and scores.shape[1] == 1 else scores
    if scores.dim() != 1:
        raise ValueError(f"scores must be (n,) or (n, 1), got {tuple(scores.shape)}")
    mask = torch.as_tensor(mask, device=scores.device)
    if mask.shape != scores.shape:
        raise ValueError(f"{name} must have shape {tuple(scores.shape)}, got {tuple(mask.shape)}")
    return scores, mask.bool()


def _check_prior(prior: float) -> float:
    prior = float(prior)
    if not 0.0 <= prior <= 1.0:
        raise ValueError(f"prior must be in [0, 1], got {prior}")
    return prior


def _mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of ``values[mask]``; 0 when the mask is empty (reference code: sum / max(1, n))."""
    n = mask.sum().clamp(min=1).to(values.dtype)
    return (values * mask.to(values.dtype)).sum() / n


def pu_terms(scores, labeled, prior: float, loss="sigmoid") -> dict[str, torch.Tensor]:
    """``pi R_P^+`` (``positive``) and ``R_U^- - pi R_P^-`` (``negative``)."""
    scores, labeled = _check(scores, labeled, "labeled")
    prior = _check_prior(prior)
    ell = surrogate(loss)
    r_p_plus = _mean(ell(scores, +1), labeled)
    r_p_minus = _mean(ell(scores, -1), labeled)
    r_u_minus = _mean(ell(scores, -1), ~labeled)
    return {"positive": prior * r_p_plus, "negative": r_u_minus - prior * r_p_minus}


def pn_risk(scores, targets, loss="logistic") -> torch.Tensor:
    """Plain supervised risk ``mean_i l(g(x_i), y_i)`` with ``targets`` 1 (-> +1) / 0 (-> -1).

    With the logistic loss this is the binary cross-entropy. On PU data with the
    observed labels as targets it is the naive "unlabeled = negative" classifier.
    """
    scores, pos = _check(scores, targets, "targets")
    ell = surrogate(loss)
    return torch.where(pos, ell(scores, +1), ell(scores, -1)).mean()


def upu_risk(scores, labeled, prior: float, loss="sigmoid") -> torch.Tensor:
    """Unbiased PU risk ``pi R_P^+ + R_U^- - pi R_P^-`` (du Plessis et al. 2014)."""
    t = pu_terms(scores, labeled, prior, loss)
    return t["positive"] + t["negative"]


def nnpu_risk(scores, labeled, prior: float, loss="sigmoid") -> torch.Tensor:
    """Non-negative PU risk ``pi R_P^+ + max(0, R_U^- - pi R_P^-)`` (Kiryo et al. 2017)."""
    t = pu_terms(scores, labeled, prior, loss)
    return t["positive"] + t["negative"].clamp(min=0)


def pvu_risk(scores, labeled, prior: float, loss="logistic") -> torch.Tensor:
    """Cost-sensitive positive-vs-unlabeled risk ``2 pi R_P^+ + R_U^-``: labeled positives
    are class +1 with cost ``2 pi``, every unlabeled example is class -1 with cost 1 (du
    Plessis et al. 2014, the cost-sensitive form of PU classification; 001's PvU baseline,
    see the module docstring). Its minimizer is the Bayes classifier; with the sigmoid
    loss it equals ``upu_risk + pi``."""
    scores, labeled = _check(scores, labeled, "labeled")
    prior = _check_prior(prior)
    ell = surrogate(loss)
    return 2.0 * prior * _mean(ell(scores, +1), labeled) + _mean(ell(scores, -1), ~labeled)


def nnpu_objective(scores, labeled, prior: float, loss="sigmoid", beta: float = 0.0,
                   gamma: float = 1.0) -> tuple[torch.Tensor, torch.Tensor, bool]:
    """One nnPU training step (Kiryo et al. 2017, Algorithm 1).

    Returns ``(objective, risk, defeated)``: call ``objective.backward()``; ``risk`` is the
    detached non-negative risk estimate to report; ``defeated`` says whether the step was
    the "defeat" step ``-gamma * grad(R_U^- - pi R_P^-)`` (taken when that estimate is
    below ``-beta``).
    """
    if beta < 0 or gamma < 0:
        raise ValueError(f"beta and gamma must be >= 0, got beta={beta}, gamma={gamma}")
    t = pu_terms(scores, labeled, prior, loss)
    risk = (t["positive"] + t["negative"].clamp(min=0)).detach()
    if bool(t["negative"].detach() < -beta):
        return -gamma * t["negative"], risk, True
    return t["positive"] + t["negative"].clamp(min=0), risk, False


def imbalanced_nnpu_objective(scores, labeled, prior: float, target_prior: float, loss="sigmoid", beta: float = 0.0,
                              gamma: float = 1.0) -> tuple[torch.Tensor, torch.Tensor, bool]:
    """One ImbalancednnPU training step (Su, Chen & Xu 2021, "Positive-Unlabeled Learning
    from Imbalanced Data", IJCAI; its oversampled nnPU risk, as the released code
    guangxinsuuu/Positive-and-Unlabeled-Learning-from-Imbalanced-Data computes it in
    ``pu_risk_estimators_sigmoid`` with ``prior_prime = 0.5``):

        pi' R_P^+ + max(0, (1 - pi') / (1 - pi) (R_U^- - pi R_P^-))

    the nnPU risk of the problem re-balanced to the prior ``target_prior`` ``pi'`` (0.5:
    balanced). The non-negative correction is applied to the re-weighted negative part
    ``r`` as nnPU's (Algorithm 1): when ``r < -beta`` the step is ``-gamma * grad r``.
    Returns ``(objective, risk, defeated)`` like :func:`nnpu_objective`, which it equals
    when ``target_prior == prior``.
    """
    if beta < 0 or gamma < 0:
        raise ValueError(f"beta and gamma must be >= 0, got beta={beta}, gamma={gamma}")
    target_prior = _check_prior(target_prior)
    prior = _check_prior(prior)
    if prior >= 1.0:
        raise ValueError("imbalanced_nnpu_objective needs prior < 1")
    scores, labeled = _check(scores, labeled, "labeled")
    ell = surrogate(loss)
    positive = target_prior * _mean(ell(scores, +1), labeled)
    negative = (1.0 - target_prior) / (1.0 - prior) * (_mean(ell(scores, -1), ~labeled)
                                                       - prior * _mean(ell(scores, -1), labeled))
    risk = (positive + negative.clamp(min=0)).detach()
    if bool(negative.detach() < -beta):
        return -gamma * negative, risk, True
    return positive + negative.clamp(min=0), risk, False


def pubn_threshold(sigma_unlabeled: torch.Tensor, prior: float, tau: float) -> float:
    """PUbN's ``eta`` (Hsieh et al. 2019, Sec. 4): the ``(1 - pi) tau`` quantile of the
    estimated ``sigma(x) = p(y = +1 | x)`` over the unlabeled sample, so that a fraction
    ``tau`` of U's expected negatives count as negatives (``sigma <= eta``). Linear
    interpolation between order statistics (the released code: numpy's percentile at the
    integer percent ``int(100 (1 - pi) tau)``)."""
    sigma_unlabeled = sigma_unlabeled.reshape(-1)
    if sigma_unlabeled.numel() == 0:
        raise ValueError("pubn_threshold needs a non-empty unlabeled sample")
    prior = _check_prior(prior)
    if not 0.0 <= tau <= 1.0:
        raise ValueError(f"tau must be in [0, 1], got {tau}")
    return float(torch.quantile(sigma_unlabeled.double(), (1.0 - prior) * tau))


def pubn_risk(scores, labeled, sigma: torch.Tensor, prior: float, eta: float, loss="logistic") -> torch.Tensor:
    """PUbN's risk without biased negatives (Hsieh, Niu & Sugiyama 2019, "Classification from
    Positive, Unlabeled and Biased Negative Data", ICML; its PUbN\\N, rho = 0):

        pi E_P[l(g, +1)] + pi E_P[1(sigma > eta) l(g, -1) (1 - sigma) / sigma]
                         + E_U[1(sigma <= eta) l(g, -1) (1 - sigma)]

    with ``sigma`` the per-example estimate of ``p(y = +1 | x)`` (fixed, from a first nnPU
    model) and ``eta`` :func:`pubn_threshold`: the negative risk is taken on the unlabeled
    examples that are confidently negative and completed through the positives for the
    rest. Empty sets contribute 0."""
    scores, labeled = _check(scores, labeled, "labeled")
    sigma = torch.as_tensor(sigma, dtype=scores.dtype, device=scores.device).reshape(-1)
    if sigma.shape != scores.shape:
        raise ValueError(f"sigma must have shape {tuple(scores.shape)}, got {tuple(sigma.shape)}")
    if bool(((sigma < 0) | (sigma > 1)).any()):
        raise ValueError("sigma must be probabilities in [0, 1]")
    prior = _check_prior(prior)
    ell = surrogate(loss)
    high = sigma > eta
    ratio = torch.where(high, (1.0 - sigma) / sigma.clamp(min=torch.finfo(sigma.dtype).tiny), torch.zeros_like(sigma))
    positive = prior * _mean(ell(scores, +1) + ell(scores, -1) * ratio, labeled)
    unlabeled = _mean(torch.where(high, torch.zeros_like(sigma), ell(scores, -1) * (1.0 - sigma)), ~labeled)
    return positive + unlabeled


def vpu_variational_loss(log_phi_x: torch.Tensor, log_phi_p: torch.Tensor) -> torch.Tensor:
    """vPU's variational loss ``log mean_x Phi(x) - mean_P log Phi(x)`` (Chen et al. 2020a,
    L_var), from ``log Phi`` of a sample ``x`` of the data distribution and of labeled
    positives; the log-mean-exp is computed stably. Adding a constant to ``log Phi``
    (scaling ``Phi``) leaves it unchanged."""
    log_phi_x, log_phi_p = log_phi_x.reshape(-1), log_phi_p.reshape(-1)
    if log_phi_x.numel() == 0 or log_phi_p.numel() == 0:
        raise ValueError("vpu_variational_loss needs a non-empty data sample and positive sample")
    return torch.logsumexp(log_phi_x, 0) - math.log(log_phi_x.numel()) - log_phi_p.mean()


def vpu_mixup(x_u: torch.Tensor, x_p: torch.Tensor, phi_u: torch.Tensor, mu: float
              ) -> tuple[torch.Tensor, torch.Tensor]:
    """vPU's MixUp pairs (Chen et al. 2020a, the consistency regularizer; released code):
    each example ``x_u[i]`` of the data sample is mixed with the positive ``x_p[i]`` (the
    caller permutes the positives) as ``mu x_u + (1 - mu) x_p``, with target
    ``mu Phi(x_u) + (1 - mu) * 1`` (a labeled positive has ``Phi = 1``). Returns
    ``(x_mixed, phi_target)``."""
    if x_u.shape != x_p.shape or phi_u.reshape(-1).shape[0] != x_u.shape[0]:
        raise ValueError(f"vpu_mixup: x_u {tuple(x_u.shape)}, x_p {tuple(x_p.shape)}, phi_u {tuple(phi_u.shape)}")
    if not 0.0 <= mu <= 1.0:
        raise ValueError(f"mu must be in [0, 1], got {mu}")
    return mu * x_u + (1.0 - mu) * x_p, mu * phi_u.reshape(-1) + (1.0 - mu)


def vpu_mixup_regularizer(log_phi_mixed: torch.Tensor, phi_target: torch.Tensor) -> torch.Tensor:
    """vPU's MixUp regularizer ``mean_i (log Phi~_i - log Phi(x~_i))^2`` (Chen et al. 2020a)."""
    log_phi_mixed, phi_target = log_phi_mixed.reshape(-1), phi_target.reshape(-1)
    if log_phi_mixed.shape != phi_target.shape:
        raise ValueError(f"shapes differ: {tuple(log_phi_mixed.shape)} vs {tuple(phi_target.shape)}")
    return ((phi_target.log() - log_phi_mixed) ** 2).mean()


def label_distribution_loss(prob: torch.Tensor, labeled, prior: float) -> torch.Tensor:
    """Dist-PU's label-distribution loss (Zhao et al. 2022; 004 eq. 27, L_dis):

        2 pi |mean_P s(x) - 1| + |mean_U s(x) - pi|

    from the predicted positive-class probabilities ``prob`` (``s = sigmoid(g)``) and the
    ``labeled`` mask. The first term is ``2 pi R_P`` of 004 eq. 26 with the 0-1 prediction
    relaxed to ``s``; the second aligns the mean prediction on U with the prior. A term
    whose set is empty in the batch is 0 (as the released code). The released code
    (Ray-rui/Dist-PU..., LabelDistributionLoss with one histogram bin) computes this loss
    divided by ``2 pi``: see :class:`pubench.pu.dist_pu.DistPU`."""
    prob, labeled = _check(prob, labeled, "labeled")
    prior = _check_prior(prior)
    if bool(((prob < 0) | (prob > 1)).any()):
        raise ValueError("label_distribution_loss needs probabilities in [0, 1]")
    positive = (_mean(prob, labeled) - 1.0).abs() if bool(labeled.any()) else prob.new_zeros(())
    unlabeled = (_mean(prob, ~labeled) - prior).abs() if bool((~labeled).any()) else prob.new_zeros(())
    return 2.0 * prior * positive + unlabeled


def binary_entropy(logits: torch.Tensor) -> torch.Tensor:
    """Mean binary entropy ``-(s log s + (1 - s) log(1 - s))`` of ``s = sigmoid(logits)``
    (Dist-PU's entropy minimization, Zhao et al. 2022), computed from the logits
    (``log s = -softplus(-z)``, ``log(1 - s) = -softplus(z)``); 0 for an empty input."""
    z = logits.reshape(-1)
    if z.numel() == 0:
        return z.new_zeros(())
    s = torch.sigmoid(z)
    return (s * F.softplus(-z) + (1.0 - s) * F.softplus(z)).mean()


def mixup_bce(logits: torch.Tensor, target_a: torch.Tensor, target_b: torch.Tensor, lam: float) -> torch.Tensor:
    """MixUp's binary cross-entropy (Zhang et al. 2018; Dist-PU's MixUp stage):
    ``lam BCE(s, t_a) + (1 - lam) BCE(s, t_b)`` with ``s = sigmoid(logits)`` of the mixed
    inputs and soft targets ``t_a``, ``t_b`` in [0, 1] (the targets of the two mixed inputs)."""
    z = logits.reshape(-1)
    target_a, target_b = target_a.reshape(-1).to(z.dtype), target_b.reshape(-1).to(z.dtype)
    if target_a.shape != z.shape or target_b.shape != z.shape:
        raise ValueError(f"mixup_bce: logits {tuple(z.shape)}, targets {tuple(target_a.shape)}, {tuple(target_b.shape)}")
    if not 0.0 <= lam <= 1.0:
        raise ValueError(f"lam must be in [0, 1], got {lam}")
    bce = F.binary_cross_entropy_with_logits
    return lam * bce(z, target_a) + (1.0 - lam) * bce(z, target_b)


#: the risks a classifier trains with (``risk:`` of a probe, fine-tuning or end-to-end method):
#: name -> its risk function; :mod:`pubench.pu.objective` trains with them
RISKS = Registry("risk")
for _name, _risk in (("pn", pn_risk), ("upu", upu_risk), ("nnpu", nnpu_risk), ("pvu", pvu_risk)):
    RISKS.register(_name, _risk)
