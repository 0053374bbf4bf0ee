"""Exact event-driven simulation of exchangeable exponential servers by occupancy counts.

Model (spec §S, §A, §E): N servers in types j = 1..J; type j holds N_j = γ_j N servers of
capacity C_j, and a busy type-j server completes jobs at rate μ C_j whatever its occupancy
(FCFS and processor sharing give the same occupancy process). Jobs arrive as a Poisson
process of rate λN and are routed by a policy. Implemented policy: whole-pool SQ(d) — sample
d servers from all N (with replacement, or without when ``replace=False``; d = N without
replacement is JSQ), join the least occupied, ties uniformly among the tied sampled servers.

Servers of one type are exchangeable, so the state is only Q[j, k] = number of type-j
servers with at least k jobs (Q[j, 0] = N_j) and Qtot[k] = Σ_j Q[j, k]. Every event costs
O(log levels + J) work, independent of N and d:

* arrival: the minimum occupancy m of the sample has P(min ≥ k) = (Qtot[k]/N)^d with
  replacement and C(Qtot[k], d)/C(N, d) without; it is drawn by inversion with a binary
  search over levels, then the type of the joined server is drawn ∝ Q[j, m] − Q[j, m+1];
* departure: the type is drawn ∝ μ C_j Q[j, 1], then a uniformly random busy server of that
  type, whose level is found by binary search in Q[j, ·];
* time integrals ∫ Q[j, k] dt are accumulated lazily, only when Q[j, k] changes, and flushed
  at batch boundaries;
* arrivals, and arrivals whose sampled minimum m is ≥ 1 (the job joins a busy server and
  waits under FCFS), are counted per batch: their ratio is the waiting probability, an
  arrival average that equals the time-stationary P(min of the sample ≥ 1) by PASTA.

Stopping the clock at a batch boundary and drawing a fresh inter-event time in the next call
is exact because the inter-event time is exponential (memoryless) and the state has not
changed.
"""

from __future__ import annotations

import math
import operator
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import njit
from tqdm import tqdm

from lbrepro.core.errors import ConfigError, UnstableError
from lbrepro.core.rng import stream, xoshiro_state
from lbrepro.core.stats import batch_means_ci
from lbrepro.sim.xoshiro import randint, uniform

__all__ = ["OccupancySimResult", "simulate_occupancy"]

# Policy codes understood by the kernel. Schemes 1 and 2 of the heterogeneous model (spec §A)
# sample d_j servers inside each type; they fit the same state and only need another arrival
# routine (per-type minimum by the same inversion on Q[j, k]/N_j), selected by a new code.
POLICY_SQD = 0
_POLICY_NAMES = {POLICY_SQD: "sqd"}

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
def _advance(
    Q, Qtot, area, last, top, t, t_end, lam_n, rates, N, d, replace, policy, log_comb_n_d, state
):
    """Simulate events until t_end or until a queue reaches the last stored level.

    Returns (status, top, t, events, arrivals, waits) with status _STATUS_OK at t_end, or
    _STATUS_NEED_LEVELS right after the event that filled the last level (the caller grows
    the arrays and calls again; no random number is drawn in between, so the stream does not
    depend on when arrays grow). ``waits`` counts arrivals whose sampled minimum is ≥ 1.
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
            # ---- arrival
            m = 0
            if policy == POLICY_SQD:
                m = _sqd_min_level(Qtot, top, N, d, replace, log_comb_n_d, state)
            arrivals += 1
            if m > 0:
                waits += 1
            # The joined server is uniform among ALL servers holding exactly m jobs: the
            # sample's law (i.i.d. uniform draws, or a uniform subset) and the uniform tie
            # break are both invariant under any permutation of servers that preserves
            # occupancies, so the chosen server's conditional law given min = m is invariant
            # under permutations of the level-m servers, i.e. uniform over them. Its type is
            # therefore j with probability (Q[j,m] − Q[j,m+1]) / (Qtot[m] − Qtot[m+1]),
            # whatever d and the sampling scheme. The search returned m with
            # Qtot[m] > Qtot[m+1] (equal counts give equal probabilities), so the weight is > 0.
            j = 0
            if J > 1:
                r = randint(state, Qtot[m] - Qtot[m + 1])
                while True:
                    w = Q[j, m] - Q[j, m + 1]
                    if r < w:
                        break
                    r -= w
                    j += 1
            k = m + 1
            _touch(Q, area, last, j, k, t)
            Q[j, k] += 1
            Qtot[k] += 1
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
):
    """Simulate from t to t_end; return (status, Q, Qtot, area, last, top, t, events, arrivals,
    waits), the last three counted over this call (``waits``: arrivals with sampled min ≥ 1).

    ``top`` is the highest level with Qtot[top] > 0 (0 when empty); the arrays always have
    at least top + 2 levels so Q[:, top + 1] (= 0) can be read. They are reallocated (up to
    max_levels + 1 levels) when a queue reaches the last level, which is why they are
    returned. On return every area is flushed to t. ``status`` is _STATUS_MAX_LEVELS if a
    queue reached ``max_levels`` jobs (the run stops there, at time t).
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


