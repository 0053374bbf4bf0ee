"""Job allocation with affinity relations (models.md §D, seed 003): the home of its equations.

N servers; a job samples d1 *primary* servers. Served at a primary server it is a type-I job
(rate μ1), anywhere else a type-II job (rate μ2 < μ1). Assignment [reconstruction]: an idle
primary server takes it as type I; else any idle server as type II; else the primary server
with the fewest jobs as type I. Type I has preemptive priority over the (at most one) type-II
job of a server. State: x[i, j] = fraction of servers with i type-I and j ∈ {0, 1} type-II
jobs; u = x[0, 0] is the idle fraction.

Contents:

* coupling step functions f_ref, f_aff and Table 1, in exact integer / rational arithmetic;
* the fluid limit (with the u = 0 face and its immediate switch), a robust integrator;
* every fixed point: the no-queueing roots of F(u) = 0 and the queueing fixed point, their
  stability from the Jacobian, d1* and the bifurcation points in d1 and λ;
* the performance formulas of Figs. 6–7 (CM(d1), JSQ(d1), RA).

Key fact used throughout: F(u) = u + (λ/μ1)(1 − (1−u)^d) + (λ/μ2)(1−u)^d − 1 is convex on
[0, 1] (F'' = λ(1/μ2 − 1/μ1) d(d−1)(1−u)^{d−2} ≥ 0), so it has at most two roots, separated
by its minimiser u* = 1 − (μ1μ2 / (λ d (μ1 − μ2)))^{1/(d−1)}; and the 2×2 Jacobian of the
fluid limit on the face {x00 + x10 + x01 = 1} has trace −μ1 − μ2 < 0 and determinant
μ1μ2 F'(u), so a root is stable iff F'(u) > 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
from numba import njit
from scipy import optimize

from lbrepro.core.args import float_arg, int_arg
from lbrepro.core.errors import ConfigError, UnstableError

__all__ = [
    "FixedPoint",
    "check_params",
    "check_state",
    "dstar",
    "dstar_continuous",
    "f_aff",
    "f_ref",
    "fixed_points",
    "fluid_field",
    "fluid_trajectory",
    "lambda_critical",
    "no_queueing_balance",
    "no_queueing_roots",
    "performance",
    "queueing_fixed_point",
    "step_dominates",
    "supermarket_tail",
    "table1_d",
]

#: Default truncation of the type-I count in the fluid limit (the paper used i ≤ 9).
K_DEFAULT = 12


# ---------------------------------------------------------------------------------------
# Arguments


def check_params(
    lam: Any, mu2: Any, mu1: Any = 1.0, d1: Any = None, N: Any = None
) -> tuple[float, float, float, int | None, int | None]:
    """Validate (λ, μ2, μ1, d1, N); return them typed. Errors name the parameter.

    Requires 0 < μ2 < μ1 (type-II service is slower), 0 < λ < μ1 (stability: the coupling
    bounds the type-I jobs by RA at load λ/μ1), 1 ≤ d1 (≤ N when N is given).
    """
    lam = float_arg("lam", lam)
    mu1 = float_arg("mu1", mu1)
    mu2 = float_arg("mu2", mu2)
    if mu1 <= 0:
        raise ConfigError("mu1", f"must be > 0, got {mu1}")
    if mu2 <= 0:
        raise ConfigError("mu2", f"must be > 0, got {mu2}")
    if mu2 >= mu1:
        raise ConfigError("mu2", f"must be < mu1 = {mu1} (type II is slower), got {mu2}")
    if lam <= 0:
        raise ConfigError("lam", f"must be > 0, got {lam}")
    if lam >= mu1:
        raise UnstableError(f"lam: load lam = {lam} >= mu1 = {mu1}: unstable, refused")
    n_out = None if N is None else int_arg("N", N, 1)
    d_out = None
    if d1 is not None:
        d_out = int_arg("d1", d1, 1)
        if n_out is not None and d_out > n_out:
            raise ConfigError("d1", f"must be <= N = {n_out}, got {d_out}")
    return lam, mu2, mu1, d_out, n_out


def check_state(x: Any, key: str = "initial") -> np.ndarray:
    """An occupancy distribution x[i, j] (shape (K+1, 2)): non-negative, summing to 1."""
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise ConfigError(key, f"must be an array of fractions x[i, j], got {x!r}") from None
    if arr.ndim != 2 or arr.shape[1] != 2 or arr.shape[0] < 2:
        raise ConfigError(key, f"must have shape (K+1, 2) with K >= 1, got {arr.shape}")
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise ConfigError(key, "fractions must be finite and >= 0")
    total = float(arr.sum())
    if abs(total - 1.0) > 1e-9:
        raise ConfigError(key, f"fractions must sum to 1 (a distribution), got {total!r}")
    return arr / total


# ---------------------------------------------------------------------------------------
# Coupling step functions and Table 1 (exact)


def f_ref(N: int, k: int) -> list[Fraction]:
    """JSQ(k) step function f_ref(n) = 1 − C(N − n, k)/C(N, k), n = 0..N, as exact fractions."""
    N = int_arg("N", N, 1)
    k = int_arg("k", k, 1)
    if k > N:
        raise ConfigError("k", f"must be <= N = {N}, got {k}")
    total = math.comb(N, k)
    return [1 - Fraction(math.comb(N - n, k), total) for n in range(N + 1)]


def f_aff(N: int, d: int) -> list[Fraction]:
    """Worst-case d-regular step function (d ≥ N/2): jumps (d+1)/N at n = 1, to 1 at N − d."""
    N = int_arg("N", N, 2)
    d = int_arg("d", d, 1)
    if d > N - 1:
        raise ConfigError("d", f"a d-regular graph on N = {N} nodes has d <= N - 1, got {d}")
    if 2 * d < N:
        raise ConfigError("d", f"the two-jump step function needs d >= N/2 = {N / 2}, got {d}")
    out = []
    for n in range(N + 1):
        if n == 0:
            out.append(Fraction(0))
        elif n < N - d:
            out.append(Fraction(d + 1, N))
        else:
            out.append(Fraction(1))
    return out


def _table_condition(N: int, d: int, k: int) -> bool:
    # (d+1)/N > 1 − C(d+1, k)/C(N, k)  ⇔  (d+1)·C(N,k) > N·(C(N,k) − C(d+1,k)), in integers.
    c = math.comb(N, k)
    return (d + 1) * c > N * (c - math.comb(d + 1, k))


def table1_d(N: int, k: int) -> int:
    """Table 1: the smallest d ≥ N/2 with f_aff(N−d−1) > f_ref(N−d−1) (exact integers)."""
    N = int_arg("N", N, 2)
    k = int_arg("k", k, 1)
    if k > N:
        raise ConfigError("k", f"must be <= N = {N}, got {k}")
    for d in range((N + 1) // 2, N):
        if _table_condition(N, d, k):
            return d
    raise ConfigError("k", f"no d <= N - 1 satisfies the condition for N = {N}, k = {k}")


def step_dominates(N: int, d: int, k: int) -> bool:
    """Whether f_aff ≥ f_ref at every position n = 0..N (exact), the coupling's requirement."""
    fa = f_aff(N, d)
    fr = f_ref(N, k)
    return all(a >= r for a, r in zip(fa, fr, strict=True))


