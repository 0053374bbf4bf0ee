"""Heterogeneous clusters of processor-sharing servers (models.md §A): one home for the equations.

M server types; type j holds a fraction γ_j of the N servers and has capacity C_j (a busy
type-j server completes jobs at total rate μC_j, whatever its occupancy: processor sharing).
Poisson arrivals at rate λN. ``u^{(j)}_n`` = fraction of type-j servers with at least n jobs.

Policies (``policy=``):

- ``"scheme1"``: sample d_j servers of every type, send the job to the least occupied sampled
  server; ties go to the higher capacity (seed 000, Scheme 1);
- ``"scheme2"``: same sample, send the job to the largest rate per job C_j/q (idle = ∞);
  ties go to the higher capacity (Scheme 2);
- ``"sqd"``: SQ(d) over the whole system, d = ``d_pool`` servers sampled from all N, ties
  uniform (loses stability region, see :func:`sqd_stability_closed_form`);
- ``"typed"``: route to type j with static probability p_j (``split``), then SQ(d_j) inside
  the type: each type is a homogeneous supermarket at load ρ_j = λp_j/(μγ_jC_j);
- ``"random"``: static random routing with p ∝ γC and d = 1 (independent M/M/1-PS queues).

Mean field as a population process. The state is ``x_{j,n} = γ_j u^{(j)}_n`` (the fraction of
*all* servers that are of type j and hold ≥ n jobs), n = 1..K, so that every event moves one
coordinate by ±1/N (what :class:`~lbrepro.meanfield.population.PopulationModel` — and the
refined mean field — needs):

- arrival to a type-j server holding exactly n jobs: jump ``+e_{j,n+1}``, rate ``λ A^{(j)}_n``,
  where ``A^{(j)}_n`` is the probability that a job is sent there;
- departure from a type-j server holding exactly n + 1 jobs: jump ``−e_{j,n+1}``, rate
  ``μC_j (x_{j,n+1} − x_{j,n+2})``.

In u-coordinates this is models.md's ``du^{(j)}_{n+1}/dt = (λ/γ_j)A^{(j)}_n − μC_j(u^{(j)}_{n+1} −
u^{(j)}_{n+2})``. Truncation at K: ``u_{K+1} = 0`` (an arrival that would create level K + 1 is
lost; :func:`fixed_point` enlarges K until that mass is negligible) and ``u_0 = 1``.

Conventions: types keep the caller's order in every input and output; wherever the order by
capacity matters (the sets H_j/L_j of faster/slower types, the SQ(d) stability bound) it is
computed from the capacities, never from positions.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
import scipy.integrate
import scipy.optimize
import scipy.sparse

from lbrepro.core.equilibrium import integrate_to_equilibrium, solve_truncated
from lbrepro.core.errors import ConfigError, ConvergenceError, UnstableError
from lbrepro.meanfield.population import PopulationModel
from lbrepro.sim.occupancy import (
    OccupancySimResult,
    sample_from_tail,
    simulate_occupancy,
    start_rng,
)

__all__ = [
    "H2",
    "H3",
    "POLICIES",
    "H2x",
    "HeteroMeanField",
    "LogTail",
    "RefinedHetero",
    "StabilityVerdict",
    "System",
    "UniquenessProbe",
    "classify_stability",
    "fixed_point",
    "log_tail",
    "population_model",
    "proportional_split",
    "refined",
    "simulate",
    "simulate_summary",
    "solve",
    "sqd_stability_closed_form",
    "stability_boundary",
    "stability_limit",
    "typed_split",
    "uniqueness_probe",
]

#: Policies understood by :func:`population_model` and everything built on it.
POLICIES = ("scheme1", "scheme2", "sqd", "typed", "random")
#: First truncation level tried by :func:`fixed_point` (doubled until the tail passes).
K0 = 16
#: Largest truncation level tried.
K_MAX = 4096
# Capacity ratios n·C_i/C_j closer than this (relatively) to an integer count as that integer:
# decimal capacities such as 0.1 and 0.3 are not exact binary ratios, and Scheme 2's tie rule
# (⌊·⌋ + 1 for faster types, ⌈·⌉ for slower ones) must see 3·0.1/0.3 as exactly 1.
_RATIO_SNAP = 1e-9


# ------------------------------------------------------------------------------------- system
def _real(value: Any, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ConfigError(key, f"must be a real number, got {value!r}")
    v = float(value)
    if not math.isfinite(v):
        raise ConfigError(key, f"must be finite, got {value!r}")
    return v


def _vector(value: Any, key: str) -> tuple[Any, ...]:
    if isinstance(value, str):
        raise ConfigError(key, f"must be a sequence of numbers, got the string {value!r}")
    try:
        return tuple(value)
    except TypeError:
        raise ConfigError(key, f"must be a sequence of numbers, got {value!r}") from None


@dataclass(frozen=True)
class System:
    """A heterogeneous cluster: type fractions, capacities and per-type sample sizes.

    Parameters
    ----------
    gamma : sequence of float
        Fraction of servers of each type; positive, summing to 1 (within 1e-9).
    capacity : sequence of float
        Capacity C_j of each type (service rate μC_j); positive and pairwise distinct (types
        with equal capacity are one type: merge them).
    d : sequence of int, or int
        Servers sampled per type by Schemes 1/2 and inside a type by type-based SQ(d); an
        int is used for every type.
    mu : float
        Service rate per unit capacity.
    """

    gamma: tuple[float, ...]
    capacity: tuple[float, ...]
    d: tuple[int, ...]
    mu: float = 1.0

    def __post_init__(self) -> None:
        gamma = _vector(self.gamma, "gamma")
        capacity = _vector(self.capacity, "capacity")
        d_raw = self.d
        if isinstance(d_raw, numbers.Integral) and not isinstance(d_raw, bool):
            d_raw = (d_raw,) * len(capacity)
        d = _vector(d_raw, "d")
        lengths = {"gamma": len(gamma), "capacity": len(capacity), "d": len(d)}
        if min(lengths.values()) < 1:
            empty = min(lengths, key=lengths.__getitem__)
            raise ConfigError(empty, "must list at least one server type")
        if len(set(lengths.values())) > 1:
            short = min(lengths, key=lengths.__getitem__)
            raise ConfigError(
                short,
                f"has {lengths[short]} entries but the system has "
                f"{max(lengths.values())} server types (gamma, capacity and d must have "
                "one entry per type)",
            )
        g = tuple(_real(v, "gamma") for v in gamma)
        if any(v <= 0 for v in g):
            raise ConfigError("gamma", f"type fractions must be > 0, got {g}")
        if abs(math.fsum(g) - 1.0) > 1e-9:
            raise ConfigError("gamma", f"type fractions must sum to 1, got sum {math.fsum(g)!r}")
        c = tuple(_real(v, "capacity") for v in capacity)
        if any(v <= 0 for v in c):
            raise ConfigError("capacity", f"capacities must be > 0, got {c}")
        if len(set(c)) < len(c):
            raise ConfigError(
                "capacity",
                f"capacities must be distinct, got {c}: types with equal capacity are one "
                "type, merge the types (add their gamma)",
            )
        for v in d:
            if (
                isinstance(v, bool)
                or not isinstance(v, numbers.Real)
                or not math.isfinite(v)
                or v != int(v)
                or v < 1
            ):
                raise ConfigError("d", f"sample sizes must be integers ≥ 1, got {tuple(d)}")
        mu = _real(self.mu, "mu")
        if mu <= 0:
            raise ConfigError("mu", f"service rate must be > 0, got {self.mu!r}")
        object.__setattr__(self, "gamma", g)
        object.__setattr__(self, "capacity", c)
        object.__setattr__(self, "d", tuple(int(v) for v in d))
        object.__setattr__(self, "mu", mu)

    @property
    def num_types(self) -> int:
        """Number of server types."""
        return len(self.gamma)

    @property
    def total_capacity(self) -> float:
        """``μ Σ_j γ_j C_j``: the maximal stability region is ``λ < total_capacity``."""
        return self.mu * math.fsum(g * c for g, c in zip(self.gamma, self.capacity, strict=True))

    @property
    def order(self) -> np.ndarray:
        """Type indices sorted by increasing capacity."""
        return np.argsort(self.capacity, kind="stable")

    def params(self) -> dict[str, Any]:
        """JSON-ready parameters."""
        return {
            "gamma": list(self.gamma),
            "capacity": list(self.capacity),
            "d": list(self.d),
            "mu": self.mu,
        }


#: Two types, equal fractions, capacity ratio 2.
H2 = System((0.5, 0.5), (1.0, 2.0), (2, 2))
#: Many slow servers and a few ten times faster ones (whole-system SQ(d) loses most capacity).
H2x = System((0.8, 0.2), (1.0, 10.0), (2, 2))
#: Three types, capacities 1, 2, 4.
H3 = System((0.5, 0.3, 0.2), (1.0, 2.0, 4.0), (2, 2, 2))


def _check_system(system: Any) -> System:
    if not isinstance(system, System):
        raise ConfigError("system", f"must be a hetero.System, got {type(system).__name__}")
    return system


def _check_lam(lam: Any) -> float:
    v = _real(lam, "lam")
    if v <= 0:
        raise ConfigError("lam", f"arrival rate per server must be > 0, got {lam!r}")
    return v


def _check_policy(policy: Any) -> str:
    if policy not in POLICIES:
        raise ConfigError("policy", f"must be one of {', '.join(POLICIES)}; got {policy!r}")
    return str(policy)


def _check_split(system: System, split: Any) -> np.ndarray:
    p = np.array([_real(v, "split") for v in _vector(split, "split")], dtype=float)
    if p.size != system.num_types:
        raise ConfigError("split", f"has {p.size} entries for {system.num_types} server types")
    if np.any(p < 0) or abs(math.fsum(p) - 1.0) > 1e-9:
        raise ConfigError("split", f"must be non-negative and sum to 1, got {tuple(p)}")
    return p


def _check_d_pool(system: System, d_pool: Any) -> int:
    if d_pool is None:
        if len(set(system.d)) != 1:
            raise ConfigError(
                "d_pool",
                f"whole-system SQ(d) samples one d from all servers; the per-type d = "
                f"{system.d} differ, so give d_pool explicitly",
            )
        return system.d[0]
    if (
        isinstance(d_pool, bool)
        or not isinstance(d_pool, numbers.Real)
        or not math.isfinite(d_pool)
        or d_pool != int(d_pool)
        or d_pool < 1
    ):
        raise ConfigError("d_pool", f"must be an integer ≥ 1, got {d_pool!r}")
    return int(d_pool)


def proportional_split(system: System) -> np.ndarray:
    """Static split ``p_j ∝ γ_j C_j``: every type at the same load, no load estimate needed."""
    system = _check_system(system)
    w = np.array(system.gamma) * np.array(system.capacity)
    return w / w.sum()


def _resolve(
    system: System, policy: str, split: Any, d_pool: Any
) -> tuple[np.ndarray | None, int | None]:
    """The split (typed/random) and pool sample size (sqd) a policy uses; None where unused."""
    if policy == "random":
        if split is not None:
            raise ConfigError("split", "policy 'random' always splits ∝ γC; use 'typed'")
        return proportional_split(system), None
    if policy == "typed":
        return (proportional_split(system) if split is None else _check_split(system, split)), None
    if split is not None:
        raise ConfigError("split", f"only policy 'typed' takes a split, not {policy!r}")
    if policy == "sqd":
        return None, _check_d_pool(system, d_pool)
    if d_pool is not None:
        raise ConfigError("d_pool", f"only policy 'sqd' samples from the pool, not {policy!r}")
    return None, None


# ---------------------------------------------------------------------------------- equations
def _scheme2_indices(capacity: Sequence[float], K: int) -> np.ndarray:
    """``idx[j, i, n]``: the level type i's sampled minimum must reach so a type-j server with
    n jobs wins, n = 0..K−1 (Scheme 2).

    Faster i (C_i > C_j) must offer strictly less rate per job, C_i/q_i < C_j/n, i.e.
    q_i ≥ ⌊nC_i/C_j⌋ + 1 (at equality the tie goes to the faster type); slower i need
    C_i/q_i ≤ C_j/n, i.e. q_i ≥ ⌈nC_i/C_j⌉. Indices beyond K are clipped to K + 1, where
    u = 0 (the truncated state holds nobody there).
    """
    C = np.asarray(capacity, dtype=float)
    M = C.size
    n = np.arange(K, dtype=float)
    idx = np.empty((M, M, K), dtype=np.int64)
    for j in range(M):
        for i in range(M):
            r = n * C[i] / C[j]
            near = np.round(r)
            snap = np.abs(r - near) <= _RATIO_SNAP * np.maximum(1.0, r)
            r = np.where(snap, near, r)
            level = np.floor(r) + 1 if C[i] > C[j] else np.ceil(r)
            idx[j, i] = np.minimum(level, K + 1).astype(np.int64)
    return idx


def _ipow(u: Any, k: int) -> Any:
    """``u**k`` for an integer k ≥ 0 by repeated multiplication.

    Not ``**``: a jet power builds its derivatives from ``u^(k−1)`` and ``u^(k−2)``, which
    overflow to inf at subnormal u (the ODE visits such states as empty levels fill), and
    ``0·inf`` turns the Jacobian into NaN for k ≤ 1. Products have no such corner.
    """
    if k == 0:
        return 1.0
    out = u
    for _ in range(k - 1):
        out = out * u
    return out


def _pad(U: Any, M: int) -> Any:
    """Per-type (u_0 = 1, u_1..u_K, u_{K+1} = 0) from (M, K) u-values; jets pass through."""
    return np.concatenate([np.ones((M, 1)), U, np.zeros((M, 1))], axis=1)


def _rates(
    x: Any,
    *,
    lam: float,
    policy: str,
    gamma: np.ndarray,
    capacity: np.ndarray,
    mu: float,
    d: np.ndarray,
    K: int,
    split: np.ndarray | None,
    d_pool: int | None,
    faster: np.ndarray,
    idx2: np.ndarray | None,
) -> Any:
    """Rates of the 2MK transitions at x = (x_{j,n}): MK arrivals, then MK departures.

    Only +, −, * and indexing (powers by :func:`_ipow`): the same code runs on jets, which
    gives the exact second derivatives the refined mean field needs.
    """
    M = gamma.size
    X = x.reshape(M, K)
    U = _pad(X / gamma[:, None], M)  # u^{(j)}_0..K+1
    rows = []
    if policy in ("scheme1", "scheme2"):
        P = [_ipow(U[j], int(d[j])) for j in range(M)]  # P(all d_j samples of type j ≥ level)
        for j in range(M):
            a = P[j][:K] - P[j][1 : K + 1]  # type j's sampled minimum is exactly n
            for i in range(M):
                if i == j:
                    continue
                if policy == "scheme1":
                    # Faster types must hold ≥ n + 1 (a tie at n goes to them), slower ≥ n.
                    a = a * (P[i][1 : K + 1] if faster[i, j] else P[i][:K])
                else:
                    assert idx2 is not None
                    a = a * P[i][idx2[j, i]]
            rows.append(lam * a)
    elif policy == "sqd":
        assert d_pool is not None
        S = gamma[0] * U[0]  # s_n = Σ_j γ_j u^{(j)}_n, fraction of all servers with ≥ n jobs
        for j in range(1, M):
            S = S + gamma[j] * U[j]
        s0, s1 = S[:K], S[1 : K + 1]
        # (s_n^d − s_{n+1}^d)/(s_n − s_{n+1}) expanded as a polynomial: no 0/0 where both
        # levels are empty.
        g = _ipow(s0, d_pool - 1)
        for k in range(1, d_pool):
            g = g + _ipow(s0, d_pool - 1 - k) * _ipow(s1, k)
        for j in range(M):
            rows.append(lam * gamma[j] * (U[j][:K] - U[j][1 : K + 1]) * g)
    else:
        assert split is not None
        for j in range(M):
            dj = 1 if policy == "random" else int(d[j])
            Pj = _ipow(U[j], dj)
            rows.append(lam * split[j] * (Pj[:K] - Pj[1 : K + 1]))
    departures = [mu * capacity[j] * gamma[j] * (U[j][1 : K + 1] - U[j][2:]) for j in range(M)]
    return np.concatenate(rows + departures)


def _jacobian(
    x: np.ndarray,
    *,
    lam: float,
    policy: str,
    gamma: np.ndarray,
    capacity: np.ndarray,
    mu: float,
    d: np.ndarray,
    K: int,
    split: np.ndarray | None,
    d_pool: int | None,
    faster: np.ndarray,
    idx2: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Analytic Jacobian of the drift ``f = β_arrivals − β_departures`` (see :func:`_rates`),
    as COO triplets (rows, cols, values; duplicates add up).

    Why not the jets Jacobian: it is exact too, but costs O(n) rate evaluations per call;
    the stability criterion integrates stiff ODEs whose solver asks for thousands of
    Jacobians. ``tests/test_hetero_meanfield.py`` checks the two agree for every policy.
    """
    M = gamma.size
    X = np.concatenate([gamma[:, None], x.reshape(M, K), np.zeros((M, 1))], axis=1)
    U = X / gamma[:, None]
    n = np.arange(K)
    rows: list[np.ndarray] = []
    cols: list[np.ndarray] = []
    vals: list[np.ndarray] = []

    def add(j: int, i: int, level: np.ndarray, dx: np.ndarray) -> None:
        """∂β_arr[j, n]/∂x_{i, level(n)} += dx(n), for the levels that are state coordinates."""
        level = np.broadcast_to(level, (K,))
        ok = (level >= 1) & (level <= K)
        rows.append(j * K + n[ok])
        cols.append(i * K + level[ok] - 1)
        vals.append(np.broadcast_to(dx, (K,))[ok])

    if policy in ("scheme1", "scheme2"):
        for j in range(M):
            levels = [n, n + 1]  # factor 0: type j's sampled minimum is exactly n
            types = [j, j]
            for i in range(M):
                if i != j:
                    if policy == "scheme1":
                        levels.append(n + 1 if faster[i, j] else n)
                    else:
                        assert idx2 is not None
                        levels.append(idx2[j, i])
                    types.append(i)
            # Factors F_0 = P_j[n] − P_j[n+1], F_a = P_{i_a}[k_a]; β = λ Π F.
            F = [U[j, n] ** d[j] - U[j, n + 1] ** d[j]]
            F += [U[i, k] ** d[i] for i, k in zip(types[2:], levels[2:], strict=True)]
            for a in range(len(F)):
                others = lam * np.prod([F[b] for b in range(len(F)) if b != a], axis=0)
                if a == 0:
                    for level, sign in ((n, 1.0), (n + 1, -1.0)):
                        du = sign * d[j] * U[j, level] ** (d[j] - 1)
                        add(j, j, level, others * du / gamma[j])
                else:
                    i, k = types[a + 1], levels[a + 1]
                    add(j, i, k, others * d[i] * U[i, k] ** (d[i] - 1) / gamma[i])
    elif policy == "sqd":
        assert d_pool is not None
        S = X.sum(axis=0)
        s0, s1 = S[:K], S[1 : K + 1]
        g = sum(s0 ** (d_pool - 1 - k) * s1**k for k in range(d_pool))
        g0 = sum((d_pool - 1 - k) * s0 ** (d_pool - 2 - k) * s1**k for k in range(d_pool - 1))
        g1 = sum(k * s0 ** (d_pool - 1 - k) * s1 ** (k - 1) for k in range(1, d_pool))
        for j in range(M):
            dX = X[j, :K] - X[j, 1 : K + 1]
            add(j, j, n, lam * g)
            add(j, j, n + 1, -lam * g)
            for i in range(M):
                add(j, i, n, lam * dX * g0)
                add(j, i, n + 1, lam * dX * g1)
    else:
        assert split is not None
        for j in range(M):
            dj = 1 if policy == "random" else int(d[j])
            for level, sign in ((n, 1.0), (n + 1, -1.0)):
                add(j, j, level, lam * split[j] * sign * dj * U[j, level] ** (dj - 1) / gamma[j])
    for j in range(M):
        # Departures −μC_j(x_{j,n+1} − x_{j,n+2}) enter f with a minus sign.
        rows += [j * K + n, j * K + n[:-1]]
        cols += [j * K + n, j * K + n[:-1] + 1]
        vals += [np.full(K, -mu * capacity[j]), np.full(K - 1, mu * capacity[j])]
    return np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)


