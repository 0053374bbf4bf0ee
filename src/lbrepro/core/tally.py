"""The count a reader quotes: paper statements, findings once, reconstructions and baseline apart.

A pure function of the checks files' entries (the data contract's dicts) and the papers'
findings; nothing here reads a file or renders anything. The report calls :func:`tally` once
over every paper and shows what it returns.

API::

    tally(checks, findings=None, baseline=("supermarket",)) -> dict

- ``checks``: paper slug → list of ``(artifact id, checks.json entry)`` (entries as written by
  :func:`lbrepro.core.claims.write_checks`; a bare entry with an ``"artifact"`` key also works).
- ``findings``: paper slug → that paper's ``Paper.findings`` (id → :class:`~lbrepro.core.claims.
  Finding` or plain text).
- ``baseline``: slugs that are a baseline (the supermarket model), not a paper: tallied the
  same way but returned under ``"baseline"``, never under ``"papers"`` nor in ``"total"``.

Returns ``{"papers": {slug: Section}, "baseline": {slug: Section}, "total": counts}`` where a
Section is::

    {"statements": {"reproduced": int, "not reproduced": int, "undecided": int},
     "verdicts": [Statement, ...],        # the paper's statements, each with its points
     "findings": [Found, ...],            # findings of the paper, each once
     "unexplained": [Statement, ...],     # not-reproduced statements that name no finding
     "reconstruction": [Statement, ...],  # verdicts that depend on the reconstruction
     "lbrepro": {"reproduced": int, "not reproduced": int, "undecided": int},
     "lbrepro_findings": [Found, ...]}    # findings of lbrepro's own checks, apart

    Statement = {"artifact", "statement", "status", "attribution", "findings": [ids],
                 "points": [{"claim", "status", "measured", "attribution", "readings"}]}
    Found = {"id", "title", "root_cause", "evidence": {artifact: text}, "text",
             "source", "statements": [(artifact, statement)], "claims": int}

``"total"`` sums the papers' ``statements`` and counts ``findings`` and ``reconstruction``.

The rule (docs/methods.md, "Counting by statement"): claims of one artifact sharing a
``statement`` id (or, without one, the same claim text) are one statement. Points whose
readings make them depend on the reconstruction are set apart; over the others the statement
is *reproduced* if every point is, *not reproduced* if any point is, *undecided* otherwise.
A statement all of whose points depend on the reconstruction, or whose other points are not
decidedly not reproduced, is counted under ``reconstruction`` and not in ``statements``.
Only verdicts count (consistency checks and diagnostics never); ``source`` ``paper`` and
``published`` are the paper's, ``lbrepro`` is counted apart.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from lbrepro.core.claims import (
    DEPENDS,
    NOT_REPRODUCED,
    REPRODUCED,
    UNDECIDED,
    VERDICT,
    attribution_of,
    claim_status,
)

__all__ = ["aggregate", "statements", "tally"]

PAPER_SOURCES = ("paper", "published")


def aggregate(statuses: Iterable[str]) -> str:
    """A statement's status from its points': reproduced if every point is, not reproduced if
    any is, undecided otherwise. An empty statement is a bug, never a pass."""
    st = list(statuses)
    if not st:
        raise ValueError("a statement with no points")
    if NOT_REPRODUCED in st:
        return NOT_REPRODUCED
    if all(s == REPRODUCED for s in st):
        return REPRODUCED
    return UNDECIDED


def _point(entry: Mapping[str, Any]) -> dict[str, Any]:
    att = entry.get("attribution")
    return {
        "claim": entry.get("claim", ""),
        "status": claim_status(dict(entry)),
        "measured": entry.get("measured"),
        "attribution": attribution_of(dict(entry)),
        "readings": att.get("readings", []) if isinstance(att, dict) else [],
    }


def statements(entries: Iterable[tuple[str, Mapping[str, Any]]]) -> list[dict[str, Any]]:
    """Group verdict entries ``(artifact, entry)`` into statements, in first-seen order."""
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for artifact, e in entries:
        if e.get("kind", VERDICT) != VERDICT:
            continue
        key = (artifact, str(e.get("statement") or e.get("claim", "")))
        groups.setdefault(key, []).append(e)
    out = []
    for (artifact, sid), members in groups.items():
        points = [_point(e) for e in members]
        kept = [p["status"] for p in points if p["attribution"] != DEPENDS]
        depends = len(kept) < len(points)
        status = aggregate(kept) if kept else DEPENDS
        if depends and status != NOT_REPRODUCED:
            status = DEPENDS
        found = sorted({str(e["finding"]) for e in members if e.get("finding")})
        out.append(
            {
                "artifact": artifact,
                "statement": sid,
                "status": status,
                "attribution": DEPENDS if status == DEPENDS else "",
                "findings": found,
                "points": points,
            }
        )
    return out


def _counts(stmts: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    return {
        s: sum(x["status"] == s for x in stmts) for s in (REPRODUCED, NOT_REPRODUCED, UNDECIDED)
    }


def _describe(fid: str, finding: Any) -> dict[str, Any]:
    if finding is None:
        return {"id": fid, "title": fid, "root_cause": "", "evidence": {}, "text": "", "source": ""}
    if isinstance(finding, str):
        return {"id": fid, "title": fid, "root_cause": finding, "evidence": {}, "text": finding,
                "source": "paper"}  # fmt: skip
    return {
        "id": fid,
        "title": finding.title,
        "root_cause": finding.root_cause,
        "evidence": dict(finding.evidence),
        "text": str(finding),
        "source": finding.source,
    }


def _found(stmts: Sequence[Mapping[str, Any]], known: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each finding once, with the failed statements it explains (known ones first)."""
    by: dict[str, list[Mapping[str, Any]]] = {}
    for s in stmts:
        if s["status"] == NOT_REPRODUCED:
            for f in s["findings"]:
                by.setdefault(f, []).append(s)
    order = [f for f in known if f in by] + sorted(f for f in by if f not in known)
    out = []
    for fid in order:
        d = _describe(fid, known.get(fid))
        d["statements"] = [(s["artifact"], s["statement"]) for s in by[fid]]
        d["claims"] = sum(sum(p["status"] == NOT_REPRODUCED for p in s["points"]) for s in by[fid])
        out.append(d)
    return out


