"""``universality-diffusion``: finite-horizon paths of JSQ(d) against the JSQ diffusion limit.

The path simulator against an exact small-N answer (the transient law of the occupancy chain,
by matrix exponential), the SDE's finite-time means against the path simulation at large N,
the equivalence decision on synthetic tables (reproduced, not reproduced, undecided) and the
control rule (d = ⌈√N⌉ used only where its predicted gap is ≥ 3 margins).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.linalg import expm

from lbrepro.artifacts.universality import diffusion
from lbrepro.artifacts.universality.families import d_row
from lbrepro.artifacts.universality.paths import (
    drift_ode,
    jsq_paths,
    limit_ode,
    path_mean,
    sde_paths,
    start_counts,
)
from lbrepro.core.claims import NOT_REPRODUCED, REPRODUCED, UNDECIDED
from lbrepro.core.errors import ConfigError
from lbrepro.core.rng import stream
from lbrepro.core.rows import table_problems
from lbrepro.core.stats import bonferroni_factor
from lbrepro.core.verdicts import EmptyComparisonError
from lbrepro.models import universality as model

TIMES = [0.25, 0.5, 1.0]
START = (2.0, 1.0)
CFG = {
    "beta": 1.0,
    "start": {"idle": 2.0, "q2": 1.0},
    "times": TIMES,
    "N": [1000, 10000, 100000],
    "d": ["sqrtNlog2N", "N"],
    "control": "sqrtN",
    "replications": 100,
    "sde": {"dt": [0.01, 0.005], "scheme": "bridge", "replications": 100},
}


# ------------------------------------------------------------------ the path simulator
def exact_means(N: int, d: int, lam_n: float, counts0: np.ndarray, times, K: int = 10):
    """E[Q₁(t)], E[Q₂(t)] of JSQ(d) (d of N sampled without replacement) by the matrix
    exponential of the chain on sorted queue-length vectors, each queue truncated at K
    (arrivals beyond it dropped)."""
    states = [s for s in itertools.combinations_with_replacement(range(K + 1), N)]
    states = [tuple(sorted(s, reverse=True)) for s in states]
    index = {s: i for i, s in enumerate(states)}
    Q = np.zeros((len(states), len(states)))
    comb = math.comb(N, d)
    for s, i in index.items():
        level = [sum(x >= k for x in s) for k in range(K + 2)]
        # arrival: the least occupancy m among d sampled servers, P(min ≥ k) = C(Q_k,d)/C(N,d)
        for m in range(K):
            p = (math.comb(level[m], d) - math.comb(level[m + 1], d)) / comb
            if p > 0:
                j = s.index(m)
                t = list(s)
                t[j] += 1
                Q[i, index[tuple(sorted(t, reverse=True))]] += lam_n * p
        for j, x in enumerate(s):  # departures: every busy server at rate 1
            if x > 0:
                t = list(s)
                t[j] -= 1
                Q[i, index[tuple(sorted(t, reverse=True))]] += 1.0
        Q[i, i] = -Q[i].sum()
    start = [0] * N
    for k in range(1, len(counts0)):
        for j in range(int(counts0[k])):
            start[j] += 1
    p0 = np.zeros(len(states))
    p0[index[tuple(sorted(start, reverse=True))]] = 1.0
    q1 = np.array([sum(x >= 1 for x in s) for s in states])
    q2 = np.array([sum(x >= 2 for x in s) for s in states])
    out = []
    for t in times:
        pt = p0 @ expm(Q * t)
        out.append((pt @ q1, pt @ q2))
    return np.array(out)


@pytest.mark.parametrize("d", [2, 4])
def test_path_means_match_the_exact_small_chain(d):
    """N = 4 servers (√N = 2, start (1, 0.5): Q₁ = 2, Q₂ = 1): path means within the widened
    interval of the exact transient means (matrix exponential; truncation at 10 jobs is far
    beyond what a unit horizon reaches)."""
    N, lam_n, start = 4, 3.0, (1.0, 0.5)
    counts0 = start_counts(N, *start)
    assert list(counts0[:4]) == [4, 2, 1, 0]
    exact = exact_means(N, d, lam_n, counts0[:4], TIMES)
    scaled, events = jsq_paths(
        N=N, d=d, lam_n=lam_n, start=start, times=TIMES, R=20000, seed=stream(5, "exact", d)
    )
    assert events > 0
    widen = bonferroni_factor(20000, 6, level=0.999) * 1.0
    for i, t in enumerate(TIMES):
        for c, want in enumerate(((N - exact[i, 0]) / 2, exact[i, 1] / 2)):
            est = path_mean(scaled[:, i, c])
            assert abs(est.mean - want) <= widen * est.half_width, (t, c, est, want)


def test_paths_are_a_function_of_the_seed():
    kw = {"N": 100, "d": 10, "lam_n": 90.0, "start": START, "times": TIMES, "R": 50}
    a, _ = jsq_paths(**kw, seed=stream(1, "a"))
    b, _ = jsq_paths(**kw, seed=stream(1, "a"))
    c, _ = jsq_paths(**kw, seed=stream(1, "b"))
    assert np.array_equal(a, b) and not np.array_equal(a, c)


def test_start_that_is_no_state_is_refused():
    with pytest.raises(ConfigError, match=r"^start:"):
        start_counts(100, 20.0, 1.0)


def test_sde_means_match_jsq_paths_at_large_n():
    """At N = 10⁴ (d = N) the path means sit within the two intervals (widened over the six
    comparisons) plus the finite-N remainder 1/√N = 0.01 of the SDE's finite-time means."""
    N = 10_000
    jsq, _ = jsq_paths(
        N=N, d=N, lam_n=N - math.sqrt(N), start=START, times=TIMES, R=6000, seed=stream(7, "j")
    )
    _, sde, _ = sde_paths(
        beta=1.0,
        dts=[0.01, 0.005],
        scheme="bridge",
        start=START,
        times=TIMES,
        R=10000,
        seed=stream(7, "s"),
    )
    widen = bonferroni_factor(6000, 6)
    for i in range(len(TIMES)):
        for c in range(2):
            a, b = path_mean(jsq[:, i, c]), path_mean(sde[:, i, c])
            tol = widen * math.hypot(a.half_width, b.half_width) + 1 / math.sqrt(N)
            assert abs(a.mean - b.mean) <= tol, (TIMES[i], c, a, b)


