"""The compiled event loop of the occupancy simulator (numba): state, draws, and integrals.

State (see :mod:`lbrepro.sim.occupancy` for the model): ``Q[j, k]`` = number of type-j
servers with at least k jobs, ``Qtot[k] = Σ_j Q[j, k]``, ``area[j, k]`` = ∫ Q[j, k] dt since
the last flush and ``last[j, k]`` = the time Q[j, k] last changed (integrals are closed lazily,
only for the count an event changes). The other arguments of :func:`run_kernel` are grouped:

* ``system`` = (λN, N, d, replace, policy code, max_levels, chaos enabled), scalars;
* the per-type tables of :func:`type_tables`: ``type_ints`` (rows N_j, d_j, priority order,
  Scheme 2 weight) and ``type_floats`` (rows μ C_j, cumulative split);
* the chaos accumulators ``sums``, ``sum_area``, ``sum_last`` (see
  :func:`close_chaos_stretches`), untouched unless chaos is enabled.

The entry point takes arrays and scalars, not tuples of arrays, and returns only scalars:
numba types a tuple argument in Python and boxes a returned array, microseconds per call
that add up over a run's thousands of micro-batches. Inside the kernel the same values
travel as tuples (``levels``, ``types``, ``chaos``), which costs nothing.

Every draw comes from the xoshiro256** ``state`` in a fixed order, so the path is a function
of the seed alone, whatever the micro-batch boundaries and array reallocations.

Speed (``bench/bench_kernel.py`` compares it with a C reference): one server type under
whole-pool SQ(d) without chaos — the supermarket and universality runs — takes a shorter
loop with the same draws and arithmetic (``_advance_one_pool``); level searches over few
levels count comparisons instead of branching on them; helpers are inlined and the event
loops are compiled without reference counting.
"""

from __future__ import annotations

import math

import numpy as np

from lbrepro.sim.compilation import njit
from lbrepro.sim.xoshiro import bounded_from, next_u64_from, randint, uniform, uniform_from

__all__ = [
    "POLICY_SCHEME1",
    "POLICY_SCHEME2",
    "POLICY_SQD",
    "POLICY_TYPED",
    "STATUS_MAX_LEVELS",
    "STATUS_NEED_LEVELS",
    "STATUS_OK",
    "allocate_levels",
    "chaos_arrays",
    "grow_levels",
    "last_level_at_least",
    "pool_min_level",
    "run_kernel",
    "type_min_level",
    "type_tables",
    "warm_up_kernel",
]

# Policy codes understood by the kernel ("random" runs as POLICY_TYPED, d_j = 1, p ∝ γC).
POLICY_SQD = 0
POLICY_SCHEME1 = 1
POLICY_SCHEME2 = 2
POLICY_TYPED = 3

# Rows of the per-type tables (see type_tables).
TYPE_SERVERS = 0
TYPE_SAMPLE = 1
TYPE_PRIORITY = 2
TYPE_WEIGHT = 3
TYPE_RATE = 0
TYPE_SPLIT = 1

# Up to this many candidate levels, a level search counts comparisons instead of branching.
_COUNTED_LEVELS = 16

STATUS_OK = 0
STATUS_MAX_LEVELS = 1
STATUS_NEED_LEVELS = 2


