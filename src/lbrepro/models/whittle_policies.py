"""The joint K-server LPS-d chain (models.md §B): dispatching policies, exact costs, simulation.

State n = (n_1, …, n_K), truncated at a buffer B per server. Per slot: the dispatcher picks a
server a from n (start of the slot), every server k loses D_k ~ Bin(min(d_k, n_k), q_k/min(d_k,
n_k)) jobs independently, then the arrival (probability p) joins server a. The cost of a slot
is Σ_k C_k(n_k) at its start. Truncation [reconstruction]: a policy may only pick a server with
n_a < B (then the arrival always fits, since n_a − D_a + 1 ≤ B); only when every server is full
is the arrival lost. B is acceptable when the stationary probability of the boundary
(some n_k = B) is below the tolerance (1e-6): that mass bounds what the truncation changes.

The departure operator factorises over servers, so it is applied axis by axis to the value (or
probability) array: along axis k, E[h(n − D_k e_k)] = Σ_j P(D_k = j | n_k) h(n − j e_k) is a
banded sum of shifted slices (j ≤ d_k, and for PS only the j whose probability exceeds 1e-18).
Nothing loops over states in Python; one Bellman or forward step costs O(K²·J·|states|).

Policies [reconstruction of the tie rules]: Whittle (smallest W_k(n_k)), JSQ (fewest jobs),
JSEW (smallest (n_k + 1)/q_k), all with ties to the larger q_k and then to the server listed
first; RSA (uniform over the servers with room); optimal (relative value iteration).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from numba import njit

from lbrepro.core.args import int_arg
from lbrepro.core.errors import ConfigError, ConvergenceError, UnstableError
from lbrepro.core.rng import seed_sequence, xoshiro_state
from lbrepro.core.stats import MICRO_BATCHES, batch_means_ci
from lbrepro.models import whittle as arm
from lbrepro.sim.runlength import check_budget, run_micro_batches
from lbrepro.sim.xoshiro import uniform

__all__ = [
    "POLICIES",
    "JointChain",
    "PolicyCosts",
    "System",
    "choose_buffer",
    "cli_simulate",
    "cli_solve",
    "compare_policies",
    "priorities",
    "rsa_cost",
    "simulate",
]

POLICIES = ("optimal", "whittle", "jsq", "jsew", "rsa")
TRUNCATION_TOL = 1e-6
# Largest joint chain choose_buffer builds (≈ 8 bytes × ~10 arrays each: ~400 MB).
MAX_STATES = 5_000_000


@dataclass(frozen=True)
class System:
    """K LPS-d servers fed by Bernoulli(p) arrivals, with a per-server cost C_k(n)."""

    p: float
    q: tuple[float, ...]
    d: tuple[float, ...]
    cost: str = "linear"
    beta: float = 0.0

    @classmethod
    def make(
        cls, p: Any, q: Sequence[Any], d: Sequence[Any], cost: str = "linear", beta: Any = 0.0
    ) -> System:
        """Validated system: 0 < p < min(1, Σq), q_k ∈ (0, 1], d_k ≥ 1 or ∞."""
        qs = tuple(arm.check_q(v, f"q[{i}]") for i, v in enumerate(q))
        ds = tuple(arm.parse_d(v, f"d[{i}]") for i, v in enumerate(d))
        if not qs:
            raise ConfigError("q", "need at least one server")
        if len(qs) != len(ds):
            raise ConfigError("d", f"{len(ds)} values of d for {len(qs)} servers")
        p = arm.check_p(p)
        if p >= sum(qs):
            raise UnstableError(f"p: arrival probability {p} >= total capacity Σq = {sum(qs):g}")
        cost, beta = arm.check_cost(cost, beta)
        return cls(p, qs, ds, cost, beta)

    @property
    def K(self) -> int:  # noqa: N802 (K servers, as in the paper)
        return len(self.q)

    def server_costs(self, nmax: int) -> np.ndarray:
        """C_k(n), shape (K, nmax + 1)."""
        return np.array(
            [
                arm.cost_values(nmax, q, d, self.cost, self.beta)
                for q, d in zip(self.q, self.d, strict=True)
            ]
        )

    def label(self) -> str:
        return " + ".join(
            f"(d={arm.d_label(d)}, q={q:g})" for q, d in zip(self.q, self.d, strict=True)
        )


def _axis_view(K: int, axis: int, sl: slice) -> tuple[slice, ...]:
    idx = [slice(None)] * K
    idx[axis] = sl
    return tuple(idx)


class JointChain:
    """The truncated joint chain of a :class:`System` with buffer B per server."""

    def __init__(self, system: System, B: int) -> None:
        self.system = system
        self.B = int_arg("B", B, 1)
        K = system.K
        self.shape = (self.B + 1,) * K
        self.size = (self.B + 1) ** K
        # bands[k][j] broadcast along axis k: P(D_k = j | n_k)
        self.bands = []
        for k, (q, d) in enumerate(zip(system.q, system.d, strict=True)):
            table = arm.departure_bands(self.B, q, d)
            bshape = [1] * K
            bshape[k] = self.B + 1
            self.bands.append([table[j].reshape(bshape) for j in range(table.shape[0])])
        costs = system.server_costs(self.B)
        self.cost = np.zeros(self.shape)
        for k in range(K):
            self.cost = self.cost + costs[k].reshape([-1 if i == k else 1 for i in range(K)])
        grids = np.indices(self.shape)
        self.n = grids  # n[k] = n_k on the box
        room = grids < self.B
        none = ~room.any(axis=0)
        # Allowed targets: servers with room; if every server is full, any (the job is lost).
        self.allowed = room | none[None]
        self.boundary = (grids == self.B).any(axis=0)

    # -- operators ---------------------------------------------------------------------------
    def _dep_axis(self, h: np.ndarray, k: int) -> np.ndarray:
        bands = self.bands[k]
        out = bands[0] * h
        K = self.system.K
        for j in range(1, len(bands)):
            dst = _axis_view(K, k, slice(j, None))
            src = _axis_view(K, k, slice(None, -j))
            out[dst] += bands[j][dst] * h[src]
        return out

    def _dep_axis_t(self, mu: np.ndarray, k: int) -> np.ndarray:
        bands = self.bands[k]
        out = bands[0] * mu
        K = self.system.K
        for j in range(1, len(bands)):
            dst = _axis_view(K, k, slice(None, -j))
            src = _axis_view(K, k, slice(j, None))
            out[dst] += bands[j][src] * mu[src]
        return out

    def departures(self, h: np.ndarray, skip: int | None = None) -> np.ndarray:
        """E_D[h(n − D)] (all servers except ``skip``)."""
        for k in range(self.system.K):
            if k != skip:
                h = self._dep_axis(h, k)
        return h

    def _shift_up(self, h: np.ndarray, a: int) -> np.ndarray:
        """h(m + e_a), with h(m) at m_a = B (the arrival is lost)."""
        K = self.system.K
        out = np.empty_like(h)
        out[_axis_view(K, a, slice(None, -1))] = h[_axis_view(K, a, slice(1, None))]
        out[_axis_view(K, a, slice(-1, None))] = h[_axis_view(K, a, slice(-1, None))]
        return out

    def _shift_in(self, mu: np.ndarray, a: int) -> np.ndarray:
        """Mass at m moved to m + e_a (kept at m_a = B: lost arrival)."""
        K = self.system.K
        out = np.zeros_like(mu)
        out[_axis_view(K, a, slice(1, None))] = mu[_axis_view(K, a, slice(None, -1))]
        out[_axis_view(K, a, slice(-1, None))] += mu[_axis_view(K, a, slice(-1, None))]
        return out

    def action_values(self, h: np.ndarray) -> np.ndarray:
        """E[h(next) | n, route to a], shape (K, *box).

        Departures on the other axes commute with the arrival shift on axis a, so
        E[h(n − D + e_a)] = Dep_a(shift_a(Dep_{−a} h)).
        """
        p = self.system.p
        K = self.system.K
        stay = self.departures(h)
        out = np.empty((K, *self.shape))
        for a in range(K):
            partial = self.departures(h, skip=a)
            out[a] = (1 - p) * stay + p * self._dep_axis(self._shift_up(partial, a), a)
        return out

    def step_forward(self, mu: np.ndarray, route: np.ndarray) -> np.ndarray:
        """One slot of the distribution under routing probabilities route[a, n]."""
        p = self.system.p
        out = (1 - p) * self.departures_transposed(mu)
        for a in range(self.system.K):
            moved = self.departures_transposed(route[a] * mu)
            out += p * self._shift_in(moved, a)
        return out

    def departures_transposed(self, mu: np.ndarray) -> np.ndarray:
        for k in range(self.system.K):
            mu = self._dep_axis_t(mu, k)
        return mu

    # -- policies ------------------------------------------------------------------------------
    def index_route(self, prio: np.ndarray) -> np.ndarray:
        """One-hot routing of the index rule argmin_k prio[k, n_k] over allowed servers.

        Ties (relative 1e-12) go to the larger q_k, then to the server listed first.
        """
        K = self.system.K
        vals = np.stack([prio[k][self.n[k]] for k in range(K)])
        vals = np.where(self.allowed, vals, np.inf)
        best = vals.min(axis=0)
        tie = vals <= best + 1e-12 * np.maximum(1.0, np.abs(best))
        qs = np.array(self.system.q).reshape((K,) + (1,) * K)
        score = np.where(tie & self.allowed, qs, -np.inf)
        choice = np.argmax(score, axis=0)  # first maximum: larger q, then first listed
        return np.stack([choice == a for a in range(K)]).astype(float)

    def rsa_route(self) -> np.ndarray:
        """Uniform over the servers with room."""
        allowed = self.allowed.astype(float)
        return allowed / allowed.sum(axis=0)

    def evaluate(
        self, route: np.ndarray, tol: float = 1e-13, max_iter: int = 200_000
    ) -> dict[str, float]:
        """Stationary average cost and boundary mass under ``route`` (forward power iteration).

        Stops when the L1 change per step falls below ``tol``; the remaining error of the
        average cost is about that change times the relaxation time (checked against direct
        sparse solves in the tests).
        """
        mu = np.zeros(self.shape)
        mu[(0,) * self.system.K] = 1.0
        it = 0
        for it in range(1, max_iter + 1):  # noqa: B007 (reported after the loop)
            new = self.step_forward(mu, route)
            change = float(np.abs(new - mu).sum())
            mu = new
            if change < tol:
                break
        else:
            raise ConvergenceError(f"power iteration: L1 change {change:.2e} after {it} steps")
        mu /= mu.sum()
        return {
            "cost": float((mu * self.cost).sum()),
            "boundary_mass": float(mu[self.boundary].sum()),
            "mean_jobs": float(sum((mu * self.n[k]).sum() for k in range(self.system.K))),
            "iterations": it,
        }

    def rvi(self, tol: float = 1e-9, max_iter: int = 200_000) -> dict[str, Any]:
        """Optimal routing by relative value iteration (vectorised Bellman updates).

        h ← C + min_a E[h(next) | a] − (same at state 0); stops when span(Th − h) < tol·g.
        The bounds min(Th − h) ≤ g* ≤ max(Th − h) bracket the optimal average cost.
        """
        h = np.zeros(self.shape)
        origin = (0,) * self.system.K
        it = 0
        for it in range(1, max_iter + 1):  # noqa: B007 (reported after the loop)
            Q = np.where(self.allowed, self.action_values(h), np.inf)
            Th = self.cost + Q.min(axis=0)
            diff = Th - h
            lo, hi = float(diff.min()), float(diff.max())
            h = Th - Th[origin]
            if hi - lo < tol * max(1.0, abs(hi)):
                break
        else:
            raise ConvergenceError(f"RVI: span {hi - lo:.2e} after {it} iterations")
        Q = np.where(self.allowed, self.action_values(h), np.inf)
        choice = np.argmin(Q, axis=0)
        route = np.stack([choice == a for a in range(self.system.K)]).astype(float)
        return {"route": route, "g_low": lo, "g_high": hi, "iterations": it, "h": h}


def priorities(system: System, policy: str, nmax: int) -> np.ndarray:
    """Index table prio[k, n], n = 0..nmax, of an index policy (smallest is served)."""
    n = np.arange(nmax + 1, dtype=float)
    if policy == "whittle":
        return np.array(
            [
                arm.whittle_indices(system.p, q, d, nmax, system.cost, system.beta)
                for q, d in zip(system.q, system.d, strict=True)
            ]
        )
    if policy == "jsq":
        return np.tile(n, (system.K, 1))
    if policy == "jsew":
        return np.array([(n + 1) / q for q in system.q])
    raise ConfigError("policy", f"not an index policy: {policy!r}")


def rsa_cost(system: System, nmax: int = 200, tol: float = 1e-13) -> float:
    """Exact RSA cost: server k alone sees Bernoulli(p/K) arrivals (inf if p/K ≥ q_k).

    RSA needs no joint chain: routing is independent of the state, so each server's marginal
    is the single-server chain with arrival probability p/K. Its truncation level doubles
    (sparse banded chain) until the mass at the top is below ``tol``; a load within 1e-9 of
    q_k counts as unstable (p/K = q_k can come out a rounding error below q_k).
    """
    total = 0.0
    lam = system.p / system.K
    for q, d in zip(system.q, system.d, strict=True):
        if lam >= q * (1 - 1e-9):
            return math.inf
        n = nmax
        while True:
            pi = _single_server_stationary(n, lam, q, d)
            if pi[-1] < tol:
                break
            if n >= 100_000:
                raise ConvergenceError(
                    f"RSA: server (d={arm.d_label(d)}, q={q:g}) at load {lam / q:.6f} needs more "
                    f"than {n} levels"
                )
            n *= 2
        total += float(pi @ arm.cost_values(n, q, d, system.cost, system.beta))
    return total


def _single_server_stationary(nmax: int, lam: float, q: float, d: float) -> np.ndarray:
    """Stationary distribution of one always-active server on {0..nmax} (sparse solve)."""
    bands = arm.departure_bands(nmax, q, d)
    n = np.arange(nmax + 1)
    rows, cols, vals = [], [], []
    for j in range(bands.shape[0]):
        ok = n >= j
        for arrive, prob in ((0, 1 - lam), (1, lam)):
            dest = np.minimum(n[ok] - j + arrive, nmax)  # arrival lost at the top
            rows.append(n[ok])
            cols.append(dest)
            vals.append(prob * bands[j, ok])
    P = sp.csr_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
        shape=(nmax + 1, nmax + 1),
    )
    A = (sp.eye(nmax + 1) - P).T.tolil()
    A[0, :] = 1.0
    b = np.zeros(nmax + 1)
    b[0] = 1.0
    return spla.spsolve(A.tocsc(), b)


@dataclass
class PolicyCosts:
    """Exact average costs of every policy on one truncated chain."""

    system: System
    B: int
    costs: dict[str, float]
    boundary_mass: dict[str, float]
    g_bounds: tuple[float, float]
    iterations: dict[str, int] = field(default_factory=dict)
    route: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    prio: dict[str, np.ndarray] = field(default_factory=dict, repr=False)

    def gap(self, policy: str) -> float:
        """Relative gap to the optimal policy, in %."""
        return 100.0 * (self.costs[policy] / self.costs["optimal"] - 1.0)


def compare_policies(
    system: System,
    B: int,
    policies: Sequence[str] = POLICIES,
    tol: float = TRUNCATION_TOL,
    check_truncation: bool = True,
) -> PolicyCosts:
    """Exact average cost of each policy (and the optimum by RVI) on the chain truncated at B.

    A policy whose boundary mass exceeds ``tol`` means B is too small: ConfigError on ``B``.
    RSA is computed server by server without truncation (:func:`rsa_cost`; +∞ when
    p/K ≥ min q_k); the joint chain's RSA routing is cross-checked against it in the tests.
    """
    chain = JointChain(system, B)
    costs: dict[str, float] = {}
    mass: dict[str, float] = {}
    iters: dict[str, int] = {}
    routes: dict[str, np.ndarray] = {}
    prios: dict[str, np.ndarray] = {}
    bounds = (math.nan, math.nan)
    for policy in policies:
        if policy == "optimal":
            res = chain.rvi()
            route = res["route"]
            bounds = (res["g_low"], res["g_high"])
            iters["optimal_rvi"] = res["iterations"]
        elif policy == "rsa":
            # exact and untruncated (its tails are far heavier than the others')
            costs[policy], mass[policy] = rsa_cost(system), 0.0
            continue
        else:
            prios[policy] = priorities(system, policy, chain.B)
            route = chain.index_route(prios[policy])
        ev = chain.evaluate(route)
        costs[policy], mass[policy] = ev["cost"], ev["boundary_mass"]
        iters[policy] = ev["iterations"]
        routes[policy] = route
        if check_truncation and ev["boundary_mass"] >= tol:
            raise ConfigError(
                "B",
                f"buffer {B} too small: boundary mass {ev['boundary_mass']:.2e} under {policy} "
                f">= truncation tolerance {tol:g} ({system.label()}, p={system.p:g})",
            )
    return PolicyCosts(system, chain.B, costs, mass, bounds, iters, routes, prios)


def choose_buffer(
    system: System,
    start: int = 10,
    limit: int = 400,
    tol: float = TRUNCATION_TOL,
    policies: Sequence[str] = POLICIES,
) -> PolicyCosts:
    """Grow B (×1.5) from ``start`` until every stable policy's boundary mass is below ``tol``."""
    B = int_arg("B", start, 1)
    while True:
        try:
            return compare_policies(system, B, policies, tol)
        except ConfigError as err:
            if err.key != "B":
                raise
            grown = min(limit, math.ceil(B * 1.5))
            if limit <= B or (grown + 1) ** system.K > MAX_STATES:
                raise ConfigError(
                    "B",
                    f"no buffer up to {B} ({(B + 1) ** system.K} states; limits {limit} and "
                    f"{MAX_STATES} states) reaches truncation tolerance {tol:g}: {err}",
                ) from None
            B = grown