# ---------------------------------------------------------------------------------------
# No-queueing roots, d1* and bifurcation points


def no_queueing_balance(u: Any, lam: float, mu2: float, mu1: float, d1: float) -> Any:
    """F(u) = u + (λ/μ1)(1 − (1−u)^d1) + (λ/μ2)(1−u)^d1 − 1 (roots = no-queueing points)."""
    g = (1.0 - np.asarray(u, dtype=float)) ** d1
    return u + lam / mu1 * (1.0 - g) + lam / mu2 * g - 1.0


def _balance_slope(u: float, lam: float, mu2: float, mu1: float, d1: float) -> float:
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
        return float(self.x[0, 0])


def _no_queueing_state(u: float, lam: float, mu2: float, mu1: float, d1: int, K: int) -> np.ndarray:
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
    F = lambda v: float(no_queueing_balance(v, lam, mu2, mu1, d1))  # noqa: E731
    roots: list[float] = []
    if F(0.0) < 0:
        roots.append(optimize.brentq(F, 0.0, 1.0, xtol=1e-15, rtol=1e-15))
    else:
        um = _u_min(lam, mu2, mu1, d1)
        if um > 0 and F(um) <= 0:
            if F(um) == 0:
                roots.append(um)
            else:
                # Left root: F(0) ≥ 0 > F(u*); an F(0) = 0 root (λ = μ2) is the queueing point.
                if F(0.0) > 0:
                    roots.append(optimize.brentq(F, 0.0, um, xtol=1e-15, rtol=1e-15))
                roots.append(optimize.brentq(F, um, 1.0, xtol=1e-15, rtol=1e-15))
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


