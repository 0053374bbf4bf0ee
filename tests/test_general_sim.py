"""The general-service simulator against the exact PH mean field, M/G/1 formulas and the
exponential closed form; its service sampler against the distributions' moments."""

from __future__ import annotations

import numpy as np
import pytest

from lbrepro.core.errors import ConfigError, UnstableError
from lbrepro.core.rng import xoshiro_state
from lbrepro.models import general as gen
from lbrepro.models import service as svc
from lbrepro.models import supermarket as sm
from lbrepro.sim.general_service import simulate_general
from lbrepro.sim.service_sampling import sample_service


@pytest.mark.parametrize(
    "spec",
    [
        "exp",
        "erlang:3",
        "hyperexp:4",
        "coxian:1,2,0.5",
        "det",
        "weibull:0.5",
        "lomax:4.5",
        "lognormal:0.7",
    ],
)
def test_kernel_sampler_matches_moments(spec: str) -> None:
    dist = svc.parse(spec, mean=0.8)
    state = xoshiro_state(np.random.SeedSequence(5))
    n = 200_000
    x = np.array([sample_service(dist.code, dist.kernel_params, state) for _ in range(n)])
    sd = np.sqrt(dist.second_moment - dist.mean**2)
    assert abs(x.mean() - dist.mean) <= 5 * sd / np.sqrt(n) + 1e-12
    assert np.mean(x**2) == pytest.approx(dist.second_moment, rel=0.03)
    # Survival at the mean and at twice the mean.
    for t in (dist.mean * 0.999, 2 * dist.mean):
        assert np.mean(x > t) == pytest.approx(float(dist.survival(t)), abs=5e-3)


def test_erlang2_matches_exact_mean_field_at_n2000() -> None:
    lam, d = 0.8, 2
    mf = gen.cavity_fixed_point("erlang:2", lam, d)
    r = gen.simulate("erlang:2", lam, d, N=2000, horizon=20000, warmup=200, seed=11)
    rel = np.abs(r.u[1:4] - mf.u[1:4]) / mf.u[1:4]
    assert np.all(rel < 0.005), rel
    assert abs(r.mean_sojourn / mf.mean_sojourn(lam) - 1) < 0.005
    # The published closed form is far outside (u_2 off by ~30%): the test can tell them apart.
    pub = gen.published_tail("erlang:2", lam, d)
    assert abs(r.u[2] - pub[2]) > 50 * (r.u_ci_high[2] - r.u_ci_low[2])


@pytest.mark.parametrize("spec", ["det", "hyperexp:4", "lognormal:1", "weibull:0.5"])
def test_d1_matches_pollaczek_khinchine(spec: str) -> None:
    lam = 0.7
    r = gen.simulate(spec, lam, 1, N=500, horizon=4000, warmup=200, seed=3)
    pk = gen.mg1_mean_sojourn(spec, lam)
    low, high = r.mean_sojourn_ci
    half = (high - low) / 2
    assert abs(r.mean_sojourn - pk) <= 1.5 * half  # 1.5: four checks at 95% each
    assert abs(r.u[1] - lam) <= 1.5 * (r.u_ci_high[1] - r.u_ci_low[1]) / 2


def test_exponential_matches_closed_form() -> None:
    r = gen.simulate("exp", 0.9, 3, N=1000, horizon=3000, warmup=200, seed=2)
    cf = sm.fixed_point_closed_form(0.9, 3)
    for k in range(1, 5):
        half = (r.u_ci_high[k] - r.u_ci_low[k]) / 2
        assert abs(r.u[k] - cf[k]) <= 2 * half + 2e-4


def test_level_arrays_grow_and_same_seed_same_result() -> None:
    import lbrepro.sim.general_service as gs

    old = gs._INITIAL_LEVELS
    try:
        gs._INITIAL_LEVELS = 4
        a = simulate_general(
            dist=svc.parse("lomax:1.5"), lam=0.8, d=2, N=50, horizon=400, warmup=10, seed=9
        )
    finally:
        gs._INITIAL_LEVELS = old
    b = simulate_general(
        dist=svc.parse("lomax:1.5"), lam=0.8, d=2, N=50, horizon=400, warmup=10, seed=9
    )
    assert a.max_queue >= 4
    np.testing.assert_array_equal(a.u, b.u)


@pytest.mark.parametrize(
    ("kwargs", "key"),
    [
        ({"N": 0}, "N"),
        ({"d": 0}, "d"),
        ({"horizon": 5.0}, "horizon"),
        ({"warmup": -1.0}, "warmup"),
        ({"batches": 1}, "batches"),
        ({"lam": -0.1}, "lam"),
    ],
)
def test_bad_arguments(kwargs, key) -> None:
    args = {
        "dist": svc.parse("exp"),
        "lam": 0.5,
        "d": 2,
        "N": 10,
        "horizon": 20.0,
        "warmup": 10.0,
        "seed": 1,
    } | kwargs
    with pytest.raises(ConfigError) as err:
        simulate_general(**args)
    assert err.value.key == key


def test_unstable_refused() -> None:
    with pytest.raises(UnstableError):
        simulate_general(
            dist=svc.parse("erlang:2", mean=2.0), lam=0.5, d=2, N=10, horizon=20, warmup=1, seed=1
        )


def test_simulate_cli_json() -> None:
    import json

    out = gen.simulate_summary("erlang:2", lam=0.6, d=2, N=100, horizon=200.0, seed=4, batches=5)
    json.dumps(out)
    assert out["N"] == 100 and out["events"] > 0
    assert len(out["ci"]["u"]) == len(out["u"])
    # Against the exact mean field (phase-type service), not against its own interval: three
    # half-widths plus a 2% finite-N allowance (N = 100).
    low, high = out["ci"]["mean_sojourn"]
    exact = gen.solve("erlang:2", lam=0.6, d=2)["mean_sojourn"]
    assert abs(out["mean_sojourn"] - exact) <= 3 * (high - low) / 2 + 0.02 * exact


def test_simulator_takes_the_sampling_encoding_and_refuses_other_objects() -> None:
    dist = svc.parse("erlang:2")
    kw = {"lam": 0.6, "d": 2, "N": 20, "horizon": 200.0, "warmup": 10.0, "seed": 4}
    a = simulate_general(dist=dist, **kw)
    b = simulate_general(dist=dist.sampling, **kw)
    np.testing.assert_array_equal(a.u, b.u)
    assert dist.sampling.code == dist.code and dist.sampling.label == dist.label
    with pytest.raises(ConfigError) as err:
        simulate_general(dist="erlang:2", **kw)
    assert err.value.key == "dist"
