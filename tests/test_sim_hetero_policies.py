"""The heterogeneous routing policies of the occupancy kernel (spec §A) against exact results.

Schemes 1 and 2, type-based SQ(d) and static random routing, and the propagation-of-chaos
covariances. As in ``test_sim_occupancy.py``, every comparison uses the run's own 95%
batch-means interval widened by a Bonferroni factor for the quantities compared in the test
(family-wise error 1e-3), plus an explicit bias allowance where the reference is a
mean-field limit rather than the finite-N truth. Seeds are fixed; they were not tuned.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse
import scipy.sparse.linalg
from scipy import stats

from lbrepro.core.errors import ConfigError, UnstableError
from lbrepro.sim import occupancy
from lbrepro.sim.estimates import batch_covariances
from lbrepro.sim.occupancy import OccupancySimResult, simulate_occupancy
from lbrepro.sim.occupancy_routing import priority_order, scheme2_weights


def widen(n_compared: int, batches: int = 20, family_error: float = 1e-3) -> float:
    """Factor turning each 95% half-width into a Bonferroni interval for n comparisons."""
    wide = stats.t.ppf(1 - family_error / (2 * n_compared), batches - 1)
    return wide / stats.t.ppf(0.975, batches - 1)


def half_width(low, high) -> np.ndarray:
    return (np.asarray(high) - np.asarray(low)) / 2


# ---------------------------------------------------------------- one type = SQ(d)


@pytest.mark.parametrize("policy", ["scheme1", "scheme2", "typed"])
@pytest.mark.parametrize("d", [1, 2, 3])
def test_one_type_is_bit_identical_to_pool_sqd(policy, d):
    # With one type, the per-type minimum is the whole-pool minimum drawn by the same
    # expression from the same single uniform, and no type needs to be drawn, so the random
    # stream and hence the whole path are identical to policy "sqd" with replacement.
    kw = {"lam": 0.9, "N": 50, "horizon": 2000.0, "warmup": 100.0, "seed": 31}
    ref = simulate_occupancy(d=d, **kw)
    r = simulate_occupancy(d=(d,), policy=policy, **kw)
    assert r.events_total == ref.events_total and r.arrivals == ref.arrivals
    assert r.mean_jobs == ref.mean_jobs and r.p_wait == ref.p_wait
    assert np.array_equal(r.u[0], ref.u[0]) and np.array_equal(r.u_ci_low[0], ref.u_ci_low[0])
    assert r.d == (d,) and ref.d == d and r.policy == policy


@pytest.mark.parametrize(
    ("kw", "mean_jobs", "events_total", "p_wait"),
    [
        ({"lam": 0.8, "N": 20, "d": 3}, 1.3648407809364655, 257027, 0.5480810898117727),
        (
            {"lam": 1.2, "N": 100, "d": 2, "gamma": (0.5, 0.3, 0.2), "capacity": (1, 2, 4)},
            1.4868580345472522,
            288231,
            0.5485938689413288,
        ),
    ],
    ids=["one-type", "three-types"],
)
def test_pool_sqd_path_is_unchanged_by_the_new_policies(kw, mean_jobs, events_total, p_wait):
    # Values recorded with the kernel before the heterogeneous policies were added: adding
    # them must not change a single random draw of whole-pool SQ(d). Re-recorded when runs
    # became micro-batched with data-driven length (each micro-batch boundary draws a fresh
    # inter-event time, and both runs double twice): pins the path from here on. p_wait
    # re-recorded when it became Σ waits / Σ arrivals exactly (69563 / 126921; the batch
    # means' sums were truncated to integers): the path itself did not change.
    horizon = 2000.0 if kw["N"] == 20 else 300.0
    warmup = 30.0 if kw["N"] == 20 else 10.0
    seed = 9 if kw["N"] == 20 else 7
    r = simulate_occupancy(horizon=horizon, warmup=warmup, seed=seed, **kw)
    assert (r.mean_jobs, r.events_total, r.p_wait) == (mean_jobs, events_total, p_wait)


@pytest.mark.parametrize("policy", ["scheme1", "scheme2"])
def test_one_type_matches_pool_sqd_statistically(policy):
    # The same law with independent seeds: the difference of two independent estimates is
    # compared with the combined half-width sqrt(hw_a² + hw_b²).
    kw = {"lam": 0.9, "N": 100, "horizon": 2.0e4, "warmup": 500.0}
    ref = simulate_occupancy(d=2, seed=32, **kw)
    r = simulate_occupancy(d=2, policy=policy, seed=33, **kw)
    f = widen(4)
    pairs = [(r.mean_jobs, r.mean_jobs_ci, ref.mean_jobs, ref.mean_jobs_ci)]
    for k in (1, 2, 3):
        pairs.append(
            (
                r.u[0][k],
                (r.u_ci_low[0][k], r.u_ci_high[0][k]),
                ref.u[0][k],
                (ref.u_ci_low[0][k], ref.u_ci_high[0][k]),
            )
        )
    for a, ci_a, b, ci_b in pairs:
        hw = math.hypot(half_width(*ci_a), half_width(*ci_b))
        assert 0 < hw < 0.05 * max(abs(b), 0.1)
        assert abs(a - b) <= f * hw, (a, b, hw)


# ---------------------------------------------------------------- exact labelled chains


@functools.cache
def _route_value(policy: str, capacity: float, m: int) -> tuple:
    """Sort key of a type's candidate (smaller is better) before the capacity tie rule."""
    if policy == "scheme1":
        return (m,)
    # Scheme 2: the largest C/m wins, an idle server (m = 0) counting as infinity. C is read
    # as the decimal it prints as (0.1 -> 1/10), the kernel's documented convention.
    return (0, 0) if m == 0 else (1, -Fraction(repr(capacity)) / m)


