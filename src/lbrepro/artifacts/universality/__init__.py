"""The universality paper (seed 004; docs/models.md §E): JSQ(d(N)) against JSQ.

``universality-fluid`` (:mod:`.fluid`): q₂ against N for fixed and growing d(N).
``universality-diffusion`` (:mod:`.diffusion`): the Halfin–Whitt scale against the JSQ
diffusion limit. ``universality-overhead`` (:mod:`.overhead`): servers sampled per job against
E[T] and P(wait > 0).

All simulations sample the d(N) servers *without* replacement (d(N) = N is JSQ), by the
occupancy-count kernel whose work per event does not depend on d or N.
"""

from __future__ import annotations

from lbrepro.artifacts.registry import Paper
from lbrepro.artifacts.universality import diffusion, fluid, overhead

__all__ = ["PAPER"]

PAPER = Paper(
    "universality",
    "Universality of Power-of-d Load Balancing Schemes",
    "D. Mukherjee, S. C. Borst, J. S. H. van Leeuwaarden & P. A. Whiting",
    "Mukherjee, Borst, van Leeuwaarden & Whiting, Universality of Power-of-d Load Balancing "
    "Schemes, 2016, doi:10.1145/3003977.3003990 (seed text 004).",
    "JSQ(d(N)) matches JSQ at fluid scale iff d(N) → ∞ and at diffusion scale if "
    "d(N)/(√N log N) → ∞.",
    artifacts=(fluid.ARTIFACT, diffusion.ARTIFACT, overhead.ARTIFACT),
    order=60,
    name="Mukherjee, Borst, van Leeuwaarden & Whiting (2016)",
    url="https://doi.org/10.1145/3003977.3003990",
)
