"""Start states of the occupancy simulator: counts per level, rounded or drawn from a tail.

A run may start from ``initial[j, k]`` = number of type-j servers holding exactly k jobs
instead of empty. These helpers build such counts from a mean-field tail profile (u_0 = 1,
u_1, …) — rounded, or drawn at random with a generator that the run's seed fixes — and
validate a given start against the type sizes.
"""

from __future__ import annotations

import numpy as np

from lbrepro.core.errors import ConfigError
from lbrepro.core.rng import seed_sequence

__all__ = ["counts_from_tail", "initial_counts", "sample_from_tail", "start_rng"]


def counts_from_tail(u: np.ndarray, n: int) -> np.ndarray:
    """Round a tail profile (u_0 = 1, u_1, …) to counts of n servers with exactly k jobs.

    Largest-remainder rounding keeps the total exactly n; a row of the ``initial`` array
    :func:`simulate_occupancy` takes. Starting at the mean-field fixed point rather than
    empty shortens the transient a run must discard (~1/(1 − ρ)² time units near ρ = 1).
    """
    u = np.asarray(u, dtype=float)
    exact = n * (u - np.append(u[1:], 0.0))
    counts = np.floor(exact).astype(np.int64)
    short = n - int(counts.sum())
    counts[np.argsort(counts - exact)[:short]] += 1
    return counts


def start_rng(seed: np.random.SeedSequence | int) -> np.random.Generator:
    """The generator that draws a run's random start state: a child of the run's stream
    (spawn key + (2³¹ − 1,)), independent of the kernel's draws, so the seed fixes both."""
    seq = seed_sequence(seed)
    child = np.random.SeedSequence(seq.entropy, spawn_key=(*seq.spawn_key, 2**31 - 1))
    return np.random.default_rng(child)


def sample_from_tail(u: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """Draw n servers' occupancies independently from a tail profile (u_0 = 1, u_1, …).

    Returns counts of servers with exactly k jobs, multinomial with P(k) = u_k − u_{k+1}.
    Unlike :func:`counts_from_tail`, nothing of the tail is rounded away: near ρ = 1 rounding
    drops the servers of the long tail (at ρ = 0.99, d = 1, N = 1000 the rounded start holds
    90.6 jobs per server instead of 99) and biases a run low for a relaxation time. For d = 1
    the fixed point is the exact stationary law (independent M/M/1 queues), so the run starts
    in equilibrium. ``u`` should be computed to a small tolerance (its last entry is the mass
    lumped into the top level).
    """
    u = np.asarray(u, dtype=float)
    p = np.clip(u - np.append(u[1:], 0.0), 0.0, None)
    return rng.multinomial(int(n), p / p.sum()).astype(np.int64)


def initial_counts(initial: np.ndarray | None, n_types: np.ndarray) -> np.ndarray:
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
