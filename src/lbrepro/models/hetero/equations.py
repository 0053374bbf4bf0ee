"""The mean field of every policy as a population process: rates, exact Jacobian, model.

The state is ``x_{j,n} = γ_j u^{(j)}_n`` (the fraction of *all* servers that are of type j and
hold ≥ n jobs), n = 1..K, so that every event moves one coordinate by ±1/N (what
:class:`~lbrepro.meanfield.population.PopulationModel` — and the refined mean field — needs):

- arrival to a type-j server holding exactly n jobs: jump ``+e_{j,n+1}``, rate ``λ A^{(j)}_n``,
  where ``A^{(j)}_n`` is the probability that a job is sent there;
- departure from a type-j server holding exactly n + 1 jobs: jump ``−e_{j,n+1}``, rate
  ``μC_j (x_{j,n+1} − x_{j,n+2})``.

In u-coordinates this is docs/models.md's
``du^{(j)}_{n+1}/dt = (λ/γ_j)A^{(j)}_n − μC_j(u^{(j)}_{n+1} − u^{(j)}_{n+2})``.
Truncation at K: ``u_{K+1} = 0`` (an arrival that would create level K + 1 is lost;
:func:`~lbrepro.models.hetero.fixed_point` enlarges K until that mass is negligible) and
``u_0 = 1``.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np
import scipy.sparse

from lbrepro.core.errors import ConfigError
from lbrepro.meanfield.population import PopulationModel
from lbrepro.models.hetero.system import (
    System,
    check_lam,
    check_policy,
    check_system,
    resolve_policy,
)

# Capacity ratios n·C_i/C_j closer than this (relatively) to an integer count as that integer:
# decimal capacities such as 0.1 and 0.3 are not exact binary ratios, and Scheme 2's tie rule
# (⌊·⌋ + 1 for faster types, ⌈·⌉ for slower ones) must see 3·0.1/0.3 as exactly 1.
_RATIO_SNAP = 1e-9


def u_of_x(system: System, x: np.ndarray) -> np.ndarray:
    """(M, K) array of u^{(j)}_n, n = 1..K, from the state x."""
    return np.asarray(x).reshape(system.num_types, -1) / np.array(system.gamma)[:, None]


def scheme2_indices(capacity: Sequence[float], K: int) -> np.ndarray:
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


def _powers(u: Any, k: int) -> list[Any]:
    """``[u**0, u**1, …, u**k]`` by repeated multiplication: ``_ipow(u, m)`` for every m ≤ k."""
    out: list[Any] = [1.0]
    if k >= 1:
        out.append(u)
    for _ in range(k - 1):
        out.append(out[-1] * u)
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
        # Powers built once by repeated multiplication: the same products as _ipow's.
        p0, p1 = _powers(s0, d_pool - 1), _powers(s1, d_pool - 1)
        g = p0[d_pool - 1]
        for k in range(1, d_pool):
            g = g + p0[d_pool - 1 - k] * p1[k]
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
    structure: dict[str, np.ndarray],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Analytic Jacobian of the drift ``f = β_arrivals − β_departures`` (see :func:`_rates`),
    as COO triplets (rows, cols, values; duplicates add up).

    Why not the jets Jacobian: it is exact too, but costs O(n) rate evaluations per call;
    the stability criterion integrates stiff ODEs whose solver asks for thousands of
    Jacobians. ``tests/test_hetero_meanfield.py`` checks the two agree for every policy.
    Where the entries sit depends only on the model, so the first call records it in
    ``structure`` (one dict per model) and later calls compute the values alone.
    """
    M = gamma.size
    X = np.concatenate([gamma[:, None], x.reshape(M, K), np.zeros((M, 1))], axis=1)
    U = X / gamma[:, None]
    n = np.arange(K)
    vals: list[np.ndarray] = []
    places: list[tuple[int, int, np.ndarray]] = []

    def add(j: int, i: int, level: np.ndarray, dx: np.ndarray) -> None:
        """∂β_arr[j, n]/∂x_{i, level(n)} += dx(n), for the levels that are state coordinates."""
        vals.append(np.broadcast_to(dx, (K,)))
        if not structure:
            places.append((j, i, np.broadcast_to(level, (K,))))

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
    if not structure:
        structure.update(_jacobian_structure(places, K, mu, capacity))
    arrivals = np.concatenate(vals)[structure["inside"]]
    return (
        structure["rows"],
        structure["cols"],
        np.concatenate([arrivals, structure["departures"]]),
    )


def _jacobian_structure(
    places: list[tuple[int, int, np.ndarray]], K: int, mu: float, capacity: np.ndarray
) -> dict[str, np.ndarray]:
    """Rows and columns of the Jacobian's entries, in the order :func:`_jacobian` lists them.

    Arrival terms first (only the levels that are state coordinates: ``inside`` selects
    them from the per-level values), then the departure terms, which are constant.
    """
    n = np.arange(K)
    rows, cols, inside = [], [], []
    for j, i, level in places:
        ok = (level >= 1) & (level <= K)
        rows.append(j * K + n[ok])
        cols.append(i * K + level[ok] - 1)
        inside.append(ok)
    departures = []
    for j in range(capacity.size):
        # Departures −μC_j(x_{j,n+1} − x_{j,n+2}) enter f with a minus sign.
        rows += [j * K + n, j * K + n[:-1]]
        cols += [j * K + n, j * K + n[:-1] + 1]
        departures += [np.full(K, -mu * capacity[j]), np.full(K - 1, mu * capacity[j])]
    out = {
        "rows": np.concatenate(rows),
        "cols": np.concatenate(cols),
        "inside": np.concatenate(inside),
        "departures": np.concatenate(departures),
    }
    for array in out.values():
        array.flags.writeable = False  # shared by every call: nobody may change them
    return out


class HeteroPopulationModel(PopulationModel):
    """A :class:`PopulationModel` whose Jacobian is the analytic sparse one.

    Everything else (drift, diffusion, second derivatives for the refined mean field,
    Newton, refined) is inherited and still derived from the transition list.
    """

    def __init__(self, jumps: Any, rates: Any, names: Sequence[str], jac: Any) -> None:
        """The transitions as for the base class, plus the analytic Jacobian in COO form."""
        super().__init__(jumps, rates, names=names)
        self._jac = jac

    def drift(self, x: Any) -> np.ndarray:
        """Mean-field drift: the jumps are ``[I; −I]``, so ``f = β_arrivals − β_departures``
        (the same value as the generic ``Lᵀβ``, without the sparse product)."""
        # The rates of a float state are a float array: no jet handling needed (the hot path
        # of every ODE integration and Newton step).
        r = self.rates(self._state(x))
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
    system = check_system(system)
    lam = check_lam(lam)
    policy = check_policy(policy)
    if isinstance(K, bool) or not isinstance(K, (int, np.integer)) or K < 1:
        raise ConfigError("K", f"truncation level must be an integer ≥ 1, got {K!r}")
    p, dp = resolve_policy(system, policy, split, d_pool)
    return build_model(system, lam, policy, int(K), p, dp)


def build_model(
    system: System, lam: float, policy: str, K: int, p: np.ndarray | None, dp: int | None
) -> PopulationModel:
    """:func:`population_model` on arguments already validated (the solvers build many)."""
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
        idx2=scheme2_indices(C, K) if policy == "scheme2" else None,
    )
    names = [f"x{j}_{n}" for j in range(M) for n in range(1, K + 1)]
    return HeteroPopulationModel(
        scipy.sparse.vstack([eye, -eye], format="csr"),
        partial(_rates, **params),
        names,
        partial(_jacobian, **params, structure={}),
    )
