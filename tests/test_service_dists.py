"""Service-time family: samplers against moments, PH representations against Ḡ, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate

from lbrepro.core.errors import ConfigError
from lbrepro.models import service as svc

ALL = [
    "exp",
    "erlang:2",
    "erlang:5",
    "hyperexp:4",
    "hyperexp:0.3,0.7,0.5,2",
    "coxian:1,2,0.5",
    "det",
    "weibull:0.5",
    "weibull:2",
    "lomax:3.5",
    "lognormal:0.8",
]


@pytest.mark.parametrize("spec", ALL)
def test_sampler_matches_moments(spec: str) -> None:
    dist = svc.parse(spec, mean=1.7)
    assert dist.mean == pytest.approx(1.7, rel=1e-12)
    rng = np.random.default_rng(12)
    n = 400_000
    x = dist.sample(rng, n)
    assert np.all(x >= 0)
    se = math.sqrt(max(dist.second_moment - dist.mean**2, 1e-30) / n)
    assert abs(x.mean() - dist.mean) < 5 * se + 1e-12
    if spec not in ("det",):
        # Second moment (finite fourth moment for every family here but the Lomax α = 3.5).
        assert x.var() == pytest.approx(dist.second_moment - dist.mean**2, rel=0.05)


@pytest.mark.parametrize("spec", ALL)
def test_moments_are_integrals_of_survival(spec: str) -> None:
    dist = svc.parse(spec)
    end = dist.support_end if math.isfinite(dist.support_end) else math.inf
    m1, _ = integrate.quad(lambda x: float(dist.survival(x)), 0, end, limit=400)
    m2, _ = integrate.quad(lambda x: 2 * x * float(dist.survival(x)), 0, end, limit=400)
    assert m1 == pytest.approx(dist.mean, rel=1e-7)
    assert m2 == pytest.approx(dist.second_moment, rel=1e-6)


@pytest.mark.parametrize("spec", ["exp", "erlang:3", "hyperexp:4", "coxian:1,2,0.5"])
def test_ph_representation_matches_survival(spec: str) -> None:
    from scipy.linalg import expm

    dist = svc.parse(spec)
    alpha, Smat = dist.ph()
    xs = np.linspace(0, 8, 17)
    ph = [alpha @ expm(Smat * x) @ np.ones(alpha.size) for x in xs]
    if dist.family in ("exponential", "erlang"):
        np.testing.assert_allclose(ph, dist.survival(xs), rtol=1e-10, atol=1e-14)
    # The PH mean α(−S)^{-1}1 is the distribution's mean.
    assert alpha @ np.linalg.solve(-Smat, np.ones(alpha.size)) == pytest.approx(dist.mean)
    # Empirical survival of the sampler at a few points.
    x = dist.sample(np.random.default_rng(3), 200_000)
    for t, g in zip(xs[1:6], ph[1:6], strict=True):
        assert np.mean(x > t) == pytest.approx(g, abs=4e-3)


def test_non_ph_have_no_representation() -> None:
    for spec in ("det", "weibull:0.5", "lomax:2", "lognormal:1"):
        assert svc.parse(spec).ph() is None


@pytest.mark.parametrize(
    ("call", "key"),
    [
        (lambda: svc.lomax(1.0, 1.0), "alpha"),
        (lambda: svc.lomax(0.5, 1.0), "alpha"),
        (lambda: svc.exponential(-1), "rate"),
        (lambda: svc.erlang(0, 1.0), "m"),
        (lambda: svc.weibull(0, 1), "shape"),
        (lambda: svc.deterministic(0), "value"),
        (lambda: svc.hyperexponential([0.5, 0.6], [1, 2]), "probs"),
        (lambda: svc.parse("lomax:1"), "alpha"),
        (lambda: svc.parse("gamma:2"), "dist"),
        (lambda: svc.parse("erlang:2.5"), "dist"),
    ],
)
def test_bad_parameters_name_the_key(call, key: str) -> None:
    with pytest.raises(ConfigError) as err:
        call()
    assert err.value.key == key


def test_ph_survival_against_independent_closed_forms() -> None:
    xs = np.linspace(0, 6, 13)
    h = svc.hyperexponential([0.3, 0.7], [0.5, 2.0])
    expected = 0.3 * np.exp(-0.5 * xs) + 0.7 * np.exp(-2.0 * xs)
    np.testing.assert_allclose(h.survival(xs), expected, rtol=1e-10, atol=1e-15)
    # Two-phase Coxian: X = E1 + B·E2; Ḡ = e^{−r1 x} + c r1 (e^{−r2 x} − e^{−r1 x})/(r1 − r2).
    r1, r2, c = 1.0, 3.0, 0.4
    cox = svc.coxian([r1, r2], [c])
    expected = np.exp(-r1 * xs) + c * r1 * (np.exp(-r2 * xs) - np.exp(-r1 * xs)) / (r1 - r2)
    np.testing.assert_allclose(cox.survival(xs), expected, rtol=1e-10, atol=1e-15)
    assert cox.mean == pytest.approx(1 / r1 + c / r2)


def test_kernel_encoding_lives_in_sim() -> None:
    # models.service builds its kernel vectors with sim.service_sampling.encode.
    from lbrepro.sim import service_sampling

    assert svc.CODES is service_sampling.CODES
    cox = svc.coxian([1.0, 2.0], [0.5])
    assert cox.kernel_params.tolist() == [2.0, 1.0, 2.0, 0.5, 0.0]
    h2 = svc.hyperexponential([0.25, 0.75], [1.0, 3.0])
    assert h2.kernel_params.tolist() == [2.0, 0.25, 0.75, 1.0, 3.0]
    assert svc.erlang(3, 2.0).kernel_params.tolist() == [3.0, 2.0]
