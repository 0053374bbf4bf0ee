"""Event-driven simulation of the FCFS supermarket model with general service (docs/models.md §C).

N FCFS servers, Poisson arrivals of rate λN, each job joins the shortest of d servers sampled
uniformly with replacement (ties uniformly among the tied draws, reservoir sampling), service
times i.i.d. from a service distribution given by its kernel encoding
(:class:`lbrepro.sim.service_sampling.ServiceSampling`, which every
``lbrepro.models.service.ServiceDist`` provides as ``.sampling``).

Why per-server: with non-exponential service a server's future depends on the elapsed
service of the job in progress, so occupancy counts are no longer a Markov state. The kernel
keeps every queue length ``q[i]`` and, for every busy server, the absolute time at which its
current job completes, in a binary min-heap (the event calendar; O(log N) per event). The next
arrival time is stored too, so a batch boundary simply stops the clock between two events.

Time averages are kept lazily: ``Q[k]`` = number of servers with ≥ k jobs changes at one
level per event, and ``∫Q[k] dt`` is closed only for that level (O(1) per event, plus O(d) for
the sample and O(log N) for the heap). Mean jobs per server is Σ_k u_k and the mean sojourn
time follows by Little's law, E[T] = E[jobs per server]/λ.

Service sampling is dispatched inside the kernel on the encoding's ``code`` with its
``params`` (:func:`lbrepro.sim.service_sampling.sample_service`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from lbrepro.core.args import int_arg, positive_arg, run_length
from lbrepro.core.errors import ConfigError, UnstableError
from lbrepro.core.rng import seed_sequence, xoshiro_state
from lbrepro.sim.compilation import ensure_compiled, njit
from lbrepro.sim.estimates import EstimatesMixin
from lbrepro.sim.runlength import RunLength, check_budget, relaxation_time, run_micro_batches
from lbrepro.sim.service_sampling import ServiceSampling, SupportsSampling, sample_service
from lbrepro.sim.xoshiro import randint, uniform

__all__ = ["GeneralSimResult", "simulate_general"]

_STATUS_OK = 0
_STATUS_NEED_LEVELS = 1
_INITIAL_LEVELS = 64
_MAX_N = 2**32 - 1


# Typical events per second on one core (N = 1000, d = 2), from the full run's benchmark files
# on a 2-core VM. Only an estimate: cheap points share a job by it (lbrepro.core.packing).
EVENTS_PER_SECOND = 1.6e7


@njit(cache=True)
def _exponential(state, rate):
    """An exponential time of the given rate from the kernel's stream (first arrival)."""
    return -math.log(uniform(state)) / rate


@njit(inline="always")
def _sift_down(ht, hs, n, i):
    """Restore the min-heap (completion times ``ht``, servers ``hs``, size n) below slot i."""
    x_t = ht[i]
    x_s = hs[i]
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n and ht[c + 1] < ht[c]:
            c += 1
        if ht[c] >= x_t:
            break
        ht[i] = ht[c]
        hs[i] = hs[c]
        i = c
    ht[i] = x_t
    hs[i] = x_s


@njit(inline="always")
def _push(ht, hs, n, t_done, srv):
    """Insert server ``srv`` completing at ``t_done`` into the heap of size n (sift up)."""
    i = n
    while i > 0:
        parent = (i - 1) >> 1
        if ht[parent] <= t_done:
            break
        ht[i] = ht[parent]
        hs[i] = hs[parent]
        i = parent
    ht[i] = t_done
    hs[i] = srv


