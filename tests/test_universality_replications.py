"""A long universality-diffusion point split into independent replications (separate jobs):
the split, the streams, and the pooled interval's coverage against known means."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from lbrepro.artifacts.universality import diffusion
from lbrepro.artifacts.universality.replications import pool_replications, replications_needed
from lbrepro.core.errors import ConfigError
from lbrepro.core.rng import stream
from lbrepro.core.stats import batch_means_ci

CFG = {
    "beta": 1.0,
    "N": [100, 1000, 10000],
    "d": ["sqrtN", "sqrtNlog2N", "N"],
    "largest_N_for": ["sqrtNlog2N", "N"],
    "batches": 20,
    "horizon": 1000,
    "warmup": 10,
    "sde": {"dt": [0.02, 0.01], "horizon": 100, "warmup": 10, "scheme": "bridge"},
}


def test_replications_needed():
    # 2·10⁵ events per unit time (N = 10⁵), 28 000 measured after a warm-up of 50.
    assert replications_needed(2e5, 28000, 50, None) == 1
    assert replications_needed(2e5, 28000, 50, 1.5e9) == 4  # 4 × 1.41·10⁹
    assert replications_needed(2e5, 7000, 50, 1.5e9) == 1
    # The warm-up counts: 7450 time units are 1.49·10⁹ events, 7460 would be 1.492·10⁹ > …
    assert replications_needed(2e5, 7400, 50, 1.49e9) == 1
    assert replications_needed(2e5, 7410, 50, 1.49e9) == 2
    with pytest.raises(ConfigError) as err:
        replications_needed(2e5, 28000, 50, 1e7)
    assert err.value.key == "job_events"


def test_points_split_only_where_a_job_would_exceed_the_budget():
    # N = 10⁴ takes 2·λ(N)·N·T = 2·0.99·10⁴·1000 ≈ 2·10⁷ events: split in 3 at 8·10⁶.
    points = diffusion.points(CFG | {"job_events": 8e6})
    assert "dN-N10000" not in points and "dsqrtN-N1000" in points
    reps = [points[f"dN-N10000-r{i}"] for i in (1, 2, 3)]
    assert "dN-N10000-r4" not in points
    assert [p["replication"] for p in reps] == [1, 2, 3]
    # Each replication measures a third of the horizon after its own full warm-up.
    assert all(p["horizon"] - p["warmup"] == pytest.approx(1000 / 3) for p in reps)
    assert all(p["warmup"] == 10 for p in reps)
    # Every job of the sweep, warm-up included, fits the budget (unsplit ones too).
    rates = {N: diffusion.events_per_time(N, 1.0) for N in CFG["N"]}
    assert all(
        rates[p["N"]] * p["horizon"] <= 8e6 and p["job_events"] == 8e6
        for k, p in points.items()
        if k != "sde"
    )
    # Without a budget nothing is split (the quick and the earlier configs).
    assert "dN-N10000" in diffusion.points(CFG)
    # Separate point ids: separate streams of the one seed scheme.
    seeds = {
        stream(1, "universality-diffusion", f"dN-N10000-r{i}").generate_state(2)[0]
        for i in (1, 2, 3)
    }
    assert len(seeds) == 3


def test_replications_are_tagged_in_their_rows():
    p = {"beta": 1.0, "family": "N", "N": 100, "horizon": 60.0, "warmup": 10.0, "batches": 20}
    rows = diffusion.compute(p | {"replication": 2}, stream(3, "universality-diffusion", "r2"))
    assert {r["replication"] for r in rows} == {2}
    assert all("replication" not in r for r in diffusion.compute(p, stream(3, "x", "y")))


def replication_row(batch_means: np.ndarray, **extra) -> dict:
    """A simulated row of one replication, its interval from its own batch means."""
    est = batch_means_ci(batch_means)
    return {
        "method": "sim",
        "family": "N",
        "N": 100000,
        "quantity": "q2",
        "value": est.mean,
        "ci_low": est.low,
        "ci_high": est.high,
        "batches": est.batches,
    } | extra


def test_pooled_interval_of_equal_replications():
    """R replications with the same half-width h and b batches pool to ≈ h/√R."""
    rows = [
        {"method": "sim", "family": "N", "N": 10, "quantity": "q2", "replication": i}
        | {"value": v, "ci_low": v - 0.1, "ci_high": v + 0.1, "batches": 40, "point": f"r{i}"}
        for i, v in enumerate((1.0, 1.2, 1.1, 0.9), start=1)
    ]
    other = {"method": "sde", "quantity": "q2", "value": 0.8, "ci_low": 0.7, "ci_high": 0.9}
    pooled = pool_replications([other, *rows])
    assert pooled[0] == other
    (row,) = pooled[1:]
    assert row["value"] == pytest.approx(1.05)
    se = 0.1 / stats.t.ppf(0.975, 39) / 2  # √(4 se_i²)/4
    dof = 4 * 39  # equal variances: Welch–Satterthwaite gives Σ(b_i − 1)
    half = stats.t.ppf(0.975, dof) * se
    assert (row["ci_high"] - row["ci_low"]) / 2 == pytest.approx(half)
    assert row["batches"] == 160 and row["replications"] == 4
    assert "replication" not in row and "point" not in row


def test_pooled_interval_covers_the_true_mean():
    """Coverage of the pooled 95% interval over 2000 sets of 4 replications (known mean 0).

    Replications of unequal precision (σ = 1, 1, 2, 3) and unequal batch counts (20, 40, 20,
    30): the Welch–Satterthwaite interval must still cover about 95% of the time.
    """
    rng = np.random.default_rng(14)
    sigmas, batches = (1.0, 1.0, 2.0, 3.0), (20, 40, 20, 30)
    trials, covered = 2000, 0
    for _ in range(trials):
        rows = [
            replication_row(rng.normal(0.0, s, size=b), replication=i)
            for i, (s, b) in enumerate(zip(sigmas, batches, strict=True), start=1)
        ]
        (row,) = pool_replications(rows)
        covered += row["ci_low"] <= 0.0 <= row["ci_high"]
    # Binomial(2000, 0.95) lies within ±1.5 points with probability > 0.997.
    assert abs(covered / trials - 0.95) < 0.015, covered / trials