@njit(inline="always")
def last_level_at_least(row, threshold, lo, top):
    """max{k ≥ lo : row[k] ≥ threshold} for a non-increasing row with row[lo] ≥ threshold
    and row[top + 1] < threshold.

    The levels meeting the condition are lo, lo + 1, …, the answer, so with few levels it is
    lo plus a count of comparisons — no data-dependent branch, which matters because the
    outcome of each comparison is a coin flip the processor cannot predict (this count made
    the whole event loop about 15% faster than a binary search). With many levels (long
    queues, d = 1 near saturation) it gallops up from ``lo`` (steps 1, 2, 4, …) and bisects
    the last step: O(log(answer − lo)) comparisons. The answer is unique, so every search
    finds the same level. Invariant of the bisection: row[lo] satisfies the condition and
    row[hi] does not.
    """
    if top - lo <= _COUNTED_LEVELS:
        count = lo
        for k in range(lo + 1, top + 1):
            count += row[k] >= threshold
        return count
    step = 1
    hi = lo + 1
    while hi <= top and row[hi] >= threshold:
        lo = hi
        step += step
        hi = lo + step
    if hi > top + 1:
        hi = top + 1
    while hi - lo > 1:
        mid = (lo + hi) >> 1
        if row[mid] >= threshold:
            lo = mid
        else:
            hi = mid
    return lo


@njit(inline="always")
def close_level_stretch(Q, area, last, j, k, t):
    """Close the constant stretch of Q[j, k] at time t before Q[j, k] changes."""
    area[j, k] += Q[j, k] * (t - last[j, k])
    last[j, k] = t