class _HeteroModel(PopulationModel):
    """A :class:`PopulationModel` whose Jacobian is the analytic sparse one.

    Everything else (drift, diffusion, second derivatives for the refined mean field,
    Newton, refined) is inherited and still derived from the transition list.
    """

    def __init__(self, jumps: Any, rates: Any, names: Sequence[str], jac: Any) -> None:
        super().__init__(jumps, rates, names=names)
        self._jac = jac

    def drift(self, x: Any) -> np.ndarray:
        """Mean-field drift: the jumps are ``[I; −I]``, so ``f = β_arrivals − β_departures``
        (the same value as the generic ``Lᵀβ``, without the sparse product)."""
        r = self.rate_values(x)
        return r[: self.dim] - r[self.dim :]

    def jacobian(self, x: Any) -> np.ndarray:
        """Exact Jacobian ``∂f_i/∂x_j`` (analytic), shape (n, n)."""
        r, c, v = self._jac(self._state(x))
        n = self.dim
        return np.bincount(r * n + c, weights=v, minlength=n * n).reshape(n, n)

    def jacobian_sparse(self, x: Any) -> scipy.sparse.csc_matrix:
        """Exact Jacobian as a sparse matrix (what stiff solvers and sparse Newton use)."""
        r, c, v = self._jac(self._state(x))
        return scipy.sparse.csc_matrix((v, (r, c)), shape=(self.dim, self.dim))

    # PopulationModel's sparse Newton / ODE path (n ≥ 200) asks for this one.
    _jacobian_sparse = jacobian_sparse


