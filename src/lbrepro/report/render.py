"""Render ``report/index.html``: read the results tree into views, fill the templates.

The report is the pipeline's front page: a summary a reader takes in at a glance (the
headline counts; per paper, by authors and year, its counts and findings; the baseline apart),
then one section per paper with its artifacts folded (figure, claims, parameters, the command
that regenerates them), then Methods, provenance and runtimes. It reads only files of the data
contract, so it renders whatever exists: a figure, table or checks file that was not produced
shows as a visible "missing" note. Links are relative to the report file, so the report folder
plus ``figures/`` and ``results/`` open offline from disk.

What each part shows is built elsewhere, one job per module: :mod:`.formatting` (numbers),
:mod:`.claim_views` (claims, tallies, findings), :mod:`.artifact_parts` (an artifact's files,
parameters and summary table), :mod:`.records` (coverage and seed stability), :mod:`.papers`
(the per-paper summary rows and sections), :mod:`.mathml` (subscripts and powers as MathML).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import jinja2
import yaml

from lbrepro.artifacts import registry
from lbrepro.artifacts.registry import Artifact, Paper
from lbrepro.core.io import atomic_write_text
from lbrepro.core.tally import tally as tally_statements
from lbrepro.pipeline import artifact_config
from lbrepro.report.artifact_parts import flatten, href, regenerate_command, summary_table
from lbrepro.report.checks_file import read_checks
from lbrepro.report.claim_views import (
    DIAGNOSTIC_FAILED,
    ERROR_RATE,
    MARKS,
    MISSING,
    NOT_REPRODUCED,
    OURS,
    REPRODUCED,
    STATUS_ORDER,
    artifact_status,
    claim_view,
    conclusion,
    count_claims,
)
from lbrepro.report.formatting import duration, fmt, readable
from lbrepro.report.manifest import verify_views
from lbrepro.report.mathml import math_markup
from lbrepro.report.papers import display_name, paper_sections
from lbrepro.report.provenance import provenance
from lbrepro.report.records import COVERAGE_FILE, SEEDS_FILE, coverage_table, seed_stability
from lbrepro.report.runtimes import aggregate, read_benchmarks
from lbrepro.report.sanitize import finalize  # control and bidi characters shown visibly

__all__ = [
    "SEEDS_FILE",
    "build_context",
    "conclusion",
    "duration",
    "environment",
    "fmt",
    "readable",
    "regenerate_command",
    "render_report",
    "seed_stability",
    "write_run_config",
]

TEMPLATE = "index.html.j2"


def _claims(path: Path, shown: str) -> tuple[list[dict[str, Any]] | None, str]:
    """The checks.json entries (None if absent or unreadable) and a note saying why.

    ``shown`` is the path as the note names it (relative to the results root).
    """
    if not path.is_file():
        return None, f"claim checks not produced (expected {shown})"
    try:
        data = read_checks(path)
    except (OSError, ValueError) as err:
        return None, f"claim checks unreadable ({shown}): {err}"
    return [claim_view(entry) for entry in data], ""


def write_run_config(config: Mapping[str, Any], path: Path) -> Path:
    """Write the run's whole config as YAML (what the regenerate commands pass back)."""
    text = (
        "# The config of the run this report shows (lbrepro writes it with the report).\n"
        "# Rerun with it: snakemake --configfile " + path.as_posix() + " --cores all\n"
    )
    text += yaml.safe_dump(dict(config), sort_keys=False, allow_unicode=True)
    atomic_write_text(path, text)
    return path