@njit(inline="always")
def pool_min_level(Qtot, top, N, d, replace, log_comb_n_d, state):
    """Draw the least occupancy among d servers sampled from the whole pool.

    Returns m = max{k : P(min ≥ k) ≥ U} for U uniform on (0, 1], so P(m ≥ k) = P(min ≥ k).
    P(min ≥ k) is non-increasing in k, hence the searches. Invariants: level ``lo``
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
        lo = last_level_at_least(Qtot, N * root, 0, top)
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


@njit(inline="always")
def type_min_level(Q, j, top, n_j, d_j, state):
    """Draw the least occupancy among d_j servers sampled with replacement from type j.

    The same inversion as ``pool_min_level`` with replacement, on the row Q[j, ·] and N_j:
    P(min ≥ k) = (Q[j, k]/N_j)^d_j. The arithmetic is the same expression by expression, so
    a single type (Q[0] = Qtot, N_0 = N) consumes the same draw and returns the same level.
    The returned m has Q[j, m] > Q[j, m + 1] (threshold > 0), so type j has a level-m server.
    """
    u = uniform(state)
    if d_j == 1:
        root = u
    elif d_j == 2:
        root = math.sqrt(u)
    else:
        root = math.exp(math.log(u) / d_j)
    return last_level_at_least(Q[j], n_j * root, 0, top)


@njit(inline="always")
def close_chaos_stretches(sums, sum_area, sum_last, j, t):
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


@njit(cache=True, _nrt=False)
def _advance(levels, top, t, t_end, system, log_comb_n_d, types, state, routed, chaos):
    """Simulate events until t_end or until a queue reaches the last stored level.

    Returns (status, top, t, events, arrivals, waits) with status STATUS_OK at t_end, or
    STATUS_NEED_LEVELS right after the event that filled the last level (the caller grows
    the arrays and calls again; no random number is drawn in between, so the stream does not
    depend on when arrays grow). ``waits`` counts arrivals that join a server holding ≥ 1
    job; ``routed[j]`` is incremented for every arrival sent to type j.
    Never reallocates: arrays reassigned inside the hot loop would cost numba reference
    counting on every event.
    """
    Q, Qtot, area, last = levels
    lam_n, N, d, replace, policy, _, _ = system
    rates, n_types, d_types, order, weights, cum_split = types
    chaos_on, sums, sum_area, sum_last = chaos
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
            return STATUS_OK, top, t_end, events, arrivals, waits
        t += dt
        events += 1
        if uniform(state) * total_rate < lam_n:
            # ---- arrival: the least occupancy m the job meets and the type j it joins.
            m = 0
            j = 0
            if policy == POLICY_SQD:
                m = pool_min_level(Qtot, top, N, d, replace, log_comb_n_d, state)
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
                m = type_min_level(Q, j, top, n_types[j], d_types[j], state)
            else:
                # Schemes 1 and 2: visit the types in priority order (capacity descending,
                # then index), so a later type replaces the incumbent only if strictly better
                # and every tie goes to the higher capacity. Once the incumbent is idle no
                # later type can be strictly better (Scheme 1: m < 0; Scheme 2: beat ∞), and
                # the samples of the remaining types are independent of everything, so they
                # need not be drawn.
                j = order[0]
                m = type_min_level(Q, j, top, n_types[j], d_types[j], state)
                for idx in range(1, J):
                    if m == 0:
                        break
                    i = order[idx]
                    m_i = type_min_level(Q, i, top, n_types[i], d_types[i], state)
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
            close_level_stretch(Q, area, last, j, k, t)
            Q[j, k] += 1
            Qtot[k] += 1
            if chaos_on:
                # A server going from k − 1 to k jobs adds k² − (k − 1)² = 2k − 1 to Σx².
                close_chaos_stretches(sums, sum_area, sum_last, j, t)
                sums[0, j] += 1
                sums[1, j] += 2 * k - 1
            if k > top:
                top = k
                if top + 1 >= L:
                    return STATUS_NEED_LEVELS, top, t, events, arrivals, waits
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
            # (0-based) holds max{k : Q[j,k] > r} = max{k : Q[j,k] ≥ r + 1} jobs.
            lo = last_level_at_least(Q[j], randint(state, Q[j, 1]) + 1, 1, top)
            close_level_stretch(Q, area, last, j, lo, t)
            Q[j, lo] -= 1
            Qtot[lo] -= 1
            if chaos_on:
                close_chaos_stretches(sums, sum_area, sum_last, j, t)
                sums[0, j] -= 1
                sums[1, j] -= 2 * lo - 1
            if Qtot[top] == 0:
                top -= 1


@njit(cache=True, _nrt=False, error_model="numpy")
def _advance_one_pool(
    counts, area, last, top, t, t_end, lam_n, rate, N, d, replace, log_comb_n_d, state
):
    """``_advance`` for one server type under whole-pool SQ(d) without chaos, the commonest
    case: the same events from the same draws, on the single row ``counts`` (= Q[0] = Qtot)
    and the rows ``area`` and ``last`` of its integrals.

    Every arithmetic operation is the general loop's for J = 1 (its departure rate sums
    0.0 + μ C_0 Q[0, 1], which is exactly μ C_0 Q[0, 1]), so the path is bit for bit the same;
    the loop is only shorter (no type to choose, no routing count, no chaos test) and holds
    the generator's four words in local variables (stored back on return; the
    without-replacement inversion draws from the array). Divisions are by positive rates
    and sample sizes, so numpy's error model (no zero-division test) changes nothing.
    Returns what ``_advance`` returns.
    """
    L = counts.shape[0]
    events = 0
    arrivals = 0
    waits = 0
    s0, s1, s2, s3 = state[0], state[1], state[2], state[3]
    status = STATUS_OK
    while True:
        total_rate = lam_n + rate * counts[1]
        x, s0, s1, s2, s3 = next_u64_from(s0, s1, s2, s3)
        dt = -math.log(uniform_from(x)) / total_rate
        if t + dt >= t_end:
            t = t_end
            break
        t += dt
        events += 1
        x, s0, s1, s2, s3 = next_u64_from(s0, s1, s2, s3)
        if uniform_from(x) * total_rate < lam_n:
            if replace or d == 1:
                # pool_min_level's inversion with replacement, on the local generator.
                x, s0, s1, s2, s3 = next_u64_from(s0, s1, s2, s3)
                u = uniform_from(x)
                if d == 1:
                    root = u
                elif d == 2:
                    root = math.sqrt(u)
                else:
                    root = math.exp(math.log(u) / d)
                m = last_level_at_least(counts, N * root, 0, top)
            else:
                state[0], state[1], state[2], state[3] = s0, s1, s2, s3
                m = pool_min_level(counts, top, N, d, replace, log_comb_n_d, state)
                s0, s1, s2, s3 = state[0], state[1], state[2], state[3]
            arrivals += 1
            if m > 0:
                waits += 1
            k = m + 1
            area[k] += counts[k] * (t - last[k])
            last[k] = t
            counts[k] += 1
            if k > top:
                top = k
                if top + 1 >= L:
                    status = STATUS_NEED_LEVELS
                    break
        else:
            r, s0, s1, s2, s3 = bounded_from(s0, s1, s2, s3, counts[1])
            k = last_level_at_least(counts, r + 1, 1, top)
            area[k] += counts[k] * (t - last[k])
            last[k] = t
            counts[k] -= 1
            if counts[top] == 0:
                top -= 1
    state[0], state[1], state[2], state[3] = s0, s1, s2, s3
    return status, top, t, events, arrivals, waits


@njit(cache=True)
def run_kernel(
    Q, Qtot, area, last, top, t, t_end, system, type_ints, type_floats, state, routed, sums,
    sum_area, sum_last,
):  # fmt: skip
    """Simulate from t to t_end; return (status, top, t, events, arrivals, waits, width):
    events, arrivals and ``waits`` (arrivals joining a busy server) counted over this call,
    and ``width`` = 1 + the highest level whose area is non-zero (0 after
    STATUS_NEED_LEVELS).

    ``top`` is the highest level with Qtot[top] > 0 (0 when empty); the level arrays always
    have at least top + 2 levels so Q[:, top + 1] (= 0) can be read. ``status`` is STATUS_OK
    at t_end; STATUS_NEED_LEVELS at time t, right after a queue reached the last stored
    level (the caller grows the arrays with :func:`grow_levels` and calls again: no random
    number is drawn in between, so the path does not depend on when arrays grow); or
    STATUS_MAX_LEVELS if that queue holds ``max_levels`` jobs (the run stops there). The level
    arrays, ``routed`` (arrivals per type) and the chaos arrays are updated in place; except
    after STATUS_NEED_LEVELS every area is flushed to t on return.
    """
    lam_n, N, d, replace, policy, max_levels, chaos_on = system
    levels = (Q, Qtot, area, last)
    types = (
        type_floats[TYPE_RATE], type_ints[TYPE_SERVERS], type_ints[TYPE_SAMPLE],
        type_ints[TYPE_PRIORITY], type_ints[TYPE_WEIGHT], type_floats[TYPE_SPLIT],
    )  # fmt: skip
    chaos = (chaos_on, sums, sum_area, sum_last)
    log_comb_n_d = 0.0
    if not replace:
        log_comb_n_d = math.lgamma(N + 1.0) - math.lgamma(N - d + 1.0)
    if Q.shape[0] == 1 and policy == POLICY_SQD and not chaos_on:
        status, top, t, events, arrivals, waits = _advance_one_pool(
            Qtot, area[0], last[0], top, t, t_end, lam_n, type_floats[TYPE_RATE, 0], N, d,
            replace, log_comb_n_d, state,
        )  # fmt: skip
        Q[0, :] = Qtot
        routed[0] += arrivals
    else:
        status, top, t, events, arrivals, waits = _advance(
            levels, top, t, t_end, system, log_comb_n_d, types, state, routed, chaos
        )
    if status == STATUS_NEED_LEVELS:
        if top < max_levels:
            return status, top, t, events, arrivals, waits, 0
        status = STATUS_MAX_LEVELS
    for j in range(Q.shape[0]):
        for k in range(Q.shape[1]):
            area[j, k] += Q[j, k] * (t - last[j, k])
            last[j, k] = t
    if chaos_on:
        for j in range(Q.shape[0]):
            # Touching type j closes S_j, Σx²_j and the pairs (i, j); over all j that is
            # every pair (a, b), a ≤ b, at least once (repeats add zero-length stretches).
            close_chaos_stretches(sums, sum_area, sum_last, j, t)
    return status, top, t, events, arrivals, waits, _area_width(area)


@njit(inline="always")
def _area_width(area):
    """1 + the highest level with a non-zero area in some type (1 if none): the levels a
    record of ``area`` must keep."""
    for k in range(area.shape[1] - 1, 0, -1):
        for j in range(area.shape[0]):
            if area[j, k] != 0.0:
                return k + 1
    return 1


def grow_levels(
    levels: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], new_levels: int, t: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Copies of the level arrays (Q, Qtot, area, last) extended to ``new_levels`` levels."""
    Q, Qtot, area, last = levels
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


