"""The answer a run ends with: per paper, its statements decided and its findings.

A run of the workflow prints thousands of lines of job bookkeeping; a reader wants the last
lines to be the result, as pytest ends with its summary line. :func:`summary_lines` reads the
checks files the run left (verified against their digests, as the report reads them), counts
them by paper statement with :func:`lbrepro.core.tally.tally` — the same count the report's
headline shows — and says where the report is. The workflow prints it when Snakemake is done
(:func:`print_at_exit`, called from ``onsuccess``), after Snakemake's own closing lines.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from lbrepro.artifacts.registry import Artifact, Paper
from lbrepro.core.claims import NOT_REPRODUCED, REPRODUCED, UNDECIDED
from lbrepro.core.tally import tally
from lbrepro.report.checks_file import read_checks
from lbrepro.report.diff import safe_text
from lbrepro.report.manifest import MISSING, VERIFIED, file_status

__all__ = ["QUIET_EVENTS", "print_at_exit", "quiet_job_lines", "read_run", "summary_lines"]

#: Widest a summary line is allowed to be before a finding's title is shortened.
WIDTH = 100


def read_run(
    artifacts: Sequence[Artifact], root: Path
) -> tuple[dict[str, list[tuple[str, dict[str, Any]]]], list[str], list[str]]:
    """Each paper's checks entries ``(artifact id, entry)``; the artifacts whose checks are
    not there (not made by this run: a single target, say); and those whose checks are
    damaged or changed since written (named, never counted)."""
    checks: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    absent: list[str] = []
    unread: list[str] = []
    for artifact in artifacts:
        path = root / artifact.paths()["checks"]
        status, _ = file_status(path)
        if status == MISSING:
            absent.append(artifact.id)
            continue
        try:
            if status != VERIFIED:
                raise ValueError(status)
            entries = read_checks(path)
        except (OSError, ValueError):
            unread.append(artifact.id)
            continue
        checks.setdefault(artifact.slug, []).extend((artifact.id, e) for e in entries)
    return checks, absent, unread


def _counts(c: Mapping[str, int]) -> str:
    return (
        f"{c[REPRODUCED]} reproduced, {c[NOT_REPRODUCED]} not reproduced, {c[UNDECIDED]} undecided"
    )


def _short(text: str, room: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= room else text[: max(room - 1, 1)] + "…"


def _section_lines(name: str, section: Mapping[str, Any]) -> list[str]:
    lines = [f"  {name}: {_counts(section['statements'])}"]
    depends = len(section["reconstruction"])
    if depends:
        lines[0] += f"; {depends} {'rests' if depends == 1 else 'rest'} on our reconstruction"
    for found in section["findings"]:
        head = f"    finding {found['id']}: "
        lines.append(head + _short(found["title"], WIDTH - len(head)))
    if section["unexplained"]:
        lines.append(f"    {len(section['unexplained'])} not reproduced without a named finding")
    return lines


def summary_lines(
    artifacts: Sequence[Artifact],
    papers: Mapping[str, Paper],
    root: Path,
    report: Path,
) -> list[str]:
    """The run's answer as lines of text (no colour, no terminal control characters)."""
    checks, absent, unread = read_run(artifacts, root)
    findings = {slug: dict(p.findings) for slug, p in papers.items()}
    baseline = tuple(slug for slug, p in papers.items() if p.baseline)
    counted = tally(checks, findings, baseline=baseline)
    total = counted["total"]
    lines = [
        "",
        "lbrepro — paper statements, each counted once over its parameter points:",
    ]
    for group, label in ((counted["papers"], ""), (counted["baseline"], "baseline: ")):
        for slug, section in group.items():
            paper = papers.get(slug)
            name = (paper.name or paper.title or slug) if paper else slug
            lines += _section_lines(label + name, section)
    own = {s: 0 for s in (REPRODUCED, NOT_REPRODUCED, UNDECIDED)}
    for section in [*counted["papers"].values(), *counted["baseline"].values()]:
        for s in own:
            own[s] += section["lbrepro"][s]
    lines.append(f"  lbrepro's own stricter checks (counted apart): {_counts(own)}")
    nf, nr = total["findings"], total["reconstruction"]
    lines.append(
        f"Paper statements: {_counts(total)}; {nf} finding{'s' if nf != 1 else ''}"
        + (f"; {nr} resting on our reconstruction, counted apart" if nr else "")
        + "."
    )
    if unread:
        lines.append(f"Not counted (checks damaged or changed): {', '.join(sorted(unread))}.")
    if absent:
        n = len(absent)
        lines.append(f"{n} artifact{'s' if n != 1 else ''} of the config not made yet (no checks).")
    where = report.resolve()
    lines.append(f"Report: {where}" if where.is_file() else f"Report not made: {where}")
    # The run's folder (and a paper's name) is the user's text: an escape sequence or a line
    # break in it reached the terminal as it was.
    return [safe_text(line) for line in lines]


def print_at_exit(lines_of: Any) -> None:
    """Print ``lines_of()`` on stdout when the process exits, so that it comes after
    Snakemake's closing lines (the log's path, the run time) and is the run's last word.
    A summary that cannot be made says so in one line and never changes the exit status."""

    def _emit() -> None:
        try:
            text = "\n".join(lines_of())
        except Exception as err:  # a summary must never fail a finished run
            text = safe_text(f"lbrepro: no summary ({type(err).__name__}: {err})")
        with contextlib.suppress(OSError, ValueError):  # a closed stdout: nothing to say
            print(text, file=sys.stdout, flush=True)

    atexit.register(_emit)


#: Snakemake's per-job lines (each job's rule, files and wildcards, its start, its end and its
#: command): thousands of lines on a full run. The terminal drops them; the run's log file
#: (.snakemake/log/) keeps them, and so do errors, warnings and the progress lines.
QUIET_EVENTS = frozenset(
    {"job_info", "job_started", "job_finished", "shellcmd", "group_info", "resources_info"}
)


#: The scheduler's line before each round of jobs, said once per job on a full run.
QUIET_MESSAGES = frozenset({"Select jobs to execute..."})


class _QuietJobs(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if str(getattr(record, "event", "")) in QUIET_EVENTS:
            return False
        return not (isinstance(record.msg, str) and record.msg in QUIET_MESSAGES)


def quiet_job_lines(logger: str = "snakemake.logging") -> bool:
    """Keep Snakemake's per-job lines off the terminal (its stream handler only; the log file
    keeps everything). False if Snakemake's default terminal handler is not there (a logger
    plugin writes instead), which is then left alone."""
    for handler in logging.getLogger(logger).handlers:
        if handler.name == "DefaultStreamHandler":
            if not any(isinstance(f, _QuietJobs) for f in handler.filters):
                handler.addFilter(_QuietJobs())
            return True
    return False
