"""Exact event-driven simulation of exchangeable exponential servers by occupancy counts.

Model (spec §S, §A, §E): N servers in types j = 1..J; type j holds N_j = γ_j N servers of
capacity C_j, and a busy type-j server completes jobs at rate μ C_j whatever its occupancy
(FCFS and processor sharing give the same occupancy process). Jobs arrive as a Poisson
process of rate λN and are routed by a policy:

* ``"sqd"``: whole-pool SQ(d) — sample d servers from all N (with replacement, or without
  when ``replace=False``; d = N without replacement is JSQ), join the least occupied, ties
  uniformly among the tied sampled servers;
* ``"scheme1"`` / ``"scheme2"`` (Mukhopadhyay et al. 2016): sample d_j servers of every type j (with
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

This module is the entry point (validation, micro-batches, estimates); the compiled event
loop is :mod:`lbrepro.sim.occupancy_kernel`, the server types and policies
:mod:`lbrepro.sim.occupancy_routing`, start states :mod:`lbrepro.sim.occupancy_start` and the
result :mod:`lbrepro.sim.occupancy_result`.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Sequence

import numpy as np
from tqdm import tqdm

from lbrepro.core.args import int_arg, positive_arg, run_length
from lbrepro.core.errors import ConfigError, UnstableError
from lbrepro.core.rng import seed_sequence, xoshiro_state
from lbrepro.sim.compilation import ensure_compiled
from lbrepro.sim.estimates import arrival_fraction, batch_covariances
from lbrepro.sim.occupancy_kernel import (
    STATUS_MAX_LEVELS,
    STATUS_NEED_LEVELS,
    allocate_levels,
    chaos_arrays,
    grow_levels,
    run_kernel,
    type_tables,
    warm_up_kernel,
)
from lbrepro.sim.occupancy_result import OccupancySimResult
from lbrepro.sim.occupancy_routing import (
    POLICIES,
    check_stability,
    policy_code,
    routing_parameters,
    server_types,
)
from lbrepro.sim.occupancy_start import (
    counts_from_tail,
    initial_counts,
    sample_from_tail,
    start_rng,
)
from lbrepro.sim.runlength import (
    RunLength,
    check_budget,
    micro_count,
    relaxation_time,
    run_micro_batches,
)

__all__ = [
    "POLICIES",
    "OccupancySimResult",
    "counts_from_tail",
    "sample_from_tail",
    "simulate_occupancy",
    "start_rng",
]

# Level arrays start this long and double when a queue reaches the top; module-level so a
# test can shrink it to exercise the reallocation path.
_INITIAL_LEVELS = 64

# Randomness comes from 32-bit draws (xoshiro.randint) and counts fit comfortably in int64.
_MAX_N = 2**32 - 1

# The kernel entry point, looked up at every micro-batch so a test can wrap or interrupt it.
_run = run_kernel


# Typical events per second on one core (SQ(d), d ≤ 5, N ≤ 10⁴; larger d and N are slower),
# from the full run's benchmark files on a 2-core VM. Only an estimate: cheap points share a
# job by it (lbrepro.core.packing).
EVENTS_PER_SECOND = 2.5e7


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
    needed: Callable[[OccupancySimResult], float] | None = None,
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
        horizon actually run and whether its intervals are honest (``converged``).
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
    needed
        Optional: from the result of the run so far, the run-length factor that would decide
        the claims this run serves (:attr:`lbrepro.core.verdicts.Verdict.length_needed`);
        the run doubles while it is within reach (sequential doubling until decided,
        :func:`lbrepro.sim.runlength.run_micro_batches`) and counts its ``looks``.

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
    code = policy_code(policy)
    lam = positive_arg("lam", lam)
    mu = positive_arg("mu", mu)
    N = int_arg("N", N, 1)
    if N > _MAX_N:
        raise ConfigError("N", f"must be < 2**32, got {N}")
    if not isinstance(replace, bool | np.bool_):
        raise ConfigError("replace", f"must be a bool, got {replace!r}")
    replace = bool(replace)
    if not isinstance(chaos, bool | np.bool_):
        raise ConfigError("chaos", f"must be a bool, got {chaos!r}")
    chaos = bool(chaos)
    gamma_t, capacity_t, n_types = server_types(gamma, capacity, N)
    max_levels = int_arg("max_levels", max_levels, 2)
    routing = routing_parameters(
        policy,
        d,
        split,
        replace=replace,
        N=N,
        gamma=gamma_t,
        capacity=capacity_t,
        max_levels=max_levels,
    )
    horizon, warmup, batches = run_length(horizon, warmup, batches)
    counts = initial_counts(initial, n_types)
    if counts.shape[1] - 1 >= max_levels and np.any(counts[:, max_levels:]):
        raise ConfigError("initial", f"holds a queue of >= max_levels = {max_levels} jobs")
    seq = seed_sequence(seed)
    capacity_total = check_stability(lam, mu, gamma_t, capacity_t, policy, routing.split)

    levels, top = allocate_levels(
        counts, max(min(_INITIAL_LEVELS, max_levels + 1), counts.shape[1] + 1), 0.0
    )
    lam_n = lam * N
    system = (lam_n, N, routing.d_pool, replace, code, max_levels, chaos)
    tables = type_tables(
        mu * np.asarray(capacity_t, dtype=np.float64),
        n_types,
        routing.d_types,
        routing.order,
        routing.weights,
        routing.cum_split,
    )
    recorder = _MicroBatches(
        levels, top, system, tables, xoshiro_state(seq), chaos_arrays(levels[0], 0.0), n_types
    )
    unstable = (
        f"(lam = {lam:g}, capacity {capacity_total:g}, policy {policy!r}, d = {routing.d}): "
        "the policy looks unstable at this load"
    )

    ensure_compiled(warm_up_kernel)
    # Micro-batches from time 0 (see lbrepro.sim.runlength): the kernel returns after each.
    # Events ≈ arrivals + departures, both at rate λN in equilibrium.
    events_per_time = 2.0 * lam_n
    check_budget(
        events_per_time * horizon,
        what=f"this run (N = {N}, horizon = {horizon:g}, ≈ {events_per_time:.3g} events per "
        "unit time)",
    )
    bar = tqdm(
        total=micro_count(events_per_time * horizon),
        desc="occupancy sim",
        unit="slice",
        disable=not progress,
        file=sys.stderr,
    )

    def step(t_end: float) -> int:
        """Run one micro-batch, refuse a run whose queue hit max_levels, advance the bar."""
        n_events = recorder.step(t_end)
        if recorder.status == STATUS_MAX_LEVELS:
            raise UnstableError(
                f"a queue reached max_levels = {max_levels} jobs at t = {recorder.t:.6g} "
                + unstable
            )
        bar.update(1)
        return n_events

    entropy = seq.entropy

    def result(run: RunLength, elapsed: float) -> OccupancySimResult:
        """The run's estimates and facts, as the run length ``run`` decided them."""
        return OccupancySimResult(
            **_estimates(recorder, run, n_types, N, lam, chaos),
            elapsed=elapsed,
            events_per_second=recorder.events_total / elapsed if elapsed > 0 else float("nan"),
            N=N,
            d=routing.d,
            replace=replace,
            lam=lam,
            mu=mu,
            gamma=gamma_t,
            capacity=capacity_t,
            policy=policy,
            split=routing.split,
            horizon=run.horizon,
            warmup=warmup,
            batches=run.batches,
            seed=int(entropy) if np.ndim(entropy) == 0 else [int(x) for x in np.ravel(entropy)],
            spawn_key=tuple(int(k) for k in seq.spawn_key),
            warmup_used=run.warmup_used,
            converged=run.converged,
            batch_length=run.batching.group * run.micro_len,
            looks=max(run.looks, 1),
        )

    start = time.perf_counter()
    with bar:
        run = run_micro_batches(
            step,
            recorder.jobs,
            horizon=horizon,
            warmup=warmup,
            min_batches=batches,
            events_per_time=events_per_time,
            extend=extend,
            rel_precision=rel_precision,
            needed=None if needed is None else (lambda so_far: needed(result(so_far, math.nan))),
            relaxation=_relaxation(lam, mu, gamma_t, capacity_t, routing.split, capacity_total),
            servers=N,
        )
    return result(run, time.perf_counter() - start)


