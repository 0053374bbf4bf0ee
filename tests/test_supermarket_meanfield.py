"""Supermarket model JSQ(d): closed form, numerical fixed point, refined term, validation."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from lbrepro.core.errors import ConfigError, UnstableError
from lbrepro.models import supermarket as sm

CASES = [(0.5, 1), (0.9, 2), (0.99, 2), (0.9, 3), (0.7, 5), (0.99, 5), (0.999, 10), (0.99, 1)]


def padded_diff(a, b):
    n = max(a.size, b.size)
    return float(np.max(np.abs(np.pad(a, (0, n - a.size)) - np.pad(b, (0, n - b.size)))))


@pytest.mark.parametrize(("rho", "d"), CASES)
def test_numerical_fixed_point_matches_closed_form(rho, d):
    cf = sm.fixed_point_closed_form(rho, d)
    mf = sm.fixed_point(rho, d)
    assert mf.success and mf.residual <= 1e-13 and mf.tail <= 1e-14
    assert mf.u[0] == 1.0 and mf.u.size == mf.K + 1
    assert padded_diff(cf, mf.u) <= 1e-10


def test_truncation_is_enlarged_for_slow_tails():
    mf = sm.fixed_point(0.99, 1)  # u_k = 0.99^k needs ~3200 levels for a 1e-14 tail
    assert mf.truncations[0] == sm.K0 and mf.K >= 3208
    assert list(mf.truncations) == [sm.K0 * 2**i for i in range(len(mf.truncations))]


@pytest.mark.parametrize(("rho", "d"), CASES)
def test_closed_form_is_a_fixed_point_of_the_drift(rho, d):
    u = sm.fixed_point_closed_form(rho, d)
    assert u[-1] < 1e-16 <= u[-2]
    assert np.max(np.abs(sm.drift(u[1:], rho, d))) <= 1e-12


def test_d1_is_geometric():
    u = sm.fixed_point_closed_form(0.8, 1, 2.0)  # ρ = 0.4
    np.testing.assert_allclose(u, 0.4 ** np.arange(u.size), rtol=1e-13)


@pytest.mark.parametrize("d", [2, 3, 5])
def test_doubly_exponential_slope_is_log_d(d):
    u = sm.fixed_point_closed_form(0.9, d, tol=1e-300)
    u = u[1:-1]  # the last level may underflow to 0
    y = np.log(-np.log(u))
    k = np.arange(1, u.size + 1)
    slopes = np.diff(y)
    # Exactly log((d^{k+1}−1)/(d^k−1)) → log d, with error ≈ (d−1)/d^{k+1}.
    assert np.all(np.abs(slopes - math.log(d)) <= float(d) ** -k[:-1])
    np.testing.assert_allclose(y - np.log((float(d) ** k - 1) / (d - 1)), math.log(-math.log(0.9)))


def test_closed_form_does_not_overflow_for_large_d():
    u = sm.fixed_point_closed_form(0.999, 50, tol=1e-300)
    assert np.all(np.isfinite(u)) and u[-1] < 1e-300


def test_drift_and_population_model_agree():
    rng = np.random.default_rng(0)
    x = np.sort(rng.uniform(size=6))[::-1]
    m = sm.population_model(0.8, 3, 1.5, 6)
    np.testing.assert_allclose(m.drift(x), sm.drift(x, 0.8, 3, 1.5), rtol=1e-15, atol=1e-16)
    # Hand formula, written independently of the transition list.
    u = np.r_[1.0, x, 0.0]
    hand = [0.8 * (u[k - 1] ** 3 - u[k] ** 3) - 1.5 * (u[k] - u[k + 1]) for k in range(1, 7)]
    np.testing.assert_allclose(sm.drift(x, 0.8, 3, 1.5), hand, rtol=1e-14, atol=1e-16)


def test_refined_terms():
    r = sm.refined(0.9, 2)
    assert r.u.shape == r.V.shape and r.V[0] == 0.0 and r.W.shape == (r.K, r.K)
    # E[u_1]_N = ρ exactly for every N (busy fraction = load): the 1/N term of u_1 vanishes.
    assert abs(r.V[1]) < 1e-12
    assert np.all(r.V[2:6] > 0)  # finite N has longer queues than the mean field
    assert r.mean_jobs_coefficient == pytest.approx(float(np.sum(r.V)))
    assert r.mean_jobs == pytest.approx(sm.mean_jobs(sm.fixed_point_closed_form(0.9, 2)))
    assert r.mean_jobs_at(10) == pytest.approx(r.mean_jobs + r.mean_jobs_coefficient / 10)
    assert np.all(np.linalg.eigvalsh(r.W) > -1e-12)  # a covariance


def test_mean_jobs_and_little():
    u = sm.fixed_point_closed_form(0.5, 1)
    assert sm.mean_jobs(u) == pytest.approx(1.0, rel=1e-14)  # M/M/1: ρ/(1−ρ)
    assert sm.mean_sojourn(u, 0.5) == pytest.approx(2.0, rel=1e-14)  # 1/(μ − λ)


def test_ode_relaxes_to_the_fixed_point():
    t = np.linspace(0.0, 4000.0, 5)
    traj = sm.ode(0.9, 2, 1.0, np.zeros(12), t)
    assert traj.shape == (5, 12)
    np.testing.assert_array_equal(traj[0], 0.0)
    cf = sm.fixed_point_closed_form(0.9, 2)
    np.testing.assert_allclose(traj[-1][:8], cf[1:9], atol=1e-8)


def test_solve_is_json_ready():
    out = sm.solve(0.9, 2).to_json()
    json.dumps(out)
    assert out["method"] == "cf+mf+rmf"
    assert out["u"][0] == 1.0 and out["u"][1] == pytest.approx(0.9)
    assert out["mean_sojourn"] == pytest.approx(out["mean_jobs"] / 0.9)
    (fp,) = out["fixed_points"]
    assert fp["residual"] <= 1e-13 and fp["max_abs_diff_closed_form"] <= 1e-10
    ref = out["refined"]
    assert ref["mean_jobs_coefficient"] == pytest.approx(sum(ref["V"]))
    assert ref["u_coefficient_note"] == "E[u_k]_N ≈ u_k + V_k/N"


@pytest.mark.parametrize(
    ("kwargs", "key"),
    [
        ({"lam": 0.0, "d": 2}, "lam"),
        ({"lam": -0.5, "d": 2}, "lam"),
        ({"lam": float("nan"), "d": 2}, "lam"),
        ({"lam": "0.5", "d": 2}, "lam"),
        ({"lam": 0.5, "d": 0}, "d"),
        ({"lam": 0.5, "d": 2.5}, "d"),
        ({"lam": 0.5, "d": True}, "d"),
        ({"lam": 0.5, "d": 2, "mu": 0.0}, "mu"),
        ({"lam": 0.5, "d": 2, "mu": -1.0}, "mu"),
    ],
)
def test_validation_names_the_key(kwargs, key):
    for fn in (sm.fixed_point_closed_form, sm.fixed_point, sm.refined, sm.solve):
        with pytest.raises(ConfigError) as err:
            fn(**kwargs)
        assert err.value.key == key


@pytest.mark.parametrize(("lam", "mu"), [(1.0, 1.0), (1.2, 1.0), (2.0, 1.5)])
def test_unstable_load_is_refused(lam, mu):
    with pytest.raises(UnstableError, match=r"load rho=.* >= 1: the supermarket model is unstable"):
        sm.solve(lam, 2, mu)
    with pytest.raises(UnstableError):
        sm.fixed_point_closed_form(lam, 2, mu)


def test_integral_float_d_is_accepted():
    np.testing.assert_array_equal(
        sm.fixed_point_closed_form(0.9, 2.0), sm.fixed_point_closed_form(0.9, 2)
    )


def test_d1_refined_shortcut_matches_generic_computation():
    """refined(d=1) returns V = 0 without the generic path; the generic path agrees."""
    lam = 0.7
    short = sm.refined(lam, 1)
    fp = sm.fixed_point(lam, 1)
    generic = sm.population_model(lam, 1, 1.0, fp.K).refined(fp.u[1:])
    assert np.max(np.abs(generic.V)) < 1e-10
    assert np.all(short.V == 0.0)
    np.testing.assert_allclose(short.u, fp.u)


def test_initial_counts_round_fixed_point_to_n_servers():
    for N in (1, 7, 10, 1000):
        counts = sm.initial_counts(0.9, 2, N)
        assert counts.sum() == N and counts.min() >= 0
    counts = sm.initial_counts(0.9, 2, 1000)[0]
    tail = counts[::-1].cumsum()[::-1] / 1000
    np.testing.assert_allclose(tail[:4], sm.fixed_point_closed_form(0.9, 2)[:4], atol=1e-3)
