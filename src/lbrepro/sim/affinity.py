"""Exact event-driven simulation of the affinity model (docs/models.md §D) with N servers.

Every server is explicit: ``n1[s]`` type-I jobs and ``n2[s]`` ∈ {0, 1} type-II jobs. Jobs
arrive at rate λN; an arrival draws d1 distinct primary servers (a partial Fisher–Yates
shuffle of a persistent permutation: O(d1), exactly uniform) and is assigned
[reconstruction, docs/models.md §D]:

1. to an idle primary server (the first idle one in the random order, i.e. uniform among the
   idle primaries) as a type-I job;
2. else to a uniformly random idle server as a type-II job (an O(1) draw from the idle set);
3. else to the primary server with the fewest jobs n1 + n2 (ties uniformly: the first
   minimal server in the random sample order) as a type-I job.

A server serves its type-I jobs at rate μ1 with preemptive priority over its type-II job,
which is served at rate μ2 only when n1 = 0. Servers are kept in three index sets (idle,
serving type I, serving type II) so an idle server and a departing server are found in O(1).
The occupancy counts c[i, j] (i capped at the last level, which lumps the tail) and their
time integrals (updated lazily, O(1) per event) give batch-means estimates of x[i, j];
arrival counts by type give waiting times by Little's law.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from lbrepro.core.args import float_arg, int_arg, run_length
from lbrepro.core.errors import ConfigError, UnstableError
from lbrepro.core.rng import seed_sequence, xoshiro_state
from lbrepro.core.stats import batch_means_ci
from lbrepro.sim.compilation import njit
from lbrepro.sim.runlength import check_budget
from lbrepro.sim.xoshiro import next_u64, randint, uniform

__all__ = [
    "AffinitySimResult",
    "Residences",
    "check_params",
    "check_state",
    "initial_servers",
    "residence_times",
    "simulate_affinity",
]

#: Levels of the count array c[i, j], i = 0..LEVELS (the last lumps i ≥ LEVELS).
LEVELS = 64
#: Levels stored in trajectory snapshots.
SNAP_LEVELS = 6

IDLE = 0
SERVING_I = 1
SERVING_II = 2


_LOW32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)


# Typical events per second on one core (N = 1000, d1 = 3), from the full run's benchmark files
# on a 2-core VM. Only an estimate: cheap points share a job by it (lbrepro.core.packing).
EVENTS_PER_SECOND = 4.0e6


@njit(inline="always")
def _bounded(x32, n, state):
    """Exactly uniform integer in [0, n) from 32 random bits x32 (Lemire; on the rare
    rejection a fresh draw from ``randint``), so one 64-bit draw serves two primaries."""
    n64 = np.uint64(n)
    m = x32 * n64
    low = m & _LOW32
    # the threshold 2^32 mod n is < n, so most draws skip its (slow) modulo
    if low < n64 and low < (np.uint64(1 << 32) - n64) % n64:
        return randint(state, n)
    return np.int64(m >> _S32)


@njit(cache=True)
def _server_class(a, b):
    """The index set of a server with a type-I and b type-II jobs: serving I, serving II or idle."""
    if a > 0:
        return SERVING_I
    if b > 0:
        return SERVING_II
    return IDLE


@njit(cache=True)
def _move(s, new_cls, members, pos, size):
    """Move server s from its current set to ``new_cls`` (swap-remove, O(1))."""
    old = members[3, s]
    if old == new_cls:
        return
    p = pos[s]
    last = members[old, size[old] - 1]
    members[old, p] = last
    pos[last] = p
    size[old] -= 1
    members[new_cls, size[new_cls]] = s
    pos[s] = size[new_cls]
    size[new_cls] += 1
    members[3, s] = new_cls


@njit(cache=True)
def _recount(c, area, last, i, j, delta, t):
    """Add delta to the count of cell (i, j), first integrating the old count up to time t."""
    area[i, j] += c[i, j] * (t - last[i, j])
    last[i, j] = t
    c[i, j] += delta


@njit(cache=True)
def _set_server(s, a, b, n1, n2, c, area, last, members, pos, size, t, top):
    """Change server s to (a, b) jobs, updating counts (lazily integrated) and sets."""
    i_old = min(n1[s], top)
    i_new = min(a, top)
    if i_old != i_new or n2[s] != b:
        _recount(c, area, last, i_old, n2[s], -1, t)
        _recount(c, area, last, i_new, b, 1, t)
    n1[s] = a
    n2[s] = b
    _move(s, _server_class(a, b), members, pos, size)


@njit(cache=True)
def _run(
    n1, n2, members, pos, size, c, area, last, perm, t, t_end, lam, mu1, mu2, d1, state,
    snap_times, snaps, snap_j2, snap_idx, counters, stop_type2,
):  # fmt: skip
    """Simulate until t_end, or until stop_type2 (> 0) servers hold a type-II job (returns a
    negative snap index then). counters: [events, arrivals I, arrivals II, queued arrivals,
    servers with a type-II job]. Snapshots c[:SNAP_LEVELS] at each snap time < t_end."""
    N = n1.shape[0]
    top = c.shape[0] - 1
    K_snap = snaps.shape[1]
    lam_n = lam * N
    n_snap = snap_times.shape[0]
    while True:
        rate = lam_n + mu1 * size[SERVING_I] + mu2 * size[SERVING_II]
        t_next = t - math.log(uniform(state)) / rate
        # snapshots of the (constant) state on [t, min(t_next, t_end))
        while snap_idx < n_snap and snap_times[snap_idx] < t_next and snap_times[snap_idx] < t_end:
            for i in range(K_snap):
                snaps[snap_idx, i, 0] = c[i, 0]
                snaps[snap_idx, i, 1] = c[i, 1]
            snap_j2[snap_idx] = counters[4]
            snap_idx += 1
        if t_next >= t_end:
            return t_end, snap_idx
        t = t_next
        counters[0] += 1
        # one uniform picks the event: arrival, type-I or type-II departure
        v = uniform(state) * rate
        if v < lam_n:
            chosen = -1
            best = -1
            best_tot = 1 << 62
            bits = np.uint64(0)
            for k in range(d1):
                # two primaries per 64-bit draw: high half for even k, low half for odd k
                if k & 1 == 0:
                    bits = next_u64(state)
                    r = k + _bounded(bits >> _S32, N - k, state)
                else:
                    r = k + _bounded(bits & _LOW32, N - k, state)
                s = perm[r]
                perm[r] = perm[k]
                perm[k] = s
                tot = n1[s] + n2[s]
                if tot == 0:
                    chosen = s
                    break
                # The partial shuffle yields the primaries in uniformly random order, so the
                # first server attaining the minimum is uniform among the tied ones.
                if tot < best_tot:
                    best = s
                    best_tot = tot
                    # With no idle server anywhere no primary holds fewer than 1 job, so the
                    # first one holding exactly 1 is already the (uniform) minimiser.
                    if tot == 1 and size[IDLE] == 0:
                        break
            if chosen >= 0:
                _set_server(chosen, 1, 0, n1, n2, c, area, last, members, pos, size, t, top)
                counters[1] += 1
            elif size[IDLE] > 0:
                s = members[IDLE, randint(state, size[IDLE])]
                _set_server(s, 0, 1, n1, n2, c, area, last, members, pos, size, t, top)
                counters[2] += 1
                counters[4] += 1
                if stop_type2 > 0 and counters[4] >= stop_type2:
                    return t, -1 - snap_idx
            else:
                _set_server(
                    best, n1[best] + 1, n2[best], n1, n2, c, area, last, members, pos, size, t, top
                )
                counters[1] += 1
                counters[3] += 1
        else:
            # (the size test guards against v landing on the boundary by rounding)
            if v - lam_n < mu1 * size[SERVING_I] or size[SERVING_II] == 0:
                s = members[SERVING_I, randint(state, size[SERVING_I])]
                _set_server(s, n1[s] - 1, n2[s], n1, n2, c, area, last, members, pos, size, t, top)
            else:
                s = members[SERVING_II, randint(state, size[SERVING_II])]
                _set_server(s, 0, 0, n1, n2, c, area, last, members, pos, size, t, top)
                counters[4] -= 1


@njit(cache=True)
def _integrate_counts(c, area, last, t):
    """Integrate every count up to time t (the end of a batch)."""
    for i in range(c.shape[0]):
        for j in range(2):
            area[i, j] += c[i, j] * (t - last[i, j])
            last[i, j] = t


def check_params(
    lam: Any, mu2: Any, mu1: Any = 1.0, d1: Any = None, N: Any = None
) -> tuple[float, float, float, int | None, int | None]:
    """Validate (λ, μ2, μ1, d1, N); return them typed. Errors name the parameter.

    Requires 0 < μ2 < μ1 (type-II service is slower), 0 < λ < μ1 (stability: the coupling
    bounds the type-I jobs by RA at load λ/μ1), 1 ≤ d1 (≤ N when N is given).
    """
    lam = float_arg("lam", lam)
    mu1 = float_arg("mu1", mu1)
    mu2 = float_arg("mu2", mu2)
    if mu1 <= 0:
        raise ConfigError("mu1", f"must be > 0, got {mu1}")
    if mu2 <= 0:
        raise ConfigError("mu2", f"must be > 0, got {mu2}")
    if mu2 >= mu1:
        raise ConfigError("mu2", f"must be < mu1 = {mu1} (type II is slower), got {mu2}")
    if lam <= 0:
        raise ConfigError("lam", f"must be > 0, got {lam}")
    if lam >= mu1:
        raise UnstableError(f"lam: load lam = {lam} >= mu1 = {mu1}: unstable, refused")
    n_out = None if N is None else int_arg("N", N, 1)
    d_out = None
    if d1 is not None:
        d_out = int_arg("d1", d1, 1)
        if n_out is not None and d_out > n_out:
            raise ConfigError("d1", f"must be <= N = {n_out}, got {d_out}")
    return lam, mu2, mu1, d_out, n_out


def check_state(x: Any, key: str = "initial") -> np.ndarray:
    """An occupancy distribution x[i, j] (shape (K+1, 2)): non-negative, summing to 1."""
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise ConfigError(key, f"must be an array of fractions x[i, j], got {x!r}") from None
    if arr.ndim != 2 or arr.shape[1] != 2 or arr.shape[0] < 2:
        raise ConfigError(key, f"must have shape (K+1, 2) with K >= 1, got {arr.shape}")
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise ConfigError(key, "fractions must be finite and >= 0")
    total = float(arr.sum())
    if abs(total - 1.0) > 1e-9:
        raise ConfigError(key, f"fractions must sum to 1 (a distribution), got {total!r}")
    return arr / total


def initial_servers(start: Any, N: int) -> tuple[np.ndarray, np.ndarray]:
    """(n1, n2) per server for a start: "empty", "type2" (one type-II job everywhere), or an
    occupancy distribution x[i, j] rounded to N servers (largest remainders)."""
    if isinstance(start, str):
        if start == "empty":
            return np.zeros(N, np.int64), np.zeros(N, np.int64)
        if start == "type2":
            return np.zeros(N, np.int64), np.ones(N, np.int64)
        raise ConfigError("start", f"must be 'empty', 'type2' or a distribution, got {start!r}")
    x = check_state(start, "start")
    flat = x.ravel() * N
    counts = np.floor(flat).astype(np.int64)
    rem = N - int(counts.sum())
    order = np.argsort(-(flat - counts), kind="stable")
    counts[order[:rem]] += 1
    n1 = np.zeros(N, np.int64)
    n2 = np.zeros(N, np.int64)
    s = 0
    for idx, cnt in enumerate(counts):
        i, j = divmod(idx, 2)
        n1[s : s + cnt] = i
        n2[s : s + cnt] = j
        s += cnt
    return n1, n2


@dataclass(frozen=True)
class AffinitySimResult:
    """Batch-means estimates and trajectory snapshots of one affinity simulation."""

    x: np.ndarray  # time-averaged x[i, j] over the measured batches (i lumps at LEVELS)
    x_ci_low: np.ndarray
    x_ci_high: np.ndarray
    batch_x: np.ndarray  # (batches, LEVELS+1, 2)
    arrivals_type1: np.ndarray  # per batch
    arrivals_type2: np.ndarray
    queued: np.ndarray  # arrivals that met no idle server, per batch
    batch_length: float
    snap_times: np.ndarray
    snaps: np.ndarray  # fractions x[i, j], i < SNAP_LEVELS, at snap_times
    snap_type2: np.ndarray  # fraction of servers holding a type-II job at snap_times
    events: int
    elapsed: float
    stopped_at: float
    N: int
    lam: float
    mu1: float
    mu2: float
    d1: int

    @property
    def events_per_second(self) -> float:
        """Simulation speed of the run (NaN when it took no measurable time)."""
        return self.events / self.elapsed if self.elapsed > 0 else float("nan")


def simulate_affinity(
    lam: float,
    mu2: float,
    mu1: float = 1.0,
    d1: int = 3,
    N: int = 1000,
    *,
    horizon: float = 100.0,
    warmup: float = 0.0,
    batches: int = 10,
    start: Any = "empty",
    seed: np.random.SeedSequence | int = 0,
    snap_times: Any = None,
    stop_type2_fraction: float | None = None,
) -> AffinitySimResult:
    """Simulate the affinity model; estimates over (warmup, horizon] in ``batches`` batches.

    With ``stop_type2_fraction`` the run ends early once that fraction of servers holds a
    type-II job (an exit from the no-queueing state); ``stopped_at`` is then its time (else
    NaN) and the estimates are not meaningful.

    Raises ConfigError (naming the parameter) for bad input and UnstableError for λ ≥ μ1.
    """
    lam, mu2, mu1, d1, N = check_params(lam, mu2, mu1, d1, N)
    assert d1 is not None and N is not None
    if N >= 2**31:
        raise ConfigError("N", f"must be < 2**31, got {N}")
    # The shared run-length rule for (horizon, warmup); batches may be 1 here: a path run
    # (tunneling, exit times) measures no interval, so its batches >= 2 does not apply.
    horizon, warmup, _ = run_length(horizon, warmup, 2)
    batches = int_arg("batches", batches, 1)
    n1, n2 = initial_servers(start, N)
    seq = seed_sequence(seed)
    state = xoshiro_state(seq)
    snap_t = np.asarray([] if snap_times is None else snap_times, dtype=np.float64)
    if snap_t.ndim != 1 or np.any(np.diff(snap_t) < 0):
        raise ConfigError("snap_times", "must be a non-decreasing 1-D sequence of times")

    members = np.zeros((4, N), dtype=np.int64)
    pos = np.zeros(N, dtype=np.int64)
    size = np.zeros(3, dtype=np.int64)
    c = np.zeros((LEVELS + 1, 2), dtype=np.int64)
    for s in range(N):
        k = _server_class(n1[s], n2[s])
        members[k, size[k]] = s
        members[3, s] = k
        pos[s] = size[k]
        size[k] += 1
        c[min(n1[s], LEVELS), n2[s]] += 1
    area = np.zeros((LEVELS + 1, 2))
    last = np.zeros((LEVELS + 1, 2))
    perm = np.arange(N, dtype=np.int64)
    snaps = np.zeros((snap_t.size, SNAP_LEVELS, 2), dtype=np.int64)
    snap_j2 = np.zeros(snap_t.size, dtype=np.int64)
    counters = np.zeros(5, dtype=np.int64)
    counters[4] = int(n2.sum())
    stop = 0
    if stop_type2_fraction is not None:
        frac = float_arg("stop_type2_fraction", stop_type2_fraction)
        if not 0 < frac <= 1:
            raise ConfigError("stop_type2_fraction", f"must lie in (0, 1], got {frac}")
        stop = max(1, math.ceil(frac * N))
    stopped_at = math.nan

    # Events ≈ arrivals + departures, both at rate λN in equilibrium.
    check_budget(2.0 * lam * N * horizon, what=f"this run (N = {N}, horizon = {horizon:g})")
    batch_len = (horizon - warmup) / batches
    ends = [warmup] + [warmup + b * batch_len for b in range(1, batches)] + [horizon]
    bx, ai, aii, aq = [], [], [], []
    t = 0.0
    snap_idx = 0
    start_clock = time.perf_counter()
    for b, t_end in enumerate(ends):
        if t_end <= t:
            continue
        before = counters.copy()
        t0 = t
        t, snap_idx = _run(
            n1, n2, members, pos, size, c, area, last, perm, t, t_end, lam, mu1, mu2, d1, state,
            snap_t, snaps, snap_j2, snap_idx, counters, stop,
        )  # fmt: skip
        _integrate_counts(c, area, last, t)
        if snap_idx < 0:
            snap_idx = -1 - snap_idx
            stopped_at = t
            if b > 0:
                bx.append(area / (N * max(t - t0, 1e-300)))
                ai.append(counters[1] - before[1])
                aii.append(counters[2] - before[2])
                aq.append(counters[3] - before[3])
            break
        if b > 0:
            bx.append(area / (N * (t - t0)))
            ai.append(counters[1] - before[1])
            aii.append(counters[2] - before[2])
            aq.append(counters[3] - before[3])
        area[:] = 0.0
    elapsed = time.perf_counter() - start_clock
    if not bx:  # stopped during the warm-up
        bx, ai, aii, aq = [area.copy()], [0], [0], [0]
    batch_x = np.array(bx)
    if batch_x.shape[0] >= 2:
        # A state never or rarely seen gets a rule-of-three bound, not [0, 0].
        est = batch_means_ci(batch_x, lower=0.0, upper=1.0, rare=True)
        low, high = np.asarray(est.low), np.asarray(est.high)
    else:
        low = high = batch_x[0]
    return AffinitySimResult(
        x=batch_x.mean(axis=0),
        x_ci_low=low,
        x_ci_high=high,
        batch_x=batch_x,
        arrivals_type1=np.array(ai),
        arrivals_type2=np.array(aii),
        queued=np.array(aq),
        batch_length=batch_len,
        snap_times=snap_t,
        snaps=snaps / N,
        snap_type2=snap_j2 / N,
        events=int(counters[0]),
        elapsed=elapsed,
        stopped_at=stopped_at,
        N=N,
        lam=lam,
        mu1=mu1,
        mu2=mu2,
        d1=d1,
    )


class Residences(NamedTuple):
    """The stays of a sampled path in the two quasi-stable states (:func:`residence_times`).

    ``low`` and ``high`` are the complete stays; ``switches`` counts the switches; ``last`` is
    the stay the path was still in when observation ended, ``(state, time so far)`` with state
    ``"low"`` or ``"high"`` (None if the path never switched): a right-censored stay, which an
    estimate of the mean stay must count as censored (Kaplan–Meier), not drop: it is a stay
    at least that long, and when it is the longest so far the mean is only bounded below.
    """

    low: list[float]
    high: list[float]
    switches: int
    last: tuple[str, float] | None


def residence_times(times: np.ndarray, h: np.ndarray, low: float, high: float) -> Residences:
    """Residence times in the two quasi-stable states of a sampled path h(t), with hysteresis.

    The path is in the low state after h ≤ ``low`` and in the high state after h ≥ ``high``;
    in between it keeps its last state (so fluctuations near one state are not switches).
    The first stretch (begun before a state was entered, its start unknown) is dropped; the
    last one, cut off by the end of observation at ``times[-1]``, is returned as ``last``.
    """
    state = 0
    entered = math.nan
    low_res: list[float] = []
    high_res: list[float] = []
    switches = 0
    for t, v in zip(times, h, strict=True):
        new = -1 if v <= low else (1 if v >= high else state)
        if new != state:
            if state != 0:
                switches += 1
                if not math.isnan(entered):
                    (low_res if state == -1 else high_res).append(float(t - entered))
                entered = float(t)
            else:
                entered = math.nan
            state = new
    last = None
    if state != 0 and not math.isnan(entered) and len(times):
        last = ("low" if state == -1 else "high", float(times[-1] - entered))
    return Residences(low_res, high_res, switches, last)
