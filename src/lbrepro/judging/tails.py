"""Verdicts on a simulated tail, shared by the supermarket and general-service papers.

The levels a tail fit may use, the slope of log(−log u_k) with its three-outcome shape test,
the near-miss tails it is judged against (a doubly exponential tail one notch slower, base
d − ½; the geometric tail for "doubly exponential at all"), the resolution floor of a
time-averaged fraction's margin, and work conservation (u₁ = ρ) as a
diagnostic. The neighbouring load of a control is :mod:`lbrepro.judging.neighbours`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from lbrepro.core.stats import Estimate, t_quantile
from lbrepro.core.verdicts import (
    AGREEMENT,
    Z95,
    Component,
    EmptyComparisonError,
    SlopeFit,
    Verdict,
    agreement_margin,
    decide,
    exact,
    fit_slope,
)

__all__ = [
    "NOTCH",
    "TAIL_LEVELS",
    "TAIL_SERVERS",
    "TAIL_TOP",
    "covers",
    "doubly_exponential_slope",
    "fraction_margin",
    "held",
    "resolution",
    "slope_margin",
    "tail_fit",
    "tail_levels",
    "tail_shape",
    "work_conservation",
]

#: The levels of a tail fit: the deepest ``TAIL_LEVELS`` levels held on average by at least
#: ``TAIL_SERVERS`` servers (u_k ≥ TAIL_SERVERS/N) with u_k ≤ ``TAIL_TOP``. Deeper levels are
#: held by a handful of servers at a time, where u_k is no longer a mean-field quantity.
TAIL_LEVELS, TAIL_SERVERS, TAIL_TOP = 3, 10.0, 0.95

#: The near miss of "doubly exponential with rate log d": a tail whose slope of log(−log u_k)
#: is NOTCH margins lower at the same levels (a doubly exponential rate one notch slower;
#: the margin is the default 2% relative agreement on the slope). NOTCH > 2, so a claim that
#: holds makes its near miss fail.
NOTCH = 3.0


def slope_margin(target: float) -> float:
    """The agreement margin of a tail slope: the default 2% of the predicted slope."""
    return agreement_margin(target)


def resolution(N: int, measured_time: float) -> float:
    """The resolution floor of an agreement margin on a time-averaged fraction.

    A time-averaged fraction of N servers over a measured time T moves in steps of 1/(N·T)
    (one server holding a level for one time unit): no margin on it can be finer.
    """
    return 1.0 / (float(N) * float(measured_time))


def fraction_margin(reference: float, N: int, measured_time: float) -> float:
    """The agreement margin of a simulated fraction u_k against a reference: the default 2%
    relative (:data:`~lbrepro.core.verdicts.AGREEMENT`), at least the run's resolution."""
    return agreement_margin(reference, relative=AGREEMENT, floor=resolution(N, measured_time))


#: Two-sided level at which a diagnostic's interval must cover an exact value: a correct 95%
#: batch-means interval, rescaled to 99.9%, misses it once in a thousand runs, so a failure
#: is a run out of equilibrium (or an interval too narrow), not the luck of the seed.
DIAGNOSTIC_LEVEL = 0.999


def covers(
    estimates: Sequence[Estimate],
    exact_values: Sequence[float],
    floors: Sequence[float],
    *,
    what: str,
) -> Verdict:
    """A diagnostic: every estimate's interval, rescaled to 99.9%, covers its exact value.

    An exact value (u₁ = ρ by work conservation) cannot be judged by a margin of agreement:
    what a run can show is that its interval is consistent with it. The statistic is the
    largest |x − v| in units of the rescaled half-width plus the resolution floor; the
    diagnostic holds when it is ≤ 1. A run flagged converged = False fails it outright (its
    interval cannot be trusted).
    """
    if not estimates:
        raise EmptyComparisonError(f"{what}: nothing to check")
    worst, stat = 0, -1.0
    for i, (e, v, f) in enumerate(zip(estimates, exact_values, floors, strict=True)):
        dof = max(int(e.batches) - 1, 1)
        q = t_quantile(0.5 + DIAGNOSTIC_LEVEL / 2, dof) / t_quantile(0.975, dof)
        z = abs(float(e.mean) - float(v)) / (q * float(e.half_width) + float(f))
        if z > stat:
            worst, stat = i, z
    bad = [e for e in estimates if not e.converged]
    e = estimates[worst]
    return exact(
        stat <= 1.0 and not bad,
        round(stat, 4),
        f"{what}: the 99.9% interval covers the exact value (statistic ≤ 1)",
        "|x − exact| / (99.9% half-width + resolution 1/(N·T))",
        f"worst: {float(e.mean):.6g} ± {float(e.half_width):.2g} (95%) vs "
        f"{float(exact_values[worst]):.6g}"
        + (f"; {len(bad)} of {len(estimates)} runs not converged" if bad else ""),
    )