def test_sde_starts_where_asked_and_its_noise_free_limit_agrees_early():
    per_dt, ext, steps = sde_paths(
        beta=1.0, dts=[0.01, 0.005], scheme="bridge", start=START, times=[0.01], R=2000, seed=3
    )
    assert per_dt.shape == (2, 2000, 1, 2) and steps == 2000 * (1 + 2)
    ode = limit_ode(1.0, START, [0.01])[0]
    assert abs(ext[:, 0, 0].mean() - ode[0]) < 0.02 and abs(ext[:, 0, 1].mean() - ode[1]) < 0.01
    with pytest.raises(ConfigError, match=r"^sde\.dt:"):
        sde_paths(beta=1.0, dts=[0.02, 0.01], scheme="bridge", start=START, times=[0.25], R=2,
                  seed=1)  # fmt: skip


def test_drift_ode_of_the_control_tracks_its_paths():
    """The control's predicted gap comes from the chain's drift ODE: it must track the
    simulated means of d = ⌈√N⌉ (here N = 10³) to a few per cent."""
    N, d = 1000, 32
    lam_n = N - math.sqrt(N)
    sim, _ = jsq_paths(N=N, d=d, lam_n=lam_n, start=START, times=TIMES, R=500, seed=2)
    pred = drift_ode(N, d, lam_n, START, TIMES)
    np.testing.assert_allclose(sim.mean(axis=0), pred, rtol=0.06)


# ------------------------------------------------------------------ synthetic tables
SDE_MEANS = {0.25: (1.58, 0.78), 0.5: (1.34, 0.64), 1.0: (1.13, 0.55)}
LIMIT_ODE = {0.25: (1.58, 0.78), 0.5: (1.30, 0.61), 1.0: (1.00, 0.37)}


