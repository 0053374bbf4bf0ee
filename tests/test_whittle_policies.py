"""Joint K-server chain: operators against a brute-force matrix, RVI, policies, simulation."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from lbrepro.core.errors import ConfigError, UnstableError
from lbrepro.core.stats import bonferroni_factor
from lbrepro.models import whittle as w
from lbrepro.models import whittle_policies as wp

SYS2 = dict(p=0.6, q=[0.3, 0.6], d=[1, "inf"])
SYS3 = dict(p=0.7, q=[0.2, 0.4, 0.6], d=[1, 2, "inf"])


def _brute_matrix(system: wp.System, B: int, route: np.ndarray) -> sp.csr_matrix:
    """Transition matrix built state by state from the per-server departure pmfs."""
    K = system.K
    shape = (B + 1,) * K
    rows, cols, vals = [], [], []
    for n in itertools.product(range(B + 1), repeat=K):
        i = np.ravel_multi_index(n, shape)
        pmfs = [w.departure_pmf(n[k], system.q[k], system.d[k]) for k in range(K)]
        for D in itertools.product(*(range(len(f)) for f in pmfs)):
            prob = math.prod(pmfs[k][D[k]] for k in range(K))
            m = [n[k] - D[k] for k in range(K)]
            rows.append(i)
            cols.append(np.ravel_multi_index(m, shape))
            vals.append((1 - system.p) * prob)
            for a in range(K):
                r = route[(a, *n)]
                if r == 0:
                    continue
                m2 = list(m)
                m2[a] = min(m2[a] + 1, B)
                rows.append(i)
                cols.append(np.ravel_multi_index(m2, shape))
                vals.append(system.p * r * prob)
    size = (B + 1) ** K
    return sp.csr_matrix((vals, (rows, cols)), shape=(size, size))


def _stationary_direct(P: sp.csr_matrix) -> np.ndarray:
    n = P.shape[0]
    A = (sp.eye(n) - P).T.tolil()
    A[0, :] = 1.0
    b = np.zeros(n)
    b[0] = 1.0
    return spla.spsolve(A.tocsc(), b)


@pytest.mark.parametrize(("spec", "B"), [(SYS2, 8), (SYS3, 5)])
@pytest.mark.parametrize("policy", ["jsq", "whittle", "rsa"])
def test_forward_and_backward_operators_match_brute_force(spec, B, policy) -> None:
    system = wp.System.make(**spec)
    chain = wp.JointChain(system, B)
    route = (
        chain.rsa_route()
        if policy == "rsa"
        else chain.index_route(wp.priorities(system, policy, B))
    )
    P = _brute_matrix(system, B, route)
    assert np.allclose(np.asarray(P.sum(axis=1)).ravel(), 1.0, atol=1e-14)
    rng = np.random.default_rng(1)
    h = rng.normal(size=chain.shape)
    Q = chain.action_values(h)
    expected = (P @ h.ravel()).reshape(chain.shape)
    assert np.allclose((route * Q).sum(axis=0), expected, atol=1e-13)
    mu = rng.random(chain.shape)
    assert np.allclose(chain.step_forward(mu, route).ravel(), P.T @ mu.ravel(), atol=1e-13)
    pi = _stationary_direct(P)
    ev = chain.evaluate(route)
    assert ev["cost"] == pytest.approx(float(pi @ chain.cost.ravel()), rel=1e-9)


def test_rvi_matches_policy_iteration_on_brute_force_matrix() -> None:
    """RVI's policy is optimal: one exact policy-iteration test on the brute-force chain."""
    system = wp.System.make(**SYS2)
    B = 10
    chain = wp.JointChain(system, B)
    res = chain.rvi(tol=1e-11)
    g_rvi = chain.evaluate(res["route"])["cost"]
    assert res["g_low"] - 1e-9 <= g_rvi <= res["g_high"] + 1e-9
    # Exact evaluation (g, h) of the RVI policy, then no allowed action may improve on it.
    P = _brute_matrix(system, B, res["route"])
    n = P.shape[0]
    A = (sp.eye(n) - P).tolil()
    A[:, 0] = 1.0
    sol = spla.spsolve(A.tocsc(), chain.cost.ravel())
    g, h = sol[0], sol.copy()
    h[0] = 0.0
    assert g == pytest.approx(g_rvi, rel=1e-9)
    Q = np.where(chain.allowed, chain.action_values(h.reshape(chain.shape)), np.inf)
    chosen = (res["route"] * np.where(np.isinf(Q), 0, Q)).sum(axis=0)
    assert np.all(chosen <= Q.min(axis=0) + 1e-9 * (1 + np.abs(chosen)))


