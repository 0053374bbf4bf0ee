"""Idle-first routing with d samples, as a density-dependent population process.

N exponential servers of rate 1, Poisson arrivals of rate λN. An arriving job samples d
servers (with replacement) and joins an idle one if any; otherwise a uniformly random one of
the d samples. State: ``x_k``, the fraction of servers with at least k jobs, k = 1..K (K a
truncation level, high enough that ``x_K`` is negligible at the loads used).

Transitions (jump ``±e_k``, rate per server):

- arrival to an idle server: ``+e_1`` at ``λ(1 − x_1^d)``;
- arrival to a server with k − 1 ≥ 1 jobs: all d samples busy (``x_1^d``), the random one of
  them has k − 1 jobs with probability ``(x_{k−1} − x_k)/x_1``: ``+e_k`` at
  ``λ x_1^{d−1} (x_{k−1} − x_k)``;
- departure from a server with k jobs: ``−e_k`` at ``x_k − x_{k+1}``.

One scalar rate function serves the mean field (exact derivatives on hyper-dual numbers) and
the simulator (compiled by numba), so it uses plain arithmetic only; the power is a loop.
"""

from __future__ import annotations

import numpy as np

from lbrepro.meanfield.population import PopulationModel


def rate(tr, x, p):  # untyped: numba and hyper-dual numbers both call it
    """Rate of transition ``tr`` at state ``x``; ``p = (λ, d)``. Transitions 0..K−1 are
    arrivals to level k = tr + 1, K..2K−1 departures from level k = tr − K + 1."""
    K = x.shape[0]
    lam = p[0]
    d = int(p[1])
    busy_all = 1.0  # x_1^d, and x_1^(d−1) below
    for _ in range(d - 1):
        busy_all = busy_all * x[0]
    if tr == 0:
        return lam * (1.0 - busy_all * x[0])
    if tr < K:
        return lam * busy_all * (x[tr - 1] - x[tr])
    k = tr - K
    above = x[k + 1] if k + 1 < K else 0.0
    return x[k] - above


def model(lam: float, d: int, K: int) -> PopulationModel:
    """The policy at arrival rate λ per server with d samples, truncated at K levels."""
    eye = np.eye(K, dtype=int)
    return PopulationModel.from_rate(
        np.vstack([eye, -eye]), rate, params=(lam, d), names=[f"x{k}" for k in range(1, K + 1)]
    )


def mean_field(lam: float, d: int, K: int, N: int | None = None) -> float:
    """Mean jobs per server, Σ_k x_k: the mean field's, or with N the refined mean field's
    (Gast & Van Houdt 2017: x + V/N)."""
    m = model(lam, d, K)
    start = np.array([lam**k for k in range(1, K + 1)])
    fixed = m.fixed_point(start)
    if N is None:
        return float(fixed.x.sum())
    refined = m.refined(fixed.x)
    return float((fixed.x + refined.V / N).sum())


def mean_jobs_closed_form(lam: float, d: int) -> float:
    """The mean field's mean jobs in closed form: its fixed point is x_1 = λ and
    x_k = λ·(λ^d)^(k−1) (arrivals into level k ≥ 2 balance departures at ratio λ·x_1^(d−1)),
    so Σ_k x_k = λ / (1 − λ^d). A check of the transitions against the algebra."""
    return lam / (1.0 - lam**d)