@functools.lru_cache
def exact_hetero_chain(
    sizes: tuple[int, ...],
    capacity: tuple[float, ...],
    d: tuple[int, ...],
    policy: str,
    lam: float,
    cap: int,
) -> dict[str, np.ndarray]:
    """Stationary quantities of the labelled chain of Scheme 1 or 2, queues truncated at cap.

    Transitions are built server by server from the paper's description, independently of
    the kernel: for every type, each of the N_j^{d_j} ordered samples (with replacement) is
    enumerated; its least occupied draw (ties uniform among the tied draws) is the type's
    candidate; the job goes to the best candidate (Scheme 1: fewest jobs; Scheme 2: largest
    C/m with exact fractions, idle = ∞), ties across types to the higher capacity and then
    the lower type index. Arrivals that would exceed ``cap`` are dropped.

    Only the solve uses symmetry: these dynamics commute with permutations of the servers of
    one type, so the labelled chain is lumpable onto orbits (occupancies sorted within each
    type) — a labelled state is generated for one representative per orbit and its targets
    are mapped to their orbits. That divides the state space by ∏ N_j! and keeps the sparse
    LU solve fast. Returns the stationary mean jobs per server of each type, routing
    probabilities per type (PASTA), the covariance of two servers of the same type (NaN if
    N_j = 1) and of a type-0 and a type-1 server, and the mass of states with a queue at cap.
    """
    n_types = len(sizes)
    members = [list(range(sum(sizes[:j]), sum(sizes[: j + 1]))) for j in range(n_types)]
    server_type = [j for j, mj in enumerate(members) for _ in mj]
    N = len(server_type)

    def canonical(n: list[int]) -> tuple[int, ...]:
        return tuple(x for mj in members for x in sorted((n[i] for i in mj), reverse=True))

    per_type_orbits = [
        list(itertools.combinations_with_replacement(range(cap, -1, -1), len(mj))) for mj in members
    ]
    # The empty state first: its probability is pinned to 1 in the solve below.
    states = [sum(parts, ()) for parts in itertools.product(*per_type_orbits)][::-1]
    index = {s: i for i, s in enumerate(states)}

    @functools.cache
    def candidates(j: int, sub: tuple[int, ...]) -> tuple[tuple[int, int, float], ...]:
        """(min occupancy, server, probability) of type j's candidate given its occupancies."""
        out: dict[tuple[int, int], float] = {}
        draws = list(itertools.product(range(len(sub)), repeat=d[j]))
        for s in draws:
            m = min(sub[i] for i in s)
            tied = [i for i in s if sub[i] == m]
            for i in tied:
                key = (m, members[j][i])
                out[key] = out.get(key, 0.0) + 1.0 / (len(draws) * len(tied))
        return tuple((m, srv, p) for (m, srv), p in out.items())

    rows, cols, vals = [], [], []
    occ = np.array(states, dtype=float)
    route_type = np.zeros((len(states), n_types))
    for idx, state in enumerate(states):
        n = list(state)
        per_type = [candidates(j, tuple(n[i] for i in members[j])) for j in range(n_types)]
        route = [0.0] * N
        for combo in itertools.product(*per_type):
            prob = math.prod(c[2] for c in combo)
            best = min(
                range(n_types),
                key=lambda j, combo=combo: (
                    _route_value(policy, capacity[j], combo[j][0]),
                    -capacity[j],
                    j,
                ),
            )
            route[combo[best][1]] += prob
        for i in range(N):
            route_type[idx, server_type[i]] += route[i]
            for step, rate in ((1, lam * N * route[i]), (-1, capacity[server_type[i]])):
                target = n.copy()
                target[i] += step
                if rate > 0 and 0 <= target[i] <= cap:
                    rows.append(idx)
                    cols.append(index[canonical(target)])
                    vals.append(rate)
    size = len(states)
    gen = scipy.sparse.coo_matrix((vals, (rows, cols)), shape=(size, size)).tocsr()
    gen = gen - scipy.sparse.diags(np.asarray(gen.sum(axis=1)).ravel())
    # Solve pi G = 0 with pi[0] fixed to 1 (dropping its redundant balance equation).
    gt = gen.T.tocsc()
    # (This ordering keeps the LU fill-in of the 4-server chain small: ~1 s, not ~5 s.)
    rest = scipy.sparse.linalg.spsolve(
        gt[1:, 1:], -gt[1:, 0].toarray().ravel(), permc_spec="MMD_AT_PLUS_A"
    )
    pi = np.concatenate([[1.0], rest])
    pi /= pi.sum()
    # Orbit functionals: exchangeability makes E over the orbit of x_a x_b (a ≠ b of type j)
    # the mean of the ordered distinct pairs, and x_a y_b across types the product of means.
    type_mean = np.stack([occ[:, mj].mean(axis=1) for mj in members], axis=1)
    jobs = pi @ type_mean
    cov_same = []
    for j, mj in enumerate(members):
        if len(mj) < 2:
            cov_same.append(math.nan)
            continue
        total = occ[:, mj].sum(axis=1)
        squares = (occ[:, mj] ** 2).sum(axis=1)
        pairs = (total**2 - squares) / (len(mj) * (len(mj) - 1))
        cov_same.append(pi @ pairs - jobs[j] ** 2)
    return {
        "jobs": jobs,
        "route": pi @ route_type,
        "cov_same": np.array(cov_same),
        "cov_cross": np.array(pi @ (type_mean[:, 0] * type_mean[:, 1]) - jobs[0] * jobs[1]),
        "tail": np.array(pi @ (occ == cap).any(axis=1)),
    }


