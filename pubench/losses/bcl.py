"""BCL: Bayesian self-supervised contrastive loss (importance-weighted negatives), as printed
and as the authors' code computes it.

Paper: 002 (Liu & Wang, "Bayesian Self-Supervised Contrastive Learning"), Sec. 1 and
eq. 1-3 (= eq. 17-18 and 26). For anchor x with N negatives, x_j = exp(s_j) and
x^+ = exp(p):

    Phi_N(x_i)  = (1/N) sum_j 1[x_j <= x_i]                                        (1)
    p(TN | x_i) = (alpha tau- + (1 - 2 alpha) Phi tau-)
                  / (alpha tau- + (1 - alpha) tau+ + (1 - 2 alpha) Phi (tau- - tau+))   (2)
    w_i         = p(TN | x_i) x_i^beta / ((1/N) sum_j p(TN | x_j) x_j^beta)              (3)
    l           = -log  x^+ / (x^+ + sum_i w_i x_i)                               (L_BCL)

Symbols -> arguments: tau+ -> ``tau_plus`` in [0, 1) (tau- = 1 - tau_plus); alpha
(mixture coefficient / encoder macro-AUC, "reasonable" in [0.5, 1]) -> ``alpha``, any
value in [0, 1] keeps p(TN) in [0, 1]; beta (concentration) -> ``beta``; s = cos / t ->
``temperature``. Phi_N is over the anchor's own N negatives, inclusive of ties (so
Phi >= 1/N); in a logits form N is the anchor's number of valid candidates.

Decisions and deviations:

* Printed eq. 1 and 3 reuse the summation index i for the inner sum; the intent (sum
  over j) is evident and implemented.
* x = exp(cos / t). 002 Sec. 2.1 describes embeddings on a sphere of radius 1/t, which
  read literally gives exp(cos / t^2); its experiments follow the DCL/HCL code, i.e.
  exp(cos / t), which is what we use.
* Phi_N is computed on the logits (exp is strictly increasing, so identical ranks) by
  sort + searchsorted, O(N log N) per anchor; the authors' code builds the same Phi_N
  values with an O(N^2) pairwise comparison, but then computes different weights from
  them (``bayesian_official`` below). Phi, hence p(TN), is piecewise constant in the
  embeddings and is not differentiated (its derivative is 0 almost everywhere);
  x_i^beta is differentiated, as in HCL.
* No debiasing subtraction and no clamp: L_BCL has neither (unlike DCL / HCL).
* Degenerate cases: tau+ = 0 gives p(TN) = 1 identically (including the 0/0 at
  alpha = 1, Phi = 1); if every p(TN) x^beta is 0 (alpha = 1 and all negatives tied
  at the top) the weights are undefined and the negative sum is taken as 0.

Special case: alpha = 1/2 makes p(TN) = tau- for every sample, so w_i = x_i^beta /
mean_j x_j^beta (HCL's weights without its debiasing term), and beta = 0 then gives
w_i = 1: BCL(alpha = 0.5, beta = 0) is exactly InfoNCE, for any tau_plus < 1.

Authors' code (``bayesian_official``): ``criterion(..., estimator='BCL')`` and ``cdf_trans``
in image/main.py of liubin06/BCL (latest revision; 002 B.2 links github.com/liubin06/BNS,
which holds the authors' Bayesian negative sampling code for recommendation, not this
loss). From the same inclusive Phi = Phi_N over the anchor's N negatives it computes

    u      = cdf_trans(Phi): the root in [0, 1] of  a u^2 + b u = Phi,  a = (1 - 2 alpha)
             (tau- - tau+) + 1e-3,  b = 2 (alpha tau- + (1 - alpha) tau+)
    phi1   = 2 (1 - u),  phi2 = 2 u                      (phi_(1) / phi, phi_(2) / phi, eq. 11-12)
    x_TN   = alpha phi1 + (1 - alpha) phi2,  x_FN = (1 - alpha) phi1 + alpha phi2   (eq. 13-14)
    x_HTN  = (alpha (1 - beta) phi1 + (1 - alpha) beta phi2) / (alpha (1 - beta) + (1 - alpha) beta + 1e-3)
    w_i    = x_HTN / (tau- x_TN + tau+ x_FN)
    l      = -log  x^+ / (x^+ + sum_i w_i x_i)

It differs from eq. 1-3 in three ways. (1) Eq. 2 evaluates the posterior at Phi_N, the
empirical CDF of the unlabeled (mixture) similarities; the code first inverts the mixture
CDF, tau- F_TN(u) + tau+ F_FN(u) = 2 (alpha tau- + (1 - alpha) tau+) u + (1 - 2 alpha)
(tau- - tau+) u^2, to the latent CDF value u of eq. 11-14 (a quadratic; 1e-3 is added to
its leading coefficient, which also keeps it from vanishing at alpha = 1/2 or tau+ = 1/2).
(2) Hardness: beta is not the exponent of x^beta (eq. 3, vMF tilt) but a mixing weight in
[0, 1] between the order-statistic densities phi1 and phi2 (its argparse help: "valued in
[0.5,1]"); beta = 1/2 gives x_HTN = x_TN / (1 + 2e-3), no tilt. (3) The weights are the
density ratio x_HTN / (mixture density), not normalized by the batch mean of eq. 3.
An earlier revision (main.py at the repository root, March 2023) ranked each negative
among the anchor's whole row of 2b similarities (itself and its positive included) and
wrote the quadratic with (1 - 2 tau+)(2 - 4 alpha - 1e-3)/2; ``bayesian_official``
follows the latest. 002 B.2's beta schedule (2 - 0.005 epoch) is therefore only
meaningful for ``bayesian``; the latest script keeps beta constant (default 1.0) with a
fixed, linearly increased or AUC-estimated alpha (the older one hard-codes alpha =
0.5 + 0.35 epoch / 400 and its help text gives beta "valued in [0,Infinity]"). Gradients flow through x_i only (the
code's weights come from comparisons), as here. Special case (tested): beta = 1/2 with
alpha = 1/2 or tau+ = 0 gives w_i = 1/(1 + 2e-3) for every negative.

Numerics: sum_i w_i x_i = N exp(LSE(log p + (beta+1) s) - LSE(log p + beta s)), never
forming x^beta or x^{beta+1} (e^{(beta+1)/t} overflows float32 for beta > ~5.2 at t = 0.07);
the official variant's sum is LSE(log w + s).
Shapes: two-view ``z1, z2`` ``(b, d)`` -> mean over the 2b anchors; logits form
``pos_logits (n,)``, ``neg_logits (n, K)``, ``neg_mask (n, K)`` -> per ``reduction``.
"""

