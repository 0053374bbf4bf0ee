"""The supermarket model (docs/models.md §S): JSQ(d), the baseline every other paper builds on.

``supermarket-tail`` (:mod:`.tail`) shows the doubly exponential tails, ``supermarket-accuracy``
(:mod:`.accuracy`) the finite-N error of the mean field and the refined mean field. The tail
verdicts (:mod:`lbrepro.judging.tails`) are shared with the general-service paper.
"""

from __future__ import annotations

from lbrepro.artifacts.registry import Paper
from lbrepro.artifacts.supermarket import accuracy, tail

__all__ = ["PAPER"]

PAPER = Paper(
    slug="supermarket",
    title="The supermarket model: JSQ(d), the power of d choices",
    authors="Mitzenmacher (1996/2001); Vvedenskaya, Dobrushin & Karpelevich (1996)",
    citation=(
        "M. Mitzenmacher, The power of two choices in randomized load balancing, IEEE TPDS "
        "12(10), 2001; N. D. Vvedenskaya, R. L. Dobrushin, F. I. Karpelevich, Queueing "
        "system with selection of the shortest of two queues, Probl. Inf. Transm. 32, 1996."
    ),
    summary=(
        "The baseline every paper builds on: with d ≥ 2 random choices the fraction of "
        "servers with at least k jobs decays doubly exponentially, and the mean field is "
        "exact as N → ∞ with an O(1/N) error that the refined mean field (Gast & Van Houdt "
        "2017) corrects."
    ),
    artifacts=(tail.ARTIFACT, accuracy.ARTIFACT),
    order=10,
    baseline=True,
    url="https://doi.org/10.1109/71.963420",
    name="Mitzenmacher (2001)",
)