TINY_CASES = [
    # (sizes, capacity, d, policy, cap, horizon)
    ((1, 1), (1.0, 2.0), (1, 1), "scheme1", 40, 1.0e6),
    ((1, 1), (1.0, 2.0), (1, 1), "scheme2", 40, 1.0e6),
    ((1, 1), (1.0, 1.0), (1, 1), "scheme1", 60, 1.0e6),  # equal C: ties to type 0
    ((2, 2), (1.0, 2.0), (2, 2), "scheme1", 12, 4.0e5),
    ((2, 2), (1.0, 2.0), (2, 2), "scheme2", 12, 4.0e5),
]


@pytest.mark.parametrize(
    ("sizes", "capacity", "d", "policy", "cap", "horizon"),
    TINY_CASES,
    ids=["N2-scheme1", "N2-scheme2", "N2-scheme1-equalC", "N4-scheme1", "N4-scheme2"],
)
def test_tiny_system_matches_the_exact_chain(sizes, capacity, d, policy, cap, horizon):
    # Per-server arrival rate at load 2/3 (C = (1, 2): mean capacity 1.5) or 3/4 (C = (1, 1)).
    lam = 1.0 if capacity[0] != capacity[1] else 0.75
    exact = exact_hetero_chain(sizes, capacity, d, policy, lam, cap)
    # Truncation is negligible next to the intervals (~5e-3): for N4-scheme2 the tail mass is
    # 2e-6 and raising cap from 12 to 16 moves the mean jobs by < 1e-5.
    assert exact["tail"] < 1e-5
    N = sum(sizes)
    r = simulate_occupancy(
        lam=lam,
        N=N,
        d=d,
        gamma=tuple(n / N for n in sizes),
        capacity=capacity,
        policy=policy,
        horizon=horizon,
        warmup=100.0,
        seed=50 + N + len(policy),
        chaos=True,
    )
    same = [j for j in range(2) if sizes[j] > 1]
    f = widen(5 + len(same))
    for j in range(2):
        hw = half_width(r.mean_jobs_per_type_ci_low[j], r.mean_jobs_per_type_ci_high[j])
        assert 0 < hw < 0.02 * exact["jobs"][j]
        assert abs(r.mean_jobs_per_type[j] - exact["jobs"][j]) <= f * hw, (j, r, exact)
        hw = half_width(r.route_ci_low[j], r.route_ci_high[j])
        assert 0 < hw < 0.01
        assert abs(r.route[j] - exact["route"][j]) <= f * hw, (j, r.route, exact["route"])
    # Propagation-of-chaos estimators against the exact covariances (not zero at this N).
    hw = half_width(r.cov_cross_ci_low[0, 1], r.cov_cross_ci_high[0, 1])
    assert 0 < hw < 0.2 * abs(exact["cov_cross"])
    assert abs(r.cov_cross[0, 1] - exact["cov_cross"]) <= f * hw, (r.cov_cross, exact)
    for j in same:
        hw = half_width(r.cov_same_ci_low[j], r.cov_same_ci_high[j])
        assert 0 < hw < 0.2 * abs(exact["cov_same"][j])
        assert abs(r.cov_same[j] - exact["cov_same"][j]) <= f * hw, (j, r.cov_same, exact)
    for j in range(2):
        if sizes[j] == 1:
            assert math.isnan(r.cov_same[j])


