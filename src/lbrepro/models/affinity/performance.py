"""The performance formulas of Figs. 6–7 of the affinity paper: CM(d1) at its fixed point,
JSQ(d1) and random assignment (RA)."""

from __future__ import annotations

import numpy as np

from lbrepro.meanfield.closed_forms import doubly_exponential_tail
from lbrepro.sim.affinity import check_params


def performance(lam: float, mu2: float, mu1: float = 1.0, d1: int = 3) -> dict[str, float]:
    """Waiting jobs per server and waiting times (Figs. 6–7) for CM(d1), JSQ(d1) and RA.

    CM(d1) is evaluated at the fixed point the paper uses: the queueing point for λ > μ2
    (u = 0; a server with i type-I jobs has i waiting jobs: i − 1 type I and the type II),
    and the stable no-queueing point for λ ≤ μ2 (nobody waits). Waiting times by Little's
    law: type I arrive at λ̃ = λ − μ2 x01, type II (immediate switch) at μ2 x01. JSQ(d1) at
    load λ/μ1: P(n ≥ k) = ρ^{(d^k−1)/(d−1)}; RA: M/M/1 at ρ = λ/μ1.
    """
    lam, mu2, mu1, d1, _ = check_params(lam, mu2, mu1, d1)
    rho = lam / mu1
    out: dict[str, float] = {}
    if lam > mu2:
        rp = (lam - mu2) / (mu1 - mu2)
        s = doubly_exponential_tail(rp, d1, 79)  # s_k = P(type-I count ≥ k)
        k = np.arange(80)
        mean_q = float(s[1:].sum())
        second = float(((2 * k[1:] - 1) * s[1:]).sum())
        x01 = 1.0 - rp
        lam_ii = mu2 * x01
        lam_i = lam - lam_ii
        wait_i_jobs = float(s[2:].sum())
        wait_ii_jobs = float(s[1])
        out.update(
            cm_wait_jobs=mean_q,
            cm_wait_var=second - mean_q**2,
            cm_switch_fraction=lam_ii / lam,
            cm_wait_time=mean_q / lam,
            cm_wait_time_I=wait_i_jobs / lam_i,
            cm_wait_time_II=wait_ii_jobs / lam_ii,
        )
    else:
        out.update(
            cm_wait_jobs=0.0,
            cm_wait_var=0.0,
            cm_switch_fraction=float("nan"),
            cm_wait_time=0.0,
            cm_wait_time_I=0.0,
            cm_wait_time_II=0.0,
        )
    u = doubly_exponential_tail(rho, d1, 199)  # P(n ≥ k)
    k = np.arange(200)
    w = u[2:]  # P(waiting ≥ m) = P(n ≥ m + 1), m ≥ 1
    m = k[1:-1]
    jsq_mean = float(w.sum())
    out.update(
        jsq_wait_jobs=jsq_mean,
        jsq_wait_var=float(((2 * m - 1) * w).sum()) - jsq_mean**2,
        jsq_wait_time=jsq_mean / lam,
        ra_wait_jobs=rho**2 / (1 - rho),
        ra_wait_var=rho**2 * (1 + rho - rho**2) / (1 - rho) ** 2,
        ra_wait_time=rho / (mu1 - lam),
    )
    return out
