"""The tidy rows of one N-server simulation, shared by the three universality artifacts."""

from __future__ import annotations

from typing import Any

import numpy as np

from lbrepro.artifacts.registry import Rows

__all__ = ["sim_rows"]


def sim_rows(sim: Any, seed: np.random.SeedSequence, scale: float = 1.0, **extra: Any) -> Rows:
    """Tidy rows of q_1, q_2 (×scale), mean jobs and P(wait) of one simulation."""

    def at(a: np.ndarray, k: int) -> float:
        """Level k of a tail array, 0 beyond its end (trailing zero levels are trimmed)."""
        return float(a[k]) if k < len(a) else 0.0

    common = {"method": "sim", "N": sim.N, "seed": seed.entropy, "batches": sim.batches} | extra
    rows = [
        common
        | {
            "quantity": f"q{k}",
            "value": scale * at(sim.u_all, k),
            "ci_low": scale * at(sim.u_all_ci_low, k),
            "ci_high": scale * at(sim.u_all_ci_high, k),
        }
        for k in (1, 2)
    ]
    rows.append(
        common
        | {
            "quantity": "mean_sojourn",
            "value": sim.mean_sojourn,
            "ci_low": sim.mean_sojourn_ci[0],
            "ci_high": sim.mean_sojourn_ci[1],
        }
    )
    rows.append(
        common
        | {
            "quantity": "p_wait",
            "value": sim.p_wait,
            "ci_low": sim.p_wait_ci[0],
            "ci_high": sim.p_wait_ci[1],
        }
    )
    return rows
