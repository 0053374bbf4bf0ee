"""Arithmetic on independent estimates: a scaled estimate, a difference and a distance."""

from __future__ import annotations

import math

from lbrepro.core.stats import Estimate

__all__ = ["difference", "distance", "scaled"]


def scaled(e: Estimate, c: float) -> Estimate:
    """``c`` times an estimate (c > 0): its interval scales with it."""
    return Estimate(
        c * e.mean, c * e.low, c * e.high, c * e.half_width, e.batches, e.N, e.seed, e.converged
    )


def distance(e: Estimate, ref: Estimate) -> Estimate:
    """|e − ref| of two independent estimates, half-widths in quadrature."""
    dist = abs(e.mean - ref.mean)
    half = math.hypot(e.half_width, ref.half_width)
    batches = min((b for b in (e.batches, ref.batches) if b), default=0)
    return Estimate(
        dist, dist - half, dist + half, half, batches, e.N, e.seed, e.converged and ref.converged
    )


def difference(e: Estimate, ref: Estimate) -> Estimate:
    """e − ref of two independent estimates, half-widths in quadrature."""
    diff = e.mean - ref.mean
    half = math.hypot(e.half_width, ref.half_width)
    batches = min((b for b in (e.batches, ref.batches) if b), default=0)
    return Estimate(
        diff, diff - half, diff + half, half, batches, e.N, e.seed, e.converged and ref.converged
    )
