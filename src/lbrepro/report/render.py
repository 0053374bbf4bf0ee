"""Render ``report/index.html`` from the registry, the results tree and Jinja2 templates.

The report is the pipeline's front page: first, per paper, what holds of its claims
(reproduced / not reproduced / undecided, failures counted once per finding, one generated
sentence of conclusion), lbrepro's own checks counted apart; then every artifact with its
figure, claims, parameters and [reconstruction] notes; then Methods (coverage, seed
stability), provenance and runtimes. It reads only files of the data contract, so it renders
whatever exists: a figure, table or checks file that was not produced shows as a visible
"missing" note. Links are relative to the report file, so the report folder plus
``figures/`` and ``results/`` open offline from disk.
"""

from __future__ import annotations

import math
import os
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

import jinja2
import yaml

from lbrepro.artifacts import registry
from lbrepro.artifacts.registry import Artifact, Paper
from lbrepro.core.claims import (
    CONSISTENCY,
    DIAGNOSTIC,
    NOT_REPRODUCED,
    REPRODUCED,
    UNDECIDED,
)
from lbrepro.core.io import atomic_write_text, read_json, read_table
from lbrepro.pipeline import artifact_config
from lbrepro.report.checks_file import read_checks
from lbrepro.report.diff import VERDICT_STATUSES, is_null, status_of
from lbrepro.report.manifest import verify_views  # issue 21: digests verified at render
from lbrepro.report.provenance import provenance
from lbrepro.report.runtimes import aggregate, read_benchmarks
from lbrepro.report.sanitize import finalize  # issue 21: hostile text

TEMPLATE = "index.html.j2"
#: Rows of an artifact's summary table shown in the report (the CSV holds them all).
MAX_SUMMARY_ROWS = 60
#: Values of a list-valued cell shown before eliding the rest.
MAX_LIST = 6

