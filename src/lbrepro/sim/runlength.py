"""Run length of a simulation: the event budget, micro-batches, and sequential extension.

Every simulator runs its compiled kernel in *micro-batches*: ``micro`` equal slices of the
horizon, recorded from time 0 (warm-up included). The kernel returns to Python after each
slice, so Ctrl-C (KeyboardInterrupt) stops a run within one slice, and the slices are what
:func:`lbrepro.core.stats.choose_batching` truncates (MSER-5, the configured warm-up being a
minimum) and merges into batches (von Neumann test). When the test fails at every admissible
batch size — the run is too short for its relaxation time — or a requested relative precision
is not reached, :func:`run_micro_batches` doubles the run (the same random stream continues,
so the result is still a function of the seed alone), at most ``extend`` times and never
beyond the event budget. A run still correlated then gets the wider, conservative interval
of :func:`lbrepro.core.stats.fallback_batching` (10 large batches, t with 9 degrees of
freedom), which decides its claims if the run passes the relaxation check
(:func:`slow_run_problem`); a run that fails it is reported as not converged
(``converged = False``, the reason logged), never silently: the verdicts built on it are
invalid.

**Until decided.** A run can also be doubled until its claim is decided: given
``needed`` (the run-length factor that would decide the claims its point serves, from the
run so far, see :attr:`lbrepro.core.verdicts.Verdict.length_needed`), a converged run that
is undecided doubles while the factor is within reach of the doublings left; a factor beyond
reach (or infinite: a component no length resolves) stops it at once, so a hopeless claim
costs no more than a decided one. Each such decision is a *look* (``RunLength.looks``): a
verdict can err once per look, and the report counts its expected false decisions so.

**Long enough for its relaxation time.** A run whose batch means look independent may still
be too short: a path that never left the calm part of the state space has batch means that
pass the test *and* an underestimated variance, and no test on the run's own data can tell
(M/M/1 at ρ = 0.99 on ~100 relaxation times: the third of runs that passed covered 71%).
What can tell is the model: a simulator that knows its load states the *relaxation time* τ
of one server (:func:`relaxation_time`), and a run counts as converged only when its
measured time spans :data:`MIN_RELAXATIONS` of them, summed over its servers (N·T/τ: with
random routing the servers are independent queues, with choices they mix faster still). A
run short of that doubles like a correlated one and otherwise ends not converged. Summing
over servers is lenient for the time average itself — N independent queues average to a
process with one queue's correlation time — so a slow run must also span
:data:`MIN_CORRELATION_TIMES` of its own measured correlation time.

**Event budget.** Before simulating, a run states its expected event count (≈ event rate ×
horizon, logged) and refuses to start one beyond the budget — default
:data:`DEFAULT_MAX_EVENTS` = 10¹⁰ events, well above the largest runs of the full config (the
stationary universality-diffusion points at N = 10⁵ were 5.6·10⁹ events; its finite-horizon
points are now 1.6·10⁹) — unless the budget is raised with ``--max-events`` on
``lbrepro simulate`` or ``simulation.max_events`` in the config; the error names both and
quotes the estimate. An extension (doubling) is made only while the doubled run stays within
the budget, so the budget also bounds what the data-driven run length can cost.
"""

from __future__ import annotations

import logging
import math
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace

import numpy as np

from lbrepro.core.errors import ConfigError
from lbrepro.core.stats import (
    MICRO_BATCHES,
    Batching,
    batch_means_ci,
    choose_batching,
    correlation_time,
    fallback_batching,
)

__all__ = [
    "DEFAULT_MAX_EVENTS",
    "MIN_CORRELATION_TIMES",
    "MIN_RELAXATIONS",
    "RunLength",
    "check_budget",
    "event_budget",
    "max_doublings",
    "max_events",
    "micro_count",
    "recording_runs",
    "relaxation_time",
    "run_micro_batches",
    "slow_run_problem",
]

log = logging.getLogger(__name__)

DEFAULT_MAX_EVENTS = 1.0e10
# A kernel call should return to Python at least every this many expected events (~2–5 s).
EVENTS_PER_RETURN = 2.0e7
# Doublings of the run allowed when the batch means are still correlated (at most 4× the
# configured horizon: bounded cost for runs far too short for their relaxation time).
DEFAULT_EXTEND = 2

