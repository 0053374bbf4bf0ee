"""Exact event-driven simulation of exchangeable exponential servers by occupancy counts.

Model (spec §S, §A, §E): N servers in types j = 1..J; type j holds N_j = γ_j N servers of
capacity C_j, and a busy type-j server completes jobs at rate μ C_j whatever its occupancy
(FCFS and processor sharing give the same occupancy process). Jobs arrive as a Poisson
process of rate λN and are routed by a policy:

* ``"sqd"``: whole-pool SQ(d) — sample d servers from all N (with replacement, or without
  when ``replace=False``; d = N without replacement is JSQ), join the least occupied, ties
  uniformly among the tied sampled servers;
* ``"scheme1"`` / ``"scheme2"`` (seed 000): sample d_j servers of every type j (with
  replacement inside the type), keep the least occupied of each type (occupancy m_j), and
  send the job to the type with the smallest m_j (Scheme 1) or the largest C_j / m_j, an idle
  server counting as ∞ (Scheme 2); ties across types go to the higher capacity;
* ``"typed"``: route to type j with static probability p_j, then SQ(d_j) inside the type;
* ``"random"``: static random routing ∝ capacity, i.e. ``"typed"`` with p_j ∝ γ_j C_j and
  d_j = 1 (independent M/M/1-PS queues).

Servers of one type are exchangeable, so the state is only Q[j, k] = number of type-j
servers with at least k jobs (Q[j, 0] = N_j) and Qtot[k] = Σ_j Q[j, k]. Every event costs
O(J log levels) work, independent of N and d:

* arrival: the minimum occupancy m of d servers sampled from the whole pool has
  P(min ≥ k) = (Qtot[k]/N)^d with replacement and C(Qtot[k], d)/C(N, d) without; inside
  type j (with replacement only) P(min ≥ k) = (Q[j, k]/N_j)^d_j. Each is drawn by inversion
  with a binary search over levels (J of them for Schemes 1 and 2). Whole-pool SQ(d) then
  draws the type of the joined server ∝ Q[j, m] − Q[j, m+1]; the per-type policies already
  know the type, and the joined server is uniform among the type's level-m servers (they are
  exchangeable), so only the count Q[j, m+1] changes;
* departure: the type is drawn ∝ μ C_j Q[j, 1], then a uniformly random busy server of that
  type, whose level is found by binary search in Q[j, ·];
* time integrals ∫ Q[j, k] dt are accumulated lazily, only when Q[j, k] changes, and flushed
  at batch boundaries;
* arrivals, arrivals routed to each type, and arrivals that join a busy server (occupancy
  m ≥ 1: they wait under FCFS) are counted per batch; the ratios are arrival averages, equal
  to the time-stationary probabilities by PASTA;
* optionally (``chaos=True``) the time integrals of S_j (jobs at type-j servers), S_i S_j and
  Σ_{type j} x² (x a server's occupancy) are accumulated lazily in O(J) per event, giving the
  covariance of the occupancies of two distinct tagged servers (propagation of chaos).

Stopping the clock at a batch boundary and drawing a fresh inter-event time in the next call
is exact because the inter-event time is exponential (memoryless) and the state has not
changed.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
from numba import njit
from tqdm import tqdm

from lbrepro.core.args import float_arg, float_seq, int_arg
from lbrepro.core.errors import ConfigError, UnstableError
from lbrepro.core.rng import seed_sequence, xoshiro_state
from lbrepro.core.stats import batch_means_ci
from lbrepro.sim.runlength import check_budget, micro_count, run_micro_batches
from lbrepro.sim.xoshiro import randint, uniform

__all__ = [
    "POLICIES",
    "OccupancySimResult",
    "counts_from_tail",
    "sample_from_tail",
    "simulate_occupancy",
    "start_rng",
]

# Policy codes understood by the kernel. "random" runs as POLICY_TYPED (d_j = 1, p ∝ γC).
POLICY_SQD = 0
POLICY_SCHEME1 = 1
POLICY_SCHEME2 = 2
POLICY_TYPED = 3
_POLICY_CODES = {
    "sqd": POLICY_SQD,
    "scheme1": POLICY_SCHEME1,
    "scheme2": POLICY_SCHEME2,
    "typed": POLICY_TYPED,
    "random": POLICY_TYPED,
}
POLICIES = tuple(_POLICY_CODES)

# Scheme 2 compares C_j / m_j by cross-multiplying integers: each capacity is read as the
# nearest fraction with a denominator up to this bound (exact for decimal capacities such as
# 0.1 and 0.3, whose binary ratios are not exact), and refused if that moves it by more than
# _CAPACITY_RTOL relatively.
_CAPACITY_DENOMINATOR = 10**6
_CAPACITY_RTOL = 1e-9

_STATUS_OK = 0
_STATUS_MAX_LEVELS = 1
_STATUS_NEED_LEVELS = 2

# Level arrays start this long and double when a queue reaches the top; module-level so a
# test can shrink it to exercise the reallocation path.
_INITIAL_LEVELS = 64

# Randomness comes from 32-bit draws (xoshiro.randint) and counts fit comfortably in int64.
_MAX_N = 2**32 - 1


@njit(cache=True)
def _grow(Q, Qtot, area, last, new_levels, t):
    """Return copies of the level arrays extended to ``new_levels`` levels."""
    J, L = Q.shape
    Q2 = np.zeros((J, new_levels), dtype=np.int64)
    Qtot2 = np.zeros(new_levels, dtype=np.int64)
    area2 = np.zeros((J, new_levels), dtype=np.float64)
    # New levels hold Q = 0, so their 'last update' time is irrelevant; t keeps it tidy.
    last2 = np.full((J, new_levels), t, dtype=np.float64)
    Q2[:, :L] = Q
    Qtot2[:L] = Qtot
    area2[:, :L] = area
    last2[:, :L] = last
    return Q2, Qtot2, area2, last2


@njit(cache=True)
def _touch(Q, area, last, j, k, t):
    """Close the constant stretch of Q[j, k] at time t before Q[j, k] changes."""
    area[j, k] += Q[j, k] * (t - last[j, k])
    last[j, k] = t


@njit(cache=True)
def _sqd_min_level(Qtot, top, N, d, replace, log_comb_n_d, state):
    """Draw the least occupancy among d servers sampled from the whole pool.

    Returns m = max{k : P(min ≥ k) ≥ U} for U uniform on (0, 1], so P(m ≥ k) = P(min ≥ k).
    P(min ≥ k) is non-increasing in k, hence the binary search. Invariants: level ``lo``
    satisfies the condition (level 0 always does: P = 1 ≥ U) and level ``hi`` does not
    (level top + 1 is empty: P = 0 < U); neither end is ever evaluated.
    """
    lo = 0
    hi = top + 1
    if replace or d == 1:
        # (A single draw is the same with or without replacement.)
        # (Qtot[k]/N)^d ≥ U  ⇔  Qtot[k] ≥ N U^(1/d): one root per arrival, integer-vs-float
        # comparisons in the search. U ≥ 2^-53 keeps the threshold positive. d = 1 and d = 2
        # avoid exp/log, which cost about a quarter of an event.
        u = uniform(state)
        if d == 1:
            root = u
        elif d == 2:
            root = math.sqrt(u)
        else:
            root = math.exp(math.log(u) / d)
        threshold = N * root
        while hi - lo > 1:
            mid = (lo + hi) >> 1
            if Qtot[mid] >= threshold:
                lo = mid
            else:
                hi = mid
    elif d == 2:
        # C(q, 2)/C(N, 2) ≥ U  ⇔  q(q − 1) ≥ U N(N − 1): no lgamma for the commonest case.
        threshold = uniform(state) * (N * (N - 1.0))
        while hi - lo > 1:
            mid = (lo + hi) >> 1
            q = Qtot[mid]
            if q * (q - 1.0) >= threshold:
                lo = mid
            else:
                hi = mid
    else:
        log_u = math.log(uniform(state))
        while hi - lo > 1:
            mid = (lo + hi) >> 1
            q = Qtot[mid]
            # log C(q, d) − log C(N, d); C(q, d) = 0 when fewer than d servers qualify, which
            # also short-circuits JSQ (d = N) to the exact test q == N. lgamma's absolute
            # error (~1e-16 · N log N) is negligible next to the 2^-53 grid of U.
            if q >= d and (math.lgamma(q + 1.0) - math.lgamma(q - d + 1.0)) - log_comb_n_d >= (
                log_u
            ):
                lo = mid
            else:
                hi = mid
    return lo


@njit(cache=True)
def _type_min_level(Q, j, top, n_j, d_j, state):
    """Draw the least occupancy among d_j servers sampled with replacement from type j.

    The same inversion as ``_sqd_min_level`` with replacement, on the row Q[j, ·] and N_j:
    P(min ≥ k) = (Q[j, k]/N_j)^d_j. The arithmetic is the same expression by expression, so
    a single type (Q[0] = Qtot, N_0 = N) consumes the same draw and returns the same level.
    The returned m has Q[j, m] > Q[j, m + 1] (threshold > 0), so type j has a level-m server.
    """
    lo = 0
    hi = top + 1
    u = uniform(state)
    if d_j == 1:
        root = u
    elif d_j == 2:
        root = math.sqrt(u)
    else:
        root = math.exp(math.log(u) / d_j)
    threshold = n_j * root
    while hi - lo > 1:
        mid = (lo + hi) >> 1
        if Q[j, mid] >= threshold:
            lo = mid
        else:
            hi = mid
    return lo


@njit(cache=True)
def _chaos_touch(sums, sum_area, sum_last, j, t):
    """Close the constant stretches of S_j, Σx²_j and every S_i S_j before type j changes.

    ``sums[0, j]`` = S_j (jobs at type-j servers), ``sums[1, j]`` = Σ x² over type-j servers;
    ``sum_area`` rows 0 and 1 hold their time integrals and row 2 + a, column b (a ≤ b) the
    integral of S_a S_b; ``sum_last`` row 0 and row 1 + a hold the matching last-update times.
    """
    J = sums.shape[1]
    dt = t - sum_last[0, j]
    sum_area[0, j] += sums[0, j] * dt
    sum_area[1, j] += sums[1, j] * dt
    sum_last[0, j] = t
    s_j = sums[0, j]
    for i in range(J):
        a = min(i, j)
        b = max(i, j)
        sum_area[2 + a, b] += (sums[0, i] * s_j) * (t - sum_last[1 + a, b])
        sum_last[1 + a, b] = t


@njit(cache=True)
def _advance(
    Q,
    Qtot,
    area,
    last,
    top,
    t,
    t_end,
    lam_n,
    rates,
    N,
    d,
    replace,
    policy,
    log_comb_n_d,
    state,
    n_types,
    d_types,
    order,
    weights,
    cum_split,
    routed,
    chaos,
    sums,
    sum_area,
    sum_last,
):
    """Simulate events until t_end or until a queue reaches the last stored level.

    Returns (status, top, t, events, arrivals, waits) with status _STATUS_OK at t_end, or
    _STATUS_NEED_LEVELS right after the event that filled the last level (the caller grows
    the arrays and calls again; no random number is drawn in between, so the stream does not
    depend on when arrays grow). ``waits`` counts arrivals that join a server holding ≥ 1
    job; ``routed[j]`` is incremented for every arrival sent to type j.
    Never reallocates: arrays reassigned inside the hot loop would cost numba reference
    counting on every event.
    """
    J = Q.shape[0]
    L = Q.shape[1]
    events = 0
    arrivals = 0
    waits = 0
    while True:
        dep_rate = 0.0
        for j in range(J):
            dep_rate += rates[j] * Q[j, 1]
        total_rate = lam_n + dep_rate
        dt = -math.log(uniform(state)) / total_rate
        if t + dt >= t_end:
            return _STATUS_OK, top, t_end, events, arrivals, waits
        t += dt
        events += 1
        if uniform(state) * total_rate < lam_n:
            # ---- arrival: the least occupancy m the job meets and the type j it joins.
            m = 0
            j = 0
            if policy == POLICY_SQD:
                m = _sqd_min_level(Qtot, top, N, d, replace, log_comb_n_d, state)
                # The joined server is uniform among ALL servers holding exactly m jobs: the
                # sample's law (i.i.d. uniform draws, or a uniform subset) and the uniform tie
                # break are both invariant under any permutation of servers that preserves
                # occupancies, so the chosen server's conditional law given min = m is
                # invariant under permutations of the level-m servers, i.e. uniform over
                # them. Its type is therefore j with probability
                # (Q[j,m] − Q[j,m+1]) / (Qtot[m] − Qtot[m+1]), whatever d and the sampling
                # scheme. The search returned m with Qtot[m] > Qtot[m+1] (equal counts give
                # equal probabilities), so the weight is > 0.
                if J > 1:
                    r = randint(state, Qtot[m] - Qtot[m + 1])
                    while True:
                        w = Q[j, m] - Q[j, m + 1]
                        if r < w:
                            break
                        r -= w
                        j += 1
            elif policy == POLICY_TYPED:
                if J > 1:
                    # Type j takes x ∈ [cum_{j−1}, cum_j): a type with p_j = 0 is never
                    # chosen; cum_split[J − 1] = 1 > x, so the scan stops at a valid type.
                    x = uniform(state)
                    while j < J - 1 and x >= cum_split[j]:
                        j += 1
                m = _type_min_level(Q, j, top, n_types[j], d_types[j], state)
            else:
                # Schemes 1 and 2: visit the types in priority order (capacity descending,
                # then index), so a later type replaces the incumbent only if strictly better
                # and every tie goes to the higher capacity. Once the incumbent is idle no
                # later type can be strictly better (Scheme 1: m < 0; Scheme 2: beat ∞), and
                # the samples of the remaining types are independent of everything, so they
                # need not be drawn.
                j = order[0]
                m = _type_min_level(Q, j, top, n_types[j], d_types[j], state)
                for idx in range(1, J):
                    if m == 0:
                        break
                    i = order[idx]
                    m_i = _type_min_level(Q, i, top, n_types[i], d_types[i], state)
                    if policy == POLICY_SCHEME1:
                        better = m_i < m
                    else:
                        # C_i/m_i > C_j/m_j ⇔ w_i m_j > w_j m_i with integer weights w ∝ C
                        # (exact; m_i = 0 is ∞).
                        better = m_i == 0 or weights[i] * m > weights[j] * m_i
                    if better:
                        j = i
                        m = m_i
            arrivals += 1
            routed[j] += 1
            if m > 0:
                waits += 1
            k = m + 1
            _touch(Q, area, last, j, k, t)
            Q[j, k] += 1
            Qtot[k] += 1
            if chaos:
                # A server going from k − 1 to k jobs adds k² − (k − 1)² = 2k − 1 to Σx².
                _chaos_touch(sums, sum_area, sum_last, j, t)
                sums[0, j] += 1
                sums[1, j] += 2 * k - 1
            if k > top:
                top = k
                if top + 1 >= L:
                    return _STATUS_NEED_LEVELS, top, t, events, arrivals, waits
        else:
            # ---- departure: type ∝ μ C_j Q[j,1], then a uniformly random busy server.
            j = 0
            if J > 1:
                x = uniform(state) * dep_rate
                acc = 0.0
                chosen = -1
                for i in range(J):
                    acc += rates[i] * Q[i, 1]
                    if x <= acc and Q[i, 1] > 0:
                        chosen = i
                        break
                if chosen < 0:
                    # Unreachable in exact arithmetic (x ≤ dep_rate, summed in the same
                    # order); kept so rounding can never pick an idle type.
                    for i in range(J):
                        if Q[i, 1] > 0:
                            chosen = i
                j = chosen
            # Rank the Q[j,1] busy type-j servers by decreasing occupancy; the one of rank r
            # (0-based) holds max{k : Q[j,k] > r} jobs. Invariants: Q[j,lo] > r, Q[j,hi] ≤ r.
            r = randint(state, Q[j, 1])
            lo = 1
            hi = top + 1
            while hi - lo > 1:
                mid = (lo + hi) >> 1
                if Q[j, mid] > r:
                    lo = mid
                else:
                    hi = mid
            _touch(Q, area, last, j, lo, t)
            Q[j, lo] -= 1
            Qtot[lo] -= 1
            if chaos:
                _chaos_touch(sums, sum_area, sum_last, j, t)
                sums[0, j] -= 1
                sums[1, j] -= 2 * lo - 1
            if Qtot[top] == 0:
                top -= 1


@njit(cache=True)
def _run(
    Q,
    Qtot,
    area,
    last,
    top,
    t,
    t_end,
    lam_n,
    rates,
    N,
    d,
    replace,
    policy,
    max_levels,
    state,
    n_types,
    d_types,
    order,
    weights,
    cum_split,
    routed,
    chaos,
    sums,
    sum_area,
    sum_last,
):
    """Simulate from t to t_end; return (status, Q, Qtot, area, last, top, t, events, arrivals,
    waits), the last three counted over this call (``waits``: arrivals joining a busy server).

    ``top`` is the highest level with Qtot[top] > 0 (0 when empty); the arrays always have
    at least top + 2 levels so Q[:, top + 1] (= 0) can be read. They are reallocated (up to
    max_levels + 1 levels) when a queue reaches the last level, which is why they are
    returned. ``routed`` and the chaos arrays (``sums``, ``sum_area``, ``sum_last``, see
    ``_chaos_touch``; untouched unless ``chaos``) are updated in place. On return every area
    is flushed to t. ``status`` is _STATUS_MAX_LEVELS if a queue reached ``max_levels`` jobs
    (the run stops there, at time t).
    """
    log_comb_n_d = 0.0
    if not replace:
        log_comb_n_d = math.lgamma(N + 1.0) - math.lgamma(N - d + 1.0)
    events = 0
    arrivals = 0
    waits = 0
    while True:
        status, top, t, n, n_arr, n_wait = _advance(
            Q,
            Qtot,
            area,
            last,
            top,
            t,
            t_end,
            lam_n,
            rates,
            N,
            d,
            replace,
            policy,
            log_comb_n_d,
            state,
            n_types,
            d_types,
            order,
            weights,
            cum_split,
            routed,
            chaos,
            sums,
            sum_area,
            sum_last,
        )
        events += n
        arrivals += n_arr
        waits += n_wait
        if status == _STATUS_OK:
            break
        if top >= max_levels:
            status = _STATUS_MAX_LEVELS
            break
        Q, Qtot, area, last = _grow(Q, Qtot, area, last, min(2 * Q.shape[1], max_levels + 1), t)
    for j in range(Q.shape[0]):
        for k in range(Q.shape[1]):
            area[j, k] += Q[j, k] * (t - last[j, k])
            last[j, k] = t
    if chaos:
        for j in range(Q.shape[0]):
            # Touching type j closes S_j, Σx²_j and the pairs (i, j); over all j that is
            # every pair (a, b), a ≤ b, at least once (repeats add zero-length stretches).
            _chaos_touch(sums, sum_area, sum_last, j, t)
    return status, Q, Qtot, area, last, top, t, events, arrivals, waits


def _allocate(
    counts: np.ndarray, levels: int, t0: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """Level arrays for the state Q[j, k] (``counts``: servers with exactly k jobs)."""
    J, K = counts.shape
    Q = np.zeros((J, levels), dtype=np.int64)
    # Q[j, k] = number with ≥ k jobs = reversed cumulative sum of the exact counts.
    Q[:, :K] = np.cumsum(counts[:, ::-1], axis=1)[:, ::-1]
    Qtot = Q.sum(axis=0)
    nonzero = np.flatnonzero(Qtot)
    top = int(nonzero[-1]) if nonzero.size else 0
    area = np.zeros((J, levels), dtype=np.float64)
    last = np.full((J, levels), t0, dtype=np.float64)
    return Q, Qtot, area, last, top


def _chaos_arrays(Q: np.ndarray, t0: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Chaos accumulators (see ``_chaos_touch``) for the state Q at time t0.

    S_j = Σ_{k≥1} Q[j, k] and Σx² = Σ_{k≥1} (2k − 1) Q[j, k]: a server holding x jobs is
    counted at levels 1..x, and Σ_{k≤x} (2k − 1) = x².
    """
    J, L = Q.shape
    odd = 2 * np.arange(1, L, dtype=np.int64) - 1
    sums = np.zeros((2, J), dtype=np.int64)
    sums[0] = Q[:, 1:].sum(axis=1)
    sums[1] = Q[:, 1:] @ odd
    return sums, np.zeros((J + 2, J), dtype=np.float64), np.full((J + 1, J), t0)