def population_model(
    system: System,
    lam: float,
    policy: str,
    K: int,
    *,
    split: Any = None,
    d_pool: int | None = None,
) -> PopulationModel:
    """The mean field of one policy truncated at K levels per type, as transitions.

    State ``x_{j,n} = γ_j u^{(j)}_n`` for j = 0..M−1 (caller's order), n = 1..K, type-major
    (coordinate ``j·K + n − 1``). Transitions: ``+e_{j,n+1}`` at ``λ A^{(j)}_n`` and
    ``−e_{j,n+1}`` at ``μC_j (x_{j,n+1} − x_{j,n+2})``. Unstable loads are accepted here (the
    truncated system is always bounded; :func:`stability_boundary` relies on that).

    Parameters
    ----------
    system : System
    lam : float
        Arrival rate per server.
    policy : str
        One of :data:`POLICIES`.
    K : int
        Truncation level (per type).
    split : sequence of float, optional
        Routing probabilities of ``"typed"`` (default ∝ γC).
    d_pool : int, optional
        Sample size of ``"sqd"`` (default: the common per-type d).
    """
    system = _check_system(system)
    lam = _check_lam(lam)
    policy = _check_policy(policy)
    if isinstance(K, bool) or not isinstance(K, (int, np.integer)) or K < 1:
        raise ConfigError("K", f"truncation level must be an integer ≥ 1, got {K!r}")
    p, dp = _resolve(system, policy, split, d_pool)
    return _build(system, lam, policy, int(K), p, dp)