# ---------------------------------------------------------------------------------------
# Queueing fixed point and performance formulas


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
    s = supermarket_tail(rho, d1, K + 2)
    x = np.zeros((K + 1, 2))
    for i in range(K + 1):
        x[i, 1] = s[i] - s[i + 1]
    x[K, 1] += s[K + 1]  # keep it a distribution under truncation
    return x


def supermarket_tail(rho: float, d: int, n: int) -> np.ndarray:
    """s_0..s_{n−1} with s_k = ρ^{(d^k − 1)/(d − 1)} (= ρ^k for d = 1), s_0 = 1."""
    out = np.zeros(n)
    for k in range(n):
        expo = k if d == 1 else (d**k - 1) // (d - 1)
        out[k] = rho ** float(min(expo, 10**6))
    return out


def performance(lam: float, mu2: float, mu1: float = 1.0, d1: int = 3) -> dict[str, float]:
    """Waiting jobs per server and waiting times (Figs. 6–7) for CM(d1), JSQ(d1) and RA.

    CM(d1) is evaluated at the fixed point the paper uses: the queueing point for λ > μ2
    (u = 0; a server with i type-I jobs has i waiting jobs: i − 1 type I and the type II),
    and the stable no-queueing point for λ ≤ μ2 (nobody waits). Waiting times by Little's
    law: type I arrive at λ̃ = λ − μ2 x01, type II (immediate switch) at μ2 x01. JSQ(d1) at
    load λ/μ1: P(n ≥ k) = ρ^{(d^k−1)/(d−1)}; RA: M/M/1 at ρ = λ/μ1.
    """
    lam, mu2, mu1, d1, _ = check_params(lam, mu2, mu1, d1)
    rho = lam / mu1
    out: dict[str, float] = {}
    if lam > mu2:
        rp = (lam - mu2) / (mu1 - mu2)
        s = supermarket_tail(rp, d1, 80)  # s_k = P(type-I count ≥ k)
        k = np.arange(80)
        mean_q = float(s[1:].sum())
        second = float(((2 * k[1:] - 1) * s[1:]).sum())
        x01 = 1.0 - rp
        lam_ii = mu2 * x01
        lam_i = lam - lam_ii
        wait_i_jobs = float(s[2:].sum())
        wait_ii_jobs = float(s[1])
        out.update(
            cm_wait_jobs=mean_q,
            cm_wait_var=second - mean_q**2,
            cm_switch_fraction=lam_ii / lam,
            cm_wait_time=mean_q / lam,
            cm_wait_time_I=wait_i_jobs / lam_i,
            cm_wait_time_II=wait_ii_jobs / lam_ii,
        )
    else:
        out.update(
            cm_wait_jobs=0.0,
            cm_wait_var=0.0,
            cm_switch_fraction=float("nan"),
            cm_wait_time=0.0,
            cm_wait_time_I=0.0,
            cm_wait_time_II=0.0,
        )
    u = supermarket_tail(rho, d1, 200)  # P(n ≥ k)
    k = np.arange(200)
    w = u[2:]  # P(waiting ≥ m) = P(n ≥ m + 1), m ≥ 1
    m = k[1:-1]
    jsq_mean = float(w.sum())
    out.update(
        jsq_wait_jobs=jsq_mean,
        jsq_wait_var=float(((2 * m - 1) * w).sum()) - jsq_mean**2,
        jsq_wait_time=jsq_mean / lam,
        ra_wait_jobs=rho**2 / (1 - rho),
        ra_wait_var=rho**2 * (1 + rho - rho**2) / (1 - rho) ** 2,
        ra_wait_time=rho / (mu1 - lam),
    )
    return out


# ---------------------------------------------------------------------------------------
# Fluid limit


