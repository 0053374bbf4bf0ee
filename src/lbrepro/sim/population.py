"""Exact finite-N simulation of a population process declared by its transitions.

``simulate_population(rate, jumps, params, N=…, horizon=…, warmup=…, seed=…)`` runs the
generic kernel of :mod:`lbrepro.sim.population_kernel` on N objects: the count vector jumps
by the integer row ``jumps[l]`` at rate ``N·rate(l, x, params)``, ``x`` the counts over N.
``rate`` is a scalar function of the transition index, the state and a float parameter array,
written with plain arithmetic so that numba compiles it (an ``@numba.njit`` function, or a
plain one this module compiles); :class:`lbrepro.meanfield.population.PopulationModel` builds
the same model's mean field from the same function (``PopulationModel.from_rate``).

Everything else is the project's: one xoshiro256** stream from the point's SeedSequence,
micro-batches, MSER-5 truncation, batch means and sequential doubling
(:func:`lbrepro.sim.runlength.run_micro_batches`), the event budget, Ctrl-C within one
micro-batch. The result gives the time-average of every coordinate with its 95% interval
(``result.estimate("x", k)``) and of the weighted sum the run length is judged on
(``result.estimate("main")``; by default the sum of the coordinates — the mean queue length
of an occupancy model).

Which rates to evaluate again after a jump is found by probing: each coordinate is changed at
a few states (the start, all zeros, all ones, random ones) and the transitions whose rate
moved are its dependants. A rate that reads a coordinate only in some region of the state
space could escape the probe, so the kernel's incrementally kept rates are compared with a
fresh evaluation of every rate at the end of every micro-batch; a difference stops the run
with an error asking for ``depends=`` (the coordinates each transition reads), never a silent
wrong result.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np
import scipy.sparse
from numba import njit
from tqdm import tqdm

from lbrepro.core.errors import ConfigError
from lbrepro.core.rng import seed_sequence, xoshiro_state
from lbrepro.sim.estimates import EstimatesMixin
from lbrepro.sim.population_kernel import (
    STATUS_BAD_STATE,
    STATUS_NEGATIVE_RATE,
    STATUS_STALE_RATE,
    all_rates,
    population_run,
)
from lbrepro.sim.runlength import RunLength, check_budget, micro_count, run_micro_batches

__all__ = ["PopulationSimResult", "compiled_rate", "simulate_population"]


def compiled_rate(rate: Callable[..., float]) -> Any:
    """``rate`` as a numba dispatcher (compiled on first use); an njit function as it is."""
    if isinstance(rate, numba.core.registry.CPUDispatcher):
        return rate
    if not callable(rate):
        raise ConfigError("rate", "must be a function rate(l, x, params) -> float")
    return njit(cache=False)(rate)


@njit(cache=False)
def _probe(rate, bases, values, params, T, moved):
    """``moved[i, l]`` = whether rate l changes when coordinate i is set to a probe value."""
    n = bases.shape[1]
    x = np.empty(n)
    for b in range(bases.shape[0]):
        for i in range(n):
            for v in range(values.shape[0]):
                for j in range(n):
                    x[j] = bases[b, j]
                for tr in range(T):
                    before = rate(tr, x, params)
                    x[i] = values[v]
                    after = rate(tr, x, params)
                    x[i] = bases[b, i]
                    if before != after and not (math.isnan(before) and math.isnan(after)):
                        moved[i, tr] = True


def _csr(lists: Sequence[Sequence[int]], n: int) -> tuple[np.ndarray, np.ndarray]:
    """(ptr, idx) of a list of index lists."""
    ptr = np.zeros(n + 1, dtype=np.int64)
    for i, items in enumerate(lists):
        ptr[i + 1] = ptr[i] + len(items)
    idx = np.array([j for items in lists for j in items], dtype=np.int64)
    return ptr, idx


def _integer_jumps(jumps: Any) -> scipy.sparse.csr_matrix:
    """The jump vectors as an integer CSR matrix (x moves by ℓ/N, so ℓ must be integral)."""
    J = scipy.sparse.csr_matrix(jumps, dtype=float)
    J.eliminate_zeros()
    if J.shape[0] < 1 or J.shape[1] < 1:
        raise ConfigError("jumps", f"must be a non-empty (T, n) array, got shape {J.shape}")
    if not np.all(np.isfinite(J.data)) or np.any(J.data != np.round(J.data)):
        raise ConfigError("jumps", "must be integers: a transition moves x by ℓ/N")
    return scipy.sparse.csr_matrix(J, dtype=np.int64)


def _dependants(
    rate: Any,
    params: np.ndarray,
    x0: np.ndarray,
    T: int,
    depends: Sequence[Sequence[int]] | None,
    seed: np.random.SeedSequence,
) -> list[list[int]]:
    """For each coordinate, the transitions whose rate reads it (probed, or from depends)."""
    n = x0.size
    if depends is not None:
        if len(depends) != T:
            raise ConfigError("depends", f"needs one list of coordinates per transition ({T})")
        found: list[list[int]] = [[] for _ in range(n)]
        for tr, coords in enumerate(depends):
            for i in coords:
                if not 0 <= int(i) < n:
                    raise ConfigError("depends", f"transition {tr}: coordinate {i} not in [0, {n})")
                found[int(i)].append(tr)
        return found
    rng = np.random.default_rng(seed.spawn(1)[0])
    bases = np.vstack([x0, np.zeros(n), np.ones(n), rng.uniform(size=(2, n))])
    values = np.concatenate([[0.0, 1.0], rng.uniform(size=2)])
    moved = np.zeros((n, T), dtype=np.bool_)
    _probe(rate, bases, values, params, T, moved)
    return [list(np.flatnonzero(moved[i])) for i in range(n)]


@dataclass(frozen=True)
class PopulationSimResult(EstimatesMixin):
    """Time averages of a population process over the measured part of one run.

    ``x`` (with ``x_ci_low``/``x_ci_high``) is the mean of every coordinate, ``main`` (with
    ``main_ci``) the weighted sum the run length was judged on; ``converged``, ``batches``,
    ``warmup_used`` and ``horizon`` are the run-length facts of
    :func:`lbrepro.sim.runlength.run_micro_batches`; ``events`` counts the measured events
    and ``events_total`` every one, warm-up included.
    """

    x: np.ndarray
    x_ci_low: np.ndarray
    x_ci_high: np.ndarray
    main: float
    main_ci: tuple[float, float]
    N: int
    seed: Any
    batches: int
    converged: bool
    horizon: float
    warmup_used: float
    doublings: int
    events: int
    events_total: int
    elapsed: float
    events_per_second: float
    looks: int = 1

    def to_json(self) -> dict[str, Any]:
        """The result as JSON-ready values (arrays as lists)."""
        return {
            "x": self.x.tolist(),
            "x_ci_low": self.x_ci_low.tolist(),
            "x_ci_high": self.x_ci_high.tolist(),
            "main": self.main,
            "main_ci": list(self.main_ci),
            "N": self.N,
            "seed": self.seed,
            "batches": self.batches,
            "converged": self.converged,
            "horizon": self.horizon,
            "warmup_used": self.warmup_used,
            "events": self.events,
            "events_per_second": self.events_per_second,
        }


class _Recorder:
    """The kernel's state between micro-batches and each micro-batch's time integrals."""

    def __init__(
        self, rate: Any, params: np.ndarray, counts: np.ndarray, N: int, tables: tuple
    ) -> None:
        self.rate, self.params, self.N, self.tables = rate, params, N, tables
        self.counts = counts
        self.x = counts / float(N)
        T = tables[0].size - 1
        self.rates = np.empty(T)
        all_rates(rate, self.x, params, self.rates)
        self._check_rates(self.rates, "at the start state")
        self.blocks = np.zeros((T + 3) // 4)
        self.fresh = np.empty(T)
        n = counts.size
        self.area = np.zeros(n)
        self.last = np.zeros(n)
        self.t = 0.0
        self.state: np.ndarray = np.zeros(4, dtype=np.uint64)
        self.areas: list[np.ndarray] = []
        self.durations: list[float] = []
        self.events: list[int] = []

    def _check_rates(self, rates: np.ndarray, where: str) -> None:
        bad = np.flatnonzero(~(rates >= 0) | ~np.isfinite(rates))
        if bad.size:
            raise ConfigError(
                "rate",
                f"transition {int(bad[0])} has rate {float(rates[bad[0]])!r} {where}: rates "
                "must be finite and >= 0"
            )  # fmt: skip

    def _args(self, t_end: float, *state: Any) -> tuple:
        """The kernel's arguments for (counts, x, rates, area, last, t, xoshiro state)."""
        X, x, rates, area, last, t, xs = state
        return (
            self.rate, self.params, X, x, self.N, rates, self.blocks, self.fresh,
            *self.tables, area, last, t, t_end, xs,
        )  # fmt: skip

    def compile(self) -> None:
        """Compile the kernel for this rate function on copies of the state (so the
        simulation's clock excludes the JIT) and keep its compiled entry point: numba's
        dispatcher types every argument at every call, and typing a function argument costs
        about 0.1 ms — more than a short micro-batch's simulation. The entry point skips that
        (the argument types are fixed here)."""
        args = self._args(
            0.0, self.counts.copy(), self.x.copy(), self.rates.copy(), self.area.copy(),
            self.last.copy(), 0.0, self.state.copy(),
        )  # fmt: skip
        population_run(*args)
        signature = tuple(population_run.typeof_pyval(a) for a in args)
        self._kernel = population_run.overloads[signature].entry_point

    def step(self, t_end: float) -> int:
        """Simulate to ``t_end``, record the micro-batch's integrals; its number of events."""
        t_start = self.t
        status, self.t, events, bad = self._kernel(
            *self._args(
                t_end, self.counts, self.x, self.rates, self.area, self.last, self.t, self.state
            )
        )
        if status == STATUS_NEGATIVE_RATE:
            raise ConfigError(
                "rate", f"transition {bad} has a negative or infinite rate at t = {self.t:.6g}, "
                f"x = {np.round(self.x, 6).tolist()}"
            )  # fmt: skip
        if status == STATUS_BAD_STATE:
            raise ConfigError(
                "jumps", f"transition {bad} fired at t = {self.t:.6g} and took a count outside "
                f"[0, N]: its rate must be 0 there (x = {np.round(self.x, 6).tolist()})"
            )  # fmt: skip
        if status == STATUS_STALE_RATE:
            raise ConfigError(
                "depends", f"the rate of transition {bad} reads a coordinate the dependency "
                "probe did not find: pass depends= (the coordinates each transition's rate reads)"
            )  # fmt: skip
        self.areas.append(self.area)
        self.area = np.zeros_like(self.area)
        self.durations.append(t_end - t_start)
        self.events.append(events)
        return events

    def means(self) -> np.ndarray:
        """Each micro-batch's time average of every coordinate, (micro-batches, n)."""
        return np.array(self.areas) / (self.N * np.array(self.durations))[:, None]