def _build(
    system: System, lam: float, policy: str, K: int, p: np.ndarray | None, dp: int | None
) -> PopulationModel:
    """:func:`population_model` on validated arguments."""
    C = np.array(system.capacity)
    M = system.num_types
    eye = scipy.sparse.identity(M * K, format="csr")
    params = dict(
        lam=lam,
        policy=policy,
        gamma=np.array(system.gamma),
        capacity=C,
        mu=system.mu,
        d=np.array(system.d),
        K=K,
        split=p,
        d_pool=dp,
        faster=C[:, None] > C[None, :],
        idx2=_scheme2_indices(C, K) if policy == "scheme2" else None,
    )
    names = [f"x{j}_{n}" for j in range(M) for n in range(1, K + 1)]
    return _HeteroModel(
        scipy.sparse.vstack([eye, -eye], format="csr"),
        partial(_rates, **params),
        names,
        partial(_jacobian, **params),
    )


# ---------------------------------------------------------------------------------- stability
def sqd_stability_closed_form(system: System, d: int) -> float:
    """Stability boundary of whole-system SQ(d) **[reconstruction, models.md §A]**.

    ``λ* = μ min_k [Σ_{i≤k} γ_i C_i] / [Σ_{i≤k} γ_i]^d`` over types sorted by increasing
    capacity. Why: if the slowest k types (a fraction g = Σ_{i≤k}γ_i of the servers) all hold
    long queues, a job joins them only when all d samples fall among them, at rate λg^d,
    while they serve μΣ_{i≤k}γ_iC_i; the cheapest set of a given size is the slowest one, and
    μF(g)/g^d with F convex piecewise linear is minimised at a breakpoint. k = M gives the
    full capacity. :func:`stability_boundary` checks it against mean-field trajectories.
    """
    system = _check_system(system)
    try:
        d = _check_d_pool(system, d)
    except ConfigError as exc:
        raise ConfigError("d", str(exc).removeprefix("d_pool: ")) from None
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
    system = _check_system(system)
    policy = _check_policy(policy)
    p, dp = _resolve(system, policy, split, d_pool)
    limit = system.total_capacity
    if policy == "sqd":
        limit = min(limit, sqd_stability_closed_form(system, dp))
    if p is not None:
        cap = system.mu * np.array(system.gamma) * np.array(system.capacity)
        with np.errstate(divide="ignore"):
            limit = min(limit, float(np.min(np.where(p > 0, cap / p, np.inf))))
    return float(limit)


