"""Mean-field equilibria of every policy: fixed point, refined 1/N term, uniqueness probe.

Every solver works on the truncated population model of :mod:`.equations` and enlarges the
truncation until the tail mass at the last level is negligible.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lbrepro.core.equilibrium import (
    IntegrationTimeoutError,
    integrate_to_equilibrium,
    solve_truncated,
    time_budget,
)
from lbrepro.core.errors import ConfigError
from lbrepro.models.hetero.equations import build_model, u_of_x
from lbrepro.models.hetero.stability import check_stable
from lbrepro.models.hetero.system import (
    System,
    check_lam,
    check_policy,
    check_system,
    resolve_policy,
)

#: First truncation level tried by :func:`fixed_point` (doubled until the tail passes).
K0 = 16
#: Largest truncation level tried.
K_MAX = 4096


@dataclass(frozen=True, eq=False)
class HeteroMeanField:
    """Mean-field equilibrium of one policy (types in the caller's order).

    Attributes
    ----------
    system : System
    lam : float
    policy : str
    split : ndarray or None
        Routing probabilities (``"typed"``, ``"random"``).
    d_pool : int or None
        Pool sample size (``"sqd"``).
    u : tuple of ndarray
        Per type, ``(u^{(j)}_0 = 1, u^{(j)}_1, …, u^{(j)}_K)``.
    x : ndarray, shape (M·K,)
        The population-model state ``x_{j,n} = γ_j u^{(j)}_n`` (type-major).
    mean_jobs_per_type : ndarray, shape (M,)
        ``Σ_n u^{(j)}_n``: mean jobs at a type-j server.
    mean_jobs : float
        ``Σ_j γ_j Σ_n u^{(j)}_n``: mean jobs per server.
    mean_sojourn : float
        ``mean_jobs / λ`` (Little).
    residual : float
        ``‖drift‖∞`` at ``x``.
    K : int
        Truncation level that passed the tail check.
    tail : float
        ``max_j u^{(j)}_K``.
    truncations : tuple of int
        Every truncation level solved.
    success, num_iter, method, message
        As in the core result objects.
    stable : bool or None
        Hurwitz check of :meth:`PopulationModel.fixed_point` (None: not checked, n ≥ 200).
    """

    system: System
    lam: float
    policy: str
    split: np.ndarray | None
    d_pool: int | None
    u: tuple[np.ndarray, ...]
    x: np.ndarray
    mean_jobs_per_type: np.ndarray
    mean_jobs: float
    mean_sojourn: float
    residual: float
    K: int
    tail: float
    truncations: tuple[int, ...]
    success: bool
    num_iter: int
    method: str
    message: str
    stable: bool | None = field(default=None)


#: Newton residual required of every equilibrium (‖drift‖∞).
RESIDUAL_TOL = 1e-13


def _regrid(system: System, x: np.ndarray, K: int) -> np.ndarray:
    """A state truncated at another level per type (zeros appended / levels dropped)."""
    X = np.asarray(x).reshape(system.num_types, -1)
    out = np.zeros((system.num_types, K))
    m = min(K, X.shape[1])
    out[:, :m] = X[:, :m]
    return out.reshape(-1)


def _extrapolate_levels(system: System, x: np.ndarray, tol: float, K: int) -> int:
    """Truncation at which a geometric continuation of each type's tail falls below ``tol``.

    Uses the last decay ratio ``u_K/u_{K−1}`` (exact for geometric tails, more levels than
    needed for doubly exponential ones); K itself when the tail already passes; at most 64·K
    (the doubling of :func:`solve_truncated` takes over if the guess falls short).
    """
    U = u_of_x(system, x)
    need = K
    for row in U:
        last = float(row[-1])
        before = float(row[-2]) if K > 1 else 1.0
        if last <= tol:
            continue
        r = last / before if before > 0 else 1.0
        if not 0 < r < 1:
            return min(64 * K, K_MAX)
        need = max(need, K + math.ceil(math.log(tol / last) / math.log(r)))
    return int(min(need, 64 * K, K_MAX))


def fixed_point(
    system: System,
    lam: float,
    policy: str,
    *,
    split: Any = None,
    d_pool: int | None = None,
    tol: float = 1e-12,
    x0: Any = None,
) -> HeteroMeanField:
    """Mean-field equilibrium by Newton on the truncated model, K doubled until the tail passes.

    Newton (with the ODE fallback of :meth:`PopulationModel.fixed_point`, and its residual
    and Hurwitz checks) runs first at K = :data:`K0` (or at the truncation of ``x0``), then
    at the level a geometric extrapolation of that pilot's tail asks for, doubled by
    :func:`solve_truncated` until ``max_j u^{(j)}_K ≤ tol``. Each level starts from the
    previous solution padded with zeros; the pilot from empty, or from ``x0`` (a state of any
    truncation, e.g. a neighbouring load's equilibrium in a sweep).

    Raises
    ------
    UnstableError
        ``lam`` is outside the policy's stability region (total capacity; λ* for ``"sqd"``;
        an overloaded type for a static split).
    ConvergenceError
        No truncation up to :data:`K_MAX` passed, or Newton and the ODE both failed.
    """
    system = check_system(system)
    lam = check_lam(lam)
    policy = check_policy(policy)
    p, dp = resolve_policy(system, policy, split, d_pool)
    check_stable(system, lam, policy, p, dp)
    if not 0 < tol < 1:
        raise ConfigError("tol", f"must be in (0, 1), got {tol!r}")
    previous: list[np.ndarray] = []
    if x0 is not None:
        x0 = np.asarray(x0, dtype=float)
        if x0.ndim != 1 or x0.size % system.num_types or not np.all(np.isfinite(x0)):
            raise ConfigError(
                "x0", f"must be a finite state of length M·K (M = {system.num_types})"
            )
        previous.append(x0)
    gamma = np.array(system.gamma)
    solved: dict[int, tuple[np.ndarray, Any]] = {}

    def solve_at(K: int) -> tuple[np.ndarray, Any]:
        """Newton at truncation K from the last solution (memoised: the doubling revisits K)."""
        if K not in solved:
            start = _regrid(system, previous[-1], K) if previous else np.zeros(system.num_types * K)
            model = build_model(system, lam, policy, K, p, dp)
            res = model.fixed_point(start, tol=RESIDUAL_TOL)
            previous.append(np.asarray(res.x))
            solved[K] = (res.x, res)
        return solved[K]

    def tail_mass(x: np.ndarray) -> float:
        """Largest per-type u at the last level: the mass the truncation cuts off."""
        return float(np.max(x.reshape(system.num_types, -1)[:, -1] / gamma))

    # Pilot solve, then jump to the level a geometric extrapolation of the tail asks for:
    # slowly decaying (d = 1) tails would otherwise be solved at every doubling on the way.
    K_pilot = K0 if x0 is None else max(K0, x0.size // system.num_types)
    pilot = solve_at(K_pilot)[0]
    K_start = _extrapolate_levels(system, pilot, tol, K_pilot)
    tr = solve_truncated(solve_at, tail_mass, K_start, tol=tol, K_max=max(K_MAX, K_start))
    if K_start != K_pilot:
        tr = dataclasses.replace(tr, history=((K_pilot, tail_mass(pilot)), *tr.history))
    x, fp = tr.solution
    return _mean_field_result(system, lam, policy, p, dp, x, fp, tr)


def _mean_field_result(
    system: System, lam: float, policy: str, p: Any, dp: Any, x: np.ndarray, fp: Any, tr: Any
) -> HeteroMeanField:
    """The result object of :func:`fixed_point` from its solution, Newton and truncation records."""
    U = u_of_x(system, x)
    per_type = U.sum(axis=1)
    jobs = float(np.dot(system.gamma, per_type))
    return HeteroMeanField(
        system=system,
        lam=lam,
        policy=policy,
        split=None if p is None else np.array(p),
        d_pool=dp,
        u=tuple(np.concatenate([[1.0], row]) for row in U),
        x=np.asarray(x),
        mean_jobs_per_type=per_type,
        mean_jobs=jobs,
        mean_sojourn=jobs / lam,
        residual=float(fp.residual),
        K=int(tr.K),
        tail=float(tr.tail),
        truncations=tuple(k for k, _ in tr.history),
        success=True,
        num_iter=int(fp.num_iter),
        method=f"{fp.method}+truncation-doubling",
        message=f"{fp.message}; {tr.message}",
        stable=fp.stable,
    )


# ---------------------------------------------------------------------------- refined term
@dataclass(frozen=True, eq=False)
class RefinedHetero:
    """Refined mean field ``E[u^{(j)}_n]_N ≈ u^{(j)}_n + V^{(j)}_n/N`` (N = total servers).

    Attributes
    ----------
    mean_field : HeteroMeanField
        The fixed point the expansion is taken at.
    V : tuple of ndarray
        Per type, ``(V^{(j)}_0 = 0, V^{(j)}_1, …, V^{(j)}_K)`` in u-units (the population
        model's x-coefficients divided by γ_j).
    mean_jobs_coefficient : float
        ``Σ_j γ_j Σ_n V^{(j)}_n``: ``E[jobs per server]_N ≈ mean_jobs + coefficient/N``.
    mean_sojourn_coefficient : float
        ``mean_jobs_coefficient / λ``: ``E[T]_N ≈ mean_sojourn + coefficient/N``.
    residual : float
        Lyapunov residual of :meth:`PopulationModel.refined`.
    success, method, message
        As in the core result objects.
    """

    mean_field: HeteroMeanField
    V: tuple[np.ndarray, ...]
    mean_jobs_coefficient: float
    mean_sojourn_coefficient: float
    residual: float
    success: bool
    method: str
    message: str

    def mean_sojourn_at(self, N: float) -> float:
        """Refined mean sojourn time with N servers in total."""
        if not N > 0:
            raise ConfigError("N", f"must be > 0, got {N!r}")
        return self.mean_field.mean_sojourn + self.mean_sojourn_coefficient / N


def _linear_rates(system: System, policy: str) -> bool:
    """Whether every transition rate is linear in the state (static routing with d = 1)."""
    return policy == "random" or (policy == "typed" and all(v == 1 for v in system.d))


def refined(
    system: System,
    lam: float,
    policy: str,
    *,
    split: Any = None,
    d_pool: int | None = None,
    tol: float = 1e-12,
) -> RefinedHetero:
    """Refined mean field (Gast & Van Houdt 2017) of one policy at its equilibrium.

    The 1/N expansion is for N servers in total with γ_jN of type j, samples drawn with
    replacement (the mean-field model); the fixed point comes from :func:`fixed_point` and
    V from :meth:`PopulationModel.refined` on the same truncated model.
    """
    mf = fixed_point(system, lam, policy, split=split, d_pool=d_pool, tol=tol)
    if _linear_rates(system, policy):
        # d = 1 inside every type: all rates are linear in x, so the second-derivative term —
        # and V — vanish exactly (independent M/M/1 queues). Skipping the generic path
        # matters: geometric tails need hundreds of levels and the Lyapunov solve is O(n³).
        # The tests check this shortcut against the generic computation.
        return RefinedHetero(
            mean_field=mf,
            V=tuple(np.zeros(mf.K + 1) for _ in range(system.num_types)),
            mean_jobs_coefficient=0.0,
            mean_sojourn_coefficient=0.0,
            residual=0.0,
            success=True,
            method=f"{mf.method}+linear",
            message="d = 1 inside every type: linear rates, V = 0 exactly",
        )
    model = build_model(mf.system, mf.lam, mf.policy, mf.K, mf.split, mf.d_pool)
    rr = model.refined(mf.x)
    Vx = np.asarray(rr.V).reshape(system.num_types, mf.K)
    V = tuple(np.concatenate([[0.0], row / g]) for row, g in zip(Vx, system.gamma, strict=True))
    coef = float(np.sum(Vx))  # Σ_j γ_j Σ_n V^{(j)}_n = Σ of the x-coefficients
    return RefinedHetero(
        mean_field=mf,
        V=V,
        mean_jobs_coefficient=coef,
        mean_sojourn_coefficient=coef / mf.lam,
        residual=float(rr.residual),
        success=True,
        method=f"{mf.method}+{rr.method}",
        message=rr.message,
    )


@dataclass(frozen=True, eq=False)
class UniquenessProbe:
    """Equilibria reached from several initial states (a numerical check of uniqueness).

    Attributes
    ----------
    starts : tuple of str
        Names of the initial states (``"empty"``, ``"full"``, ``"random"``, ``"newton"``).
    equilibria : tuple of tuple of ndarray
        Per start, per type ``u^{(j)}_0..K``.
    max_distance : float
        Largest sup-norm distance (over types and levels) between any two equilibria.
    residuals : tuple of float
        ``‖drift‖∞`` at each equilibrium.
    K : int
        Truncation (that of :func:`fixed_point`).
    unsettled : tuple of str
        Starts whose trajectory did not settle within the probe's time (``budget``): left
        out of the comparison, named so that an incomplete probe never reads as a full one.
    """

    starts: tuple[str, ...]
    equilibria: tuple[tuple[np.ndarray, ...], ...]
    max_distance: float
    residuals: tuple[float, ...]
    K: int
    unsettled: tuple[str, ...] = ()


def uniqueness_probe(
    system: System,
    lam: float,
    policy: str,
    *,
    split: Any = None,
    d_pool: int | None = None,
    seed: int = 0,
    tol: float = 1e-12,
    budget: float | None = None,
) -> UniquenessProbe:
    """Run the mean-field ODE from several initial states and compare where it settles.

    Starts: empty; "full" (every server of every type holds K jobs, the largest state the
    truncation allows); a random non-increasing profile; plus the Newton fixed point of
    :func:`fixed_point` itself. Each trajectory is integrated until ``‖drift‖∞ ≤ 1e-9`` and
    polished by Newton. The paper proves uniqueness and global attraction (Schemes 1/2);
    this measures it for every policy at the truncation K of the fixed point.

    ``budget``: seconds of wall time each trajectory may take (None: no limit); a start that
    has not settled by then is listed in ``unsettled`` instead (very unequal server classes
    make the ODE stiff: one trajectory crept on for hours).
    """
    mf = fixed_point(system, lam, policy, split=split, d_pool=d_pool, tol=tol)
    model = build_model(mf.system, mf.lam, mf.policy, mf.K, mf.split, mf.d_pool)
    M, K = system.num_types, mf.K
    gamma = np.array(system.gamma)[:, None]
    rng = np.random.default_rng(seed)
    starts = {
        "empty": np.zeros((M, K)),
        "full": np.ones((M, K)) * gamma,
        "random": -np.sort(-rng.uniform(size=(M, K)), axis=1) * gamma,
    }
    names, eqs, residuals, unsettled = ["newton"], [mf.x], [mf.residual], []
    # Large models: BDF with the sparse Jacobian (LSODA factors a dense matrix at every
    # Jacobian update); small ones: LSODA, whose compiled core beats BDF's Python loop.
    big = model.dim >= 200
    method, jac = ("BDF", model.jacobian_sparse) if big else ("LSODA", model.jacobian)
    for name, x0 in starts.items():
        try:
            with time_budget(budget) if budget is not None else contextlib.nullcontext():
                eq = integrate_to_equilibrium(
                    model.drift, x0.reshape(-1), jacobian=jac, tol=1e-9, method=method
                )
        except IntegrationTimeoutError:
            unsettled.append(name)
            continue
        res = model.fixed_point(eq.x, tol=RESIDUAL_TOL)
        names.append(name)
        eqs.append(np.asarray(res.x))
        residuals.append(float(res.residual))
    Us = [u_of_x(system, x) for x in eqs]
    dist = max(float(np.max(np.abs(a - b))) for a in Us for b in Us)
    return UniquenessProbe(
        starts=tuple(names),
        equilibria=tuple(tuple(np.concatenate([[1.0], r]) for r in U) for U in Us),
        max_distance=dist,
        residuals=tuple(residuals),
        K=K,
        unsettled=tuple(unsettled),
    )