MISSING = "missing"
NO_CLAIMS = "no claims"
NO_PAPER_CLAIMS = "no paper claims"
INVALID_RUN = "invalid run"
DIAGNOSTIC_HELD = "diagnostic held"
DIAGNOSTIC_FAILED = "diagnostic failed"
#: Whose check a claim is when it is not the paper's.
OURS = "lbrepro"
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
#: The measured coverage of the batch-means intervals (bench/bench_coverage.py writes it).
COVERAGE_FILE = Path(__file__).with_name("coverage.json")
#: The seed-stability record (bench/bench_seeds.py writes it).
SEEDS_FILE = Path(__file__).with_name("seed_stability.json")
#: Rows of claims that moved across seeds shown in the report.
MAX_SEED_ROWS = 40
#: The mark class (colour) of each artifact status in the contents and on badges.
MARKS = {
    REPRODUCED: "pass",
    NOT_REPRODUCED: "fail",
    INVALID_RUN: "fail",
    DIAGNOSTIC_FAILED: "fail",
    UNDECIDED: "missing",
    MISSING: "missing",
    NO_CLAIMS: "none",
    NO_PAPER_CLAIMS: "none",
    CONSISTENCY: "none",
    DIAGNOSTIC_HELD: "none",
}
#: The coverage record's columns shown in the report, with their headings.
COVERAGE_COLUMNS = {
    "case": "case",
    "exact": "value",
    "replications": "replications",
    "converged_fraction": "converged",
    "coverage": "coverage (converged runs)",
    "coverage_wilson95": "coverage 95% (Wilson)",
    "coverage_x1.3": "×1.3 widened",
    "coverage_x2": "×2 widened",
    "coverage_all_runs": "all runs",
    "mean_half_width": "mean half-width",
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


def readable(value: Any) -> str:
    """A measured cell as a reader wants it: numbers formatted, no brackets or braces.

    A statistic is one number by the data contract; an older or hand-written entry may hold a
    mapping or list, shown as ``key = value`` pairs or a comma-separated list.
    """
    if isinstance(value, Mapping):
        return "; ".join(f"{k} = {readable(v)}" for k, v in value.items()) or "—"
    if isinstance(value, (list, tuple)):
        shown = [readable(v) for v in value[:MAX_LIST]]
        more = f", … ({len(value)} values)" if len(value) > MAX_LIST else ""
        return ", ".join(shown) + more if shown else "—"
    return fmt(value)


def interval_text(value: Any) -> str:
    """An interval [lo, hi] with formatted bounds ("" if there is none)."""
    if isinstance(value, (list, tuple)) and len(value) == 2:
        return f"[{fmt(value[0])}, {fmt(value[1])}]"
    return "" if value is None else readable(value)


def _margin_text(value: Any) -> str:
    """A margin as "± m" in the claim's units ("" if the test states none)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return ""
    return f"± {fmt(value)}"


def _test_view(entry: Mapping[str, Any]) -> dict[str, Any]:
    """The numbers of one test (a claim's or its control's), formatted for a table cell."""
    return {
        "outcome": str(entry.get("outcome") or ""),
        "expected": readable(entry.get("expected")),
        "measured": readable(entry.get("measured")),
        "interval": interval_text(entry.get("interval")),
        "margin": _margin_text(entry.get("margin")),
        "tolerance": readable(entry.get("tolerance")) if entry.get("tolerance") else "",
        "details": str(entry.get("details") or ""),
        "needs": str(entry.get("needs") or ""),
    }


def _badge(status: str, entry: Mapping[str, Any]) -> str:
    """The label a claim's badge shows: its status, refined for diagnostics and invalid runs."""
    if status == DIAGNOSTIC:
        return DIAGNOSTIC_HELD if entry.get("outcome") == REPRODUCED else DIAGNOSTIC_FAILED
    if status == UNDECIDED and entry.get("invalid"):
        return INVALID_RUN
    return status


def _claim_view(entry: Mapping[str, Any]) -> dict[str, Any]:
    """One checks.json entry as the template shows it."""
    status = status_of(entry)
    kind = str(entry.get("kind") or "verdict")
    source = str(entry.get("source") or "paper")
    control = entry.get("control")
    if isinstance(control, Mapping):
        control = {
            "claim": str(control.get("claim", "")),
            "distance": str(control.get("distance") or ""),
            **_test_view(control),
        }
        # A reproduced claim whose near miss is reproduced too cannot tell them apart.
        control["indistinct"] = control["outcome"] == REPRODUCED and status == UNDECIDED
    else:
        control = None
    verdict = status in VERDICT_STATUSES and kind not in (CONSISTENCY, DIAGNOSTIC)
    return {
        "claim": str(entry.get("claim", "")),
        **_test_view(entry),
        "status": status,
        "badge": _badge(status, entry),
        "kind": kind,
        "source": source,
        "side": OURS if source == OURS else "paper",
        "verdict": verdict,
        "control": control,
        "reason": str(entry.get("reason") or "") if status == UNDECIDED else "",
        "invalid": str(entry.get("invalid") or ""),
        "finding": str(entry.get("finding") or ""),
        "null": verdict and is_null(entry.get("measured")),
        "looks": _looks(entry.get("looks")),
    }


def _looks(value: Any) -> int:
    """How often a verdict's decision was taken while its run doubled (1 unless it says)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 1 else 1


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
    return [_claim_view(entry) for entry in data], ""


def _artifact_status(claims: list[dict[str, Any]] | None) -> str:
    """One word for an artifact, from its paper claims only: the worst of their outcomes.

    lbrepro's own checks never colour an artifact; they are counted apart (see
    :func:`_count`). An invalid run is as bad as a failure: it decides nothing.
    """
    if claims is None:
        return MISSING
    if not claims:
        return NO_CLAIMS
    badges = [c["badge"] for c in claims if c["verdict"] and c["side"] == "paper"]
    if not badges:
        return NO_PAPER_CLAIMS
    return min(badges, key=STATUS_ORDER.__getitem__)


def _tally(claims: Sequence[Mapping[str, Any]]) -> dict[str, int]:
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


def _count(claims: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Paper claims and lbrepro's own verdicts counted apart; checks of other kinds beside."""
    verdicts = [c for c in claims if c["verdict"]]
    paper = _tally([c for c in verdicts if c["side"] == "paper"])
    ours = _tally([c for c in verdicts if c["side"] == OURS])
    decided = paper["decided"] + ours["decided"]
    return {
        "paper": paper,
        "lbrepro": ours,
        "consistency": sum(c["status"] == CONSISTENCY for c in claims),
        "diagnostics": sum(c["status"] == DIAGNOSTIC for c in claims),
        "diagnostics_failed": sum(c["badge"] == DIAGNOSTIC_FAILED for c in claims),
        "without_control": sum(1 for c in verdicts if c["control"] is None),
        "null": paper["null"] + ours["null"],
        "decided": decided,
        "looks": paper["looks"] + ours["looks"],
        # Each decision errs with probability at most ERROR_RATE per look, so at most this
        # many are expected (a decision with one look, most of them, counts once).
        "expected_false": ERROR_RATE * (paper["looks"] + ours["looks"]),
        "expected_false_paper": ERROR_RATE * paper["looks"],
    }


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def conclusion(counts: Mapping[str, Any], findings: Sequence[Mapping[str, Any]]) -> str:
    """One sentence on what holds of a paper, from its paper claims' counts and findings."""
    t = counts["paper"]
    if not t["verdicts"]:
        extra = counts["lbrepro"]["verdicts"] + counts["consistency"]
        return "No paper claim was decided in this run" + (
            " (only lbrepro's own checks)." if extra else "."
        )
    if t["reproduced"] == t["verdicts"]:
        return f"All {_plural(t['verdicts'], 'paper claim')} checked are reproduced."
    verb = "is" if 1 in (t["reproduced"], t["verdicts"]) else "are"
    parts = [f"{t['reproduced']} of {_plural(t['verdicts'], 'paper claim')} {verb} reproduced"]
    if t["not_reproduced"]:
        names = [f["id"] for f in findings if f["paper_failures"]]
        named = f" ({', '.join(names)})" if names else ""
        parts.append(
            f"{t['not_reproduced']} not reproduced, from {_plural(t['findings'], 'finding')}{named}"
        )
    if t["undecided"]:
        invalid = f", {t['invalid']} of them on an invalid run" if t["invalid"] else ""
        parts.append(f"{t['undecided']} undecided (this run cannot tell{invalid})")
    return "; ".join(parts) + "."