@njit(cache=True)
def _field(x, lam, mu1, mu2, d, face, out):
    """Vector field of the fluid limit at x (shape (K+1, 2)) into ``out``.

    ``face`` False: u > 0 — every arrival finds an idle server; w.p. 1 − (1 − u)^d an idle
    primary (type I, → (1,0)), else another idle server (type II, → (0,1)).
    ``face`` True: u = 0 — the servers emptied at rate R = μ2 x01 + μ1 x10 are refilled at once
    by type-II arrivals (immediate switch), and the remaining λ − R joins JSQ(d) by total jobs
    i + j; the joined server is proportional to mass among the servers of that total. An
    arrival that would create i = K + 1 is lost (truncation).
    """
    K1 = x.shape[0]
    for i in range(K1):
        out[i, 0] = 0.0
        out[i, 1] = 0.0
    # services: type I first (preemptive priority), type II only when i = 0
    for i in range(1, K1):
        for j in range(2):
            f = mu1 * x[i, j]
            out[i, j] -= f
            out[i - 1, j] += f
    f2 = mu2 * x[0, 1]
    out[0, 1] -= f2
    out[0, 0] += f2
    if not face:
        u = x[0, 0]
        p1 = 1.0 - (1.0 - u) ** d
        out[0, 0] -= lam
        out[1, 0] += lam * p1
        out[0, 1] += lam * (1.0 - p1)
        return
    R = mu2 * x[0, 1] + mu1 * x[1, 0]
    # immediate switch: the inflow R into (0,0) goes on to (0,1)
    out[0, 0] -= R
    out[0, 1] += R
    lam_q = lam - R
    if lam_q <= 0.0:
        return
    # T_m = fraction with total i + j ≥ m, m = 1..K+1 (T_{K+2} = 0); T_1 = 1 − u = 1.
    tail_next = 0.0  # T_{m+1}
    for m in range(K1, 0, -1):
        a = x[m, 0] if m < K1 else 0.0
        b = x[m - 1, 1]
        tail = tail_next + a + b
        mass = a + b
        if mass > 0.0:
            flow = lam_q * (tail**d - tail_next**d)
            if a > 0.0 and m + 1 < K1:
                fa = flow * a / mass
                out[m, 0] -= fa
                out[m + 1, 0] += fa
            if b > 0.0 and m < K1:
                fb = flow * b / mass
                out[m - 1, 1] -= fb
                out[m, 1] += fb
        tail_next = tail


@njit(cache=True)
def _rk4(x, dt, lam, mu1, mu2, d, face, k1, k2, k3, k4, tmp, out):
    _field(x, lam, mu1, mu2, d, face, k1)
    for i in range(x.shape[0]):
        for j in range(2):
            tmp[i, j] = x[i, j] + 0.5 * dt * k1[i, j]
    _field(tmp, lam, mu1, mu2, d, face, k2)
    for i in range(x.shape[0]):
        for j in range(2):
            tmp[i, j] = x[i, j] + 0.5 * dt * k2[i, j]
    _field(tmp, lam, mu1, mu2, d, face, k3)
    for i in range(x.shape[0]):
        for j in range(2):
            tmp[i, j] = x[i, j] + dt * k3[i, j]
    _field(tmp, lam, mu1, mu2, d, face, k4)
    for i in range(x.shape[0]):
        for j in range(2):
            out[i, j] = x[i, j] + dt / 6.0 * (k1[i, j] + 2 * k2[i, j] + 2 * k3[i, j] + k4[i, j])


@njit(cache=True)
def _integrate(x0, lam, mu1, mu2, d, dt, n_steps, record_every, traj):
    """Hybrid RK4: interior steps while u > 0, face steps while u = 0 and λ ≥ R.

    An interior step that would make u negative is shortened to the crossing (linear
    interpolation of u, one re-step) and u is set to exactly 0, the O(dt²) residual taken
    from x01 — the mass the overshoot sent there. On the face, u stays exactly 0; when R
    exceeds λ the face is left (du/dt = R − λ > 0). Returns the final state; ``traj`` gets
    every ``record_every``-th state.
    """
    x = x0.copy()
    K1 = x.shape[0]
    k1 = np.empty_like(x)
    k2 = np.empty_like(x)
    k3 = np.empty_like(x)
    k4 = np.empty_like(x)
    tmp = np.empty_like(x)
    y = np.empty_like(x)
    rec = 0
    for step in range(n_steps + 1):
        if step % record_every == 0 and rec < traj.shape[0]:
            traj[rec] = x
            rec += 1
        if step == n_steps:
            break
        R = mu2 * x[0, 1] + mu1 * x[1, 0]
        face = x[0, 0] <= 0.0 and lam >= R
        _rk4(x, dt, lam, mu1, mu2, d, face, k1, k2, k3, k4, tmp, y)
        if not face and y[0, 0] < 0.0:
            theta = x[0, 0] / (x[0, 0] - y[0, 0])
            _rk4(x, theta * dt, lam, mu1, mu2, d, False, k1, k2, k3, k4, tmp, y)
            y[0, 1] += y[0, 0]
            y[0, 0] = 0.0
            # the rest of the step on the face (or back inside if R > λ)
            R = mu2 * y[0, 1] + mu1 * y[1, 0]
            if lam >= R:
                _rk4(y.copy(), (1.0 - theta) * dt, lam, mu1, mu2, d, True, k1, k2, k3, k4, tmp, y)
        for i in range(K1):
            for j in range(2):
                if y[i, j] < 0.0:
                    y[i, j] = 0.0
                x[i, j] = y[i, j]
    return x


