"""The stochastic process of BCL's numerical experiment and its four estimators.

Paper ``bcl`` (002), Section 4 and Appendix B.1, Algorithms 1-3. For each of M anchors:

* Algorithm 1: an anchor-specific proposal phi = U(a, b) inside [-1/t^2, 1/t^2];
  each of N unlabeled samples is a false negative (FN) with probability tau_plus, else a
  true negative (TN); its score is drawn from phi_FN or phi_TN, then mapped to exp(x/t).
* Algorithms 2-3: accept-reject sampling from phi_TN(x) = [2a + (2-4a) Phi(x)] phi(x) and
  phi_FN(x) = [2(1-a) + (4a-2) Phi(x)] phi(x) (alpha = a) with proposal phi, envelope
  c = 2 alpha, acceptance probabilities [alpha + (1-2alpha) Phi]/alpha (TN) and
  [1-alpha + (2alpha-1) Phi]/alpha (FN). Vectorized: every round redraws all pending
  slots of all anchors at once.

Estimators of the TN mean, per anchor: theta_SUP (eq. 27, the target), theta_BIASED (29),
theta_DCL (30, with K extra FN "positive" draws) and theta_BCL (28 with weights of eq. 26,
posterior of eq. 17, concentration beta).

The CDF in eq. (17) is Phi, the CDF of the proposal phi (its derivation divides phi_TN and
phi_FN, both written as functions of Phi, eq. 11-14). The unlabeled sample is drawn from the
mixture tau^- phi_TN + tau^+ phi_FN, so its empirical CDF (eq. 18) estimates the mixture CDF
F(Phi) = A Phi + B Phi^2 (A = 2(alpha tau^- + (1-alpha) tau^+), B = (1-2 alpha)(tau^- - tau^+)),
not Phi. theta_BCL therefore inverts F on the empirical CDF before eq. (17), as the
authors' simulation script does (``proposal_cdf``); fed straight in, the mixture CDF biases
p(TN|x) (at alpha = 1 it makes theta_BCL worse than theta_DCL).

Choices the paper leaves open (recorded in the spec ``fig5-bcl``):

* How gamma slides the interval: the base interval is [-0.5, 0.5] (B.1); each anchor
  shifts it by delta ~ U(-gamma, gamma) * (1/t^2 - 0.5), so gamma = 0 keeps [-0.5, 0.5] and
  gamma = 1 lets it reach the bounds +-1/t^2. (The authors' script instead draws
  a ~ U(-1/t^2, (gamma-1)/t^2) and b ~ U((1-gamma)/t^2, 1/t^2), which contradicts B.1's
  "original interval a = -0.5, b = 0.5".)
* The estimators know the true alpha and tau_plus of the process.
* Eq. (30) is used as printed, without DCL's clamp at e^{-1/t} (the authors' script clamps).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr
from scipy.stats import rankdata


@dataclass(frozen=True)
class ProcessConfig:
    """Parameters of Algorithm 1. Symbols: alpha, gamma, t, tau_plus (tau^+), M, N, K."""

    M: int
    N: int
    K: int
    alpha: float
    gamma: float
    t: float
    tau_plus: float

    def __post_init__(self):
        if not 0.5 <= self.alpha <= 1.0:
            raise ValueError(f"alpha must lie in [0.5, 1] (Sec. 3.1), got {self.alpha}")
        if not 0.0 <= self.gamma <= 1.0:
            raise ValueError(f"gamma must lie in [0, 1], got {self.gamma}")
        if not 0.0 < self.tau_plus < 1.0:
            raise ValueError(f"tau_plus must lie in (0, 1), got {self.tau_plus}")
        if min(self.M, self.N, self.K) < 1 or self.t <= 0:
            raise ValueError("M, N, K must be >= 1 and t > 0")


@dataclass
class Observations:
    """exp(x/t) scores: ``x`` (M, N) unlabeled, ``is_tn`` (M, N), ``pos`` (M, K) extra FN draws."""

    x: np.ndarray
    is_tn: np.ndarray
    pos: np.ndarray
    rounds: int


def proposal_intervals(cfg: ProcessConfig, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Anchor-specific U(a, b): [-0.5, 0.5] slid by U(-gamma, gamma) * (1/t^2 - 0.5)."""
    bound = 1.0 / cfg.t**2
    shift = rng.uniform(-cfg.gamma, cfg.gamma, size=cfg.M) * max(bound - 0.5, 0.0)
    return -0.5 + shift, 0.5 + shift