def _dependant_rows(J: scipy.sparse.csr_matrix, dependants: list[list[int]]) -> list[list[int]]:
    """For each transition, the transitions to evaluate again after it fires: those whose
    rate reads a coordinate it changes, sorted, without repeats."""
    rows = []
    for tr in range(J.shape[0]):
        coords = J.indices[J.indptr[tr] : J.indptr[tr + 1]]
        rows.append(sorted({int(d) for i in coords for d in dependants[i]}))
    return rows


def simulate_population(
    rate: Callable[..., float],
    jumps: Any,
    params: Sequence[float] = (),
    *,
    N: int,
    horizon: float,
    warmup: float,
    seed: np.random.SeedSequence | int,
    x0: Sequence[float] | None = None,
    batches: int = 20,
    extend: int | None = None,
    weights: Sequence[float] | None = None,
    depends: Sequence[Sequence[int]] | None = None,
    progress: bool = False,
) -> PopulationSimResult:
    """Simulate the population process of ``jumps`` and ``rate`` with N objects.

    ``x0`` is the start state (fractions; each ``x0[i]·N`` rounded to a count; default all
    zeros), ``weights`` the weights of the main quantity (default all ones), ``depends``
    optionally the coordinates each transition's rate reads (default: probed). The run is cut
    into micro-batches, truncated (at least ``warmup``), batched (at least ``batches``) and
    doubled while its batch means are correlated, as every simulator of the project.
    """
    if isinstance(N, bool) or not isinstance(N, (int, np.integer)) or N < 1:
        raise ConfigError("N", f"must be an integer >= 1, got {N!r}")
    for key, value in (("horizon", horizon), ("warmup", warmup)):
        if not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise ConfigError(key, f"must be a finite number >= 0, got {value!r}")
    if not horizon > warmup:
        raise ConfigError("horizon", f"must exceed the warm-up {warmup:g}, got {horizon:g}")
    J = _integer_jumps(jumps)
    T, n = J.shape
    p = np.asarray(params, dtype=float).reshape(-1)
    start = np.zeros(n) if x0 is None else np.asarray(x0, dtype=float)
    if start.shape != (n,) or not np.all((start >= 0) & (start <= 1)):
        raise ConfigError("x0", f"must be {n} fractions in [0, 1]")
    counts = np.rint(start * N).astype(np.int64)
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=float)
    if w.shape != (n,) or not np.all(np.isfinite(w)):
        raise ConfigError("weights", f"must be {n} finite numbers")
    seq = seed_sequence(seed)
    compiled = compiled_rate(rate)
    dependants = _dependants(compiled, p, counts / float(N), T, depends, seq)
    dep_ptr, dep_idx = _csr(_dependant_rows(J, dependants), T)
    tables = (
        J.indptr.astype(np.int64),
        J.indices.astype(np.int64),
        J.data.astype(np.int64),
        dep_ptr,
        dep_idx,
    )
    recorder = _Recorder(compiled, p, counts, int(N), tables)
    recorder.state = xoshiro_state(seq)
    recorder.compile()
    # Events per unit time, judged at the start state (the budget's estimate, not a bound).
    events_per_time = float(N) * max(float(recorder.rates.sum()), 1e-12)
    check_budget(
        events_per_time * horizon,
        what=f"this run (N = {N}, horizon = {horizon:g}, ≈ {events_per_time:.3g} events per "
        "unit time at the start state)",
    )
    bar = tqdm(
        total=micro_count(events_per_time * horizon),
        desc="population sim",
        unit="slice",
        disable=not progress,
        file=sys.stderr,
    )

    def step(t_end: float) -> int:
        events = recorder.step(t_end)
        bar.update(1)
        return events

    def main() -> np.ndarray:
        return recorder.means() @ w

    began = time.perf_counter()
    with bar:
        run = run_micro_batches(
            step,
            main,
            horizon=horizon,
            warmup=warmup,
            min_batches=batches,
            events_per_time=events_per_time,
            extend=extend,
        )
    elapsed = time.perf_counter() - began
    return _result(recorder, run, w, int(N), seq, elapsed)


