"""The slotted K-server LPS-d system (Ayesta et al. (2018)) under a routing rule: a numba kernel.

Per slot: the dispatcher picks a server a from the state at the start of the slot, every
server k loses D_k ~ Bin(min(d_k, n_k), q_k/min(d_k, n_k)) jobs, then the arrival (probability
p) joins server a; the slot's cost Σ_k C_k(n_k) is charged on its start-of-slot state, with
C(n) = n or n + β E[D(n)²], E[D(n)²] = q + q²(1 − 1/min(d, n)) (the model's cost formulas,
docs/models.md §B). No buffer: queues are unbounded.

The kernel knows three routing rules, given as tables by the caller (the model computes the
policies): the smallest priority ``prio[k, n_k]`` with ties to the larger q_k then the first
server (index policies), uniform (RSA), and an action table over the box {0..B}^K with the
index rule outside it (the optimal policy of a truncated chain).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lbrepro.core.args import run_length
from lbrepro.core.rng import seed_sequence, xoshiro_state
from lbrepro.core.stats import MICRO_BATCHES
from lbrepro.sim.compilation import njit
from lbrepro.sim.runlength import check_budget, run_micro_batches
from lbrepro.sim.xoshiro import uniform

__all__ = [
    "ROUTE_INDEX",
    "ROUTE_TABLE",
    "ROUTE_UNIFORM",
    "SlottedRun",
    "simulate_slotted",
]

#: Routing rules of the kernel: smallest priority, uniform, action table inside a box.
ROUTE_INDEX = 0
ROUTE_UNIFORM = 1
ROUTE_TABLE = 2


# Typical slots per second on one core (2–3 servers), from the full run's benchmark files on a
# 2-core VM. Only an estimate: cheap points share a job by it (lbrepro.core.packing).
EVENTS_PER_SECOND = 4.0e6


@njit(cache=True)
def binomial_departures(state, n, q, d):
    """Departures of one server in one slot: Bin(min(d, n), q/min(d, n)) by inverse transform."""
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
def slot_cost(n, q, d, meanvar, beta):
    """Cost of one server with n jobs for one slot: n, plus β E[D(n)²] for mean–variance."""
    c = float(n)
    if meanvar and n > 0:
        k = n if n < d else d
        c += beta * (q + q * q * (1.0 - 1.0 / k))
    return c


@njit(cache=True)
def slotted_kernel(state, p, q, d, meanvar, beta, kind, prio, table, B, slots, warmup, batches, n):
    """Run ``warmup`` + ``slots`` slots from state ``n`` (updated in place).

    Returns the mean cost, mean number of jobs and mean served capacity Σ_k q_k·1{n_k > 0}
    (start-of-slot state: a busy server's expected departures are exactly q_k) of each of
    ``batches`` equal batches after the warm-up, and the number of slots the table rule spent
    outside its box. The served capacity draws no random number: in equilibrium its mean is
    p (work conservation, arrivals = departures).
    """
    K = q.shape[0]
    per_batch = slots // batches
    sums = np.zeros(batches)
    jobs = np.zeros(batches)
    served = np.zeros(batches)
    outside = 0
    total = warmup + per_batch * batches
    for t in range(total):
        # decision on the state at the start of the slot
        a = 0
        if kind == ROUTE_UNIFORM:
            a = int(uniform(state) * K)
            if a >= K:
                a = K - 1
        else:
            inside = True
            for k in range(K):
                if n[k] >= B:
                    inside = False
            if kind == ROUTE_TABLE and inside:
                idx = 0
                for k in range(K):
                    idx = idx * (B + 1) + n[k]
                a = table[idx]
            else:
                if kind == ROUTE_TABLE:
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
            w = 0.0
            for k in range(K):
                c += slot_cost(n[k], q[k], d[k], meanvar, beta)
                m += n[k]
                if n[k] > 0:
                    w += q[k]
            sums[b] += c
            jobs[b] += m
            served[b] += w
        for k in range(K):
            n[k] -= binomial_departures(state, n[k], q[k], d[k])
        if uniform(state) <= p:
            n[a] += 1
    return sums / per_batch, jobs / per_batch, served / per_batch, outside


@dataclass(frozen=True)
class SlottedRun:
    """Result of :func:`simulate_slotted`: cost, jobs and served capacity Σ_k q_k·1{n_k > 0}
    (= p in equilibrium, by work conservation) with batch-means 95% CIs."""

    cost: float
    cost_ci: tuple[float, float]
    mean_jobs: float
    mean_jobs_ci: tuple[float, float]
    served: float
    served_ci: tuple[float, float]
    slots: int
    batches: int
    warmup_used: int
    converged: bool
    outside_slots: int


def simulate_slotted(
    p: float,
    q: np.ndarray,
    d: np.ndarray,
    meanvar: bool,
    beta: float,
    kind: int,
    prio: np.ndarray,
    table: np.ndarray,
    B: int,
    slots: int,
    warmup: int,
    seed: np.random.SeedSequence | int,
    batches: int,
) -> SlottedRun:
    """Simulate ``warmup`` + ``slots`` slots from the empty system, batch-means CI of the cost.

    ``warmup`` is a minimum warm-up: MSER-5 and the batching rule of :mod:`lbrepro.sim.runlength`
    choose the rest, and the run doubles while the batch means stay correlated. ``slots`` in
    the result is the number measured, ``batches`` the number used. ``d`` holds integers (a
    large one for PS); ``prio``, ``table`` and ``B`` describe the routing rule ``kind``.
    """
    run_length(slots + warmup, warmup, batches)
    total = slots + warmup  # ``slots`` measured after the (minimum) warm-up
    check_budget(float(total), what=f"this run ({total} slots)")
    state = xoshiro_state(seed_sequence(seed))
    n = np.zeros(q.shape[0], dtype=np.int64)
    prio_c = np.ascontiguousarray(prio, dtype=float)
    # Micro-batches of slots from slot 0 (see lbrepro.sim.runlength): the kernel returns
    # after each, so Ctrl-C stops a run; the warm-up is a minimum, MSER-5 may discard more.
    micro_cost: list[float] = []
    micro_jobs: list[float] = []
    micro_served: list[float] = []
    done = 0
    outside = 0

    def step(t_end: float) -> int:
        """Run the kernel up to slot ``t_end`` as one micro-batch; returns the slots run."""
        nonlocal done, outside
        m = max(1, round(t_end) - done)
        c, j, s, out = slotted_kernel(
            state, p, q, d, meanvar, beta, kind, prio_c, table, B, m, 0, 1, n
        )
        micro_cost.append(float(c[0]))
        micro_jobs.append(float(j[0]))
        micro_served.append(float(s[0]))
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
    est = bm.ci(bm.merge(np.array(micro_cost)), lower=0.0, ar1=True)
    jobs = bm.ci(bm.merge(np.array(micro_jobs)), lower=0.0, ar1=True)
    served = bm.ci(bm.merge(np.array(micro_served)), lower=0.0, ar1=True)
    return SlottedRun(
        cost=est.mean,
        cost_ci=(est.low, est.high),
        mean_jobs=jobs.mean,
        mean_jobs_ci=(jobs.low, jobs.high),
        served=served.mean,
        served_ci=(served.low, served.high),
        slots=done - round(run.warmup_used),
        batches=run.batches,
        warmup_used=round(run.warmup_used),
        converged=run.converged,
        outside_slots=int(outside),
    )
