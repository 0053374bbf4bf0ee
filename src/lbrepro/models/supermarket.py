"""The supermarket model JSQ(d) (docs/models.md §S): the single home of its equations.

N exponential servers (rate μ), Poisson arrivals at rate λN, each job joins the least loaded
of d servers sampled with replacement. ``u_k`` = fraction of servers with at least k jobs
(``u_0 = 1``). The mean-field limit is the population process with transitions

- arrival to a server holding exactly k − 1 jobs: jump ``+e_k``, rate ``λ(u_{k−1}^d − u_k^d)``;
- departure from a server holding exactly k jobs: jump ``−e_k``, rate ``μ(u_k − u_{k+1})``;

so ``du_k/dt = λ(u_{k−1}^d − u_k^d) − μ(u_k − u_{k+1})`` (Vvedenskaya et al. 1996;
Mitzenmacher 2001), with the doubly exponential fixed point ``u_k = ρ^{(d^k−1)/(d−1)}``.

Conventions: the *state* of the truncated model is ``(u_1, …, u_K)`` (``u_{K+1} = 0``: an
arrival that would create level K + 1 is lost); everything returned as ``u`` is the full
vector ``(u_0, u_1, …, u_K)`` with ``u_0 = 1``.

The refined mean field (Gast & Van Houdt 2017) adds the 1/N term:
``E[u_k]_N ≈ u_k + V_k/N``.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import scipy.sparse
from scipy.integrate import solve_ivp

from lbrepro.core.args import float_arg, sampled_servers
from lbrepro.core.equilibrium import solve_truncated
from lbrepro.core.errors import ConfigError, ConvergenceError, UnstableError
from lbrepro.meanfield.closed_forms import doubly_exponential_until
from lbrepro.meanfield.population import PopulationModel
from lbrepro.models.spec import (
    MEMORY_LIMIT,
    RUN_PARAMS,
    Model,
    Param,
    Summary,
    occupancy_conservation,
)
from lbrepro.sim.occupancy import (
    OccupancySimResult,
    counts_from_tail,
    sample_from_tail,
    simulate_occupancy,
    start_rng,
)

__all__ = [
    "MeanFieldResult",
    "RefinedSupermarket",
    "drift",
    "fixed_point",
    "fixed_point_closed_form",
    "mean_jobs",
    "mean_sojourn",
    "ode",
    "population_model",
    "refined",
    "simulate",
    "solve",
]

#: First truncation level tried by the numerical fixed point (doubled until the tail passes).
K0 = 8
#: Largest truncation level tried (d = 1 near ρ = 1 needs ~log(tol)/log(ρ) levels).
K_MAX = 8192


def _validate(lam: Any, d: Any, mu: Any) -> tuple[float, int, float]:
    """Check (λ, d, μ); return them as (float, int, float). Unstable loads are refused."""
    if isinstance(lam, bool) or not isinstance(lam, numbers.Real) or not lam > 0:
        raise ConfigError("lam", f"arrival rate per server must be a number > 0, got {lam!r}")
    if not math.isfinite(lam):
        raise ConfigError("lam", f"must be finite, got {lam!r}")
    if isinstance(mu, bool) or not isinstance(mu, numbers.Real) or not mu > 0:
        raise ConfigError("mu", f"service rate must be a number > 0, got {mu!r}")
    if not math.isfinite(mu):
        raise ConfigError("mu", f"must be finite, got {mu!r}")
    d = sampled_servers(d)
    rho = float(lam) / float(mu)
    if rho >= 1.0:
        raise UnstableError(f"load rho={rho:g} >= 1: the supermarket model is unstable")
    return float(lam), int(d), float(mu)


# ------------------------------------------------------------------------------ equations
def _transition_rates(x: Any, lam: float, d: int, mu: float) -> Any:
    """Rates of the 2K transitions at state x = (u_1..u_K): K arrivals, then K departures.

    Plain NumPy arithmetic, so it also runs on jets (exact derivatives).
    """
    u = np.concatenate([np.ones(1), x, np.zeros(1)])  # u_0 = 1, …, u_{K+1} = 0
    ud = u**d
    arrivals = lam * (ud[:-2] - ud[1:-1])  # server with k − 1 jobs receives: +e_k
    departures = mu * (u[1:-1] - u[2:])  # server with exactly k jobs completes: −e_k
    return np.concatenate([arrivals, departures])


def _state(u: Any, key: str) -> np.ndarray:
    x = np.asarray(u, dtype=float)
    if x.ndim != 1 or x.size < 1 or not np.all(np.isfinite(x)):
        raise ConfigError(key, "must be a finite 1-D array (u_1, …, u_K) with K ≥ 1")
    return x


def drift(u: Any, lam: float, d: int, mu: float = 1.0) -> np.ndarray:
    """Mean-field drift on the state ``(u_1, …, u_K)`` (``u_0 = 1``, ``u_{K+1} = 0``).

    ``du_k/dt = λ(u_{k−1}^d − u_k^d) − μ(u_k − u_{k+1})``, k = 1..K.
    """
    lam, d, mu = _validate(lam, d, mu)
    x = _state(u, "u")
    rates = _transition_rates(x, lam, d, mu)
    K = x.size
    return rates[:K] - rates[K:]


def population_model(lam: float, d: int, mu: float, K: int) -> PopulationModel:
    """The supermarket model truncated at K levels, as transitions (jump, rate).

    State ``(u_1, …, u_K)``; transitions ``+e_k`` at ``λ(u_{k−1}^d − u_k^d)`` and ``−e_k``
    at ``μ(u_k − u_{k+1})`` for k = 1..K.
    """
    lam, d, mu = _validate(lam, d, mu)
    if isinstance(K, bool) or not isinstance(K, (int, np.integer)) or K < 1:
        raise ConfigError("K", f"truncation level must be an integer ≥ 1, got {K!r}")
    eye = scipy.sparse.identity(int(K), format="csr")
    return PopulationModel(
        scipy.sparse.vstack([eye, -eye], format="csr"),
        partial(_transition_rates, lam=lam, d=d, mu=mu),
        names=[f"u{k}" for k in range(1, int(K) + 1)],
    )


def fixed_point_closed_form(
    lam: float, d: int, mu: float = 1.0, *, tol: float = 1e-16
) -> np.ndarray:
    """Closed-form fixed point ``u_k = ρ^{(d^k−1)/(d−1)}`` (d = 1: ``ρ^k``), k = 0..K.

    K is the first level with ``u_K < tol`` (see :mod:`lbrepro.meanfield.closed_forms`).
    """
    lam, d, mu = _validate(lam, d, mu)
    if not 0 < tol < 1:
        raise ConfigError("tol", f"must be in (0, 1), got {tol!r}")
    return doubly_exponential_until(lam / mu, d, tol)


def mean_jobs(u: Any) -> float:
    """Mean number of jobs per server, ``Σ_{k≥1} u_k`` (``u`` = ``(u_0, u_1, …)``)."""
    return float(np.sum(np.asarray(u, dtype=float)[1:]))


def mean_sojourn(u: Any, lam: float) -> float:
    """Mean sojourn time by Little's law, ``Σ_{k≥1} u_k / λ``."""
    if isinstance(lam, bool) or not isinstance(lam, numbers.Real) or not lam > 0:
        raise ConfigError("lam", f"arrival rate per server must be a number > 0, got {lam!r}")
    return mean_jobs(u) / float(lam)