def work_conservation(u1: Estimate, rho: float, N: int, measured_time: float) -> Verdict:
    """u₁ = ρ: the busy fraction of a stationary run equals the load, whatever the policy.

    Exact by construction, so it is a diagnostic (see :func:`covers`): a failure means the
    run is not in equilibrium, and every verdict on it is void.
    """
    return covers([u1], [rho], [resolution(N, measured_time)], what="u_1 = ρ")


def held(u: float, servers: float) -> bool:
    """Whether a tail level u is held on average by at least :data:`TAIL_SERVERS` of
    ``servers`` servers: the depth a verdict may use (deeper, u is a rare event at this N and
    the 1/N expansion is not uniform in k). One rule for every paper's tail verdicts."""
    return u * servers >= TAIL_SERVERS


def tail_levels(u: Mapping[int, Estimate], N: int) -> list[int]:
    """The levels a tail-shape fit uses (see ``TAIL_LEVELS``), deepest last."""
    keep = [
        k
        for k in sorted(u)
        if k >= 1
        and held(u[k].mean, N)
        and u[k].mean <= TAIL_TOP
        and u[k].half_width > 0
        and u[k].mean < 1
    ]
    return keep[-TAIL_LEVELS:]


def tail_fit(u: Mapping[int, Estimate], N: int) -> tuple[list[int], SlopeFit, list[float]]:
    """The weighted least-squares slope of log(−log u_k) over :func:`tail_levels`.

    σ of each point from its CI by the delta method: σ_y = σ_u/(u·|log u|) (known errors).
    Returns the levels, the fit and the σ (a reference's slope is fitted with the same
    weights, so that a curved log(−log u_k) gives it the same slope as the data).
    """
    levels = tail_levels(u, N)
    if len(levels) < 2:
        raise EmptyComparisonError(f"tail shape: fewer than two resolved levels ({levels})")
    y = [math.log(-math.log(u[k].mean)) for k in levels]
    sig = [u[k].half_width / Z95 / (u[k].mean * abs(math.log(u[k].mean))) for k in levels]
    return levels, fit_slope(levels, y, sigma=sig), sig


def doubly_exponential_slope(
    levels: Sequence[int], base: float, sigma: Sequence[float] | None = None
) -> float:
    """The slope of log(−log u_k) over ``levels`` for u_k = ρ^((b^k−1)/(b−1)), any ρ.

    log(−log u_k) = log(−log ρ) + log((b^k − 1)/(b − 1)), so the slope does not depend on
    ρ; base 1 is the geometric tail ρ^k (slope of log k). At finite depth it exceeds log b.
    ``sigma``: the weights of the data's fit (:func:`tail_fit`).
    """

    def c(k: int) -> float:
        return float(k) if base == 1 else (base**k - 1) / (base - 1)

    return fit_slope(list(levels), [math.log(c(k)) for k in levels], sigma=sigma).slope


def tail_shape(
    u: Mapping[int, Estimate],
    N: int,
    target: float,
    margin: float,
    *,
    what: str,
    at_least: bool = False,
) -> Verdict:
    """The slope of log(−log u_k) agrees with ``target`` within ``margin`` (equivalence).

    Two components, slope > target − margin and slope < target + margin, on the fit's 95%
    interval (normal quantile: the σ are known): reproduced when it lies inside, not
    reproduced when it lies wholly outside, undecided otherwise. The caller states the
    target (the predicted slope at the fit's levels) and the margin (half the distance to
    the near-miss tail's slope). ``at_least``: only slope > target − margin is needed (a
    tail at least as fast as the target's: "doubly exponential" of any faster kind).
    """
    if not margin > 0:
        raise ValueError(f"tail shape: the margin must be positive, got {margin}")
    levels, fit, _ = tail_fit(u, N)
    hw = Z95 * fit.se if math.isfinite(fit.se) else math.inf
    ok = math.isfinite(hw) and hw > 0
    comps = [Component("slope (δ > −m)", fit.slope, hw, target - margin, "above", resolved=ok)]
    if not at_least:
        comps.append(
            Component("slope (δ < m)", fit.slope, hw, target + margin, "below", resolved=ok)
        )
    rule = f"≥ {target - margin:.4f}" if at_least else f"within ± {margin:.3g}"
    return decide(
        comps,
        expected=f"slope of log(−log u_k) vs {target:.4f} ({what}): {rule}",
        tolerance=f"95% CI [{fit.slope - hw:.4f}, {fit.slope + hw:.4f}] (se {fit.se:.2g}); "
        f"margin {margin:.3g}",
        margin=margin,
        details=f"levels k = {levels}: u = "
        + ", ".join(f"{u[k].mean:.4g}±{u[k].half_width:.1g}" for k in levels),
        estimates=[u[k] for k in levels],
    )
