"""Supermarket model with general service times (models.md §C, seed 002, Li & Lui).

FCFS servers, Poisson arrivals at rate λ per server, JSQ(d) (d servers sampled with
replacement), service time X ~ :class:`~lbrepro.models.service.ServiceDist` with survival Ḡ,
mean 1/μ, load ρ = λ/μ. ``u_k`` = fraction of servers with at least k jobs (u_0 = 1).

Two things live here, side by side:

* **The paper's closed form, as published.** θ = ∫_0^∞ [μḠ(x)]^d dx (adaptive quadrature,
  :func:`theta`; closed forms in :func:`theta_closed_form`), the fixed point
  Π_k = ρ^{(d^k−1)/(d−1)} θ^{(d^{k−1}−1)/(d−1)} (:func:`published_tail`) and the sojourn time
  T_d (:func:`published_sojourn`, reconstruction of models.md §C).
* **The truth for phase-type service.** Each server's state (queue length n, phase j of the
  job in service) is Markov, so the mean field is exact as N → ∞. Its fixed point is found two
  independent ways that must agree: the *cavity queue* (:func:`cavity_fixed_point`: one PH
  FCFS server whose Poisson arrival rate depends on its queue length,
  λ_n = λ(u_n^d − u_{n+1}^d)/(u_n − u_{n+1}), solved as a truncated CTMC and iterated until
  its own tail fractions reproduce the u it was built from) and the *mean-field ODE* on the
  (n, j) fractions integrated to equilibrium (:func:`ode_fixed_point`). For exponential
  service both reduce to ρ^{(d^k−1)/(d−1)}.
"""

from __future__ import annotations

import math
import numbers
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import integrate, linalg

from lbrepro.core.equilibrium import integrate_to_equilibrium
from lbrepro.core.errors import ConfigError, ConvergenceError, UnstableError
from lbrepro.meanfield.closed_forms import doubly_exponential_exponent
from lbrepro.models import service
from lbrepro.models.service import ServiceDist
from lbrepro.models.spec import RUN_PARAMS, Model, Param
from lbrepro.sim.general_service import GeneralSimResult, simulate_general

__all__ = [
    "MeanFieldPH",
    "cavity_fixed_point",
    "mean_field_drift",
    "mg1_mean_sojourn",
    "ode_fixed_point",
    "published_sojourn",
    "published_tail",
    "simulate",
    "simulate_json",
    "solve",
    "theta",
    "theta_closed_form",
]


# ------------------------------------------------------------------------------ validation
def _dist(dist: Any) -> ServiceDist:
    if isinstance(dist, str):
        return service.parse(dist)
    if not isinstance(dist, ServiceDist):
        raise ConfigError("dist", f"must be a ServiceDist or a spec like 'erlang:2', got {dist!r}")
    if not math.isfinite(dist.mean):
        raise ConfigError("dist", "the service time has an infinite mean")
    return dist


def _d(d: Any) -> int:
    if (
        isinstance(d, bool)
        or not isinstance(d, numbers.Real)
        or not math.isfinite(d)
        or d != int(d)
        or d < 1
    ):
        raise ConfigError("d", f"number of sampled servers must be an integer >= 1, got {d!r}")
    return int(d)


def _validate(dist: Any, lam: Any, d: Any) -> tuple[ServiceDist, float, int]:
    """Check (dist, λ, d); unstable loads ρ = λE[X] ≥ 1 are refused."""
    dist = _dist(dist)
    if isinstance(lam, bool) or not isinstance(lam, numbers.Real) or not lam > 0:
        raise ConfigError("lam", f"arrival rate per server must be a number > 0, got {lam!r}")
    if not math.isfinite(lam):
        raise ConfigError("lam", f"must be finite, got {lam!r}")
    d = _d(d)
    rho = float(lam) * dist.mean
    if rho >= 1:
        raise UnstableError(f"load rho = lam * E[X] = {rho:g} >= 1: the model is unstable")
    return dist, float(lam), d