def test_the_exact_chains_tell_the_rules_apart():
    # Guards the previous test: the schemes, and the direction of the tie rule, change the
    # exact answers by far more than the simulation's precision (~1e-3 on the routing).
    s1 = exact_hetero_chain((1, 1), (1.0, 2.0), (1, 1), "scheme1", 1.0, 40)
    s2 = exact_hetero_chain((1, 1), (1.0, 2.0), (1, 1), "scheme2", 1.0, 40)
    flipped = exact_hetero_chain((1, 1), (2.0, 1.0), (1, 1), "scheme1", 1.0, 40)
    assert abs(s1["route"][0] - s2["route"][0]) > 0.02
    # Same system with the type labels swapped: if ties did not follow capacity but position,
    # the fast type's share would differ between the two labellings.
    assert flipped["route"][1] == pytest.approx(s1["route"][0], abs=1e-10)
    equal = exact_hetero_chain((1, 1), (1.0, 1.0), (1, 1), "scheme1", 0.75, 40)
    assert equal["route"][0] - equal["route"][1] > 0.05


# ---------------------------------------------------------------- static splits


def test_typed_split_gives_independent_supermarkets_at_their_own_loads():
    # Each type is a homogeneous SQ(2) system of N_j = 1000 servers at load
    # ρ_j = λ p_j / (μ γ_j C_j) = (0.8, 0.6). u_1 = ρ_j exactly (throughput); u_k for k ≥ 2
    # has the refined-mean-field bias V_k/N_j with |V_k| < 1 at these loads (see the
    # supermarket test at ρ = 0.9), allowed as 1/N_j.
    lam, split, N = 1.0, (0.4, 0.6), 2000
    r = simulate_occupancy(
        lam=lam,
        N=N,
        d=(2, 2),
        gamma=(0.5, 0.5),
        capacity=(1.0, 2.0),
        policy="typed",
        split=split,
        horizon=1500.0,
        warmup=100.0,
        seed=61,
    )
    rho = (0.8, 0.6)
    levels = (1, 2, 3)
    f = widen(2 * len(levels) + 2)
    for j in range(2):
        for k in levels:
            cf = rho[j] ** (2**k - 1)
            hw = half_width(r.u_ci_low[j][k], r.u_ci_high[j][k])
            assert 0 < hw < 0.005
            bias = 0.0 if k == 1 else 1.0 / 1000
            assert abs(r.u[j][k] - cf) <= f * hw + bias, (j, k, r.u[j][k], cf, hw)
        hw = half_width(r.route_ci_low[j], r.route_ci_high[j])
        assert abs(r.route[j] - split[j]) <= f * hw
    assert r.split == split and r.d == (2, 2)