def _relaxation(
    lam: float,
    mu: float,
    gamma: tuple[float, ...],
    capacity: tuple[float, ...],
    split: tuple[float, ...] | None,
    capacity_total: float,
) -> float:
    """The relaxation time per server of a run (lbrepro.sim.runlength.MIN_RELAXATIONS): an
    M/M/1 queue's at the system's load and mean capacity; under a static split, the slowest
    type's, per server of the whole system (type j holds a fraction γ_j of the servers)."""
    if split is None:
        return relaxation_time(lam / capacity_total, capacity_total)
    return max(
        relaxation_time(lam * p / (mu * g * c), mu * c) / g
        for p, g, c in zip(split, gamma, capacity, strict=True)
        if p > 0
    )


class _MicroBatches:
    """The kernel's state between micro-batches and what each micro-batch recorded.

    Per micro-batch: ``areas`` (the flushed level integrals ∫ Q[j, k] dt, J × levels, each
    micro-batch integrating into a fresh array so the record needs no copy), ``widths`` (the
    levels an area record keeps), ``durations``, ``arrivals``, ``waits`` (arrivals joining a
    busy server), ``routed`` (arrivals per type), ``chaos_integrals`` (the chaos integrals
    over the duration) and ``events``. The mean jobs and tail fractions derived from the area
    records are computed when asked for (:meth:`jobs`, and all at once in ``_estimates``):
    a few array operations per micro-batch would otherwise cost as much as the simulation
    of a short one.
    """

    def __init__(
        self,
        levels: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
        top: int,
        system: tuple,
        tables: tuple[np.ndarray, np.ndarray],
        state: np.ndarray,
        chaos: tuple[np.ndarray, np.ndarray, np.ndarray],
        n_types: np.ndarray,
    ) -> None:
        """Hold the kernel's arguments (see :mod:`lbrepro.sim.occupancy_kernel`); the clock
        starts at 0 with empty records."""
        self.levels = levels
        self.top = top
        self.t = 0.0
        self.status = 0
        self.system = system
        self.tables = tables
        self.state = state
        self.chaos = chaos
        self.n_types = n_types
        self.areas: list[np.ndarray] = []
        self.widths: list[int] = []
        self.durations: list[float] = []
        self.arrivals: list[int] = []
        self.waits: list[int] = []
        self.routed: list[np.ndarray] = []
        self.chaos_integrals: list[np.ndarray] = []
        self.events: list[int] = []
        self._jobs: list[float] = []

    @property
    def events_total(self) -> int:
        """Events of the whole run, warm-up included."""
        return int(sum(self.events))

    def step(self, t_end: float) -> int:
        """Simulate up to t_end and record the micro-batch; return its number of events
        (``status`` tells whether a queue reached max_levels)."""
        t_start = self.t
        routed = np.zeros(self.n_types.size, dtype=np.int64)
        n_events = n_arr = n_wait = 0
        while True:
            self.status, self.top, self.t, n_ev, n_a, n_w, width = _run(
                *self.levels, self.top, self.t, t_end, self.system, *self.tables, self.state,
                routed, *self.chaos,
            )  # fmt: skip
            n_events += n_ev
            n_arr += n_a
            n_wait += n_w
            if self.status != STATUS_NEED_LEVELS:
                break
            levels = self.levels[0].shape[1]
            self.levels = grow_levels(self.levels, min(2 * levels, self.system[5] + 1), self.t)
        if self.status == STATUS_MAX_LEVELS:
            return n_events
        duration = t_end - t_start
        Q, Qtot, area, last = self.levels
        self.areas.append(area)
        self.levels = (Q, Qtot, np.zeros(area.shape), last)
        self.widths.append(width)
        self.durations.append(duration)
        self.events.append(n_events)
        self.arrivals.append(n_arr)
        self.waits.append(n_wait)
        self.routed.append(routed)
        if self.system[6]:
            sum_area = self.chaos[1]
            self.chaos_integrals.append(sum_area / duration)
            sum_area[:] = 0.0
        return n_events

    def jobs(self) -> np.ndarray:
        """Mean jobs per server of every micro-batch so far (the run length's main series)."""
        N = self.system[1]
        for b in range(len(self._jobs), len(self.areas)):
            area, width, duration = self.areas[b], self.widths[b], self.durations[b]
            self._jobs.append(float(area[:, 1:width].sum()) / (N * duration))
        return np.array(self._jobs)