@pytest.mark.parametrize("spec", [SYS2, dict(p=0.8, q=[0.5, 0.5], d=[1, "inf"])])
@pytest.mark.parametrize("cost", ["linear", "meanvar"])
def test_policies_exact_costs(spec, cost) -> None:
    system = wp.System.make(**spec, cost=cost, beta=1.0)
    res = wp.compare_policies(system, 24)
    opt = res.costs["optimal"]
    assert res.g_bounds[0] - 1e-8 <= opt <= res.g_bounds[1] + 1e-8
    for policy, c in res.costs.items():
        assert c >= res.g_bounds[0] - 1e-8, policy
        if math.isfinite(c):
            assert res.boundary_mass[policy] < wp.TRUNCATION_TOL


def test_rsa_on_the_joint_chain_equals_the_per_server_formula() -> None:
    """RSA splits the Bernoulli stream: each server alone sees Bernoulli(p/K) arrivals."""
    system = wp.System.make(p=0.5, q=[0.5, 0.5], d=[1, "inf"], cost="meanvar", beta=2.0)
    chain = wp.JointChain(system, 40)
    ev = chain.evaluate(chain.rsa_route())
    assert ev["boundary_mass"] < 1e-9
    assert ev["cost"] == pytest.approx(wp.rsa_cost(system), rel=1e-8)


def test_rsa_unstable_is_infinite() -> None:
    system = wp.System.make(**SYS2)  # p/K = 0.3 ≥ q_1 = 0.3
    assert wp.rsa_cost(system) == math.inf
    # 0.6/3 rounds to 0.19999999999999998 < 0.2: still critical, not a 10⁵-level chain
    assert wp.rsa_cost(wp.System.make(0.6, [0.2, 0.4, 0.6], [1, 2, "inf"])) == math.inf
    assert wp.compare_policies(system, 20, policies=["rsa"]).costs["rsa"] == math.inf


def test_buffer_too_small_is_refused() -> None:
    system = wp.System.make(**SYS2)
    with pytest.raises(ConfigError) as err:
        wp.compare_policies(system, 4, policies=["jsq"])
    assert err.value.key == "B"
    res = wp.choose_buffer(system, start=4, policies=["jsq"])
    assert res.B > 4 and res.boundary_mass["jsq"] < wp.TRUNCATION_TOL


@pytest.mark.parametrize(
    ("spec", "key"),
    [
        (dict(p=0.95, q=[0.3, 0.6], d=[1, 2]), None),
        (dict(p=0.0, q=[0.3, 0.6], d=[1, 2]), "p"),
        (dict(p=0.5, q=[0.0, 0.6], d=[1, 2]), "q[0]"),
        (dict(p=0.5, q=[0.3, 1.5], d=[1, 2]), "q[1]"),
        (dict(p=0.5, q=[0.3, 0.6], d=[0, 2]), "d[0]"),
        (dict(p=0.5, q=[0.3, 0.6], d=[1]), "d"),
    ],
)
def test_bad_systems(spec, key) -> None:
    if key is None:
        with pytest.raises(UnstableError, match="p"):
            wp.System.make(**spec)
    else:
        with pytest.raises(ConfigError) as err:
            wp.System.make(**spec)
        assert err.value.key == key


