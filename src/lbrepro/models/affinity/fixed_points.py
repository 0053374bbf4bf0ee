"""Every fixed point of the affinity fluid limit: the no-queueing roots of F(u) = 0 and the
queueing fixed point, their stability, d1* and the bifurcation points in d1 and λ."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import optimize

from lbrepro.core.errors import ConfigError
from lbrepro.meanfield.closed_forms import doubly_exponential_tail
from lbrepro.models.affinity.fluid import K_DEFAULT, pad_state
from lbrepro.models.affinity.jacobians import face_jacobian
from lbrepro.sim.affinity import check_params


def no_queueing_balance(u: Any, lam: float, mu2: float, mu1: float, d1: float) -> Any:
    """F(u) = u + (λ/μ1)(1 − (1−u)^d1) + (λ/μ2)(1−u)^d1 − 1 (roots = no-queueing points)."""
    g = (1.0 - np.asarray(u, dtype=float)) ** d1
    return u + lam / mu1 * (1.0 - g) + lam / mu2 * g - 1.0


def _balance_slope(u: float, lam: float, mu2: float, mu1: float, d1: float) -> float:
    """F'(u): its sign at a root decides the root's stability."""
    a = lam * d1 * (1.0 - u) ** (d1 - 1.0)
    return 1.0 - a * (1.0 / mu2 - 1.0 / mu1)


def _u_min(lam: float, mu2: float, mu1: float, d1: float) -> float:
    """Minimiser of the convex F on [0, 1]."""
    if d1 <= 1:
        return 0.0 if _balance_slope(0.0, lam, mu2, mu1, d1) >= 0 else 1.0
    c = mu1 * mu2 / (lam * d1 * (mu1 - mu2))
    if c >= 1.0:
        return 0.0
    return 1.0 - c ** (1.0 / (d1 - 1.0))


@dataclass(frozen=True)
class FixedPoint:
    """A fixed point of the fluid limit: kind, state x[i, j], stability and eigenvalues."""

    kind: str  # "no-queueing" or "queueing"
    x: np.ndarray
    stable: bool
    eigenvalues: np.ndarray

    @property
    def u(self) -> float:
        """The idle fraction x[0, 0] of the fixed point."""
        return float(self.x[0, 0])


def _no_queueing_state(u: float, lam: float, mu2: float, mu1: float, d1: int, K: int) -> np.ndarray:
    """The occupancy x[i, j] of the no-queueing fixed point with idle fraction u."""
    x = np.zeros((K + 1, 2))
    g = (1.0 - u) ** d1
    x[0, 0] = u
    x[1, 0] = lam / mu1 * (1.0 - g)
    x[0, 1] = lam / mu2 * g
    return x


def face_jacobian_2x2(u: float, lam: float, mu2: float, mu1: float, d1: int) -> np.ndarray:
    """Jacobian of (dx10/dt, dx01/dt) on {x00 + x10 + x01 = 1, u > 0} (u = 1 − x10 − x01)."""
    a = lam * d1 * (1.0 - u) ** (d1 - 1)
    return np.array([[-a - mu1, -a], [a, a - mu2]])


def no_queueing_roots(
    lam: float, mu2: float, mu1: float = 1.0, d1: int = 1, K: int = K_DEFAULT
) -> list[FixedPoint]:
    """All roots u ∈ (0, 1] of F, ascending, as fixed points with their stability.

    F is convex: for λ < μ2 (F(0) < 0 < F(1)) exactly one root; for λ ≥ μ2 none or two,
    on either side of the minimiser u*. Stability from the 2×2 Jacobian (the other
    directions drain at rate μ1 and never receive arrivals while u > 0).
    """
    lam, mu2, mu1, d1, _ = check_params(lam, mu2, mu1, d1)

    def balance(v: float) -> float:
        """F at one u, as a float for the root finder."""
        return float(no_queueing_balance(v, lam, mu2, mu1, d1))

    roots: list[float] = []
    if balance(0.0) < 0:
        roots.append(optimize.brentq(balance, 0.0, 1.0, xtol=1e-15, rtol=1e-15))
    else:
        um = _u_min(lam, mu2, mu1, d1)
        if um > 0 and balance(um) <= 0:
            if balance(um) == 0:
                roots.append(um)
            else:
                # Left root: F(0) ≥ 0 > F(u*); an F(0) = 0 root (λ = μ2) is the queueing point.
                if balance(0.0) > 0:
                    roots.append(optimize.brentq(balance, 0.0, um, xtol=1e-15, rtol=1e-15))
                roots.append(optimize.brentq(balance, um, 1.0, xtol=1e-15, rtol=1e-15))
    out = []
    for u in roots:
        eig = np.linalg.eigvals(face_jacobian_2x2(u, lam, mu2, mu1, d1))
        full = np.concatenate([eig, np.full(2 * (K + 1) - 3, -mu1)])
        stable = bool(np.max(eig.real) < 0)
        out.append(
            FixedPoint("no-queueing", _no_queueing_state(u, lam, mu2, mu1, d1, K), stable, full)
        )
    return out


def dstar_continuous(lam: float, mu2: float, mu1: float = 1.0) -> float:
    """The real d at which the two no-queueing roots are born (min F = 0); NaN if λ < μ2."""
    lam, mu2, mu1, _, _ = check_params(lam, mu2, mu1)
    if lam < mu2:
        return math.nan
    if lam == mu2:
        # F(0) = 0: positive roots appear once F'(0) < 0, i.e. d > μ1μ2/(λ(μ1 − μ2)).
        return mu1 * mu2 / (lam * (mu1 - mu2))

    def min_balance(d: float) -> float:
        """min over u of F at this parameter: ≤ 0 exactly when the no-queueing roots exist."""
        return float(no_queueing_balance(_u_min(lam, mu2, mu1, d), lam, mu2, mu1, d))

    hi = 2.0
    while min_balance(hi) > 0:
        hi *= 2.0
        if hi > 1e9:
            raise ConfigError("lam", f"no no-queueing root for any d1 <= 1e9 at lam = {lam}")
    lo = 1.0 + 1e-9
    if min_balance(lo) <= 0:
        return lo
    return float(optimize.brentq(min_balance, lo, hi, xtol=1e-12))


def dstar(lam: float, mu2: float, mu1: float = 1.0, d_max: int = 10**6) -> int:
    """d1* = the smallest integer d1 ≥ 1 whose F has a root in (0, 1]."""
    lam, mu2, mu1, _, _ = check_params(lam, mu2, mu1)
    if lam < mu2:
        return 1
    d = max(1, math.floor(dstar_continuous(lam, mu2, mu1)) - 1)
    while d <= d_max:
        if no_queueing_roots(lam, mu2, mu1, d):
            return d
        d += 1
    raise ConfigError("d1", f"no root for d1 <= {d_max}")


def lambda_critical(d1: int, mu2: float, mu1: float = 1.0) -> float:
    """Largest λ ∈ (μ2, μ1) up to which the two no-queueing roots exist for this d1.

    d1* grows with λ, so for fixed d1 the roots exist on (μ2, λ_c] (NaN if on no λ > μ2):
    the set {λ : min F ≤ 0} is located on a grid and its end refined by bisection.
    """
    _, mu2, mu1, d1, _ = check_params(0.5 * (mu1 + mu2) if mu1 > mu2 else 0.5, mu2, mu1, d1)

    def min_balance(lam: float) -> float:
        """min over u of F at this parameter: ≤ 0 exactly when the no-queueing roots exist."""
        return float(no_queueing_balance(_u_min(lam, mu2, mu1, d1), lam, mu2, mu1, d1))

    grid = np.linspace(mu2, mu1, 4001)[1:-1]
    vals = np.array([min_balance(v) for v in grid])
    neg = np.flatnonzero(vals <= 0)
    if neg.size == 0:
        return math.nan
    i = int(neg[-1])
    if i == grid.size - 1:
        return float(grid[-1])
    return float(optimize.brentq(min_balance, grid[i], grid[i + 1], xtol=1e-13))


def queueing_fixed_point(
    lam: float, mu2: float, mu1: float = 1.0, d1: int = 1, K: int = K_DEFAULT
) -> np.ndarray | None:
    """The queueing fixed point x[i, 1] (u = 0, a type-II job everywhere); None if λ ≤ μ2.

    x01 = (μ1 − λ)/(μ1 − μ2); type-I counts s_k = ρ'^{(d^k − 1)/(d − 1)}, ρ' = (λ−μ2)/(μ1−μ2).
    """
    lam, mu2, mu1, d1, _ = check_params(lam, mu2, mu1, d1)
    if lam <= mu2:
        return None
    rho = (lam - mu2) / (mu1 - mu2)
    s = doubly_exponential_tail(rho, d1, K + 1)
    x = np.zeros((K + 1, 2))
    for i in range(K + 1):
        x[i, 1] = s[i] - s[i + 1]
    x[K, 1] += s[K + 1]  # keep it a distribution under truncation
    return x


def fixed_points(
    lam: float, mu2: float, mu1: float = 1.0, d1: int = 1, K: int = K_DEFAULT
) -> list[FixedPoint]:
    """Every fixed point: no-queueing roots (ascending u) and the queueing point if λ > μ2.

    The queueing point lies on the face u = 0; it is stable when the face Jacobian's
    eigenvalues have negative real parts and the face attracts (R < λ, so du/dt < 0 just
    inside).
    """
    pts = no_queueing_roots(lam, mu2, mu1, d1, K)
    xq = queueing_fixed_point(lam, mu2, mu1, d1, K)
    if xq is not None:
        eig = np.linalg.eigvals(face_jacobian(xq, lam, mu2, mu1, d1))
        R = mu2 * xq[0, 1] + mu1 * xq[1, 0]
        stable = bool(np.max(eig.real) < 0 and lam > R)
        pts.append(FixedPoint("queueing", xq, stable, eig))
    return pts


def nearest_fixed_point(x: np.ndarray, points: list[FixedPoint]) -> tuple[int, float]:
    """Index of the fixed point closest to x (L1 over x[i, j]) and that distance."""
    dist = [float(np.abs(pad_state(x, p.x.shape[0] - 1) - p.x).sum()) for p in points]
    i = int(np.argmin(dist))
    return i, dist[i]
