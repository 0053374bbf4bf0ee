"""Finite-horizon paths: JSQ(d) on N servers and the JSQ diffusion limit, from a given start.

Mukherjee et al. (2016) state *process-level* convergence at the diffusion scale: from a
start whose scaled state converges, the scaled process ((N − Q₁)/√N, Q₂/√N) of JSQ(d(N))
converges to the JSQ diffusion limit over every finite horizon [0, T] when
d(N)/(√N log N) → ∞. These helpers simulate both sides over [0, T] from one start:

- :func:`jsq_paths` — R independent JSQ(d) paths of the N-server occupancy chain (Q_k =
  servers with ≥ k jobs), d sampled without replacement, Poisson(λ(N)) arrivals, unit-rate
  servers; the state (Q₁, Q₂) is recorded at the requested times. The event loop draws from
  one xoshiro256** stream (the project's kernels' generator and their level searches, see
  :mod:`lbrepro.sim.occupancy_kernel`), so the paths are a function of the seed alone.
- :func:`sde_paths` — independent paths of the reflected SDE of Eschenfeldt & Gamarnik by the
  coupled Euler schemes of :mod:`lbrepro.sim.diffusion` (every step size on one Brownian path
  per replication), its state recorded at the same times, and the per-path extrapolation to
  dt → 0 through the step sizes.

Each path is an independent replication, so the mean over paths has an exact Student-t
interval (:func:`path_mean`): no batch means are needed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from lbrepro.core.errors import ConfigError
from lbrepro.core.rng import key_to_int, seed_sequence, xoshiro_state
from lbrepro.core.stats import Estimate, t_quantile
from lbrepro.sim.compilation import ensure_compiled, njit
from lbrepro.sim.diffusion import advance_euler_schemes, step_multipliers
from lbrepro.sim.occupancy_kernel import last_level_at_least, pool_min_level
from lbrepro.sim.runlength import check_budget
from lbrepro.sim.xoshiro import randint, uniform

__all__ = [
    "drift_ode",
    "jsq_paths",
    "limit_ode",
    "path_mean",
    "sde_paths",
    "start_counts",
]

#: Levels stored per path: a queue reaching the last one stops the run (never at the
#: diffusion scale over a unit horizon, where Q₃ stays O(1)).
_LEVELS = 64


@njit(cache=True)
def _run_paths(counts0, top0, lam_n, N, d, log_comb_n_d, times, R, state, out):
    """Simulate R independent paths from ``counts0``; ``out[r, i]`` = (Q₁, Q₂) at times[i].

    Returns the events simulated, or −1 if a queue reached the last stored level. The state
    at a recorded time is the one holding over the exponential gap that contains it.
    """
    L = counts0.shape[0]
    n_times = times.shape[0]
    counts = np.empty(L, dtype=np.int64)
    events = 0
    for r in range(R):
        for k in range(L):
            counts[k] = counts0[k]
        top = top0
        t = 0.0
        i = 0
        while True:
            total_rate = lam_n + counts[1]
            t_next = t - math.log(uniform(state)) / total_rate
            while i < n_times and t_next >= times[i]:
                out[r, i, 0] = counts[1]
                out[r, i, 1] = counts[2]
                i += 1
            if i == n_times:
                break
            t = t_next
            events += 1
            if uniform(state) * total_rate < lam_n:
                m = pool_min_level(counts, top, N, d, False, log_comb_n_d, state)
                k = m + 1
                counts[k] += 1
                if k > top:
                    top = k
                    if top + 1 >= L:
                        return -1
            else:
                j = randint(state, counts[1])
                k = last_level_at_least(counts, j + 1, 1, top)
                counts[k] -= 1
                if counts[top] == 0:
                    top -= 1
    return events


def _warm_up_kernel() -> None:
    """Run the path kernel on a tiny system: compiles it or loads it from the cache."""
    counts = np.zeros(_LEVELS, dtype=np.int64)
    counts[0], counts[1] = 4, 2
    _run_paths(
        counts,
        1,
        3.0,
        4,
        2,
        math.log(12.0),
        np.array([0.5]),
        1,
        np.array([1, 2, 3, 4], dtype=np.uint64),
        np.zeros((1, 1, 2)),
    )


def start_counts(N: int, idle: float, q2: float) -> np.ndarray:
    """Occupancy counts Q_0 = N, Q_1 = N − round(idle·√N), Q_2 = round(q2·√N), Q_k = 0 above:
    the N-server state nearest the scaled start ((N − Q₁)/√N, Q₂/√N) = (idle, q2)."""
    root = math.sqrt(N)
    q1 = N - round(idle * root)
    q2n = round(q2 * root)
    if not 0 <= q2n <= q1 <= N:
        raise ConfigError(
            "start", f"({idle:g}, {q2:g}) is no N-server state at N = {N} (Q₂ ≤ Q₁ ≤ N)"
        )
    counts = np.zeros(_LEVELS, dtype=np.int64)
    counts[0], counts[1], counts[2] = N, q1, q2n
    return counts


def jsq_paths(
    *,
    N: int,
    d: int,
    lam_n: float,
    start: tuple[float, float],
    times: Sequence[float],
    R: int,
    seed: np.random.SeedSequence | int,
) -> tuple[np.ndarray, int]:
    """R independent JSQ(d) paths (d of N servers sampled without replacement, total arrival
    rate ``lam_n``) from the scaled ``start`` = ((N − Q₁)/√N, Q₂/√N).

    Returns the scaled state at ``times``, shape (R, len(times), 2) — column 0 the idle mass
    (N − Q₁)/√N, column 1 Q₂/√N — and the number of events simulated.
    """
    counts = start_counts(N, *start)
    t = np.asarray(sorted(float(x) for x in times))
    # Arrivals plus departures over the horizon: at most (λ(N) + N)·T per path.
    check_budget((lam_n + N) * float(t[-1]) * R, what=f"{R} paths of N = {N} servers")
    top = int(np.flatnonzero(counts)[-1])
    # log N!/(N − d)!: pool_min_level compares log q!/(q − d)! against it (the d! cancels).
    log_comb = math.lgamma(N + 1.0) - math.lgamma(N - d + 1.0)
    state = xoshiro_state(seed_sequence(seed))
    out = np.zeros((R, t.size, 2))
    ensure_compiled(_warm_up_kernel)
    events = _run_paths(counts, top, float(lam_n), int(N), int(d), log_comb, t, int(R), state, out)
    if events < 0:
        raise RuntimeError(f"a queue reached {_LEVELS - 1} jobs: not the diffusion scale")
    root = math.sqrt(N)
    scaled = np.empty_like(out)
    scaled[:, :, 0] = (N - out[:, :, 0]) / root
    scaled[:, :, 1] = out[:, :, 1] / root
    return scaled, int(events)


def sde_paths(
    *,
    beta: float,
    dts: Sequence[float],
    scheme: str,
    start: tuple[float, float],
    times: Sequence[float],
    R: int,
    seed: np.random.SeedSequence | int,
) -> tuple[np.ndarray, np.ndarray, int]:
    """R independent paths of the JSQ diffusion limit from X₁ = −start[0], X₂ = start[1].

    Every step size of ``dts`` (integer multiples of the smallest) runs on each path's one
    Brownian path. Returns the scaled state (−X₁, X₂) at ``times`` per step size, shape
    (len(dts), R, len(times), 2), the same extrapolated path by path to dt → 0 (weights of
    ``m(dt) = m0 + c·dt``, the bridge scheme's error, or ``+ c·√dt`` for projection: see
    :func:`lbrepro.models.universality.jsq_diffusion_means`), shape (R, len(times), 2), and
    the Euler steps taken. Every time must lie on every step size's grid.
    """
    from lbrepro.models.universality import _extrapolation_weights

    dts_t = tuple(float(x) for x in dts)
    h, mult = step_multipliers(dts_t)
    lcm = math.lcm(*(int(m) for m in mult))
    t = sorted(float(x) for x in times)
    blocks = []
    for x in t:
        n = x / (lcm * h)
        if abs(n - round(n)) > 1e-9 * max(n, 1.0):
            raise ConfigError(
                "sde.dt", f"time {x:g} is not on the grid of every step size {list(dts_t)}"
            )
        blocks.append(round(n))
    check_budget(R * math.fsum(t[-1] / dt for dt in dts_t), what=f"{R} SDE paths")
    seq = seed_sequence(seed)
    wstate = xoshiro_state(seq)
    bstate = xoshiro_state(
        np.random.SeedSequence(seq.entropy, spawn_key=(*seq.spawn_key, key_to_int("bridge")))
    )
    J = mult.size
    out = np.zeros((J, R, len(t), 2))
    bridge = scheme == "bridge"
    sums = np.zeros((J, 6))
    dw = np.zeros(J)
    count = np.zeros(J, dtype=np.int64)
    ensure_compiled(_warm_up_sde)
    for r in range(R):
        x1 = np.full(J, -float(start[0]))
        x2 = np.full(J, float(start[1]))
        done = 0
        for i, b in enumerate(blocks):
            n_fine = (b - done) * lcm
            if n_fine:
                advance_euler_schemes(
                    x1, x2, dw, count, mult, beta, h, n_fine, bridge, wstate, bstate, sums
                )
            done = b
            out[:, r, i, 0] = -x1
            out[:, r, i, 1] = x2
    orders = (1.0,) if bridge else (0.5,) if J == 2 else (0.5, 1.0)
    w = _extrapolation_weights(np.array(dts_t), orders)
    extrapolated = np.tensordot(w, out, axes=(0, 0))
    steps = round(R * blocks[-1] * lcm * float(np.sum(1.0 / mult)))
    return out, extrapolated, steps


def _warm_up_sde() -> None:
    """Compile or load the Euler kernel (:mod:`lbrepro.sim.diffusion`)."""
    from lbrepro.sim.diffusion import _warm_up_kernel as warm

    warm()


def path_mean(values: np.ndarray, *, N: int | None = None, seed: Any = None) -> Estimate:
    """The mean of independent per-path values with its 95% Student-t interval."""
    x = np.asarray(values, dtype=float)
    n = x.size
    mean = float(x.mean())
    half = float(t_quantile(0.975, n - 1) * x.std(ddof=1) / math.sqrt(n)) if n > 1 else math.inf
    return Estimate(mean, mean - half, mean + half, half, int(n), N, seed)


def limit_ode(beta: float, start: tuple[float, float], times: Sequence[float]) -> np.ndarray:
    """The noise-free JSQ diffusion limit (the SDE without its Brownian term) at ``times``:
    (−x₁, x₂), shape (len(times), 2); x₁ ≤ 0 held at 0 by the reflection."""
    x1, x2 = -float(start[0]), float(start[1])
    h = 1e-4
    out = []
    t = 0.0
    for target in sorted(times):
        while t < target - 1e-12:
            step = min(h, target - t)
            y = x1 + (-beta - x1 + x2) * step
            du = max(y, 0.0)
            x1, x2 = y - du, x2 + du - x2 * step
            t += step
        out.append((-x1, x2))
    return np.array(out)


def drift_ode(
    N: int, d: int, lam_n: float, start: tuple[float, float], times: Sequence[float]
) -> np.ndarray:
    """The N-server chain's drift ODE (its expected rates, fluctuations left out) of JSQ(d)
    from the scaled ``start``, scaled like :func:`jsq_paths`: shape (len(times), 2).

    Occupancy counts Q_k with dQ_k/dt = λ(N)(p_{k−1} − p_k) − (Q_k − Q_{k+1}), where
    p_k = C(Q_k, d)/C(N, d) is the chance that all d sampled servers hold ≥ k jobs (without
    replacement, through lgamma). The predicted gap of a family below the theorem's
    condition from the limit, before any data.
    """
    counts = start_counts(N, *start).astype(float)[:12]
    lgN = math.lgamma(N + 1.0) - math.lgamma(N - d + 1.0)

    def p(q: np.ndarray) -> np.ndarray:
        out = np.zeros_like(q)
        ok = q >= d
        qq = q[ok]
        out[ok] = np.exp(np.minimum(0.0, (_lg(qq + 1.0) - _lg(qq - d + 1.0)) - lgN))
        return out

    def rates(q: np.ndarray) -> np.ndarray:
        pk = p(q)
        pk[0] = 1.0
        dq = np.zeros_like(q)
        below = np.append(q[1:], 0.0)
        dq[1:] = lam_n * (pk[:-1] - pk[1:]) - (q[1:] - below[1:])
        return dq

    h = 1e-3 / max(1.0, lam_n / N)
    root = math.sqrt(N)
    out = []
    t = 0.0
    q = counts
    for target in sorted(times):
        while t < target - 1e-12:
            step = min(h, target - t)
            k1 = rates(q)
            k2 = rates(q + 0.5 * step * k1)
            k3 = rates(q + 0.5 * step * k2)
            k4 = rates(q + step * k3)
            q = np.clip(q + step / 6 * (k1 + 2 * k2 + 2 * k3 + k4), 0.0, N)
            t += step
        out.append(((N - q[1]) / root, q[2] / root))
    return np.array(out)


def _lg(x: np.ndarray) -> np.ndarray:
    """lgamma elementwise."""
    return np.array([math.lgamma(v) for v in x])