# ---------------------------------------------------------------------- the published θ
def theta(dist: Any, d: Any) -> float:
    """θ = ∫_0^∞ [μ Ḡ(x)]^d dx by adaptive quadrature (any Ḡ, heavy tails included).

    The range is split at a few multiples of the mean so QUADPACK sees the bulk of the mass on
    a finite interval; the remaining tail goes to the infinite-range rule (a substitution that
    handles power-law integrands). Deterministic service integrates its support [0, value].
    """
    dist = _dist(dist)
    d = _d(d)
    mu = dist.mu

    def f(x: float) -> float:
        return float((mu * dist.survival(x)) ** d)

    end = dist.support_end
    if math.isfinite(end):
        val, _ = integrate.quad(f, 0.0, end, limit=200, epsabs=0, epsrel=1e-12)
        return val
    cut = 20.0 * dist.mean
    a, _ = integrate.quad(f, 0.0, cut, limit=400, epsabs=0, epsrel=1e-12)
    b, _ = integrate.quad(f, cut, math.inf, limit=400, epsabs=0, epsrel=1e-11)
    return a + b


def theta_closed_form(dist: Any, d: Any) -> float | None:
    """θ in closed form (models.md §C) where one is known, else None.

    Exponential μ^{d−1}/d; Weibull μ^{d−1} d^{−1/k}; Lomax μ^{d−1}(α−1)/(dα−1);
    deterministic μ^{d−1}; Erlang-m of rate r (exact, by expanding (Σ_{j<m}(rx)^j/j!)^d as a
    polynomial and integrating term by term against e^{−drx}).
    """
    dist = _dist(dist)
    d = _d(d)
    mu = dist.mu
    p = dist.params
    f = dist.family
    if f == "exponential":
        return mu ** (d - 1) / d
    if f == "weibull":
        return mu ** (d - 1) * d ** (-1.0 / p["shape"])
    if f == "lomax":
        a = p["alpha"]
        return mu ** (d - 1) * (a - 1) / (d * a - 1)
    if f == "deterministic":
        return mu ** (d - 1)
    if f == "erlang":
        m, r = p["m"], p["rate"]
        poly = np.array([1.0 / math.factorial(j) for j in range(m)])  # in powers of y = rx
        power = np.array([1.0])
        for _ in range(d):
            power = np.convolve(power, poly)
        # ∫_0^∞ e^{−d y} y^n dy / r = n! / (r d^{n+1})
        total = math.fsum(
            c * math.factorial(n) / d ** (n + 1) for n, c in enumerate(power.tolist())
        )
        return mu**d * total / r
    return None


def published_tail(
    dist: Any, lam: Any, d: Any, *, kmax: int = 1_000_000, tol: float = 1e-16
) -> np.ndarray:
    """The published fixed point Π_k = ρ^{(d^k−1)/(d−1)} θ^{(d^{k−1}−1)/(d−1)}, k = 0..K.

    (Π_0 = 1, Π_1 = ρ, Π_2 = θρ^{d+1}; d = 1 gives ρ^k θ^{k−1} with θ = 1.) Not the
    doubly exponential tail of :mod:`lbrepro.meanfield.closed_forms`: the paper's extra factor
    θ^{…} makes it differ beyond exponential service (and even there, by θ = 1/d at d ≥ 2). The
    exponents are the exact integers of :func:`doubly_exponential_exponent` at k and k − 1; the
    vector stops at kmax or at the first value below tol.
    """
    dist, lam, d = _validate(dist, lam, d)
    rho = lam * dist.mean
    th = theta(dist, d)
    out = [1.0]
    for k in range(1, kmax + 1):
        e_rho = doubly_exponential_exponent(d, k)  # (d^k − 1)/(d − 1)
        e_th = doubly_exponential_exponent(d, k - 1)  # (d^{k−1} − 1)/(d − 1)
        log_v = e_rho * math.log(rho) + e_th * math.log(th)
        v = math.exp(log_v) if log_v > -745 else 0.0
        out.append(v)
        if v < tol:
            break
    return np.array(out)