_budget: list[float] = [DEFAULT_MAX_EVENTS]
_extend: list[int] = [DEFAULT_EXTEND]


def max_events() -> float:
    """The event budget in force (``DEFAULT_MAX_EVENTS`` unless raised by ``event_budget``)."""
    return _budget[-1]


def max_doublings() -> int:
    """How many times a run may double (``DEFAULT_EXTEND`` unless set by ``event_budget``)."""
    return _extend[-1]


@contextmanager
def event_budget(limit: float | None, extend: int | None = None) -> Iterator[None]:
    """Run the block with the event budget ``limit`` and at most ``extend`` doublings of a
    run (None keeps the current value): ``simulation.max_events`` / ``simulation.extend`` of
    the config, ``--max-events`` of ``lbrepro simulate``."""
    if limit is not None:
        limit = float(limit)
        if not limit > 0:
            raise ConfigError("max_events", f"must be > 0, got {limit!r}")
    if extend is not None and (isinstance(extend, bool) or int(extend) != extend or extend < 0):
        raise ConfigError("extend", f"must be an integer >= 0, got {extend!r}")
    _budget.append(max_events() if limit is None else limit)
    _extend.append(max_doublings() if extend is None else int(extend))
    try:
        yield
    finally:
        _budget.pop()
        _extend.pop()


def check_budget(expected: float, *, what: str) -> None:
    """Refuse a run whose expected event count exceeds the budget, naming the parameters."""
    limit = max_events()
    log.info("%s: expected %.3g events (budget %.3g)", what, expected, limit)
    if not expected <= limit:
        raise ConfigError(
            "max_events",
            f"{what} is expected to take {expected:.3g} events, more than the budget of "
            f"{limit:.3g}: shorten 'horizon' (or N), or raise the budget with --max-events "
            "(lbrepro simulate) or simulation.max_events (config)",
        )


def micro_count(expected_events: float, micro: int = MICRO_BATCHES) -> int:
    """Micro-batches for a run: ``micro``, more when a slice would exceed EVENTS_PER_RETURN."""
    return max(int(micro), math.ceil(expected_events / EVENTS_PER_RETURN))


#: The lists :func:`recording_runs` is collecting into (innermost last).
_recorders: list[list[RunLength]] = []


@contextmanager
def recording_runs() -> Iterator[list[RunLength]]:
    """Collect the :class:`RunLength` of every run made in the block, in order.

    How long a point's runs actually were (their ``doublings`` beyond the configured
    horizon) is known only here; the pipeline records it beside the point's rows, so a
    workflow extension (:mod:`lbrepro.extension`) can tell how much longer a run must be.
    """
    runs: list[RunLength] = []
    _recorders.append(runs)
    try:
        yield runs
    finally:
        # by identity: two recorders that saw nothing are equal lists
        del _recorders[next(i for i, r in enumerate(_recorders) if r is runs)]


_stop = [False]


def _on_sigint(signum: int, frame: object) -> None:
    """SIGINT handler: only raise the stop flag; the run stops after the current micro-batch."""
    _stop[0] = True


