"""The report checks that what it shows is what the run computed.

Every rule records the digest of the file it writes (lbrepro.core.manifest). At render time
:func:`verify_views` checks every table, checks file and figure the report shows against those
records and returns the manifest the provenance section lists (file, digest, status). A checks
file whose bytes differ from its record — edited by hand, by another tool — is not shown as a
result: its artifact gets a note instead ("changed after the run"), so an invented claim or a
verdict turned from 7 to 9 reproduced does not reach the headline; so is the summary of a
changed table, and a changed figure is not shown (a note says why). A file
without a record (an lbrepro older than its record, or a record deleted) is shown and listed as
*unrecorded*.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from lbrepro.artifacts.registry import Artifact
from lbrepro.core.manifest import read_digest, verify

__all__ = ["CHANGED", "MISSING", "UNRECORDED", "VERIFIED", "verify_views"]

VERIFIED = "verified"
CHANGED = "changed after the run"
UNRECORDED = "unrecorded"
MISSING = "missing"


def file_status(path: Path) -> tuple[str, str]:
    """(status, why) of one file against its record."""
    problem = verify(path)
    if problem is None:
        return VERIFIED, ""
    if problem == "missing":
        return MISSING, ""
    if read_digest(path) is None:
        return UNRECORDED, problem
    return CHANGED, problem


def verify_views(
    views: Sequence[dict[str, Any]],
    artifacts: Sequence[Artifact],
    root: Path,
    *,
    missing: str = "missing",
    recount: Callable[[list[Any]], Any] | None = None,
) -> dict[str, Any]:
    """Verify every file of every artifact the report shows; withhold changed checks files.

    ``views`` are the report's artifact views (lbrepro.report.render), changed in place: an
    artifact whose checks file differs from its record loses its claims and gets a note and
    the status ``missing`` (and ``recount([])`` as its counts, when given). Returns the
    manifest: ``files`` (path, digest, status, why) and ``counts`` per status.
    """
    by_id: Mapping[str, dict[str, Any]] = {v["id"]: v for v in views}
    files = []
    for artifact in artifacts:
        for kind, rel in artifact.paths().items():
            path = Path(root) / rel
            status, why = file_status(path)
            record = read_digest(path) if status != MISSING else None
            files.append(
                {
                    "path": rel,
                    "kind": kind,
                    "sha256": (record or {}).get("sha256", "")[:16],
                    "status": status,
                    "why": why,
                }
            )
            view = by_id.get(artifact.id)
            if kind == "checks" and status == CHANGED and view is not None:
                view["claims"] = None
                view["checks_note"] = (
                    f"claim checks {rel} {CHANGED} that wrote them ({why}): not shown; "
                    "rerun the pipeline"
                )
                view["status"] = missing
                if recount is not None and "counts" in view:
                    view["counts"] = recount([])
            if kind in ("png", "svg", "pdf") and status == CHANGED and view is not None:
                figure = view.get("figure") or {}
                if kind in figure:
                    figure[kind]["href"] = None  # not shown: it is not what the run drew
                view["figure_note"] = f"figure {rel} {CHANGED} ({why}): not shown; rerun"
            if kind == "table" and status == CHANGED and view is not None and view["summary"]:
                view["summary"] = None
                view["summary_note"] = f"summary not shown: {rel} {CHANGED} ({why})"
    counts = {s: sum(f["status"] == s for f in files) for s in (VERIFIED, CHANGED, UNRECORDED)}
    return {"files": files, "counts": counts}