def _estimates(
    recorded: _MicroBatches, run: RunLength, n_types: np.ndarray, N: int, lam: float, chaos: bool
) -> dict:
    """The estimates of OccupancySimResult (with their intervals and event counts) from the
    recorded micro-batches, truncated and merged as the run length decided."""
    bm = run.batching
    first = bm.start
    width = max(recorded.widths[first:])
    per_micro = np.zeros((len(recorded.areas), n_types.size, width))
    for b, area in enumerate(recorded.areas):
        w = min(width, recorded.widths[b])
        per_micro[b, :, :w] = area[:, :w]
    # Each micro-batch's fractions of type-j servers with ≥ k jobs: ∫Q[j, k] dt / (N_j T_b).
    per_micro /= n_types[None, :, None] * np.array(recorded.durations)[:, None, None]
    per_micro[:, :, 0] = 1.0
    per_batch = bm.merge(per_micro)
    per_batch_all = np.einsum("bjk,j->bk", per_batch, n_types / N)
    est_u = bm.ci(per_batch, lower=0.0, upper=1.0, ar1=True, rare=True)
    est_all = bm.ci(per_batch_all, lower=0.0, upper=1.0, ar1=True, rare=True)
    est_jobs = bm.ci(per_batch_all[:, 1:].sum(axis=1), lower=0.0, ar1=True)
    est_jobs_type = bm.ci(per_batch[:, :, 1:].sum(axis=2), lower=0.0, ar1=True)
    nz = np.flatnonzero(np.asarray(est_u.mean).any(axis=0))
    K1 = int(nz[-1]) + 1
    arrivals_b = bm.merge(np.array(recorded.arrivals, dtype=float))
    waits_b = bm.merge(np.array(recorded.waits, dtype=float))
    p_wait, p_wait_ci = arrival_fraction(waits_b, arrivals_b, groups=bm.groups)
    routed_b = bm.merge(np.array(recorded.routed, dtype=float))
    route_est = [
        arrival_fraction(routed_b[:, j], arrivals_b, groups=bm.groups) for j in range(n_types.size)
    ]
    cov: dict[str, np.ndarray | None] = dict.fromkeys(
        ("same", "same_low", "same_high", "cross", "cross_low", "cross_high")
    )
    if chaos:
        # Covariances from batch-level averages of the chaos integrals, linearised about the
        # run's means (per-batch centring would bias them by ~ τ/batch length · Var(x)/N).
        chaos_b = bm.merge(np.array(recorded.chaos_integrals))
        center = chaos_b[:, 0].mean(axis=0) / n_types
        pairs = [batch_covariances(c, n_types, 1.0, center) for c in chaos_b]
        est_same = bm.ci(np.array([p[0] for p in pairs]), ar1=True)
        est_cross = bm.ci(np.array([p[1] for p in pairs]), ar1=True)
        for name, est in (("same", est_same), ("cross", est_cross)):
            cov[name] = np.asarray(est.mean)
            cov[f"{name}_low"] = np.asarray(est.low)
            cov[f"{name}_high"] = np.asarray(est.high)
    J = n_types.size
    return {
        "u": [np.asarray(est_u.mean)[j, :K1].copy() for j in range(J)],
        "u_ci_low": [np.asarray(est_u.low)[j, :K1].copy() for j in range(J)],
        "u_ci_high": [np.asarray(est_u.high)[j, :K1].copy() for j in range(J)],
        "u_all": np.asarray(est_all.mean)[:K1].copy(),
        "u_all_ci_low": np.asarray(est_all.low)[:K1].copy(),
        "u_all_ci_high": np.asarray(est_all.high)[:K1].copy(),
        "mean_jobs": float(est_jobs.mean),
        "mean_jobs_ci": (float(est_jobs.low), float(est_jobs.high)),
        "mean_jobs_per_type": np.asarray(est_jobs_type.mean),
        "mean_jobs_per_type_ci_low": np.asarray(est_jobs_type.low),
        "mean_jobs_per_type_ci_high": np.asarray(est_jobs_type.high),
        "mean_sojourn": float(est_jobs.mean) / lam,
        "mean_sojourn_ci": (float(est_jobs.low) / lam, float(est_jobs.high) / lam),
        "p_wait": p_wait,
        "p_wait_ci": p_wait_ci,
        "route": np.array([r[0] for r in route_est]),
        "route_ci_low": np.array([r[1][0] for r in route_est]),
        "route_ci_high": np.array([r[1][1] for r in route_est]),
        "cov_same": cov["same"],
        "cov_same_ci_low": cov["same_low"],
        "cov_same_ci_high": cov["same_high"],
        "cov_cross": cov["cross"],
        "cov_cross_ci_low": cov["cross_low"],
        "cov_cross_ci_high": cov["cross_high"],
        "arrivals": int(sum(recorded.arrivals[first : first + bm.group * bm.batches])),
        "events": int(sum(recorded.events[first:])),
        "events_total": recorded.events_total,
    }
