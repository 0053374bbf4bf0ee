"""Batch-means confidence intervals for time averages of simulations.

A long run after warm-up is cut into B equal batches; when the batches are much longer than
the relaxation time their averages are nearly independent and nearly normal, so a Student-t
interval over the B batch means is an honest interval for the stationary mean.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats as _sps

from lbrepro.core.errors import ConfigError

__all__ = ["Estimate", "batch_means_ci"]


@dataclass(frozen=True)
class Estimate:
    """A point estimate with its confidence interval (scalars or equal-shape arrays).

    ``low = mean - half_width`` and ``high = mean + half_width`` elementwise; ``batches`` is
    the number of batch means the interval was built from (0 for an exact value). ``N`` and
    ``seed`` say which system and random stream produced it, where known.
    """

    mean: float | np.ndarray
    low: float | np.ndarray
    high: float | np.ndarray
    half_width: float | np.ndarray
    batches: int
    N: int | None = None
    seed: Any = None

    @classmethod
    def exact(cls, value: float) -> Estimate:
        """A value known exactly (a closed form, a mean field): a zero-width interval."""
        return cls(float(value), float(value), float(value), 0.0, 0)


def batch_means_ci(batch_values: np.ndarray, level: float = 0.95) -> Estimate:
    """Student-t confidence interval over batch means.

    Parameters
    ----------
    batch_values
        Shape ``(B, ...)``: the average of each quantity over each of B equal-length
        batches. Every trailing index is treated separately (elementwise).
    level
        Two-sided confidence level in (0, 1).

    Returns
    -------
    Estimate
        Floats when ``batch_values`` is one-dimensional, arrays of shape ``(...)`` otherwise.
        A quantity equal in every batch gets a zero-width interval.
    """
    x = np.asarray(batch_values, dtype=float)
    if x.ndim == 0:
        raise ConfigError("batches", "batch_values must have a leading batch axis")
    B = x.shape[0]
    if B < 2:
        raise ConfigError("batches", f"need at least 2 batches for an interval, got {B}")
    if not 0.0 < level < 1.0:
        raise ConfigError("level", f"confidence level must lie in (0, 1), got {level}")
    mean = x.mean(axis=0)
    sd = x.std(axis=0, ddof=1)
    quantile = _sps.t.ppf(0.5 + level / 2.0, B - 1)
    half = quantile * sd / np.sqrt(B)
    low = mean - half
    high = mean + half
    if x.ndim == 1:
        return Estimate(float(mean), float(low), float(high), float(half), B)
    return Estimate(mean, low, high, half, B)


def bonferroni_factor(batches: int, comparisons: int, level: float = 0.95) -> float:
    """How much wider a family-wise interval over ``comparisons`` checks is than one interval.

    Claims compare many simulated values with references at once; at a per-check 95% level some
    would fail by chance alone. Widening each batch-means interval by this factor (Bonferroni,
    Student t with ``batches − 1`` degrees of freedom) keeps the family-wise level at 95%.
    """
    alpha = 1.0 - level
    dof = batches - 1
    return float(_sps.t.ppf(1 - alpha / (2 * comparisons), dof) / _sps.t.ppf(1 - alpha / 2, dof))