def _artifact_view(
    artifact: Artifact,
    config: Mapping[str, Any],
    root: Path,
    out_dir: Path,
    config_file: str = registry.REPORT_CONFIG,
) -> dict[str, Any]:
    """Everything the template shows about one artifact."""
    rel_paths = artifact.paths()
    paths = {key: root / rel for key, rel in rel_paths.items()}

    def link(key: str) -> dict[str, Any]:
        path = paths[key]
        return {"path": rel_paths[key], "href": href(path, out_dir) if path.is_file() else None}

    figure = None
    if artifact.has_figure:
        figure = {"png": link("png"), "svg": link("svg"), "pdf": link("pdf")}
    claims, checks_note = _claims(paths["checks"], rel_paths["checks"])
    summary, summary_note = summary_table(artifact, paths["table"])
    section = artifact_config(config, artifact.id) if artifact.id in config else None
    status = artifact_status(claims)
    return {
        "id": artifact.id,
        "slug": artifact.slug,
        "title": artifact.title,
        "kind": artifact.kind,
        "methods": list(artifact.methods),
        "caption": artifact.caption_text(section),
        "reconstructions": artifact.reconstruction_texts(section),
        "figure": figure,
        "figure_note": "",
        "table": link("table"),
        "checks": link("checks"),
        "params": flatten(config.get(artifact.id, {})),
        "claims": claims,
        "checks_note": checks_note,
        "summary": summary,
        "summary_note": summary_note,
        "status": status,
        "counts": count_claims(claims or []),
        "command": regenerate_command(artifact, config_file),
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
    seed_file: Path = SEEDS_FILE,
    config_file: Path | None = None,
) -> dict[str, Any]:
    """The template's variables: pure data, so tests can inspect it without HTML.

    ``source`` is the checkout whose commit the provenance names (default ``root``): a run
    with ``--directory`` elsewhere still reports the code it ran. ``config_file`` is where the
    run's config is written (default root/report/config.yaml), named by the regenerate commands.
    """
    out_dir = out.parent
    config_file = config_file if config_file is not None else root / registry.REPORT_CONFIG
    shown_config = _relative_to(config_file, root)
    views = [_artifact_view(a, config, root, out_dir, shown_config) for a in artifacts]
    # Every file verified against its digest now: a checks file changed since written is withheld.
    manifest = verify_views(views, artifacts, root, missing=MISSING, recount=count_claims)

    sections = paper_sections(views, papers)
    # Statements, each one verdict over its parameter points (lbrepro.core.tally): the count
    # the headline, each paper's row and the run's last lines (report.run_summary) give.
    statements = tally_statements(
        {s["paper"].slug: [(c["artifact"], c["entry"]) for c in s["claims"]] for s in sections},
        {slug: dict(p.findings) for slug, p in papers.items()},
        baseline=tuple(s["paper"].slug for s in sections if s["baseline"]),
    )
    for section in sections:
        group = statements["baseline" if section["baseline"] else "papers"]
        section["statements"] = group[section["paper"].slug]
    uncovered = [p for slug, p in papers.items() if not any(v["slug"] == slug for v in views)]
    all_claims = [claim for section in sections for claim in section["claims"]]
    # Stable sort: failures first, then invalid runs, undecided, reproduced, the rest.
    all_claims.sort(key=lambda c: STATUS_ORDER[c["badge"]])
    counts = count_claims(all_claims) | {
        "missing": sum(v["status"] == MISSING for v in views),
        "artifacts": len(views),
        "papers": sum(not s["baseline"] for s in sections),
        "baseline": sum(s["baseline"] for s in sections),
        "error_rate": ERROR_RATE,
    }
    verdicts = [c for c in all_claims if c["verdict"]]
    checks = {
        "paper": [c for c in verdicts if c["side"] == "paper"],
        # lbrepro's own verdicts, and the diagnostics that failed (each invalidates a run).
        "lbrepro": [c for c in all_claims if c["side"] == OURS and c["verdict"]]
        + [c for c in all_claims if c["badge"] == DIAGNOSTIC_FAILED],
    }

    # The statuses a reader can filter the summary's claims by, in the order they are listed.
    filter_statuses = sorted(
        {c["badge"] for c in checks["paper"] + checks["lbrepro"]}, key=STATUS_ORDER.__getitem__
    )

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
        "folder": href(bench_dir, out_dir),
    }
    shared = {
        key: flatten(value)
        for key, value in config.items()
        if key not in set(ids) and key != "seed" and isinstance(value, Mapping)
    }
    return {
        "title": "lbrepro — reproduction report",
        "counts": counts,
        "statements": statements["total"],
        "claims": all_claims,
        "checks": checks,
        "filter_statuses": filter_statuses,
        "run_config": {"path": shown_config, "href": href(config_file, out_dir)},
        "sections": sections,
        "names": {s["paper"].slug: s["name"] for s in sections},
        "uncovered": uncovered,
        "provenance": provenance(config, source if source is not None else root),
        "manifest": manifest,
        "shared_config": shared,
        "runtimes": runtimes,
        "coverage": coverage_table(coverage_file),
        "seeds": seed_stability(seed_file),
        "labels": {"reproduced": REPRODUCED, "not_reproduced": NOT_REPRODUCED, "missing": MISSING},
        "marks": MARKS,
    }


def _relative_to(path: Path, root: Path) -> str:
    """``path`` as a command run in ``root`` names it (relative if it lies inside)."""
    try:
        return Path(os.path.relpath(os.path.abspath(path), os.path.abspath(root))).as_posix()
    except ValueError:
        return Path(os.path.abspath(path)).as_posix()


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
        finalize=finalize,  # control and bidi characters printed visibly, never acted on
    )
    env.filters["fmt"] = fmt
    env.filters["duration"] = duration
    env.filters["math"] = math_markup
    env.filters["name"] = display_name
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
    seed_file: Path = SEEDS_FILE,
    config_file: Path | None = None,
) -> Path:
    """Render the HTML report, write the run's config beside it, and return the report's path.

    Defaults: ``out`` = root/report/index.html, ``templates`` = root/report/templates,
    ``bench_dir`` = root/benchmarks, ``artifacts`` = the artifacts ``config`` enables,
    ``papers`` = the registry's papers, ``config_file`` = root/report/config.yaml (the
    config each artifact's regenerate command passes back to Snakemake). Both files are
    written atomically (a temporary file renamed into place), so an interrupted run never
    leaves half a report.
    """
    root = Path(root)
    out = Path(out) if out is not None else root / registry.REPORT
    templates = Path(templates) if templates is not None else root / "report" / "templates"
    bench_dir = Path(bench_dir) if bench_dir is not None else root / "benchmarks"
    artifacts = list(artifacts) if artifacts is not None else registry.enabled(config)
    papers = papers if papers is not None else registry.papers()
    config_file = Path(config_file) if config_file is not None else root / registry.REPORT_CONFIG

    write_run_config(config, config_file)
    context = build_context(
        config,
        root=root,
        out=out,
        bench_dir=bench_dir,
        artifacts=artifacts,
        papers=papers,
        source=source,
        coverage_file=coverage_file,
        seed_file=seed_file,
        config_file=config_file,
    )
    html = environment(templates).get_template(TEMPLATE).render(**context)
    atomic_write_text(out, html)  # a random O_EXCL temporary: a planted symlink is never followed
    return out
