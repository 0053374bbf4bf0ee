"""Heterogeneous clusters: simulation against the mean field, deep tails, stability, artifacts.

The required agreement test of issue 3: N = 1000, ρ ∈ {0.5, 0.9}, every policy on H2 and H3,
mean-field E[T] within 1% (ρ = 0.5) / 2% (ρ = 0.9) of simulation, refined mean field within 3
CI half-widths.
"""

from __future__ import annotations

import numpy as np
import pytest

from lbrepro.artifacts import registry
from lbrepro.config import load_config
from lbrepro.core.errors import ConfigError, UnstableError
from lbrepro.models import hetero as h
from lbrepro.pipeline import validate_config

SYSTEMS = {"H2": h.H2, "H3": h.H3}


def _policy_kwargs(system: h.System, policy: str) -> dict:
    return {"d_pool": 2} if policy == "sqd" else {}


# Horizons (time units) long enough that 20 batches are each far longer than the relaxation
# time: random routing at ρ = 0.9 is N independent M/M/1 queues, whose relaxation time
# (1 − √ρ)⁻² ≈ 380 needs a long run; the sampling policies relax in O(10).
HORIZON = {("random", 0.9): 40000.0}


@pytest.mark.parametrize("rho", [0.5, 0.9])
@pytest.mark.parametrize("policy", h.POLICIES)
@pytest.mark.parametrize("name", list(SYSTEMS))
def test_mean_field_matches_simulation_at_n_1000(name, policy, rho):
    system = SYSTEMS[name]
    lam = rho * system.total_capacity
    kw = _policy_kwargs(system, policy)
    limit = h.stability_limit(system, policy, **kw)
    if lam > 0.97 * limit:
        pytest.skip(f"{name} {policy}: ρ = {rho} is within 3% of the stability limit")
    rr = h.refined(system, lam, policy, **kw)
    sim = h.simulate(
        system,
        lam,
        policy,
        N=1000,
        horizon=HORIZON.get((policy, rho), 4000.0 if rho > 0.5 else 1500.0),
        warmup=100.0,
        seed=20261130,
        **kw,
    )
    mf = rr.mean_field.mean_sojourn
    rel = abs(mf - sim.mean_sojourn) / sim.mean_sojourn
    assert rel <= (0.01 if rho == 0.5 else 0.02), (mf, sim.mean_sojourn, sim.mean_sojourn_ci)
    half = (sim.mean_sojourn_ci[1] - sim.mean_sojourn_ci[0]) / 2
    assert abs(rr.mean_sojourn_at(1000) - sim.mean_sojourn) <= 3 * half, (
        rr.mean_sojourn_at(1000),
        sim.mean_sojourn,
        half,
    )


def test_sqd_near_its_limit_is_skipped_above_for_a_reason():
    # H3 under whole-system SQ(2): λ* = 1.1/0.64 = 1.71875 = 0.9046·capacity, so ρ = 0.9 is
    # 0.5% below the (reconstructed) limit — the skip in the test above is that case only.
    star = h.sqd_stability_closed_form(h.H3, 2)
    assert star / h.H3.total_capacity == pytest.approx(1.1 / 0.64 / 1.9)
    assert h.stability_limit(h.H3, "sqd", d_pool=2) == pytest.approx(star)


# ------------------------------------------------------------------------------ stability
def test_stability_limit_per_policy():
    for system in (h.H2, h.H2x, h.H3):
        cap = system.total_capacity
        assert h.stability_limit(system, "scheme1") == pytest.approx(cap)
        assert h.stability_limit(system, "scheme2") == pytest.approx(cap)
        assert h.stability_limit(system, "random") == pytest.approx(cap)
    assert h.stability_limit(h.H2x, "sqd", d_pool=2) == pytest.approx(1.25)
    split = np.array([0.5, 0.5])
    # Type 1 (γC = 0.8) gets half the jobs: it saturates at λ = 1.6 < capacity 2.8.
    assert h.stability_limit(h.H2x, "typed", split=split) == pytest.approx(1.6)
    assert h.stability_limit(h.H2x, "typed", split=[0.0, 1.0]) == pytest.approx(2.0)


def test_simulation_refuses_unstable_loads_unless_asked_to_show_them():
    with pytest.raises(UnstableError, match=r"lambda\*=1.25"):
        h.simulate(h.H2x, 1.3, "sqd", N=100, horizon=10, warmup=1, seed=1, d_pool=2)
    with pytest.raises(UnstableError, match="total capacity"):
        h.simulate(h.H2x, 2.8, "scheme1", N=100, horizon=10, warmup=1, seed=1)
    with pytest.raises(UnstableError, match="total capacity"):
        h.simulate(h.H2x, 2.9, "sqd", N=100, horizon=10, warmup=1, seed=1, beyond_stability=True)


def test_sqd_above_its_limit_drifts_upward_and_below_it_does_not():
    """Simulation on both sides of λ* (H2x: λ* = 1.25 while the capacity is 2.8)."""
    means = {}
    for side in (0.9, 1.1):
        for horizon in (1000.0, 2000.0):
            sim = h.simulate(
                h.H2x,
                side * 1.25,
                "sqd",
                N=200,
                horizon=horizon,
                warmup=100.0,
                seed=7,
                d_pool=2,
                beyond_stability=side > 1,
            )
            means[side, horizon] = sim.mean_jobs
    assert means[1.1, 2000.0] > 1.6 * means[1.1, 1000.0] > 10
    assert means[0.9, 2000.0] == pytest.approx(means[0.9, 1000.0], rel=0.1)
    assert means[0.9, 2000.0] < 5


