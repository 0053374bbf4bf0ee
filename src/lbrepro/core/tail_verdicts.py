"""Verdicts on a simulated tail, shared by the supermarket and general-service papers.

The levels a tail fit may use, the doubly exponential shape test with its geometric control,
the one finite-run allowance of a time-averaged fraction, and the neighbouring load of a
closed-form control.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from lbrepro.core.stats import Estimate
from lbrepro.core.verdicts import Z95, EmptyComparisonError, Verdict, fit_slope

__all__ = [
    "NEIGHBOUR",
    "TAIL_LEVELS",
    "TAIL_SERVERS",
    "TAIL_TOP",
    "geometric_control",
    "neighbour_load",
    "resolution",
    "tail_levels",
    "tail_shape",
]

#: The levels of a tail fit: the deepest ``TAIL_LEVELS`` levels held on average by at least
#: ``TAIL_SERVERS`` servers (u_k ≥ TAIL_SERVERS/N) with u_k ≤ ``TAIL_TOP``. Deeper levels are
#: held by a handful of servers at a time, where u_k is no longer a mean-field quantity.
TAIL_LEVELS, TAIL_SERVERS, TAIL_TOP = 3, 10.0, 0.95


def resolution(N: int, measured_time: float) -> float:
    """The one finite-run allowance of every ``within`` check of the supermarket artifacts.

    A time-averaged fraction of N servers over a measured time T moves in steps of 1/(N·T) (one
    server holding a level for one time unit): a reference below that cannot be told from 0 by
    the run, so it is granted as the allowance. No other allowance is granted: a reference
    exact at this N (u_k + V_k/N) gets no finite-N bias, and the N → ∞ closed form compared at
    fixed N is a labelled finite-N finding, not the paper's claim.
    """
    return 1.0 / (float(N) * float(measured_time))


def tail_levels(u: Mapping[int, Estimate], N: int) -> list[int]:
    """The levels a tail-shape fit uses (see ``TAIL_LEVELS``), deepest last."""
    floor = TAIL_SERVERS / N
    keep = [
        k
        for k in sorted(u)
        if k >= 1 and floor <= u[k].mean <= TAIL_TOP and u[k].half_width > 0 and u[k].mean < 1
    ]
    return keep[-TAIL_LEVELS:]


def tail_shape(u: Mapping[int, Estimate], d: int, N: int, *, base: bool = True) -> Verdict:
    """Is the tail doubly exponential with exponent base d, or no faster than geometric?

    ``log(−log u_k)`` is fitted against k over :func:`tail_levels` by weighted least squares
    (σ of each point from its CI by the delta method: σ_y = σ_u/(u·|log u|)). For u_k =
    ρ^((d^k−1)/(d−1)) the local slope exceeds log d at every depth; for a geometric tail ρ^k it
    is the slope of log k over the same levels, and for a power law it is smaller still. The
    claim holds when the slope's 95% interval (normal quantile: the σ are known) lies wholly
    above the geometric slope at those levels — significantly faster than any geometric tail —
    and, with ``base`` (the closed form's rate), also reaches log d — not significantly below
    the rate of ρ^((d^k−1)/(d−1)).
    """
    levels = tail_levels(u, N)
    if len(levels) < 2:
        raise EmptyComparisonError(f"tail shape: fewer than two resolved levels ({levels})")
    y = [math.log(-math.log(u[k].mean)) for k in levels]
    sig = [u[k].half_width / Z95 / (u[k].mean * abs(math.log(u[k].mean))) for k in levels]
    fit = fit_slope(levels, y, sigma=sig)
    geo = fit_slope(levels, [math.log(k) for k in levels]).slope
    lo, hi = fit.slope - Z95 * fit.se, fit.slope + Z95 * fit.se
    target = math.log(d)
    reach = f"reaches log d = {target:.3f} and " if base else ""
    return Verdict(
        passed=bool((hi >= target or not base) and lo > geo),
        measured=round(fit.slope, 4),
        expected=f"slope of log(−log u_k): 95% CI {reach}lies above the geometric slope "
        f"{geo:.3f} at the same levels",
        tolerance=f"95% CI [{lo:.3f}, {hi:.3f}] (se {fit.se:.2g})",
        details=f"levels k = {levels}: u = "
        + ", ".join(f"{u[k].mean:.4g}±{u[k].half_width:.1g}" for k in levels)
        + ("" if base else f"; log d = {target:.3f} for comparison"),
    )


def geometric_control(
    rho: float, like: Mapping[int, Estimate], N: int, kmax: int = 400
) -> dict[int, Estimate]:
    """The geometric tail ρ^k (d = 1, exponential service) at the same load, as estimates.

    Each level gets the median relative CI half-width of the levels ``like`` fits, so the
    control is judged with the precision of the claim's own data.
    """
    rel = [like[k].half_width / like[k].mean for k in tail_levels(like, N)]
    r = float(np.median(rel)) if rel else 0.01
    out = {}
    for k in range(kmax + 1):
        v = float(rho) ** k  # the M/M/1 (geometric) tail
        out[k] = Estimate(v, v * (1 - r), v * (1 + r), v * r, 20)
    return out


#: The load offset of a closed-form control.
NEIGHBOUR = 0.02


def neighbour_load(rho: float) -> float:
    """The neighbouring load of a control: ρ − 0.02 (ρ + 0.02 if that is not a load)."""
    return rho - NEIGHBOUR if rho - NEIGHBOUR > 0 else rho + NEIGHBOUR