def _check_stable(system: System, lam: float, policy: str, p: Any, dp: Any) -> None:
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
                f"there (capacity {cap:g}; lambda* is the reconstructed bound of models.md §A)"
            )
    if p is not None:
        rho = lam * p / (system.mu * np.array(system.gamma) * np.array(system.capacity))
        for j in np.flatnonzero(rho >= 1.0):
            raise UnstableError(
                f"type {j} (capacity {system.capacity[j]:g}) is overloaded: "
                f"lam*p_j/(mu*gamma_j*C_j) = {rho[j]:g} >= 1 with split p = "
                f"{[round(float(v), 6) for v in p]}"
            )


# ------------------------------------------------------------------------------ fixed points
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


def _u_of_x(system: System, x: np.ndarray) -> np.ndarray:
    """(M, K) array of u^{(j)}_n, n = 1..K, from the state x."""
    return np.asarray(x).reshape(system.num_types, -1) / np.array(system.gamma)[:, None]


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
    U = _u_of_x(system, x)
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
    system = _check_system(system)
    lam = _check_lam(lam)
    policy = _check_policy(policy)
    p, dp = _resolve(system, policy, split, d_pool)
    _check_stable(system, lam, policy, p, dp)
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
        if K not in solved:
            start = _regrid(system, previous[-1], K) if previous else np.zeros(system.num_types * K)
            model = _build(system, lam, policy, K, p, dp)
            res = model.fixed_point(start, tol=RESIDUAL_TOL)
            previous.append(np.asarray(res.x))
            solved[K] = (res.x, res)
        return solved[K]

    def tail_mass(x: np.ndarray) -> float:
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
    return _result(system, lam, policy, p, dp, x, fp, tr)


def _result(
    system: System, lam: float, policy: str, p: Any, dp: Any, x: np.ndarray, fp: Any, tr: Any
) -> HeteroMeanField:
    U = _u_of_x(system, x)
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


def _linear(system: System, policy: str) -> bool:
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
    if _linear(system, policy):
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
    model = _build(mf.system, mf.lam, mf.policy, mf.K, mf.split, mf.d_pool)
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


# ---------------------------------------------------------------------------- deep tails
@dataclass(frozen=True, eq=False)
class LogTail:
    """Scheme 1/2 equilibrium tails in log space, far below what floats can hold as u.

    Attributes
    ----------
    log_u : tuple of ndarray
        Per type, ``(log u^{(j)}_0 = 0, log u^{(j)}_1, …, log u^{(j)}_{K_j})``.
    increments : tuple of ndarray
        Per type, successive differences of ``log(−log u^{(j)}_n)`` over n ≥ 1: constant in
        the limit iff the tail decays doubly exponentially, u_n ≈ exp(−c·r^n) with slope log r.
    residual : float
        Largest relative residual of the log-space equilibrium equations.
    """

    log_u: tuple[np.ndarray, ...]
    increments: tuple[np.ndarray, ...]
    residual: float


def _log1mexp(z: float) -> float:
    """``log(1 − e^{−x})`` at ``x = e^z``, accurate at both ends (Mächler 2012).

    Taking log x rather than x keeps it finite where x underflows: log(1 − e^{−x}) = z − x/2
    + O(x²) for tiny x.
    """
    if z > 6.0:
        return 0.0  # x > 400: e^{−x} < 1e-173, below the precision of anything it is added to
    x = math.exp(z)
    if x < 1e-8:
        return z - x / 2
    return math.log(-math.expm1(-x)) if x < math.log(2.0) else math.log1p(-math.exp(-x))


