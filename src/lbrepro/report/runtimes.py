"""Runtimes from Snakemake's benchmark files, for the report's runtime table.

Every rule writes a ``benchmark:`` file: a TSV whose header is ``s  h:m:s  max_rss  max_vms
max_uss  max_pss  io_in  io_out  mean_load  cpu_time`` (plus extra columns with Snakemake's
extended format) and one row per repeat; unmeasured values are "-" or "NA". The artifact a
job belongs to is read off its path: any path component (or the file name without its
suffix) equal to a known artifact id. The layout is otherwise free, so
``benchmarks/<slug>/<artifact>/<point>.tsv`` and ``benchmarks/<rule>/<slug>/<artifact>.tsv``
both work. A file that cannot be read is returned with a ``note`` and no numbers, never raised.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from lbrepro.core.io import read_regular_bounded

#: File suffixes Snakemake writes benchmarks as (any other suffix is TSV to Snakemake too).
SUFFIXES = (".tsv", ".txt", ".jsonl")
#: Aggregate key for jobs whose path names no artifact (report, collect-all rules, …).
OTHER = "(other)"

_MISSING = {"", "-", "NA", "nan", "NaN", "None"}
#: Largest benchmark file read: a header and one short row per repeat (a few hundred bytes).
#: A 1 GB file placed under benchmarks/ made the report hold 6 GB and take 40 s.
MAX_BENCHMARK_BYTES = 1 << 20


def _number(value: Any) -> float | None:
    """A finite float, or None for Snakemake's placeholders and anything unparsable."""
    if value is None or (isinstance(value, str) and value.strip() in _MISSING):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _records(text: str, suffix: str) -> list[dict[str, Any]]:
    """The repeat records of one benchmark file, as dicts keyed by the header."""
    if suffix == ".jsonl":
        records = [json.loads(line) for line in text.splitlines() if line.strip()]
        if not all(isinstance(r, dict) for r in records):
            raise ValueError("a JSONL line is not an object")
        return records
    reader = csv.DictReader(io.StringIO(text), delimiter="\t")
    if not reader.fieldnames or "s" not in reader.fieldnames:
        raise ValueError("no 's' column in the header")
    return list(reader)


def _artifact_of(parts: Sequence[str], artifact_ids: Iterable[str]) -> str | None:
    ids = set(artifact_ids)
    return next((part for part in parts if part in ids), None)


def read_benchmark(path: Path, bench_dir: Path, artifact_ids: Iterable[str]) -> dict[str, Any]:
    """One job's row: its name, artifact, mean seconds over repeats, peak RSS, CPU time.

    ``note`` is empty for a good file and says what is wrong otherwise (numbers then None).
    """
    rel = path.relative_to(bench_dir)
    job = rel.with_suffix("").as_posix()
    row: dict[str, Any] = {
        "job": job,
        "path": rel.as_posix(),
        "artifact": _artifact_of(rel.with_suffix("").parts, artifact_ids),
        "rule": None,
        "repeats": 0,
        "seconds": None,
        "max_rss_mb": None,
        "cpu_time": None,
        "note": "",
    }
    try:
        # Bounded and regular files only (the folder is the user's: a FIFO, a device or a
        # huge file must not hang or exhaust the report).
        text = read_regular_bounded(path, MAX_BENCHMARK_BYTES).decode("utf-8")
        records = _records(text, path.suffix)
    except RecursionError:  # a JSONL line nested thousands deep: a note, not a traceback
        row["note"] = "unreadable benchmark file: nested too deep"
        return row
    except (OSError, UnicodeDecodeError, ValueError, csv.Error) as err:
        row["note"] = f"unreadable benchmark file: {err}"
        return row
    seconds = [s for s in (_number(r.get("s")) for r in records) if s is not None]
    if not seconds:
        row["note"] = "no measured repeat in benchmark file"
        return row
    rss = [v for v in (_number(r.get("max_rss")) for r in records) if v is not None]
    cpu = [v for v in (_number(r.get("cpu_time")) for r in records) if v is not None]
    rules = {str(r["rule_name"]) for r in records if r.get("rule_name") not in (None, "", "-")}
    row.update(
        rule=rules.pop() if len(rules) == 1 else None,
        repeats=len(seconds),
        seconds=sum(seconds) / len(seconds),
        max_rss_mb=max(rss) if rss else None,
        cpu_time=sum(cpu) / len(cpu) if cpu else None,
    )
    return row


def read_benchmarks(
    bench_dir: str | Path, artifact_ids: Iterable[str] | None = None
) -> list[dict[str, Any]]:
    """Every benchmark file under ``bench_dir``, one row per job, sorted by job name.

    Row keys: ``job`` (path without suffix), ``path``, ``artifact`` (a recognised id or
    None), ``rule`` (extended format only), ``repeats``, ``seconds`` (mean over repeats),
    ``max_rss_mb``, ``cpu_time`` and ``note`` (non-empty when the file was skipped).
    ``artifact_ids`` defaults to every registered artifact. A missing folder gives no rows.
    """
    bench_dir = Path(bench_dir)
    if artifact_ids is None:
        from lbrepro.artifacts import registry

        artifact_ids = [a.id for a in registry.all_artifacts()]
    ids = list(artifact_ids)
    if not bench_dir.is_dir():
        return []
    paths = sorted(
        p
        for p in bench_dir.rglob("*")
        if p.is_file() and p.suffix in SUFFIXES and not p.name.startswith(".")
    )
    return [read_benchmark(p, bench_dir, ids) for p in paths]


def aggregate(
    rows: Iterable[Mapping[str, Any]], order: Sequence[str] | None = None
) -> list[dict[str, Any]]:
    """Per artifact: number of jobs, total and slowest seconds, slowest job, peak RSS.

    Skipped rows (no ``seconds``) are left out. Jobs of no artifact are grouped as ``OTHER``,
    listed last. Artifacts follow ``order`` when given, else the largest total first.
    """
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        if row.get("seconds") is None:
            continue
        groups.setdefault(row.get("artifact") or OTHER, []).append(row)
    result = []
    for artifact, jobs in groups.items():
        slowest = max(jobs, key=lambda r: r["seconds"])
        rss = [r["max_rss_mb"] for r in jobs if r.get("max_rss_mb") is not None]
        result.append(
            {
                "artifact": artifact,
                "jobs": len(jobs),
                "total_seconds": sum(r["seconds"] for r in jobs),
                "max_seconds": slowest["seconds"],
                "slowest_job": slowest["job"],
                "max_rss_mb": max(rss) if rss else None,
            }
        )
    rank = {a: i for i, a in enumerate(order or ())}

    def key(entry: dict[str, Any]) -> tuple[int, int, float]:
        other = entry["artifact"] == OTHER
        return (int(other), rank.get(entry["artifact"], len(rank)), -entry["total_seconds"])

    return sorted(result, key=key)