_compiled = False


def _ensure_compiled() -> None:
    """Compile (or load from numba's cache) the kernel outside the timed region."""
    global _compiled
    if _compiled:
        return
    Q, Qtot, area, last, top = _allocate(np.array([[1, 0]], dtype=np.int64), 4, 0.0)
    state = np.array([1, 2, 3, 4], dtype=np.uint64)
    rates = np.ones(1, dtype=np.float64)
    for replace in (True, False):
        _run(Q, Qtot, area, last, top, 0.0, 0.0, 0.5, rates, 1, 1, replace, POLICY_SQD, 3, state)
    _compiled = True


@dataclass(frozen=True)
class OccupancySimResult:
    """Time averages of one occupancy simulation, with 95% batch-means intervals.

    ``u[j][k]`` is the time-averaged fraction of type-j servers with at least k jobs,
    k = 0..K (``u[j][0] = 1``); every array has the same length K + 1, where K is the
    highest level with a non-zero average in any type (trailing all-zero levels are
    trimmed, so a type may still end with zeros). ``u_all = Σ_j γ_j u_j``.
    ``mean_jobs`` is per server over all types, ``mean_sojourn = mean_jobs / lam`` (Little's
    law). ``p_wait`` is the fraction of post-warm-up arrivals whose sampled minimum occupancy
    is ≥ 1 (they join a busy server, so wait under FCFS); by PASTA it is also the
    time-stationary probability that an arrival would wait. Its interval is centred on it
    with the half-width of the batch means of the per-batch fractions (NaN if a batch saw
    no arrival). ``arrivals`` counts post-warm-up arrivals.
    ``events`` counts events after warm-up, ``events_total`` includes warm-up;
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
    mean_sojourn: float
    mean_sojourn_ci: tuple[float, float]
    p_wait: float
    p_wait_ci: tuple[float, float]
    arrivals: int
    events: int
    events_total: int
    elapsed: float
    events_per_second: float
    N: int
    d: int
    replace: bool
    lam: float
    mu: float
    gamma: tuple[float, ...]
    capacity: tuple[float, ...]
    policy: str
    horizon: float
    warmup: float
    batches: int
    seed: int | list[int]
    spawn_key: tuple[int, ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable summary (plain lists, floats and ints).

        Keys: ``u`` (list per type of lists over k), ``u_all``, ``mean_jobs``,
        ``mean_sojourn``, ``p_wait``, ``ci``, ``N``, ``d``, ``replace``, ``lam``, ``mu``,
        ``gamma``, ``capacity``, ``policy``, ``horizon``, ``warmup``, ``batches``, ``seed``,
        ``spawn_key``, ``arrivals``, ``events``, ``events_total``, ``elapsed``,
        ``events_per_second``. ``ci[q] = [low, high]`` for q in ``u``, ``u_all``,
        ``mean_jobs``, ``mean_sojourn``, ``p_wait``,
        where ``low`` and ``high`` have the same nesting as the value of q (for ``u``:
        ``ci["u"][0][j][k]`` is the lower bound of ``u[j][k]``) — parallel arrays, not pairs.
        """
        return {
            "u": [a.tolist() for a in self.u],
            "u_all": self.u_all.tolist(),
            "mean_jobs": self.mean_jobs,
            "mean_sojourn": self.mean_sojourn,
            "p_wait": self.p_wait,
            "ci": {
                "u": [[a.tolist() for a in self.u_ci_low], [a.tolist() for a in self.u_ci_high]],
                "u_all": [self.u_all_ci_low.tolist(), self.u_all_ci_high.tolist()],
                "mean_jobs": list(self.mean_jobs_ci),
                "mean_sojourn": list(self.mean_sojourn_ci),
                "p_wait": list(self.p_wait_ci),
            },
            "N": self.N,
            "d": self.d,
            "replace": self.replace,
            "lam": self.lam,
            "mu": self.mu,
            "gamma": list(self.gamma),
            "capacity": list(self.capacity),
            "policy": self.policy,
            "horizon": self.horizon,
            "warmup": self.warmup,
            "batches": self.batches,
            "seed": self.seed,
            "spawn_key": list(self.spawn_key),
            "arrivals": self.arrivals,
            "events": self.events,
            "events_total": self.events_total,
            "elapsed": self.elapsed,
            "events_per_second": self.events_per_second,
        }


def _int_arg(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool | np.bool_):
        raise ConfigError(name, f"must be an integer, got {value!r}")
    try:
        out = operator.index(value)
    except TypeError:
        raise ConfigError(name, f"must be an integer, got {value!r}") from None
    if out < minimum:
        raise ConfigError(name, f"must be >= {minimum}, got {out}")
    return out