def _result(
    recorder: _Recorder,
    run: RunLength,
    w: np.ndarray,
    N: int,
    seq: np.random.SeedSequence,
    elapsed: float,
) -> PopulationSimResult:
    """The estimates of the run, truncated and batched as its run length decided."""
    bm = run.batching
    per_batch = bm.merge(recorder.means())
    est_x = bm.ci(per_batch, lower=0.0, upper=1.0, ar1=True)
    est_main = bm.ci(per_batch @ w, ar1=True)
    first = bm.start
    measured = int(sum(recorder.events[first : first + bm.group * bm.batches]))
    total = int(sum(recorder.events))
    entropy = seq.entropy
    return PopulationSimResult(
        x=np.asarray(est_x.mean, dtype=float),
        x_ci_low=np.asarray(est_x.low, dtype=float),
        x_ci_high=np.asarray(est_x.high, dtype=float),
        main=float(est_main.mean),
        main_ci=(float(est_main.low), float(est_main.high)),
        N=N,
        seed=int(entropy) if np.ndim(entropy) == 0 else [int(v) for v in np.ravel(entropy)],
        batches=run.batches,
        converged=run.converged,
        horizon=run.horizon,
        warmup_used=run.warmup_used,
        doublings=run.doublings,
        events=measured,
        events_total=total,
        elapsed=elapsed,
        events_per_second=total / elapsed if elapsed > 0 else math.nan,
        looks=max(run.looks, 1),
    )