def log_tail(system: System, lam: float, policy: str, *, levels: int = 10) -> LogTail:
    """Scheme 1/2 equilibrium solved in log coordinates, to measure the tail's decay law.

    The equilibrium equations ``u^{(j)}_{n+1} − u^{(j)}_{n+2} = Δ_j A^{(j)}_n`` (models.md §A)
    are written in ``ℓ = log u``: ``ℓ_{n+1} + log(1 − e^{ℓ_{n+2}−ℓ_{n+1}}) = log Δ_j +
    d_j ℓ^{(j)}_n + log(1 − e^{d_j(ℓ_{n+1}−ℓ_n)}) + Σ_i d_i ℓ^{(i)}_{idx}``. Why: the tails fall
    below 1e-308 within a few levels, so the float equilibrium of :func:`fixed_point` shows
    only 3–5 levels per type — too few to see whether log(−log u_n) becomes linear. In log
    space the same equations hold exactly, and are solved with relative accuracy to any depth.
    The unknowns are parametrised as ``ℓ_n = −Σ_{m≤n} e^{z_m}`` (strictly decreasing, so every
    logarithm is defined). Type j keeps ``K_j = ⌈levels·C_j/C_min⌉`` levels: under Scheme 2 a
    type-j server at level n competes with faster types at level ≈ nC_i/C_j, which must exist.
    Truncation: ``u_{K_j+1} = 0``. Started from the float equilibrium, extrapolated below it.
    """
    system = _check_system(system)
    lam = _check_lam(lam)
    if policy not in ("scheme1", "scheme2"):
        raise ConfigError("policy", f"log_tail is for scheme1 and scheme2, not {policy!r}")
    if isinstance(levels, bool) or not isinstance(levels, numbers.Integral) or levels < 3:
        raise ConfigError("levels", f"must be an integer >= 3, got {levels!r}")
    mf = fixed_point(system, lam, policy)
    M = system.num_types
    C = np.array(system.capacity)
    d = np.array(system.d)
    log_d = np.log(d)
    log_delta = np.log(lam / (system.mu * np.array(system.gamma) * C))

    def truncation(lv: int) -> list[int]:
        if policy == "scheme1":
            return [lv] * M
        return [math.ceil(lv * c / C.min()) for c in C]

    def indices(Ks: list[int]) -> np.ndarray:
        K_all = max(Ks)
        if policy == "scheme1":
            n = np.arange(K_all)
            return np.array([[n + 1 if C[i] > C[j] else n for i in range(M)] for j in range(M)])
        return _scheme2_indices(C, K_all)

    def solve(lv: int, z0: list[np.ndarray]) -> tuple[list[np.ndarray], float, str]:
        Ks = truncation(lv)
        idx = indices(Ks)
        offsets = np.concatenate([[0], np.cumsum(Ks)])

        def ells(z: np.ndarray) -> list[np.ndarray]:
            # ℓ_0 = 0, ℓ_1..ℓ_K decreasing, ℓ_{K+1} = −∞ (the truncation).
            return [
                np.concatenate(
                    [[0.0], -np.cumsum(np.exp(z[offsets[j] : offsets[j + 1]])), [-np.inf]]
                )
                for j in range(M)
            ]

        def residual(z: np.ndarray) -> np.ndarray:
            ell = ells(z)
            out = []
            for j in range(M):
                e, zj = ell[j], z[offsets[j] : offsets[j + 1]]  # e^{z_n} = ℓ_{n−1} − ℓ_n
                for k in range(Ks[j]):
                    # k = n: the equation for level n + 1 (n = 0..K_j − 1).
                    lhs = e[k + 1] + (_log1mexp(zj[k + 1]) if k + 1 < Ks[j] else 0.0)
                    rhs = log_delta[j] + d[j] * e[k] + _log1mexp(log_d[j] + zj[k])
                    for i in range(M):
                        if i != j:
                            rhs += d[i] * ell[i][idx[j, i, k]]
                    out.append((lhs - rhs) / max(1.0, abs(e[k + 1])))
            return np.array(out)

        sol = scipy.optimize.root(
            residual, np.concatenate(z0), method="hybr", options={"xtol": 1e-14}
        )
        res = float(np.max(np.abs(residual(sol.x))))
        zs = [sol.x[offsets[j] : offsets[j + 1]] for j in range(M)]
        return zs, res, str(sol.message)

    # Continuation in depth: solve with 3 levels (started from the float equilibrium), then
    # add levels one at a time, each new log-step guessed by repeating the last period's
    # growth (Scheme 2 tails of faster types grow in periods of C_j/C_min levels).
    lv = 3
    Ks = truncation(lv)
    idx = indices(Ks)
    known = [np.asarray(mf.u[j][: K + 1]) > 1e-250 for j, K in enumerate(Ks)]
    guess = [np.zeros(K + 2) for K in Ks]
    for _ in range(4):
        # Levels the float equilibrium resolves are taken from it; deeper ones from the
        # dominant term of the equation, ℓ_{n+1} ≈ log Δ_j + d_j ℓ_n + Σ_i d_i ℓ^{(i)}_{idx},
        # swept a few times because types reference each other's levels.
        for j, K in enumerate(Ks):
            g = guess[j]
            for k in range(1, K + 1):
                if k < known[j].size and known[j][k]:
                    g[k] = math.log(mf.u[j][k])
                else:
                    dominant = log_delta[j] + d[j] * g[k - 1]
                    dominant += sum(d[i] * guess[i][idx[j, i, k - 1]] for i in range(M) if i != j)
                    g[k] = min(dominant, g[k - 1] - 1e-3)
    z0 = [np.log(-np.diff(g[: K + 1])) for g, K in zip(guess, Ks, strict=True)]
    zs, res, message = solve(lv, z0)
    while lv < levels and res <= 1e-9:
        lv += 1
        z0 = []
        for z, new_K in zip(zs, truncation(lv), strict=True):
            p = new_K - z.size
            growth = z[-p:] - z[-2 * p : -p] if z.size >= 2 * p else np.full(p, math.log(2.0))
            z0.append(np.concatenate([z, z[-p:] + growth]))
        zs, res, message = solve(lv, z0)
    if not np.isfinite(res) or res > 1e-9:
        raise ConvergenceError(f"log_tail: residual {res:.2e} > 1e-9 at {lv} levels ({message})")
    ell = [np.concatenate([[0.0], -np.cumsum(np.exp(z))]) for z in zs]
    inc = tuple(np.diff(np.log(-e[1:])) for e in ell)
    return LogTail(log_u=tuple(ell), increments=inc, residual=res)


# ------------------------------------------------------------------------------ uniqueness
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
    """

    starts: tuple[str, ...]
    equilibria: tuple[tuple[np.ndarray, ...], ...]
    max_distance: float
    residuals: tuple[float, ...]
    K: int


def uniqueness_probe(
    system: System,
    lam: float,
    policy: str,
    *,
    split: Any = None,
    d_pool: int | None = None,
    seed: int = 0,
    tol: float = 1e-12,
) -> UniquenessProbe:
    """Run the mean-field ODE from several initial states and compare where it settles.

    Starts: empty; "full" (every server of every type holds K jobs, the largest state the
    truncation allows); a random non-increasing profile; plus the Newton fixed point of
    :func:`fixed_point` itself. Each trajectory is integrated until ``‖drift‖∞ ≤ 1e-9`` and
    polished by Newton. The paper proves uniqueness and global attraction (Schemes 1/2);
    this measures it for every policy at the truncation K of the fixed point.
    """
    mf = fixed_point(system, lam, policy, split=split, d_pool=d_pool, tol=tol)
    model = _build(mf.system, mf.lam, mf.policy, mf.K, mf.split, mf.d_pool)
    M, K = system.num_types, mf.K
    gamma = np.array(system.gamma)[:, None]
    rng = np.random.default_rng(seed)
    starts = {
        "empty": np.zeros((M, K)),
        "full": np.ones((M, K)) * gamma,
        "random": -np.sort(-rng.uniform(size=(M, K)), axis=1) * gamma,
    }
    names, eqs, residuals = ["newton"], [mf.x], [mf.residual]
    # Large models: BDF with the sparse Jacobian (LSODA factors a dense matrix at every
    # Jacobian update); small ones: LSODA, whose compiled core beats BDF's Python loop.
    big = model.dim >= 200
    method, jac = ("BDF", model.jacobian_sparse) if big else ("LSODA", model.jacobian)
    for name, x0 in starts.items():
        eq = integrate_to_equilibrium(
            model.drift, x0.reshape(-1), jacobian=jac, tol=1e-9, method=method
        )
        res = model.fixed_point(eq.x, tol=RESIDUAL_TOL)
        names.append(name)
        eqs.append(np.asarray(res.x))
        residuals.append(float(res.residual))
    Us = [_u_of_x(system, x) for x in eqs]
    dist = max(float(np.max(np.abs(a - b))) for a in Us for b in Us)
    return UniquenessProbe(
        starts=tuple(names),
        equilibria=tuple(tuple(np.concatenate([[1.0], r]) for r in U) for U in Us),
        max_distance=dist,
        residuals=tuple(residuals),
        K=K,
    )


# ------------------------------------------------------------------- numerical stability
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
    system = _check_system(system)
    lam = _check_lam(lam)
    policy = _check_policy(policy)
    p, dp = _resolve(system, policy, split, d_pool)
    model = _build(system, lam, policy, int(K_big), p, dp)
    gamma = np.array(system.gamma)
    last = np.arange(1, system.num_types + 1) * int(K_big) - 1

    def tail(_t: float, y: np.ndarray) -> float:
        return float(np.max(y[last] / gamma)) - eps

    def settled(_t: float, y: np.ndarray) -> float:
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
    jobs = _u_of_x(system, sol.y[:, -1]).sum(axis=1)
    return StabilityVerdict(
        lam=lam,
        stable=stable,
        reason=reason,
        t=float(sol.t[-1]),
        mean_jobs_per_type=tuple(float(v) for v in jobs),
    )


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
    """
    system = _check_system(system)
    policy = _check_policy(policy)
    if not 0 < tol < 1:
        raise ConfigError("tol", f"must be in (0, 1), got {tol!r}")
    cap = system.total_capacity

    def stable(lam: float) -> bool:
        return classify_stability(
            system, lam, policy, split=split, d_pool=d_pool, K_big=K_big, eps=eps
        ).stable

    if bracket is None:
        lo, hi = 0.0, cap
    else:
        lo, hi = (float(v) for v in bracket)
        if not 0 < lo < hi <= cap:
            raise ConfigError("bracket", f"must satisfy 0 < lo < hi <= {cap:g}, got {bracket}")
        if not stable(lo):
            raise ConfigError("bracket", f"the low end lam={lo:g} is not stable")
        if hi < cap and stable(hi):
            raise ConfigError("bracket", f"the high end lam={hi:g} is stable")
    while hi - lo > tol * hi:
        mid = 0.5 * (lo + hi)
        if stable(mid):
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


