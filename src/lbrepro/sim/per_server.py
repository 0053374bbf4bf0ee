"""Direct per-server simulation of SQ(d) / JSQ(d): a reference for the occupancy kernel.

Model (spec §S, §E): N homogeneous exponential servers of rate μ, Poisson arrivals of rate
λN. An arrival samples d servers — really, by label: d distinct ones by a partial
Fisher–Yates shuffle of a persistent permutation (``replace=False``; d = N is JSQ), or d
independent uniform draws (``replace=True``) — and joins the least loaded, ties uniformly
among the tied sampled draws. A departure leaves a uniformly random busy server (busy list
with positions, as in the C anchor ``refsim_supermarket.c``).

Why: ``lbrepro.sim.occupancy`` never looks at individual servers; it draws the sample's
minimum occupancy by inverting P(min ≥ k) = C(Q_k, d)/C(N, d) (or (Q_k/N)^d). This module
keeps every queue length and samples servers one by one, so agreement between the two checks
that inversion — in particular without replacement, where the universality results (spec §E)
live. It costs O(d + levels) per event and O(N) memory, so it is for small systems.

Time averages are integrated directly: at every event each level count Q_k (servers with
≥ k jobs) and the total number of jobs are multiplied by the elapsed time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from lbrepro.core.args import int_arg, positive_arg, run_length
from lbrepro.core.errors import ConfigError, UnstableError
from lbrepro.core.rng import seed_sequence, xoshiro_state
from lbrepro.sim.compilation import njit
from lbrepro.sim.estimates import EstimatesMixin, arrival_fraction
from lbrepro.sim.runlength import check_budget, run_micro_batches
from lbrepro.sim.xoshiro import randint, uniform

__all__ = ["PerServerSimResult", "simulate_per_server"]

_STATUS_OK = 0
_STATUS_NEED_LEVELS = 1

# Level arrays start this long and double when a queue reaches the top; module-level so a
# test can shrink it to exercise the reallocation path.
_INITIAL_LEVELS = 32

# xoshiro.randint draws integers below 2**32.
_MAX_N = 2**32 - 1


@njit(cache=True)
def _sample_min(q, perm, N, d, replace, state):
    """Sample d servers, return (server joined, its queue length) — least loaded, fair ties.

    Without replacement the first d entries of ``perm`` are shuffled in (partial
    Fisher–Yates): whatever permutation ``perm`` holds, they become a uniformly random
    ordered d-subset, and ``perm`` stays a permutation for the next arrival. Ties are broken
    by reservoir sampling: the c-th tied draw replaces the choice with probability 1/c.
    """
    best = -1
    best_q = 0
    ties = 0
    for i in range(d):
        if replace:
            s = randint(state, N)
        else:
            j = i + randint(state, N - i)
            s = perm[j]
            perm[j] = perm[i]
            perm[i] = s
        qs = q[s]
        if best < 0 or qs < best_q:
            best = s
            best_q = qs
            ties = 1
        elif qs == best_q:
            ties += 1
            if randint(state, ties) == 0:
                best = s
    return best, best_q


@njit(cache=True)
def _advance(
    q, busy, pos, nb, perm, cnt, area, top, jobs, t, t_end, lam_n, mu, N, d, replace, state
):
    """Simulate events until t_end, or until a queue reaches the last stored level.

    Adds ∫ cnt[k] dt to area[k] (k = 1..top) and returns (status, nb, top, jobs, t,
    jobs_area, events, arrivals, waits) over this call; ``waits`` counts arrivals whose
    sampled minimum is ≥ 1. status is _STATUS_NEED_LEVELS right after the event that made
    ``top`` the last index of ``cnt``: the caller grows the arrays and calls again with no
    random draw in between (the exponential clock is memoryless, so restarting it is exact).
    """
    L = cnt.shape[0]
    jobs_area = 0.0
    events = 0
    arrivals = 0
    waits = 0
    while True:
        dep_rate = mu * nb
        total_rate = lam_n + dep_rate
        dt = -math.log(uniform(state)) / total_rate
        done = t + dt >= t_end
        if done:
            dt = t_end - t
        for k in range(1, top + 1):
            area[k] += cnt[k] * dt
        jobs_area += jobs * dt
        if done:
            return _STATUS_OK, nb, top, jobs, t_end, jobs_area, events, arrivals, waits
        t += dt
        events += 1
        if uniform(state) * total_rate < lam_n:
            s, m = _sample_min(q, perm, N, d, replace, state)
            arrivals += 1
            if m > 0:
                waits += 1
            k = m + 1
            q[s] = k
            cnt[k] += 1
            jobs += 1
            if k == 1:
                pos[s] = nb
                busy[nb] = s
                nb += 1
            if k > top:
                top = k
                if top + 1 >= L:
                    return _STATUS_NEED_LEVELS, nb, top, jobs, t, jobs_area, events, arrivals, waits
        else:
            s = busy[randint(state, nb)]
            k = q[s]
            cnt[k] -= 1
            q[s] = k - 1
            jobs -= 1
            if k == 1:
                p = pos[s]
                nb -= 1
                moved = busy[nb]
                busy[p] = moved
                pos[moved] = p
            if cnt[top] == 0:
                top -= 1


@dataclass(frozen=True)
class PerServerSimResult(EstimatesMixin):
    """Time averages of one per-server simulation, with 95% batch-means intervals.

    ``u[k]`` is the time-averaged fraction of servers with at least k jobs, k = 0..K
    (``u[0] = 1``, trailing all-zero levels trimmed); ``mean_jobs`` is per server (the
    time average of the total number of jobs over N, integrated separately from ``u``).
    ``p_wait`` is the fraction of post-warm-up arrivals whose sampled minimum queue is ≥ 1,
    with the interval convention of ``OccupancySimResult.p_wait``. ``events`` and
    ``arrivals`` count post-warm-up events and arrivals. ``seed`` and ``spawn_key`` are the
    SeedSequence's entropy and spawn key. Warm-up, batching and run length follow the data
    as in ``OccupancySimResult`` (``horizon`` as run, ``warmup_used``, ``batches`` used,
    ``converged``).
    """

    u: np.ndarray
    u_ci_low: np.ndarray
    u_ci_high: np.ndarray
    mean_jobs: float
    mean_jobs_ci: tuple[float, float]
    p_wait: float
    p_wait_ci: tuple[float, float]
    events: int
    arrivals: int
    N: int
    d: int
    replace: bool
    lam: float
    mu: float
    horizon: float
    warmup: float
    batches: int
    seed: int | list[int]
    spawn_key: tuple[int, ...]
    warmup_used: float = math.nan
    converged: bool = True


def _grow(cnt: np.ndarray, area: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Double the level arrays; the new levels hold no server and no area yet."""
    L = cnt.shape[0]
    return np.concatenate([cnt, np.zeros(L, np.int64)]), np.concatenate([area, np.zeros(L)])


