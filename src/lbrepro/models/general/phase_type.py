"""The exact mean field for phase-type service (docs/models.md §C).

Each server's state (queue length n, phase j of the job in service) is Markov, so the mean
field is exact as N → ∞. Its fixed point is found two independent ways that must agree: the
cavity queue (:func:`cavity_fixed_point`) and the (n, j) mean-field ODE integrated to
equilibrium (:func:`ode_fixed_point`).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import linalg

from lbrepro.core.equilibrium import integrate_to_equilibrium
from lbrepro.core.errors import ConfigError, ConvergenceError
from lbrepro.meanfield.closed_forms import doubly_exponential_exponent
from lbrepro.models.general.arguments import validated
from lbrepro.models.service import ServiceDist

__all__ = [
    "MeanFieldPH",
    "TruncationError",
    "cavity_fixed_point",
    "mean_field_drift",
    "ode_fixed_point",
]


class TruncationError(ConvergenceError):
    """The cavity fixed point holds non-negligible mass ``mass`` at its truncation level
    ``K``: the queue-length tail is heavier than K levels hold."""

    def __init__(self, message: str, mass: float = math.nan, K: int = 0) -> None:
        super().__init__(message)
        self.mass, self.K = mass, K


@dataclass(frozen=True, eq=False)
class MeanFieldPH:
    """Exact mean-field fixed point for PH service.

    ``u`` = (u_0 = 1, u_1, …, u_K); ``x`` = fractions over (0, (1, 1..m), …, (K, 1..m)).
    """

    u: np.ndarray
    x: np.ndarray
    K: int
    phases: int
    residual: float
    num_iter: int
    method: str
    elapsed: float

    @property
    def mean_jobs(self) -> float:
        """Mean jobs per server, Σ_{k≥1} u_k."""
        return float(np.sum(self.u[1:]))

    def mean_sojourn(self, lam: float) -> float:
        """Little's law, Σ_{k≥1} u_k / λ."""
        return self.mean_jobs / lam


def _ph(dist: ServiceDist) -> tuple[np.ndarray, np.ndarray]:
    """The (α, S) representation of a phase-type law; other laws have no exact mean field here."""
    rep = dist.ph()
    if rep is None:
        raise ConfigError(
            "dist", f"{dist.label} is not phase type: the exact mean field needs PH service"
        )
    return rep


def _level_rates(u: np.ndarray, lam: float, d: int) -> np.ndarray:
    """λ_n = λ(u_n^d − u_{n+1}^d)/(u_n − u_{n+1}), n = 0..K−1 (limit λ d u_n^{d−1} if equal).

    ``u`` = (u_0, …, u_K). The rate at which a server holding n jobs receives arrivals: the
    flow λ(u_n^d − u_{n+1}^d) into level n + 1 shared by the u_n − u_{n+1} servers at level n.
    """
    a, b = u[:-1], u[1:]
    diff = a - b
    out = np.empty_like(a)
    small = diff <= 1e-300
    # a^d − b^d = (a − b) Σ_{i<d} a^i b^{d−1−i}: summing the series avoids cancellation.
    series = np.zeros_like(a)
    for i in range(d):
        series += a**i * b ** (d - 1 - i)
    out[~small] = series[~small]
    out[small] = d * a[small] ** (d - 1)
    return lam * out


def _cavity_generator(rates: np.ndarray, alpha: np.ndarray, S: np.ndarray, K: int) -> np.ndarray:
    """Generator of one PH FCFS server with arrival rate rates[n] at queue length n < K."""
    m = alpha.size
    n_states = 1 + K * m
    G = np.zeros((n_states, n_states))
    exit_rates = -S.sum(axis=1)
    G[0, 1 : 1 + m] = rates[0] * alpha
    for n in range(1, K + 1):
        i = 1 + (n - 1) * m
        G[i : i + m, i : i + m] += S
        if n < K:
            G[i : i + m, i + m : i + 2 * m] += rates[n] * np.eye(m)
        if n == 1:
            G[i : i + m, 0] += exit_rates
        else:
            G[i : i + m, i - m : i] += np.outer(exit_rates, alpha)
    G[np.diag_indices(n_states)] = 0.0
    G[np.diag_indices(n_states)] = -G.sum(axis=1)
    return G


def _stationary(G: np.ndarray) -> np.ndarray:
    """π with πG = 0, Σπ = 1 (one balance equation replaced by the normalisation)."""
    A = G.T.copy()
    A[-1, :] = 1.0
    b = np.zeros(G.shape[0])
    b[-1] = 1.0
    pi = linalg.solve(A, b, check_finite=False)
    return np.maximum(pi, 0.0)