# --------------------------------------------------------------------------- numerical
@dataclass(frozen=True, eq=False)
class MeanFieldResult:
    """Numerical mean-field fixed point of the truncated supermarket model.

    Attributes
    ----------
    u : ndarray, shape (K + 1,)
        ``(u_0 = 1, u_1, …, u_K)``.
    K : int
        Truncation level that passed the tail check.
    residual : float
        ``‖drift‖∞`` at ``u``.
    tail : float
        ``u_K``, at most ``tol``.
    truncations : tuple of int
        Every truncation level solved.
    success : bool
        Always True on return.
    num_iter : int
        Newton steps at the accepted truncation.
    method : str
        How the fixed point was found (e.g. ``"newton"``), with truncation doubling.
    message : str
        Human-readable summary.
    """

    u: np.ndarray
    K: int
    residual: float
    tail: float
    truncations: tuple[int, ...]
    success: bool
    num_iter: int
    method: str
    message: str


def fixed_point(lam: float, d: int, mu: float = 1.0, *, tol: float = 1e-14) -> MeanFieldResult:
    """Numerical fixed point through the generic :class:`PopulationModel` machinery.

    Independent of the closed form (which the tests compare it with): Newton on the model
    truncated at K levels, K doubled from :data:`K0` until ``u_K ≤ tol``. Each truncation
    starts from the previous solution padded with zeros (the first from ``ρ^k``, the d = 1
    solution, which dominates every d).
    """
    lam, d, mu = _validate(lam, d, mu)
    previous: list[np.ndarray] = []

    def solve_at(K: int) -> tuple[np.ndarray, Any]:
        if previous:
            x0 = np.zeros(K)
            m = min(K, previous[-1].size)
            x0[:m] = previous[-1][:m]
        else:
            x0 = np.zeros(K)
        res = population_model(lam, d, mu, K).fixed_point(x0)
        previous.append(np.asarray(res.x))
        return res.x, res

    tr = solve_truncated(solve_at, lambda x: abs(float(x[-1])), K0, tol=tol, K_max=K_MAX)
    x, fp = tr.solution
    return MeanFieldResult(
        u=np.concatenate([[1.0], x]),
        K=tr.K,
        residual=fp.residual,
        tail=tr.tail,
        truncations=tuple(k for k, _ in tr.history),
        success=True,
        num_iter=fp.num_iter,
        method=f"{fp.method}+truncation-doubling",
        message=f"{fp.message}; {tr.message}",
    )


