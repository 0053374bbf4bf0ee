"""The measured records the Methods section shows: interval coverage and seed stability.

Both are JSON objects committed beside this module by the bench scripts; a record that is
absent or unreadable shows as a "not measured" note, never as an error.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lbrepro.core.io import read_json
from lbrepro.core.manifest import package_digest
from lbrepro.report.formatting import fmt, percent

#: The measured coverage of the batch-means intervals (bench/bench_coverage.py writes it).
COVERAGE_FILE = Path(__file__).with_name("coverage.json")
#: The packages whose code makes and judges an interval (estimators, batching, run length,
#: Bonferroni widening, the kernels): a coverage record measured on other code of these is not
#: the coverage of this run's intervals.
INTERVAL_PACKAGES = ("lbrepro.core", "lbrepro.sim")
#: The seed-stability record (bench/bench_seeds.py writes it).
SEEDS_FILE = Path(__file__).with_name("seed_stability.json")
#: Rows of claims that moved across seeds shown in the report.
MAX_SEED_ROWS = 40
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


def read_record(path: Path) -> Mapping[str, Any] | None:
    """A measured record (a JSON object) committed beside this module, or None."""
    if not path.is_file():
        return None
    try:
        data = read_json(path)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, Mapping) else None


def interval_code() -> str:
    """A digest of the interval code (:data:`INTERVAL_PACKAGES`), as installed now: the coverage
    record carries the one it was measured on, and the report says whether they match."""
    return "+".join(package_digest(p) for p in INTERVAL_PACKAGES)


def coverage_table(path: Path = COVERAGE_FILE) -> dict[str, Any] | None:
    """The measured coverage of nominal 95% intervals on known answers, if recorded.

    ``bench/bench_coverage.py`` writes the record (one entry per known-answer case); the report
    shows a fixed choice of its columns, and whether it was measured on this run's interval
    code (``this_code``: the record's ``interval_code`` is today's :func:`interval_code`).
    """
    data = read_record(path)
    if data is None:
        return None
    cases = [c for c in data.get("cases") or data.get("rows") or [] if isinstance(c, Mapping)]
    columns = [c for c in COVERAGE_COLUMNS if any(c in case for case in cases)]
    return {
        "date": str(data.get("date") or ""),
        "commit": str(data.get("commit") or "")[:10],
        "method": str(data.get("method") or ""),
        "produced_by": str(data.get("produced_by") or ""),
        "this_code": data.get("interval_code") == interval_code(),
        "required": data.get("required"),
        "columns": [COVERAGE_COLUMNS[c] for c in columns],
        "rows": [[fmt(case.get(c)) for c in columns] for case in cases],
    }


def seed_stability(path: Path = SEEDS_FILE) -> dict[str, Any] | None:
    """The quick profile's verdicts across seeds, if measured (``bench/bench_seeds.py``).

    Shown: the stability counts, one row per seed, and the claims whose status moved.
    """
    data = read_record(path)
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
        "undecided_fraction": percent(data.get("undecided_fraction")),
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
