"""What every simulation result offers: each of its estimates as an :class:`Estimate`.

A result holds a scalar estimate ``q`` with its interval ``q_ci = (low, high)``, or an array
``q`` with ``q_ci_low`` / ``q_ci_high`` of the same nesting; :meth:`estimate` returns one of
them with the run's facts (N, seed, batches, converged), which
:func:`lbrepro.core.rows.estimate_row` writes as a table row.
"""

from __future__ import annotations

from typing import Any

from lbrepro.core.stats import Estimate

__all__ = ["EstimatesMixin"]


class EstimatesMixin:
    """``result.estimate("mean_jobs")``, ``result.estimate("u", k)`` (``u`` at j, k for a
    result with several server types): the estimate with its interval and run facts."""

    N: int
    seed: Any
    batches: int
    converged: bool

    def estimate(self, quantity: str, *index: int) -> Estimate:
        """One estimate of this run; the half-width is that of the unclipped side (an
        interval clipped to a fraction's range is asymmetric)."""
        if hasattr(self, f"{quantity}_ci"):
            if index:
                raise TypeError(f"{quantity} is a scalar estimate: no index")
            mean = getattr(self, quantity)
            low, high = getattr(self, f"{quantity}_ci")
        else:
            mean = getattr(self, quantity)
            low, high = getattr(self, f"{quantity}_ci_low"), getattr(self, f"{quantity}_ci_high")
            for i in index:
                mean, low, high = mean[i], low[i], high[i]
        return self.derived(mean, low, high)

    def derived(self, value: float, low: float, high: float) -> Estimate:
        """A value computed from this run's estimates (an affine map, a weighted sum, a
        propagated variance) with the interval it maps to, and the run's facts."""
        return Estimate.from_interval(
            value, low, high, batches=self.batches, N=self.N, seed=self.seed,
            converged=self.converged,
        )  # fmt: skip

    def unreached(self) -> Estimate:
        """A level above every level the run reached: 0 observed, and no spread to speak of
        (a zero-width interval; the verdicts treat such a level as unresolved)."""
        return self.derived(0.0, 0.0, 0.0)