@dataclass(frozen=True, eq=False)
class RefinedSupermarket:
    """Refined mean field of the supermarket model: ``E[u_k]_N ≈ u_k + V_k/N``.

    Attributes
    ----------
    u : ndarray, shape (K + 1,)
        Fixed point ``(u_0, …, u_K)``.
    V : ndarray, shape (K + 1,)
        1/N coefficients (``V_0 = 0``).
    W : ndarray, shape (K, K), or None
        1/N coefficient of ``Cov(u_1..u_K)`` (None for d = 1, where it is not needed).
    K : int
        Truncation level.
    mean_jobs : float
        ``Σ u_k`` (mean field).
    mean_jobs_coefficient : float
        ``Σ V_k``: ``E[jobs per server]_N ≈ mean_jobs + mean_jobs_coefficient/N``.
    success, residual, num_iter, method, message
        As in :class:`lbrepro.meanfield.population.RefinedResult` (``residual`` is the
        Lyapunov residual).
    """

    u: np.ndarray
    V: np.ndarray
    W: np.ndarray | None
    K: int
    mean_jobs: float
    mean_jobs_coefficient: float
    success: bool
    residual: float
    num_iter: int
    method: str
    message: str

    def mean_jobs_at(self, N: float) -> float:
        """Refined mean number of jobs per server with N servers, ``Σ_k (u_k + V_k/N)``."""
        if not N > 0:
            raise ConfigError("N", f"must be > 0, got {N!r}")
        return self.mean_jobs + self.mean_jobs_coefficient / N


def refined(lam: float, d: int, mu: float = 1.0, *, tol: float = 1e-14) -> RefinedSupermarket:
    """Refined mean field (Gast & Van Houdt 2017) at the numerical fixed point.

    π comes from :func:`fixed_point` (truncation with tail ≤ ``tol``); V and W from
    :meth:`PopulationModel.refined` on the same truncated model.
    """
    lam, d, mu = _validate(lam, d, mu)
    fp = fixed_point(lam, d, mu, tol=tol)
    if d == 1:
        # d = 1: every rate is linear in u, so the Hessian term — and V — vanish exactly (the N
        # servers are independent M/M/1 queues and E[u_k]_N = ρ^k for every N). Skipping the
        # generic path matters here: near ρ = 1 the truncation needs thousands of levels and
        # the Lyapunov solve is O(K³). tests/test_supermarket_meanfield.py checks the shortcut
        # against the generic computation.
        return RefinedSupermarket(
            u=fp.u,
            V=np.zeros_like(fp.u),
            W=None,
            K=fp.K,
            mean_jobs=mean_jobs(fp.u),
            mean_jobs_coefficient=0.0,
            success=True,
            residual=0.0,
            num_iter=fp.num_iter,
            method=f"{fp.method}+linear",
            message="d = 1: linear drift, V = 0 exactly",
        )
    rr = population_model(lam, d, mu, fp.K).refined(fp.u[1:])
    V = np.concatenate([[0.0], rr.V])
    return RefinedSupermarket(
        u=fp.u,
        V=V,
        W=rr.W,
        K=fp.K,
        mean_jobs=mean_jobs(fp.u),
        mean_jobs_coefficient=float(np.sum(V)),
        success=True,
        residual=rr.residual,
        num_iter=fp.num_iter,
        method=f"{fp.method}+{rr.method}",
        message=rr.message,
    )


