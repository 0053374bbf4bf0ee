"""Heterogeneous PS clusters (models.md §A): equations, fixed points, refined term, stability."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import scipy.optimize

from lbrepro.core.errors import ConfigError, UnstableError
from lbrepro.meanfield.population import PopulationModel
from lbrepro.models import hetero as h
from lbrepro.models import supermarket as sm
from lbrepro.models.hetero import stability as stability_module
from lbrepro.models.hetero.command_line import parse_integers, parse_numbers
from lbrepro.models.hetero.equations import scheme2_indices

SYSTEMS = {"H2": h.H2, "H2x": h.H2x, "H3": h.H3}
# Unsorted capacities and mixed d: nothing may depend on the caller's order.
MIXED = h.System((0.3, 0.45, 0.25), (4.0, 1.0, 2.5), (1, 3, 2))


def random_state(system: h.System, K: int, rng: np.random.Generator, zeros: bool = False):
    """A feasible state x (u non-increasing in n, in [0, 1]); optionally with empty top levels."""
    U = -np.sort(-rng.uniform(size=(system.num_types, K)), axis=1)
    if zeros:
        U[:, K // 2 :] = 0.0
    return (U * np.array(system.gamma)[:, None]).reshape(-1)


def padded(u: np.ndarray, n: int) -> np.ndarray:
    return np.pad(u, (0, max(0, n - u.size)))[:n]


# ------------------------------------------------------------------------------------ system
def test_named_systems_and_capacity():
    assert h.H2.total_capacity == pytest.approx(1.5)
    assert h.H2x.total_capacity == pytest.approx(2.8)
    assert h.H3.total_capacity == pytest.approx(1.9)
    s = h.System([0.5, 0.5], [1, 2], 2, mu=2.0)
    assert s.d == (2, 2) and s.total_capacity == pytest.approx(3.0)
    assert list(MIXED.order) == [1, 2, 0]


@pytest.mark.parametrize(
    ("kwargs", "key", "text"),
    [
        ({"gamma": (0.5, 0.6), "capacity": (1, 2), "d": (2, 2)}, "gamma", "sum to 1"),
        ({"gamma": (1.2, -0.2), "capacity": (1, 2), "d": (2, 2)}, "gamma", "> 0"),
        ({"gamma": (0.5, 0.5), "capacity": (0, 2), "d": (2, 2)}, "capacity", "> 0"),
        ({"gamma": (0.5, 0.5), "capacity": (2, 2), "d": (2, 2)}, "capacity", "merge the types"),
        ({"gamma": (0.5, 0.5), "capacity": (1, 2), "d": (2, 0)}, "d", "≥ 1"),
        ({"gamma": (0.5, 0.5), "capacity": (1, 2), "d": (2, 1.5)}, "d", "integers"),
        ({"gamma": (0.5, 0.5), "capacity": (1, 2, 3), "d": (2, 2, 2)}, "gamma", "3 server types"),
        ({"gamma": (0.5, 0.5), "capacity": (1, 2), "d": (2,)}, "d", "2 server types"),
        ({"gamma": (1.0,), "capacity": (1, 2), "d": (2, 2)}, "gamma", "entries"),
        ({"gamma": (0.5, 0.5), "capacity": (1, 2), "d": (2, 2), "mu": 0}, "mu", "> 0"),
        ({"gamma": "0.5,0.5", "capacity": (1, 2), "d": (2, 2)}, "gamma", "sequence"),
    ],
)
def test_system_validation_names_the_parameter(kwargs, key, text):
    with pytest.raises(ConfigError) as err:
        h.System(**kwargs)
    assert err.value.key == key and text in str(err.value)


def test_argument_validation_names_the_parameter():
    with pytest.raises(ConfigError, match="policy"):
        h.population_model(h.H2, 1.0, "jsq", 4)
    with pytest.raises(ConfigError, match="lam"):
        h.fixed_point(h.H2, -1.0, "scheme1")
    with pytest.raises(ConfigError, match="split"):
        h.fixed_point(h.H2, 1.0, "typed", split=(0.2, 0.3))
    with pytest.raises(ConfigError, match="split"):
        h.fixed_point(h.H2, 1.0, "typed", split=(1.0,))
    with pytest.raises(ConfigError, match="split"):
        h.fixed_point(h.H2, 1.0, "scheme1", split=(0.5, 0.5))
    with pytest.raises(ConfigError, match="d_pool"):
        h.fixed_point(h.H2, 1.0, "scheme2", d_pool=2)
    with pytest.raises(ConfigError, match="d_pool"):
        h.fixed_point(MIXED, 0.5, "sqd")  # per-type d differ: d_pool must be given
    with pytest.raises(ConfigError, match="K"):
        h.population_model(h.H2, 1.0, "scheme1", 0)


# ---------------------------------------------------------------------------------- equations
def hand_drift(system: h.System, lam: float, policy: str, x: np.ndarray, **kw) -> np.ndarray:
    """models.md §A in u-coordinates, written level by level (independent of the module)."""
    M, g, C, d, mu = system.num_types, system.gamma, system.capacity, system.d, system.mu
    K = x.size // M
    U = x.reshape(M, K) / np.array(g)[:, None]

    def u(j: int, n: int) -> float:
        return 1.0 if n == 0 else (float(U[j, n - 1]) if n <= K else 0.0)

    out = np.zeros((M, K))
    for j in range(M):
        for n in range(K):  # equation for u^{(j)}_{n+1}
            if policy in ("scheme1", "scheme2"):
                A = u(j, n) ** d[j] - u(j, n + 1) ** d[j]
                for i in range(M):
                    if C[i] > C[j]:
                        k = n + 1 if policy == "scheme1" else math.floor(n * C[i] / C[j]) + 1
                        A *= u(i, k) ** d[i]
                    elif C[i] < C[j]:
                        k = n if policy == "scheme1" else math.ceil(n * C[i] / C[j])
                        A *= u(i, k) ** d[i]
                arr = lam / g[j] * A
            elif policy == "sqd":
                dp = kw["d_pool"]
                s0 = sum(g[i] * u(i, n) for i in range(M))
                s1 = sum(g[i] * u(i, n + 1) for i in range(M))
                arr = lam * (u(j, n) - u(j, n + 1)) * (s0**dp - s1**dp) / (s0 - s1)
            else:
                p, dj = kw["split"][j], (1 if policy == "random" else d[j])
                arr = lam * p / g[j] * (u(j, n) ** dj - u(j, n + 1) ** dj)
            out[j, n] = arr - mu * C[j] * (u(j, n + 1) - u(j, n + 2))
    return (out * np.array(g)[:, None]).reshape(-1)  # x = γ u


@pytest.mark.parametrize("policy", h.POLICIES)
@pytest.mark.parametrize("system", [h.H2x, h.H3, MIXED], ids=["H2x", "H3", "mixed"])
def test_drift_matches_the_equations(policy, system):
    rng = np.random.default_rng(1)
    K, lam = 9, 0.8
    x = random_state(system, K, rng)
    kw = {}
    if policy == "sqd":
        kw["d_pool"] = 3
    if policy == "typed":
        kw["split"] = tuple(
            np.arange(1, system.num_types + 1) / np.arange(1, system.num_types + 1).sum()
        )
    model = h.population_model(system, lam, policy, K, **kw)
    if policy == "random":
        kw["split"] = h.proportional_split(system)
    np.testing.assert_allclose(
        model.drift(x), hand_drift(system, lam, policy, x, **kw), rtol=1e-12, atol=1e-15
    )


@pytest.mark.parametrize("policy", ["scheme1", "scheme2", "sqd"])
@pytest.mark.parametrize("system", [h.H2x, h.H3, MIXED], ids=["H2x", "H3", "mixed"])
def test_routing_probabilities_sum_to_one(policy, system):
    """With the top levels empty no job is lost: the arrival rates add up to λ exactly."""
    rng = np.random.default_rng(2)
    K, lam = 12, 1.3
    model = h.population_model(system, lam, policy, K, d_pool=2 if policy == "sqd" else None)
    for _ in range(5):
        r = model.rate_values(random_state(system, K, rng, zeros=True))
        assert math.fsum(r[: model.dim]) == pytest.approx(lam, rel=1e-13)


def test_scheme2_indices_and_ties():
    idx = scheme2_indices((1.0, 2.0), 6)
    # A slow server (C = 1) with n jobs beats a fast one only if the fast holds ≥ 2n + 1.
    assert list(idx[0, 1]) == [1, 3, 5, 7, 7, 7]  # clipped at K + 1 = 7
    # A fast server with n jobs beats a slow one holding ≥ ⌈n/2⌉ (ties go to the fast type).
    assert list(idx[1, 0]) == [0, 1, 1, 2, 2, 3]
    # Decimal capacities: 3·0.1/0.3 is exactly a tie, not 1.0000000000000002.
    assert list(scheme2_indices((0.1, 0.3), 4)[1, 0]) == [0, 1, 1, 1]
    assert list(scheme2_indices((0.1, 0.3), 4)[0, 1]) == [1, 4, 5, 5]


@pytest.mark.parametrize("policy", h.POLICIES)
@pytest.mark.parametrize("system", [h.H2, h.H3, MIXED], ids=["H2", "H3", "mixed"])
def test_analytic_jacobian_equals_jets(policy, system):
    rng = np.random.default_rng(3)
    K = 7
    model = h.population_model(system, 0.9, policy, K, d_pool=3 if policy == "sqd" else None)
    for zeros in (False, True):
        x = random_state(system, K, rng, zeros=zeros)
        jets = PopulationModel.jacobian(model, x)
        np.testing.assert_allclose(model.jacobian(x), jets, rtol=1e-13, atol=1e-14)
        np.testing.assert_allclose(model.jacobian_sparse(x).toarray(), jets, atol=1e-14)
    np.testing.assert_allclose(
        model.jacobian(np.zeros(model.dim)), PopulationModel.jacobian(model, np.zeros(model.dim))
    )


@pytest.mark.parametrize("policy", h.POLICIES)
def test_jacobians_are_finite_at_subnormal_states(policy):
    """The ODE reaches levels holding ~1e-320 as it fills; no 0·inf may turn into NaN there."""
    system = h.System((0.5, 0.5), (1.0, 2.0), (1, 2))
    model = h.population_model(system, 1.0, policy, 6, d_pool=2 if policy == "sqd" else None)
    x = np.array([0.4, 0.1, 1e-320, 0, 0, 0, 0.3, 5e-324, 0, 0, 0, 0])
    assert np.all(np.isfinite(PopulationModel.jacobian(model, x)))
    assert np.all(np.isfinite(model.jacobian(x)))


# ------------------------------------------------------------------------------ fixed points
@pytest.mark.parametrize("policy", ["scheme1", "scheme2", "sqd"])
@pytest.mark.parametrize(("rho", "d"), [(0.5, 1), (0.9, 2), (0.95, 3)])
def test_one_type_reduces_to_the_supermarket(policy, rho, d):
    system = h.System((1.0,), (2.0,), (d,), mu=0.5)  # service rate μC = 1
    mf = h.fixed_point(system, rho, policy, d_pool=d if policy == "sqd" else None)
    cf = sm.fixed_point_closed_form(rho, d)
    n = max(cf.size, mf.u[0].size)
    assert np.max(np.abs(padded(cf, n) - padded(mf.u[0], n))) <= 1e-10
    assert mf.mean_sojourn == pytest.approx(sm.mean_sojourn(cf, rho), rel=1e-10)


@pytest.mark.parametrize("policy", ["typed", "random"])
@pytest.mark.parametrize("system", [h.H2x, h.H3, MIXED], ids=["H2x", "H3", "mixed"])
def test_static_splits_reduce_to_per_type_supermarkets(policy, system):
    lam = 0.6 * system.total_capacity
    split = None
    if policy == "typed":
        split = h.typed_split(system, 0.8 * system.total_capacity)
    mf = h.fixed_point(system, lam, policy, split=split)
    p = h.proportional_split(system) if split is None else split
    for j in range(system.num_types):
        lam_j = lam * p[j] / system.gamma[j]  # arrival rate per type-j server
        mu_j = system.mu * system.capacity[j]
        d_j = 1 if policy == "random" else system.d[j]
        cf = sm.fixed_point_closed_form(lam_j / mu_j, d_j)
        n = max(cf.size, mf.u[j].size)
        assert np.max(np.abs(padded(cf, n) - padded(mf.u[j], n))) <= 1e-10


@pytest.mark.parametrize("policy", h.POLICIES)
@pytest.mark.parametrize("name", SYSTEMS)
def test_equilibrium_residual_tail_and_throughput(policy, name):
    system = SYSTEMS[name]
    cap = system.total_capacity
    for frac in (0.3, 0.85):
        lam = frac * (h.sqd_stability_closed_form(system, 2) if policy == "sqd" else cap)
        mf = h.fixed_point(system, lam, policy)
        assert mf.success and mf.residual < 1e-12 and mf.tail <= 1e-12
        assert all(u[0] == 1.0 and u.size == mf.K + 1 for u in mf.u)
        assert all(np.all(np.diff(u) <= 1e-15) for u in mf.u)
        served = sum(
            system.mu * c * g * u[1]
            for c, g, u in zip(system.capacity, system.gamma, mf.u, strict=True)
        )
        assert served == pytest.approx(lam, abs=1e-10)
        jobs = sum(g * u[1:].sum() for g, u in zip(system.gamma, mf.u, strict=True))
        assert mf.mean_jobs == pytest.approx(jobs, rel=1e-14)
        assert mf.mean_sojourn == pytest.approx(jobs / lam, rel=1e-14)


@pytest.mark.parametrize("policy", ["scheme1", "scheme2", "sqd"])
def test_results_follow_the_callers_order(policy):
    a = h.System((0.5, 0.3, 0.2), (1.0, 2.0, 4.0), (2, 3, 2))
    perm = [2, 0, 1]
    b = h.System([a.gamma[i] for i in perm], [a.capacity[i] for i in perm], [a.d[i] for i in perm])
    kw = {"d_pool": 2} if policy == "sqd" else {}
    ra, rb = h.fixed_point(a, 1.2, policy, **kw), h.fixed_point(b, 1.2, policy, **kw)
    for k, i in enumerate(perm):
        n = max(rb.u[k].size, ra.u[i].size)
        assert np.max(np.abs(padded(rb.u[k], n) - padded(ra.u[i], n))) <= 1e-12
    assert rb.mean_sojourn == pytest.approx(ra.mean_sojourn, rel=1e-12)


def test_truncation_is_enlarged_for_geometric_tails():
    mf = h.fixed_point(h.H2, 0.9 * h.H2.total_capacity, "random")  # u_n = 0.9^n
    assert mf.tail <= 1e-12 and math.log(1e-12) / math.log(0.9) <= mf.K
    assert mf.truncations[0] == h.K0 and mf.truncations[-1] == mf.K


def test_warm_start_gives_the_same_equilibrium():
    cold = h.fixed_point(h.H3, 1.5, "scheme2")
    warm = h.fixed_point(h.H3, 1.5, "scheme2", x0=h.fixed_point(h.H3, 1.4, "scheme2").x)
    for a, b in zip(cold.u, warm.u, strict=True):
        n = max(a.size, b.size)
        assert np.max(np.abs(padded(a, n) - padded(b, n))) <= 1e-12


@pytest.mark.parametrize("policy", ["scheme1", "scheme2", "sqd"])
def test_uniqueness_probe(policy):
    system = h.H2x if policy != "sqd" else h.H3
    probe = h.uniqueness_probe(system, 0.8 * 1.25, policy)
    assert probe.starts == ("newton", "empty", "full", "random")
    assert probe.max_distance <= 1e-10 and max(probe.residuals) < 1e-12


# ----------------------------------------------------------------------------------- refined
def test_refined_one_type_matches_the_supermarket():
    system = h.System((1.0,), (1.0,), (2,))
    r = h.refined(system, 0.9, "scheme1")
    ref = sm.refined(0.9, 2)
    n = max(ref.V.size, r.V[0].size)
    np.testing.assert_allclose(padded(r.V[0], n), padded(ref.V, n), atol=1e-9)
    assert r.mean_sojourn_coefficient == pytest.approx(ref.mean_jobs_coefficient / 0.9, rel=1e-8)


@pytest.mark.parametrize("policy", ["scheme1", "scheme2", "sqd", "typed"])
def test_refined_terms(policy):
    r = h.refined(h.H2x, 1.0, policy)
    assert len(r.V) == 2 and all(
        v.shape == u.shape and v[0] == 0 for v, u in zip(r.V, r.mean_field.u, strict=True)
    )
    coef = sum(g * v.sum() for g, v in zip(h.H2x.gamma, r.V, strict=True))
    assert r.mean_jobs_coefficient == pytest.approx(coef, rel=1e-12)
    assert r.mean_sojourn_at(100) == pytest.approx(
        r.mean_field.mean_sojourn + r.mean_sojourn_coefficient / 100
    )
    # Busy fraction: E[Σ μC_jγ_j u^{(j)}_1]_N = λ for every N, so the 1/N term of the
    # throughput vanishes.
    served = sum(c * g * v[1] for c, g, v in zip(h.H2x.capacity, h.H2x.gamma, r.V, strict=True))
    assert abs(served) <= 1e-9


def test_refined_linear_shortcut_matches_the_generic_computation():
    system = h.System((0.6, 0.4), (1.0, 3.0), (1, 1))
    short = h.refined(system, 0.8, "random")
    assert short.mean_sojourn_coefficient == 0.0 and short.method.endswith("+linear")
    mf = short.mean_field
    model = h.population_model(system, 0.8, "random", mf.K)
    assert np.max(np.abs(model.refined(mf.x).V)) <= 1e-10


# --------------------------------------------------------------------------------- stability
def test_sqd_closed_form():
    assert h.sqd_stability_closed_form(h.H2x, 2) == pytest.approx(1.25)  # 0.8/0.8²
    assert h.sqd_stability_closed_form(h.H2, 2) == pytest.approx(1.5)  # = capacity
    assert h.sqd_stability_closed_form(h.H3, 2) == pytest.approx(1.1 / 0.8**2)
    assert h.sqd_stability_closed_form(h.H2x, 1) == pytest.approx(1.0)  # slowest capacity
    with pytest.raises(ConfigError, match=r"^d:"):
        h.sqd_stability_closed_form(h.H2x, 0)
    swapped = h.System((0.2, 0.8), (10.0, 1.0), (2, 2))
    assert h.sqd_stability_closed_form(swapped, 3) == h.sqd_stability_closed_form(
        h.System((0.8, 0.2), (1.0, 10.0), (2, 2)), 3
    )


def test_unstable_loads_are_refused():
    with pytest.raises(UnstableError, match="capacity"):
        h.fixed_point(h.H2, 1.5, "scheme1")
    with pytest.raises(UnstableError, match=r"lambda\*=1\.25"):
        h.fixed_point(h.H2x, 1.3, "sqd")
    with pytest.raises(UnstableError, match="type 0"):
        h.fixed_point(h.H2, 1.0, "typed", split=(0.6, 0.4))  # 1.0·0.6/(0.5·1) ≥ 1
    with pytest.raises(UnstableError, match="type 1"):
        h.fixed_point(h.H2, 1.2, "typed", split=(0.0, 1.0))
    with pytest.raises(UnstableError, match="lam_hat"):
        h.typed_split(h.H2, 1.6)


# Two-type systems of the comparison (C ratio, γ_slow, d); λ* < capacity for all but the
# first two, where the whole capacity is the binding set.
BOUNDARY_FAST = [(h.H2x, 2), (h.System((0.8, 0.2), (1.0, 5.0), (3, 3)), 3)]
BOUNDARY_ALL = [
    (h.System((g, 1 - g), (1.0, float(r)), (d, d)), d)
    for r in (2, 5, 10)
    for g in (0.5, 0.8)
    for d in (2, 3)
]


def check_bracket(system: h.System, d: int, rel: float) -> None:
    """The numerical SQ(d) boundary lies within ±rel of the closed form."""
    star = h.sqd_stability_closed_form(system, d)
    lo = h.classify_stability(system, star * (1 - rel), "sqd", d_pool=d)
    assert lo.stable, lo
    if star < system.total_capacity * (1 - rel):
        hi = h.classify_stability(system, star * (1 + rel), "sqd", d_pool=d)
        assert not hi.stable and hi.reason == "truncation", hi


@pytest.mark.parametrize(("system", "d"), BOUNDARY_FAST)
def test_sqd_boundary_brackets_the_closed_form(system, d):
    check_bracket(system, d, 1e-3)


@pytest.mark.slow
@pytest.mark.parametrize(("system", "d"), BOUNDARY_ALL)
def test_sqd_boundary_brackets_the_closed_form_all(system, d):
    check_bracket(system, d, 1e-3)


def test_stability_boundary_bisection():
    b = h.stability_boundary(h.H2x, "sqd", bracket=(1.24, 1.26), tol=5e-3)
    assert b == pytest.approx(1.25, rel=5e-3)
    with pytest.raises(ConfigError, match="bracket"):
        h.stability_boundary(h.H2x, "sqd", bracket=(1.3, 1.4), tol=1e-3)


@pytest.mark.parametrize("policy", ["scheme1", "scheme2"])
def test_schemes_keep_the_full_capacity(policy):
    """No boundary below the capacity: stable at 0.999·μΣγC (the test bisection tolerance)."""
    cap = h.H2x.total_capacity
    b = h.stability_boundary(h.H2x, policy, bracket=(0.998 * cap, cap), tol=1e-3)
    assert b >= cap * (1 - 1e-3)


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["scheme1", "scheme2"])
@pytest.mark.parametrize("name", SYSTEMS)
def test_schemes_keep_the_full_capacity_all(policy, name):
    system = SYSTEMS[name]
    b = h.stability_boundary(system, policy, tol=1e-4)
    assert b >= system.total_capacity * (1 - 1e-4)


def counting_classifier(monkeypatch) -> list[float]:
    """Record the loads at which the stability bisection integrates the mean field."""
    calls: list[float] = []
    original = stability_module.classify_stability

    def counted(system, lam, policy, **kw):
        calls.append(lam)
        return original(system, lam, policy, **kw)

    monkeypatch.setattr(stability_module, "classify_stability", counted)
    return calls


def test_bisection_starts_in_the_closed_forms_final_interval(monkeypatch):
    """Two integrations (the ends of the bisection's last interval), not about fourteen."""
    calls = counting_classifier(monkeypatch)
    b = h.stability_boundary(h.H2x, "sqd", d_pool=2, tol=1e-3)
    assert len(calls) == 2
    assert b == pytest.approx(1.25, rel=1e-3)
    calls.clear()
    cap = h.H2x.total_capacity
    assert h.stability_boundary(h.H2x, "scheme1", tol=1e-3) >= cap * (1 - 1e-3)
    assert len(calls) == 1  # the high end is the capacity: unstable without integrating


@pytest.mark.slow
def test_bisection_without_a_good_guess_gives_the_same_boundary(monkeypatch):
    """A wrong closed form costs the full bisection from (0, capacity), with the same result."""
    fast = h.stability_boundary(h.H2x, "sqd", d_pool=2, tol=1e-3)
    calls = counting_classifier(monkeypatch)
    monkeypatch.setattr(stability_module, "stability_limit", lambda *a, **kw: 2.0)
    assert h.stability_boundary(h.H2x, "sqd", d_pool=2, tol=1e-3) == fast
    assert len(calls) > 2


# ---------------------------------------------------------------------------------- splits
def test_proportional_split():
    np.testing.assert_allclose(h.proportional_split(h.H3), np.array([0.5, 0.6, 0.8]) / 1.9)


def mean_jobs_typed(system: h.System, lam: float, p: np.ndarray) -> float:
    rho = lam * p / (system.mu * np.array(system.gamma) * np.array(system.capacity))
    if np.any(rho >= 1):
        return 1e9
    return sum(
        g * (sm.mean_jobs(sm.fixed_point_closed_form(r, d)) if r > 0 else 0.0)
        for g, r, d in zip(system.gamma, rho, system.d, strict=True)
    )


@pytest.mark.parametrize("frac", [0.1, 0.5, 0.9])
@pytest.mark.parametrize("system", [h.H2x, h.H3, MIXED], ids=["H2x", "H3", "mixed"])
def test_typed_split_is_optimal(system, frac):
    lam = frac * system.total_capacity
    p = h.typed_split(system, lam)
    assert p.sum() == pytest.approx(1.0) and np.all(p >= 0)
    best = mean_jobs_typed(system, lam, p)
    # SLSQP on the simplex from the proportional split must not beat the water-filling.
    res = scipy.optimize.minimize(
        lambda q: mean_jobs_typed(system, lam, np.clip(q, 0, None) / np.clip(q, 0, None).sum()),
        h.proportional_split(system),
        method="SLSQP",
        bounds=[(0, 1)] * system.num_types,
        constraints=[{"type": "eq", "fun": lambda q: q.sum() - 1}],
        options={"ftol": 1e-14, "maxiter": 500},
    )
    assert best <= res.fun + 1e-9
    # The evaluation through the population model agrees with the closed forms.
    mf = h.fixed_point(system, lam, "typed", split=p)
    assert mf.mean_jobs == pytest.approx(best, rel=1e-10)


def test_light_load_goes_to_the_fastest_type():
    p = h.typed_split(h.H2x, 0.1)
    np.testing.assert_allclose(p, [0.0, 1.0], atol=1e-15)


# ----------------------------------------------------------------------------------------- CLI
@pytest.mark.parametrize(
    "kw",
    [{"scheme": 1}, {"scheme": "2"}, {"policy": "sqd"}, {"policy": "typed", "lam_hat": 1.0}],
)
def test_solve_is_json_ready(kw):
    out = h.solve(1.2, (0.5, 0.5), (1, 2), (2, 2), 1.0, **kw)
    json.dumps(out)
    assert out["model"] == "hetero" and len(out["u"]) == 2
    assert set(out) >= {
        "params", "method", "u", "mean_jobs", "mean_sojourn", "fixed_points", "refined",
        "stability",
    }  # fmt: skip
    assert out["mean_sojourn"] == pytest.approx(out["mean_jobs"] / 1.2)
    assert {"V", "mean_sojourn_coefficient"} <= set(out["refined"])
    assert out["stability"]["capacity"] == pytest.approx(1.5)
    assert out["fixed_point_spread"] <= 1e-10
    if kw.get("policy") == "sqd":
        assert out["stability"]["sqd_lambda_star"] == pytest.approx(1.5)


def test_solve_validation():
    with pytest.raises(ConfigError, match="scheme"):
        h.solve(1.0, (0.5, 0.5), (1, 2), (2, 2), scheme=3)
    with pytest.raises(ConfigError, match="scheme"):
        h.solve(1.0, (0.5, 0.5), (1, 2), (2, 2), scheme=1, policy="sqd")
    with pytest.raises(ConfigError, match="gamma"):
        h.solve(1.0, "0.5,x", "1,2", "2,2")
    with pytest.raises(ConfigError, match="lam_hat"):
        h.solve(1.0, (0.5, 0.5), (1, 2), (2, 2), lam_hat=1.0)


def test_command_line_lists():
    """The command line's comma-separated lists, parsed by the parameters' declarations."""
    assert parse_numbers("0.5, 0.5") == (0.5, 0.5)
    assert parse_integers("2,3") == (2, 3)
    with pytest.raises(ValueError, match="comma-separated numbers"):
        parse_numbers("0.5,x")
    with pytest.raises(ValueError, match="comma-separated numbers"):
        parse_integers("2,2.5")