# ------------------------------------------------------------------------------ simulation
_KIND = {"index": 0, "rsa": 1, "table": 2}


@njit(cache=True)
def _departures(state, n, q, d):
    k = n if n < d else d
    if k == 0:
        return 0
    s = q / k
    if s >= 1.0:
        return k
    # Inverse transform from j = 0: expected work 1 + E[D] = 1 + q.
    prob = (1.0 - s) ** k
    cdf = prob
    u = uniform(state)
    j = 0
    ratio = s / (1.0 - s)
    while u > cdf and j < k:
        prob *= (k - j) / (j + 1.0) * ratio
        j += 1
        cdf += prob
    return j


@njit(cache=True)
def _slot_cost(n, q, d, meanvar, beta):
    c = float(n)
    if meanvar and n > 0:
        k = n if n < d else d
        c += beta * (q + q * q * (1.0 - 1.0 / k))
    return c


@njit(cache=True)
def _simulate_kernel(
    state, p, q, d, meanvar, beta, kind, prio, table, B, slots, warmup, batches, n
):
    K = q.shape[0]
    per_batch = slots // batches
    sums = np.zeros(batches)
    jobs = np.zeros(batches)
    outside = 0
    total = warmup + per_batch * batches
    for t in range(total):
        # decision on the state at the start of the slot
        a = 0
        if kind == 1:
            a = int(uniform(state) * K)
            if a >= K:
                a = K - 1
        else:
            inside = True
            for k in range(K):
                if n[k] >= B:
                    inside = False
            if kind == 2 and inside:
                idx = 0
                for k in range(K):
                    idx = idx * (B + 1) + n[k]
                a = table[idx]
            else:
                if kind == 2:
                    outside += 1
                best = np.inf
                bq = -1.0
                for k in range(K):
                    v = prio[k, n[k]] if n[k] < prio.shape[1] else np.inf
                    if v < best - 1e-12 * max(1.0, abs(best)) or (
                        v <= best + 1e-12 * max(1.0, abs(best)) and q[k] > bq
                    ):
                        best = v
                        bq = q[k]
                        a = k
        if t >= warmup:
            b = (t - warmup) // per_batch
            c = 0.0
            m = 0
            for k in range(K):
                c += _slot_cost(n[k], q[k], d[k], meanvar, beta)
                m += n[k]
            sums[b] += c
            jobs[b] += m
        for k in range(K):
            n[k] -= _departures(state, n[k], q[k], d[k])
        if uniform(state) <= p:
            n[a] += 1
    return sums / per_batch, jobs / per_batch, outside