def ode(lam: float, d: int, mu: float, u0: Any, t_eval: Any) -> np.ndarray:
    """Mean-field trajectory from ``u0 = (u_1, …, u_K)`` at times ``t_eval``.

    The truncation level is ``len(u0)``; ``u0`` is taken at time ``t_eval[0]``.

    Returns
    -------
    ndarray, shape (len(t_eval), K)
        ``(u_1, …, u_K)`` at each time.
    """
    lam, d, mu = _validate(lam, d, mu)
    x0 = _state(u0, "u0")
    t = np.asarray(t_eval, dtype=float)
    if t.ndim != 1 or t.size < 1 or not np.all(np.isfinite(t)) or np.any(np.diff(t) < 0):
        raise ConfigError("t_eval", "must be a non-empty, finite, non-decreasing 1-D array")
    if t.size == 1 or t[0] == t[-1]:
        return np.tile(x0, (t.size, 1))
    model = population_model(lam, d, mu, x0.size)
    sol = solve_ivp(
        lambda _t, x: model.drift(x),
        (t[0], t[-1]),
        x0,
        method="LSODA",
        t_eval=t,
        jac=lambda _t, x: model.jacobian(x),
        rtol=1e-10,
        atol=1e-13,
    )
    if not sol.success:
        raise ConvergenceError(f"supermarket ode: LSODA failed ({sol.message})")
    return sol.y.T


def solve(lam: float, d: int, mu: float = 1.0) -> Summary:
    """JSON-ready summary for ``lbrepro solve supermarket``: closed form, MF and RMF."""
    lam, d, mu = _validate(lam, d, mu)
    u = fixed_point_closed_form(lam, d, mu)
    rr = refined(lam, d, mu)
    n = max(u.size, rr.u.size)
    diff = float(np.max(np.abs(np.pad(u, (0, n - u.size)) - np.pad(rr.u, (0, n - rr.u.size)))))
    fp_residual = float(np.max(np.abs(drift(rr.u[1:], lam, d, mu))))
    return Summary(
        {
            "method": "cf+mf+rmf",
            "u": [float(v) for v in u],
            "mean_jobs": mean_jobs(u),
            "mean_sojourn": mean_sojourn(u, lam),
            "fixed_points": [
                {
                    "u": [float(v) for v in rr.u],
                    "K": rr.K,
                    "residual": fp_residual,
                    "max_abs_diff_closed_form": diff,
                }
            ],
            "refined": {
                "V": [float(v) for v in rr.V],
                "u_coefficient_note": "E[u_k]_N ≈ u_k + V_k/N",
                "mean_jobs_coefficient": rr.mean_jobs_coefficient,
            },
        }
    )


def initial_counts(
    lam: float, d: int, N: int, mu: float = 1.0, seed: np.random.SeedSequence | int | None = None
) -> np.ndarray:
    """A start near the mean-field fixed point: counts of servers with exactly k jobs.

    Starting a simulation here instead of empty shortens the transient it must discard
    (near ρ = 1 the empty start needs ~1/(1 − ρ)² time units to forget). With ``seed`` the
    N occupancies are drawn independently from the fixed point (untruncated, to 1e-12; for
    d = 1 this is the exact stationary law), from the run's start generator
    (:func:`lbrepro.sim.occupancy.start_rng`); without, the fixed point is rounded to N
    servers, which drops the long tail near ρ = 1. Shape (1, K + 1), the layout
    ``simulate_occupancy`` takes for one server type.
    """
    if seed is None:
        return counts_from_tail(fixed_point_closed_form(lam, d, mu, tol=0.1 / N), N)[None, :]
    u = fixed_point_closed_form(lam, d, mu, tol=1e-12)
    return sample_from_tail(u, N, start_rng(seed))[None, :]