def allocate_levels(
    counts: np.ndarray, levels: int, t0: float
) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], int]:
    """The ``levels`` tuple (Q, Qtot, area, last) and ``top`` for ``counts[j, k]`` servers of
    type j holding exactly k jobs, with room for ``levels`` levels."""
    J, K = counts.shape
    Q = np.zeros((J, levels), dtype=np.int64)
    # Q[j, k] = number with ≥ k jobs = reversed cumulative sum of the exact counts.
    Q[:, :K] = np.cumsum(counts[:, ::-1], axis=1)[:, ::-1]
    Qtot = Q.sum(axis=0)
    nonzero = np.flatnonzero(Qtot)
    top = int(nonzero[-1]) if nonzero.size else 0
    area = np.zeros((J, levels), dtype=np.float64)
    last = np.full((J, levels), t0, dtype=np.float64)
    return (Q, Qtot, area, last), top


def chaos_arrays(Q: np.ndarray, t0: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Chaos accumulators (sums, sum_area, sum_last; see ``close_chaos_stretches``) for Q at t0.

    S_j = Σ_{k≥1} Q[j, k] and Σx² = Σ_{k≥1} (2k − 1) Q[j, k]: a server holding x jobs is
    counted at levels 1..x, and Σ_{k≤x} (2k − 1) = x².
    """
    J, L = Q.shape
    odd = 2 * np.arange(1, L, dtype=np.int64) - 1
    sums = np.zeros((2, J), dtype=np.int64)
    sums[0] = Q[:, 1:].sum(axis=1)
    sums[1] = Q[:, 1:] @ odd
    return sums, np.zeros((J + 2, J), dtype=np.float64), np.full((J + 1, J), t0)


def type_tables(
    rates: np.ndarray,
    servers: np.ndarray,
    sample: np.ndarray,
    priority: np.ndarray,
    weights: np.ndarray,
    cum_split: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """The kernel's per-type tables: ``type_ints`` with rows N_j, d_j, the Schemes' priority
    order and Scheme 2's integer weights; ``type_floats`` with rows μ C_j and the static
    split's cumulative probabilities (rows named by the TYPE_* constants)."""
    type_ints = np.array([servers, sample, priority, weights], dtype=np.int64)
    type_floats = np.array([rates, cum_split], dtype=np.float64)
    return type_ints, type_floats


def warm_up_kernel() -> None:
    """Compile (or load from numba's cache) the kernel on a one-server system, both ways of
    sampling, so that a run's timing excludes it (see :mod:`lbrepro.sim.compilation`)."""
    levels, top = allocate_levels(np.array([[1, 0]], dtype=np.int64), 4, 0.0)
    state = np.array([1, 2, 3, 4], dtype=np.uint64)
    ones = np.ones(1, dtype=np.int64)
    tables = type_tables(np.ones(1), ones, ones, np.zeros(1, dtype=np.int64), ones, np.ones(1))
    chaos = chaos_arrays(levels[0], 0.0)
    for replace in (True, False):
        system = (0.5, 1, 1, replace, POLICY_SQD, 3, False)
        run_kernel(*levels, top, 0.0, 0.0, system, *tables, state, np.zeros(1, np.int64), *chaos)