def test_random_routing_gives_mm1_queues():
    # p ∝ γC gives every type the same load λ / (μ Σ γC) = 2/3 and independent M/M/1 queues,
    # whose u_k = ρ^k holds exactly at any N.
    r = simulate_occupancy(
        lam=1.0,
        N=2000,
        d=1,
        gamma=(0.5, 0.5),
        capacity=(1.0, 2.0),
        policy="random",
        horizon=1500.0,
        warmup=100.0,
        seed=62,
    )
    rho, levels = 2 / 3, (1, 2, 3, 4)
    f = widen(2 * len(levels))
    for j in range(2):
        for k in levels:
            hw = half_width(r.u_ci_low[j][k], r.u_ci_high[j][k])
            assert 0 < hw < 0.005
            assert abs(r.u[j][k] - rho**k) <= f * hw, (j, k, r.u[j][k], rho**k, hw)
    assert r.split == pytest.approx((1 / 3, 2 / 3)) and r.d == (1, 1)


def test_typed_without_split_routes_in_proportion_to_capacity():
    kw = {
        "lam": 1.0,
        "N": 20,
        "gamma": (0.5, 0.5),
        "capacity": (1.0, 2.0),
        "horizon": 500.0,
        "warmup": 10.0,
        "seed": 63,
    }
    typed = simulate_occupancy(d=1, policy="typed", **kw)
    random = simulate_occupancy(d=1, policy="random", **kw)
    assert typed.split == random.split == pytest.approx((1 / 3, 2 / 3))
    # The same arrival routine and stream: "random" is "typed" with d = 1 and p ∝ γC.
    assert typed.mean_jobs == random.mean_jobs


# ---------------------------------------------------------------- propagation of chaos


def chaos_run(policy: str, N: int, horizon: float, seed: int) -> OccupancySimResult:
    return simulate_occupancy(
        lam=1.0,
        N=N,
        d=1 if policy == "random" else 2,
        gamma=(0.5, 0.5),
        capacity=(1.0, 2.0),
        policy=policy,
        horizon=horizon,
        warmup=100.0,
        seed=seed,
        chaos=True,
    )


def test_random_routing_has_uncorrelated_servers():
    # Poisson splitting makes the queues independent at every N: both covariances are 0.
    r = chaos_run("random", 10, 4.0e5, 71)
    f = widen(3)
    # An informative interval: far below Var(x) = ρ/(1 − ρ)² = 6 of one M/M/1 queue.
    checks = [(r.cov_same[j], r.cov_same_ci_low[j], r.cov_same_ci_high[j]) for j in range(2)]
    checks.append((r.cov_cross[0, 1], r.cov_cross_ci_low[0, 1], r.cov_cross_ci_high[0, 1]))
    for value, low, high in checks:
        hw = half_width(low, high)
        assert 0 < hw < 0.05
        assert abs(value) <= f * hw, (value, hw)
    assert np.allclose(r.cov_cross, r.cov_cross.T)
    assert np.array_equal(np.diag(r.cov_cross), r.cov_same)


def test_scheme1_correlations_are_positive_and_shrink_like_one_over_n():
    # At N = 10 the tagged servers are clearly correlated (positively: the total number of
    # jobs fluctuates and the policy spreads it over all servers); the covariance vanishes
    # as N grows (propagation of chaos), at rate about 1/N: N · cov changes by far less
    # than the factor 4 between N = 10 and N = 40.
    small = chaos_run("scheme1", 10, 1.0e5, 72)
    large = chaos_run("scheme1", 40, 5.0e4, 73)
    f = widen(3)
    for j in range(2):
        for r in (small, large):
            hw = half_width(r.cov_same_ci_low[j], r.cov_same_ci_high[j])
            assert r.cov_same[j] > f * hw, (j, r.N, r.cov_same, hw)
        scaled = (40 * large.cov_same[j]) / (10 * small.cov_same[j])
        assert 0.5 < scaled < 2.0, (j, small.cov_same, large.cov_same)
    hw = half_width(small.cov_cross_ci_low[0, 1], small.cov_cross_ci_high[0, 1])
    assert small.cov_cross[0, 1] > f * hw


