"""The general-service model: θ quadrature vs closed forms, the published formulas, and the
exact PH mean field two ways (cavity queue vs ODE), with its known special cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lbrepro.core.errors import ConfigError, UnstableError
from lbrepro.models import general as gen
from lbrepro.models import service as svc
from lbrepro.models import supermarket as sm
from lbrepro.models.general import phase_type


@pytest.mark.parametrize(
    "dist",
    [
        svc.exponential(1.0),
        svc.exponential(2.5),
        svc.erlang(3, 1.0),
        svc.erlang(5, 2.0),
        svc.weibull(0.5, 1.0),
        svc.weibull(2.0, 0.7),
        svc.lomax(1.5, 1.0),
        svc.lomax(1.05, 2.0),
        svc.lomax(3.0, 1.0),
        svc.deterministic(0.8),
    ],
)
@pytest.mark.parametrize("d", [1, 2, 3, 5])
def test_theta_quadrature_matches_closed_form(dist, d: int) -> None:
    cf = gen.theta_closed_form(dist, d)
    assert cf is not None
    assert gen.theta(dist, d) == pytest.approx(cf, rel=1e-8)


def test_theta_exponential_is_mu_power_over_d() -> None:
    for mu in (0.5, 1.0, 3.0):
        assert gen.theta(svc.exponential(mu), 2) == pytest.approx(mu / 2)
        assert gen.theta(svc.exponential(mu), 3) == pytest.approx(mu**2 / 3)


def test_theta_table_decreases_in_m_and_d() -> None:
    # Table 1: Erlang with m phases of rate 1 (μ = 1/m); θ = 1 at d = 1 for every m.
    tab = np.array([[gen.theta(svc.erlang(m, 1.0), d) for d in range(1, 6)] for m in range(1, 6)])
    np.testing.assert_allclose(tab[:, 0], 1.0, rtol=1e-10)
    assert np.all(np.diff(tab[:, 1:], axis=0) < 0)
    assert np.all(np.diff(tab, axis=1)[:, :] < 0)


def test_published_tail_structure() -> None:
    dist = svc.parse("erlang:2")
    lam, d = 0.8, 2
    pi = gen.published_tail(dist, lam, d)
    th = gen.theta(dist, d)
    assert pi[0] == 1.0 and pi[1] == pytest.approx(0.8)
    assert pi[2] == pytest.approx(th * lam ** (d + 1))
    assert pi[3] == pytest.approx(lam**7 * th**3)
    # Exponential service: the paper's Π_2 = ρ^{d+1}/d, not the true ρ^{d+1} (models.md §C).
    pe = gen.published_tail("exp", 0.7, 3)
    assert pe[2] == pytest.approx(0.7**4 / 3)


def test_published_sojourn_d1() -> None:
    # d = 1: Π_k = ρ^k θ^{k−1} = ρ^k (θ = 1), a geometric queue, so
    # T_1 = E[X] + ρE[X_R] + ρ²E[X]/(1 − ρ). It equals Pollaczek–Khinchine only when
    # E[X_R] = E[X] (exponential): the published formula does not reduce to M/G/1 at d = 1.
    rho = 0.7
    for spec in ("exp", "erlang:3", "det", "weibull:0.5"):
        dist = svc.parse(spec)
        t1 = gen.published_sojourn(dist, rho, 1)
        expected = dist.mean + rho * dist.residual_mean + rho**2 * dist.mean / (1 - rho)
        assert t1 == pytest.approx(expected, rel=1e-10)
        pk = gen.mg1_mean_sojourn(dist, rho)
        if spec == "exp":
            assert t1 == pytest.approx(pk, rel=1e-10)
        else:
            assert abs(t1 - pk) > 0.05 * pk


def test_published_sojourn_infinite_for_infinite_variance() -> None:
    assert math.isinf(gen.published_sojourn("lomax:1.5", 0.7, 2))


@pytest.mark.parametrize("spec", ["exp", "erlang:2", "hyperexp:4", "coxian:1,2,0.5"])
@pytest.mark.parametrize(("lam", "d"), [(0.7, 2), (0.9, 2), (0.9, 3)])
def test_cavity_and_ode_agree(spec: str, lam: float, d: int) -> None:
    cav = gen.cavity_fixed_point(spec, lam, d)
    ode = gen.ode_fixed_point(spec, lam, d, K=cav.K)
    np.testing.assert_allclose(cav.u, ode.u, atol=1e-8, rtol=0)
    np.testing.assert_allclose(cav.x, ode.x, atol=1e-8, rtol=0)
    assert cav.u[1] == pytest.approx(lam, abs=1e-12)  # P(busy) = ρ for any work-conserving queue


@pytest.mark.parametrize(("lam", "d"), [(0.5, 2), (0.9, 2), (0.95, 3), (0.8, 5)])
def test_exponential_mean_field_is_doubly_exponential(lam: float, d: int) -> None:
    cf = sm.fixed_point_closed_form(lam, d)
    for u in (gen.cavity_fixed_point("exp", lam, d).u, gen.ode_fixed_point("exp", lam, d).u):
        n = min(u.size, cf.size)
        np.testing.assert_allclose(u[:n], cf[:n], atol=1e-12, rtol=0)


@pytest.mark.parametrize("spec", ["erlang:2", "hyperexp:3", "coxian:1,2,0.5"])
def test_cavity_d1_is_m_ph_1(spec: str) -> None:
    # d = 1: the cavity queue is an M/PH/1 queue; Little + Pollaczek–Khinchine give E[jobs].
    lam = 0.75
    mf = gen.cavity_fixed_point(spec, lam, 1)
    assert mf.mean_sojourn(lam) == pytest.approx(gen.mg1_mean_sojourn(spec, lam), rel=1e-9)


@pytest.mark.parametrize("spec", ["exp", "erlang:4", "hyperexp:4", "coxian:1,2,0.5"])
def test_level_reduction_equals_dense_solve(spec: str) -> None:
    dist = svc.parse(spec)
    alpha, smat = dist.ph()
    K = 30
    u = np.linspace(1, 0, K + 1) ** 2
    rates = phase_type._level_rates(u, 0.8, 2)
    dense = phase_type._stationary(phase_type._cavity_generator(rates, alpha, smat, K))
    np.testing.assert_allclose(
        phase_type._stationary_levels(rates, alpha, smat, K), dense, atol=1e-14
    )


def test_cavity_erlang4_k80() -> None:
    # Its run time is measured in bench/bench_timings.py, not asserted here.
    res = gen.cavity_fixed_point(svc.erlang(4, 4.0), 0.9, 2, K=80)
    assert res.phases == 4 and res.K == 80


def test_non_ph_mean_field_refused() -> None:
    with pytest.raises(ConfigError, match="phase type"):
        gen.cavity_fixed_point("lomax:3", 0.5, 2)


@pytest.mark.parametrize(
    ("args", "err", "key"),
    [
        (("exp", 1.0, 2), UnstableError, None),
        (("erlang:2", 1.2, 2), UnstableError, None),
        (("exp", 0.5, 0), ConfigError, "d"),
        (("exp", 0.5, 1.5), ConfigError, "d"),
        (("exp", -0.5, 2), ConfigError, "lam"),
        (("lomax:0.9", 0.5, 2), ConfigError, "alpha"),
    ],
)
def test_bad_input(args, err, key) -> None:
    for fn in (gen.published_tail, gen.published_sojourn, gen.cavity_fixed_point):
        with pytest.raises(err) as info:
            fn(*args)
        if key is not None:
            assert info.value.key == key
    with pytest.raises(UnstableError, match="rho"):
        gen.simulate("exp", 1.0, 2, N=10, horizon=10, warmup=1, seed=1)


def test_solve_json() -> None:
    out = gen.solve("erlang:2", lam=0.8, d=2)
    # The truth first: the exact mean field at the top level, the published CF beneath.
    assert out["method"] == "exact mean field (cavity queue)"
    assert out["published"]["theta"] == pytest.approx(0.625)
    assert out["u"][1] == pytest.approx(0.8)
    mf = gen.cavity_fixed_point("erlang:2", 0.8, 2)
    assert out["mean_sojourn"] == pytest.approx(mf.mean_sojourn(0.8), rel=1e-12)
    assert out["published"]["mean_sojourn"] == pytest.approx(1.585, abs=1e-3)


@pytest.mark.parametrize(("m", "d"), [(3, 2), (5, 5), (10, 7), (50, 20)])
def test_erlang_theta_closed_form_is_exact_beyond_float_factorials(m: int, d: int) -> None:
    """Erlang θ term by term agrees with exact rational arithmetic, also where n! overflows a
    float and the coefficients underflow ((m − 1)d ≥ 171: Erlang-50 at d = 20 once raised
    OverflowError), and with the quadrature."""
    from fractions import Fraction

    poly = [Fraction(1, math.factorial(j)) for j in range(m)]
    power = [Fraction(1)]
    for _ in range(d):
        out = [Fraction(0)] * (len(power) + m - 1)
        for i, a in enumerate(power):
            for j, b in enumerate(poly):
                out[i + j] += a * b
        power = out
    exact = float(sum(c * math.factorial(n) / Fraction(d) ** (n + 1) for n, c in enumerate(power)))
    dist = svc.erlang(m, float(m))  # rate m: mean 1, μ = 1, so θ = (the integral in y = mx)/m
    assert gen.theta_closed_form(dist, d) == pytest.approx(exact / m, rel=1e-12)
    assert gen.theta(dist, d) == pytest.approx(exact / m, rel=1e-8)