# ------------------------------------------------------------------------ type-based splits
def _supermarket_jobs(rho: float, d: int) -> tuple[float, float]:
    """Mean jobs ``m(ρ) = Σ_k ρ^{e_k}``, ``e_k = (d^k − 1)/(d − 1)``, and ``m'(ρ)``.

    The mean-field jobs at a supermarket server (models.md §S); d = 1 is M/M/1, ρ/(1 − ρ).
    """
    if rho <= 0.0:
        return 0.0, 1.0
    if d == 1:
        return rho / (1.0 - rho), 1.0 / (1.0 - rho) ** 2
    m = dm = 0.0
    e = 1
    log_rho = math.log(rho)
    while True:
        term = math.exp(e * log_rho)
        m += term
        dm += e * term / rho
        if e * log_rho < -745.0 or (term < 1e-18 * m and e * term < 1e-18 * dm * rho):
            return m, dm
        e = d * e + 1


def _rho_for_slope(slope: float, d: int) -> float:
    """The ρ in [0, 1) with ``m'(ρ) = slope`` (0 when slope ≤ m'(0) = 1)."""
    if slope <= 1.0:
        return 0.0
    if d == 1:
        return 1.0 - 1.0 / math.sqrt(slope)
    hi = 0.5
    while _supermarket_jobs(hi, d)[1] < slope:
        hi = 1.0 - 0.5 * (1.0 - hi)
    return float(
        scipy.optimize.brentq(
            lambda r: _supermarket_jobs(r, d)[1] - slope, 0.0, hi, xtol=1e-15, rtol=1e-15
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
    system = _check_system(system)
    lam_hat = _real(lam_hat, "lam_hat")
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
        return float(
            sum(
                wj * _rho_for_slope(nu * c, dj)
                for wj, c, dj in zip(w, system.capacity, ds, strict=True)
            )
        )

    lo = 1.0 / max(system.capacity)  # every ρ_j = 0 at or below this ν
    hi = 2.0 * lo
    while served(hi) < lam_hat:
        hi *= 2.0
    nu = scipy.optimize.brentq(lambda v: served(v) - lam_hat, lo, hi, xtol=1e-15, rtol=1e-15)
    rho = np.array([_rho_for_slope(nu * c, dj) for c, dj in zip(system.capacity, ds, strict=True)])
    p = w * rho
    return p / p.sum()


# ------------------------------------------------------------------------------ simulation
def simulate(
    system: System,
    lam: float,
    policy: str = "scheme1",
    *,
    N: int,
    horizon: float,
    warmup: float,
    seed: np.random.SeedSequence | int,
    split: Any = None,
    d_pool: int | None = None,
    batches: int = 20,
    start: str = "fixed_point",
    chaos: bool = False,
    beyond_stability: bool = False,
    progress: bool = False,
) -> OccupancySimResult:
    """Simulate one policy with N servers in total (thin call into the occupancy kernel).

    The kernel implements every policy of this module with the same tie rules (Schemes 1/2:
    ties to the higher capacity; whole-system SQ(d): uniform). ``start="fixed_point"``
    rounds the policy's mean-field equilibrium to the γ_jN servers of each type (shorter
    transient), ``"empty"`` starts empty; the warm-up is discarded either way. Loads outside
    the policy's stability region are refused unless ``beyond_stability`` (used to *show*
    instability: the run is then finite, started empty, and the kernel's level cap stops a
    runaway queue with UnstableError); λ ≥ μΣγC is always refused.
    """
    system = _check_system(system)
    lam = _check_lam(lam)
    policy = _check_policy(policy)
    p, dp = _resolve(system, policy, split, d_pool)
    if start not in ("fixed_point", "empty"):
        raise ConfigError("start", f"must be 'fixed_point' or 'empty', got {start!r}")
    if beyond_stability:
        if lam >= system.total_capacity:
            raise UnstableError(
                f"lam={lam:g} >= total capacity {system.total_capacity:g}: no policy is stable"
            )
        start = "empty"
    else:
        _check_stable(system, lam, policy, p, dp)
    initial = None
    if start == "fixed_point":
        mf = fixed_point(system, lam, policy, split=p if policy == "typed" else None, d_pool=dp)
        sizes = [round(g * N) for g in system.gamma]
        rng = start_rng(seed)  # sampled, not rounded: rounding drops the tail near ρ = 1
        initial = np.stack([sample_from_tail(u, n, rng) for u, n in zip(mf.u, sizes, strict=True)])
    return simulate_occupancy(
        lam=lam,
        mu=system.mu,
        N=N,
        d=dp if policy == "sqd" else system.d if policy != "random" else 1,
        horizon=horizon,
        warmup=warmup,
        seed=seed,
        gamma=system.gamma,
        capacity=system.capacity,
        batches=batches,
        initial=initial,
        policy=policy,
        split=p if policy == "typed" else None,
        chaos=chaos,
        progress=progress,
    )


# ------------------------------------------------------------------------------------- CLI
def _listify(value: Any, key: str) -> Any:
    """Accept ``"0.5,0.5"`` (the command-line form) as well as a sequence."""
    if isinstance(value, str):
        parts = [v.strip() for v in value.split(",")]
        try:
            return tuple(float(v) if key != "d" else int(v) for v in parts)
        except ValueError:
            raise ConfigError(key, f"must be comma-separated numbers, got {value!r}") from None
    return value


def _policy_of(policy: Any, scheme: Any) -> str:
    if scheme is None:
        return "scheme1" if policy is None else _check_policy(policy)
    if str(scheme) not in ("1", "2"):
        raise ConfigError("scheme", f"must be 1 or 2, got {scheme!r}")
    named = f"scheme{scheme}"
    if policy is not None and policy != named:
        raise ConfigError("scheme", f"scheme={scheme} contradicts policy={policy!r}")
    return named


def _cli_system(gamma: Any, C: Any, d: Any, mu: float) -> System:
    """The system from command-line style arguments; errors name the flag (``C``)."""
    try:
        return System(_listify(gamma, "gamma"), _listify(C, "C"), _listify(d, "d"), mu)
    except ConfigError as err:
        if err.key != "capacity":
            raise
        raise ConfigError("C", str(err).removeprefix("capacity: ")) from None


def _cli_policy(
    system: System,
    policy: Any,
    scheme: Any,
    d_pool: Any,
    split: Any,
    lam_hat: Any,
) -> tuple[str, Any, Any]:
    """Policy name, split and pool size from the command-line style arguments."""
    policy = _policy_of(policy, scheme)
    if lam_hat is not None:
        if policy != "typed":
            raise ConfigError("lam_hat", "only policy 'typed' uses an assumed load")
        if split is not None:
            raise ConfigError("lam_hat", "give either split or lam_hat, not both")
        split = typed_split(system, lam_hat)
    elif split is not None:
        split = _listify(split, "split")
    return policy, split, d_pool


def simulate_summary(
    lam: float,
    gamma: Any,
    C: Any,
    d: Any,
    mu: float = 1.0,
    *,
    N: int,
    horizon: float,
    warmup: float,
    seed: int,
    policy: str | None = None,
    scheme: Any = None,
    d_pool: int | None = None,
    split: Any = None,
    lam_hat: float | None = None,
    batches: int = 20,
    start: str = "fixed_point",
    progress: bool = False,
) -> dict[str, Any]:
    """JSON-ready result of ``lbrepro simulate hetero``: the simulation beside the MF and RMF."""
    system = _cli_system(gamma, C, d, mu)
    lam = _check_lam(lam)
    policy, split, d_pool = _cli_policy(system, policy, scheme, d_pool, split, lam_hat)
    sim = simulate(
        system,
        lam,
        policy,
        N=N,
        horizon=horizon,
        warmup=warmup,
        seed=seed,
        split=split,
        d_pool=d_pool,
        batches=batches,
        start=start,
        progress=progress,
    )
    rr = refined(system, lam, policy, split=split, d_pool=d_pool)
    params: dict[str, Any] = {"lam": lam, **system.params(), "policy": policy, "start": start}
    if split is not None:
        params["split"] = [float(v) for v in split]
    if rr.mean_field.d_pool is not None:
        params["d_pool"] = rr.mean_field.d_pool
    return {
        "model": "hetero",
        "params": params,
        "mean_field": {
            "mean_sojourn": rr.mean_field.mean_sojourn,
            "mean_sojourn_refined": rr.mean_sojourn_at(N),
            "mean_jobs_per_type": [float(v) for v in rr.mean_field.mean_jobs_per_type],
        },
    } | sim.to_dict()


def solve(
    lam: float,
    gamma: Any,
    C: Any,
    d: Any,
    mu: float = 1.0,
    *,
    policy: str | None = None,
    scheme: Any = None,
    d_pool: int | None = None,
    split: Any = None,
    lam_hat: float | None = None,
) -> dict[str, Any]:
    """JSON-ready summary for ``lbrepro solve hetero``: MF fixed point(s), RMF, stability.

    ``gamma``, ``C``, ``d`` (and ``split``) are sequences or comma-separated strings.
    ``scheme=1|2`` is shorthand for ``policy="scheme1"|"scheme2"`` (the default is Scheme 1).
    ``lam_hat`` selects, for ``policy="typed"``, the split optimised for that assumed load
    (:func:`typed_split`) instead of ``split``/the proportional one.
    """
    system = _cli_system(gamma, C, d, mu)
    lam = _check_lam(lam)
    policy, split, d_pool = _cli_policy(system, policy, scheme, d_pool, split, lam_hat)
    rr = refined(system, lam, policy, split=split, d_pool=d_pool)
    mf = rr.mean_field
    probe = uniqueness_probe(system, lam, policy, split=split, d_pool=d_pool)
    cap = system.total_capacity
    stability: dict[str, Any] = {"capacity": cap, "load": lam / cap}
    if policy == "sqd":
        stability["sqd_lambda_star"] = sqd_stability_closed_form(system, mf.d_pool)
        stability["sqd_lambda_star_note"] = "reconstruction (models.md §A), see stability_boundary"
    if mf.split is not None:
        rho = lam * mf.split / (system.mu * np.array(system.gamma) * np.array(system.capacity))
        stability["type_loads"] = [float(v) for v in rho]
    params: dict[str, Any] = {"lam": lam, **system.params(), "policy": policy}
    if mf.split is not None:
        params["split"] = [float(v) for v in mf.split]
    if mf.d_pool is not None:
        params["d_pool"] = mf.d_pool
    if lam_hat is not None:
        params["lam_hat"] = float(lam_hat)
    return {
        "model": "hetero",
        "params": params,
        "method": "mf+rmf",
        "u": [[float(v) for v in u] for u in mf.u],
        "mean_jobs": mf.mean_jobs,
        "mean_jobs_per_type": [float(v) for v in mf.mean_jobs_per_type],
        "mean_sojourn": mf.mean_sojourn,
        "fixed_points": [
            {
                "start": name,
                "u": [[float(v) for v in u] for u in eq],
                "residual": res,
            }
            for name, eq, res in zip(probe.starts, probe.equilibria, probe.residuals, strict=True)
        ],
        "fixed_point_spread": probe.max_distance,
        "truncation": {"K": mf.K, "tail": mf.tail, "residual": mf.residual},
        "refined": {
            "V": [[float(v) for v in V] for V in rr.V],
            "u_coefficient_note": "E[u^(j)_n]_N ≈ u^(j)_n + V^(j)_n/N, N = total servers",
            "mean_jobs_coefficient": rr.mean_jobs_coefficient,
            "mean_sojourn_coefficient": rr.mean_sojourn_coefficient,
        },
        "stability": stability,
    }