def table(sim_of, predicted_of=None, Ns=(1000, 10000, 100000), half=0.01):
    """Rows of a run: SDE means at dt → 0, the noise-free limit, and per (family, N) the path
    means ``sim_of(family, N, t, c)`` (half-width ``half``) with their d(N) rows, the control's
    drift-ODE predictions ``predicted_of(N, t, c)``."""
    rows = []
    for t, means in SDE_MEANS.items():
        for c, q in enumerate(diffusion.QUANTITIES):
            v = means[c]
            rows.append(
                {"method": "sde", "dt": 0.0, "t": t, "quantity": q, "value": v}
                | {"ci_low": v - 0.005, "ci_high": v + 0.005, "batches": 20000}
                | {"seed": 1, "converged": True}
            )
            rows.append(
                {"method": "mf", "family": "limit", "t": t, "quantity": q}
                | {"value": LIMIT_ODE[t][c]}
            )
    for family in ["sqrtNlog2N", "N", "sqrtN"]:
        for N in Ns:
            d = model.d_of_N(family, N)
            control = family == "sqrtN"
            rows.append({"family": family, "N": N, "d": d} | d_row(family, d, control=control))
            for t in TIMES:
                for c, q in enumerate(diffusion.QUANTITIES):
                    v = sim_of(family, N, t, c)
                    rows.append(
                        {"method": "sim", "family": family, "N": N, "d": d, "t": t}
                        | {"quantity": q, "value": v, "ci_low": v - half, "ci_high": v + half}
                        | {"batches": 8000, "seed": 2, "converged": True}
                    )
                    if control:
                        pred = predicted_of(N, t, c) if predicted_of else v
                        rows.append(
                            {"method": "mf", "family": family, "N": N, "t": t, "quantity": q}
                            | {"value": pred}
                        )
    return rows


def converging(family, N, t, c):
    """The claims' families within 1/√N of the limit; ⌈√N⌉ far off (its Q₂/√N grows)."""
    if family == "sqrtN":
        return SDE_MEANS[t][c] + 0.02 * math.sqrt(N)
    return SDE_MEANS[t][c] - 1 / math.sqrt(N)


def claim_of(claims, family):
    (c,) = [c for c in claims if c.claim.startswith(model.family_label(family))]
    return c


def test_reproduced_with_the_control_not_reproduced():
    claims = diffusion.check(table(converging), CFG)
    assert len(claims) == 2
    for c in claims:
        assert c.outcome == REPRODUCED
        assert c.control["outcome"] == NOT_REPRODUCED
        assert "N = 100000" in c.claim and "judged at the largest N" in c.claim
        assert "N = 1000: reproduced" in c.details and "N = 10000: reproduced" in c.details
        assert "dsqrtN-N100000" in c.runs and "sde" in c.runs
    # the margin rule: 10% of |SDE mean|, never below 0.02
    assert diffusion.margin_of(1.13) == pytest.approx(0.113)
    assert diffusion.margin_of(-0.05) == 0.02


def test_not_reproduced_when_the_family_stays_away():
    def away(family, N, t, c):
        if family == "N":
            return SDE_MEANS[t][c] * 1.3  # 3 margins off at every N
        return converging(family, N, t, c)

    claims = diffusion.check(table(away), CFG)
    assert claim_of(claims, "N").outcome == NOT_REPRODUCED
    assert claim_of(claims, "sqrtNlog2N").outcome == REPRODUCED


def test_undecided_when_the_interval_straddles_the_margin():
    def edge(family, N, t, c):
        if family == "N" and t == 1.0 and c == 0:
            return SDE_MEANS[t][c] * 1.1  # exactly one margin off
        return converging(family, N, t, c)

    claims = diffusion.check(table(edge, half=0.03), CFG)
    assert claim_of(claims, "N").outcome == UNDECIDED


