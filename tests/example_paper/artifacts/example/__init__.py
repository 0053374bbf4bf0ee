"""The worked example of docs/adding-a-paper.md: one model, one artifact."""

from lbrepro.artifacts.example import mean_jobs

from lbrepro.artifacts.registry import Paper

PAPER = Paper(
    slug="example",
    title="Random routing: M/M/1 servers (a worked example)",
    authors="lbrepro developers",
    citation="docs/adding-a-paper.md",
    summary="Under random routing every server is an M/M/1 queue: E[jobs] = ρ/(1 − ρ).",
    artifacts=(mean_jobs.ARTIFACT,),
    order=900,
)