_compiled = False


def _ensure_compiled() -> None:
    """Compile (or load from numba's cache) the kernel outside the timed region."""
    global _compiled
    if _compiled:
        return
    Q, Qtot, area, last, top = _allocate(np.array([[1, 0]], dtype=np.int64), 4, 0.0)
    state = np.array([1, 2, 3, 4], dtype=np.uint64)
    rates = np.ones(1, dtype=np.float64)
    ones = np.ones(1, dtype=np.int64)
    sums, sum_area, sum_last = _chaos_arrays(Q, 0.0)
    routing = (ones, ones, np.zeros(1, dtype=np.int64), ones, np.ones(1), np.zeros(1, np.int64))
    for replace in (True, False):
        _run(
            Q, Qtot, area, last, top, 0.0, 0.0, 0.5, rates, 1, 1, replace, POLICY_SQD, 3, state,
            *routing, False, sums, sum_area, sum_last,
        )  # fmt: skip
    _compiled = True


@dataclass(frozen=True)
class OccupancySimResult:
    """Time averages of one occupancy simulation, with 95% batch-means intervals.

    ``u[j][k]`` is the time-averaged fraction of type-j servers with at least k jobs,
    k = 0..K (``u[j][0] = 1``); every array has the same length K + 1, where K is the highest
    level with a non-zero average in any type (trailing all-zero levels are trimmed, so a
    type may still end with zeros). ``u_all = Σ_j γ_j u_j``. ``mean_jobs`` is per server
    over all types, ``mean_jobs_per_type[j] = Σ_k u[j][k]`` per type-j server,
    ``mean_sojourn = mean_jobs / lam`` (Little's law). ``p_wait`` is the fraction of
    post-warm-up arrivals that join a server already holding ≥ 1 job (for SQ(d): whose
    sampled minimum occupancy is ≥ 1; they wait under FCFS); by PASTA it is also the
    time-stationary probability that an arrival would. Its interval is centred on it with
    the half-width of the batch means of the per-batch fractions (NaN if a batch saw no
    arrival). ``route[j]`` is the fraction of post-warm-up arrivals sent to type j, with
    intervals built the same way. ``arrivals`` counts post-warm-up arrivals.
    ``cov_same[j]`` (chaos runs only, else None) is the stationary covariance of the
    occupancies of two distinct tagged type-j servers (NaN if N_j = 1), ``cov_cross[i, j]``
    that of a type-i and a type-j server (J × J, symmetric, diagonal = ``cov_same``); they
    are computed per batch and averaged, with batch-means intervals.
    ``policy`` is the policy name, ``d`` the whole-pool sample size (int) for ``"sqd"`` and
    the per-type sizes (tuple) otherwise, ``split`` the static routing probabilities of
    ``"typed"`` and ``"random"`` (None otherwise).
    ``horizon`` is the time actually simulated (the requested horizon, doubled by any
    extension), ``warmup`` the configured minimum warm-up and ``warmup_used`` the time
    discarded (MSER-5), ``batches`` the number of batch means of every interval and
    ``batch_length`` their duration; ``converged`` is False when the batch means still failed
    the independence test after every allowed extension (the intervals are then too short).
    Intervals are clipped to the range of the quantity (fractions to [0, 1]).
    ``events`` counts events after the warm-up used, ``events_total`` includes it;
    ``elapsed`` is the wall time of the simulation proper (numba compilation excluded) and
    ``events_per_second = events_total / elapsed``. ``seed`` is the SeedSequence's entropy
    and ``spawn_key`` its spawn key: together they reproduce the run bit for bit.
    """

    u: list[np.ndarray]
    u_ci_low: list[np.ndarray]
    u_ci_high: list[np.ndarray]
    u_all: np.ndarray
    u_all_ci_low: np.ndarray
    u_all_ci_high: np.ndarray
    mean_jobs: float
    mean_jobs_ci: tuple[float, float]
    mean_jobs_per_type: np.ndarray
    mean_jobs_per_type_ci_low: np.ndarray
    mean_jobs_per_type_ci_high: np.ndarray
    mean_sojourn: float
    mean_sojourn_ci: tuple[float, float]
    p_wait: float
    p_wait_ci: tuple[float, float]
    route: np.ndarray
    route_ci_low: np.ndarray
    route_ci_high: np.ndarray
    cov_same: np.ndarray | None
    cov_same_ci_low: np.ndarray | None
    cov_same_ci_high: np.ndarray | None
    cov_cross: np.ndarray | None
    cov_cross_ci_low: np.ndarray | None
    cov_cross_ci_high: np.ndarray | None
    arrivals: int
    events: int
    events_total: int
    elapsed: float
    events_per_second: float
    N: int
    d: int | tuple[int, ...]
    replace: bool
    lam: float
    mu: float
    gamma: tuple[float, ...]
    capacity: tuple[float, ...]
    policy: str
    split: tuple[float, ...] | None
    horizon: float
    warmup: float
    batches: int
    seed: int | list[int]
    spawn_key: tuple[int, ...]
    warmup_used: float = math.nan
    converged: bool = True
    batch_length: float = math.nan

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable summary (plain lists, floats and ints; NaN stays a float).

        Keys: ``u`` (list per type of lists over k), ``u_all``, ``mean_jobs``,
        ``mean_jobs_per_type``, ``mean_sojourn``, ``p_wait``, ``route``, ``cov_same``, ``cov_cross``
        (None unless a chaos run), ``ci``, ``N``, ``d`` (int, or list per type), ``replace``,
        ``lam``, ``mu``, ``gamma``, ``capacity``, ``policy``, ``split``, ``horizon``, ``warmup``,
        ``batches``, ``seed``, ``spawn_key``, ``arrivals``, ``events``, ``events_total``,
        ``elapsed``, ``events_per_second``. ``ci[q] = [low, high]`` for q in ``u``, ``u_all``,
        ``mean_jobs``, ``mean_jobs_per_type``, ``mean_sojourn``, ``p_wait``, ``route``,
        ``cov_same``, ``cov_cross`` (the last two None unless a chaos run), where ``low`` and
        ``high`` have the same nesting as the value of q (for ``u``: ``ci["u"][0][j][k]`` is the
        lower bound of ``u[j][k]``) — parallel arrays, not pairs.
        """

        def opt(a: np.ndarray | None) -> list[Any] | None:
            return None if a is None else a.tolist()

        chaos = self.cov_same is not None
        return {
            "u": [a.tolist() for a in self.u],
            "u_all": self.u_all.tolist(),
            "mean_jobs": self.mean_jobs,
            "mean_jobs_per_type": self.mean_jobs_per_type.tolist(),
            "mean_sojourn": self.mean_sojourn,
            "p_wait": self.p_wait,
            "route": self.route.tolist(),
            "cov_same": opt(self.cov_same),
            "cov_cross": opt(self.cov_cross),
            "ci": {
                "u": [[a.tolist() for a in self.u_ci_low], [a.tolist() for a in self.u_ci_high]],
                "u_all": [self.u_all_ci_low.tolist(), self.u_all_ci_high.tolist()],
                "mean_jobs": list(self.mean_jobs_ci),
                "mean_jobs_per_type": [
                    self.mean_jobs_per_type_ci_low.tolist(),
                    self.mean_jobs_per_type_ci_high.tolist(),
                ],
                "mean_sojourn": list(self.mean_sojourn_ci),
                "p_wait": list(self.p_wait_ci),
                "route": [self.route_ci_low.tolist(), self.route_ci_high.tolist()],
                "cov_same": [opt(self.cov_same_ci_low), opt(self.cov_same_ci_high)]
                if chaos
                else None,
                "cov_cross": [opt(self.cov_cross_ci_low), opt(self.cov_cross_ci_high)]
                if chaos
                else None,
            },
            "N": self.N,
            "d": self.d if isinstance(self.d, int) else list(self.d),
            "replace": self.replace,
            "lam": self.lam,
            "mu": self.mu,
            "gamma": list(self.gamma),
            "capacity": list(self.capacity),
            "policy": self.policy,
            "split": None if self.split is None else list(self.split),
            "horizon": self.horizon,
            "warmup": self.warmup,
            "batches": self.batches,
            "warmup_used": self.warmup_used,
            "batch_length": self.batch_length,
            "converged": self.converged,
            "seed": self.seed,
            "spawn_key": list(self.spawn_key),
            "arrivals": self.arrivals,
            "events": self.events,
            "events_total": self.events_total,
            "elapsed": self.elapsed,
            "events_per_second": self.events_per_second,
        }


def _server_counts(gamma: tuple[float, ...], N: int) -> np.ndarray:
    """N_j = γ_j N, required to be integers (a fractional server has no meaning)."""
    counts = []
    for g in gamma:
        exact = g * N
        nearest = round(exact)
        if abs(exact - nearest) > 1e-9 * max(1.0, exact) or nearest < 1:
            raise ConfigError(
                "gamma",
                f"gamma_j * N must be a positive integer for every type; {g!r} * {N} = {exact!r}",
            )
        counts.append(nearest)
    if sum(counts) != N:
        raise ConfigError("gamma", f"type sizes {counts} do not add up to N = {N}")
    return np.array(counts, dtype=np.int64)


def counts_from_tail(u: np.ndarray, n: int) -> np.ndarray:
    """Round a tail profile (u_0 = 1, u_1, …) to counts of n servers with exactly k jobs.

    Largest-remainder rounding keeps the total exactly n; a row of the ``initial`` array
    :func:`simulate_occupancy` takes. Starting at the mean-field fixed point rather than
    empty shortens the transient a run must discard (~1/(1 − ρ)² time units near ρ = 1).
    """
    u = np.asarray(u, dtype=float)
    exact = n * (u - np.append(u[1:], 0.0))
    counts = np.floor(exact).astype(np.int64)
    short = n - int(counts.sum())
    counts[np.argsort(counts - exact)[:short]] += 1
    return counts


def start_rng(seed: np.random.SeedSequence | int) -> np.random.Generator:
    """The generator that draws a run's random start state: a child of the run's stream
    (spawn key + (2³¹ − 1,)), independent of the kernel's draws, so the seed fixes both."""
    seq = seed_sequence(seed)
    child = np.random.SeedSequence(seq.entropy, spawn_key=(*seq.spawn_key, 2**31 - 1))
    return np.random.default_rng(child)


