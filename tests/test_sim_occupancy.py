"""The occupancy-count simulator against exact results it must reproduce.

Every comparison uses the run's own 95% batch-means interval, widened only by a Bonferroni
factor for the number of quantities compared in that test (family-wise error 1e-3), so a
wrong kernel fails while a correct one fails with probability ~1e-3 per test. Seeds are
fixed, so the outcome is deterministic; they were not tuned.
"""

from __future__ import annotations

import functools
import itertools
import json
import math

import numpy as np
import pytest
import scipy.sparse
import scipy.sparse.linalg
from scipy import stats

from lbrepro.core.errors import ConfigError, UnstableError
from lbrepro.core.rng import stream
from lbrepro.sim import estimates, occupancy, occupancy_kernel, runlength
from lbrepro.sim.occupancy import OccupancySimResult, simulate_occupancy
from lbrepro.sim.runlength import MIN_RELAXATIONS, relaxation_time


def widen(n_compared: int, batches: int = 20, family_error: float = 1e-3) -> float:
    """Factor turning each 95% half-width into a Bonferroni interval for n comparisons.

    For 4 comparisons with 20 batches it is t_19(1 − 1.25e-4) / t_19(0.975) ≈ 2.2.
    """
    wide = stats.t.ppf(1 - family_error / (2 * n_compared), batches - 1)
    return wide / stats.t.ppf(0.975, batches - 1)


def half_width(low: np.ndarray, high: np.ndarray) -> np.ndarray:
    return (np.asarray(high) - np.asarray(low)) / 2


# ---------------------------------------------------------------- exact models


def test_d1_is_independent_mm1_queues():
    rho, levels = 0.7, range(1, 5)
    r = simulate_occupancy(lam=rho, N=50, d=1, horizon=1.0e5, warmup=1000, seed=1)
    f = widen(len(levels))
    for k in levels:
        hw = half_width(r.u_ci_low[0][k], r.u_ci_high[0][k])
        assert 0 < hw < 0.01  # the interval is informative, not vacuous
        assert abs(r.u[0][k] - rho**k) <= f * hw, (k, r.u[0][k], rho**k, hw)


def test_two_types_d1_are_mm1_queues_at_their_own_loads():
    lam, mu, capacity = 0.8, 1.0, (1.0, 2.0)
    r = simulate_occupancy(
        lam=lam,
        N=50,
        d=1,
        mu=mu,
        gamma=(0.5, 0.5),
        capacity=capacity,
        horizon=1.0e5,
        warmup=1000,
        seed=2,
    )
    levels = range(1, 5)
    f = widen(2 * len(levels))
    for j, c in enumerate(capacity):
        rho = lam / (mu * c)
        for k in levels:
            hw = half_width(r.u_ci_low[j][k], r.u_ci_high[j][k])
            assert 0 < hw < 0.02
            assert abs(r.u[j][k] - rho**k) <= f * hw, (j, k, r.u[j][k], rho**k, hw)
    expected_all = 0.5 * (lam / capacity[0]) + 0.5 * (lam / capacity[1])
    assert abs(r.u_all[1] - expected_all) <= f * half_width(r.u_all_ci_low[1], r.u_all_ci_high[1])


def enumerate_samples(N: int, d: int, replace: bool) -> list[tuple[int, ...]]:
    """Every equally likely sample of d server labels (ordered draws, or subsets)."""
    if replace:
        return list(itertools.product(range(N), repeat=d))
    return list(itertools.combinations(range(N), d))


