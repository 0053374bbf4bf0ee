"""Render ``report/index.html`` from the registry, the results tree and Jinja2 templates.

The report is the pipeline's front page: every claim with its verdict and numbers, every
artifact with its figure, parameters and [reconstruction] notes, then provenance and
runtimes. It reads only files of the data contract, so it renders whatever exists: a figure,
table or checks file that was not produced shows as a visible "missing" note. Links are
relative to the report file, so the report folder plus ``figures/`` and ``results/`` open
offline from disk.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

import jinja2

from lbrepro.artifacts import registry
from lbrepro.artifacts.registry import Artifact, Paper
from lbrepro.core.claims import CONSISTENCY, INCONCLUSIVE, claim_status
from lbrepro.core.io import atomic_write_text, read_json, read_table
from lbrepro.report.manifest import verify_views  # issue 21: digests verified at render
from lbrepro.report.provenance import provenance
from lbrepro.report.runtimes import aggregate, read_benchmarks
from lbrepro.report.sanitize import finalize, read_json_bounded  # issue 21: hostile text

TEMPLATE = "index.html.j2"
#: Rows of an artifact's summary table shown in the report (the CSV holds them all).
MAX_SUMMARY_ROWS = 60

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
MISSING = "missing"
NO_CLAIMS = "no claims"
#: Order in which claims are listed: what a reader must see first comes first.
STATUS_ORDER = {NOT_REPRODUCED: 0, INCONCLUSIVE: 1, REPRODUCED: 2, CONSISTENCY: 3}
#: The measured coverage of the batch-means intervals (bench/bench_coverage.py writes it).
COVERAGE_FILE = Path(__file__).with_name("coverage.json")
#: The coverage record's columns shown in the report, with their headings.
COVERAGE_COLUMNS = {
    "case": "case",
    "reference": "known answer",
    "exact": "value",
    "replications": "replications",
    "coverage": "coverage",
    "coverage_wilson95": "coverage 95% (Wilson)",
    "mean_estimate": "mean estimate",
    "mean_half_width": "mean half-width",
    "mean_warmup_used": "mean warm-up used",
    "mean_batches": "mean batches",
    "converged_fraction": "converged",
}


def fmt(value: Any, max_items: int = 6) -> str:
    """A short human-readable form: floats to 4 significant digits, long lists elided."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "∞" if value > 0 else "−∞"
        return f"{value:.4g}"
    if isinstance(value, Mapping):
        items = [f"{k}: {fmt(v, max_items)}" for k, v in value.items()]
        return "{" + ", ".join(items) + "}"
    if isinstance(value, (list, tuple)):
        shown = [fmt(v, max_items) for v in value]
        if len(shown) > max_items:
            head = shown[: max_items - 2]
            shown = [*head, "…", shown[-1]]
            return "[" + ", ".join(shown) + f"] ({len(value)} items)"
        return "[" + ", ".join(shown) + "]"
    if hasattr(value, "item"):  # NumPy scalars
        return fmt(value.item(), max_items)
    return str(value)


def duration(seconds: float | None) -> str:
    """Seconds as a short readable duration ("0.42 s", "3 min 07 s", "1 h 05 min")."""
    if seconds is None:
        return "—"
    if seconds < 10:
        return f"{seconds:.2f} s"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def _href(target: Path, base: Path) -> str:
    """A URL for ``target`` relative to the folder ``base`` (the report's folder)."""
    try:
        rel = os.path.relpath(os.path.abspath(target), os.path.abspath(base))
    except ValueError:  # different drives on Windows: no relative path exists
        return Path(os.path.abspath(target)).as_uri()
    return quote(Path(rel).as_posix())


def _flatten(section: Any, prefix: str = "") -> list[tuple[str, str]]:
    """A config section as (dotted key, formatted value) pairs for a definition table."""
    if not isinstance(section, Mapping):
        return [(prefix or "value", fmt(section, max_items=12))]
    pairs: list[tuple[str, str]] = []
    for key, value in section.items():
        name = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, Mapping) and value:
            pairs.extend(_flatten(value, name))
        else:
            pairs.append((name, fmt(value, max_items=12)))
    return pairs


def _claims(path: Path, shown: str) -> tuple[list[dict[str, Any]] | None, str]:
    """The checks.json entries (None if absent or unreadable) and a note saying why.

    ``shown`` is the path as the note names it (relative to the results root).
    """
    if not path.is_file():
        return None, f"claim checks not produced (expected {shown})"
    try:
        data = read_json_bounded(path)
    except (OSError, UnicodeDecodeError, ValueError) as err:
        return None, f"claim checks unreadable ({shown}): {err}"
    if not isinstance(data, list) or not all(isinstance(c, Mapping) for c in data):
        return None, f"claim checks malformed ({shown}): expected a list of objects"
    claims = []
    for entry in data:
        passed = entry.get("passed") is True
        status = claim_status({**entry, "passed": passed})
        control = entry.get("control")
        if isinstance(control, Mapping):
            control = {
                "claim": str(control.get("claim", "")),
                "measured": fmt(control.get("measured")),
                "expected": fmt(control.get("expected")),
                "passed": control.get("passed") is True,
                "details": str(control.get("details") or ""),
            }
        else:
            control = None
        claims.append(
            {
                "claim": str(entry.get("claim", "")),
                "expected": fmt(entry.get("expected")),
                "measured": fmt(entry.get("measured")),
                "tolerance": fmt(entry.get("tolerance")),
                "passed": passed,
                "status": status,
                "verdict": status,
                "kind": str(entry.get("kind") or "verdict"),
                "control": control,
                "details": str(entry.get("details") or ""),
                "source": str(entry.get("source") or ""),
            }
        )
    return claims, ""