def simulate_per_server(
    *,
    lam: float,
    N: int,
    d: int,
    horizon: float,
    warmup: float,
    seed: np.random.SeedSequence | int,
    mu: float = 1.0,
    replace: bool = False,
    batches: int = 20,
) -> PerServerSimResult:
    """Simulate SQ(d) on N labelled exponential servers, starting empty.

    Parameters
    ----------
    lam
        Arrival rate per server (total rate lam * N); must be < mu.
    N, d
        Number of servers and sample size (1 <= d; d <= N when ``replace`` is False).
    horizon, warmup
        Simulated time: [0, warmup) is discarded, [warmup, horizon) is split into
        ``batches`` equal batches for the confidence intervals.
    seed
        An int (used as ``lbrepro.core.rng.stream(seed)``) or a dedicated SeedSequence; the
        generator state is ``xoshiro_state(seq)``, as in ``simulate_occupancy``.
    mu
        Service rate of every server.
    replace
        Sample without (False, the default here: the universality setting) or with
        replacement.
    batches
        Number of batches (>= 2).

    Returns
    -------
    PerServerSimResult

    Raises
    ------
    ConfigError
        For an invalid argument (the message names it), before any simulation.
    UnstableError
        If lam >= mu.
    """
    lam = positive_arg("lam", lam)
    mu = positive_arg("mu", mu)
    N = int_arg("N", N, 1)
    if N > _MAX_N:
        raise ConfigError("N", f"must be < 2**32, got {N}")
    d = int_arg("d", d, 1)
    if not isinstance(replace, bool | np.bool_):
        raise ConfigError("replace", f"must be a bool, got {replace!r}")
    replace = bool(replace)
    if not replace and d > N:
        raise ConfigError("d", f"cannot sample d = {d} of N = {N} servers without replacement")
    horizon, warmup, batches = run_length(horizon, warmup, batches)
    seq = seed_sequence(seed)
    if lam >= mu:
        raise UnstableError(f"load lam = {lam:g} >= mu = {mu:g}: unstable, refusing to simulate")

    state = xoshiro_state(seq)
    q = np.zeros(N, dtype=np.int64)
    busy = np.zeros(N, dtype=np.int64)
    pos = np.zeros(N, dtype=np.int64)
    perm = np.arange(N, dtype=np.int64)
    cnt = np.zeros(_INITIAL_LEVELS, dtype=np.int64)
    cnt[0] = N
    area = np.zeros(_INITIAL_LEVELS, dtype=np.float64)
    nb, top, jobs, t = 0, 0, 0, 0.0
    lam_n = lam * N

    check_budget(2.0 * lam_n * horizon, what=f"this run (N = {N}, horizon = {horizon:g})")
    # Micro-batches from time 0 (see lbrepro.sim.runlength): the kernel returns after each.
    micro_u: list[np.ndarray] = []
    micro_jobs: list[float] = []
    micro_arrivals: list[int] = []
    micro_waits: list[int] = []
    micro_events: list[int] = []

    def step(t_end: float) -> int:
        """Run one micro-batch (growing the level arrays as needed); return its events."""
        nonlocal cnt, area, nb, top, jobs, t
        t_start = t
        jobs_area = 0.0
        n_events = n_arr = n_wait = 0
        while True:
            status, nb, top, jobs, t, j_area, n_ev, n_a, n_w = _advance(
                q, busy, pos, nb, perm, cnt, area, top, jobs, t, t_end, lam_n, mu, N, d,
                replace, state,
            )  # fmt: skip
            jobs_area += j_area
            n_events += n_ev
            n_arr += n_a
            n_wait += n_w
            if status == _STATUS_OK:
                break
            cnt, area = _grow(cnt, area)
        span = N * (t_end - t_start)
        u_b = area / span
        u_b[0] = 1.0
        micro_u.append(u_b)
        micro_jobs.append(jobs_area / span)
        micro_arrivals.append(n_arr)
        micro_waits.append(n_wait)
        micro_events.append(n_events)
        area = np.zeros_like(area)
        return n_events

    run = run_micro_batches(
        step,
        lambda: np.array(micro_jobs),
        horizon=horizon,
        warmup=warmup,
        min_batches=batches,
        events_per_time=2.0 * lam_n,
    )
    bm = run.batching
    used = slice(bm.start, bm.start + bm.group * bm.batches)
    width = max(a.shape[0] for a in micro_u)
    per_micro = np.zeros((len(micro_u), width))
    for i, a in enumerate(micro_u):
        per_micro[i, : a.shape[0]] = a
    est_u = bm.ci(bm.merge(per_micro), lower=0.0, upper=1.0, ar1=True, rare=True)
    est_jobs = bm.ci(bm.merge(np.array(micro_jobs)), lower=0.0, ar1=True)
    events = int(sum(micro_events[bm.start :]))
    batch_arrivals = micro_arrivals[used]
    nz = np.flatnonzero(np.asarray(est_u.mean))
    K1 = int(nz[-1]) + 1
    p_wait, p_wait_ci = arrival_fraction(
        bm.merge(np.array(micro_waits, dtype=float)),
        bm.merge(np.array(micro_arrivals, float)),
        groups=bm.groups,
    )
    entropy = seq.entropy
    seed_out: int | list[int] = (
        int(entropy) if np.ndim(entropy) == 0 else [int(x) for x in np.ravel(entropy)]
    )
    return PerServerSimResult(
        u=np.asarray(est_u.mean)[:K1].copy(),
        u_ci_low=np.asarray(est_u.low)[:K1].copy(),
        u_ci_high=np.asarray(est_u.high)[:K1].copy(),
        mean_jobs=float(est_jobs.mean),
        mean_jobs_ci=(float(est_jobs.low), float(est_jobs.high)),
        p_wait=p_wait,
        p_wait_ci=p_wait_ci,
        events=events,
        arrivals=int(sum(batch_arrivals)),
        N=N,
        d=d,
        replace=replace,
        lam=lam,
        mu=mu,
        horizon=run.horizon,
        warmup=warmup,
        batches=run.batches,
        seed=seed_out,
        spawn_key=tuple(int(k) for k in seq.spawn_key),
        warmup_used=run.warmup_used,
        converged=run.converged,
    )