def test_start_at_the_fixed_point_and_empty_agree():
    runs = [
        h.simulate(h.H3, 1.5, "scheme2", N=500, horizon=3000, warmup=300, seed=3, start=s)
        for s in ("fixed_point", "empty")
    ]
    a, b = (r.mean_sojourn for r in runs)
    half = sum((r.mean_sojourn_ci[1] - r.mean_sojourn_ci[0]) / 2 for r in runs)
    assert abs(a - b) <= 2 * half
    with pytest.raises(ConfigError, match="start"):
        h.simulate(h.H3, 1.5, "scheme2", N=500, horizon=30, warmup=3, seed=3, start="full")


def test_a_split_may_leave_a_type_idle():
    sim = h.simulate(h.H2x, 1.0, "typed", N=100, horizon=500, warmup=50, seed=1, split=[0, 1])
    assert sim.route[0] == 0.0 and sim.route[1] == 1.0
    assert sim.mean_jobs_per_type[0] == 0.0


# ---------------------------------------------------------------------------- deep tails
@pytest.mark.parametrize("policy", ["scheme1", "scheme2"])
@pytest.mark.parametrize("name", ["H2", "H3", "H2x"])
def test_log_tail_agrees_with_the_float_equilibrium(name, policy):
    system = {"H2": h.H2, "H3": h.H3, "H2x": h.H2x}[name]
    lam = 0.9 * system.total_capacity
    mf = h.fixed_point(system, lam, policy)
    deep = h.log_tail(system, lam, policy, levels=10)
    assert deep.residual < 1e-12
    for u, ell in zip(mf.u, deep.log_u, strict=True):
        n = min(u.size, ell.size)
        ok = u[:n] > 1e-10  # where the float equilibrium (residual 1e-13) is relatively exact
        assert np.allclose(np.log(u[:n][ok]), ell[:n][ok], rtol=0, atol=1e-8)
        assert np.all(np.diff(ell) < 0)


def test_log_tail_shows_doubly_exponential_decay():
    # Scheme 1 on H3: every type's log(−log u_n) grows by the same constant per level.
    deep = h.log_tail(h.H3, 0.9 * h.H3.total_capacity, "scheme1", levels=12)
    for inc in deep.increments:
        assert np.ptp(inc[-5:]) < 1e-6 and inc[-1] > 1
    assert len({round(float(inc[-1]), 6) for inc in deep.increments}) == 1
    # Scheme 2 on H2: the faster type's levels interleave with the slower type's, so its
    # increments alternate with period C_fast/C_slow = 2; their sum per period equals the
    # slower type's increment per level.
    deep = h.log_tail(h.H2, 0.9 * h.H2.total_capacity, "scheme2", levels=12)
    slow, fast = deep.increments
    assert fast[-1] != pytest.approx(fast[-2], rel=0.1)
    assert fast[-1] + fast[-2] == pytest.approx(slow[-1], rel=1e-6)


def test_log_tail_validation():
    with pytest.raises(ConfigError, match="policy"):
        h.log_tail(h.H2, 1.0, "sqd")
    with pytest.raises(ConfigError, match="levels"):
        h.log_tail(h.H2, 1.0, "scheme1", levels=2)


# ----------------------------------------------------------------------------- artifacts
HETERO_IDS = [
    "hetero-stability",
    "hetero-tail",
    "hetero-sojourn",
    "hetero-accuracy",
    "hetero-chaos",
]


def test_hetero_artifacts_are_registered_with_reconstruction_notes():
    ids = [a.id for a in registry.all_artifacts() if a.slug == "hetero"]
    assert sorted(ids) == sorted(HETERO_IDS)
    assert registry.get("hetero-stability").reconstructions
    assert registry.get("hetero-sojourn").reconstructions


def _config() -> dict:
    return load_config("config/config.yaml")


@pytest.mark.parametrize(
    ("artifact", "mutate", "key"),
    [
        ("hetero-tail", lambda s: s["systems"][0].update(C=[1, -2]), "hetero-tail.systems[0].C"),
        (
            "hetero-tail",
            lambda s: s["systems"][0].update(gamma=[0.5, 0.6]),
            "hetero-tail.systems[0].gamma",
        ),
        ("hetero-chaos", lambda s: s["systems"][1].update(d=[2, 2]), "hetero-chaos.systems[1].d"),
        ("hetero-chaos", lambda s: s["systems"][0].update(d=[2, 0]), "hetero-chaos.systems[0].d"),
        (
            "hetero-sojourn",
            lambda s: s["systems"].append(dict(s["systems"][0])),
            "hetero-sojourn.systems[3].name",
        ),
        ("hetero-sojourn", lambda s: s.update(rho_sim=[0.97]), "hetero-sojourn.rho_sim[0]"),
        ("hetero-accuracy", lambda s: s.update(rho=[0.5, 1.0]), "hetero-accuracy.rho[1]"),
        ("hetero-tail", lambda s: s.update(rho=1.2), "hetero-tail.rho"),
    ],
)
def test_bad_hetero_config_is_refused_naming_the_key(artifact, mutate, key):
    config = _config()
    mutate(config[artifact])
    with pytest.raises(ConfigError) as err:
        validate_config(config)
    assert err.value.key.startswith(key), err.value  # the schema may name the item: C[1]


def test_sojourn_points_skip_loads_beyond_a_policys_limit():
    from lbrepro import pipeline

    config = _config()
    points = pipeline.points(config, "hetero-sojourn")
    # H2x: whole-system SQ(2) fails above λ* = 1.25 = 0.446·capacity, so neither ρ = 0.5 nor
    # 0.9 is simulated; Scheme 1 is simulated at both.
    assert "H2x-sqd-rho0.5" not in points and "H2x-sqd-rho0.9" not in points
    assert "H2x-scheme1-rho0.5" in points and "H2x-scheme1-rho0.9" in points