def _artifact_status(claims: list[dict[str, Any]] | None) -> str:
    """One word for an artifact: the worst of its claims' outcomes (consistency aside)."""
    if claims is None:
        return MISSING
    verdicts = [c["status"] for c in claims if c["status"] != CONSISTENCY]
    if not verdicts:
        return CONSISTENCY if claims else NO_CLAIMS
    return min(verdicts, key=STATUS_ORDER.__getitem__)


def _count(claims: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """Claims per outcome; consistency checks are counted apart from the verdicts."""
    statuses = [c["status"] for c in claims]
    return {
        "reproduced": statuses.count(REPRODUCED),
        "not_reproduced": statuses.count(NOT_REPRODUCED),
        "inconclusive": statuses.count(INCONCLUSIVE),
        "consistency": statuses.count(CONSISTENCY),
        "without_control": sum(
            1 for c in claims if c["status"] != CONSISTENCY and c["control"] is None
        ),
    }


def coverage_table(path: Path = COVERAGE_FILE) -> dict[str, Any] | None:
    """The measured coverage of nominal 95% intervals on known answers, if recorded.

    ``bench/bench_coverage.py`` writes the record (one entry per known-answer case); the report
    shows a fixed choice of its columns.
    """
    if not path.is_file():
        return None
    try:
        data = read_json(path)
    except (OSError, ValueError):
        return None
    if not isinstance(data, Mapping):
        return None
    cases = [c for c in data.get("cases") or data.get("rows") or [] if isinstance(c, Mapping)]
    columns = [c for c in COVERAGE_COLUMNS if any(c in case for case in cases)]
    return {
        "date": str(data.get("date") or ""),
        "commit": str(data.get("commit") or "")[:10],
        "method": str(data.get("method") or ""),
        "produced_by": str(data.get("produced_by") or ""),
        "required": data.get("required"),
        "columns": [COVERAGE_COLUMNS[c] for c in columns],
        "rows": [[fmt(case.get(c)) for c in columns] for case in cases],
    }


def _summary(artifact: Artifact, table: Path) -> tuple[dict[str, Any] | None, str]:
    """The artifact's summary rows as a formatted table, or None and a note."""
    if artifact.summary is None:
        return None, ""
    if not table.is_file():
        return None, "summary table not available: the results table was not produced"
    try:
        rows = artifact.summary(read_table(table))
    except Exception as err:  # a bad table must not take the whole report down
        return None, f"summary table could not be computed: {type(err).__name__}: {err}"
    columns: dict[str, None] = {}
    for row in rows:
        columns.update(dict.fromkeys(row))
    shown = rows[:MAX_SUMMARY_ROWS]
    # Columns empty in every shown row (e.g. ci_low of non-simulation rows) only add noise.
    columns = {c: None for c in columns if any(row.get(c) is not None for row in shown)}
    return {
        "columns": list(columns),
        "rows": [[fmt(row.get(c)) for c in columns] for row in shown],
        "omitted": len(rows) - len(shown),
    }, ""


def _artifact_view(
    artifact: Artifact, config: Mapping[str, Any], root: Path, out_dir: Path
) -> dict[str, Any]:
    """Everything the template shows about one artifact."""
    rel_paths = artifact.paths()
    paths = {key: root / rel for key, rel in rel_paths.items()}

    def link(key: str) -> dict[str, Any]:
        path = paths[key]
        return {"path": rel_paths[key], "href": _href(path, out_dir) if path.is_file() else None}

    figure = None
    if artifact.has_figure:
        figure = {"png": link("png"), "svg": link("svg")}
        pdf = paths["png"].with_suffix(".pdf")
        figure["pdf"] = _href(pdf, out_dir) if pdf.is_file() else None
    claims, checks_note = _claims(paths["checks"], rel_paths["checks"])
    summary, summary_note = _summary(artifact, paths["table"])
    status = _artifact_status(claims)
    return {
        "id": artifact.id,
        "slug": artifact.slug,
        "title": artifact.title,
        "kind": artifact.kind,
        "methods": list(artifact.methods),
        "caption": artifact.caption,
        "reconstructions": list(artifact.reconstructions),
        "figure": figure,
        "table": link("table"),
        "checks": link("checks"),
        "params": _flatten(config.get(artifact.id, {})),
        "claims": claims,
        "checks_note": checks_note,
        "summary": summary,
        "summary_note": summary_note,
        "status": status,
    }


def build_context(
    config: Mapping[str, Any],
    *,
    root: Path,
    out: Path,
    bench_dir: Path,
    artifacts: Sequence[Artifact],
    papers: Mapping[str, Paper],
    source: Path | None = None,
    coverage_file: Path = COVERAGE_FILE,
) -> dict[str, Any]:
    """The template's variables: pure data, so tests can inspect it without HTML.

    ``source`` is the checkout whose commit the provenance names (default ``root``): a run
    with ``--directory`` elsewhere still reports the code it ran.
    """
    out_dir = out.parent
    views = [_artifact_view(a, config, root, out_dir) for a in artifacts]
    manifest = verify_views(views, artifacts, root, missing=MISSING)  # issue 21

    known = dict(papers)
    for view in views:  # an artifact of an unlisted paper still gets a section
        known.setdefault(view["slug"], Paper(view["slug"], view["slug"], "", "", ""))
    sections = []
    for slug, paper in known.items():
        members = [v for v in views if v["slug"] == slug]
        if members:
            sections.append({"paper": paper, "anchor": f"paper-{slug}", "artifacts": members})
    uncovered = [p for slug, p in papers.items() if not any(v["slug"] == slug for v in views)]

    all_claims = []
    for section in sections:
        paper_claims = []
        for view in section["artifacts"]:
            for claim in view["claims"] or []:
                paper_claims.append(
                    {**claim, "artifact": view["id"], "paper": section["paper"].slug}
                )
        section["counts"] = _count(paper_claims)
        all_claims.extend(paper_claims)
    # Stable sort: not reproduced first, then inconclusive, reproduced, consistency.
    all_claims.sort(key=lambda c: STATUS_ORDER[c["status"]])
    counts = _count(all_claims) | {
        "missing": sum(v["status"] == MISSING for v in views),
        "artifacts": len(views),
        "papers": len(sections),
    }

    ids = [a.id for a in artifacts]
    bench_rows = read_benchmarks(bench_dir, ids)
    runtime = aggregate(bench_rows, order=ids)
    measured = [r for r in bench_rows if r["seconds"] is not None]
    runtimes = {
        "artifacts": runtime,
        "jobs": len(measured),
        "total_seconds": sum(r["seconds"] for r in measured),
        "notes": [f"{r['path']}: {r['note']}" for r in bench_rows if r["note"]],
        "known": set(ids),
        "folder": _href(bench_dir, out_dir),
    }
    shared = {
        key: _flatten(value)
        for key, value in config.items()
        if key not in set(ids) and key != "seed" and isinstance(value, Mapping)
    }
    return {
        "title": "lbrepro — reproduction report",
        "counts": counts,
        "claims": all_claims,
        "sections": sections,
        "uncovered": uncovered,
        "provenance": provenance(config, source if source is not None else root),
        "manifest": manifest,
        "shared_config": shared,
        "runtimes": runtimes,
        "coverage": coverage_table(coverage_file),
        "labels": {"reproduced": REPRODUCED, "not_reproduced": NOT_REPRODUCED, "missing": MISSING},
    }


def environment(templates: Path) -> jinja2.Environment:
    """The Jinja2 environment: autoescaping on, undefined variables are errors."""
    if not templates.is_dir():
        raise FileNotFoundError(f"report templates folder not found: {templates}")
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates)),
        autoescape=jinja2.select_autoescape(
            enabled_extensions=("html", "j2"), default_for_string=True, default=True
        ),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        finalize=finalize,  # issue 21: control and bidi characters printed visibly
    )
    env.filters["fmt"] = fmt
    env.filters["duration"] = duration
    return env