def test_chaos_statistics_do_not_change_the_path():
    kw = {"policy": "scheme2", "N": 20, "horizon": 300.0, "seed": 74}
    a = chaos_run(**kw)
    b = simulate_occupancy(
        lam=1.0, d=2, gamma=(0.5, 0.5), capacity=(1.0, 2.0), warmup=100.0, chaos=False, **kw
    )
    assert a.events_total == b.events_total and a.mean_jobs == b.mean_jobs
    assert b.cov_same is None and b.cov_cross is None
    d = json.loads(json.dumps(a.to_dict()))
    assert d["cov_cross"] == a.cov_cross.tolist()
    assert d["ci"]["cov_same"] == [a.cov_same_ci_low.tolist(), a.cov_same_ci_high.tolist()]
    assert d["route"] == a.route.tolist() and d["d"] == [2, 2] and d["policy"] == "scheme2"
    assert b.to_dict()["cov_same"] is None and b.to_dict()["ci"]["cov_cross"] is None


def test_batch_covariances_from_known_integrals():
    # Two types of 2 and 3 servers, over a batch of length 2 in which the state is constant:
    # type 0 holds occupancies (1, 3), type 1 holds (0, 2, 2). Time averages of constants
    # give cov_same[j] = mean of x_a x_b over ordered distinct pairs − (mean x)², and
    # cov_cross = 0 (a constant state has no fluctuation across types).
    x = [np.array([1, 3]), np.array([0, 2, 2])]
    S = np.array([v.sum() for v in x], dtype=float)
    sum_area = np.zeros((4, 2))
    sum_area[0] = 2 * S
    sum_area[1] = 2 * np.array([(v**2).sum() for v in x])
    sum_area[2:] = 2 * np.triu(np.outer(S, S))
    same, cross = batch_covariances(sum_area, np.array([2, 3]), 2.0)
    for j, v in enumerate(x):
        pairs = [v[a] * v[b] for a in range(v.size) for b in range(v.size) if a != b]
        assert same[j] == pytest.approx(np.mean(pairs) - v.mean() ** 2)
    assert cross[0, 1] == pytest.approx(0.0, abs=1e-12) and cross[1, 0] == cross[0, 1]
    assert np.array_equal(np.diag(cross), same)


# ---------------------------------------------------------------- exact comparisons


def test_scheme2_weights_compare_decimal_capacities_exactly():
    assert scheme2_weights((0.1, 0.3), 100).tolist() == [1, 3]
    assert scheme2_weights((1.0, 2.5, 4.0), 100).tolist() == [2, 5, 8]
    assert scheme2_weights((1 / 3, 1.0), 100).tolist() == [1, 3]
    with pytest.raises(ConfigError, match="capacity"):
        scheme2_weights((1e-9, 1.0), 100)
    # Higher capacity first; equal capacities by index (this simulator's rule).
    assert priority_order((1.0, 4.0, 2.0, 4.0)).tolist() == [1, 3, 2, 0]


def test_scheme2_ties_decimal_capacities_like_their_ratios():
    # C = (0.1, 0.3), one server each, d = 1: the slow server holding 1 job and the fast one
    # holding 3 offer the same rate per job 0.1 exactly, so the fast type must win; with the
    # binary values (0.3/3 < 0.1) the slow one would, as it does for C = 0.2999999 (whose
    # chain differs otherwise only by a 3e-7 relative change of one rate).
    exact = exact_hetero_chain((1, 1), (0.1, 0.3), (1, 1), "scheme2", 0.15, 60)
    binary = exact_hetero_chain((1, 1), (0.1, 0.2999999), (1, 1), "scheme2", 0.15, 60)
    assert exact["tail"] < 1e-7
    r = simulate_occupancy(
        lam=0.15,
        N=2,
        d=1,
        gamma=(0.5, 0.5),
        capacity=(0.1, 0.3),
        policy="scheme2",
        horizon=4.0e6,
        warmup=1000.0,
        seed=75,
    )
    hw = half_width(r.route_ci_low[0], r.route_ci_high[0])
    assert abs(r.route[0] - exact["route"][0]) <= widen(1) * hw
    assert abs(binary["route"][0] - exact["route"][0]) > 10 * hw