from __future__ import annotations

import torch

from pubench.losses.base import LOSSES
from pubench.losses._pairs import (
    check_logits,
    check_real,
    check_reduction,
    check_temperature,
    check_unit,
    check_views,
    empirical_cdf,
    masked_logsumexp,
    reduce,
    two_view_logits,
)
from pubench.losses.hard import log_tilted_sum


def log_posterior_true_negative(phi: torch.Tensor, *, tau_plus: float, alpha: float) -> torch.Tensor:
    """``log p(TN | x)`` of eq. 2 from the empirical CDF ``phi`` (``-inf`` where p = 0)."""
    tau_minus = 1.0 - tau_plus
    with torch.no_grad():
        num = alpha * tau_minus + (1.0 - 2.0 * alpha) * phi * tau_minus
        den = (
            alpha * tau_minus
            + (1.0 - alpha) * tau_plus
            + (1.0 - 2.0 * alpha) * phi * (tau_minus - tau_plus)
        )
        num, den = num.clamp_min(0.0), den.clamp_min(0.0)  # remove -0.0 / rounding below 0
        degenerate = den <= 0  # only alpha = 1, phi = 1, tau_plus = 0: p(TN) = 1
        p = torch.where(degenerate, torch.ones_like(num), num / torch.where(degenerate, 1.0, den))
        return torch.log(p.clamp(max=1.0))


def bayesian_from_logits(
    pos_logits: torch.Tensor,
    neg_logits: torch.Tensor,
    *,
    tau_plus: float,
    alpha: float,
    beta: float,
    neg_mask: torch.Tensor | None = None,
    reduction: str = "mean",
) -> torch.Tensor:
    """BCL on a logits form; Phi_N over each anchor's valid candidates."""
    check_reduction(reduction)
    beta = check_real("beta", beta)
    tau_plus = check_unit("tau_plus", tau_plus, open_right=True)
    alpha = check_unit("alpha", alpha)
    neg_mask, n_neg = check_logits(pos_logits, neg_logits, neg_mask)
    phi = empirical_cdf(neg_logits, neg_mask)
    log_p = log_posterior_true_negative(phi, tau_plus=tau_plus, alpha=alpha)
    log_sum = log_tilted_sum(neg_logits, neg_mask, n_neg, log_p, beta)
    loss = torch.logaddexp(pos_logits, log_sum) - pos_logits
    return reduce(loss, reduction)