@contextmanager
def _interruptible() -> Iterator[None]:
    """Turn Ctrl-C into a flag checked between micro-batches.

    Python's default handler raises KeyboardInterrupt wherever the interpreter happens to be;
    inside numba's boxing of a kernel's results that surfaces as a SystemError chain. With
    this handler the run stops at the next micro-batch boundary with a clean
    KeyboardInterrupt. Left alone outside the main thread or where SIGINT is ignored.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    if previous is signal.SIG_IGN:
        yield
        return
    _stop[0] = False
    signal.signal(signal.SIGINT, _on_sigint)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        _stop[0] = False


#: The relaxation times, summed over servers (N·T/τ), a run must span to count as converged.
#: On the known answers of bench/bench_coverage.py: M/M/1 at ρ = 0.99 on ~100 relaxation
#: times covers 71% (the runs that passed the batch test), at ρ = 0.9 on ~670 it covers 94.5%
#: and at ρ = 0.99 on ~1500 (16 × the horizon) 94.5%.
MIN_RELAXATIONS = 500.0


#: The measured correlation times (stats.correlation_time) a slow run must span for its
#: conservative interval to decide claims. A backstop where no relaxation time is stated: on
#: AR(1) series of 1280 values the fallback covered 95.0-93.8% nominal at 39-13 correlation
#: times and 90.2% at 6.4 (stats.fallback_batching), but the measured span is noisy (at a
#: true 11 its 10-90% range is 4-25) and short runs overstate it (true 1.1: median 1.7, 90th
#: percentile 19), so the floor sits low enough not to void long runs and catches only the
#: flagrantly short ones.
MIN_CORRELATION_TIMES = 5.0


def slow_run_problem(
    batching: Batching,
    series: np.ndarray,
    *,
    measured: float,
    relaxation: float | None,
    servers: int,
) -> str:
    """Why a slowly mixing run has no honest interval ("" if its conservative one is).

    A run whose batch means stayed correlated gets the interval of few large batches
    (:func:`lbrepro.core.stats.fallback_batching`), which covers when the run spans enough
    relaxation times. It is unusable, on the relaxation check's statistic, when: its batches
    are too few to regroup; its simulator states an infinite relaxation time (an
    infinite-variance service: long-range dependent queue lengths) or one it spans fewer than
    :data:`MIN_RELAXATIONS` times summed over its servers (N·T/τ); or it spans fewer than
    :data:`MIN_CORRELATION_TIMES` of its own measured correlation time (T/τ̂, not summed over
    servers: N independent queues average to a process with one queue's correlation time).
    """
    if not batching.groups:
        return f"{batching.batches} batch means cannot be regrouped into a conservative interval"
    if relaxation is not None:
        if not math.isfinite(relaxation):
            return "an infinite relaxation time (infinite-variance service or load >= 1)"
        spans = servers * measured / relaxation
        if spans < MIN_RELAXATIONS:
            return f"it spans N·T/τ = {spans:.3g} relaxation times, fewer than {MIN_RELAXATIONS:g}"
    micro = batching.batches * batching.group
    tau = correlation_time(series, len(series) - micro)
    own = micro / tau if tau > 0 else math.inf
    if not own >= MIN_CORRELATION_TIMES:
        return (
            f"it spans {own:.3g} of its measured correlation times, fewer than "
            f"{MIN_CORRELATION_TIMES:g}"
        )
    return ""


def relaxation_time(load: float, service_rate: float = 1.0, scv: float = 1.0) -> float:
    """The relaxation time of one server at ``load``: the M/M/1 queue's 1/(μ(1 − √ρ)²)
    (Morse 1955; Abate and Whitt 1987), scaled for general service by (1 + c_s²)/2, the
    variance factor of the heavy-traffic (reflected Brownian motion) approximation; infinite
    when the service time's variance is (c_s² = ∞: long-range dependent queue lengths) or
    the load is not below 1."""
    if not 0.0 < load < 1.0 or not math.isfinite(scv):
        return math.inf
    return (1.0 + scv) / 2.0 / (service_rate * (1.0 - math.sqrt(load)) ** 2)


@dataclass(frozen=True)
class RunLength:
    """What :func:`run_micro_batches` did: the batching chosen and the length actually run.

    ``micro_len`` is the duration of one micro-batch, ``micro`` the number run, ``horizon``
    their total (the configured horizon times 2^``doublings``); ``warmup_used`` the time
    discarded (micro-batches before ``batching.start``); ``converged`` is False when no
    interval of the run is honest (``unusable`` says why: :func:`slow_run_problem`); a run
    whose batch means stayed correlated after every allowed extension but is long enough is
    ``slow`` and converged, its intervals the conservative ones of few large batches.
    """

    batching: Batching
    micro_len: float
    micro: int
    horizon: float
    doublings: int
    converged: bool
    #: Times the claims' decision was taken on the growing run (0: no ``needed`` given).
    looks: int = 0
    #: The batch means stayed correlated (or the run was short of MIN_RELAXATIONS): its
    #: intervals are the conservative ones of few large batches (fallback_batching).
    slow: bool = False
    #: Why no interval of the run is honest ("" when one is): then ``converged`` is False.
    unusable: str = ""

    @property
    def warmup_used(self) -> float:
        """Time discarded at the start (the truncated micro-batches)."""
        return self.batching.start * self.micro_len

    @property
    def batches(self) -> int:
        """Number of batch means the intervals' spread comes from (their dof + 1)."""
        return self.batching.effective_batches


def run_micro_batches(
    step: Callable[[float], int],
    main: Callable[[], np.ndarray],
    *,
    horizon: float,
    warmup: float,
    min_batches: int,
    events_per_time: float,
    extend: int | None = None,
    rel_precision: float | None = None,
    needed: Callable[[RunLength], float] | None = None,
    micro: int = MICRO_BATCHES,
    relaxation: float | None = None,
    servers: int = 1,
) -> RunLength:
    """Drive a simulator in micro-batches, choose its batching, extend it while needed.

    ``step(t_end)`` advances the simulation to time ``t_end``, records one micro-batch and
    returns the number of events it took; ``main()`` returns the micro-batch series of the
    main quantity so far. The horizon is cut into ``micro_count`` equal slices; the warm-up
    is rounded up to whole slices and is a minimum truncation. The run doubles (at most
    ``extend`` times, within the event budget) while the batch means fail the independence
    test, or while the main quantity's relative half-width exceeds ``rel_precision``, or
    while ``needed(run so far)`` — the run-length factor that would decide its claims — is
    above 1 and within the doublings left (sequential doubling until decided; see the module
    docstring). ``extend`` None means :func:`max_doublings`. Given the ``relaxation`` time of
    one of its ``servers``, a run also doubles while its measured time spans fewer than
    :data:`MIN_RELAXATIONS` of them summed over the servers, and ends not converged if it
    still does (its interval then the fallback's, like a correlated run's).
    """
    if extend is None:
        extend = max_doublings()
    expected = events_per_time * horizon
    M = micro_count(expected, micro)
    length = horizon / M
    min_start = math.ceil(warmup / length - 1e-9)
    if M - min_start < 2 * min_batches:
        raise ConfigError(
            "warmup",
            f"warm-up {warmup:g} leaves too little of horizon {horizon:g} for {min_batches} "
            "batches",
        )
    count = 0
    events = 0

    def run_to(n: int) -> None:
        """Run micro-batches until n have been simulated, counting their events."""
        nonlocal count, events
        while count < n:
            count += 1
            events += step(count * length)
            if _stop[0]:
                raise KeyboardInterrupt

    with _interruptible():
        run_to(M)
        doublings = looks = 0
        while True:
            batching = choose_batching(main(), min_start=min_start, min_batches=min_batches)
            measured = (count - batching.start) * length
            spans = relaxation is None or servers * measured >= MIN_RELAXATIONS * relaxation
            ok = batching.converged and spans
            if ok and rel_precision is not None:
                est = batch_means_ci(batching.merge(main()), ar1=True)
                ok = bool(est.half_width <= rel_precision * abs(est.mean))
            more = False
            if ok and needed is not None:
                # Decide the claims on the run so far: double only if that would decide them.
                looks += 1
                so_far = RunLength(batching, length, count, count * length, doublings, True)
                factor = float(needed(so_far))
                more = 1.0 < factor <= 2.0 ** (extend - doublings)
            if (ok and not more) or doublings >= extend or 2.0 * events > max_events():
                break
            run_to(2 * count)
            doublings += 1
    unusable = ""
    if not batching.converged or not spans:
        # Correlated at every admissible batching after every extension, or too short for its
        # relaxation time: the wider interval of few large batches. It decides claims unless
        # the run is too short for any interval to be honest (slow_run_problem).
        series = main()
        batching = fallback_batching(series, replace(batching, converged=False))
        measured = (count - batching.start) * length
        unusable = slow_run_problem(
            batching, series, measured=measured, relaxation=relaxation, servers=servers
        )
        if unusable:
            log.warning("run not converged: %s", unusable)
    slow = batching.groups > 0
    run = RunLength(
        batching, length, count, count * length, doublings, not unusable, looks, slow, unusable
    )
    for runs in _recorders:
        runs.append(run)
    return run
