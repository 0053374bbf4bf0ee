"""The supermarket mean field and refined mean field against independent simulation.

Small N, fixed seeds; tolerances come from the simulations' 95% batch-means intervals.
"""

from __future__ import annotations

import numpy as np

from lbrepro.models import supermarket


def test_tail_at_n1000_matches_closed_form_within_ci():
    lam, d = 0.9, 2
    sim = supermarket.simulate(lam=lam, d=d, N=1000, horizon=6000, warmup=500, seed=11, batches=20)
    cf = supermarket.fixed_point_closed_form(lam, d)
    bias = np.abs(supermarket.refined(lam, d).V) / 1000
    for k in range(1, 5):
        half = (sim.u_all_ci_high[k] - sim.u_all_ci_low[k]) / 2
        # 1.4: Bonferroni over 4 levels (t_{19}(1-0.05/8)/t_{19}(0.975) ≈ 1.33) plus the O(1/N)
        # bias |V_k|/N of the refined mean field (7.5e-3·u_4 at N = 1000).
        assert abs(sim.u_all[k] - cf[k]) <= 1.4 * half + bias[k], (
            k,
            sim.u_all[k],
            cf[k],
            half,
        )


def test_refined_mean_field_removes_the_1_over_n_bias_at_small_n():
    lam, d, N = 0.9, 2, 10
    sim = supermarket.simulate(lam=lam, d=d, N=N, horizon=2.0e5, warmup=1000, seed=5, batches=20)
    rmf = supermarket.refined(lam, d)
    mf_jobs = supermarket.mean_jobs(rmf.u)
    rmf_jobs = mf_jobs + float(np.sum(rmf.V)) / N
    half = (sim.mean_jobs_ci[1] - sim.mean_jobs_ci[0]) / 2
    # The mean field misses by far more than the simulation's uncertainty ...
    assert abs(sim.mean_jobs - mf_jobs) > 5 * half, (sim.mean_jobs, mf_jobs, half)
    # ... and the refined mean field removes most of that error (what remains is O(1/N²)).
    assert abs(sim.mean_jobs - rmf_jobs) < 0.3 * abs(sim.mean_jobs - mf_jobs)
    # The sign of the correction is right: finite N means more jobs than the mean field.
    assert np.sign(rmf_jobs - mf_jobs) == np.sign(sim.mean_jobs - mf_jobs)


def test_rmf_coefficient_matches_simulated_bias_at_moderate_n():
    lam, d, N = 0.7, 2, 50
    sim = supermarket.simulate(lam=lam, d=d, N=N, horizon=1.0e5, warmup=500, seed=8, batches=20)
    rmf = supermarket.refined(lam, d)
    predicted = supermarket.mean_jobs(rmf.u) + float(np.sum(rmf.V)) / N
    low, high = sim.mean_jobs_ci
    half = (high - low) / 2
    assert abs(sim.mean_jobs - predicted) <= 2 * half + 0.2 * abs(np.sum(rmf.V)) / N
