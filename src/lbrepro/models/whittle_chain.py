"""The truncated joint K-server LPS-d chain (docs/models.md §B): its state, operators and solvers.

State n = (n_1, …, n_K), truncated at a buffer B per server. Per slot: the dispatcher picks a
server a from n (start of the slot), every server k loses D_k ~ Bin(min(d_k, n_k), q_k/min(d_k,
n_k)) jobs independently, then the arrival (probability p) joins server a. The cost of a slot
is Σ_k C_k(n_k) at its start. Truncation [reconstruction]: a policy may only pick a server with
n_a < B (then the arrival always fits, since n_a − D_a + 1 ≤ B); only when every server is full
is the arrival lost.

The departure operator factorises over servers, so it is applied axis by axis to the value (or
probability) array: along axis k, E[h(n − D_k e_k)] = Σ_j P(D_k = j | n_k) h(n − j e_k) is a
banded sum of shifted slices (j ≤ d_k, and for PS only the j whose probability exceeds 1e-18).
One Bellman or forward step costs O(K²·J·|states|). The banded sums, and the RVI update and
power-iteration step built from them, are numba kernels (the steps fused: no temporary arrays,
no Python per axis); each sums every element in the order of the plain array form
(:meth:`JointChain.action_values`, :meth:`JointChain.step_forward`), so both give the same
numbers to the last bit — the tests check that form against a brute-force transition matrix.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lbrepro.core.args import int_arg
from lbrepro.core.errors import ConfigError, ConvergenceError, UnstableError
from lbrepro.models import whittle as arm
from lbrepro.sim.compilation import njit

__all__ = ["JointChain", "System"]


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
        """The number of servers."""
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
        """The servers as (d, q) pairs, for error messages."""
        return " + ".join(
            f"(d={arm.d_label(d)}, q={q:g})" for q, d in zip(self.q, self.d, strict=True)
        )


def _axis_view(K: int, axis: int, sl: slice) -> tuple[slice, ...]:
    """An index selecting ``sl`` along ``axis`` of a K-dimensional box and all of the others."""
    idx = [slice(None)] * K
    idx[axis] = sl
    return tuple(idx)


@njit(cache=True)
def _banded_down(h, bands):
    """out[o, n, i] = Σ_j bands[j, n]·h[o, n − j, i], j ascending (the order numpy summed in).

    Loops run over the contiguous index innermost (n when the axis is the last one).
    """
    outer, levels, inner = h.shape
    out = np.empty_like(h)
    top = min(bands.shape[0], levels)
    if inner == 1:
        h2 = h.reshape(outer, levels)
        out2 = out.reshape(outer, levels)
        for o in range(outer):
            row, orow = h2[o], out2[o]
            for n in range(levels):
                orow[n] = bands[0, n] * row[n]
            for j in range(1, top):
                bj = bands[j]
                for m in range(levels - j):  # m = n − j ≥ 0: no negative-index check
                    orow[m + j] += bj[m + j] * row[m]
        return out
    for o in range(outer):
        for n in range(levels):
            b0 = bands[0, n]
            for i in range(inner):
                out[o, n, i] = b0 * h[o, n, i]
        for j in range(1, top):
            for m in range(levels - j):
                bj = bands[j, m + j]
                for i in range(inner):
                    out[o, m + j, i] += bj * h[o, m, i]
    return out


@njit(cache=True)
def _banded_up(mu, bands):
    """out[o, n, i] = Σ_j bands[j, n + j]·mu[o, n + j, i], j ascending: the transpose."""
    outer, levels, inner = mu.shape
    out = np.empty_like(mu)
    top = min(bands.shape[0], levels)
    if inner == 1:
        mu2 = mu.reshape(outer, levels)
        out2 = out.reshape(outer, levels)
        for o in range(outer):
            row, orow = mu2[o], out2[o]
            for n in range(levels):
                orow[n] = bands[0, n] * row[n]
            for j in range(1, top):
                bj = bands[j]
                for n in range(levels - j):
                    orow[n] += bj[n + j] * row[n + j]
        return out
    for o in range(outer):
        for n in range(levels):
            b0 = bands[0, n]
            for i in range(inner):
                out[o, n, i] = b0 * mu[o, n, i]
        for j in range(1, top):
            for n in range(levels - j):
                bj = bands[j, n + j]
                for i in range(inner):
                    out[o, n, i] += bj * mu[o, n + j, i]
    return out


@njit(cache=True)
def _blocks(size, levels, K, k):
    """(outer, levels, inner): axis k of a flat box of ``size`` states as 3-d blocks."""
    inner = 1
    for _ in range(K - 1 - k):
        inner *= levels
    return size // (levels * inner), levels, inner


@njit(cache=True)
def _along_all(x, bands, skip, transposed):
    """Every server's departures (but ``skip``'s) applied to flat x, servers in order 0..K−1."""
    K = len(bands)
    levels = bands[0].shape[1]
    for k in range(K):
        if k == skip:
            continue
        blocks = x.reshape(_blocks(x.size, levels, K, k))
        if transposed:
            x = _banded_up(blocks, bands[k]).reshape(x.size)
        else:
            x = _banded_down(blocks, bands[k]).reshape(x.size)
    return x


@njit(cache=True)
def _forward_step(mu, route, bands, p):
    """One slot of the distribution: the arithmetic of :meth:`JointChain.step_forward`, fused.

    (1 − p)·Dᵀμ, then for each server a: + p·shift_a(Dᵀ(route_a·μ)), with the top level of a
    keeping its mass (the arrival is lost) — each element summed in the same order as there.
    """
    K = len(bands)
    levels = bands[0].shape[1]
    size = mu.size
    stay = _along_all(mu.copy(), bands, -1, True)
    out = (1 - p) * stay
    for a in range(K):
        moved = _along_all(route[a] * mu, bands, -1, True)
        outer, _, inner = _blocks(size, levels, K, a)
        m3 = moved.reshape(outer, levels, inner)
        o3 = out.reshape(outer, levels, inner)
        for o in range(outer):
            for i in range(inner):
                o3[o, 0, i] += p * 0.0
            for n in range(1, levels - 1):
                for i in range(inner):
                    o3[o, n, i] += p * m3[o, n - 1, i]
            for i in range(inner):
                o3[o, levels - 1, i] += p * (m3[o, levels - 2, i] + m3[o, levels - 1, i])
    return out


@njit(cache=True)
def _bellman_step(h, cost, allowed, bands, p):
    """One RVI update: Th = C + min over allowed a of E[h(next) | a], as :meth:`JointChain.rvi`
    computes it (each element in the same order); returns (Th − Th(0), min, max of Th − h)."""
    K = len(bands)
    levels = bands[0].shape[1]
    size = h.size
    stay = _along_all(h.copy(), bands, -1, False)
    best = np.empty(size)
    for a in range(K):
        partial = _along_all(h.copy(), bands, a, False)
        outer, _, inner = _blocks(size, levels, K, a)
        p3 = partial.reshape(outer, levels, inner)
        up = np.empty_like(p3)  # h(m + e_a), h(m) at the top (the arrival is lost)
        for o in range(outer):
            for n in range(levels - 1):
                for i in range(inner):
                    up[o, n, i] = p3[o, n + 1, i]
            for i in range(inner):
                up[o, levels - 1, i] = p3[o, levels - 1, i]
        x = _banded_down(up, bands[a]).reshape(size)
        for idx in range(size):
            v = (1 - p) * stay[idx] + p * x[idx] if allowed[a, idx] else np.inf
            if a == 0 or not best[idx] < v:  # np.minimum: the first argument when smaller
                best[idx] = v
    th = cost + best
    diff = th - h
    return th - th[0], diff.min(), diff.max()


class JointChain:
    """The truncated joint chain of a :class:`System` with buffer B per server."""

    def __init__(self, system: System, B: int) -> None:
        """Build the departure bands, costs, allowed targets and boundary of the box."""
        self.system = system
        self.B = int_arg("B", B, 1)
        K = system.K
        self.shape = (self.B + 1,) * K
        self.size = (self.B + 1) ** K
        # bands[k][j, n_k] = P(D_k = j | n_k); axis k seen as (outer, B + 1, inner) blocks
        self.bands = [
            np.ascontiguousarray(arm.departure_bands(self.B, q, d))
            for q, d in zip(system.q, system.d, strict=True)
        ]
        self._band_tuple = tuple(self.bands)  # the fused kernels take a tuple of arrays
        self._blocks = [
            ((self.B + 1) ** k, self.B + 1, (self.B + 1) ** (K - 1 - k)) for k in range(K)
        ]
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
    def _departures_along(self, h: np.ndarray, k: int) -> np.ndarray:
        """E[h(n − D_k e_k)]: server k's departures applied to h (a banded sum along axis k)."""
        blocks = np.ascontiguousarray(h).reshape(self._blocks[k])
        return _banded_down(blocks, self.bands[k]).reshape(self.shape)

    def _departures_along_transposed(self, mu: np.ndarray, k: int) -> np.ndarray:
        """Server k's departures applied to a distribution mu (the transpose of the above)."""
        blocks = np.ascontiguousarray(mu).reshape(self._blocks[k])
        return _banded_up(blocks, self.bands[k]).reshape(self.shape)

    def departures(self, h: np.ndarray, skip: int | None = None) -> np.ndarray:
        """E_D[h(n − D)] (all servers except ``skip``)."""
        for k in range(self.system.K):
            if k != skip:
                h = self._departures_along(h, k)
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
            out[a] = (1 - p) * stay + p * self._departures_along(self._shift_up(partial, a), a)
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
        """Every server's departures applied to a distribution mu (one slot, no arrival)."""
        for k in range(self.system.K):
            mu = self._departures_along_transposed(mu, k)
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
        K, p = self.system.K, self.system.p
        routes = np.ascontiguousarray(route, dtype=float).reshape(K, self.size)
        mu = np.zeros(self.size)
        mu[0] = 1.0  # the empty system
        it = 0
        for it in range(1, max_iter + 1):  # noqa: B007 (reported after the loop)
            new = _forward_step(mu, routes, self._band_tuple, p)  # = self.step_forward
            change = float(np.abs(new.reshape(self.shape) - mu.reshape(self.shape)).sum())
            mu = new
            if change < tol:
                break
        else:
            raise ConvergenceError(f"power iteration: L1 change {change:.2e} after {it} steps")
        mu = mu.reshape(self.shape)
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
        K, p = self.system.K, self.system.p
        cost = self.cost.reshape(self.size)
        allowed = np.ascontiguousarray(self.allowed).reshape(K, self.size)
        h = np.zeros(self.size)
        it = 0
        for it in range(1, max_iter + 1):  # noqa: B007 (reported after the loop)
            # h ← C + min_a Q_a(h) − (same at the empty state), fused; lo, hi: span of Th − h
            h, lo, hi = _bellman_step(h, cost, allowed, self._band_tuple, p)
            lo, hi = float(lo), float(hi)
            if hi - lo < tol * max(1.0, abs(hi)):
                break
        else:
            raise ConvergenceError(f"RVI: span {hi - lo:.2e} after {it} iterations")
        h = h.reshape(self.shape)
        Q = np.where(self.allowed, self.action_values(h), np.inf)
        choice = np.argmin(Q, axis=0)
        route = np.stack([choice == a for a in range(self.system.K)]).astype(float)
        return {"route": route, "g_low": lo, "g_high": hi, "iterations": it, "h": h}