def sample_from_tail(u: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """Draw n servers' occupancies independently from a tail profile (u_0 = 1, u_1, …).

    Returns counts of servers with exactly k jobs, multinomial with P(k) = u_k − u_{k+1}.
    Unlike :func:`counts_from_tail`, nothing of the tail is rounded away: near ρ = 1 rounding
    drops the servers of the long tail (at ρ = 0.99, d = 1, N = 1000 the rounded start holds
    90.6 jobs per server instead of 99) and biases a run low for a relaxation time. For d = 1
    the fixed point is the exact stationary law (independent M/M/1 queues), so the run starts
    in equilibrium. ``u`` should be computed to a small tolerance (its last entry is the mass
    lumped into the top level).
    """
    u = np.asarray(u, dtype=float)
    p = np.clip(u - np.append(u[1:], 0.0), 0.0, None)
    return rng.multinomial(int(n), p / p.sum()).astype(np.int64)


def _initial_counts(initial: np.ndarray | None, n_types: np.ndarray) -> np.ndarray:
    """Validate ``initial[j, k]`` = number of type-j servers holding exactly k jobs."""
    J = n_types.size
    if initial is None:
        counts = np.zeros((J, 1), dtype=np.int64)
        counts[:, 0] = n_types
        return counts
    arr = np.asarray(initial)
    if arr.ndim != 2 or arr.shape[0] != J or arr.shape[1] < 1:
        raise ConfigError("initial", f"must have shape (types={J}, levels), got {arr.shape}")
    if arr.dtype.kind not in "iuf":
        raise ConfigError("initial", f"must hold numbers of servers, got dtype {arr.dtype}")
    if not np.issubdtype(arr.dtype, np.integer) and (
        not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr))
    ):
        raise ConfigError("initial", "counts of servers must be integers")
    counts = arr.astype(np.int64)
    if np.any(counts < 0):
        raise ConfigError("initial", "counts of servers must be >= 0")
    if np.any(counts.sum(axis=1) != n_types):
        raise ConfigError(
            "initial",
            f"row sums {counts.sum(axis=1).tolist()} must equal the type sizes {n_types.tolist()}",
        )
    return counts