def accept_reject(a: np.ndarray, b: np.ndarray, n: int, tn: np.ndarray, alpha: float,
                  rng: np.random.Generator) -> tuple[np.ndarray, int]:
    """Draw scores from phi_TN (where ``tn``) or phi_FN, per anchor, by Algorithms 2-3, with
    the anchor-specific uniform proposals U(a_m, b_m) of Algorithm 1.

    ``a, b``: (M,) proposal bounds; ``tn``: (M, n) bool. Returns (M, n) raw scores and the
    number of rounds used.
    """
    width = b - a
    return accept_reject_from(lambda rows, k: a[rows] + width[rows] * rng.random(k),
                              lambda x, rows: (x - a[rows]) / width[rows], tn, alpha, rng)


def accept_reject_normal(mean: float, std: float, tn: np.ndarray, alpha: float,
                         rng: np.random.Generator) -> tuple[np.ndarray, int]:
    """Algorithms 2-3 with the proposal phi = N(mean, std^2) for every anchor (Sec. 3.1's
    illustration, Fig. 3: phi = N(0, 1)); Phi is the normal CDF."""
    return accept_reject_from(lambda rows, k: mean + std * rng.standard_normal(k),
                              lambda x, rows: ndtr((x - mean) / std), tn, alpha, rng)


def accept_reject_from(draw, cdf, tn: np.ndarray, alpha: float, rng: np.random.Generator) -> tuple[np.ndarray, int]:
    """Accept-reject sampling of phi_TN (where ``tn``) or phi_FN from a proposal phi with CDF Phi
    (Algorithms 2-3): a candidate x ~ phi is accepted with probability [alpha + (1-2alpha) Phi(x)]/alpha
    (TN) or [1-alpha + (2alpha-1) Phi(x)]/alpha (FN). Vectorized: every round redraws all
    pending slots at once. ``draw(rows, k)`` returns k candidates for the anchors ``rows``
    (one per pending slot), ``cdf(x, rows)`` their Phi. Returns the (M, n) raw scores and the
    number of rounds."""
    out = np.empty(tn.shape)
    pending = np.ones(tn.shape, dtype=bool)
    rounds = 0
    while pending.any():
        rounds += 1
        idx = np.nonzero(pending)
        cand = draw(idx[0], idx[0].size)
        phi_cdf = cdf(cand, idx[0])
        p_tn = (alpha + (1 - 2 * alpha) * phi_cdf) / alpha
        p_fn = (1 - alpha + (2 * alpha - 1) * phi_cdf) / alpha
        accept = rng.random(idx[0].size) <= np.where(tn[idx], p_tn, p_fn)
        out[idx[0][accept], idx[1][accept]] = cand[accept]
        pending[idx[0][accept], idx[1][accept]] = False
    return out, rounds


def simulate(cfg: ProcessConfig, rng: np.random.Generator) -> Observations:
    """Algorithm 1 for all M anchors at once, plus K FN draws per anchor for theta_DCL."""
    a, b = proposal_intervals(cfg, rng)
    is_tn = rng.random((cfg.M, cfg.N)) > cfg.tau_plus  # p <= tau_plus -> FN (Algorithm 1)
    raw, r1 = accept_reject(a, b, cfg.N, is_tn, cfg.alpha, rng)
    raw_pos, r2 = accept_reject(a, b, cfg.K, np.zeros((cfg.M, cfg.K), dtype=bool), cfg.alpha, rng)
    return Observations(np.exp(raw / cfg.t), is_tn, np.exp(raw_pos / cfg.t), max(r1, r2))


def theta_sup(obs: Observations) -> np.ndarray:
    """Eq. (27): the mean of the true negatives' observations (nan for an anchor with none)."""
    n_tn = obs.is_tn.sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n_tn > 0, np.where(obs.is_tn, obs.x, 0.0).sum(1) / n_tn, np.nan)


def theta_biased(obs: Observations) -> np.ndarray:
    """Eq. (29): the plain mean over all N unlabeled samples."""
    return obs.x.mean(1)


def theta_dcl(obs: Observations, tau_plus: float) -> np.ndarray:
    """Eq. (30): (sum_i x_i - N tau^+ mean_j x_j^+) / (N tau^-), no clamp."""
    n = obs.x.shape[1]
    return (obs.x.sum(1) - n * tau_plus * obs.pos.mean(1)) / (n * (1 - tau_plus))