def _section(
    entries: Sequence[tuple[str, Mapping[str, Any]]], known: Mapping[str, Any]
) -> dict[str, Any]:
    paper = [(a, e) for a, e in entries if e.get("source", "paper") in PAPER_SOURCES]
    own = [(a, e) for a, e in entries if e.get("source") == "lbrepro"]
    stmts = statements(paper)
    counted = [s for s in stmts if s["status"] != DEPENDS]
    own_stmts = statements(own)
    return {
        "statements": _counts(counted),
        "verdicts": counted,
        "findings": _found(counted, known),
        "unexplained": [s for s in counted if s["status"] == NOT_REPRODUCED and not s["findings"]],
        "reconstruction": [s for s in stmts if s["status"] == DEPENDS],
        "lbrepro": _counts(own_stmts),
        "lbrepro_findings": _found(own_stmts, known),
    }


def _pairs(items: Iterable[Any]) -> list[tuple[str, Mapping[str, Any]]]:
    out = []
    for it in items:
        if isinstance(it, Mapping):
            out.append((str(it.get("artifact", "")), it))
        else:
            artifact, entry = it
            out.append((str(artifact), entry))
    return out


def tally(
    checks: Mapping[str, Iterable[Any]],
    findings: Mapping[str, Mapping[str, Any]] | None = None,
    baseline: Sequence[str] = ("supermarket",),
) -> dict[str, Any]:
    """Per paper: statements reproduced / not reproduced / undecided, findings with the
    statements they explain, reconstruction-dependent verdicts and lbrepro's own apart; the
    baseline apart from the papers (see the module docstring for the shapes)."""
    findings = findings or {}
    papers, base = {}, {}
    for slug, items in checks.items():
        section = _section(_pairs(items), findings.get(slug, {}))
        (base if slug in baseline else papers)[slug] = section
    total = {s: sum(p["statements"][s] for p in papers.values()) for s in
             (REPRODUCED, NOT_REPRODUCED, UNDECIDED)}  # fmt: skip
    total["findings"] = sum(len(p["findings"]) for p in papers.values())
    total["unexplained"] = sum(len(p["unexplained"]) for p in papers.values())
    total["reconstruction"] = sum(len(p["reconstruction"]) for p in papers.values())
    return {"papers": papers, "baseline": base, "total": total}
