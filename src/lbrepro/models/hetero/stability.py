"""Stability of each policy: the closed-form bounds and the numerical mean-field criterion.

Schemes 1/2 are stable up to the full capacity μΣγC (the paper's theorem); whole-system SQ(d)
only up to λ* of :func:`sqd_stability_closed_form` [reconstruction]; a static split up to the
first type it overloads. :func:`classify_stability` decides stability of the mean field at one
load from a trajectory, and :func:`stability_boundary` bisects it on λ.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.integrate

from lbrepro.core.errors import ConfigError, ConvergenceError, UnstableError
from lbrepro.models.hetero.equations import build_model, u_of_x
from lbrepro.models.hetero.system import (
    System,
    check_d_pool,
    check_lam,
    check_policy,
    check_system,
    resolve_policy,
)


def sqd_stability_closed_form(system: System, d: int) -> float:
    """Stability boundary of whole-system SQ(d) **[reconstruction, docs/models.md §A]**.

    ``λ* = μ min_k [Σ_{i≤k} γ_i C_i] / [Σ_{i≤k} γ_i]^d`` over types sorted by increasing
    capacity. Why: if the slowest k types (a fraction g = Σ_{i≤k}γ_i of the servers) all hold
    long queues, a job joins them only when all d samples fall among them, at rate λg^d,
    while they serve μΣ_{i≤k}γ_iC_i; the cheapest set of a given size is the slowest one, and
    μF(g)/g^d with F convex piecewise linear is minimised at a breakpoint. k = M gives the
    full capacity. :func:`stability_boundary` checks it against mean-field trajectories.
    """
    system = check_system(system)
    try:
        d = check_d_pool(system, d)
    except ConfigError as exc:
        raise ConfigError("d", exc.message) from None
    o = system.order
    g = np.cumsum(np.array(system.gamma)[o])
    c = np.cumsum(np.array(system.gamma)[o] * np.array(system.capacity)[o])
    return float(system.mu * np.min(c / g**d))


def stability_limit(
    system: System, policy: str, *, split: Any = None, d_pool: int | None = None
) -> float:
    """The largest stable arrival rate per server of a policy (the supremum, not attained).

    Schemes 1/2: the full capacity μΣγC (the paper's theorem); whole-system SQ(d): λ* of
    :func:`sqd_stability_closed_form` [reconstruction]; static splits: the first type to
    saturate, min_j μγ_jC_j/p_j.
    """
    system = check_system(system)
    policy = check_policy(policy)
    p, dp = resolve_policy(system, policy, split, d_pool)
    limit = system.total_capacity
    if policy == "sqd":
        limit = min(limit, sqd_stability_closed_form(system, dp))
    if p is not None:
        cap = system.mu * np.array(system.gamma) * np.array(system.capacity)
        with np.errstate(divide="ignore"):
            limit = min(limit, float(np.min(np.where(p > 0, cap / p, np.inf))))
    return float(limit)


def check_stable(system: System, lam: float, policy: str, p: Any, dp: Any) -> None:
    """Refuse loads outside the policy's stability region (UnstableError naming the bound)."""
    cap = system.total_capacity
    if lam >= cap:
        raise UnstableError(
            f"lam={lam:g} >= total capacity mu*sum(gamma*C)={cap:g}: no policy is stable"
        )
    if policy == "sqd":
        star = sqd_stability_closed_form(system, dp)
        if lam >= star:
            raise UnstableError(
                f"lam={lam:g} >= lambda*={star:.10g}: whole-system SQ(d={dp}) is unstable "
                f"there (capacity {cap:g}; lambda* is the reconstructed bound of docs/models.md §A)"
            )
    if p is not None:
        rho = lam * p / (system.mu * np.array(system.gamma) * np.array(system.capacity))
        for j in np.flatnonzero(rho >= 1.0):
            raise UnstableError(
                f"type {j} (capacity {system.capacity[j]:g}) is overloaded: "
                f"lam*p_j/(mu*gamma_j*C_j) = {rho[j]:g} >= 1 with split p = "
                f"{[round(float(v), 6) for v in p]}"
            )


@dataclass(frozen=True)
class StabilityVerdict:
    """Outcome of :func:`classify_stability` at one load.

    Attributes
    ----------
    lam : float
    stable : bool
    reason : str
        ``"converged"`` (‖drift‖∞ reached ``res_tol`` with every tail ≤ ``eps``),
        ``"truncation"`` (some type's tail u^{(j)}_{K_big} exceeded ``eps`` first) or
        ``"undecided"`` (neither by ``t_max``: counted as unstable).
    t : float
        Integration time at the decision.
    mean_jobs_per_type : tuple of float
        ``Σ_n u^{(j)}_n`` at the decision.
    """

    lam: float
    stable: bool
    reason: str
    t: float
    mean_jobs_per_type: tuple[float, ...]


#: Truncation used by the numerical stability criterion.
K_BIG = 64
#: Tail mass at the truncation that counts as "the trajectory reached the truncation".
STABILITY_EPS = 1e-6


def classify_stability(
    system: System,
    lam: float,
    policy: str,
    *,
    split: Any = None,
    d_pool: int | None = None,
    K_big: int = K_BIG,
    eps: float = STABILITY_EPS,
    res_tol: float = 1e-9,
    t_max: float = 1e9,
    rtol: float = 1e-6,
    atol: float = 1e-10,
) -> StabilityVerdict:
    """Numerical stability of the mean field at one load (the definition used throughout).

    The mean-field ODE truncated at ``K_big`` levels per type is integrated from the empty
    state (LSODA, exact Jacobian) until one of two events:

    - ``‖drift‖∞ ≤ res_tol`` while ``max_j u^{(j)}_{K_big} ≤ eps``: the trajectory settled
      strictly inside the truncation → **stable**;
    - ``max_j u^{(j)}_{K_big} > eps``: the occupancy reached the truncation → **unstable**
      (in an unstable system some type's queues grow without bound, so the front hits any
      finite K_big; the truncated system can only settle with mass piled at K_big).

    Neither by ``t_max`` → unstable ("undecided"). Near a boundary both events take a time of
    order 1/|λ − λ_b|, so the decision is sharp as long as the stable equilibrium fits in
    K_big levels; with d ≥ 2 its occupied levels grow only like log(1/|λ − λ_b|) (measured:
    H2x SQ(2) is classified correctly at λ*(1 ± 1e-5) already with K_big = 40, and every
    system of the tests is stable at 6e-5 below its boundary with K_big = 64). With d = 1
    inside types (``"random"``) tails are geometric and the resolution is only about
    log(1/eps)/K_big: do not use the criterion there.
    """
    system = check_system(system)
    lam = check_lam(lam)
    policy = check_policy(policy)
    p, dp = resolve_policy(system, policy, split, d_pool)
    model = build_model(system, lam, policy, int(K_big), p, dp)
    gamma = np.array(system.gamma)
    last = np.arange(1, system.num_types + 1) * int(K_big) - 1

    def tail(_t: float, y: np.ndarray) -> float:
        """Event: the largest per-type tail at the truncation crosses eps (unstable)."""
        return float(np.max(y[last] / gamma)) - eps

    def settled(_t: float, y: np.ndarray) -> float:
        """Event: the drift falls below res_tol (settled inside the truncation: stable)."""
        return float(np.max(np.abs(model.drift(y)))) - res_tol

    tail.terminal = True  # type: ignore[attr-defined]
    tail.direction = 1  # type: ignore[attr-defined]
    settled.terminal = True  # type: ignore[attr-defined]
    settled.direction = -1  # type: ignore[attr-defined]
    sol = scipy.integrate.solve_ivp(
        lambda _t, y: model.drift(y),
        (0.0, float(t_max)),
        np.zeros(model.dim),
        method="LSODA",
        jac=lambda _t, y: model.jacobian(y),
        events=(tail, settled),
        rtol=rtol,
        atol=atol,
    )
    if sol.status == -1:
        raise ConvergenceError(f"classify_stability: LSODA failed at lam={lam:g} ({sol.message})")
    if sol.t_events[0].size:
        stable, reason = False, "truncation"
    elif sol.t_events[1].size:
        stable, reason = True, "converged"
    else:
        stable, reason = False, "undecided"
    jobs = u_of_x(system, sol.y[:, -1]).sum(axis=1)
    return StabilityVerdict(
        lam=lam,
        stable=stable,
        reason=reason,
        t=float(sol.t[-1]),
        mean_jobs_per_type=tuple(float(v) for v in jobs),
    )


def _final_interval(guess: float, cap: float, tol: float) -> tuple[float, float]:
    """The interval of the bisection's dyadic grid on (0, cap) where it would stop at ``guess``.

    The same midpoints as :func:`stability_boundary`'s loop, taken towards ``guess`` without
    evaluating anything: if the boundary lies in the same final interval as the guess, the
    bisection from (0, cap) ends exactly there (dyadic intervals are nested).
    """
    lo, hi = 0.0, cap
    while hi - lo > tol * hi:
        mid = 0.5 * (lo + hi)
        if mid < guess:
            lo = mid
        else:
            hi = mid
    return lo, hi


def stability_boundary(
    system: System,
    policy: str,
    *,
    d_pool: int | None = None,
    split: Any = None,
    tol: float = 1e-4,
    bracket: tuple[float, float] | None = None,
    K_big: int = K_BIG,
    eps: float = STABILITY_EPS,
) -> float:
    """Largest stable load, by bisection of :func:`classify_stability` on λ.

    Bisection on ``bracket`` (default ``(0, μΣγC)``; the ends are not evaluated: they are
    assumed stable/unstable) until ``hi − lo ≤ tol·hi``; returns the midpoint. A narrower
    bracket is checked first (its low end must be stable and its high end unstable) and
    saves the cheap but numerous far-from-boundary evaluations.

    Without a bracket the closed-form limit (:func:`stability_limit`: the full capacity for
    Schemes 1/2, λ* for whole-system SQ(d)) says where the bisection from (0, μΣγC) will end:
    that final interval is checked first (low end stable, high end unstable: one or two
    integrations instead of about fourteen), and the result is the bisection's own. Only if
    the check fails does the full bisection run (reusing the evaluations made).
    """
    system = check_system(system)
    policy = check_policy(policy)
    if not 0 < tol < 1:
        raise ConfigError("tol", f"must be in (0, 1), got {tol!r}")
    cap = system.total_capacity
    known: dict[float, bool] = {}

    def stable(lam: float) -> bool:
        """Whether the mean field is stable at load lam (one trajectory, each load once)."""
        if lam not in known:
            known[lam] = classify_stability(
                system, lam, policy, split=split, d_pool=d_pool, K_big=K_big, eps=eps
            ).stable
        return known[lam]

    def bisect(lo: float, hi: float) -> float:
        """Bisection of (lo, hi), lo stable and hi unstable, down to the tolerance."""
        while hi - lo > tol * hi:
            mid = 0.5 * (lo + hi)
            if stable(mid):
                lo = mid
            else:
                hi = mid
        return 0.5 * (lo + hi)

    if bracket is not None:
        lo, hi = (float(v) for v in bracket)
        if not 0 < lo < hi <= cap:
            raise ConfigError("bracket", f"must satisfy 0 < lo < hi <= {cap:g}, got {bracket}")
        if not stable(lo):
            raise ConfigError("bracket", f"the low end lam={lo:g} is not stable")
        if hi < cap and stable(hi):
            raise ConfigError("bracket", f"the high end lam={hi:g} is stable")
        return bisect(lo, hi)
    guess = stability_limit(system, policy, split=split, d_pool=d_pool)
    lo, hi = _final_interval(guess, cap, tol)
    if (lo == 0.0 or stable(lo)) and (hi == cap or not stable(hi)):
        return 0.5 * (lo + hi)
    return bisect(0.0, cap)
