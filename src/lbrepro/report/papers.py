"""The papers as the report names and groups them: one section per paper, the baseline apart.

A paper is named by its authors and year (``Paper.name``, e.g. "Li & Lui (2010)"), never by
its slug. The supermarket model's results are the baseline every paper builds on: they get a
section of their own and a row of their own in the summary, apart from the papers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from lbrepro.artifacts.registry import Paper
from lbrepro.report.claim_views import conclusion, count_claims, findings


def display_name(paper: Paper) -> str:
    """How the report names a paper: its authors and year, else its title, else its slug."""
    return paper.name or paper.title or paper.slug


def paper_sections(
    views: Sequence[Mapping[str, Any]], papers: Mapping[str, Paper]
) -> list[dict[str, Any]]:
    """One section per paper with artifacts in ``views`` (registry order; the baseline first).

    Each section holds its paper, display name, anchor, artifact views, its claims (each
    tagged with its artifact and paper), counts, findings and a one-sentence conclusion.
    An artifact of a paper not in ``papers`` still gets a section, named by its slug.
    """
    known = dict(papers)
    for view in views:
        known.setdefault(view["slug"], Paper(view["slug"], view["slug"], "", "", ""))
    sections = []
    for slug, paper in known.items():
        members = [v for v in views if v["slug"] == slug]
        if not members:
            continue
        claims = [
            {**claim, "artifact": view["id"], "paper": slug}
            for view in members
            for claim in view["claims"] or []
        ]
        counts = count_claims(claims)
        found = findings(claims, paper)
        sections.append(
            {
                "paper": paper,
                "name": display_name(paper),
                "anchor": f"paper-{slug}",
                "baseline": paper.baseline,
                "artifacts": list(members),
                "claims": claims,
                "counts": counts,
                "findings": found,
                "conclusion": conclusion(counts, found),
            }
        )
    return sections
