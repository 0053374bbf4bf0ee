"""An example plugin paper: idle-first routing with d samples (a user's own policy)."""

from lbrepro.artifacts.registry import Paper
from lbrepro_jiq import mean_jobs

PAPER = Paper(
    slug="jiq",
    title="Idle-first routing with d samples (an example plugin)",
    authors="A. Researcher (example)",
    citation="examples/lbrepro-jiq in lbrepro's repository",
    summary=(
        "A policy of one's own, declared by its transitions: the refined mean field predicts "
        "its finite-N mean queue length."
    ),
    artifacts=(mean_jobs.ARTIFACT,),
    order=900,
)