def _findings(claims: Sequence[Mapping[str, Any]], paper: Paper) -> list[dict[str, Any]]:
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


def _read_record(path: Path) -> Mapping[str, Any] | None:
    """A measured record (a JSON object) committed beside this module, or None."""
    if not path.is_file():
        return None
    try:
        data = read_json(path)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, Mapping) else None


def coverage_table(path: Path = COVERAGE_FILE) -> dict[str, Any] | None:
    """The measured coverage of nominal 95% intervals on known answers, if recorded.

    ``bench/bench_coverage.py`` writes the record (one entry per known-answer case); the report
    shows a fixed choice of its columns.
    """
    data = _read_record(path)
    if data is None:
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


def _percent(value: Any) -> str:
    """A fraction as a percentage with one decimal ("—" if it is no number)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return fmt(value)
    return f"{value:.1%}"


def seed_stability(path: Path = SEEDS_FILE) -> dict[str, Any] | None:
    """The quick profile's verdicts across seeds, if measured (``bench/bench_seeds.py``).

    Shown: the stability counts, one row per seed, and the claims whose status moved.
    """
    data = _read_record(path)
    if data is None:
        return None
    rows = [r for r in data.get("rows") or [] if isinstance(r, Mapping)]
    moved = [r for r in rows if not r.get("stable", True)]
    moved.sort(key=lambda r: (not r.get("flip"), str(r.get("artifact")), str(r.get("claim"))))
    per_seed = [p for p in data.get("per_seed") or [] if isinstance(p, Mapping)]
    return {
        "date": str(data.get("date") or ""),
        "commit": str(data.get("commit") or "")[:10],
        "produced_by": str(data.get("produced_by") or ""),
        "profile": str(data.get("profile") or ""),
        "seeds": [fmt(s) for s in data.get("seeds") or []],
        "claims": data.get("claims"),
        "verdicts": data.get("verdicts"),
        "flips": data.get("flips"),
        "flips_paper": data.get("flips_paper"),
        "undecided_fraction": _percent(data.get("undecided_fraction")),
        "dirty": data.get("dirty") is True,
        "null_statistics": data.get("null_statistics"),
        "per_seed": [
            [fmt(p.get(k)) for k in ("seed", "verdicts", "reproduced", "not_reproduced")]
            + [fmt(p.get(k)) for k in ("undecided", "null_statistics")]
            for p in per_seed
        ],
        "moved": [
            {
                "artifact": str(r.get("artifact", "")),
                "claim": str(r.get("claim", "")),
                "statuses": [fmt(x) for x in r.get("statuses") or []],
                "flip": bool(r.get("flip")),
            }
            for r in moved[:MAX_SEED_ROWS]
        ],
        "omitted": max(0, len(moved) - MAX_SEED_ROWS),
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


def regenerate_command(artifact: Artifact, config_file: str) -> str:
    """The command that recomputes ``artifact`` with this run's config, from the run's folder.

    ``--forceall`` reruns every job of the artifact's targets (its points, table, figure and
    checks), nothing else; ``--configfile`` is the config this report wrote beside itself,
    complete, so merged over the default config file it is this run's config again.
    """
    targets = " ".join(shlex.quote(path) for path in artifact.paths().values())
    return f"snakemake --cores all --configfile {shlex.quote(config_file)} --forceall {targets}"


def write_run_config(config: Mapping[str, Any], path: Path) -> Path:
    """Write the run's whole config as YAML (what the regenerate commands pass back)."""
    text = (
        "# The config of the run this report shows (lbrepro writes it with the report).\n"
        "# Rerun with it: snakemake --cores all --configfile " + path.as_posix() + "\n"
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
        return {"path": rel_paths[key], "href": _href(path, out_dir) if path.is_file() else None}

    figure = None
    if artifact.has_figure:
        figure = {"png": link("png"), "svg": link("svg"), "pdf": link("pdf")}
    claims, checks_note = _claims(paths["checks"], rel_paths["checks"])
    summary, summary_note = _summary(artifact, paths["table"])
    section = artifact_config(config, artifact.id) if artifact.id in config else None
    status = _artifact_status(claims)
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
        "params": _flatten(config.get(artifact.id, {})),
        "claims": claims,
        "checks_note": checks_note,
        "summary": summary,
        "summary_note": summary_note,
        "status": status,
        "counts": _count(claims or []),
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
    manifest = verify_views(views, artifacts, root, missing=MISSING, recount=_count)  # issue 21

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
        section["findings"] = _findings(paper_claims, section["paper"])
        section["conclusion"] = conclusion(section["counts"], section["findings"])
        all_claims.extend(paper_claims)
    # Stable sort: failures first, then invalid runs, undecided, reproduced, the rest.
    all_claims.sort(key=lambda c: STATUS_ORDER[c["badge"]])
    counts = _count(all_claims) | {
        "missing": sum(v["status"] == MISSING for v in views),
        "artifacts": len(views),
        "papers": len(sections),
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
        "checks": checks,
        "filter_statuses": filter_statuses,
        "run_config": {"path": shown_config, "href": _href(config_file, out_dir)},
        "sections": sections,
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
    atomic_write_text(out, html)  # issue 21: a random O_EXCL temporary, never a planted one
    return out
