"""How the affinity claims are judged beyond the shared toolkit: exact verdicts, the
neighbouring-load shift of the controls and the N → ∞ extrapolation from N and N/2."""

from __future__ import annotations

import math
from typing import Any

from lbrepro.core.stats import Estimate
from lbrepro.core.verdicts import Verdict


def exact_verdict(passed: bool, measured: Any, expected: Any, details: str = "") -> Verdict:
    """The verdict of an exact (integer or rational) comparison: no tolerance."""
    return Verdict(bool(passed), measured, expected, "exact", details)


def extrapolate_to_infinity(big: Estimate, small: Estimate) -> Estimate:
    """The N → ∞ value from estimates at N and N/2, assuming an O(1/N) offset (Richardson).

    x_N = x_∞ + c/N + o(1/N) gives x_∞ ≈ 2·x_N − x_{N/2}; the two runs are independent, so its
    half-width is √(4h_N² + h_{N/2}²).
    """
    mean = 2 * float(big.mean) - float(small.mean)
    half = math.hypot(2 * float(big.half_width), float(small.half_width))
    batches = min(b for b in (big.batches, small.batches) if b) if big.batches else 0
    return Estimate(mean, mean - half, mean + half, half, batches)


#: The controls' neighbouring load: the fixed points at λ − LAM_SHIFT must lie farther than the
#: convergence tolerance from where the trajectories end.
LAM_SHIFT = 0.02
