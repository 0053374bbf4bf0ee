"""Simulated estimates as the paper's tables hold them, and their signed form for trend tests."""

from __future__ import annotations

from typing import Any

import numpy as np

from lbrepro.core.rows import estimate_row
from lbrepro.core.stats import Estimate


def sim_sojourn_row(sim: Any, seed: np.random.SeedSequence) -> dict[str, Any]:
    """The table row of a simulated mean sojourn time, with its CI and run-length record."""
    return {
        "method": "sim",
        "quantity": "mean_sojourn",
        **estimate_row(sim.estimate("mean_sojourn"), seed=seed.entropy),
        "horizon": sim.horizon,
        "warmup_used": sim.warmup_used,
    }


def signed(e: Estimate, sign: float, scale: float = 1.0) -> Estimate:
    """``sign·scale·e`` as an estimate (the interval flips with a negative sign)."""
    lo, hi = sorted((sign * scale * e.low, sign * scale * e.high))
    return Estimate(sign * scale * e.mean, lo, hi, scale * e.half_width, e.batches, e.N)


def busy_capacity_row(sim: Any, system: Any, seed: np.random.SeedSequence) -> dict[str, Any]:
    """The run's busy capacity Σγ_jC_j·u⁽ʲ⁾₁ / ΣγC, which work conservation makes ρ exactly.

    Its half-width adds the types' weighted half-widths (their CIs are correlated, so the
    worst case, not quadrature). A diagnostic of the run, not part of any claim's family.
    """
    weights = [
        g * c / system.total_capacity for g, c in zip(system.gamma, system.capacity, strict=True)
    ]
    value = sum(w * float(sim.u[j][1]) for j, w in enumerate(weights))
    half = sum(
        w * (float(sim.u_ci_high[j][1]) - float(sim.u_ci_low[j][1])) / 2
        for j, w in enumerate(weights)
    )
    est = sim.derived(value, value - half, value + half)
    return {"method": "sim", "quantity": "busy_capacity", **estimate_row(est, seed=seed.entropy)}


def sim_runs(rows: Any) -> list[str]:
    """The run labels (point ids) of a table's simulated rows, for a claim's ``runs=``."""
    return sorted({str(r["point"]) for r in rows if r.get("method") == "sim" and r.get("point")})