def test_only_the_largest_n_decides():
    def late(family, N, t, c):
        if family != "sqrtN" and N < 100000:
            return SDE_MEANS[t][c] * 1.5  # far off at the smaller N: detail only
        return converging(family, N, t, c)

    c = claim_of(diffusion.check(table(late), CFG), "N")
    assert c.outcome == REPRODUCED
    assert "N = 1000: not reproduced" in c.details and "N = 100000: reproduced" in c.details


def test_control_used_at_the_largest_n_where_its_predicted_gap_is_three_margins():
    def predicted(N, t, c):
        # 5 margins off at N ≤ 10⁴, only 1 margin at 10⁵: the control is judged at 10⁴.
        m = diffusion.margin_of(SDE_MEANS[t][c])
        return LIMIT_ODE[t][c] + (m if N == 100000 else 5 * m)

    rows = table(converging, predicted)
    sde = diffusion._sde(rows)
    assert diffusion.predicted_gap(rows, "sqrtN", 10000, sde) == pytest.approx(5)
    assert diffusion.control_point(rows, sde)[0] == 10000
    c = claim_of(diffusion.check(rows, CFG), "N")
    assert "at N = 10000" in c.control["claim"] and "dsqrtN-N10000" in c.runs
    assert c.control["outcome"] == NOT_REPRODUCED


def test_control_that_cannot_be_used_is_said_so_by_design():
    def near(N, t, c):
        return LIMIT_ODE[t][c] + diffusion.margin_of(SDE_MEANS[t][c])  # 1 margin: too close

    c = claim_of(diffusion.check(table(converging, near), CFG), "N")
    assert c.outcome == REPRODUCED
    assert "by design" in c.details and "cannot be used" in c.details
    assert "margins off" in c.control["claim"]
    assert c.control["outcome"] == NOT_REPRODUCED  # the shifted limit is told apart
    assert not any(r.startswith("dsqrtN") for r in c.runs)


def test_empty_table_fails_loudly():
    with pytest.raises(EmptyComparisonError):
        diffusion.check([], CFG)


# ------------------------------------------------------------------ points and config
def test_points_one_per_family_and_n_plus_the_sde():
    pts = diffusion.points(CFG)
    assert set(pts) == {f"d{f}-N{N}" for f in ("sqrtNlog2N", "N", "sqrtN") for N in CFG["N"]} | {
        "sde"
    }
    assert pts["dsqrtN-N1000"]["control"] is True and "control" not in pts["dN-N1000"]
    assert pts["dN-N1000"]["start"] == [2.0, 1.0] and pts["sde"]["times"] == TIMES
    # ≈ (λ(N) + N)·T·R events: 8000 paths at N = 10⁵ are 1.6·10⁹
    big = pts["dN-N100000"] | {"replications": 8000}
    assert diffusion.path_events(big) == pytest.approx(1.6e9, rel=0.01)


@pytest.mark.parametrize(
    ("override", "key"),
    [
        ({"beta": 40.0}, "beta"),
        ({"d": ["sqrtN"], "control": "logN"}, "d"),
        ({"control": "N"}, "control"),
        ({"control": "sqrtNlog2N"}, "control"),
        ({"start": {"idle": 50.0, "q2": 1.0}}, "start"),
        ({"times": [0.25, 0.333]}, "sde.dt"),
        ({"sde": {"dt": [0.03, 0.01], "scheme": "bridge", "replications": 10}}, "sde.dt"),
    ],
)
def test_validation_names_the_key(override, key):
    with pytest.raises(ConfigError) as err:
        diffusion.validate(CFG | override)
    assert err.value.key == key


def test_computed_rows_keep_the_row_contract():
    pts = diffusion.points(CFG | {"N": [100], "replications": 20})
    pts["sde"]["replications"] = 50
    rows = []
    for pid, p in pts.items():
        rows += [
            {"artifact": "universality-diffusion", "point": pid} | r
            for r in diffusion.compute(p, stream(1, "universality-diffusion", pid))
        ]
    assert table_problems(rows, "universality-diffusion") == []
    assert {r["method"] for r in rows} == {"sim", "sde", "cf", "mf"}
    claims = diffusion.check(rows, CFG | {"N": [100]})
    assert len(claims) == 2 and all(c.control for c in claims)