def simulate(
    system: System,
    policy: str,
    slots: int,
    warmup: int,
    seed: np.random.SeedSequence | int,
    batches: int = 20,
    costs: PolicyCosts | None = None,
    prio_nmax: int = 400,
) -> dict[str, Any]:
    """Simulate the slotted system under ``policy`` (no buffer), batch-means CI of the cost.

    ``warmup`` slots are a minimum warm-up; MSER-5 and the batching rule of
    :mod:`lbrepro.sim.runlength` choose the rest, and the run doubles while the batch means
    stay correlated. ``slots`` in the result is the number run, ``batches`` the number used.

    Index policies use their priority tables up to ``prio_nmax`` jobs; the optimal policy uses
    the RVI action table of ``costs`` inside its box and JSEW outside it (counted in
    ``outside_slots``; the box holds all but < 1e-6 of the stationary mass).
    """
    slots = int_arg("slots", slots, 2)
    warmup = int_arg("warmup", warmup, 0)
    batches = int_arg("batches", batches, 2)
    K = system.K
    d_int = np.array([min(d, 1 << 30) for d in system.d], dtype=np.int64)
    table = np.zeros(1, dtype=np.int64)
    B = 0
    if policy == "rsa":
        kind, prio = _KIND["rsa"], np.zeros((K, 1))
    elif policy == "optimal":
        if costs is None or "optimal" not in costs.route:
            raise ConfigError("policy", "simulating the optimal policy needs its RVI table")
        kind = _KIND["table"]
        B = costs.B
        table = np.argmax(costs.route["optimal"], axis=0).astype(np.int64).ravel()
        prio = priorities(system, "jsew", prio_nmax)
    elif policy in ("whittle", "jsq", "jsew"):
        kind, prio = _KIND["index"], priorities(system, policy, prio_nmax)
    else:
        raise ConfigError("policy", f"unknown policy {policy!r}; known: {', '.join(POLICIES)}")
    total = slots + warmup  # ``slots`` measured after the (minimum) warm-up, as before
    check_budget(float(total), what=f"this run ({total} slots)")
    state = xoshiro_state(seed_sequence(seed))
    n = np.zeros(K, dtype=np.int64)
    prio_c = np.ascontiguousarray(prio, dtype=float)
    q_arr = np.array(system.q)
    meanvar = system.cost == "meanvar"
    # Micro-batches of slots from slot 0 (see lbrepro.sim.runlength): the kernel returns
    # after each, so Ctrl-C stops a run; the warm-up is a minimum, MSER-5 may discard more.
    micro_cost: list[float] = []
    micro_jobs: list[float] = []
    done = 0
    outside = 0

    def step(t_end: float) -> int:
        nonlocal done, outside
        m = max(1, round(t_end) - done)
        c, j, out = _simulate_kernel(
            state, system.p, q_arr, d_int, meanvar, system.beta, kind, prio_c, table, B, m, 0,
            1, n,
        )  # fmt: skip
        micro_cost.append(float(c[0]))
        micro_jobs.append(float(j[0]))
        outside += int(out)
        done += m
        return m

    run = run_micro_batches(
        step,
        lambda: np.array(micro_cost),
        horizon=float(total),
        warmup=float(warmup),
        min_batches=batches,
        events_per_time=1.0,
        micro=min(MICRO_BATCHES, total),
    )
    bm = run.batching
    est = batch_means_ci(bm.merge(np.array(micro_cost)), lower=0.0, ar1=True)
    jobs = batch_means_ci(bm.merge(np.array(micro_jobs)), lower=0.0, ar1=True)
    return {
        "cost": est.mean,
        "ci": (est.low, est.high),
        "mean_jobs": jobs.mean,
        "mean_jobs_ci": (jobs.low, jobs.high),
        "slots": done - round(run.warmup_used),
        "batches": bm.batches,
        "warmup_used": round(run.warmup_used),
        "converged": run.converged,
        "outside_slots": int(outside),
    }


