"""Euler–Maruyama kernel of the JSQ diffusion limit: a reflected two-dimensional SDE.

The limit of Eschenfeldt & Gamarnik (2018) (docs/models.md §E),

    ``dX1 = √2 dW + (−β − X1 + X2) dt − dU1``,  ``dX2 = dU1 − X2 dt``,

with X1 ≤ 0 reflected at 0 from above by the nondecreasing U1. Several step sizes run on one
Brownian path (each dt an integer multiple of the smallest; the coarse increments are sums of
the fine ones), so the differences between step sizes are nearly free of sampling noise. The
kernel returns after every batch, so a run records per-batch time averages for batch-means
intervals. The model-level entry points (validation, extrapolation to dt → 0) live in
:mod:`lbrepro.models.universality`.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from lbrepro.core.errors import ConfigError
from lbrepro.core.rng import key_to_int, seed_sequence, xoshiro_state
from lbrepro.core.stats import batch_means_ci
from lbrepro.sim.compilation import ensure_compiled, njit
from lbrepro.sim.runlength import check_budget
from lbrepro.sim.xoshiro import uniform

__all__ = [
    "QUANTITIES",
    "SCHEMES",
    "CoupledRun",
    "DiffusionResult",
    "simulate_coupled",
    "step_multipliers",
]

#: Reflection schemes: projection (overshoot above 0 → U1) and the exact Brownian-bridge
#: Skorokhod map over each step with frozen drift (Lépingle 1995).
SCHEMES = ("projection", "bridge")

_SQRT2 = math.sqrt(2.0)
_TWO_PI = 2.0 * math.pi
# Columns of the running sums: X1, X1², X2, X2², X1·X2, U1.
_N_SUMS = 6


@njit(cache=True)
def advance_euler_schemes(
    x1: np.ndarray,
    x2: np.ndarray,
    dw: np.ndarray,
    count: np.ndarray,
    mult: np.ndarray,
    beta: float,
    h: float,
    n_fine: int,
    bridge: bool,
    wstate: np.ndarray,
    bstate: np.ndarray,
    sums: np.ndarray,
) -> None:
    """Advance J coupled Euler schemes by ``n_fine`` fine steps of length h.

    Scheme j steps every ``mult[j]`` fine steps (dt_j = mult[j]·h) with the sum of the fine
    Gaussian increments, so all schemes see the same Brownian path. ``dw[j]`` and
    ``count[j]`` carry a partial coarse step between calls. Left-point sums of X1, X1², X2,
    X2², X1·X2 over the completed steps and the increments of U1 are added to ``sums[j]``.
    """
    J = mult.size
    sqrt_h = math.sqrt(h)
    spare = 0.0
    for i in range(n_fine):
        if i % 2 == 0:
            r = math.sqrt(-2.0 * math.log(uniform(wstate)))
            theta = _TWO_PI * uniform(wstate)
            z = r * math.cos(theta)
            spare = r * math.sin(theta)
        else:
            z = spare
        for j in range(J):
            dw[j] += z
            count[j] += 1
            if count[j] < mult[j]:
                continue
            dt = mult[j] * h
            a = x1[j]
            b = x2[j]
            sums[j, 0] += a
            sums[j, 1] += a * a
            sums[j, 2] += b
            sums[j, 3] += b * b
            sums[j, 4] += a * b
            y = a + (-beta - a + b) * dt + _SQRT2 * sqrt_h * dw[j]
            if bridge:
                # Maximum of the Brownian bridge from a to y (variance 2 dt) over the step.
                top = 0.5 * (a + y + math.sqrt((y - a) ** 2 - 4.0 * dt * math.log(uniform(bstate))))
            else:
                top = y
            du = top if top > 0.0 else 0.0
            x1[j] = y - du
            x2[j] = b + du - b * dt
            sums[j, 5] += du
            dw[j] = 0.0
            count[j] = 0


def _warm_up_kernel() -> None:
    """Call the kernel on tiny inputs with both reflection schemes: compiles or loads it."""
    state = np.array([1, 2, 3, 4], dtype=np.uint64)
    for bridge in (False, True):
        advance_euler_schemes(
            np.zeros(1),
            np.zeros(1),
            np.zeros(1),
            np.zeros(1, dtype=np.int64),
            np.ones(1, dtype=np.int64),
            1.0,
            0.01,
            2,
            bridge,
            state,
            state.copy(),
            np.zeros((1, _N_SUMS)),
        )


@dataclass(frozen=True)
class DiffusionResult:
    """Stationary time averages of the JSQ diffusion limit at one step size, 95% batch CIs.

    ``mean_idle`` = E[−X1] = E[(N − Q_1)/√N] (scaled idle servers; exactly β in the limit),
    ``mean_q2`` = E[X2] = E[Q_2/√N], ``rate_u1`` = long-run rate of U1 (= E[X2] at
    stationarity), ``mean_x1_sq`` = E[X1²], ``mean_q2_sq`` = E[X2²], ``mean_x1x2`` =
    E[X1·X2], and the residuals of the two Itô identities of the limit, ``gap_x1x2`` =
    E[X1X2] + βE[X2]/2 and ``gap_x1sq`` = E[X1²] − E[X1X2] − 1 − β², which vanish as
    dt → 0 (docstring of :mod:`lbrepro.models.universality`) and so measure the
    discretization error. Each ``*_ci`` is ``(low, high)``. Time averages are left-point sums
    over the Euler grid. ``horizon`` and ``warmup`` are the simulated times actually used
    (rounded to whole coarse steps); ``steps`` counts this step size's Euler steps including
    warm-up; ``elapsed`` is the wall time of the whole (possibly coupled) run, numba
    compilation excluded, and ``steps_per_second`` = all Euler steps of that run /
    ``elapsed``. ``seed`` (the SeedSequence's entropy) and ``spawn_key`` reproduce the run bit
    for bit.
    """

    beta: float
    dt: float
    scheme: str
    mean_idle: float
    mean_idle_ci: tuple[float, float]
    mean_q2: float
    mean_q2_ci: tuple[float, float]
    rate_u1: float
    rate_u1_ci: tuple[float, float]
    mean_x1_sq: float
    mean_x1_sq_ci: tuple[float, float]
    mean_q2_sq: float
    mean_q2_sq_ci: tuple[float, float]
    mean_x1x2: float
    mean_x1x2_ci: tuple[float, float]
    gap_x1x2: float
    gap_x1x2_ci: tuple[float, float]
    gap_x1sq: float
    gap_x1sq_ci: tuple[float, float]
    steps: int
    horizon: float
    warmup: float
    batches: int
    elapsed: float
    steps_per_second: float
    seed: int | list[int]
    spawn_key: tuple[int, ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable copy (tuples become lists)."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in self.__dict__.items()}


#: The time averages of a :class:`DiffusionResult`, each with its interval.
QUANTITIES = (
    "mean_idle",
    "mean_q2",
    "rate_u1",
    "mean_x1_sq",
    "mean_q2_sq",
    "mean_x1x2",
    "gap_x1x2",
    "gap_x1sq",
)


@dataclass(frozen=True)
class CoupledRun:
    """The results of one coupled run and its per-batch values, for extrapolating batch by batch."""

    results: list[DiffusionResult]
    per_batch: dict[str, np.ndarray]  # quantity -> (batches, J)


def step_multipliers(dts: tuple[float, ...]) -> tuple[float, np.ndarray]:
    """Fine step h = min(dts) and the integers m_j = dt_j / h (ConfigError if not integers)."""
    h = min(dts)
    mult = []
    for dt in dts:
        ratio = dt / h
        m = round(ratio)
        if abs(ratio - m) > 1e-9 * ratio:
            raise ConfigError(
                "dts",
                f"every step size must be an integer multiple of the smallest, {h!r}; "
                f"{dt!r} is {ratio!r} times it",
            )
        mult.append(m)
    return h, np.array(mult, dtype=np.int64)


def simulate_coupled(
    beta: float,
    dts: tuple[float, ...],
    horizon: float,
    warmup: float,
    seed: Any,
    batches: int,
    scheme: str,
) -> CoupledRun:
    """Run the schemes of all ``dts`` on one Brownian path; per-batch values and results.

    Arguments are validated by the caller (:mod:`lbrepro.models.universality`); the run starts
    at X1 = −β, X2 = 0 and discards whole blocks of the common grid up to ``warmup``.
    """
    h, mult = step_multipliers(dts)
    lcm = math.lcm(*(int(m) for m in mult))
    block = lcm * h  # batch boundaries fall on every scheme's grid
    warm_blocks = max(0, math.ceil(warmup / block - 1e-9))
    batch_blocks = max(1, round((horizon - warmup) / batches / block))
    # One "event" per Euler step of each scheme; the kernel returns after every batch.
    check_budget(
        math.fsum(horizon / dt for dt in dts), what=f"this diffusion run (horizon = {horizon:g})"
    )
    seq = seed_sequence(seed)
    wstate = xoshiro_state(seq)
    bstate = xoshiro_state(
        np.random.SeedSequence(seq.entropy, spawn_key=(*seq.spawn_key, key_to_int("bridge")))
    )
    J = mult.size
    x1 = np.full(J, -beta)  # start at the stationary mean of X1; warm-up removes the rest
    x2 = np.zeros(J)
    dw = np.zeros(J)
    count = np.zeros(J, dtype=np.int64)
    sums = np.zeros((J, _N_SUMS))
    bridge = scheme == "bridge"
    args = (mult, beta, h)
    ensure_compiled(_warm_up_kernel)
    steps_per_batch = batch_blocks * lcm // mult
    raw = np.zeros((batches, J, _N_SUMS))
    start = time.perf_counter()
    if warm_blocks:
        advance_euler_schemes(
            x1, x2, dw, count, *args, warm_blocks * lcm, bridge, wstate, bstate, sums
        )
    for b in range(batches):
        sums[:] = 0.0
        advance_euler_schemes(
            x1, x2, dw, count, *args, batch_blocks * lcm, bridge, wstate, bstate, sums
        )
        raw[b] = sums / steps_per_batch[:, None]
    elapsed = time.perf_counter() - start

    dt_arr = mult * h
    per_batch = {
        "mean_idle": -raw[:, :, 0],
        "mean_x1_sq": raw[:, :, 1],
        "mean_q2": raw[:, :, 2],
        "mean_q2_sq": raw[:, :, 3],
        "mean_x1x2": raw[:, :, 4],
        "rate_u1": raw[:, :, 5] / dt_arr,
    }
    per_batch["gap_x1x2"] = per_batch["mean_x1x2"] + 0.5 * beta * per_batch["mean_q2"]
    per_batch["gap_x1sq"] = per_batch["mean_x1_sq"] - per_batch["mean_x1x2"] - 1.0 - beta * beta
    steps = (warm_blocks + batches * batch_blocks) * lcm // mult
    total_steps = int(steps.sum())
    entropy = seq.entropy
    seed_out: int | list[int] = (
        int(entropy) if np.ndim(entropy) == 0 else [int(x) for x in np.ravel(entropy)]
    )
    results = []
    for j in range(J):
        est = {q: batch_means_ci(per_batch[q][:, j]) for q in QUANTITIES}
        results.append(
            DiffusionResult(
                beta=beta,
                dt=float(dts[j]),
                scheme=scheme,
                **{
                    f: v
                    for q, e in est.items()
                    for f, v in ((q, float(e.mean)), (f"{q}_ci", (float(e.low), float(e.high))))
                },
                steps=int(steps[j]),
                horizon=(warm_blocks + batches * batch_blocks) * block,
                warmup=warm_blocks * block,
                batches=batches,
                elapsed=elapsed,
                steps_per_second=total_steps / elapsed if elapsed > 0 else float("nan"),
                seed=seed_out,
                spawn_key=tuple(int(k) for k in seq.spawn_key),
            )
        )
    return CoupledRun(results, per_batch)