def render_report(
    config: Mapping[str, Any],
    *,
    root: Path = Path("."),
    out: Path | None = None,
    templates: Path | None = None,
    bench_dir: Path | None = None,
    artifacts: Sequence[Artifact] | None = None,
    papers: Mapping[str, Paper] | None = None,
    source: Path | None = None,
    coverage_file: Path = COVERAGE_FILE,
) -> Path:
    """Render the HTML report and return its path.

    Defaults: ``out`` = root/report/index.html, ``templates`` = root/report/templates,
    ``bench_dir`` = root/benchmarks, ``artifacts`` = the artifacts ``config`` enables,
    ``papers`` = the registry's papers. The file is written atomically (a temporary file
    renamed into place), so an interrupted run never leaves half a report.
    """
    root = Path(root)
    out = Path(out) if out is not None else root / registry.REPORT
    templates = Path(templates) if templates is not None else root / "report" / "templates"
    bench_dir = Path(bench_dir) if bench_dir is not None else root / "benchmarks"
    artifacts = list(artifacts) if artifacts is not None else registry.enabled(config)
    papers = papers if papers is not None else registry.papers()

    context = build_context(
        config,
        root=root,
        out=out,
        bench_dir=bench_dir,
        artifacts=artifacts,
        papers=papers,
        source=source,
        coverage_file=coverage_file,
    )
    html = environment(templates).get_template(TEMPLATE).render(**context)
    atomic_write_text(out, html)  # issue 21: a random O_EXCL temporary, never a planted one
    return out