def _wait_probability(waits: np.ndarray, arrivals: np.ndarray) -> tuple[float, tuple[float, float]]:
    """Arrival-average waiting probability and its 95% batch-means interval.

    Also serves any other per-batch count of arrivals (the routing fractions).
    The estimate is Σ waits / Σ arrivals (every arrival weighs the same); the interval is
    centred on it with the half-width of the batch means of the per-batch fractions. Batches
    without arrivals have no fraction, so the interval is then NaN (batches too short).
    """
    total = int(arrivals.sum())
    p = int(waits.sum()) / total if total > 0 else math.nan
    if np.any(arrivals == 0):
        return p, (math.nan, math.nan)
    half = float(batch_means_ci(waits / arrivals, ar1=True).half_width)
    return p, (max(p - half, 0.0), min(p + half, 1.0))


def _per_type_d(value: Any, J: int) -> tuple[int, ...]:
    """Per-type sample sizes: an int (the same for every type) or a sequence of J ints."""
    if isinstance(value, str | bytes):
        raise ConfigError("d", f"must be an integer or a sequence of integers, got {value!r}")
    try:
        items = list(value)
    except TypeError:
        return (int_arg("d", value, 1),) * J
    if len(items) != J:
        raise ConfigError("d", f"has {len(items)} entries but gamma has {J}")
    return tuple(int_arg("d", x, 1) for x in items)