def _stationary_levels(rates: np.ndarray, alpha: np.ndarray, S: np.ndarray, K: int) -> np.ndarray:
    """Stationary law of the cavity CTMC by linear level reduction, O(K m³).

    The chain is a level-dependent QBD (level = queue length): up λ_n I (from level 0: λ_0 α),
    local S − λ_n I, down s α with s = −S1 (to level 0: s). With π_n = π_{n−1} R_n the top
    level gives R_K = λ_{K−1}(−S)^{−1}, and R_n = λ_{n−1}(−(S − λ_n I + R_{n+1} s α))^{−1}
    downwards; every R_n ≥ 0, so no cancellation. Same result as the dense solve of
    :func:`_cavity_generator` (tests), ~K small inverses instead of one (1 + Km)² system.
    """
    m = alpha.size
    s = -S.sum(axis=1)
    down = np.outer(s, alpha)
    eye = np.eye(m)
    R = [np.zeros((m, m))] * (K + 1)
    R[K] = rates[K - 1] * np.linalg.inv(-S)
    for n in range(K - 1, 1, -1):
        R[n] = rates[n - 1] * np.linalg.inv(-(S - rates[n] * eye + R[n + 1] @ down))
    # Level 1 from level 0: π_1 = π_0 λ_0 α (−(S − λ_1 I + R_2 s α))^{−1}.
    local1 = S - rates[1] * eye + R[2] @ down  # K ≥ 2 always
    pi = [np.ones(1)]
    pi.append(rates[0] * alpha @ np.linalg.inv(-local1))
    for n in range(2, K + 1):
        pi.append(pi[-1] @ R[n])
    x = np.concatenate(pi)
    return np.maximum(x, 0.0) / x.sum()


def _tails(x: np.ndarray, K: int, m: int) -> np.ndarray:
    """(u_0, …, u_K) from the (n, phase) fractions."""
    levels = np.concatenate([[x[0]], x[1:].reshape(K, m).sum(axis=1)])
    return np.cumsum(levels[::-1])[::-1]


def _default_truncation(dist: ServiceDist, lam: float, d: int, tol: float) -> int:
    """A truncation level with negligible mass beyond it, judged from the exponential case.

    Uses the exponential fixed point at a slightly heavier effective load (PH service with a
    larger SCV has heavier tails); :func:`cavity_fixed_point` checks u_K afterwards.
    """
    rho = lam * dist.mean
    scv = max(dist.scv, 1.0)
    r = rho ** (1.0 / (1.0 + 0.5 * (scv - 1.0)))
    if d == 1:
        return int(min(4000, max(16, math.ceil(2 * math.log(tol) / math.log(r)) + 4)))
    k = 0
    while doubly_exponential_exponent(d, k) * math.log(r) > math.log(tol) and k < 200:
        k += 1
    return max(16, 2 * k + 6)