@functools.lru_cache
def labelled_ctmc_law(
    N: int, d: int, replace: bool, lam: float, cap: int
) -> tuple[np.ndarray, np.ndarray]:
    """Stationary law of the labelled N-server SQ(d) chain, each queue truncated at ``cap``.

    Built server by server (no exchangeability argument): every sample of d servers is
    enumerated with its probability, the job joins a least-occupied sampled draw chosen
    uniformly. Arrivals that would exceed ``cap`` are dropped; ``cap`` is chosen so the
    truncated mass is negligible. Returns (pi, occ): pi[s] is the stationary probability of
    state s and occ[s, i] the number of jobs at server i in it.
    """
    base = cap + 1
    n_states = base**N
    stride = [base**i for i in range(N)]
    samples = enumerate_samples(N, d, replace)
    p_sample = 1.0 / len(samples)
    rows, cols, vals = [], [], []
    occ = np.zeros((n_states, N), dtype=int)
    for idx in range(n_states):
        n = [(idx // stride[i]) % base for i in range(N)]
        occ[idx] = n
        route = [0.0] * N
        for s in samples:
            m = min(n[i] for i in s)
            tied = [i for i in s if n[i] == m]
            for i in tied:
                route[i] += p_sample / len(tied)
        for i in range(N):
            if route[i] > 0 and n[i] < cap:
                rows.append(idx)
                cols.append(idx + stride[i])
                vals.append(lam * N * route[i])
            if n[i] > 0:
                rows.append(idx)
                cols.append(idx - stride[i])
                vals.append(1.0)
    gen = scipy.sparse.coo_matrix((vals, (rows, cols)), shape=(n_states, n_states)).tocsr()
    gen = gen - scipy.sparse.diags(np.asarray(gen.sum(axis=1)).ravel())
    # Solve pi G = 0 with pi[0] fixed to 1 (dropping its redundant balance equation keeps the
    # system sparse, unlike a dense normalisation row), then normalise.
    gt = gen.T.tocsc()
    rest = scipy.sparse.linalg.spsolve(gt[1:, 1:], -gt[1:, 0].toarray().ravel())
    pi = np.concatenate([[1.0], rest])
    pi /= pi.sum()
    return pi, occ


def exact_labelled_ctmc(N: int, d: int, replace: bool, lam: float, cap: int) -> np.ndarray:
    """P[k] = E[fraction of servers with >= k jobs] under ``labelled_ctmc_law``."""
    pi, occ = labelled_ctmc_law(N, d, replace, lam, cap)
    return np.array([pi @ (occ >= k).mean(axis=1) for k in range(cap + 1)])


def exact_wait_probability(N: int, d: int, replace: bool, lam: float, cap: int) -> float:
    """Stationary probability that every server of a fresh sample is busy.

    By PASTA this is the probability that an arrival waits. Computed sample by sample over
    the labelled states (for JSQ, d = N without replacement, it is P(all N servers busy)),
    not from the occupancy formula the kernel inverts.
    """
    pi, occ = labelled_ctmc_law(N, d, replace, lam, cap)
    samples = enumerate_samples(N, d, replace)
    all_busy = np.mean([(occ[:, list(s)] >= 1).all(axis=1) for s in samples], axis=0)
    return float(pi @ all_busy)


@pytest.mark.parametrize(
    ("N", "d", "replace", "cap"),
    [(2, 2, False, 60), (3, 3, False, 20), (3, 2, False, 20), (3, 2, True, 20)],
    ids=["JSQ-N2", "JSQ-N3", "SQ2of3-noreplace", "SQ2of3-replace"],
)
def test_small_n_matches_the_exact_labelled_chain(N, d, replace, cap):
    lam = 0.7
    exact = exact_labelled_ctmc(N, d, replace, lam, cap)
    assert exact[cap] < 1e-7  # truncation is harmless next to the intervals (~1e-3)
    exact_jobs = exact[1:].sum()
    r = simulate_occupancy(
        lam=lam, N=N, d=d, replace=replace, horizon=1.0e6, warmup=100, seed=3 + N + d
    )
    f = widen(3)
    hw = half_width(*r.mean_jobs_ci)
    assert 0 < hw < 0.01 * exact_jobs
    assert abs(r.mean_jobs - exact_jobs) <= f * hw, (r.mean_jobs, exact_jobs, hw)
    for k in (2, 3):
        hw_k = half_width(r.u_ci_low[0][k], r.u_ci_high[0][k])
        assert abs(r.u[0][k] - exact[k]) <= f * hw_k, (k, r.u[0][k], exact[k], hw_k)


@pytest.mark.parametrize(
    ("N", "qtot"),
    [(10, [10, 8, 5, 3, 1]), (10**6, [10**6, 900_000, 729_000, 478_297, 205_891, 38_152, 1_310])],
)
@pytest.mark.parametrize("replace", [True, False])
@pytest.mark.parametrize("d", [1, 2, 3, 7])
def test_min_level_inversion_matches_the_exact_law(N, qtot, replace, d):
    # Draws of the kernel's minimum-occupancy routine against P(min ≥ k) computed exactly with
    # integer arithmetic (math.comb), covering every branch (d = 1, d = 2, general d; with and
    # without replacement; lgamma at N = 10^6). Chi-square goodness of fit at level 1e-4.
    levels = np.array([*qtot, 0], dtype=np.int64)
    top = len(qtot) - 1
    if replace:
        tail = [(q / N) ** d for q in levels]
    else:
        tail = [math.comb(int(q), d) / math.comb(N, d) for q in levels]
    probs = np.array([tail[k] - tail[k + 1] for k in range(top + 1)])
    log_comb = math.lgamma(N + 1.0) - math.lgamma(N - d + 1.0)
    state = np.array([11, 22, 33, d], dtype=np.uint64)
    draws = 40_000
    hits = np.bincount(
        [
            occupancy_kernel.pool_min_level(levels, top, N, d, replace, log_comb, state)
            for _ in range(draws)
        ],
        minlength=top + 1,
    )
    keep = probs * draws >= 5
    expected = probs[keep] * draws
    observed = hits[keep]
    assert hits[~keep].sum() <= max(10, 3 * probs[~keep].sum() * draws)
    chi2 = float(((observed - expected) ** 2 / expected).sum())
    assert stats.chi2.sf(chi2, max(keep.sum() - 1, 1)) > 1e-4, (hits, probs * draws)


def test_d1_wait_probability_is_the_mm1_load():
    # d = 1: independent M/M/1 queues, and an arrival waits iff its server is busy, which by
    # PASTA has probability ρ.
    rho = 0.7
    r = simulate_occupancy(lam=rho, N=50, d=1, horizon=5.0e4, warmup=1000, seed=21)
    hw = half_width(*r.p_wait_ci)
    assert 0 < hw < 0.01
    assert abs(r.p_wait - rho) <= widen(1) * hw, (r.p_wait, rho, hw)
    # Arrivals are Poisson of rate λN over the time after the warm-up used: within 5 sd.
    assert r.warmup_used >= 1000
    expected = rho * 50 * (r.horizon - r.warmup_used)
    assert abs(r.arrivals - expected) < 5 * math.sqrt(expected)


@pytest.mark.parametrize(
    ("N", "d", "replace", "cap"),
    [(2, 2, False, 60), (3, 3, False, 20), (3, 2, False, 20), (3, 2, True, 20)],
    ids=["JSQ-N2", "JSQ-N3", "SQ2of3-noreplace", "SQ2of3-replace"],
)
def test_small_n_wait_probability_matches_the_exact_labelled_chain(N, d, replace, cap):
    # For JSQ (d = N without replacement) a job waits iff all N servers are busy.
    lam = 0.7
    exact = exact_wait_probability(N, d, replace, lam, cap)
    r = simulate_occupancy(
        lam=lam, N=N, d=d, replace=replace, horizon=3.0e5, warmup=100, seed=40 + N + d
    )
    hw = half_width(*r.p_wait_ci)
    assert 0 < hw < 0.02 * exact
    assert abs(r.p_wait - exact) <= widen(1) * hw, (r.p_wait, exact, hw)


def test_wait_probability_schemes_differ_at_small_n():
    # The p_wait test above can tell the sampling schemes apart (difference >> intervals).
    with_r = exact_wait_probability(3, 2, True, 0.7, 20)
    without = exact_wait_probability(3, 2, False, 0.7, 20)
    assert with_r - without > 0.05


def test_sampling_schemes_really_differ_at_small_n():
    # Guards the previous test against a kernel that ignores ``replace``: at N = 3, d = 2
    # the exact mean numbers of jobs differ by far more than the simulation's precision.
    with_r = exact_labelled_ctmc(3, 2, True, 0.7, 20)[1:].sum()
    without = exact_labelled_ctmc(3, 2, False, 0.7, 20)[1:].sum()
    assert with_r - without > 0.05


def test_power_of_two_at_n1000_is_close_to_the_mean_field_fixed_point():
    rho, d, N = 0.9, 2, 1000
    r = simulate_occupancy(lam=rho, N=N, d=d, horizon=2.0e4, warmup=1000, seed=4)
    levels = range(1, 4)
    f = widen(len(levels))
    # Bias allowance 1/N: the refined mean field (Gast & Van Houdt 2017) gives
    # E[u_k] − u_k ≈ V_k / N with V_1 = 0, V_2 ≈ 0.13, V_3 ≈ 0.66 here (and a 2e5-long run of
    # this simulator measured 0.16, 0.67), so |V_k| <= 1 for k <= 3.
    bias = 1.0 / N
    for k in levels:
        cf = rho ** ((d**k - 1) / (d - 1))
        hw = half_width(r.u_ci_low[0][k], r.u_ci_high[0][k])
        assert 0 < hw < 0.005
        assert abs(r.u[0][k] - cf) <= f * hw + bias, (k, r.u[0][k], cf, hw)
    # Doubly exponential decay: far below the d = 1 tail already at k = 4.
    assert r.u[0][4] < 0.5 * rho**4


def test_power_of_two_wait_probability_at_n1000_is_close_to_rho_squared():
    # With replacement an arrival waits iff both draws are busy: p_wait = E[(Q_1/N)^2]. As
    # E[Q_1/N] = ρ exactly (throughput), p_wait − ρ² = Var(Q_1/N) ≥ 0, of order 1/N (mean-field
    # fluctuations of Q_1 are O(√N); d = 1 would give ρ(1 − ρ)/N); allowance 1/N.
    rho, N = 0.9, 1000
    r = simulate_occupancy(lam=rho, N=N, d=2, horizon=5.0e3, warmup=500, seed=22)
    hw = half_width(*r.p_wait_ci)
    assert 0 < hw < 0.005
    assert abs(r.p_wait - rho**2) <= widen(1) * hw + 1.0 / N, (r.p_wait, rho**2, hw)


def test_jsq_at_large_n_keeps_almost_no_queue():
    # d = N without replacement is JSQ: with N = 500 at load 0.9 almost every job finds an
    # idle server (fluid limit u_1 = λ, u_2 = 0; at this N, 50 ≈ 2.2√N idle servers on
    # average leave a small Halfin–Whitt queue), against u_2 ≈ 0.73 for d = 2.
    r = simulate_occupancy(lam=0.9, N=500, d=500, replace=False, horizon=200, warmup=20, seed=5)
    assert abs(r.u[0][1] - 0.9) < 0.01
    assert r.u[0][2] < 0.01


# ---------------------------------------------------------------- contract


def small_run(**kw) -> OccupancySimResult:
    args = {"lam": 0.8, "N": 20, "d": 2, "horizon": 300.0, "warmup": 30.0, "seed": 9}
    args.update(kw)
    return simulate_occupancy(**args)


def test_littles_law_links_sojourn_and_jobs():
    r = small_run()
    assert r.mean_sojourn * r.lam == pytest.approx(r.mean_jobs, rel=1e-12)
    assert r.mean_sojourn_ci[0] * r.lam == pytest.approx(r.mean_jobs_ci[0], rel=1e-12)
    assert r.mean_jobs == pytest.approx(r.u_all[1:].sum(), rel=1e-12)


def test_same_seed_is_bit_identical_and_different_seeds_differ():
    a, b, c = small_run(seed=9), small_run(seed=9), small_run(seed=10)
    assert a.events == b.events and a.events_total == b.events_total
    assert a.mean_jobs == b.mean_jobs
    for x, y in zip(a.u + a.u_ci_low + a.u_ci_high, b.u + b.u_ci_low + b.u_ci_high, strict=True):
        assert np.array_equal(x, y)
    assert a.mean_jobs != c.mean_jobs
    seq = stream(9, "fig", 1)
    s1, s2 = small_run(seed=seq), small_run(seed=stream(9, "fig", 1))
    assert s1.mean_jobs == s2.mean_jobs and s1.spawn_key == seq.spawn_key and s1.seed == 9
    assert s1.mean_jobs != a.mean_jobs


def test_level_reallocation_does_not_change_the_path(monkeypatch):
    # The same run with arrays starting at 2 levels (reallocated many times) must be
    # bit-identical to the default: growth draws no random numbers and loses no area.
    kw = {"lam": 0.95, "N": 10, "d": 2, "horizon": 3000.0, "warmup": 100.0, "seed": 12}
    ref = simulate_occupancy(**kw)
    monkeypatch.setattr(occupancy, "_INITIAL_LEVELS", 2)
    grown = simulate_occupancy(**kw)
    assert len(ref.u[0]) > 4
    assert grown.events == ref.events
    assert np.array_equal(grown.u[0], ref.u[0])
    assert np.array_equal(grown.u_ci_high[0], ref.u_ci_high[0])


def test_queues_longer_than_the_initial_levels_are_kept():
    r = simulate_occupancy(lam=0.97, N=1, d=1, horizon=2.0e4, warmup=0.0, seed=6)
    assert len(r.u[0]) > occupancy._INITIAL_LEVELS + 1
    assert np.all(np.diff(r.u[0]) <= 0) and r.u[0][-1] > 0


def test_reaching_max_levels_raises_unstable():
    with pytest.raises(UnstableError, match="max_levels"):
        simulate_occupancy(lam=0.99, N=1, d=1, horizon=1.0e6, warmup=0.0, seed=1, max_levels=5)


def test_time_averages_are_consistent():
    r = small_run(gamma=(0.25, 0.75), capacity=(1.0, 0.5), lam=0.5)
    for j in range(2):
        assert r.u[j][0] == 1.0
        assert np.all(np.diff(r.u[j]) <= 0)
        assert np.all(r.u_ci_low[j] <= r.u[j]) and np.all(r.u[j] <= r.u_ci_high[j])
        assert len(r.u[j]) == len(r.u_all) == len(r.u_ci_low[j])
    assert np.allclose(r.u_all, 0.25 * r.u[0] + 0.75 * r.u[1])
    assert max(r.u[0][-1], r.u[1][-1]) > 0  # trailing zero levels were trimmed
    # Throughput: the busy fraction times the service rates equals the arrival rate.
    served = 0.25 * r.u[0][1] * 1.0 + 0.75 * r.u[1][1] * 0.5
    assert served == pytest.approx(0.5, rel=0.05)


def test_to_dict_is_json_with_the_documented_keys():
    r = small_run(gamma=(0.5, 0.5), capacity=(1.0, 2.0))
    d = json.loads(json.dumps(r.to_dict()))
    for key in ("u", "mean_jobs", "mean_sojourn", "ci", "N", "seed", "events", "events_per_second"):
        assert key in d
    assert len(d["u"]) == 2 and d["u"][1] == r.u[1].tolist()
    low, high = d["ci"]["u"]
    assert low[1] == r.u_ci_low[1].tolist() and high[0] == r.u_ci_high[0].tolist()
    assert d["ci"]["mean_jobs"] == list(r.mean_jobs_ci)
    assert d["ci"]["mean_sojourn"] == list(r.mean_sojourn_ci)
    assert d["seed"] == 9 and d["N"] == 20 and d["events"] == r.events
    assert d["p_wait"] == r.p_wait and d["ci"]["p_wait"] == list(r.p_wait_ci)
    assert d["arrivals"] == r.arrivals


def test_wait_probability_is_an_arrival_average_with_a_batch_interval():
    r = small_run()
    assert isinstance(r.arrivals, int) and 0 < r.arrivals < r.events
    assert r.p_wait_ci[0] < r.p_wait < r.p_wait_ci[1]
    # Σ waits / Σ arrivals, centred interval from the per-batch fractions.
    waits, arrivals = np.array([1, 3, 2]), np.array([4, 4, 2])
    p, (low, high) = estimates.arrival_fraction(waits, arrivals)
    assert p == pytest.approx(0.6)
    hw = stats.t.ppf(0.975, 2) * np.std([0.25, 0.75, 1.0], ddof=1) / math.sqrt(3)
    # ... clipped to the range [0, 1] of a probability.
    assert (low, high) == pytest.approx((max(0.6 - hw, 0.0), min(0.6 + hw, 1.0)))
    waits, arrivals = np.array([50, 52, 49, 51]), np.array([100, 100, 100, 100])
    p, (low, high) = estimates.arrival_fraction(waits, arrivals)
    assert p == pytest.approx(0.505)
    assert 0.0 < low < p < high < 1.0
    # A batch without arrivals has no fraction: the interval is undefined, not invented.
    p, ci = estimates.arrival_fraction(np.array([1, 0]), np.array([2, 0]))
    assert p == 0.5 and all(math.isnan(x) for x in ci)


def test_initial_state_is_used():
    empty = np.array([[20]])
    assert small_run(initial=empty).mean_jobs == small_run().mean_jobs
    loaded = np.zeros((1, 11), dtype=int)
    loaded[0, 10] = 20  # every server starts with 10 jobs
    r = simulate_occupancy(lam=0.5, N=20, d=2, horizon=2.0, warmup=0.0, seed=1, initial=loaded)
    assert r.mean_jobs > 5
    with pytest.raises(ConfigError, match="initial"):
        small_run(initial=np.array([[19]]))


def test_progress_bar_goes_to_stderr(capsys):
    small_run(progress=True, batches=4, extend=0)  # no doubling: the bar's total is the run
    captured = capsys.readouterr()
    assert captured.out == ""
    # One tick per micro-batch (the kernel returns after each; see lbrepro.sim.runlength).
    assert "1280/1280" in captured.err


def test_unstable_load_is_refused_before_simulating():
    with pytest.raises(UnstableError, match=r"load .*capacity"):
        simulate_occupancy(lam=1.0, N=10, d=2, horizon=1e9, warmup=0, seed=1)
    with pytest.raises(UnstableError):
        # capacity 0.5·1 + 0.5·2 = 1.5
        simulate_occupancy(
            lam=1.6, N=10, d=2, gamma=(0.5, 0.5), capacity=(1, 2), horizon=1e9, warmup=0, seed=1
        )


@pytest.mark.parametrize(
    ("override", "key"),
    [
        ({"lam": 0.0}, "lam"),
        ({"lam": -1.0}, "lam"),
        ({"lam": math.nan}, "lam"),
        ({"mu": 0.0}, "mu"),
        ({"N": 0}, "N"),
        ({"N": 2.5}, "N"),
        ({"d": 0}, "d"),
        ({"d": 1.5}, "d"),
        ({"d": 21, "replace": False}, "d"),
        ({"horizon": 30.0}, "horizon"),
        ({"warmup": -1.0}, "warmup"),
        ({"batches": 1}, "batches"),
        ({"capacity": (0.0,)}, "capacity"),
        ({"capacity": (1.0, 1.0)}, "capacity"),
        ({"gamma": (0.5, 0.4), "capacity": (1.0, 1.0)}, "gamma"),
        ({"gamma": (1.2, -0.2), "capacity": (1.0, 1.0)}, "gamma"),
        ({"gamma": (0.33, 0.67), "capacity": (1.0, 1.0)}, "gamma"),
        ({"max_levels": 1}, "max_levels"),
        ({"replace": "no"}, "replace"),
        ({"seed": -3}, "seed"),
    ],
)
def test_bad_arguments_raise_config_error_naming_them(override, key):
    with pytest.raises(ConfigError) as info:
        small_run(**override)
    assert info.value.key == key
    assert str(info.value).startswith(key)


def test_d_larger_than_n_is_fine_with_replacement():
    r = small_run(N=3, d=5, replace=True)
    assert r.d == 5 and r.u[0][1] == pytest.approx(0.8, abs=0.2)


@pytest.mark.parametrize("replace", [True, False])
def test_one_type_fast_path_follows_the_general_loop(replace):
    # Chaos accumulators draw no random number but route one-type runs through the general
    # event loop: the fast path must give the same path, hence the same numbers, bit for bit.
    kw = {"lam": 0.9, "N": 30, "d": 3, "horizon": 400.0, "warmup": 20.0, "seed": 4}
    fast = simulate_occupancy(replace=replace, **kw)
    general = simulate_occupancy(replace=replace, chaos=True, **kw)
    assert fast.events_total == general.events_total
    assert np.array_equal(fast.u[0], general.u[0]) and fast.p_wait == general.p_wait


@pytest.mark.parametrize("top", [3, 16, 17, 40, 300])
def test_level_search_finds_the_last_level_meeting_the_threshold(top):
    # Both branches (counting over few levels, galloping over many) against a plain scan.
    rng = np.random.default_rng(top)
    for _ in range(200):
        row = np.sort(rng.integers(1, 1000, size=top + 1))[::-1].copy()
        row = np.append(row, 0)
        lo = int(rng.integers(0, 2))
        threshold = float(rng.uniform(0.5, row[lo]))
        expected = max(k for k in range(lo, top + 2) if row[k] >= threshold)
        assert occupancy_kernel.last_level_at_least(row, threshold, lo, top) == expected


def test_relaxation_time_is_the_mm1_one_scaled_by_the_service_variability():
    # M/M/1: 1/(μ(1 − √ρ)²); at ρ = 0.99 about 4·10⁴ mean service times.
    assert relaxation_time(0.99) == pytest.approx(1 / (1 - 0.99**0.5) ** 2)
    assert relaxation_time(0.99) == pytest.approx(39_800, rel=1e-3)
    assert relaxation_time(0.5, service_rate=2.0) == pytest.approx(relaxation_time(0.5) / 2)
    # Deterministic service halves it, c_s² = 3 doubles it, infinite variance never relaxes.
    assert relaxation_time(0.9, scv=0.0) == pytest.approx(relaxation_time(0.9) / 2)
    assert relaxation_time(0.9, scv=3.0) == pytest.approx(2 * relaxation_time(0.9))
    assert relaxation_time(0.9, scv=math.inf) == math.inf
    assert relaxation_time(1.0) == math.inf


def test_a_run_short_of_its_relaxation_times_is_not_converged(monkeypatch):
    """M/M/1 at ρ = 0.99 over 4·10⁶ (about 100 relaxation times, < MIN_RELAXATIONS): at this
    seed its batch means pass the independence test (the floor set to 0 shows it), yet the
    run is not converged; a run spanning the relaxation times it needs may be."""
    mm1 = {"lam": 0.99, "N": 1, "d": 1, "horizon": 4e6, "warmup": 1e4, "seed": 6, "extend": 0}
    short = simulate_occupancy(**mm1)
    assert short.horizon - short.warmup_used < MIN_RELAXATIONS * relaxation_time(0.99)
    assert short.converged is False
    assert short.estimate("mean_jobs").converged is False
    monkeypatch.setattr(runlength, "MIN_RELAXATIONS", 0.0)
    assert simulate_occupancy(**mm1).converged is True  # what the batch test alone says
    monkeypatch.undo()
    # ρ = 0.5 on 20 servers: 20 × 5·10³ / 11.7 ≈ 8500 relaxation times.
    long = simulate_occupancy(lam=0.5, N=20, d=1, horizon=5e3, warmup=100, seed=4, extend=0)
    assert 20 * (long.horizon - long.warmup_used) > MIN_RELAXATIONS * relaxation_time(0.5)
    assert long.converged is True
