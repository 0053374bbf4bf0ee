"""Claim views and tallies: one checks.json entry as the page shows it, and the counts.

:func:`claim_view` is the one place an entry becomes what the templates read; a field added
to the checks (a reading of a reconstruction, a statement group, a finding's root cause) is
added there and nowhere else. The tallies count the paper's claims and lbrepro's own checks
apart; a finding (a root cause) counts once however many claims it explains.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from lbrepro.artifacts.registry import Paper
from lbrepro.core.claims import (
    CONSISTENCY,
    DEPENDS,
    DIAGNOSTIC,
    NOT_REPRODUCED,
    REPRODUCED,
    UNDECIDED,
    attribution_of,
)
from lbrepro.report.diff import VERDICT_STATUSES, is_null, status_of
from lbrepro.report.formatting import (
    interval_text,
    is_exact_interval,
    margin_text,
    plural,
    readable,
)

MISSING = "missing"
NO_CLAIMS = "no claims"
NO_PAPER_CLAIMS = "no paper claims"
INVALID_RUN = "invalid run"
DIAGNOSTIC_HELD = "diagnostic held"
DIAGNOSTIC_FAILED = "diagnostic failed"
#: Whose check a claim is when it is not the paper's.
OURS = "lbrepro"
#: A paper claim whose verdict rests on our reconstruction: the readings of what the text
#: leaves open disagree (lbrepro.core.claims.attribute). Counted apart, never the paper's.
RECONSTRUCTION = "reconstruction"
#: Each decision's error probability: one-sided 2.5% per decision at family-wise 95%
#: (lbrepro.core.verdicts), so at most ERROR_RATE × decided verdicts are expected wrong.
ERROR_RATE = 0.025
#: Order in which claims are listed: what a reader must see first comes first.
STATUS_ORDER = {
    NOT_REPRODUCED: 0,
    INVALID_RUN: 1,
    DIAGNOSTIC_FAILED: 2,
    UNDECIDED: 3,
    REPRODUCED: 4,
    CONSISTENCY: 5,
    DIAGNOSTIC_HELD: 6,
}
#: The mark class (colour) of each artifact status in the contents and on badges.
MARKS = {
    REPRODUCED: "pass",
    NOT_REPRODUCED: "fail",
    # An invalid run decides nothing either way: undecided, never a cross.
    INVALID_RUN: "missing",
    DIAGNOSTIC_FAILED: "fail",
    UNDECIDED: "missing",
    MISSING: "missing",
    NO_CLAIMS: "none",
    NO_PAPER_CLAIMS: "none",
    CONSISTENCY: "none",
    DIAGNOSTIC_HELD: "none",
}


def test_view(entry: Mapping[str, Any]) -> dict[str, Any]:
    """The numbers of one test (a claim's or its control's), formatted for a table cell.

    An exact statistic (marked ``exact``, an exact comparison, or an interval [x, x]) is
    shown as its value alone, with no interval.
    """
    exact = (
        entry.get("exact") is True
        or entry.get("tolerance") == "exact"
        or is_exact_interval(entry.get("interval"))
    )
    return {
        "outcome": str(entry.get("outcome") or ""),
        "expected": readable(entry.get("expected")),
        "measured": readable(entry.get("measured")),
        "interval": "" if exact else interval_text(entry.get("interval")),
        "exact": exact,
        "margin": margin_text(entry.get("margin")),
        "tolerance": readable(entry.get("tolerance")) if entry.get("tolerance") else "",
        "details": str(entry.get("details") or ""),
        "needs": str(entry.get("needs") or ""),
    }


def badge_of(status: str, entry: Mapping[str, Any]) -> str:
    """The label a claim's badge shows: its status, refined for diagnostics and invalid runs."""
    if status == DIAGNOSTIC:
        return DIAGNOSTIC_HELD if entry.get("outcome") == REPRODUCED else DIAGNOSTIC_FAILED
    if status == UNDECIDED and entry.get("invalid"):
        return INVALID_RUN
    return status


def claim_view(entry: Mapping[str, Any]) -> dict[str, Any]:
    """One checks.json entry as the template shows it."""
    status = status_of(entry)
    kind = str(entry.get("kind") or "verdict")
    source = str(entry.get("source") or "paper")
    control = entry.get("control")
    if isinstance(control, Mapping):
        control = {
            "claim": str(control.get("claim", "")),
            "distance": str(control.get("distance") or ""),
            **test_view(control),
        }
        # A reproduced claim whose near miss is reproduced too cannot tell them apart.
        control["indistinct"] = control["outcome"] == REPRODUCED and status == UNDECIDED
    else:
        control = None
    verdict = status in VERDICT_STATUSES and kind not in (CONSISTENCY, DIAGNOSTIC)
    attribution = attribution_of(dict(entry))
    side = OURS if source == OURS else RECONSTRUCTION if attribution == DEPENDS else "paper"
    return {
        "claim": str(entry.get("claim", "")),
        **test_view(entry),
        "status": status,
        "badge": badge_of(status, entry),
        "kind": kind,
        "source": source,
        "side": side,
        "attribution": attribution,
        "statement": str(entry.get("statement") or ""),
        # The entry as written: the statement tally (lbrepro.core.tally) reads the contract.
        "entry": entry,
        "verdict": verdict,
        "control": control,
        "reason": str(entry.get("reason") or "") if status == UNDECIDED else "",
        "invalid": str(entry.get("invalid") or ""),
        "finding": str(entry.get("finding") or ""),
        "null": verdict and is_null(entry.get("measured")),
        "looks": looks(entry.get("looks")),
    }