@njit(cache=True, _nrt=False)
def _advance(q, ht, hs, clock, Q, area, last, t_end, lam_n, N, d, code, p, state, counters):
    """Simulate until t_end (or until a queue reaches the last stored level).

    ``clock`` = [t, next arrival time, heap size, top level]; ``counters`` = [events,
    arrivals] (both mutated in place). Returns a status code; at t_end (_STATUS_OK) every
    level's stretch is closed there, so ``area`` holds the micro-batch's integrals. Compiled
    without reference counting: the loop allocates nothing, and the heap and sampling
    helpers are inlined into it.
    """
    L = Q.shape[0]
    t = clock[0]
    t_arr = clock[1]
    n = int(clock[2])
    top = int(clock[3])
    events = 0
    arrivals = 0
    status = _STATUS_OK
    while True:
        t_dep = ht[0] if n > 0 else np.inf
        if t_arr <= t_dep:
            if t_arr >= t_end:
                break
            t = t_arr
            t_arr = t - math.log(uniform(state)) / lam_n
            # Join the shortest of d servers sampled with replacement; ties uniformly.
            best = randint(state, N)
            best_q = q[best]
            ties = 1
            for _ in range(d - 1):
                s = randint(state, N)
                qs = q[s]
                if qs < best_q:
                    best = s
                    best_q = qs
                    ties = 1
                elif qs == best_q:
                    ties += 1
                    if randint(state, ties) == 0:
                        best = s
            k = best_q + 1
            area[k] += Q[k] * (t - last[k])
            last[k] = t
            Q[k] += 1
            q[best] = k
            if k == 1:
                _push(ht, hs, n, t + sample_service(code, p, state), best)
                n += 1
            events += 1
            arrivals += 1
            if k > top:
                top = k
                if top + 1 >= L:
                    status = _STATUS_NEED_LEVELS
                    break
        else:
            if t_dep >= t_end:
                break
            t = t_dep
            s = hs[0]
            k = q[s]
            area[k] += Q[k] * (t - last[k])
            last[k] = t
            Q[k] -= 1
            q[s] = k - 1
            if k > 1:
                ht[0] = t + sample_service(code, p, state)
                _sift_down(ht, hs, n, 0)
            else:
                n -= 1
                if n > 0:
                    ht[0] = ht[n]
                    hs[0] = hs[n]
                    _sift_down(ht, hs, n, 0)
            events += 1
    if status == _STATUS_OK:
        t = t_end
        for k in range(L):
            area[k] += Q[k] * (t_end - last[k])
            last[k] = t_end
    clock[0] = t
    clock[1] = t_arr
    clock[2] = n
    clock[3] = top
    counters[0] += events
    counters[1] += arrivals
    return status


@dataclass(frozen=True, eq=False)
class GeneralSimResult(EstimatesMixin):
    """Time averages of one simulation run with 95% batch-means intervals.

    ``u[k]`` (k = 0..K) is the time-average fraction of servers with ≥ k jobs;
    ``mean_sojourn`` comes from Little's law with the configured λ. ``horizon`` is the time
    run, ``warmup_used`` the time discarded, ``batches`` the batches of the intervals and
    ``converged`` whether they are honest (``lbrepro.sim.runlength.slow_run_problem``).
    """

    u: np.ndarray
    u_ci_low: np.ndarray
    u_ci_high: np.ndarray
    mean_jobs: float
    mean_jobs_ci: tuple[float, float]
    mean_sojourn: float
    mean_sojourn_ci: tuple[float, float]
    arrivals: int
    events: int
    events_total: int
    elapsed: float
    events_per_second: float
    max_queue: int
    N: int
    d: int
    lam: float
    dist: str
    horizon: float
    warmup: float
    batches: int
    seed: int | list[int]
    warmup_used: float = math.nan
    converged: bool = True
    looks: int = 1