def _split_arg(value: Any, J: int) -> tuple[float, ...]:
    """Static routing probabilities: J numbers ≥ 0 summing to 1 (within 1e-9).

    A zero leaves a type idle (an optimised split may do that to slow servers at low load).
    """
    split = float_seq("split", value)
    if len(split) != J:
        raise ConfigError("split", f"has {len(split)} entries but gamma has {J}")
    if any(p < 0 for p in split):
        raise ConfigError("split", f"probabilities must be >= 0, got {list(split)}")
    if abs(math.fsum(split) - 1.0) > 1e-9:
        raise ConfigError("split", f"probabilities must sum to 1, got {math.fsum(split)!r}")
    return split


def _cumulative_split(split: tuple[float, ...]) -> np.ndarray:
    """Cumulative probabilities with the last set to exactly 1 (no type lost to rounding)."""
    cum = np.cumsum(np.asarray(split, dtype=np.float64))
    cum[-1] = 1.0
    return cum


def _priority_order(capacity: tuple[float, ...]) -> np.ndarray:
    """Types by decreasing capacity; equal capacities by increasing index.

    Schemes 1 and 2 break ties across types towards the higher capacity (seed 000). For
    equal capacities the paper assumes none (spec §A: merge such types); the lower type
    index is this simulator's own deterministic rule, not the paper's.
    """
    return np.array(sorted(range(len(capacity)), key=lambda j: (-capacity[j], j)), dtype=np.int64)