def fluid_field(x: Any, lam: float, mu2: float, mu1: float = 1.0, d1: int = 1) -> np.ndarray:
    """The fluid vector field at x (Filippov: the face field when u = 0 and λ ≥ R)."""
    lam, mu2, mu1, d1, _ = check_params(lam, mu2, mu1, d1)
    arr = check_state(x, "x")
    out = np.zeros_like(arr)
    R = mu2 * arr[0, 1] + mu1 * arr[1, 0]
    face = bool(arr[0, 0] <= 0.0 and lam >= R)
    _field(arr, lam, mu1, mu2, d1, face, out)
    return out


def pad_state(x: Any, K: int) -> np.ndarray:
    """A state as shape (K+1, 2); mass above level K is lumped into level K."""
    arr = np.asarray(x, dtype=float)
    out = np.zeros((K + 1, 2))
    n = min(arr.shape[0], K + 1)
    out[:n] = arr[:n]
    if arr.shape[0] > K + 1:
        out[K] += arr[K + 1 :].sum(axis=0)
    return out


def fluid_trajectory(
    x0: Any,
    lam: float,
    mu2: float,
    mu1: float = 1.0,
    d1: int = 1,
    *,
    t_end: float = 100.0,
    dt: float = 0.01,
    n_record: int = 201,
    K: int = K_DEFAULT,
) -> tuple[np.ndarray, np.ndarray]:
    """Integrate the fluid limit from x0; return (times, states[n_record, K+1, 2])."""
    lam, mu2, mu1, d1, _ = check_params(lam, mu2, mu1, d1)
    x = pad_state(check_state(x0), K)
    t_end = float_arg("t_end", t_end)
    dt = float_arg("dt", dt)
    if t_end <= 0 or dt <= 0:
        raise ConfigError("t_end", f"t_end and dt must be > 0, got {t_end}, {dt}")
    n_steps = max(1, round(t_end / dt))
    every = max(1, n_steps // max(1, n_record - 1))
    n_rec = n_steps // every + 1
    traj = np.zeros((n_rec, K + 1, 2))
    _integrate(x, lam, mu1, mu2, d1, t_end / n_steps, n_steps, every, traj)
    times = np.arange(n_rec) * every * (t_end / n_steps)
    return times, traj


def fluid_final(
    x0: np.ndarray, lam: float, mu2: float, mu1: float, d1: int, t_end: float, dt: float
) -> np.ndarray:
    """Final state only (no validation; hot loop of the basin computation)."""
    n_steps = max(1, round(t_end / dt))
    traj = np.zeros((1, x0.shape[0], 2))
    return _integrate(x0, lam, mu1, mu2, d1, t_end / n_steps, n_steps, n_steps + 1, traj)


def face_jacobian(x: np.ndarray, lam: float, mu2: float, mu1: float, d1: int) -> np.ndarray:
    """Numerical Jacobian of the face field (u = 0) in the coordinates x[i, j] except x00, x01.

    x01 = 1 − Σ(others) eliminates the conservation law; central differences, step 1e-7.
    """
    K1 = x.shape[0]
    idx = [(i, j) for i in range(K1) for j in range(2) if (i, j) not in ((0, 0), (0, 1))]
    n = len(idx)
    J = np.zeros((n, n))
    out_p = np.zeros_like(x)
    out_m = np.zeros_like(x)
    h = 1e-7
    for c, (i, j) in enumerate(idx):
        xp = x.copy()
        xm = x.copy()
        xp[i, j] += h
        xp[0, 1] -= h
        xm[i, j] -= h
        xm[0, 1] += h
        _field(xp, lam, mu1, mu2, d1, True, out_p)
        _field(xm, lam, mu1, mu2, d1, True, out_m)
        for r, (a, b) in enumerate(idx):
            J[r, c] = (out_p[a, b] - out_m[a, b]) / (2 * h)
    return J


def interior_jacobian(x: np.ndarray, lam: float, mu2: float, mu1: float, d1: int) -> np.ndarray:
    """Numerical Jacobian of the interior field (u > 0) without the x00 coordinate."""
    K1 = x.shape[0]
    idx = [(i, j) for i in range(K1) for j in range(2) if (i, j) != (0, 0)]
    n = len(idx)
    J = np.zeros((n, n))
    out_p = np.zeros_like(x)
    out_m = np.zeros_like(x)
    h = 1e-7
    for c, (i, j) in enumerate(idx):
        xp = x.copy()
        xm = x.copy()
        xp[i, j] += h
        xp[0, 0] -= h
        xm[i, j] -= h
        xm[0, 0] += h
        _field(xp, lam, mu1, mu2, d1, False, out_p)
        _field(xm, lam, mu1, mu2, d1, False, out_m)
        for r, (a, b) in enumerate(idx):
            J[r, c] = (out_p[a, b] - out_m[a, b]) / (2 * h)
    return J


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


def solve(lam: float, mu2: float, mu1: float = 1.0, d1: int = 3) -> dict[str, Any]:
    """All fixed points, d1* and the performance measures, as plain data (CLI ``solve``)."""
    pts = fixed_points(lam, mu2, mu1, d1)
    return {
        "model": "affinity",
        "params": {"lam": lam, "mu1": mu1, "mu2": mu2, "d1": d1},
        "dstar": dstar(lam, mu2, mu1),
        "fixed_points": [
            {
                "kind": p.kind,
                "u": p.u,
                "stable": p.stable,
                "x_i0": p.x[:6, 0].tolist(),
                "x_i1": p.x[:6, 1].tolist(),
            }
            for p in pts
        ],
        "performance": performance(lam, mu2, mu1, d1),
    }


def cli_solve(lam: float, mu2: float, mu1: float = 1.0, d1: int = 3) -> dict[str, Any]:
    """``lbrepro solve affinity --lam L --mu2 M2 [--mu1 M1] --d1 D``: :func:`solve`."""
    return solve(lam, mu2, mu1, d1)


def cli_simulate(
    lam: float,
    mu2: float,
    mu1: float,
    d1: int,
    N: int,
    horizon: float,
    warmup: float,
    seed: int,
    batches: int,
    replace: bool = True,
    progress: bool = False,
    start: str = "fixed_point",
) -> dict[str, Any]:
    """``lbrepro simulate affinity ...``: one simulation as plain data.

    ``start``: "empty", "type2" (one type-II job everywhere) or "fixed_point" (the queueing
    fixed point for λ > μ2, else the stable no-queueing point, rounded to N servers).
    Primary servers are always distinct (``replace`` is accepted for CLI uniformity and
    ignored: the fluid limit is the same); ``progress`` is ignored (runs are short).
    """
    from lbrepro.sim.affinity import simulate_affinity

    lam, mu2, mu1, d1, N = check_params(lam, mu2, mu1, d1, N)
    init: Any = start
    if start == "fixed_point":
        xq = queueing_fixed_point(lam, mu2, mu1, d1)
        stable_nq = [p.x for p in no_queueing_roots(lam, mu2, mu1, d1) if p.stable]
        init = xq if xq is not None else stable_nq[0]
    elif start not in ("empty", "type2"):
        raise ConfigError("start", f"must be fixed_point, empty or type2, got {start!r}")
    r = simulate_affinity(
        lam, mu2, mu1, d1, N, horizon=horizon, warmup=warmup, batches=batches, start=init, seed=seed
    )
    K = 6
    return {
        "model": "affinity",
        "params": {"lam": lam, "mu1": mu1, "mu2": mu2, "d1": d1, "N": N, "start": start},
        "x_i0": r.x[:K, 0].tolist(),
        "x_i1": r.x[:K, 1].tolist(),
        "ci": {
            "x_i0": [r.x_ci_low[:K, 0].tolist(), r.x_ci_high[:K, 0].tolist()],
            "x_i1": [r.x_ci_low[:K, 1].tolist(), r.x_ci_high[:K, 1].tolist()],
        },
        "switch_fraction": float(
            r.arrivals_type2.sum() / max(1, r.arrivals_type1.sum() + r.arrivals_type2.sum())
        ),
        "events": r.events,
        "elapsed": r.elapsed,
        "events_per_second": r.events_per_second,
        "horizon": horizon,
        "warmup": warmup,
        "batches": batches,
        "seed": seed,
    }