def _grow(
    Q: np.ndarray, area: np.ndarray, last: np.ndarray, t: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Double the level arrays; the new levels hold no server, no area, last update t."""
    L = Q.shape[0]
    Q2 = np.zeros(2 * L, dtype=np.int64)
    a2 = np.zeros(2 * L)
    l2 = np.full(2 * L, t)
    Q2[:L], a2[:L], l2[:L] = Q, area, last
    return Q2, a2, l2


def _warm_up_kernel() -> None:
    """Compile (or load from numba's cache) the kernel on two servers, outside the timing."""
    st = np.array([1, 2, 3, 4], dtype=np.uint64)
    q = np.zeros(2, dtype=np.int64)
    _advance(
        q,
        np.zeros(2),
        np.zeros(2, dtype=np.int64),
        np.array([0.0, 0.1, 0.0, 0.0]),
        np.array([2, 0, 0, 0], dtype=np.int64),
        np.zeros(4),
        np.zeros(4),
        0.05,
        1.0,
        2,
        1,
        0,
        np.array([1.0]),
        st,
        np.zeros(2, dtype=np.int64),
    )


def simulate_general(
    *,
    dist: ServiceSampling | SupportsSampling,
    lam: float,
    d: int,
    N: int,
    horizon: float,
    warmup: float,
    seed: np.random.SeedSequence | int,
    batches: int = 20,
    max_levels: int = 1 << 22,
    needed: Callable[[GeneralSimResult], float] | None = None,
) -> GeneralSimResult:
    """Simulate the FCFS supermarket model with general service, JSQ(d) with replacement.

    ``dist`` is the service distribution: a ``lbrepro.models.service.ServiceDist`` (anything
    with a ``.sampling``) or its :class:`ServiceSampling` directly. Starts empty and records
    micro-batches from time 0; at least ``warmup`` is discarded (more if MSER-5 asks), the
    rest merged into at least ``batches`` batches whose means pass a von Neumann test, and
    the run doubles while they do not (see :mod:`lbrepro.sim.runlength`). ``needed``: from
    the run so far, the run-length factor that would decide the claims it serves; the run
    doubles while that is within reach (sequential doubling until decided).

    Raises
    ------
    ConfigError
        For an invalid argument (named in the message).
    UnstableError
        If ρ = λE[X] ≥ 1, or a queue reaches ``max_levels`` jobs.
    """
    sampling = dist if isinstance(dist, ServiceSampling) else getattr(dist, "sampling", None)
    if not isinstance(sampling, ServiceSampling):
        raise ConfigError("dist", f"must be a ServiceDist or a ServiceSampling, got {dist!r}")
    lam = positive_arg("lam", lam)
    d = int_arg("d", d, 1)
    N = int_arg("N", N, 1)
    if N > _MAX_N:
        raise ConfigError("N", f"must be < 2**32, got {N}")
    horizon, warmup, batches = run_length(horizon, warmup, batches)
    rho = lam * sampling.mean
    if rho >= 1:
        raise UnstableError(f"load rho = lam * E[X] = {rho:g} >= 1: unstable, refusing to simulate")
    seq = seed_sequence(seed)
    state = xoshiro_state(seq)

    q = np.zeros(N, dtype=np.int64)
    ht = np.zeros(N)
    hs = np.zeros(N, dtype=np.int64)
    Q = np.zeros(_INITIAL_LEVELS, dtype=np.int64)
    Q[0] = N
    area = np.zeros(_INITIAL_LEVELS)
    last = np.zeros(_INITIAL_LEVELS)
    lam_n = lam * N
    # First arrival: drawn from the same stream as every later one.
    clock = np.array([0.0, _exponential(state, lam_n), 0.0, 0.0])
    counters = np.zeros(2, dtype=np.int64)
    params = np.asarray(sampling.params, dtype=np.float64)

    ensure_compiled(_warm_up_kernel)
    check_budget(2.0 * lam_n * horizon, what=f"this run (N = {N}, horizon = {horizon:g})")
    # Micro-batches from time 0 (see lbrepro.sim.runlength): the kernel returns after each,
    # its levels' integrals in a fresh ``area`` array (kept as the record, no copy); the
    # tail fractions derived from a record are computed when asked for (``tails``).
    micro_area: list[np.ndarray] = []
    micro_duration: list[float] = []
    micro_u: list[np.ndarray] = []
    micro_arr: list[int] = []
    micro_events: list[int] = []

    def tails() -> list[np.ndarray]:
        """Every micro-batch's time-averaged fractions of servers with ≥ k jobs so far."""
        for a, duration in zip(
            micro_area[len(micro_u) :], micro_duration[len(micro_u) :], strict=True
        ):
            u_b = a / (N * duration)
            u_b[0] = 1.0
            micro_u.append(u_b)
        return micro_u

    def step(t_end: float) -> int:
        """Run one micro-batch (growing the level arrays as needed); return its events."""
        nonlocal Q, area, last
        t_start = clock[0]
        ev0, ar0 = int(counters[0]), int(counters[1])
        while True:
            status = _advance(
                q, ht, hs, clock, Q, area, last, t_end, lam_n, N, d, sampling.code, params, state,
                counters,
            )  # fmt: skip
            if status == _STATUS_OK:
                break
            if Q.shape[0] * 2 > max_levels:
                raise UnstableError(
                    f"a queue reached {Q.shape[0] - 1} jobs (max_levels = {max_levels}) at "
                    f"t = {clock[0]:.6g}: the system looks unstable"
                )
            Q, area, last = _grow(Q, area, last, clock[0])
        micro_events.append(int(counters[0]) - ev0)
        micro_arr.append(int(counters[1]) - ar0)
        micro_area.append(area)
        micro_duration.append(t_end - t_start)
        area = np.zeros_like(area)
        return micro_events[-1]

    def result(run: RunLength, elapsed: float) -> GeneralSimResult:
        """The run's estimates and facts, as the run length ``run`` decided them."""
        bm = run.batching
        used = slice(bm.start, bm.start + bm.group * bm.batches)
        events = int(sum(micro_events[bm.start :]))
        batch_arr = micro_arr[used]
        tails()
        width = max(a.size for a in micro_u)
        per_micro = np.zeros((len(micro_u), width))
        for i, a in enumerate(micro_u):
            per_micro[i, : a.size] = a
        per_batch = bm.merge(per_micro)
        est_u = bm.ci(per_batch, lower=0.0, upper=1.0, ar1=True, rare=True)
        est_jobs = bm.ci(per_batch[:, 1:].sum(axis=1), lower=0.0, ar1=True)
        nz = np.flatnonzero(np.asarray(est_u.mean) > 0)
        K1 = int(nz[-1]) + 1
        entropy = seq.entropy
        seed_out: int | list[int] = (
            int(entropy) if np.ndim(entropy) == 0 else [int(x) for x in np.ravel(entropy)]
        )
        total = int(counters[0])
        return GeneralSimResult(
            u=np.asarray(est_u.mean)[:K1].copy(),
            u_ci_low=np.asarray(est_u.low)[:K1].copy(),
            u_ci_high=np.asarray(est_u.high)[:K1].copy(),
            mean_jobs=float(est_jobs.mean),
            mean_jobs_ci=(float(est_jobs.low), float(est_jobs.high)),
            mean_sojourn=float(est_jobs.mean) / lam,
            mean_sojourn_ci=(float(est_jobs.low) / lam, float(est_jobs.high) / lam),
            arrivals=int(sum(batch_arr)),
            events=events,
            events_total=total,
            elapsed=elapsed,
            events_per_second=total / elapsed if elapsed > 0 else float("nan"),
            max_queue=int(clock[3]),
            N=N,
            d=d,
            lam=lam,
            dist=sampling.label,
            horizon=run.horizon,
            warmup=warmup,
            batches=run.batches,
            seed=seed_out,
            warmup_used=run.warmup_used,
            converged=run.converged,
            looks=max(run.looks, 1),
        )

    start = time.perf_counter()
    run = run_micro_batches(
        step,
        lambda: np.array([a[1:].sum() for a in tails()]),
        horizon=horizon,
        warmup=warmup,
        min_batches=batches,
        events_per_time=2.0 * lam_n,
        needed=None if needed is None else (lambda so_far: needed(result(so_far, math.nan))),
        # The service's variability sets the relaxation time; a bare sampling table (no
        # second moment) states none.
        relaxation=None
        if not hasattr(dist, "scv")
        else relaxation_time(lam * sampling.mean, 1.0 / sampling.mean, dist.scv),
        servers=N,
    )
    return result(run, time.perf_counter() - start)
