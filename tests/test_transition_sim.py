"""The simulator of a population process declared by its transitions
(lbrepro.sim.population, PopulationModel.from_rate), checked twice: against the dedicated
occupancy kernel on JSQ(d) and against the refined mean field, each within the simulation's
95% interval; a mis-declared rate or dependency must be caught, never simulated silently."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from lbrepro.core.errors import ConfigError
from lbrepro.meanfield.population import PopulationModel
from lbrepro.models.supermarket import population_model
from lbrepro.sim.occupancy import simulate_occupancy

K = 25


def jsq_rate(tr, x, p):  # untyped: numba and hyper-dual numbers both call it
    """JSQ(d) on x_k = fraction with ≥ k jobs: arrivals λ(x_{k−1}^d − x_k^d), departures
    x_k − x_{k+1}; the power as a loop (plain arithmetic for both uses)."""
    n = x.shape[0]
    lam = p[0]
    d = int(p[1])
    if tr < n:
        below = 1.0 if tr == 0 else x[tr - 1]
        a = 1.0
        b = 1.0
        for _ in range(d):
            a = a * below
            b = b * x[tr]
        return lam * (a - b)
    k = tr - n
    above = x[k + 1] if k + 1 < n else 0.0
    return x[k] - above


def jsq(lam: float, d: int, rate=jsq_rate) -> PopulationModel:
    eye = np.eye(K, dtype=int)
    return PopulationModel.from_rate(np.vstack([eye, -eye]), rate, params=(lam, d))


def _inside(value: float, low: float, high: float, widen: float = 1.0) -> bool:
    half = (high - low) / 2 * widen
    return abs(value - (low + high) / 2) <= half


def test_one_rate_gives_the_supermarket_mean_field_and_refined_mean_field() -> None:
    """The same declaration as lbrepro.models.supermarket's vectorised model: equal fixed
    points and 1/N terms (the jets differentiate the scalar rate exactly)."""
    ours, theirs = jsq(0.9, 2), population_model(0.9, 2, 1.0, K)
    start = np.array([0.9**k for k in range(1, K + 1)])
    a, b = ours.fixed_point(start), theirs.fixed_point(start)
    np.testing.assert_allclose(a.x, b.x, atol=1e-12)
    np.testing.assert_allclose(ours.refined(a.x).V, theirs.refined(b.x).V, atol=1e-9)


@pytest.fixture(scope="module")
def jsq_run():
    """JSQ(2) at λ = 0.9, N = 50, long enough for intervals of about ±1%."""
    return jsq(0.9, 2).simulate(N=50, horizon=30_000, warmup=1_000, seed=11)


def test_jsq_from_transitions_agrees_with_the_refined_mean_field(jsq_run) -> None:
    model = jsq(0.9, 2)
    fixed = model.fixed_point(np.array([0.9**k for k in range(1, K + 1)]))
    refined = fixed.x + model.refined(fixed.x).V / 50
    mean = float(refined.sum())
    low, high = jsq_run.main_ci
    # The refined mean field is exact to O(1/N²): inside the (Bonferroni-free) 95% interval
    # widened by 1.5 for the O(1/N²) remainder, while the plain mean field is not.
    assert _inside(mean, low, high, 1.5), (mean, low, high)
    assert not _inside(float(fixed.x.sum()), low, high), (fixed.x.sum(), low, high)
    for k in range(4):
        est = jsq_run.estimate("x", k)
        assert _inside(refined[k], est.low, est.high, 1.5), (k, refined[k], est)


def test_jsq_from_transitions_agrees_with_the_dedicated_kernel(jsq_run) -> None:
    """Two simulators of one model, independent streams: their mean jobs differ by less than
    the two intervals' half-widths combined in quadrature, times 2 (a 4-sigma band)."""
    other = simulate_occupancy(lam=0.9, N=50, d=2, horizon=30_000, warmup=1_000, seed=12)
    a_low, a_high = jsq_run.main_ci
    b_low, b_high = other.mean_jobs_ci
    gap = abs(jsq_run.main - other.mean_jobs)
    combined = np.hypot((a_high - a_low) / 2, (b_high - b_low) / 2)
    assert gap <= 2 * combined, (jsq_run.main, other.mean_jobs, combined)
    assert jsq_run.converged and jsq_run.events > 1_000_000


