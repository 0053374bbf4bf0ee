"""The neighbouring load of a control: one rule for every paper.

A claim's near-miss control is often the same prediction at a neighbouring load (or arrival
rate): close enough to be the plausible alternative a reader would confuse it with, far enough
that the data can tell them apart. The step is one constant, so no paper picks its own.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = [
    "MAX_STEPS",
    "NEIGHBOUR",
    "nearest_distinct_load",
    "nearest_distinct_steps",
    "neighbour_load",
]

#: The load step of a neighbouring-load control.
NEIGHBOUR = 0.02
#: The farthest a searched control may move: this many steps.
MAX_STEPS = 5


def neighbour_load(rho: float, steps: int = 1) -> float:
    """The load ``steps`` steps below ``rho`` (above, where that is not a positive load)."""
    offset = steps * NEIGHBOUR
    return rho - offset if rho - offset > 0 else rho + offset


def nearest_distinct_steps(
    distance: Callable[[int], float], at_least: float = 2.0
) -> tuple[int, float]:
    """The fewest steps (of :data:`NEIGHBOUR`, up to :data:`MAX_STEPS`) whose prediction lies
    more than ``at_least`` margins from the claim's (``distance(steps)``, in margins); returns
    (steps, distance). At the last step it is returned whatever its distance (the caller
    states it). A sweep whose control moves every load by the same steps searches this way."""
    for steps in range(1, MAX_STEPS + 1):
        far = distance(steps)
        if far > at_least:
            break
    return steps, far


def nearest_distinct_load(
    rho: float, distance: Callable[[float], float], at_least: float = 2.0
) -> tuple[float, float]:
    """The nearest neighbouring load whose prediction lies more than ``at_least`` margins from
    the claim's (``distance(load)``, in margins), searched outwards step by step
    (:func:`nearest_distinct_steps`); returns (load, distance). A claim that holds then makes
    the control fail, and the control stays the closest alternative that can."""
    steps, far = nearest_distinct_steps(lambda s: distance(neighbour_load(rho, s)), at_least)
    return neighbour_load(rho, steps), far