def simulate(
    *,
    lam: float,
    d: int,
    N: int,
    horizon: float,
    warmup: float | None = None,
    seed: np.random.SeedSequence | int = 1,
    mu: float = 1.0,
    batches: int = 20,
    replace: bool = True,
    progress: bool = False,
    start: str = "fixed_point",
    needed: Callable[[OccupancySimResult], float] | None = None,
) -> OccupancySimResult:
    """Simulate the supermarket model with N servers (thin call into the occupancy kernel).

    ``needed``: the run doubles until the claims it serves are decided (see
    :func:`lbrepro.sim.occupancy.simulate_occupancy`).

    ``start`` is ``"fixed_point"`` (N occupancies drawn from the mean-field fixed point; see
    :func:`initial_counts`) or ``"empty"``. The warm-up (default: a tenth of the horizon) is
    discarded either way, more if MSER-5 finds a longer transient (see
    :mod:`lbrepro.sim.runlength`).
    """
    lam, d, mu = _validate(lam, d, mu)
    if warmup is None:
        warmup = 0.1 * float_arg("horizon", horizon)
    if isinstance(N, bool) or not isinstance(N, numbers.Integral) or N < 1:
        raise ConfigError("N", f"number of servers must be an integer >= 1, got {N!r}")
    if start not in ("fixed_point", "empty"):
        raise ConfigError("start", f"must be 'fixed_point' or 'empty', got {start!r}")
    initial = initial_counts(lam, d, int(N), mu, seed=seed) if start == "fixed_point" else None
    return simulate_occupancy(
        lam=lam,
        mu=mu,
        N=N,
        d=d,
        horizon=horizon,
        warmup=warmup,
        seed=seed,
        batches=batches,
        replace=replace,
        progress=progress,
        initial=initial,
        needed=needed,
    )


def _levels(rho: float, d: int, tol: float) -> float:
    """Levels k until the mean-field tail ρ^((d^k−1)/(d−1)) falls below ``tol`` (an estimate)."""
    if not 0 < rho < 1:
        return 0.0  # refused by the model with its own message
    if d == 1:
        return math.log(tol) / math.log(rho)
    # Doubly exponential: a few levels, e_k = (d^k − 1)/(d − 1) ≥ log(tol)/log(ρ) for small k.
    return math.log1p((d - 1) * math.log(tol) / math.log(rho)) / math.log(d) + 1


def check_memory(command: str, args: Mapping[str, Any]) -> None:
    """Refuse a run whose arrays would exceed MEMORY_LIMIT, before allocating anything.

    ``solve supermarket --lam 0.999999999 --d 1`` would want ~274 GiB of mean-field levels.
    """
    mu = args.get("mu", 1.0)
    rho = args["lam"] / mu if mu > 0 else 0.0
    if command == "solve":
        levels = _levels(rho, args["d"], 1e-16)
        what, limit = "the mean-field tail to fall below 1e-16", K_MAX
    else:
        levels = _levels(rho, args["d"], 0.1 / args["N"])
        what, limit = "the initial state (the fixed point rounded to N servers)", math.inf
    nbytes = 8.0 * levels
    if levels > limit or nbytes > MEMORY_LIMIT:
        bound = f"{limit} levels" if levels > limit else f"{MEMORY_LIMIT / 2**30:g} GiB"
        raise ConfigError(
            "lam",
            f"load {rho:.10g} with d = {args['d']}: {what} needs about {levels:.3g} levels "
            f"(~{nbytes / 2**30:.3g} GiB), beyond {bound}; lower --lam or raise --d",
        )


def mean_field_bytes(rho: float, d: int) -> float:
    """Bytes of the mean-field tail a config point at (ρ, d) solves, to 1e-16 (``rho:
    [0.99999999], d: [1]``: ~27 GiB); the artifacts' memory estimate (lbrepro.core.footprint)."""
    return 8.0 * _levels(rho, d, 1e-16)


MODEL = Model(
    name="supermarket",
    help="the supermarket model: JSQ(d) with exponential service",
    params=(
        Param("lam", "real", "arrival rate per server"),
        Param("d", "integer", "servers sampled per job", minimum=1, maximum="servers"),
        Param("mu", "real", "service rate"),
        *RUN_PARAMS,
        Param(
            "start",
            "choice",
            "initial state: the mean-field fixed point sampled for N servers, or empty",
            choices=("fixed_point", "empty"),
            commands=("simulate",),
        ),
    ),
    solve=solve,
    simulate=simulate,
    check=check_memory,
    conservation=occupancy_conservation,
)