def empirical_cdf(x: np.ndarray) -> np.ndarray:
    """Eq. (1)/(18) per row: Phi_N(x_i) = (1/N) #{j : x_j <= x_i} (ties inclusive), by ranking."""
    return rankdata(x, method="max", axis=1) / x.shape[1]


def proposal_cdf(mixture_cdf: np.ndarray, alpha: float, tau_plus: float) -> np.ndarray:
    """Phi from the mixture CDF F = A Phi + B Phi^2 (the integral of tau^- phi_TN + tau^+ phi_FN,
    eq. 13-14 with B.1's densities), A = 2(alpha tau^- + (1-alpha) tau^+), B = (1-2alpha)(tau^- - tau^+).

    A + B = 1, so F maps [0, 1] onto itself increasingly. The root is written as
    2F / (A + sqrt(A^2 + 4 B F)), which needs no special case at B = 0 (alpha = 1/2 or
    tau^+ = 1/2, where Phi = F / A) and loses no digits to cancellation.
    """
    tm = 1 - tau_plus
    lin = 2 * (alpha * tm + (1 - alpha) * tau_plus)
    quad = (1 - 2 * alpha) * (tm - tau_plus)
    disc = np.maximum(lin**2 + 4 * quad * mixture_cdf, 0.0)  # >= min(A^2, (A + 2B)^2) on [0, 1]; rounding only
    return np.clip(2 * mixture_cdf / (lin + np.sqrt(disc)), 0.0, 1.0)


def posterior_tn(cdf: np.ndarray, alpha: float, tau_plus: float) -> np.ndarray:
    """Eq. (2)/(17): p(TN | x) from Phi(x), the proposal's CDF at x."""
    tm = 1 - tau_plus
    num = alpha * tm + (1 - 2 * alpha) * cdf * tm
    den = alpha * tm + (1 - alpha) * tau_plus + (1 - 2 * alpha) * cdf * (tm - tau_plus)
    return num / den


def theta_bcl(obs: Observations, alpha: float, tau_plus: float, beta: float) -> np.ndarray:
    """Eq. (28) with the weights of eq. (26): (1/N) sum_i w_i x_i, w_i = p_i x_i^beta / mean(p x^beta),
    p_i = eq. (17) at Phi recovered from the empirical (mixture) CDF of eq. (18) by ``proposal_cdf``."""
    p = posterior_tn(proposal_cdf(empirical_cdf(obs.x), alpha, tau_plus), alpha, tau_plus)
    # x^beta in log space relative to the row maximum: the ratio in eq. (26) is shift-invariant
    logx = np.log(obs.x)
    q = p * np.exp(beta * (logx - logx.max(1, keepdims=True)))
    w = q / q.mean(1, keepdims=True)
    return (w * obs.x).mean(1)


def mse(estimate: np.ndarray, target: np.ndarray) -> float:
    """(1/M) sum_m (theta_hat_m - theta_SUP_m)^2 over anchors with at least one TN."""
    ok = np.isfinite(target)
    return float(np.mean((estimate[ok] - target[ok]) ** 2))


def simulate_scores(M: int, N: int, alpha: float, t: float, tau_plus: float, mean: float, std: float,
                    rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, int]:
    """Steps (i)-(iii) of Sec. 4.2 for M anchors with the proposal phi = N(mean, std^2) (Fig. 4:
    'corresponds to the distribution depicted in Fig 3', i.e. phi = N(0, 1)): each of N
    unlabeled samples is a FN with probability tau_plus (Algorithm 1's test), its score drawn
    from phi_FN or phi_TN (Algorithms 2-3) and mapped to exp(x/t). Returns the (M, N) scores
    exp(x/t), the TN mask and the accept-reject rounds."""
    is_tn = rng.random((M, N)) > tau_plus  # p <= tau_plus -> FN (Algorithm 1)
    raw, rounds = accept_reject_normal(mean, std, is_tn, alpha, rng)
    return np.exp(raw / t), is_tn, rounds


def ranks_above(a: np.ndarray, b: np.ndarray) -> float:
    """P(A > B) + P(A = B) / 2 for A, B drawn from the samples ``a`` and ``b`` (the
    Mann-Whitney U statistic over |a| |b|: the AUC of ``a`` against ``b``)."""
    r = rankdata(np.concatenate([a, b]))  # average ranks: ties count 1/2
    return float((r[: a.size].sum() - a.size * (a.size + 1) / 2) / (a.size * b.size))