def cavity_fixed_point(
    dist: Any,
    lam: Any,
    d: Any,
    *,
    K: int | None = None,
    tol: float = 1e-13,
    max_iter: int = 5000,
) -> MeanFieldPH:
    """Exact mean field for PH service via the cavity queue, iterated to its fixed point.

    u → (λ_n) → stationary law of the truncated (queue length, phase) CTMC → new u, started
    from the exponential fixed point at load ρ, with Anderson-type secant acceleration
    every few steps; stops when ‖u_new − u‖∞ ≤ tol. K defaults to a level at which the tail
    is far below 1e-14 and is checked: u_K > 1e-10 raises (increase K).
    """
    dist, lam, d = validated(dist, lam, d)
    alpha, S = _ph(dist)
    m = alpha.size
    rho = lam * dist.mean
    if K is None:
        K = _default_truncation(dist, lam, d, 1e-16)
    elif isinstance(K, bool) or not isinstance(K, (int, np.integer)) or K < 2:
        raise ConfigError("K", f"truncation level must be an integer >= 2, got {K!r}")
    K = int(K)
    start = time.perf_counter()
    # Start from the exponential-service fixed point ρ^((d^k−1)/(d−1)); for d ≥ 2 it is taken
    # in logs, clamped at e^−700, so the deepest levels stay positive instead of underflowing.
    if d == 1:
        u = rho ** np.arange(K + 1, dtype=float)
    else:
        e = np.array([doubly_exponential_exponent(d, k) for k in range(K + 1)], dtype=float)
        with np.errstate(under="ignore"):
            u = np.exp(np.maximum(e * math.log(rho), -700.0))

    def step(u_in: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """One cavity map u → (level rates → stationary law → its tails), and that law."""
        x = _stationary_levels(_level_rates(u_in, lam, d), alpha, S, K)
        return _tails(x, K, m), x

    # Plain iteration with Anderson mixing (depth 5) on the residual g(u) = step(u) − u.
    hist_u: list[np.ndarray] = []
    hist_g: list[np.ndarray] = []
    x = None
    residual = math.inf
    num_iter = 0
    for num_iter in range(1, max_iter + 1):  # noqa: B007 - reported after the loop
        u_new, x = step(u)
        g = u_new - u
        residual = float(np.max(np.abs(g)))
        if residual <= tol:
            u = u_new
            break
        hist_u.append(u.copy())
        hist_g.append(g)
        if len(hist_u) > 5:
            hist_u.pop(0)
            hist_g.pop(0)
        if len(hist_u) >= 2:
            dG = np.array([hist_g[i + 1] - hist_g[i] for i in range(len(hist_g) - 1)]).T
            dU = np.array([hist_u[i + 1] - hist_u[i] for i in range(len(hist_u) - 1)]).T
            gamma, *_ = np.linalg.lstsq(dG, g, rcond=None)
            cand = u + g - (dU + dG) @ gamma
            # Keep the candidate a valid tail vector; fall back to plain iteration if not.
            if np.all(np.isfinite(cand)) and np.all(np.diff(cand) <= 1e-15) and cand[-1] >= 0:
                cand[0] = 1.0
                u = np.clip(cand, 0.0, 1.0)
                continue
        u = u_new
    else:
        raise ConvergenceError(
            f"cavity fixed point: ‖Δu‖∞ = {residual:.2e} > tol {tol:.1e} after {max_iter} "
            "iterations"
        )
    if u[-1] > 1e-10:
        raise TruncationError(
            f"cavity fixed point: mass u_K = {u[-1]:.2e} at the truncation level K = {K}; "
            "increase K",
            float(u[-1]),
            K,
        )
    return MeanFieldPH(
        u=u,
        x=np.asarray(x),
        K=K,
        phases=m,
        residual=residual,
        num_iter=num_iter,
        method="cavity+anderson",
        elapsed=time.perf_counter() - start,
    )


def mean_field_drift(
    x: np.ndarray, lam: float, d: int, alpha: np.ndarray, S: np.ndarray, K: int
) -> np.ndarray:
    """Mean-field drift on the (queue length, phase) fractions, truncated at K jobs.

    x[0] = fraction of idle servers, x[1 + (n−1)m + j] = fraction with n jobs, phase j.
    A server with n < K jobs receives arrivals at λ_n (see :func:`cavity_fixed_point`); the
    job in service changes phase by S and completes at the exit rates −S·1; the next job
    starts in phase α. Written directly on arrays, independently of the cavity generator.
    """
    m = alpha.size
    X = x[1:].reshape(K, m)
    levels = np.concatenate([[x[0]], X.sum(axis=1)])
    u = np.cumsum(levels[::-1])[::-1]
    lam_n = _level_rates(u, lam, d)  # n = 0..K−1
    exit_rates = -S.sum(axis=1)
    completions = X @ exit_rates  # per level n = 1..K
    dX = X @ S
    dX[0] += lam_n[0] * x[0] * alpha
    dX[1:] += lam_n[1:K, None] * X[:-1]
    dX[:-1] -= lam_n[1:K, None] * X[:-1]
    dX[:-1] += completions[1:, None] * alpha[None, :]
    dx0 = -lam_n[0] * x[0] + completions[0]
    return np.concatenate([[dx0], dX.ravel()])


def ode_fixed_point(
    dist: Any, lam: Any, d: Any, *, K: int | None = None, tol: float = 1e-13
) -> MeanFieldPH:
    """Exact mean field for PH service: integrate the (n, phase) ODE from empty to rest.

    Stops when ‖drift‖∞ ≤ tol (core.equilibrium). Same truncation rule as the cavity solver.
    """
    dist, lam, d = validated(dist, lam, d)
    alpha, S = _ph(dist)
    m = alpha.size
    if K is None:
        K = _default_truncation(dist, lam, d, 1e-16)
    K = int(K)
    start = time.perf_counter()
    x0 = np.zeros(1 + K * m)
    x0[0] = 1.0
    res = integrate_to_equilibrium(
        lambda y: mean_field_drift(y, lam, d, alpha, S, K),
        x0,
        tol=tol,
        t_window=10.0,
        method="LSODA",
        rtol=1e-12,
        atol=1e-16,
    )
    x = res.x
    return MeanFieldPH(
        u=_tails(x, K, m),
        x=x,
        K=K,
        phases=m,
        residual=res.residual,
        num_iter=res.num_iter,
        method="ode+" + res.method,
        elapsed=time.perf_counter() - start,
    )
