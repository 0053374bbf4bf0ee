"""Static type splits: the split of type-based SQ(d) that is optimal at an assumed load.

Each type under a static split is a homogeneous supermarket, whose mean-field mean jobs is the
sum of its doubly exponential tail (:mod:`lbrepro.meanfield.closed_forms`).
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import scipy.optimize

from lbrepro.core.errors import ConfigError, UnstableError
from lbrepro.meanfield.closed_forms import doubly_exponential_exponent
from lbrepro.models.hetero.system import System, check_system, finite_real


def _supermarket_mean_jobs(rho: float, d: int) -> tuple[float, float]:
    """Mean jobs ``m(ρ) = Σ_k ρ^{e_k}``, ``e_k = (d^k − 1)/(d − 1)``, and ``m'(ρ)``.

    The mean-field jobs at a supermarket server (docs/models.md §S); d = 1 is M/M/1, ρ/(1 − ρ).
    """
    if rho <= 0.0:
        return 0.0, 1.0
    if d == 1:
        return rho / (1.0 - rho), 1.0 / (1.0 - rho) ** 2
    m = dm = 0.0
    log_rho = math.log(rho)
    for k in itertools.count(1):
        e = doubly_exponential_exponent(d, k)
        term = math.exp(e * log_rho)
        m += term
        dm += e * term / rho
        if e * log_rho < -745.0 or (term < 1e-18 * m and e * term < 1e-18 * dm * rho):
            break
    return m, dm


def _load_for_marginal_jobs(slope: float, d: int) -> float:
    """The ρ in [0, 1) with ``m'(ρ) = slope`` (0 when slope ≤ m'(0) = 1)."""
    if slope <= 1.0:
        return 0.0
    if d == 1:
        return 1.0 - 1.0 / math.sqrt(slope)
    hi = 0.5
    while _supermarket_mean_jobs(hi, d)[1] < slope:
        hi = 1.0 - 0.5 * (1.0 - hi)
    return float(
        scipy.optimize.brentq(
            lambda r: _supermarket_mean_jobs(r, d)[1] - slope, 0.0, hi, xtol=1e-15, rtol=1e-15
        )
    )


def typed_split(system: System, lam_hat: float, d: Any = None) -> np.ndarray:
    """Split p minimising the mean-field E[T] of type-based SQ(d) at an assumed load λ̂.

    Each type is an independent supermarket at ρ_j = λ̂p_j/(μγ_jC_j), so E[T] ∝
    Σ_j γ_j m_{d_j}(ρ_j) subject to Σ_j μγ_jC_jρ_j = λ̂, 0 ≤ ρ_j < 1. m is strictly convex
    with m'(0) = 1 and m' → ∞ as ρ → 1, so the optimum is the KKT water-filling
    ``m'_{d_j}(ρ_j) = ν C_j`` (ρ_j = 0 when νC_j ≤ 1: slow types get nothing at light load);
    ν is found by ``scipy.optimize.brentq`` (exact to rounding, unlike a generic constrained
    solver; the tests compare with SLSQP).

    Parameters
    ----------
    system : System
    lam_hat : float
        Assumed arrival rate per server, ``0 < λ̂ < μΣγC``.
    d : int or sequence of int, optional
        SQ(d) sample size inside each type (default ``system.d``).
    """
    system = check_system(system)
    lam_hat = finite_real(lam_hat, "lam_hat")
    if lam_hat <= 0:
        raise ConfigError("lam_hat", f"assumed load must be > 0, got {lam_hat!r}")
    if lam_hat >= system.total_capacity:
        raise UnstableError(
            f"lam_hat={lam_hat:g} >= total capacity {system.total_capacity:g}: no split is stable"
        )
    # Validating d through System gives the same messages as everywhere else.
    ds = system.d if d is None else System(system.gamma, system.capacity, d, system.mu).d
    w = system.mu * np.array(system.gamma) * np.array(system.capacity)  # load → rate

    def served(nu: float) -> float:
        """Arrival rate the types absorb when every marginal cost is ν·C_j (increasing in ν)."""
        return float(
            sum(
                wj * _load_for_marginal_jobs(nu * c, dj)
                for wj, c, dj in zip(w, system.capacity, ds, strict=True)
            )
        )

    lo = 1.0 / max(system.capacity)  # every ρ_j = 0 at or below this ν
    hi = 2.0 * lo
    while served(hi) < lam_hat:
        hi *= 2.0
    nu = scipy.optimize.brentq(lambda v: served(v) - lam_hat, lo, hi, xtol=1e-15, rtol=1e-15)
    rho = np.array(
        [_load_for_marginal_jobs(nu * c, dj) for c, dj in zip(system.capacity, ds, strict=True)]
    )
    p = w * rho
    return p / p.sum()