# ------------------------------------------------------------------------------ CLI
def _split(text: Any) -> list[str]:
    if isinstance(text, str):
        return [t for t in text.split(",") if t.strip()]
    if isinstance(text, Sequence):
        return [str(t) for t in text]
    return [str(text)]


def cli_solve(
    p: float,
    q: str,
    d: str,
    cost: str = "linear",
    beta: float = 0.0,
    nmax: int = 20,
    B: int = 20,
) -> dict[str, Any]:
    """``lbrepro solve whittle``: indices of one server, or (K ≥ 2) every policy's exact cost.

    ``q`` and ``d`` are comma-separated lists (``--q 0.3,0.6 --d 1,inf``). One server: the
    Whittle indices W(0..nmax) (and the FCFS closed form when d = 1). Several: the indices
    of each server plus the exact average cost and gap of every policy, B grown from ``B``
    until the truncated mass is below 1e-6.
    """
    qs, ds = _split(q), _split(d)
    if len(qs) == 1 and len(ds) == 1:
        return arm.solve(p, qs[0], ds[0], cost, beta, nmax)
    system = System.make(p, qs, ds, cost, beta)
    res = choose_buffer(system, start=B)
    return {
        "model": "whittle",
        "params": {
            "p": system.p,
            "q": list(system.q),
            "d": [arm.d_label(v) for v in system.d],
            "cost": system.cost,
            "beta": system.beta,
            "B": res.B,
        },
        "method": "mdp",
        "index": [
            [float(v) if math.isfinite(v) else None for v in row]
            for row in priorities(system, "whittle", nmax)
        ],
        "policy_cost": {k: (v if math.isfinite(v) else None) for k, v in res.costs.items()},
        "gap_pct": {k: (res.gap(k) if math.isfinite(res.costs[k]) else None) for k in res.costs},
        "boundary_mass": res.boundary_mass,
        "optimal_bounds": list(res.g_bounds),
    }