def _scheme2_weights(capacity: tuple[float, ...], max_levels: int) -> np.ndarray:
    """Integers w_j ∝ C_j, so that Scheme 2 compares C_i m_j with C_j m_i exactly.

    Each capacity is read as the nearest fraction with denominator ≤ 10^6 (0.1 and 0.3 as
    1/10 and 3/10, so 0.3/3 ties with 0.1/1 as intended, although their binary values do
    not); capacities that this moves by more than 1e-9 relatively, or whose common
    denominator makes w_j · max_levels overflow int64, are refused.
    """
    fracs = []
    for c in capacity:
        f = Fraction(c).limit_denominator(_CAPACITY_DENOMINATOR)
        if f <= 0 or abs(float(f) - c) > _CAPACITY_RTOL * c:
            raise ConfigError(
                "capacity",
                f"policy 'scheme2' compares capacity ratios exactly and needs capacities that are "
                f"fractions with denominators <= {_CAPACITY_DENOMINATOR}; {c!r} is not",
            )
        fracs.append(f)
    denominator = math.lcm(*(f.denominator for f in fracs))
    ints = [int(f * denominator) for f in fracs]
    divisor = math.gcd(*ints)
    weights = [w // divisor for w in ints]
    if max(weights) * (max_levels + 1) >= 2**62:
        raise ConfigError(
            "capacity",
            f"the exact integer ratios of {list(capacity)} are too large for policy 'scheme2' "
            f"with max_levels = {max_levels}",
        )
    return np.array(weights, dtype=np.int64)


def _batch_covariances(
    sum_area: np.ndarray,
    n_types: np.ndarray,
    duration: float,
    center: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """One batch's covariances of two distinct tagged servers from the chaos integrals.

    With time averages ⟨·⟩ over the batch, for two servers of type j
    E[x_a x_b] = ⟨S_j² − Σx²⟩ / (N_j (N_j − 1)) and E[x_a] = ⟨S_j⟩ / N_j; for types i ≠ j
    E[x_a x_b] = ⟨S_i S_j⟩ / (N_i N_j). The covariance is E[x_a x_b] − E[x_a] E[x_b] with the
    product of the batch's time-averaged means: the stationary covariance, up to a bias of
    order (relaxation time / batch length) · Var(x)/N that long batches make negligible.
    Returns (cov_same per type, NaN where N_j = 1; cov_cross J × J, diagonal = cov_same).

    With ``center`` (the run's mean occupancy per type, m̄) the batch's value is linearised
    about it instead: E[x_a x_b] − m̄_a E[x_b] − E[x_a] m̄_b + m̄_a m̄_b, whose batch means
    average exactly to the run's E[x_a x_b] − m̄_a m̄_b. Its bias is that of the run, not of
    a batch, so data-chosen (shorter) batches do not bias the covariance.
    """
    J = n_types.size
    n = n_types.astype(np.float64)
    mean_s = sum_area[0] / duration
    mean_x2 = sum_area[1] / duration
    upper = sum_area[2:] / duration
    mean_ss = np.triu(upper) + np.triu(upper, 1).T
    mean_x = mean_s / n
    with np.errstate(invalid="ignore", divide="ignore"):
        pair = (np.diag(mean_ss) - mean_x2) / (n * (n - 1.0))
    m = mean_x if center is None else center
    same = np.where(n_types > 1, pair - 2.0 * m * mean_x + m * m, math.nan)
    cross = mean_ss / np.outer(n, n) - np.outer(m, mean_x) - np.outer(mean_x, m) + np.outer(m, m)
    cross[np.diag_indices(J)] = same
    return same, cross


def simulate_occupancy(
    *,
    lam: float,
    N: int,
    d: int | Sequence[int],
    horizon: float,
    warmup: float,
    seed: np.random.SeedSequence | int,
    mu: float = 1.0,
    gamma: Sequence[float] = (1.0,),
    capacity: Sequence[float] = (1.0,),
    replace: bool = True,
    batches: int = 20,
    progress: bool = False,
    max_levels: int = 100_000,
    initial: np.ndarray | None = None,
    policy: str = "sqd",
    split: Sequence[float] | None = None,
    chaos: bool = False,
    extend: int | None = None,
    rel_precision: float | None = None,
) -> OccupancySimResult:
    """Simulate a routing policy on N exchangeable exponential servers of J types.

    Parameters
    ----------
    lam
        Arrival rate per server (total rate lam * N).
    N
        Number of servers.
    d
        Sample size. ``"sqd"``: one int, the servers sampled from the whole pool (1 <= d;
        d <= N when ``replace`` is False). ``"scheme1"``, ``"scheme2"``, ``"typed"``: d_j
        servers sampled with replacement inside each type j, a sequence of J ints >= 1 or
        one int for every type. ``"random"``: must be 1 (or all ones).
    horizon, warmup
        Simulated time, recorded in micro-batches from time 0 (see
        :mod:`lbrepro.sim.runlength`): at least [0, warmup) is discarded, more if MSER-5 asks
        for it, and the rest is merged into batches whose means pass a von Neumann
        independence test; the run is doubled (up to ``extend`` times, within the event
        budget) while they do not. The result states the warm-up used, the batches, the
        horizon actually run and whether the batching converged.
    seed
        An int (used as ``lbrepro.core.rng.stream(seed)``) or a SeedSequence, which should be
        dedicated to this run: the generator state is ``seq.generate_state(4)``.
    mu, gamma, capacity
        Service rate per unit capacity, fractions of servers per type (γ_j N must be
        integers), capacities C_j.
    replace
        Sample with (True, the mean-field convention) or without replacement; False only
        for ``"sqd"``.
    batches
        The least number of batches of the confidence intervals (>= 2).
    progress
        Show a tqdm bar on stderr advancing per micro-batch.
    max_levels
        Stop with UnstableError if a queue reaches this many jobs.
    initial
        Optional initial state, ``initial[j, k]`` = number of type-j servers holding exactly
        k jobs; default empty.
    policy
        ``"sqd"`` (whole-pool SQ(d), ties uniform), ``"scheme1"`` (least occupied of the
        per-type minima), ``"scheme2"`` (largest C_j / m_j, idle = ∞), ``"typed"`` (type j
        with probability ``split[j]``, then SQ(d_j) inside it) or ``"random"`` (type ∝ γ_j C_j,
        then a uniformly random server of it). Schemes 1 and 2 break ties across types
        towards the higher capacity, and between equal capacities (which the paper excludes)
        towards the lower type index — this simulator's rule, not the paper's. Scheme 2
        compares capacities as exact fractions (denominators <= 10^6).
    split
        Routing probabilities of ``"typed"`` (J positive numbers summing to 1); default
        p_j ∝ γ_j C_j. Must be None for the other policies.
    chaos
        Also estimate the covariances of the occupancies of two distinct tagged servers
        (``cov_same``, ``cov_cross``), at O(J) extra work per event.
    extend
        How many times the run may double while its batch means are correlated (default
        :func:`lbrepro.sim.runlength.max_doublings`, 2 unless configured).
    rel_precision
        Optional target relative half-width of ``mean_jobs``; the run doubles (within
        ``extend`` and the budget) until it is reached.

    Returns
    -------
    OccupancySimResult

    Raises
    ------
    ConfigError
        For an invalid argument (the message names it), before any simulation.
    UnstableError
        If lam >= mu Σ_j γ_j C_j (the maximal stability region); for ``"typed"`` and
        ``"random"`` if some type is overloaded, lam p_j >= mu γ_j C_j (the message names it);
        or if a queue reaches ``max_levels`` jobs during the run. Whole-pool SQ(d) with
        heterogeneous capacities can be unstable inside the maximal region (spec §A); such
        runs are simulated and end either at the horizon or with this error.
    """
    if not isinstance(policy, str) or policy not in _POLICY_CODES:
        raise ConfigError("policy", f"must be one of {', '.join(POLICIES)}; got {policy!r}")
    code = _POLICY_CODES[policy]
    lam = float_arg("lam", lam)
    if lam <= 0:
        raise ConfigError("lam", f"must be > 0, got {lam}")
    mu = float_arg("mu", mu)
    if mu <= 0:
        raise ConfigError("mu", f"must be > 0, got {mu}")
    N = int_arg("N", N, 1)
    if N > _MAX_N:
        raise ConfigError("N", f"must be < 2**32, got {N}")
    if not isinstance(replace, bool | np.bool_):
        raise ConfigError("replace", f"must be a bool, got {replace!r}")
    replace = bool(replace)
    if not isinstance(chaos, bool | np.bool_):
        raise ConfigError("chaos", f"must be a bool, got {chaos!r}")
    chaos = bool(chaos)
    capacity_t = float_seq("capacity", capacity)
    if any(c <= 0 for c in capacity_t):
        raise ConfigError("capacity", f"capacities must be > 0, got {list(capacity_t)}")
    gamma_t = float_seq("gamma", gamma)
    if len(gamma_t) != len(capacity_t):
        raise ConfigError("capacity", f"has {len(capacity_t)} entries but gamma has {len(gamma_t)}")
    if any(g <= 0 for g in gamma_t):
        raise ConfigError("gamma", f"fractions must be > 0, got {list(gamma_t)}")
    if abs(math.fsum(gamma_t) - 1.0) > 1e-9:
        raise ConfigError("gamma", f"fractions must sum to 1, got {math.fsum(gamma_t)!r}")
    J = len(gamma_t)
    n_types = _server_counts(gamma_t, N)
    max_levels = int_arg("max_levels", max_levels, 2)

    # Policy parameters; the kernel receives every array whatever the policy.
    d_out: int | tuple[int, ...]
    split_t: tuple[float, ...] | None = None
    weights = np.ones(J, dtype=np.int64)
    if policy == "sqd":
        d_int = int_arg("d", d, 1)
        if not replace and d_int > N:
            raise ConfigError(
                "d", f"cannot sample d = {d_int} of N = {N} servers without replacement"
            )
        d_types = np.ones(J, dtype=np.int64)
        d_out = d_int
    else:
        d_int = 1
        d_tuple = _per_type_d(d, J)
        if policy == "random" and any(x != 1 for x in d_tuple):
            raise ConfigError(
                "d", f"policy 'random' sends a job to one random server: d must be 1, got {d!r}"
            )
        if not replace:
            raise ConfigError(
                "replace",
                f"policy {policy!r} samples with replacement inside each type; "
                "replace=False is implemented only for 'sqd'",
            )
        d_types = np.array(d_tuple, dtype=np.int64)
        d_out = d_tuple
        if policy == "scheme2":
            weights = _scheme2_weights(capacity_t, max_levels)
    if policy == "typed":
        if split is None:
            total = math.fsum(g * c for g, c in zip(gamma_t, capacity_t, strict=True))
            split_t = tuple(g * c / total for g, c in zip(gamma_t, capacity_t, strict=True))
        else:
            split_t = _split_arg(split, J)
    elif split is not None:
        raise ConfigError("split", f"is used only by policy 'typed', not {policy!r}")
    elif policy == "random":
        total = math.fsum(g * c for g, c in zip(gamma_t, capacity_t, strict=True))
        split_t = tuple(g * c / total for g, c in zip(gamma_t, capacity_t, strict=True))
    order = _priority_order(capacity_t)
    cum_split = _cumulative_split(split_t) if split_t is not None else np.ones(J)

    horizon = float_arg("horizon", horizon)
    warmup = float_arg("warmup", warmup)
    if warmup < 0:
        raise ConfigError("warmup", f"must be >= 0, got {warmup}")
    if horizon <= warmup:
        raise ConfigError("horizon", f"must exceed warmup = {warmup}, got {horizon}")
    batches = int_arg("batches", batches, 2)
    counts = _initial_counts(initial, n_types)
    if counts.shape[1] - 1 >= max_levels and np.any(counts[:, max_levels:]):
        raise ConfigError("initial", f"holds a queue of >= max_levels = {max_levels} jobs")
    seq = seed_sequence(seed)

    if split_t is not None:
        # A static split is stable iff every type is: type j is an M/M/1 or SQ(d_j) system
        # at load λ p_j / (μ γ_j C_j), so an overloaded type would grow forever.
        for j, (p, g, c) in enumerate(zip(split_t, gamma_t, capacity_t, strict=True)):
            if lam * p >= mu * g * c:
                raise UnstableError(
                    f"type {j} (gamma = {g:g}, capacity C = {c:g}) is overloaded under policy "
                    f"{policy!r}: lam * p_j = {lam * p:g} >= mu * gamma_j * C_j = {mu * g * c:g}"
                    ": unstable, refusing to simulate"
                )
    capacity_total = mu * math.fsum(g * c for g, c in zip(gamma_t, capacity_t, strict=True))
    if lam >= capacity_total:
        raise UnstableError(
            f"load lam = {lam:g} >= capacity mu * sum(gamma_j * C_j) = {capacity_total:g}: "
            "unstable, refusing to simulate"
        )

    levels = max(min(_INITIAL_LEVELS, max_levels + 1), counts.shape[1] + 1)
    Q, Qtot, area, last, top = _allocate(counts, levels, 0.0)
    sums, sum_area, sum_last = _chaos_arrays(Q, 0.0)
    routed = np.zeros(J, dtype=np.int64)
    state = xoshiro_state(seq)
    rates = mu * np.asarray(capacity_t, dtype=np.float64)
    lam_n = lam * N
    kernel_args = (
        lam_n, rates, N, d_int, replace, code, max_levels, state,
        n_types, d_types, order, weights, cum_split, routed, chaos, sums, sum_area, sum_last,
    )  # fmt: skip

    _ensure_compiled()
    # Micro-batches from time 0 (see lbrepro.sim.runlength): the kernel returns after each.
    # Events ≈ arrivals + departures, both at rate λN in equilibrium.
    events_per_time = 2.0 * lam_n
    check_budget(
        events_per_time * horizon,
        what=f"this run (N = {N}, horizon = {horizon:g}, ≈ {events_per_time:.3g} events per "
        "unit time)",
    )
    micro_u: list[np.ndarray] = []
    micro_jobs: list[float] = []
    micro_arrivals: list[int] = []
    micro_waits: list[int] = []
    micro_routed: list[np.ndarray] = []
    micro_chaos: list[np.ndarray] = []
    micro_events: list[int] = []
    t = 0.0
    bar = tqdm(
        total=micro_count(events_per_time * horizon),
        desc="occupancy sim",
        unit="slice",
        disable=not progress,
        file=sys.stderr,
    )

    def step(t_end: float) -> int:
        nonlocal Q, Qtot, area, last, top, t
        t_start = t
        status, Q, Qtot, area, last, top, t, n_events, n_arr, n_wait = _run(
            Q, Qtot, area, last, top, t, t_end, *kernel_args
        )
        if status == _STATUS_MAX_LEVELS:
            raise UnstableError(
                f"a queue reached max_levels = {max_levels} jobs at t = {t:.6g} "
                f"(lam = {lam:g}, capacity {capacity_total:g}, policy {policy!r}, "
                f"d = {d_out}): the policy looks unstable at this load"
            )
        duration = t_end - t_start
        micro_events.append(n_events)
        micro_arrivals.append(n_arr)
        micro_waits.append(n_wait)
        micro_routed.append(routed.copy())
        used = np.flatnonzero(area.any(axis=0))
        width = int(used[-1]) + 1 if used.size else 1
        u_b = area[:, :width] / (n_types[:, None] * duration)
        u_b[:, 0] = 1.0
        micro_u.append(u_b)
        micro_jobs.append(float(area[:, 1:width].sum()) / (N * duration))
        if chaos:
            micro_chaos.append(sum_area / duration)
        area[:] = 0.0
        routed[:] = 0
        sum_area[:] = 0.0
        bar.update(1)
        return int(n_events)

    start = time.perf_counter()
    with bar:
        run = run_micro_batches(
            step,
            lambda: np.array(micro_jobs),
            horizon=horizon,
            warmup=warmup,
            min_batches=batches,
            events_per_time=events_per_time,
            extend=extend,
            rel_precision=rel_precision,
        )
    elapsed = time.perf_counter() - start
    bm = run.batching
    first = bm.start
    events_total = int(sum(micro_events))
    events = int(sum(micro_events[first:]))

    width = max(a.shape[1] for a in micro_u[first:])
    per_micro = np.zeros((len(micro_u), n_types.size, width))
    for b, a in enumerate(micro_u):
        w = min(width, a.shape[1])
        per_micro[b, :, :w] = a[:, :w]
    per_batch = bm.merge(per_micro)
    weights_gamma = n_types / N
    per_batch_all = np.einsum("bjk,j->bk", per_batch, weights_gamma)
    est_u = batch_means_ci(per_batch, lower=0.0, upper=1.0, ar1=True)
    est_all = batch_means_ci(per_batch_all, lower=0.0, upper=1.0, ar1=True)
    est_jobs = batch_means_ci(per_batch_all[:, 1:].sum(axis=1), lower=0.0, ar1=True)
    est_jobs_type = batch_means_ci(per_batch[:, :, 1:].sum(axis=2), lower=0.0, ar1=True)
    nz = np.flatnonzero(np.asarray(est_u.mean).any(axis=0))
    K1 = int(nz[-1]) + 1
    arrivals_b = bm.merge(np.array(micro_arrivals, dtype=float))
    p_wait, p_wait_ci = _wait_probability(bm.merge(np.array(micro_waits, dtype=float)), arrivals_b)
    routed_b = bm.merge(np.array(micro_routed, dtype=float))
    route_est = [_wait_probability(routed_b[:, j], arrivals_b) for j in range(J)]
    route = np.array([r[0] for r in route_est])
    route_low = np.array([r[1][0] for r in route_est])
    route_high = np.array([r[1][1] for r in route_est])
    cov: dict[str, np.ndarray | None] = dict.fromkeys(
        ("same", "same_low", "same_high", "cross", "cross_low", "cross_high")
    )
    if chaos:
        # Covariances from batch-level averages of the chaos integrals, linearised about the
        # run's means (per-batch centring would bias them by ~ τ/batch length · Var(x)/N).
        chaos_b = bm.merge(np.array(micro_chaos))
        center = chaos_b[:, 0].mean(axis=0) / n_types
        pairs = [_batch_covariances(c, n_types, 1.0, center) for c in chaos_b]
        est_same = batch_means_ci(np.array([p[0] for p in pairs]), ar1=True)
        est_cross = batch_means_ci(np.array([p[1] for p in pairs]), ar1=True)
        for name, est in (("same", est_same), ("cross", est_cross)):
            cov[name] = np.asarray(est.mean)
            cov[f"{name}_low"] = np.asarray(est.low)
            cov[f"{name}_high"] = np.asarray(est.high)
    entropy = seq.entropy
    seed_out: int | list[int] = (
        int(entropy) if np.ndim(entropy) == 0 else [int(x) for x in np.ravel(entropy)]
    )
    return OccupancySimResult(
        u=[np.asarray(est_u.mean)[j, :K1].copy() for j in range(n_types.size)],
        u_ci_low=[np.asarray(est_u.low)[j, :K1].copy() for j in range(n_types.size)],
        u_ci_high=[np.asarray(est_u.high)[j, :K1].copy() for j in range(n_types.size)],
        u_all=np.asarray(est_all.mean)[:K1].copy(),
        u_all_ci_low=np.asarray(est_all.low)[:K1].copy(),
        u_all_ci_high=np.asarray(est_all.high)[:K1].copy(),
        mean_jobs=float(est_jobs.mean),
        mean_jobs_ci=(float(est_jobs.low), float(est_jobs.high)),
        mean_jobs_per_type=np.asarray(est_jobs_type.mean),
        mean_jobs_per_type_ci_low=np.asarray(est_jobs_type.low),
        mean_jobs_per_type_ci_high=np.asarray(est_jobs_type.high),
        mean_sojourn=float(est_jobs.mean) / lam,
        mean_sojourn_ci=(float(est_jobs.low) / lam, float(est_jobs.high) / lam),
        p_wait=p_wait,
        p_wait_ci=p_wait_ci,
        route=route,
        route_ci_low=route_low,
        route_ci_high=route_high,
        cov_same=cov["same"],
        cov_same_ci_low=cov["same_low"],
        cov_same_ci_high=cov["same_high"],
        cov_cross=cov["cross"],
        cov_cross_ci_low=cov["cross_low"],
        cov_cross_ci_high=cov["cross_high"],
        arrivals=int(sum(micro_arrivals[first : first + bm.group * bm.batches])),
        events=events,
        events_total=events_total,
        elapsed=elapsed,
        events_per_second=events_total / elapsed if elapsed > 0 else float("nan"),
        N=N,
        d=d_out,
        replace=replace,
        lam=lam,
        mu=mu,
        gamma=gamma_t,
        capacity=capacity_t,
        policy=policy,
        split=split_t,
        horizon=run.horizon,
        warmup=warmup,
        batches=bm.batches,
        seed=seed_out,
        spawn_key=tuple(int(k) for k in seq.spawn_key),
        warmup_used=run.warmup_used,
        converged=run.converged,
        batch_length=bm.group * run.micro_len,
    )