@LOSSES.register("bayesian", from_logits=bayesian_from_logits,
                 test_config={"temperature": 0.5, "tau_plus": 0.1, "alpha": 0.9, "beta": 0.9})
def bayesian(
    z1, z2, temperature: float, tau_plus: float, alpha: float, beta: float, *, reduction: str = "mean"
):
    """BCL over the 2b views: negatives = the N = 2b - 2 other views, positive = a(i)."""
    check_views(z1, z2)
    pos, neg = two_view_logits(z1, z2, check_temperature(temperature))
    return bayesian_from_logits(pos, neg, tau_plus=tau_plus, alpha=alpha, beta=beta, reduction=reduction)


# ---------------------------------------------------------------- the authors' code
OFFICIAL_EPS = 1e-3  # the released code's two stabilizers (cdf_trans's leading coefficient, x_HTN)


def official_importance_weights(phi: torch.Tensor, *, tau_plus: float, alpha: float, beta: float) -> torch.Tensor:
    """``w`` of the released ``criterion(estimator='BCL')`` from the empirical CDF ``phi``."""
    tau_minus = 1.0 - tau_plus
    with torch.no_grad():
        a = (1.0 - 2.0 * alpha) * (tau_minus - tau_plus) + OFFICIAL_EPS
        b = 2.0 * (alpha * tau_minus + (1.0 - alpha) * tau_plus)
        # cdf_trans's root (-b + sqrt(b^2 + 4 a phi)) / (2 a), rationalized: no 0/0 as a -> 0
        root_den = b + torch.sqrt((b * b + 4.0 * a * phi).clamp_min(0.0))
        u = torch.where(root_den > 0, 2.0 * phi / torch.where(root_den > 0, root_den, 1.0), 0.0)
        phi1, phi2 = 2.0 * (1.0 - u), 2.0 * u
        x_tn = alpha * phi1 + (1.0 - alpha) * phi2
        x_fn = (1.0 - alpha) * phi1 + alpha * phi2
        hard_mix = alpha * (1.0 - beta) + (1.0 - alpha) * beta + OFFICIAL_EPS
        x_htn = (alpha * (1.0 - beta) * phi1 + (1.0 - alpha) * beta * phi2) / hard_mix
        mixture = tau_minus * x_tn + tau_plus * x_fn
        return torch.where(mixture > 0, x_htn / torch.where(mixture > 0, mixture, 1.0), 0.0)


def bayesian_official_from_logits(
    pos_logits: torch.Tensor,
    neg_logits: torch.Tensor,
    *,
    tau_plus: float,
    alpha: float,
    beta: float,
    neg_mask: torch.Tensor | None = None,
    reduction: str = "mean",
) -> torch.Tensor:
    """BCL as the authors' code computes it, on a logits form; Phi_N over each anchor's valid candidates."""
    check_reduction(reduction)
    tau_plus = check_unit("tau_plus", tau_plus, open_right=True)
    alpha = check_unit("alpha", alpha)
    beta = check_unit("beta", beta)
    neg_mask, _ = check_logits(pos_logits, neg_logits, neg_mask)
    phi = empirical_cdf(neg_logits, neg_mask)
    weights = official_importance_weights(phi, tau_plus=tau_plus, alpha=alpha, beta=beta)
    log_sum = masked_logsumexp(torch.log(weights) + neg_logits, neg_mask)
    loss = torch.logaddexp(pos_logits, log_sum) - pos_logits
    return reduce(loss, reduction)


@LOSSES.register("bayesian_official", from_logits=bayesian_official_from_logits,
                 test_config={"temperature": 0.5, "tau_plus": 0.1, "alpha": 0.9, "beta": 0.9})
def bayesian_official(
    z1, z2, temperature: float, tau_plus: float, alpha: float, beta: float, *, reduction: str = "mean"
):
    """BCL of the released code over the 2b views (beta is its hardness mixing weight in [0, 1])."""
    check_views(z1, z2)
    pos, neg = two_view_logits(z1, z2, check_temperature(temperature))
    return bayesian_official_from_logits(
        pos, neg, tau_plus=tau_plus, alpha=alpha, beta=beta, reduction=reduction
    )