# ---------------------------------------------------------------- contract


def test_unstable_typed_split_is_refused_naming_the_type():
    kw = {
        "lam": 1.0,
        "N": 10,
        "gamma": (0.5, 0.5),
        "capacity": (1.0, 2.0),
        "horizon": 1e9,
        "warmup": 0.0,
        "seed": 1,
    }
    with pytest.raises(UnstableError, match="type 0 "):
        simulate_occupancy(d=2, policy="typed", split=(0.6, 0.4), **kw)
    with pytest.raises(UnstableError, match="type 1 "):
        simulate_occupancy(d=2, policy="typed", split=(0.01, 0.99), **{**kw, "lam": 1.2})
    with pytest.raises(UnstableError, match="type"):
        simulate_occupancy(d=1, policy="random", **{**kw, "lam": 1.5})
    with pytest.raises(UnstableError, match="capacity"):
        simulate_occupancy(d=2, policy="scheme1", **{**kw, "lam": 1.5})


def test_results_record_the_policy():
    r = simulate_occupancy(
        lam=1.0,
        N=10,
        d=[2, 3],
        gamma=(0.5, 0.5),
        capacity=(1.0, 2.0),
        policy="scheme1",
        horizon=50.0,
        warmup=5.0,
        seed=2,
    )
    d = r.to_dict()
    assert d["policy"] == "scheme1" and d["d"] == [2, 3] and d["split"] is None
    assert r.route.sum() == pytest.approx(1.0)
    assert r.mean_jobs == pytest.approx(float(np.dot((0.5, 0.5), r.mean_jobs_per_type)))
    assert occupancy.POLICIES == ("sqd", "scheme1", "scheme2", "typed", "random")


def hetero_run(**kw) -> OccupancySimResult:
    args = {
        "lam": 1.0,
        "N": 10,
        "d": 2,
        "gamma": (0.5, 0.5),
        "capacity": (1.0, 2.0),
        "policy": "scheme1",
        "horizon": 20.0,
        "warmup": 1.0,
        "seed": 3,
    }
    args.update(kw)
    return simulate_occupancy(**args)


@pytest.mark.parametrize(
    ("override", "key"),
    [
        ({"policy": "jsq"}, "policy"),
        ({"policy": 1}, "policy"),
        ({"d": (2, 2, 2)}, "d"),
        ({"d": (2,)}, "d"),
        ({"d": (2, 0)}, "d"),
        ({"d": (2, 1.5)}, "d"),
        ({"d": "22"}, "d"),
        ({"d": (2, 2), "policy": "sqd"}, "d"),
        ({"d": 2, "policy": "random"}, "d"),
        ({"split": (0.5, 0.5)}, "split"),
        ({"split": (0.5, 0.5), "policy": "random", "d": 1}, "split"),
        ({"split": (1.0,), "policy": "typed"}, "split"),
        ({"split": (0.2, 0.3, 0.5), "policy": "typed"}, "split"),
        ({"split": (0.5, 0.6), "policy": "typed"}, "split"),
        ({"split": (1.2, -0.2), "policy": "typed"}, "split"),
        ({"split": (-0.1, 1.1), "policy": "typed"}, "split"),
        ({"split": "ab", "policy": "typed"}, "split"),
        ({"replace": False}, "replace"),
        ({"chaos": "yes"}, "chaos"),
        ({"capacity": (1e-9, 1.0), "policy": "scheme2", "lam": 0.1}, "capacity"),
        ({"capacity": (1.0,)}, "capacity"),
    ],
)
def test_bad_arguments_raise_config_error_naming_them(override, key):
    with pytest.raises(ConfigError) as info:
        hetero_run(**override)
    assert info.value.key == key
    assert str(info.value).startswith(key)