def published_sojourn(dist: Any, lam: Any, d: Any) -> float:
    """T_d as the paper builds it [reconstruction, models.md §C].

    T_d = Σ_{k≥1} (Π_{k−1}^d − Π_k^d)·[1/μ + 1{k≥2}(E[X_R] + (k−2)/μ)], E[X_R] = μE[X²]/2:
    an arrival that joins a queue of k − 1 jobs waits for the residual service of the job in
    progress and k − 2 full services. Infinite when E[X²] is (e.g. Lomax α ≤ 2).
    """
    dist, lam, d = _validate(dist, lam, d)
    pi = np.append(published_tail(dist, lam, d, tol=1e-22), 0.0)
    mean = dist.mean
    xr = dist.residual_mean
    total = 0.0
    for k in range(1, pi.size):
        w = pi[k - 1] ** d - pi[k] ** d
        if w <= 0:
            continue
        extra = 0.0 if k == 1 else xr + (k - 2) * mean
        total += w * (mean + extra)
    return float(total)


def mg1_mean_sojourn(dist: Any, lam: Any) -> float:
    """Pollaczek–Khinchine: E[T] = E[X] + λE[X²]/(2(1 − ρ)) for the M/G/1 queue (d = 1)."""
    dist, lam, _ = _validate(dist, lam, 1)
    rho = lam * dist.mean
    return dist.mean + lam * dist.second_moment / (2 * (1 - rho))


# ------------------------------------------------------------- exact PH mean field
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
        return float(np.sum(self.u[1:]))

    def mean_sojourn(self, lam: float) -> float:
        """Little's law, Σ_{k≥1} u_k / λ."""
        return self.mean_jobs / lam


