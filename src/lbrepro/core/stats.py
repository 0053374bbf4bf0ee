"""Batch-means confidence intervals for time averages of simulations, chosen from the data.

A simulator records many short *micro-batches* from time 0 (the kernel returns to Python after
each one, so Ctrl-C stops it). :func:`choose_batching` then decides, from the micro-batch
series of the run's main quantity, how much to discard and how to batch the rest:

1. **Warm-up (MSER-5).** The configured warm-up is a minimum; after it, the Marginal Standard
   Error Rule on groups of 5 micro-batches (White 1997; Franklin & White 2008) picks the
   truncation d minimising Σ_{i>d}(x_i − x̄_d)² / (n − d)², searched over the first half.
   MSER runs only when the start of the series differs significantly from the rest (a
   two-sample Schruben-style test): on an already stationary, skewed series (queue lengths)
   it otherwise cuts high starts preferentially and biases the mean low.
2. **Batch size (von Neumann test).** Adjacent micro-batches are merged in groups of
   g = 1, 2, 4, … until the lag-1 autocorrelation of the B batch means passes von Neumann's
   ratio test (one-sided, level ``alpha``), keeping B >= ``min_batches``; the batching used
   is one doubling coarser than the first that passes. If none passes with room for that
   doubling, the estimate is marked ``converged = False`` and the caller extends the run
   (sequential doubling within the event budget) or reports it as not converged.
3. **Interval.** Student t over the B batch means, its variance inflated by the AR(1) factor
   (1 + r₁)/(1 − r₁) when the batch means' lag-1 autocorrelation r₁ is positive (the residual
   correlation a test of B means cannot detect; ASAP3/Skart do the same), and clipped to the
   range of the quantity (fractions in [0, 1], counts ≥ 0).

Every quantity of a run uses the batching chosen on its main quantity, so they share one
warm-up and one batch size. All of it is deterministic given the data, so the same seed gives
the same numbers. Coverage is measured on known answers by ``bench/bench_coverage.py``.

Written here rather than taken from ``pymser`` (MSER with an ADF test on top, geared to
adsorption isotherms, pulls in statsmodels), ``pyblock`` (Flyvbjerg–Petersen reblocking, last
released 2020, needs pandas) or ``pyerrors`` (the Γ-method of lattice QCD, with autograd and
more): each would add a dependency for some 60 lines of numpy, and none does the three steps
together on pre-averaged micro-batches.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

# The quantile functions themselves, not scipy.stats: importing scipy.stats costs every job
# about 0.6 s, and t.ppf, norm.ppf and norm.sf are these same functions (bit for bit).
from scipy.special import chdtri, ndtr, ndtri, stdtrit

from lbrepro.core.errors import ConfigError

__all__ = [
    "Batching",
    "Estimate",
    "batch_means_ci",
    "bonferroni_factor",
    "choose_batching",
    "correlation_time",
    "fallback_batching",
    "kaplan_meier_mean",
    "merge_batches",
    "mser5",
    "normal_quantile",
    "rare_factor",
    "rare_upper",
    "t_quantile",
    "unobserved_upper",
    "von_neumann",
]

# Micro-batches a simulator records by default, and the floor on batches of an interval.
MICRO_BATCHES = 1280
MIN_BATCHES = 20
# One-sided level of the von Neumann test for positive lag-1 correlation of batch means.
ALPHA_INDEPENDENCE = 0.10
# Batches of the fallback interval of a run whose batch means stayed correlated: few large
# batches (Schmeiser 1982: B = 10 is the classical choice once batches are long enough).
FALLBACK_GROUPS = 10
FALLBACK_MIN_GROUPS = 4
# Batch means on which the fallback measures the correlation time (see fallback_batching).
FINE_BATCHES = 80
# One-sided level of the rule-of-three bound of a fraction never observed in any batch.
RARE_ALPHA = 0.025


@dataclass(frozen=True)
class Estimate:
    """A point estimate with its confidence interval (scalars or equal-shape arrays).

    ``low = mean - half_width`` and ``high = mean + half_width`` elementwise, except that they
    are clipped to the quantity's range when one is given (then ``low = max(mean − half_width,
    lower)``); ``batches`` is the number of (approximately independent) batch means the
    interval was built from, its Student-t degrees of freedom plus one (0 for an exact
    value). ``N`` and ``seed`` say which system and random stream produced it, where known.
    """

    mean: float | np.ndarray
    low: float | np.ndarray
    high: float | np.ndarray
    half_width: float | np.ndarray
    batches: int
    N: int | None = None
    seed: Any = None
    #: False when the run's batch means stayed correlated at every admissible batching: the
    #: interval is then too narrow and claims built on it say so.
    converged: bool = True
    #: How many times a claim's decision was taken on the run while it grew (sequential
    #: doubling until decided, :func:`lbrepro.sim.runlength.run_micro_batches`): each look
    #: can err at the claim's rate, so a verdict on it can err at ``looks`` times that rate.
    looks: int = 1

    @classmethod
    def from_interval(
        cls,
        value: float,
        low: float,
        high: float,
        *,
        batches: int,
        N: int | None = None,
        seed: Any = None,
        converged: bool = True,
        looks: int = 1,
    ) -> Estimate:
        """An estimate from its value and interval (the half-width of the unclipped side)."""
        value, low, high = float(value), float(low), float(high)
        half = max(high - value, value - low)
        return cls(value, low, high, half, int(batches), N, seed, bool(converged), int(looks))

    @classmethod
    def exact(cls, value: float) -> Estimate:
        """A value known exactly (a closed form, a mean field): a zero-width interval."""
        return cls(float(value), float(value), float(value), 0.0, 0)


def batch_means_ci(
    batch_values: np.ndarray,
    level: float = 0.95,
    *,
    lower: float | None = None,
    upper: float | None = None,
    ar1: bool = False,
    groups: int = 0,
    rare: bool = False,
    ar1_min: float = 0.0,
) -> Estimate:
    """Student-t confidence interval over batch means.

    Parameters
    ----------
    batch_values
        Shape ``(B, ...)``: the average of each quantity over each of B equal-length
        batches. Every trailing index is treated separately (elementwise).
    level
        Two-sided confidence level in (0, 1).
    lower, upper
        The range of the quantity (e.g. 0 and 1 for a fraction): the interval is clipped to it.
    ar1
        Inflate each quantity's variance by (1 + r₁)/(1 − r₁) when the lag-1 autocorrelation
        r₁ of its batch means is positive (bias-corrected, capped at 0.9; needs B >= 4).
    ar1_min
        A floor on r₁ for the AR(1) inflation (the fallback's correlation predicted at a
        finer scale, see :func:`fallback_batching`).
    groups
        When > 0 (the fallback of a run whose batch means stayed correlated, see
        :func:`fallback_batching`): the spread is taken from ``groups`` consecutive groups of
        the B batch means (sizes ⌊B/groups⌋ or ⌈B/groups⌉, the between-group estimator
        Σ nᵢ(ȳᵢ − ȳ)²/(groups − 1) per batch), with ``groups − 1`` degrees of freedom. The
        mean is the same as without regrouping.
    rare
        The quantity is a fraction (``lower`` and ``upper`` given) that may be never or rarely
        observed: where it is above ``lower`` in fewer than :data:`RARE_MIN` of the groups (a
        t interval from so few nonzero batches is far from normal), the interval is
        one-sided, from ``lower`` to at least the bound of :func:`rare_upper` (never seen:
        the rule of three over the batches) or :func:`rare_factor` (seen a few times). So no
        interval of a simulated fraction is degenerate.

    Returns
    -------
    Estimate
        Floats when ``batch_values`` is one-dimensional, arrays of shape ``(...)`` otherwise.
        ``batches`` is the number of groups the spread came from. A quantity equal in every
        batch gets a zero-width interval (unless ``rare`` bounds it).
    """
    x = np.asarray(batch_values, dtype=float)
    if x.ndim == 0:
        raise ConfigError("batches", "batch_values must have a leading batch axis")
    B = x.shape[0]
    if B < 2:
        raise ConfigError("batches", f"need at least 2 batches for an interval, got {B}")
    if not 0.0 < level < 1.0:
        raise ConfigError("level", f"confidence level must lie in (0, 1), got {level}")
    mean = x.mean(axis=0)
    if 2 <= groups < B:
        y, sizes = _regroup(x, groups)
        dev = y - mean
        w = sizes.reshape((-1,) + (1,) * (x.ndim - 1))
        # Between-group variance per batch: unbiased for independent group means.
        sd = np.sqrt((w * dev * dev).sum(axis=0) / (groups - 1))
        spread = y
    else:
        sd = x.std(axis=0, ddof=1)
        spread = x
    K = spread.shape[0]
    if ar1 and K >= 4:
        sd = sd * np.sqrt(_ar1_inflation(spread, ar1_min))
    quantile = t_quantile(0.5 + level / 2.0, K - 1)
    half = quantile * sd / np.sqrt(B)
    low = mean - half
    high = mean + half
    if rare and lower is not None and upper is not None:
        low, high = _rare_interval(mean, low, high, half / quantile, spread, lower, upper, level)
        half = np.maximum(high - mean, mean - low)
    if lower is not None:
        low = np.maximum(low, lower)
        high = np.maximum(high, lower)
    if upper is not None:
        low = np.minimum(low, upper)
        high = np.minimum(high, upper)
    if x.ndim == 1:
        return Estimate(float(mean), float(low), float(high), float(half), K)
    return Estimate(mean, low, high, half, K)


#: A fraction positive in fewer groups than this is "rarely observed" (see batch_means_ci).
RARE_MIN = 5


def rare_upper(seen: np.ndarray | int, n: int, alpha: float = RARE_ALPHA) -> np.ndarray:
    """Upper bound on the probability that a batch observes a state seen in ``seen`` of ``n``.

    Each batch mean lies in the quantity's range [lower, upper] and is above ``lower`` only if
    the batch observed the state, so mean − lower ≤ (upper − lower) · P(a batch observes it).
    The one-sided Clopper–Pearson bound on that probability from ``seen`` of ``n``
    (approximately independent) batches, at level 1 − ``alpha``, is returned: the rule of
    three, 1 − alpha^{1/n} ≈ 3.7/n, when never seen; it uses only the batches' independence.
    """
    from scipy.special import betaincinv

    k = np.asarray(seen, dtype=float)
    return np.where(k >= n, 1.0, betaincinv(k + 1.0, np.maximum(n - k, 1e-300), 1.0 - alpha))


def _rare_interval(
    mean: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    se: np.ndarray,
    spread: np.ndarray,
    lower: float,
    upper: float,
    level: float,
) -> tuple[np.ndarray, np.ndarray]:
    """The interval of a fraction that may be rare (see :func:`batch_means_ci`'s ``rare``).

    A small fraction is a sum of few excursions: its batch means are skewed and a symmetric t
    interval misses high (M/M/1 at ρ = 0.5, P(Q ≥ 8) = 0.0039 from 135 batches: 82% covered,
    with this rule 91.5%). Its *effective count* k = ((mean − lower)/se)² is the number of
    independent Poisson events with the same relative precision; the interval is widened to
    contain Garwood's Poisson interval, standardised, for the skewness of k/2 excursions and
    scaled by the measured se (for large k it is the normal one). Seen in fewer than
    :data:`RARE_MIN` groups it is one-sided from ``lower``, up to the bound of
    :func:`rare_factor` (seen a few times) or the rule of three of :func:`rare_upper` (never
    seen).
    """
    a = (1.0 - level) / 2.0
    K = spread.shape[0]
    excess = np.maximum(mean - lower, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        k = np.where(se > 0, (excess / np.where(se > 0, se, 1.0)) ** 2, np.inf)
    ok = np.isfinite(k) & (k > 0)
    # Garwood's limits for c = k/2 events, standardised, scaled by the measured se: a sum of
    # Λ exponential-size excursions has k = Λ/2 and skewness 2.1/√Λ = 1.5/√k, about that of
    # Poisson(k/2) (1.41/√k), while its relative variance is that of Poisson(k).
    c = np.where(ok, np.clip(k / 2.0, 1e-9, 1e12), 1.0)
    up = chdtri(2.0 * c + 2.0, a) / (2.0 * c) - 1.0
    down = 1.0 - chdtri(2.0 * c, 1.0 - a) / (2.0 * c)
    g_high = lower + excess * (1.0 + up / math.sqrt(2.0))
    g_low = lower + excess * (1.0 - down / math.sqrt(2.0))
    low = np.where(ok, np.minimum(low, g_low), low)
    high = np.where(ok, np.maximum(high, g_high), high)
    seen = (spread > lower).sum(axis=0)
    bound = lower + np.where(
        seen > 0,
        excess * rare_factor(seen, a),
        (upper - lower) * rare_upper(seen, K, a),
    )
    few = seen < RARE_MIN
    # One-sided: a few visits cannot bound the fraction away from the range's end.
    return np.where(few, lower, low), np.where(few, np.maximum(high, bound), high)


def unobserved_upper(batches: int, level: float = 0.95) -> float:
    """The upper end of the interval [0, ·] of a fraction a run never observed (a tail level
    beyond the deepest one reached): the rule of three over its ``batches`` (as the
    simulators' ``rare`` intervals), so a padded level is never the degenerate [0, 0]."""
    return float(rare_upper(0, int(batches), (1.0 - level) / 2.0))


def rare_factor(seen: np.ndarray | int, alpha: float = RARE_ALPHA) -> np.ndarray:
    """How many times its estimate the mean of a state seen in ``seen`` (>= 1) batches may be.

    The batches that saw the state are treated as visits of a Poisson process with random
    sizes: Garwood's upper bound on the Poisson mean, χ²_{1−alpha}(2k + 2)/2, relative to the
    k seen, doubled for the spread of the sizes and by 1.5 more for few of them (calibrated
    on batches seen with probability 0.02–0.25 and exponential sizes: >= 95.7% coverage given
    1–4 batches seen, tests/test_coverage.py).
    """
    k = np.maximum(np.asarray(seen, dtype=float), 1.0)
    return 1.5 * chdtri(2.0 * k + 2.0, alpha) / k


def _regroup(x: np.ndarray, groups: int) -> tuple[np.ndarray, np.ndarray]:
    """Consecutive groups of the B rows of x (sizes ⌊B/groups⌋ or ⌈B/groups⌉, larger last):
    their means and sizes."""
    B = x.shape[0]
    sizes = np.full(groups, B // groups)
    if B % groups:
        sizes[groups - B % groups :] += 1
    edges = np.concatenate([[0], np.cumsum(sizes)])
    y = np.stack([x[a:b].mean(axis=0) for a, b in itertools.pairwise(edges)])
    return y, sizes.astype(float)


def kaplan_meier_mean(durations: Any, observed: Any) -> tuple[float, float, bool]:
    """The mean of right-censored durations: (mean, standard error, open above).

    The area under the Kaplan–Meier survival curve up to the largest duration (the restricted
    mean) with its Greenwood-type standard error, scaled by √(n/(n−1)) so that without
    censoring it is the sample mean's s/√n (use it with Student's t on n − 1 degrees of
    freedom, where n counts the complete durations: coverage measured in
    tests/test_kaplan_meier.py). A censored duration counts for the time it
    was seen, neither dropped nor taken as complete. When the largest duration is censored the curve
    never reaches zero and the restricted mean is only a lower bound of the mean: ``open
    above`` is then True. With no censoring it is the sample mean.
    """
    t = np.asarray(durations, dtype=float)
    seen = np.asarray(observed, dtype=bool)
    if t.shape != seen.shape or t.ndim != 1 or t.size == 0:
        raise ValueError("kaplan_meier_mean: one observed flag per duration, at least one")
    order = np.lexsort((~seen, t))  # at equal times the events before the censorings
    t, seen = t[order], seen[order]
    n = t.size
    at_risk = n - np.arange(n)
    # Survival just after each event time; censorings leave it unchanged.
    factor = np.where(seen, 1.0 - 1.0 / at_risk, 1.0)
    surv = np.cumprod(factor)
    before = np.concatenate([[1.0], surv[:-1]])
    starts = np.concatenate([[0.0], t[:-1]])
    mean = float(np.sum(before * (t - starts)))
    # Greenwood: Var = Σ over events of A_j² / (n_j (n_j − 1)), A_j the area beyond t_j.
    area_after = mean - np.concatenate([[0.0], np.cumsum(before * (t - starts))])[1:]
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(seen & (at_risk > 1), area_after**2 / (at_risk * (at_risk - 1.0)), 0.0)
    se = float(math.sqrt(np.sum(terms) * n / (n - 1))) if n > 1 else math.nan
    return mean, se, not bool(seen[-1])


def t_quantile(p: float, dof: float) -> float:
    """The p-quantile of Student's t with ``dof`` degrees of freedom (= scipy.stats.t.ppf)."""
    return float(stdtrit(dof, p))


def normal_quantile(p: float) -> float:
    """The p-quantile of the standard normal (= scipy.stats.norm.ppf)."""
    return float(ndtri(p))


def bonferroni_factor(batches: int, comparisons: int, level: float = 0.95) -> float:
    """How much wider a family-wise interval over ``comparisons`` checks is than one interval.

    Claims compare many simulated values with references at once; at a per-check 95% level some
    would fail by chance alone. Widening each batch-means interval by this factor (Bonferroni,
    Student t with ``batches − 1`` degrees of freedom) keeps the family-wise level at 95%.
    """
    alpha = 1.0 - level
    dof = batches - 1
    return t_quantile(1 - alpha / (2 * comparisons), dof) / t_quantile(1 - alpha / 2, dof)


def _lag1(x: np.ndarray) -> np.ndarray:
    """Lag-1 autocorrelation of each column of x (0 where a column is constant)."""
    dev = x - x.mean(axis=0)
    den = (dev * dev).sum(axis=0)
    num = (dev[1:] * dev[:-1]).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.where(den > 0, num / np.where(den > 0, den, 1.0), 0.0)
    return r


def _ar1_inflation(x: np.ndarray, floor: float = 0.0) -> np.ndarray:
    """Variance factor (1 + r)/(1 − r) of an AR(1) with the batch means' lag-1 r, if r > 0.

    r is the sample lag-1 autocorrelation corrected for its bias, r̂ + (1 + 3 r̂)/B
    (Marriott & Pope 1954), so that independent batches get r ≈ 0 on average, not −1/B.
    """
    B = x.shape[0]
    r = _lag1(x)
    r = np.clip(np.maximum(r + (1.0 + 3.0 * r) / B, floor), 0.0, 0.9)
    return (1.0 + r) / (1.0 - r)


def von_neumann(x: np.ndarray) -> tuple[float, float]:
    """Von Neumann's ratio test of a series against positive lag-1 autocorrelation.

    Returns ``(C, p)``: C = 1 − Σ(x_{i+1} − x_i)² / (2 Σ(x_i − x̄)²) estimates the lag-1
    autocorrelation; under independence it is about normal with mean 0 and variance
    (B − 2)/(B² − 1) (von Neumann 1941; Fishman 1978), and p is the one-sided p-value
    P(C' >= C). A constant series gives (0, 1).
    """
    x = np.asarray(x, dtype=float)
    B = x.size
    if B < 3:
        raise ConfigError("batches", f"the von Neumann test needs >= 3 values, got {B}")
    dev = x - x.mean()
    den = float(dev @ dev)
    if den <= 0.0:
        return 0.0, 1.0
    c = 1.0 - float(np.sum(np.diff(x) ** 2)) / (2.0 * den)
    sd = math.sqrt((B - 2.0) / (B * B - 1.0))
    return c, float(ndtr(-c / sd))  # the normal upper tail P(Z > c / sd)


def mser5(x: np.ndarray, *, max_fraction: float = 0.5) -> int:
    """MSER-5 truncation point of a series: how many leading values to discard.

    The series is cut into groups of 5 (a trailing remainder is ignored); for a truncation of
    d groups the MSER statistic is Σ_{i>d}(y_i − ȳ_d)² / (n − d)² over the group means y, and
    the d minimising it over d <= ``max_fraction`` · n is returned, in values (5 d).
    A series shorter than two groups is not truncated.
    """
    x = np.asarray(x, dtype=float)
    n = x.size // 5
    if n < 2:
        return 0
    y = x[: 5 * n].reshape(n, 5).mean(axis=1)
    # Suffix sums give every truncation's statistic in O(n).
    s1 = np.cumsum(y[::-1])[::-1]
    s2 = np.cumsum((y * y)[::-1])[::-1]
    m = np.arange(n, 0, -1, dtype=float)  # values kept after truncating d = 0..n-1
    sse = np.maximum(s2 - s1 * s1 / m, 0.0)
    stat = sse / (m * m)
    dmax = max(0, min(n - 2, int(max_fraction * n)))
    return 5 * int(np.argmin(stat[: dmax + 1]))


@dataclass(frozen=True)
class Batching:
    """How a micro-batch series is truncated and merged into batches.

    Micro-batches ``start, start + 1, …`` (``start`` >= the configured minimum) are merged in
    consecutive groups of ``group`` into ``batches`` batch means; the leading remainder of the
    division is discarded too (it is part of ``start``). ``converged`` says whether the
    batch means passed the von Neumann test at an admissible batching (B >= the floor);
    ``p_value`` is that test's p-value at the chosen batching and ``mser_start`` the
    truncation MSER-5 asked for (before rounding to whole batches).
    """

    start: int
    group: int
    batches: int
    converged: bool
    p_value: float
    mser_start: int
    #: > 0 for the fallback of :func:`fallback_batching`: intervals take their spread from
    #: this many groups of the batch means (the means are those of ``batches``).
    groups: int = 0
    #: The fallback groups' predicted lag-1 autocorrelation (NaN if not computed): what
    #: :func:`fallback_batching` judges.
    lag1: float = math.nan

    @property
    def effective_batches(self) -> int:
        """The number of batch means an interval's spread comes from (its dof + 1)."""
        return self.groups or self.batches

    def merge(self, values: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
        """Merge the micro-batch values (shape ``(n, ...)``) into this batching's batch means."""
        return merge_batches(values, self, weights)

    def ci(self, batch_values: np.ndarray, **kwargs: Any) -> Estimate:
        """:func:`batch_means_ci` of already merged batch means, regrouped as this batching
        says (the fallback's few large groups), with its ``converged`` flag."""
        if self.groups and kwargs.get("ar1"):
            kwargs.setdefault("ar1_min", self.lag1)
        est = batch_means_ci(batch_values, groups=self.groups, **kwargs)
        return replace(est, converged=self.converged)


def merge_batches(
    values: np.ndarray, batching: Batching, weights: np.ndarray | None = None
) -> np.ndarray:
    """Batch means of micro-batch values: average each group (weighted by ``weights``, e.g.
    micro-batch durations or arrival counts, when given)."""
    v = np.asarray(values, dtype=float)
    b = batching
    sel = v[b.start : b.start + b.group * b.batches]
    sel = sel.reshape((b.batches, b.group, *v.shape[1:]))
    if weights is None:
        return sel.mean(axis=1)
    w = np.asarray(weights, dtype=float)[b.start : b.start + b.group * b.batches]
    w = w.reshape((b.batches, b.group) + (1,) * (v.ndim - 1))
    return (sel * w).sum(axis=1) / w.sum(axis=1)


def choose_batching(
    main: np.ndarray,
    *,
    min_start: int = 0,
    min_batches: int = MIN_BATCHES,
    alpha: float = ALPHA_INDEPENDENCE,
) -> Batching:
    """Truncation (MSER-5 after ``min_start``) and batch size (von Neumann test) for a series.

    ``main`` is the micro-batch series of the run's main quantity. The group size doubles from
    1 until the batch means pass the one-sided von Neumann test at level ``alpha``, while at
    least ``min_batches`` batches remain; the batching used is then one doubling coarser (a
    test that has just passed on B means is biased towards samples whose correlation looks
    small: on AR(1) series this safety step and the AR(1) inflation of
    :func:`batch_means_ci` lift coverage from ~91% to ~94%). If no batching passes with room
    for that doubling, the coarsest one is returned with ``converged = False`` (and the
    simulator extends the run).
    """
    x = np.asarray(main, dtype=float)
    n_all = x.size
    min_start = max(0, int(min_start))
    if n_all - min_start < 2 * min_batches:
        raise ConfigError(
            "horizon",
            f"{n_all - min_start} micro-batches after the warm-up cannot give {min_batches} "
            "batches: lengthen the horizon or shorten the warm-up",
        )
    b = _batch_from(x, min_start, min_batches, alpha)
    cut = 0
    if _transient_evident(x, min_start, b):
        cut = mser5(x[min_start:])
        # Keep at least the floor number of batches of one micro-batch each.
        b = _batch_from(x, min(min_start + cut, n_all - min_batches), min_batches, alpha)
    return Batching(b.start, b.group, b.batches, b.converged, b.p_value, min_start + cut)


def fallback_batching(
    main: np.ndarray, batching: Batching, *, groups: int = FALLBACK_GROUPS
) -> Batching:
    """The interval of a run whose batch means stayed correlated: few large batches.

    When the von Neumann test fails at every admissible batching (B >= the floor) even after
    the run was extended, the B batch means are correlated and a t interval over them is too
    narrow (M/M/1 at ρ = 0.99, supermarket d = 1: 16 of 20 covered). The classical remedy is
    fewer, longer batches: the B batch means are merged into ``groups`` = 10 consecutive groups
    (at most B/2) and the interval's spread comes from those (Student t with groups − 1
    degrees of freedom, AR(1) inflation from the group means), on the same data, so the mean
    is unchanged.

    Its AR(1) inflation uses at least the groups' lag-1 correlation predicted from a finer
    scale: the lag-1 correlation of ~80 batch means gives the correlation time τ of an
    exponential autocorrelation (:func:`_exp_correlation_time`), and groups of length L then
    have lag-1 :func:`_exp_lag1` (τ/L). On AR(1) series of 1280 micro-batches spanning 39,
    26, 13, 6.4 and 2.6 correlation times (400 runs each, those failing the test), the t
    interval over the B >= 20 correlated batch means covered 93.5%, 92.8%, 90.2%, 85.8% and
    85.5%, the fallback 95.0%, 95.8%, 93.8%, 90.2% and 89.0% (×1.3 widened: 97.2–91.2% →
    98.7–95.8%; ×2: 99.7–98.0% → 100–99.0%).

    The fallback is the *conservative interval* of a slowly mixing run: it decides claims
    (``converged = True``, at most 10 batches) when the run passes the relaxation check of
    :func:`lbrepro.sim.runlength.slow_run_problem` — enough relaxation times summed over the
    servers (N·T/τ) and enough of its own measured correlation times (:func:`correlation_time`)
    — and is no honest interval otherwise (``converged = False``, the verdicts on it invalid).
    Not a test of the batch means on the run's own data: a sample whose batch means happen to
    look uncorrelated also has an underestimated variance, so trusting only such runs selects
    the ones that undercover (on AR(1) series of 13 correlation times, trusting runs whose
    predicted lag-1 was <= 0.5 gave 89% coverage, <= 0.3 gave 74%); the relaxation check
    counts the run's length instead. Coverage on known answers, as used:
    ``bench/bench_coverage.py``.
    """
    x = np.asarray(main, dtype=float)
    k = min(groups, batching.batches // 2)
    if k < FALLBACK_MIN_GROUPS:
        return batching
    predicted = predicted_lag1(x, batching.start, batching.batches * batching.group / k)
    return replace(batching, converged=False, groups=k, lag1=predicted)


def predicted_lag1(x: np.ndarray, start: int, length: float) -> float:
    """Lag-1 correlation of batch means of ``length`` micro-batches of ``x[start:]``, predicted
    from a finer scale: the lag-1 correlation of ~FINE_BATCHES batch means (bias-corrected)
    gives the correlation time τ of an exponential autocorrelation, and batches of that
    length then have lag-1 :func:`_exp_lag1` (τ/length). A floor for the AR(1) inflation of
    the fallback's intervals, nearly independent of their own batch means (a floor on the
    converged intervals too widened them by 2–7% and did not help where they undercover:
    M/M/1 at ρ = 0.99 on ~100 relaxation times, bench_coverage)."""
    tau = correlation_time(x, start)
    return _exp_lag1(tau / length) if math.isfinite(tau) else 0.0


def correlation_time(x: np.ndarray, start: int = 0) -> float:
    """The correlation time of ``x[start:]``, in values (micro-batches): that of the
    exponential autocorrelation whose batch means of ~FINE_BATCHES batches have the measured
    (bias-corrected) lag-1 correlation; NaN for fewer than 4 such batches. The relaxation
    check of a run whose simulator states no relaxation time
    (:func:`lbrepro.sim.runlength.slow_run_problem`) counts how many of them the run spans."""
    x = np.asarray(x, dtype=float)
    n = x.size - start
    fine = max(1, n // FINE_BATCHES)
    B0 = n // fine
    if B0 < 4:
        return math.nan
    y = x[x.size - B0 * fine :].reshape(B0, fine).mean(axis=1)
    r0 = float(_lag1(y[:, None])[0])
    r0 = min(max(r0 + (1.0 + 3.0 * r0) / B0, 1e-6), 1.0 - 1e-6)
    return _exp_correlation_time(r0) * fine


def _exp_lag1(x: float) -> float:
    """Lag-1 correlation of adjacent batch means of length m of a process whose
    autocorrelation is exp(−t/τ), as a function of x = τ/m (0 at x = 0, → 1 as x → ∞)."""
    if x <= 0:
        return 0.0
    e = -math.expm1(-1.0 / x)  # 1 − e^{−m/τ}
    den = 2.0 * (1.0 - x * e)
    return min(1.0, x * e * e / den) if den > 0 else 1.0


def _exp_correlation_time(r: float) -> float:
    """τ/m of an exponential autocorrelation whose batch means of length m have lag-1 r."""
    lo, hi = 1e-6, 1e6
    for _ in range(100):
        mid = math.sqrt(lo * hi)
        if _exp_lag1(mid) < r:
            lo = mid
        else:
            hi = mid
    return math.sqrt(lo * hi)


def _batch_from(x: np.ndarray, start: int, min_batches: int, alpha: float) -> Batching:
    """The von Neumann batching of ``x[start:]`` (see :func:`choose_batching`)."""
    n_all = x.size
    n = n_all - start
    group = 1
    best: Batching | None = None
    while n // group >= min_batches:
        B = n // group
        s = n_all - B * group  # discard the leading remainder
        trial = Batching(s, group, B, False, 1.0, start)
        _, p = von_neumann(trial.merge(x))
        best = Batching(s, group, B, p > alpha, p, start)
        if p > alpha:
            if n // (2 * group) < min_batches:
                # Passed only at the coarsest batching: no room for the safety doubling.
                return Batching(s, group, B, False, p, start)
            B = n // (2 * group)
            return Batching(n_all - 2 * group * B, 2 * group, B, True, p, start)
        group *= 2
    assert best is not None
    return best


def _transient_evident(x: np.ndarray, min_start: int, b: Batching, z: float = 4.0) -> bool:
    """Whether the series after the configured warm-up shows an initial transient.

    MSER applied to a series that is already stationary still truncates, and prefers to cut
    where the start happens to be high — on queue lengths, whose excursions are skewed, that
    biased the mean low (M/M/1 at ρ = 0.9: −0.25 standard errors, coverage 91%). So MSER-5
    runs only when the first 1/16, 1/8 or 1/4 of the series differs from the rest by more
    than ``z`` = 4 standard errors (a two-sample form of Schruben's test for initialisation
    bias; far beyond chance for normal batch means, but the skewed excursions of queue
    lengths near ρ = 1 crossed z = 2.4 and z = 3 often enough to bias the M/M/1 mean at
    ρ = 0.99 by −0.3 standard errors), the variance per micro-batch taken from the
    batch means of ``b`` after the first quarter (group × their variance × the AR(1) factor of
    the intervals).
    """
    y = x[min_start:]
    n = y.size
    # Variance from the batch means after the first quarter: a transient would inflate it.
    means = b.merge(x)
    means = means[means.size // 4 :]
    sigma2 = b.group * float(np.var(means, ddof=1)) * float(_ar1_inflation(means[:, None])[0])
    for f in (16, 8, 4):
        h = max(1, n // f)
        diff = abs(float(y[:h].mean()) - float(y[h:].mean()))
        se = math.sqrt(sigma2 * (1.0 / h + 1.0 / (n - h)))
        if diff > z * se:
            return True
    return False
