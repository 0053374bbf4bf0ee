"""Badges and numbers that agree with the verdicts: ✗ only for a paper claim not reproduced,
and an exact statistic shown as a value, not as an interval [x, x]."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from lbrepro.core.io import write_json
from lbrepro.report.claim_views import artifact_status, claim_view
from lbrepro.report.formatting import interval_text
from test_report import article, block, make_fake_tree


def entry(outcome: str, source: str = "paper", **extra: Any) -> dict[str, Any]:
    """A checks.json entry as the pipeline writes it."""
    return {
        "claim": f"{outcome} claim of the {source}",
        "outcome": outcome,
        "measured": 0.5,
        "expected": "0.5",
        "interval": [0.49, 0.51],
        "margin": 0.01,
        "control": None,
        "kind": "verdict",
        "source": source,
    } | extra


def test_an_invalid_run_is_not_a_cross() -> None:
    """Reproduced claims and one on an invalid run: undecided (invalid run), not a failure;
    a failure of lbrepro's own never colours the artifact; a paper failure does."""
    invalid = entry("undecided", invalid="failed diagnostic: work conservation")
    claims = [claim_view(e) for e in (entry("reproduced"), invalid)]
    assert artifact_status(claims) == "invalid run"
    ours = claim_view(entry("not reproduced", source="lbrepro"))
    assert artifact_status([*claims, ours]) == "invalid run"
    failed = claim_view(entry("not reproduced"))
    assert artifact_status([*claims, ours, failed]) == "not reproduced"


def test_exact_statistics_are_values_not_intervals() -> None:
    assert interval_text([0.25, 0.25]) == ""
    assert interval_text([0.25, 0.5]) == "[0.25, 0.5]"
    assert claim_view(entry("reproduced", interval=[0.5, 0.5]))["interval"] == ""
    assert claim_view(entry("reproduced", exact=True))["interval"] == ""
    assert claim_view(entry("reproduced", tolerance="exact"))["exact"] is True
    noisy = claim_view(entry("reproduced"))
    assert noisy["interval"] == "[0.49, 0.51]" and noisy["exact"] is False


def test_rendered_badges_and_exact_cells(tmp_path: Path) -> None:
    """In the page: the artifact's contents mark is ?, no ✗ anywhere for it; an exact value
    reads "exact", never [x, x]."""
    tree = make_fake_tree(tmp_path / "tree")
    checks = [
        entry("reproduced", claim="x_1 is exact", interval=[0.5, 0.5]),
        entry("undecided", claim="on a bad run", invalid="failed diagnostic: equilibrium"),
    ]
    write_json(checks, tree.root / "results/toy/toy-tail.checks.json")
    html = tree.render().read_text(encoding="utf-8")
    toc = block(html, r'<nav class="toc"(.*?)</nav>')
    assert re.search(r'<span class="mark missing" aria-label="invalid run">\?</span>', toc)
    section = article(html, "toy-tail")
    assert "✗" not in section
    assert "[0.5, 0.5]" not in html
    row = block(section, r"(<td class=\"claim\"><math.*?is exact.*?</tr>)")
    assert '<span class="details">exact</span>' in row