def test_simulation_matches_exact_costs() -> None:
    """Slotted simulation (no buffer) against the exact truncated-chain cost, every policy."""
    system = wp.System.make(p=0.7, q=[0.5, 0.5], d=[1, "inf"], cost="meanvar", beta=1.0)
    res = wp.compare_policies(system, 30)
    widen = bonferroni_factor(20, len(wp.POLICIES))
    seed = np.random.SeedSequence(20261130)
    for i, policy in enumerate(wp.POLICIES):
        sim = wp.simulate(
            system, policy, 1_000_000, 5_000, seed.spawn(1)[0], costs=res, prio_nmax=60
        )
        half = (sim["ci"][1] - sim["ci"][0]) / 2
        assert abs(sim["cost"] - res.costs[policy]) <= widen * half, (policy, sim, res.costs)
        assert half < 0.02 * res.costs[policy]
        assert i >= 0


@pytest.mark.parametrize("policy", ["whittle", "rsa"])
def test_simulated_served_capacity_is_the_arrival_probability(policy) -> None:
    """Work conservation, the slotted form: a busy server's expected departures per slot are
    q_k, so in equilibrium the served capacity Σ_k q_k·1{n_k > 0} equals p (arrivals =
    departures) whatever the (stable) policy. Moderate load p/Σq = 0.56 (RSA: 0.83 at the
    slower server); 2·10⁵ slots; the tolerance is the run's own interval, widened for the two
    policies."""
    system = wp.System.make(p=0.5, q=[0.3, 0.6], d=[1, "inf"])
    sim = wp.simulate(system, policy, 200_000, 2_000, np.random.SeedSequence(20261206))
    low, high = sim["served_ci"]
    half = (high - low) / 2
    assert low <= sim["served"] <= high and 0 < half < 0.01, sim
    assert abs(sim["served"] - system.p) <= bonferroni_factor(20, 2) * half, sim
    # jobs per slot, not the load p/Σq = 0.56 (a kernel dividing by Σq would read it)
    assert abs(sim["served"] - system.p / sum(system.q)) > 10 * half, sim


def test_indices_beyond_the_float_range_keep_their_order() -> None:
    """p = 0.99 > q = 0.5, FCFS: W(m) grows like r^m, r = p(1−q)/(q(1−p)) = 99, past 1.8e308
    from m = 156 (was: a division by zero and an overflow, two bare RuntimeWarnings in the
    JSON of ``simulate whittle``). W is +∞ there, silently; its rank asinh W = log 2W carries
    on with the same step log r across the float boundary, and is asinh W below it."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        W, ranks = w.whittle_indices_and_ranks(0.99, 0.5, 1, 200)
    beyond = ~np.isfinite(W)
    assert beyond.any() and np.isfinite(ranks).all()
    assert np.array_equal(ranks[~beyond], np.arcsinh(W[~beyond]))
    step = np.diff(ranks[120:])
    assert step == pytest.approx(math.log(99.0), rel=1e-9), step


def test_whittle_routes_as_jsq_for_identical_servers_beyond_the_float_range() -> None:
    """Identical servers: Whittle is JSQ (ties to the first), also where both indices are
    beyond the float range (was: both +∞, a tie, every arrival to server 1 however long its
    queue). The kernel's rule: smallest value, ties within 1e-12 relative to the first."""
    system = wp.System.make(p=0.99, q=[0.5, 0.5], d=[1, 1])
    table = wp.whittle_routing(system, 200)
    assert np.isfinite(table).all()
    for n1, n2 in itertools.product(range(0, 201, 5), repeat=2):
        a, b = table[0, n1], table[1, n2]
        first = a <= b + 1e-12 * max(1.0, abs(b))
        assert first == (n1 <= n2), (n1, n2, a, b)
    # without an index beyond the float range, the table is the indices themselves
    moderate = wp.System.make(p=0.7, q=[0.5, 0.5], d=[1, "inf"])
    indices = wp.priorities(moderate, "whittle", 200)
    assert np.array_equal(wp.whittle_routing(moderate, 200), indices)