def cli_simulate(
    p: float,
    q: str,
    d: str,
    policy: str = "whittle",
    cost: str = "linear",
    beta: float = 0.0,
    horizon: float = 1e6,
    warmup: float | None = None,
    seed: int = 1,
    batches: int = 20,
    B: int = 20,
) -> dict[str, Any]:
    """``lbrepro simulate whittle``: the slotted K-server system under one policy.

    ``horizon`` and ``warmup`` are numbers of slots. The optimal policy first needs its RVI
    table (B grown from ``B`` as in :func:`cli_solve`); the exact cost is returned alongside.
    """
    import time

    system = System.make(p, _split(q), _split(d), cost, beta)
    slots = int(horizon)
    warm = int(0.01 * slots if warmup is None else warmup)
    costs = None
    exact = None
    if policy == "optimal":
        costs = choose_buffer(system, start=B, policies=["optimal"])
        exact = costs.costs["optimal"]
    t = time.perf_counter()
    out = simulate(system, policy, slots, warm, seed, batches, costs=costs, prio_nmax=200)
    wall = time.perf_counter() - t
    return {
        "model": "whittle",
        "params": {
            "p": system.p,
            "q": list(system.q),
            "d": [arm.d_label(v) for v in system.d],
            "cost": system.cost,
            "beta": system.beta,
            "policy": policy,
        },
        "mean_cost": out["cost"],
        "mean_jobs": out["mean_jobs"],
        "ci": {"mean_cost": list(out["ci"]), "mean_jobs": list(out["mean_jobs_ci"])},
        "exact_cost": exact,
        "N": system.K,
        "seed": seed,
        "events": out["slots"] + warm,
        "events_per_second": (out["slots"] + warm) / wall if wall > 0 else None,
    }
