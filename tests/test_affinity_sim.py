"""Affinity simulator (numba) against the fluid limit and exact small cases."""

from __future__ import annotations

import numpy as np
import pytest

from lbrepro.core.errors import ConfigError, UnstableError
from lbrepro.core.rng import stream
from lbrepro.models import affinity as m
from lbrepro.sim.affinity import initial_servers, residence_times, simulate_affinity


def test_reaches_the_queueing_fixed_point_d3():
    r = simulate_affinity(
        0.8, 0.5, 1.0, 3, 2000, horizon=600, warmup=50, batches=10, seed=stream(1, "aff", 3)
    )
    xq = m.queueing_fixed_point(0.8, 0.5, 1.0, 3)
    for i in range(3):
        assert abs(r.x[i, 1] - xq[i, 1]) < 0.01, i
    # immediate switch: type-II arrivals are 1/4 of all arrivals
    frac = r.arrivals_type2.sum() / (r.arrivals_type1.sum() + r.arrivals_type2.sum())
    assert frac == pytest.approx(0.25, abs=0.01)


def test_bistable_d25_from_empty_and_from_type2():
    nq = m.no_queueing_roots(0.8, 0.5, 1.0, 25)[1].x
    r = simulate_affinity(0.8, 0.5, 1.0, 25, 2000, horizon=300, warmup=30, batches=5, seed=2)
    assert np.abs(r.x[:2] - nq[:2]).max() < 0.01
    xq = m.queueing_fixed_point(0.8, 0.5, 1.0, 25)
    r = simulate_affinity(
        0.8, 0.5, 1.0, 25, 2000, horizon=1000, warmup=30, batches=5, seed=3, start="type2"
    )
    assert abs(r.x[0, 1] - xq[0, 1]) < 0.01 and abs(r.x[1, 1] - xq[1, 1]) < 0.01


def test_single_server_is_mm1():
    # N = d1 = 1: every job is type I at the only server, an M/M/1 at load λ/μ1.
    r = simulate_affinity(0.6, 0.5, 1.0, 1, 1, horizon=40000, warmup=100, batches=20, seed=4)
    assert r.arrivals_type2.sum() == 0
    assert r.x_ci_low[0, 0] - 0.01 <= 0.4 <= r.x_ci_high[0, 0] + 0.01
    assert r.x[:, 1].sum() == 0


def test_trajectory_snapshots_and_start_states():
    n1, n2 = initial_servers("type2", 10)
    assert n1.sum() == 0 and n2.sum() == 10
    x = np.zeros((3, 2))
    x[0, 0], x[1, 1], x[2, 0] = 0.5, 0.3, 0.2
    n1, n2 = initial_servers(x, 10)
    assert sorted(zip(n1, n2, strict=True)).count((1, 1)) == 3
    r = simulate_affinity(0.8, 0.5, 1.0, 3, 500, horizon=10, seed=5, start=x, snap_times=[0, 5])
    assert r.snaps[0, 0, 0] == pytest.approx(0.5)
    assert r.snaps.sum(axis=(1, 2))[0] == pytest.approx(1.0)


def test_bad_input_names_the_parameter():
    with pytest.raises(ConfigError, match=r"^d1"):
        simulate_affinity(0.8, 0.5, 1.0, 11, 10)
    with pytest.raises(UnstableError, match="lam"):
        simulate_affinity(1.2, 0.5, 1.0, 3, 10)
    with pytest.raises(ConfigError, match=r"^mu2"):
        simulate_affinity(0.8, 1.5, 1.0, 3, 10)
    with pytest.raises(ConfigError, match=r"^start"):
        simulate_affinity(0.8, 0.5, 1.0, 3, 10, start=np.full((2, 2), 0.3))
    with pytest.raises(ConfigError, match=r"^start"):
        simulate_affinity(0.8, 0.5, 1.0, 3, 10, start="full")


def test_same_seed_same_numbers():
    a = simulate_affinity(0.8, 0.5, 1.0, 3, 100, horizon=50, batches=2, seed=stream(7, "x"))
    b = simulate_affinity(0.8, 0.5, 1.0, 3, 100, horizon=50, batches=2, seed=stream(7, "x"))
    assert np.array_equal(a.batch_x, b.batch_x)


def test_residence_times_hysteresis():
    t = np.arange(10.0)
    h = np.array([0.0, 0.05, 0.5, 0.9, 0.5, 0.95, 0.05, 0.5, 0.9, 0.9])
    low, high, sw, last = residence_times(t, h, 0.1, 0.8)
    assert sw == 3 and high == [3.0] and low == [2.0]
    # The stay in the high state from t = 8 is cut off at t = 9: censored, not dropped.
    assert last == ("high", 1.0)


def test_stop_at_type2_fraction():
    r = simulate_affinity(
        0.8,
        0.5,
        1.0,
        25,
        100,
        horizon=1e6,
        batches=1,
        seed=6,
        stop_type2_fraction=0.7,
        snap_times=np.arange(0, 1e6, 0.5),
    )
    assert np.isfinite(r.stopped_at) and r.stopped_at < 1e6
    # the sampled path has not yet reached the threshold before the stop
    assert np.all(r.snap_type2[r.snap_times < r.stopped_at] < 0.7 + 1e-12)