def looks(value: Any) -> int:
    """How often a verdict's decision was taken while its run doubled (1 unless it says)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 1 else 1


def artifact_status(claims: list[dict[str, Any]] | None) -> str:
    """One word for an artifact, from its paper claims only: the worst of their outcomes.

    lbrepro's own checks never colour an artifact; they are counted apart (see
    :func:`count_claims`). Only a paper claim not reproduced marks an artifact ✗; an invalid
    run decides nothing either way and ranks before a plain undecided, marked ?.
    """
    if claims is None:
        return MISSING
    if not claims:
        return NO_CLAIMS
    badges = [c["badge"] for c in claims if c["verdict"] and c["side"] == "paper"]
    if not badges:
        return NO_PAPER_CLAIMS
    return min(badges, key=STATUS_ORDER.__getitem__)


def tally(claims: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """Verdicts per outcome, and how many root causes the failures come from."""
    failed = [c for c in claims if c["status"] == NOT_REPRODUCED]
    causes = {c["finding"] for c in failed if c["finding"]}
    reproduced = sum(c["status"] == REPRODUCED for c in claims)
    return {
        "verdicts": len(claims),
        "reproduced": reproduced,
        "not_reproduced": len(failed),
        "findings": len(causes) + sum(not c["finding"] for c in failed),
        "undecided": sum(c["status"] == UNDECIDED for c in claims),
        "invalid": sum(c["badge"] == INVALID_RUN for c in claims),
        "decided": reproduced + len(failed),
        # Each decision errs at most at ERROR_RATE per look at it (a run doubled until its
        # claim was decided was looked at several times): the union bound over looks.
        "looks": sum(c["looks"] for c in claims if c["status"] in (REPRODUCED, NOT_REPRODUCED)),
        "null": sum(c["null"] for c in claims),
    }


def count_claims(claims: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Paper claims and lbrepro's own verdicts counted apart; checks of other kinds beside."""
    verdicts = [c for c in claims if c["verdict"]]
    paper = tally([c for c in verdicts if c["side"] == "paper"])
    ours = tally([c for c in verdicts if c["side"] == OURS])
    reconstruction = tally([c for c in verdicts if c["side"] == RECONSTRUCTION])
    every = (paper, ours, reconstruction)
    decided = sum(t["decided"] for t in every)
    looked = sum(t["looks"] for t in every)
    return {
        "paper": paper,
        "lbrepro": ours,
        "reconstruction": reconstruction,
        "consistency": sum(c["status"] == CONSISTENCY for c in claims),
        "diagnostics": sum(c["status"] == DIAGNOSTIC for c in claims),
        "diagnostics_failed": sum(c["badge"] == DIAGNOSTIC_FAILED for c in claims),
        "without_control": sum(1 for c in verdicts if c["control"] is None),
        "null": sum(t["null"] for t in every),
        "decided": decided,
        "looks": looked,
        # Each decision errs with probability at most ERROR_RATE per look, so at most this
        # many are expected (a decision with one look, most of them, counts once).
        "expected_false": ERROR_RATE * looked,
        "expected_false_paper": ERROR_RATE * paper["looks"],
    }


def conclusion(counts: Mapping[str, Any], findings: Sequence[Mapping[str, Any]]) -> str:
    """One sentence on what holds of a paper, from its paper claims' counts and findings."""
    t = counts["paper"]
    if not t["verdicts"]:
        extra = counts["lbrepro"]["verdicts"] + counts["consistency"]
        return "No paper claim was decided in this run" + (
            " (only lbrepro's own checks)." if extra else "."
        )
    if t["reproduced"] == t["verdicts"]:
        return f"All {plural(t['verdicts'], 'paper claim')} checked are reproduced."
    verb = "is" if 1 in (t["reproduced"], t["verdicts"]) else "are"
    parts = [f"{t['reproduced']} of {plural(t['verdicts'], 'paper claim')} {verb} reproduced"]
    if t["not_reproduced"]:
        names = [f["id"] for f in findings if f["paper_failures"]]
        named = f" ({', '.join(names)})" if names else ""
        parts.append(
            f"{t['not_reproduced']} not reproduced, from {plural(t['findings'], 'finding')}{named}"
        )
    if t["undecided"]:
        invalid = f", {t['invalid']} of them on an invalid run" if t["invalid"] else ""
        parts.append(f"{t['undecided']} undecided (this run cannot tell{invalid})")
    return "; ".join(parts) + "."


def findings(claims: Sequence[Mapping[str, Any]], paper: Paper) -> list[dict[str, Any]]:
    """Claims grouped by root cause (``finding``), described by the paper's ``findings``."""
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for c in claims:
        if c["finding"]:
            groups.setdefault(c["finding"], []).append(c)
    known = list(paper.findings)
    order = sorted(groups, key=lambda f: (known.index(f) if f in known else len(known), f))
    return [
        {
            "id": f,
            "text": paper.findings.get(f, ""),
            "claims": groups[f],
            "paper_failures": sum(
                c["verdict"] and c["side"] == "paper" and c["status"] == NOT_REPRODUCED
                for c in groups[f]
            ),
            "status": min((c["badge"] for c in groups[f]), key=STATUS_ORDER.get),
        }
        for f in order
    ]
