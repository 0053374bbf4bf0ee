"""The power-of-d(N) universality model (models.md §E): d(N) families, fluid fixed points,
Halfin–Whitt scaling and the JSQ diffusion limit of Eschenfeldt & Gamarnik (2018).

SDE comparisons use the run's own 95% batch-means interval, widened by a Bonferroni factor
for the number of comparisons in the test (family-wise error 1e-3). Seeds are fixed, so the
outcome is deterministic; they were not tuned.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats

from lbrepro.core.errors import ConfigError, UnstableError
from lbrepro.core.rng import stream
from lbrepro.models import supermarket, universality
from lbrepro.models.universality import (
    D_FAMILIES,
    d_of_N,
    family_label,
    fluid_fixed_point,
    halfin_whitt_lam,
    jsq_diffusion_means,
    q2_fluid,
    simulate_jsq_diffusion,
)


def widen(n_compared: int, batches: int = 20, family_error: float = 1e-3) -> float:
    """Factor turning each 95% half-width into a Bonferroni interval for n comparisons."""
    wide = stats.t.ppf(1 - family_error / (2 * n_compared), batches - 1)
    return wide / stats.t.ppf(0.975, batches - 1)


def half(ci) -> float:
    return (ci[1] - ci[0]) / 2


# ---------------------------------------------------------------------- d(N) families
def test_family_values_at_n100_and_n1e5():
    expected = {
        100: {"2": 2, "5": 5, "logN": 5, "sqrtN": 10, "sqrtNlogN": 47, "sqrtNlog2N": 100, "N": 100},
        10**5: {
            "2": 2,
            "5": 5,
            "logN": 12,
            "sqrtN": 317,
            "sqrtNlogN": 3641,
            "sqrtNlog2N": 41916,
            "N": 10**5,
        },
    }
    for N, values in expected.items():
        assert {f: d_of_N(f, N) for f in D_FAMILIES} == values
    # Independent recomputation of the growing families (⌈√N⌉ of a perfect square is exact).
    for N in (2, 3, 10, 99, 100, 101, 12345, 10**6):
        assert d_of_N("logN", N) == math.ceil(math.log(N))
        assert d_of_N("sqrtN", N) == math.ceil(math.sqrt(N) - 1e-12)
        assert d_of_N("sqrtNlogN", N) == math.ceil(math.sqrt(N) * math.log(N))
        assert d_of_N("sqrtNlog2N", N) == min(math.ceil(math.sqrt(N) * math.log(N) ** 2), N)
    assert d_of_N("sqrtN", 10**4) == 100
    assert d_of_N(7, 100) == 7
    assert d_of_N(np.int64(3), np.int64(50)) == 3


def test_families_stay_in_one_to_n_and_fixed_d_above_n_is_refused():
    for d, N in (("5", 3), (5, 4), (1000, 10)):
        with pytest.raises(ConfigError, match=r"^d:"):
            d_of_N(d, N)
    assert d_of_N(5, 5) == 5
    assert d_of_N("logN", 2) == 1  # ⌈ln 2⌉ = 1
    assert d_of_N("sqrtNlogN", 2) == 1  # ⌈√2 ln 2⌉ = ⌈0.98⌉ = 1
    for f in D_FAMILIES:
        for N in range(5, 200):
            assert 1 <= d_of_N(f, N) <= N


def test_family_labels():
    assert family_label("2") == "d = 2"
    assert family_label(5) == "d = 5"
    assert family_label("logN") == "d = ⌈log N⌉"
    assert family_label("sqrtN") == "d = ⌈√N⌉"
    assert family_label("sqrtNlogN") == "d = ⌈√N log N⌉"
    assert family_label("N") == "d = N"
    assert len({family_label(f) for f in D_FAMILIES}) == len(D_FAMILIES)


@pytest.mark.parametrize("family", ["sqrtn", "log", "", "0", 0, -2, True, 2.0, None])
def test_bad_family_names_d(family):
    with pytest.raises(ConfigError) as err:
        d_of_N(family, 100)
    assert err.value.key == "d"
    with pytest.raises(ConfigError) as err:
        family_label(family)
    assert err.value.key == "d"


@pytest.mark.parametrize("N", [1, 0, -5, 2.0, "100", True, None])
def test_bad_n_names_n(N):
    with pytest.raises(ConfigError) as err:
        d_of_N("logN", N)
    assert err.value.key == "N"


# ------------------------------------------------------------------------ fluid scale
def test_jsq_fluid_fixed_point():
    for d in (None, "inf", math.inf):
        np.testing.assert_array_equal(fluid_fixed_point(0.8, d), [1.0, 0.8, 0.0])
        np.testing.assert_array_equal(fluid_fixed_point(0.8, d, kmax=4), [1, 0.8, 0, 0, 0])
        np.testing.assert_array_equal(fluid_fixed_point(0.8, d, kmax=1), [1, 0.8])
        assert q2_fluid(0.8, d) == 0.0


def test_fixed_d_fluid_fixed_point_is_the_supermarket_one():
    for lam in (0.3, 0.9, 0.99):
        for d in (1, 2, 5):
            q = fluid_fixed_point(lam, d)
            np.testing.assert_array_equal(q, supermarket.fixed_point_closed_form(lam, d))
            k = np.arange(6)
            expected = lam ** ((d**k - 1) / (d - 1)) if d > 1 else lam**k
            np.testing.assert_allclose(fluid_fixed_point(lam, d, kmax=5), expected, rtol=1e-12)
            assert q2_fluid(lam, d) == pytest.approx(lam ** (d + 1), rel=1e-12)
    # Universality at the fluid scale: the fixed-d fixed point tends to JSQ's as d grows.
    q = [fluid_fixed_point(0.9, d, kmax=3) for d in (2, 20, 200)]
    gaps = [np.max(np.abs(x - fluid_fixed_point(0.9, None, kmax=3))) for x in q]
    assert gaps[0] > gaps[1] > gaps[2] and gaps[2] < 1e-9


def test_fluid_bad_inputs():
    with pytest.raises(UnstableError):
        fluid_fixed_point(1.0, 2)
    with pytest.raises(UnstableError):
        q2_fluid(1.5, None)
    for lam in (0.0, -0.5, math.nan, math.inf, "0.5", True):
        with pytest.raises(ConfigError) as err:
            fluid_fixed_point(lam, 2)
        assert err.value.key == "lam"
    for d in (0, 2.5, "2", "infinity", -math.inf, True):
        with pytest.raises(ConfigError) as err:
            fluid_fixed_point(0.5, d)
        assert err.value.key == "d"
    for kmax in (0, 2.0, True):
        with pytest.raises(ConfigError) as err:
            fluid_fixed_point(0.5, 2, kmax=kmax)
        assert err.value.key == "kmax"


# ----------------------------------------------------------------------- Halfin–Whitt
def test_halfin_whitt_lam():
    assert halfin_whitt_lam(100, 1.0) == pytest.approx(0.9)
    assert halfin_whitt_lam(10**4, 2.0) == pytest.approx(0.98)
    for N in (4, 100, 10**6):
        lam = halfin_whitt_lam(N, 0.5)
        assert (N - lam * N) / math.sqrt(N) == pytest.approx(0.5)
    for beta in (0.0, -1.0, math.nan, math.inf, 10.0, True):  # 10 >= √100: no arrivals
        with pytest.raises(ConfigError) as err:
            halfin_whitt_lam(100, beta)
        assert err.value.key == "beta"
    for N in (1, 0, 100.0):
        with pytest.raises(ConfigError) as err:
            halfin_whitt_lam(N, 1.0)
        assert err.value.key == "N"


# ------------------------------------------------------------------ N-server system
def test_finite_n_jsq_idle_servers_balance_the_slack():
    """Flow balance holds at every N: E[N − Q_1] = N − λ(N) = β√N, under any policy."""
    N, beta = 100, 1.0
    lam = halfin_whitt_lam(N, beta)
    sim = universality.simulate(lam=lam, N=N, d=N, horizon=20_000, warmup=50, seed=7)
    root = math.sqrt(N)
    idle = root * (1 - sim.u_all[1])
    assert abs(idle - beta) <= widen(1) * root * half((sim.u_all_ci_low[1], sim.u_all_ci_high[1]))
    assert sim.replace is False and sim.d == N
    # JSQ at the diffusion scale: Q_2/√N is O(1), Q_3 essentially never occurs.
    assert 0.3 < root * sim.u_all[2] < 1.2
    assert (sim.u_all[3] if sim.u_all.size > 3 else 0.0) < 1e-4


def test_fluid_universality_fixed_d_against_jsq():
    lam, N = 0.9, 1000
    q2 = {
        f: universality.simulate(
            lam=lam, N=N, d=d_of_N(f, N), horizon=500, warmup=50, seed=stream(8, f), start=s
        ).u_all[2]
        for f, s in (("2", "empty"), ("sqrtN", "jsq"), ("N", "jsq"))
    }
    assert q2["2"] == pytest.approx(q2_fluid(lam, 2), rel=0.025)
    assert q2["N"] < 1e-3 < q2["sqrtN"] < 0.1 < q2["2"]


def test_simulate_bad_inputs():
    ok = {"lam": 0.9, "N": 10, "d": 2, "horizon": 10.0, "warmup": 1.0, "seed": 0}
    for key, value in (("start", "middle"), ("d", 11), ("N", 1), ("lam", 0.0)):
        with pytest.raises(ConfigError) as err:
            universality.simulate(**{**ok, key: value})
        assert err.value.key == key
    with pytest.raises(UnstableError):
        universality.simulate(**{**ok, "lam": 1.0})


# ------------------------------------------------------------------- diffusion limit
@pytest.mark.parametrize("scheme", universality.SCHEMES)
def test_idle_servers_balance_the_slack(scheme):
    """E[(N − Q_1)/√N] = E[−X1] = β exactly (flow balance), and rate(U1) = E[X2]."""
    for i, beta in enumerate((0.5, 1.0, 2.0)):
        r = simulate_jsq_diffusion(
            beta=beta, dt=0.01, horizon=10_000, warmup=100, seed=stream(3, "idle", i), batches=20
        )
        assert abs(r.mean_idle - beta) <= widen(3) * half(r.mean_idle_ci), (beta, r)
        # rate(U1) − mean(X2) telescopes to (X2(end) − X2(start)) / T: far below sampling noise.
        assert abs(r.rate_u1 - r.mean_q2) < 0.05 * half(r.mean_q2_ci), (beta, r)
        assert r.mean_q2 > 0 and r.rate_u1 > 0
        assert r.steps == 1_000_000
        assert r.horizon == pytest.approx(10_000) and r.warmup == pytest.approx(100)


def test_q2_falls_as_beta_grows():
    q2 = [
        simulate_jsq_diffusion(
            beta=beta, dt=0.01, horizon=5000, warmup=100, seed=stream(4, "beta"), scheme="bridge"
        ).mean_q2
        for beta in (0.5, 1.0, 2.0, 4.0)
    ]
    assert q2[0] > 2 * q2[1] > 4 * q2[2] > 8 * q2[3] > 0, q2
    assert q2[3] < 0.01, q2


def test_reproducible_with_a_seed():
    kw = {"beta": 1.0, "dt": 0.01, "horizon": 500, "warmup": 10}
    a = simulate_jsq_diffusion(**kw, seed=42).to_dict()
    b = simulate_jsq_diffusion(**kw, seed=np.random.SeedSequence(42)).to_dict()
    c = simulate_jsq_diffusion(**kw, seed=43).to_dict()
    for r in (a, b, c):
        for key in ("elapsed", "steps_per_second"):
            r.pop(key)
    assert a == b
    assert a["mean_q2"] != c["mean_q2"]
    json.dumps(a)
    # The Brownian path depends on the seed only: both schemes see the same W, so the idle
    # average (β + boundary terms − √2 W(T)/T) nearly coincides.
    p = simulate_jsq_diffusion(**kw, seed=42, scheme="projection")
    q = simulate_jsq_diffusion(**kw, seed=42, scheme="bridge")
    assert abs(p.mean_idle - q.mean_idle) < 0.01 * half(p.mean_idle_ci)


def test_step_size_convergence_and_extrapolation():
    """Projected Euler converges as dt halves; its extrapolation meets the bridge scheme."""
    kw = {"horizon": 20_000, "warmup": 100, "seed": stream(5, "dt")}
    proj = jsq_diffusion_means(1.0, **kw)
    bridge = jsq_diffusion_means(1.0, **kw, scheme="bridge")
    assert proj["dts"] == [0.02, 0.01, 0.005] and proj["orders"] == [0.5, 1.0]
    q2 = [r["mean_q2"] for r in proj["runs"]]
    gap = [r["gap_x1x2"] for r in proj["runs"]]
    # Differences shrink as dt halves (by ≈ 2^{0.3}: the √dt and dt terms have opposite signs).
    d1, d2 = q2[1] - q2[0], q2[2] - q2[1]
    assert d1 > d2 > 0 and d1 / d2 < math.sqrt(2), q2
    # The Itô residual E[X1X2] + βE[X2]/2 shrinks towards 0 too, and extrapolates to 0.
    assert gap[0] > gap[1] > gap[2] > 0, gap
    ext = proj["extrapolated"]
    assert abs(ext["gap_x1x2"]["mean"]) <= widen(2) * half(ext["gap_x1x2"]["ci"])
    # The bridge scheme has a far smaller step-size error ...
    qb = [r["mean_q2"] for r in bridge["runs"]]
    assert abs(qb[2] - qb[0]) < 0.2 * abs(q2[2] - q2[0]), (q2, qb)
    # ... and on the same Brownian path agrees with the extrapolated projection scheme
    # (measured over 10 seeds: relative difference −0.3% ± 0.4% at β = 1), while the
    # finest projection run alone is ≈ 10% low.
    ref = bridge["extrapolated"]["mean_q2"]["mean"]
    assert abs(ext["mean_q2"]["mean"] / ref - 1) < 0.03, (ext, ref)
    assert q2[2] / ref - 1 < -0.05
    assert ext["mean_idle"]["mean"] == pytest.approx(proj["runs"][2]["mean_idle"], abs=1e-3)
    assert proj["observed_order"]["mean_q2"] < 0.5
    assert proj["steps"] == sum(r["steps"] for r in proj["runs"])
    json.dumps(proj)


def test_step_count():
    # Throughput and the default run time are measured in bench/bench_timings.py.
    r = simulate_jsq_diffusion(beta=1.0, dt=0.01, horizon=1_000, warmup=10, seed=0)
    assert r.steps == 100_000


def test_diffusion_bad_inputs():
    ok = {"beta": 1.0, "dt": 0.01, "horizon": 100.0, "warmup": 10.0, "seed": 1}
    bad = [
        ("beta", 0.0),
        ("beta", -1.0),
        ("beta", math.nan),
        ("beta", "1"),
        ("dt", 0.0),
        ("dt", 1.0),
        ("dt", math.inf),
        ("horizon", 10.0),
        ("horizon", math.nan),
        ("warmup", -1.0),
        ("batches", 1),
        ("batches", 2.5),
        ("seed", -1),
        ("seed", 1.5),
        ("scheme", "reflect"),
    ]
    for key, value in bad:
        with pytest.raises(ConfigError) as err:
            simulate_jsq_diffusion(**{**ok, key: value})
        assert err.value.key == key, (key, value)
    means_ok = {"horizon": 100.0, "warmup": 10.0, "seed": 1}
    bad_means = [
        ("dts", (0.01,)),
        ("dts", (0.01, 0.01)),
        ("dts", (0.02, 0.015, 0.01)),  # 0.015 is not an integer multiple of 0.01
        ("dts", (0.02, 0.0)),
        ("dts", 0.01),
        ("orders", (0.5, 1.0, 1.5)),  # three error terms need four step sizes
        ("orders", (0.0,)),
        ("orders", "0.5"),
    ]
    for key, value in bad_means:
        with pytest.raises(ConfigError) as err:
            jsq_diffusion_means(1.0, **{**means_ok, key: value})
        assert err.value.key == key, (key, value)
    with pytest.raises(ConfigError) as err:
        jsq_diffusion_means(-1.0, **means_ok)
    assert err.value.key == "beta"
