"""The per-server reference simulator, and the occupancy kernel checked against it.

The per-server simulator samples real servers (partial Fisher–Yates without replacement),
so agreement with ``simulate_occupancy`` checks the kernel's inversion of
P(min ≥ k) = C(Q_k, d)/C(N, d) on systems too large for the exact chain of
test_sim_occupancy. Two independent runs (different seeds) agree when every compared
difference is within the combined 95% half-width sqrt(h_a² + h_b²), widened by a Bonferroni
factor for the number of quantities compared in the test (family-wise error 1e-3). Seeds are
fixed, so outcomes are deterministic; they were not tuned.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from lbrepro.core.errors import ConfigError, UnstableError
from lbrepro.core.rng import stream
from lbrepro.sim import per_server
from lbrepro.sim.occupancy import simulate_occupancy
from lbrepro.sim.per_server import PerServerSimResult, simulate_per_server

LEVELS = (1, 2, 3, 4)
# u_1..u_4, mean_jobs and p_wait.
N_COMPARED = len(LEVELS) + 2


def widen(n_compared: int, batches: int = 20, family_error: float = 1e-3) -> float:
    """Factor turning each 95% half-width into a Bonferroni interval for n comparisons."""
    wide = stats.t.ppf(1 - family_error / (2 * n_compared), batches - 1)
    return wide / stats.t.ppf(0.975, batches - 1)


def half_width(low: float, high: float) -> float:
    return (high - low) / 2


def comparisons(ref: PerServerSimResult, occ) -> list[tuple[str, float, float, float]]:
    """(name, per-server value, occupancy value, combined 95% half-width) per quantity."""
    rows = []
    for k in LEVELS:
        h = math.hypot(
            half_width(ref.u_ci_low[k], ref.u_ci_high[k]),
            half_width(occ.u_ci_low[0][k], occ.u_ci_high[0][k]),
        )
        rows.append((f"u_{k}", float(ref.u[k]), float(occ.u[0][k]), h))
    for name in ("mean_jobs", "p_wait"):
        h = math.hypot(
            half_width(*getattr(ref, f"{name}_ci")), half_width(*getattr(occ, f"{name}_ci"))
        )
        rows.append((name, getattr(ref, name), getattr(occ, name), h))
    return rows


@pytest.mark.parametrize(
    ("N", "d", "lam", "replace", "horizon"),
    [
        (10, 3, 0.8, False, 5.0e5),
        (20, 5, 0.9, False, 4.0e5),
        (5, 5, 0.8, False, 8.0e5),
        (5, 3, 0.7, True, 8.0e5),
    ],
    ids=["SQ3of10", "SQ5of20", "JSQ-N5", "SQ3of5-replace"],
)
def test_occupancy_kernel_agrees_with_the_per_server_simulator(N, d, lam, replace, horizon):
    kw = {"lam": lam, "N": N, "d": d, "replace": replace, "horizon": horizon, "warmup": 100.0}
    ref = simulate_per_server(seed=stream(7, "per_server", N, d), **kw)
    occ = simulate_occupancy(seed=stream(7, "occupancy", N, d), **kw)
    f = widen(N_COMPARED)
    for name, a, b, h in comparisons(ref, occ):
        # Informative intervals: probabilities to ±0.01, mean_jobs to ±2%.
        assert 0 < h < (0.02 * b if name == "mean_jobs" else 0.01), (name, a, b, h)
        assert abs(a - b) <= f * h, (name, a, b, h)


def test_the_comparison_detects_the_wrong_sampling_scheme():
    # Power: the without-replacement per-server run against the kernel sampling WITH
    # replacement at N = 5, d = 3 (repeated draws make the sample worse, so more jobs) must
    # fail the agreement criterion used above on mean_jobs, by a wide margin.
    kw = {"lam": 0.7, "N": 5, "d": 3, "horizon": 5.0e5, "warmup": 100.0}
    ref = simulate_per_server(seed=stream(8, "per_server"), replace=False, **kw)
    occ = simulate_occupancy(seed=stream(8, "occupancy"), replace=True, **kw)
    _, a, b, h = next(row for row in comparisons(ref, occ) if row[0] == "mean_jobs")
    assert b - a > 2 * widen(N_COMPARED) * h, (a, b, h)


def test_d1_servers_are_mm1_queues():
    rho = 0.7
    r = simulate_per_server(lam=rho, N=20, d=1, horizon=5.0e4, warmup=100.0, seed=3)
    f = widen(len(LEVELS) + 1)
    for k in LEVELS:
        hw = half_width(r.u_ci_low[k], r.u_ci_high[k])
        assert 0 < hw < 0.02
        assert abs(r.u[k] - rho**k) <= f * hw, (k, r.u[k], rho**k, hw)
    hw = half_width(*r.p_wait_ci)
    assert abs(r.p_wait - rho) <= f * hw, (r.p_wait, hw)


@pytest.mark.parametrize("replace", [False, True])
def test_sampling_picks_a_least_loaded_server_with_the_exact_law(replace):
    # The joined server's law for a fixed state, against enumeration of every sample with
    # uniform tie breaks among the tied draws; chi-square at level 1e-4.
    q = np.array([0, 0, 1, 1, 2, 3], dtype=np.int64)
    N, d = q.size, 3
    samples = (
        list(itertools.product(range(N), repeat=d))
        if replace
        else list(itertools.permutations(range(N), d))
    )
    probs = np.zeros(N)
    for s in samples:
        m = min(q[i] for i in s)
        tied = [i for i in s if q[i] == m]
        for i in tied:
            probs[i] += 1 / (len(samples) * len(tied))
    perm = np.arange(N, dtype=np.int64)
    state = np.array([5, 6, 7, 8], dtype=np.uint64)
    draws = 40_000
    hits = np.zeros(N, dtype=np.int64)
    for _ in range(draws):
        s, m = per_server._sample_min(q, perm, N, d, replace, state)
        assert m == q[s]
        hits[s] += 1
    assert np.array_equal(np.sort(perm), np.arange(N))  # still a permutation
    keep = probs > 0
    assert hits[~keep].sum() == 0
    expected = probs[keep] * draws
    chi2 = float(((hits[keep] - expected) ** 2 / expected).sum())
    assert stats.chi2.sf(chi2, keep.sum() - 1) > 1e-4, (hits, expected)


# ---------------------------------------------------------------- contract


def small_run(**kw) -> PerServerSimResult:
    args = {"lam": 0.8, "N": 10, "d": 3, "horizon": 300.0, "warmup": 30.0, "seed": 9}
    args.update(kw)
    return simulate_per_server(**args)


def test_results_are_consistent_and_reproducible(agrees):
    a, b, c = small_run(), small_run(), small_run(seed=10)
    assert a.mean_jobs == b.mean_jobs and np.array_equal(a.u, b.u)
    assert a.events == b.events and a.p_wait == b.p_wait
    assert a.mean_jobs != c.mean_jobs
    s = small_run(seed=stream(9, "x"))
    assert s.spawn_key == stream(9, "x").spawn_key and s.seed == 9
    assert a.u[0] == 1.0 and np.all(np.diff(a.u) <= 0) and a.u[-1] > 0
    assert np.all(a.u_ci_low <= a.u_ci_high)
    # Work conservation: the fraction of busy servers is λ = 0.8 (unit service rate).
    assert agrees(a.u[1], (a.u_ci_low[1], a.u_ci_high[1]), 0.8, batches=a.batches)
    # The number of jobs is integrated separately from the level counts.
    assert a.mean_jobs == pytest.approx(a.u[1:].sum(), rel=1e-9)
    assert 0 < a.arrivals < a.events
    assert a.p_wait_ci[0] < a.p_wait_ci[1]


def test_level_reallocation_does_not_change_the_path(monkeypatch):
    kw = {"lam": 0.95, "N": 4, "d": 2, "horizon": 3000.0, "warmup": 100.0, "seed": 12}
    ref = simulate_per_server(**kw)
    monkeypatch.setattr(per_server, "_INITIAL_LEVELS", 2)
    grown = simulate_per_server(**kw)
    assert len(ref.u) > 4
    assert grown.events == ref.events
    assert np.array_equal(grown.u, ref.u) and grown.mean_jobs == ref.mean_jobs


def test_unstable_load_is_refused():
    with pytest.raises(UnstableError, match="unstable"):
        small_run(lam=1.0)
    with pytest.raises(UnstableError):
        small_run(lam=1.5, mu=1.5)


@pytest.mark.parametrize(
    ("override", "key"),
    [
        ({"lam": 0.0}, "lam"),
        ({"lam": math.inf}, "lam"),
        ({"mu": -1.0}, "mu"),
        ({"N": 0}, "N"),
        ({"N": 2**32}, "N"),
        ({"d": 0}, "d"),
        ({"d": 11}, "d"),
        ({"d": True}, "d"),
        ({"replace": 1}, "replace"),
        ({"horizon": 30.0}, "horizon"),
        ({"warmup": -1.0}, "warmup"),
        ({"batches": 1}, "batches"),
        ({"seed": -1}, "seed"),
    ],
)
def test_bad_arguments_raise_config_error_naming_them(override, key):
    with pytest.raises(ConfigError) as info:
        small_run(**override)
    assert info.value.key == key


def test_d_larger_than_n_is_fine_with_replacement():
    r = small_run(N=3, d=5, replace=True)
    assert r.d == 5 and r.u[1] == pytest.approx(0.8, abs=0.2)