def test_whittle_route_uses_indices() -> None:
    system = wp.System.make(p=0.5, q=[0.3, 0.6], d=[1, "inf"])
    chain = wp.JointChain(system, 6)
    prio = wp.priorities(system, "whittle", 6)
    route = chain.index_route(prio)
    for n in itertools.product(range(6), repeat=2):
        a = int(np.argmax(route[(slice(None), *n)]))
        v = [prio[k, n[k]] for k in range(2)]
        assert v[a] == min(v) or (v[a] <= min(v) * (1 + 1e-12) and system.q[a] == 0.6)
    # JSEW: (n + 1)/q, ties to the larger q; at the empty state that is server 2
    jsew = chain.index_route(wp.priorities(system, "jsew", 6))
    assert jsew[1, 0, 0] == 1.0


def test_whittle_equals_jsq_for_identical_servers() -> None:
    """Identical servers have identical increasing indices: Whittle routes exactly as JSQ."""
    system = wp.System.make(p=0.7, q=[0.5, 0.5], d=[2, 2], cost="meanvar", beta=1.0)
    chain = wp.JointChain(system, 12)
    a = chain.index_route(wp.priorities(system, "whittle", 12))
    b = chain.index_route(wp.priorities(system, "jsq", 12))
    assert np.array_equal(a, b)


def test_cli_warmup_default_is_one_hundredth_of_the_horizon() -> None:
    """The default lives in simulate_summary's signature (the CLI reads it): 1% of the horizon."""
    assert wp.MODEL.defaults("simulate")["warmup"] is None
    args = dict(p=0.5, q="0.3,0.6", d="1,inf", horizon=20_000, policy="jsq", seed=4)
    default = wp.simulate_summary(**args)
    explicit = wp.simulate_summary(**args, warmup=200)
    assert default["mean_cost"] == explicit["mean_cost"]
    assert default["events"] == explicit["events"]
    assert default["mean_cost"] != wp.simulate_summary(**args, warmup=2_000)["mean_cost"]


@pytest.mark.parametrize(("spec", "B"), [(SYS2, 12), (SYS3, 6)])
def test_fused_kernels_equal_the_array_form_bit_for_bit(spec, B) -> None:
    """rvi() and evaluate() run fused kernels; the array form (action_values, step_forward)
    iterated the same way must give the very same numbers."""
    system = wp.System.make(**spec, cost="meanvar", beta=1.0)
    chain = wp.JointChain(system, B)
    h = np.zeros(chain.shape)
    for it in range(1, 200_000):  # noqa: B007 (compared after the loop)
        Th = chain.cost + np.where(chain.allowed, chain.action_values(h), np.inf).min(axis=0)
        lo, hi = float((Th - h).min()), float((Th - h).max())
        h = Th - Th[(0,) * system.K]
        if hi - lo < 1e-9 * max(1.0, abs(hi)):
            break
    res = chain.rvi()
    assert (res["iterations"], res["g_low"], res["g_high"]) == (it, lo, hi)
    assert np.array_equal(res["h"], h)
    route = chain.index_route(wp.priorities(system, "whittle", B))
    mu = np.zeros(chain.shape)
    mu[(0,) * system.K] = 1.0
    for steps in range(1, 200_000):  # noqa: B007 (compared after the loop)
        new = chain.step_forward(mu, route)
        change, mu = float(np.abs(new - mu).sum()), new
        if change < 1e-13:
            break
    mu /= mu.sum()
    ev = chain.evaluate(route)
    assert ev["iterations"] == steps
    assert ev["cost"] == float((mu * chain.cost).sum())
    assert ev["boundary_mass"] == float(mu[chain.boundary].sum())