def _ph(dist: ServiceDist) -> tuple[np.ndarray, np.ndarray]:
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
    dist, lam, d = _validate(dist, lam, d)
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
        raise ConvergenceError(
            f"cavity fixed point: mass u_K = {u[-1]:.2e} at the truncation level K = {K}; "
            "increase K"
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


def mean_field_drift(x: np.ndarray, lam: float, d: int, alpha: np.ndarray, S: np.ndarray, K: int):
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
    dist, lam, d = _validate(dist, lam, d)
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


# ------------------------------------------------------------------------ simulation
def simulate(
    dist: Any,
    lam: float,
    d: int,
    *,
    N: int,
    horizon: float,
    warmup: float,
    seed: np.random.SeedSequence | int,
    batches: int = 20,
) -> GeneralSimResult:
    """Simulate N FCFS servers with general service under JSQ(d) (thin call into the kernel)."""
    dist, lam, d = _validate(dist, lam, d)
    return simulate_general(
        dist=dist, lam=lam, d=d, N=N, horizon=horizon, warmup=warmup, seed=seed, batches=batches
    )


def solve(dist: Any = "exp", *, lam: Any, d: Any) -> dict[str, Any]:
    """JSON-ready summary for ``lbrepro solve general``: the truth first.

    The top level holds the exact mean field (the cavity queue, for phase-type service; the
    M/G/1 mean sojourn at d = 1 for any service), so a script reading ``.mean_sojourn`` gets
    the right number; where no exact value exists it is ``null``. The paper's closed form,
    known to be wrong beyond exponential service, sits under ``published``.
    """
    dist, lam, d = _validate(dist, lam, d)
    pi = published_tail(dist, lam, d, tol=1e-16)
    out: dict[str, Any] = {
        "model": "general",
        "params": {"dist": dist.as_dict(), "lam": lam, "d": d, "rho": lam * dist.mean},
        "method": "none",
        "u": None,
        "mean_jobs": None,
        "mean_sojourn": None,
    }
    if dist.is_phase_type:
        mf = cavity_fixed_point(dist, lam, d)
        out |= {
            "method": "exact mean field (cavity queue)",
            "u": [float(v) for v in mf.u if v > 1e-16] or [1.0],
            "mean_jobs": mf.mean_jobs,
            "mean_sojourn": mf.mean_sojourn(lam),
            "K": mf.K,
            "residual": mf.residual,
        }
    elif d == 1:
        out |= {
            "method": "M/G/1 (Pollaczek–Khinchine)",
            "mean_sojourn": mg1_mean_sojourn(dist, lam),
        }
    if d == 1:
        out["mg1_mean_sojourn"] = mg1_mean_sojourn(dist, lam)
    out["published"] = {
        "method": "published closed form (Li & Lui); exact for exponential service only",
        "theta": theta(dist, d),
        "theta_closed_form": theta_closed_form(dist, d),
        "u": [float(v) for v in pi],
        "mean_jobs": float(np.sum(pi[1:])),
        "mean_sojourn": published_sojourn(dist, lam, d),
    }
    return out


def simulate_json(
    dist: str = "exp",
    *,
    lam: float,
    d: int,
    N: int,
    horizon: float,
    warmup: float | None = None,
    seed: int = 1,
    batches: int = 20,
    replace: bool = True,
    start: str = "empty",
) -> dict[str, Any]:
    """JSON-ready result for ``lbrepro simulate general`` (warm-up default: 10% of horizon).

    The kernel samples the d servers with replacement and starts empty, so ``replace=False``
    and any other start are refused by name rather than ignored.
    """
    if not replace:
        raise ConfigError("replace", "the general-service kernel samples with replacement only")
    if start != "empty":
        raise ConfigError("start", "the general-service simulation starts empty")
    w = 0.1 * horizon if warmup is None else warmup
    r = simulate(dist, lam, d, N=N, horizon=horizon, warmup=w, seed=seed, batches=batches)
    return {
        "model": "general",
        "params": {"dist": dist, "lam": lam, "d": d},
        "u": r.u.tolist(),
        "mean_jobs": r.mean_jobs,
        "mean_sojourn": r.mean_sojourn,
        "ci": {
            "u": [[float(a), float(b)] for a, b in zip(r.u_ci_low, r.u_ci_high, strict=True)],
            "mean_jobs": list(r.mean_jobs_ci),
            "mean_sojourn": list(r.mean_sojourn_ci),
        },
        "N": r.N,
        "seed": seed,
        "events": r.events_total,
        "events_per_second": r.events_per_second,
    }


def simulate_cli(
    dist: str,
    lam: float,
    d: int,
    N: int,
    horizon: float,
    warmup: float | None,
    seed: int,
    batches: int,
) -> dict[str, Any]:
    """:func:`simulate_json` with positional arguments, the form tests/test_general_sim.py calls."""
    return simulate_json(
        dist, lam=lam, d=d, N=N, horizon=horizon, warmup=warmup, seed=seed, batches=batches
    )


MODEL = Model(
    name="general",
    help="JSQ(d) with FCFS servers and a general service-time law (Li & Lui)",
    params=(
        Param(
            "dist",
            "text",
            "service distribution, scaled to mean 1: exp, erlang:m, hyperexp:scv, "
            "coxian:r1,..,c1,.., det, weibull:k, lomax:alpha, lognormal:sigma",
        ),
        Param("lam", "real", "arrival rate per server (= ρ)"),
        Param("d", "integer", "servers sampled per job", minimum=1, maximum="servers"),
        *RUN_PARAMS,
        Param(
            "start",
            "choice",
            "initial state: empty (the only start of the general-service kernel)",
            choices=("empty",),
            commands=("simulate",),
        ),
    ),
    solve=solve,
    simulate=simulate_json,
)