def _float_arg(name: str, value: Any) -> float:
    if isinstance(value, bool | np.bool_):
        raise ConfigError(name, f"must be a real number, got {value!r}")
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise ConfigError(name, f"must be a real number, got {value!r}") from None
    if not math.isfinite(out):
        raise ConfigError(name, f"must be finite, got {out}")
    return out


def _float_seq(name: str, value: Any) -> tuple[float, ...]:
    if isinstance(value, str | bytes):
        raise ConfigError(name, f"must be a sequence of numbers, got {value!r}")
    try:
        items = list(value)
    except TypeError:
        raise ConfigError(name, f"must be a sequence of numbers, got {value!r}") from None
    if not items:
        raise ConfigError(name, "must not be empty")
    return tuple(_float_arg(name, x) for x in items)


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

    The estimate is Σ waits / Σ arrivals (every arrival weighs the same); the interval is
    centred on it with the half-width of the batch means of the per-batch fractions. Batches
    without arrivals have no fraction, so the interval is then NaN (batches too short).
    """
    total = int(arrivals.sum())
    p = int(waits.sum()) / total if total > 0 else math.nan
    if np.any(arrivals == 0):
        return p, (math.nan, math.nan)
    half = float(batch_means_ci(waits / arrivals).half_width)
    return p, (p - half, p + half)


def _seed_sequence(seed: np.random.SeedSequence | int) -> np.random.SeedSequence:
    if isinstance(seed, np.random.SeedSequence):
        return seed
    return stream(seed)


def simulate_occupancy(
    *,
    lam: float,
    N: int,
    d: int,
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
) -> OccupancySimResult:
    """Simulate whole-pool SQ(d) on N exchangeable exponential servers of J types.

    Parameters
    ----------
    lam
        Arrival rate per server (total rate lam * N).
    N, d
        Number of servers and sample size (1 <= d; d <= N when ``replace`` is False).
    horizon, warmup
        Simulated time: [0, warmup) is discarded, [warmup, horizon) is split into
        ``batches`` equal batches for the confidence intervals.
    seed
        An int (used as ``lbrepro.core.rng.stream(seed)``) or a SeedSequence, which should be
        dedicated to this run: the generator state is ``seq.generate_state(4)``.
    mu, gamma, capacity
        Service rate per unit capacity, fractions of servers per type (γ_j N must be
        integers), capacities C_j.
    replace
        Sample with (True, the mean-field convention) or without replacement.
    batches
        Number of batches (>= 2); the kernel runs once per batch.
    progress
        Show a tqdm bar on stderr advancing per batch.
    max_levels
        Stop with UnstableError if a queue reaches this many jobs.
    initial
        Optional initial state, ``initial[j, k]`` = number of type-j servers holding exactly
        k jobs; default empty.

    Returns
    -------
    OccupancySimResult

    Raises
    ------
    ConfigError
        For an invalid argument (the message names it), before any simulation.
    UnstableError
        If lam >= mu Σ_j γ_j C_j (the maximal stability region), or if a queue reaches
        ``max_levels`` jobs during the run. Whole-pool SQ(d) with heterogeneous capacities
        can be unstable inside the maximal region (spec §A); such runs are simulated and end
        either at the horizon or with this error.
    """
    lam = _float_arg("lam", lam)
    if lam <= 0:
        raise ConfigError("lam", f"must be > 0, got {lam}")
    mu = _float_arg("mu", mu)
    if mu <= 0:
        raise ConfigError("mu", f"must be > 0, got {mu}")
    N = _int_arg("N", N, 1)
    if N > _MAX_N:
        raise ConfigError("N", f"must be < 2**32, got {N}")
    d = _int_arg("d", d, 1)
    if not isinstance(replace, bool | np.bool_):
        raise ConfigError("replace", f"must be a bool, got {replace!r}")
    replace = bool(replace)
    if not replace and d > N:
        raise ConfigError("d", f"cannot sample d = {d} of N = {N} servers without replacement")
    capacity_t = _float_seq("capacity", capacity)
    if any(c <= 0 for c in capacity_t):
        raise ConfigError("capacity", f"capacities must be > 0, got {list(capacity_t)}")
    gamma_t = _float_seq("gamma", gamma)
    if len(gamma_t) != len(capacity_t):
        raise ConfigError("capacity", f"has {len(capacity_t)} entries but gamma has {len(gamma_t)}")
    if any(g <= 0 for g in gamma_t):
        raise ConfigError("gamma", f"fractions must be > 0, got {list(gamma_t)}")
    if abs(math.fsum(gamma_t) - 1.0) > 1e-9:
        raise ConfigError("gamma", f"fractions must sum to 1, got {math.fsum(gamma_t)!r}")
    n_types = _server_counts(gamma_t, N)
    horizon = _float_arg("horizon", horizon)
    warmup = _float_arg("warmup", warmup)
    if warmup < 0:
        raise ConfigError("warmup", f"must be >= 0, got {warmup}")
    if horizon <= warmup:
        raise ConfigError("horizon", f"must exceed warmup = {warmup}, got {horizon}")
    batches = _int_arg("batches", batches, 2)
    max_levels = _int_arg("max_levels", max_levels, 2)
    counts = _initial_counts(initial, n_types)
    if counts.shape[1] - 1 >= max_levels and np.any(counts[:, max_levels:]):
        raise ConfigError("initial", f"holds a queue of >= max_levels = {max_levels} jobs")
    seq = _seed_sequence(seed)

    capacity_total = mu * math.fsum(g * c for g, c in zip(gamma_t, capacity_t, strict=True))
    if lam >= capacity_total:
        raise UnstableError(
            f"load lam = {lam:g} >= capacity mu * sum(gamma_j * C_j) = {capacity_total:g}: "
            "unstable, refusing to simulate"
        )

    levels = max(min(_INITIAL_LEVELS, max_levels + 1), counts.shape[1] + 1)
    Q, Qtot, area, last, top = _allocate(counts, levels, 0.0)
    state = xoshiro_state(seq)
    rates = mu * np.asarray(capacity_t, dtype=np.float64)
    lam_n = lam * N
    kernel_args = (lam_n, rates, N, d, replace, POLICY_SQD, max_levels, state)

    _ensure_compiled()
    batch_len = (horizon - warmup) / batches
    ends = [warmup + b * batch_len for b in range(1, batches)] + [horizon]
    batch_u: list[np.ndarray] = []
    batch_arrivals: list[int] = []
    batch_waits: list[int] = []
    events = 0
    events_total = 0
    t = 0.0
    start = time.perf_counter()
    with tqdm(
        total=batches, desc="occupancy sim", unit="batch", disable=not progress, file=sys.stderr
    ) as bar:
        for b in range(-1, batches):
            t_end = warmup if b < 0 else ends[b]
            t_start = t
            if t_end <= t_start:
                continue
            status, Q, Qtot, area, last, top, t, n_events, n_arr, n_wait = _run(
                Q, Qtot, area, last, top, t, t_end, *kernel_args
            )
            events_total += n_events
            if status == _STATUS_MAX_LEVELS:
                raise UnstableError(
                    f"a queue reached max_levels = {max_levels} jobs at t = {t:.6g} "
                    f"(lam = {lam:g}, capacity {capacity_total:g}, d = {d}): the policy "
                    "looks unstable at this load"
                )
            if b >= 0:
                events += n_events
                batch_arrivals.append(n_arr)
                batch_waits.append(n_wait)
                used = np.flatnonzero(area.any(axis=0))
                width = int(used[-1]) + 1 if used.size else 1
                u_b = area[:, :width] / (n_types[:, None] * (t_end - t_start))
                u_b[:, 0] = 1.0
                batch_u.append(u_b)
                bar.update(1)
            area[:] = 0.0
    elapsed = time.perf_counter() - start

    width = max(a.shape[1] for a in batch_u)
    per_batch = np.zeros((batches, n_types.size, width))
    for b, a in enumerate(batch_u):
        per_batch[b, :, : a.shape[1]] = a
    weights = n_types / N
    per_batch_all = np.einsum("bjk,j->bk", per_batch, weights)
    est_u = batch_means_ci(per_batch)
    est_all = batch_means_ci(per_batch_all)
    est_jobs = batch_means_ci(per_batch_all[:, 1:].sum(axis=1))
    nz = np.flatnonzero(np.asarray(est_u.mean).any(axis=0))
    K1 = int(nz[-1]) + 1
    p_wait, p_wait_ci = _wait_probability(
        np.array(batch_waits, dtype=np.int64), np.array(batch_arrivals, dtype=np.int64)
    )

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
        mean_sojourn=float(est_jobs.mean) / lam,
        mean_sojourn_ci=(float(est_jobs.low) / lam, float(est_jobs.high) / lam),
        p_wait=p_wait,
        p_wait_ci=p_wait_ci,
        arrivals=int(sum(batch_arrivals)),
        events=events,
        events_total=events_total,
        elapsed=elapsed,
        events_per_second=events_total / elapsed if elapsed > 0 else float("nan"),
        N=N,
        d=d,
        replace=replace,
        lam=lam,
        mu=mu,
        gamma=gamma_t,
        capacity=capacity_t,
        policy=_POLICY_NAMES[POLICY_SQD],
        horizon=horizon,
        warmup=warmup,
        batches=batches,
        seed=seed_out,
        spawn_key=tuple(int(k) for k in seq.spawn_key),
    )