def test_a_mis_declared_rate_lands_outside_the_interval() -> None:
    """A departure rate 10% too fast is a different model: its simulation disagrees with the
    correct model's refined mean field (the check can fail)."""

    compiled = njit(jsq_rate)  # a simulated rate calls compiled functions only

    def slow(tr, x, p):
        r = compiled(tr, x, p)
        return r if tr < x.shape[0] else 1.1 * r

    run = jsq(0.9, 2, slow).simulate(N=50, horizon=20_000, warmup=1_000, seed=3)
    model = jsq(0.9, 2)
    fixed = model.fixed_point(np.array([0.9**k for k in range(1, K + 1)]))
    mean = float((fixed.x + model.refined(fixed.x).V / 50).sum())
    assert not _inside(mean, *run.main_ci, 1.5)


def test_same_seed_same_numbers() -> None:
    a = jsq(0.7, 2).simulate(N=20, horizon=2_000, warmup=100, seed=5)
    b = jsq(0.7, 2).simulate(N=20, horizon=2_000, warmup=100, seed=5)
    c = jsq(0.7, 2).simulate(N=20, horizon=2_000, warmup=100, seed=6)
    assert a.main == b.main and np.array_equal(a.x, b.x)
    assert a.main != c.main


def test_a_negative_rate_is_one_error() -> None:
    @njit
    def negative(tr, x, p):
        return -1.0 if tr == 1 else 1.0 - x[0]

    model = PopulationModel.from_rate([[1], [-1]], negative)
    with pytest.raises(ConfigError, match=r"rate: transition 1 has rate -1\.0 at the start state"):
        model.simulate(N=10, horizon=100, warmup=10, seed=1)


def test_a_jump_out_of_range_is_one_error() -> None:
    """A departure with a positive rate at an empty system would make a count negative."""

    def leaky(tr, x, p):
        return 1.0 if tr == 0 else 2.0

    model = PopulationModel.from_rate([[1], [-1]], leaky)
    with pytest.raises(ConfigError, match="jumps: transition 1 fired"):
        model.simulate(N=10, horizon=1_000, warmup=10, seed=1)


def _hidden(tr, x, p):
    """Transition 3 reads x_0 only while it lies in (0.5, 0.6), where x_0 often is."""
    if tr == 0:
        return 1.0 - x[0]
    if tr == 1:
        return x[0]
    if tr == 2:
        return 5.0 * (1.0 - x[1])
    if x[0] > 0.5 and x[0] < 0.6:
        return 3.0 * x[1]
    return x[1]


HIDDEN_JUMPS = [[1, 0], [-1, 0], [0, 1], [0, -1]]


def test_the_probe_finds_a_dependency_in_a_small_region() -> None:
    from lbrepro.core.rng import seed_sequence
    from lbrepro.sim.population import _dependants, compiled_rate

    found = _dependants(compiled_rate(_hidden), np.zeros(0), np.zeros(2), 4, None, seed_sequence(2))
    assert 3 in found[0] and 3 in found[1]


def test_a_dependency_left_out_is_caught_not_simulated() -> None:
    """Rates kept incrementally are compared with fresh ones at each micro-batch's end: a
    dependency missing from ``depends=`` (or missed by the probe) stops the run with one
    error naming ``depends``; the full declaration runs."""
    model = PopulationModel.from_rate(HIDDEN_JUMPS, _hidden)
    with pytest.raises(ConfigError, match="depends: the rate of transition 3"):
        model.simulate(N=50, horizon=2_000, warmup=100, seed=2, depends=[[0], [0], [1], [1]])
    run = model.simulate(N=50, horizon=2_000, warmup=100, seed=2, depends=[[0], [0], [1], [0, 1]])
    assert run.events > 0


def test_bad_jumps_are_refused() -> None:
    with pytest.raises(ConfigError, match="jumps: must be integers"):
        PopulationModel.from_rate([[0.5], [-1]], jsq_rate).simulate(
            N=10, horizon=10, warmup=1, seed=1
        )
