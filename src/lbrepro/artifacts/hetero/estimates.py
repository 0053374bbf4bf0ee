"""Simulated estimates as the paper's tables hold them, and their signed form for trend tests."""

from __future__ import annotations

from typing import Any

import numpy as np

from lbrepro.core.stats import Estimate


def sim_sojourn_row(sim: Any, seed: np.random.SeedSequence) -> dict[str, Any]:
    """The table row of a simulated mean sojourn time, with its CI and run-length record."""
    return {
        "method": "sim",
        "quantity": "mean_sojourn",
        "value": sim.mean_sojourn,
        "ci_low": sim.mean_sojourn_ci[0],
        "ci_high": sim.mean_sojourn_ci[1],
        "N": sim.N,
        "seed": seed.entropy,
        "batches": sim.batches,
        "horizon": sim.horizon,
        "warmup_used": sim.warmup_used,
        "converged": sim.converged,
    }


def signed(e: Estimate, sign: float, scale: float = 1.0) -> Estimate:
    """``sign·scale·e`` as an estimate (the interval flips with a negative sign)."""
    lo, hi = sorted((sign * scale * e.low, sign * scale * e.high))
    return Estimate(sign * scale * e.mean, lo, hi, scale * e.half_width, e.batches, e.N)
