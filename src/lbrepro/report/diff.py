"""Compare the claim checks of result trees: ``lbrepro diff RUN_A RUN_B`` and the seed table.

A result tree is a folder holding ``results/<slug>/<artifact>.checks.json`` (or the
``results`` folder itself). A claim is keyed by its identity: its artifact, its text and its
occurrence among the artifact's claims of that text (texts stay the same across seeds and
parameter changes; two claims sharing a text stay two claims, so a flip of one is not hidden
by the other). Two runs differ on a claim when its status moved, or when
its statistic moved by more than its interval (neither run's statistic lies inside the other's
interval; for an exact value without an interval, any change), or when it exists in one run
only; a NaN statistic is the same as a NaN. Files are read bounded and typed
(:func:`lbrepro.report.checks_file.read_checks`) and every text printed is terminal-safe
(:func:`safe_text`). :func:`seed_table` tabulates the same keys over several runs
(``bench/bench_seeds.py``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from lbrepro.core.claims import (
    CONSISTENCY,
    DIAGNOSTIC,
    NOT_REPRODUCED,
    REPRODUCED,
    UNDECIDED,
    claim_status,
)
from lbrepro.core.errors import LbreproError
from lbrepro.core.manifest import read_digest, verify
from lbrepro.report.checks_file import read_checks
from lbrepro.report.sanitize import visible

__all__ = [
    "DiffError",
    "diff_trees",
    "format_diff",
    "is_null",
    "load_tree",
    "results_dir",
    "safe_text",
    "seed_table",
]

#: Statuses of a verdict (the others are consistency checks and diagnostics).
VERDICT_STATUSES = (REPRODUCED, NOT_REPRODUCED, UNDECIDED)
#: A claim's identity: (artifact, claim text, occurrence of that text in the artifact: 0, 1, …).
Key = tuple[str, str, int]


class DiffError(LbreproError):
    """A path that is no result tree, or a checks file that cannot be read."""


def results_dir(path: str | Path) -> Path:
    """The folder of ``<slug>/*.checks.json`` files a run path names (it or its ``results``)."""
    root = Path(path)
    if not root.is_dir():
        raise DiffError(f"{path}: not a folder")
    for candidate in (root / "results", root):
        if candidate.is_dir() and any(candidate.glob("*/*.checks.json")):
            return candidate
    raise DiffError(f"{path}: no results/<slug>/*.checks.json in it")


def status_of(entry: Mapping[str, Any]) -> str:
    """A checks.json entry's status; an entry of the old format (no ``outcome``) keeps its own."""
    if "outcome" not in entry and "status" in entry:
        old = str(entry["status"])
        return UNDECIDED if old == "inconclusive" else old
    return claim_status(dict(entry))


def load_tree(path: str | Path) -> dict[Key, dict[str, Any]]:
    """Every claim of a run: its :data:`Key` → its checks.json entry, ``status`` set."""
    folder = results_dir(path)
    claims: dict[Key, dict[str, Any]] = {}
    where: dict[str, Path] = {}
    for file in sorted(folder.glob("*/*.checks.json")):
        artifact = file.name.removesuffix(".checks.json")
        # Claims are keyed by artifact: a second file of the same artifact under another
        # paper's folder (a copy) would silently replace the first one's claims.
        if artifact in where:
            raise DiffError(
                f"{file}: the checks of {artifact} are also in {where[artifact]}: one run "
                "holds one file per artifact"
            )
        where[artifact] = file
        try:
            data = read_checks(file)
        except (OSError, ValueError) as err:
            raise DiffError(f"{file}: unreadable ({err})") from None
        # What its run wrote, or not compared: a checks file edited after it was written (a
        # verdict turned by hand, its size and mtime kept) is refused, as the report withholds
        # it (lbrepro.report.manifest). One without a record (a run older than records) is
        # compared as it is. Any seed or config: comparing runs is what diff is for.
        if read_digest(file) is not None:
            problem = verify(file)
            if problem is not None:
                raise DiffError(f"{file}: {problem}: not what its run wrote (rerun it)")
        seen: dict[str, int] = {}
        for entry in data:
            text = entry["claim"]
            occurrence = seen[text] = seen.get(text, -1) + 1
            entry = {**entry, "status": status_of(entry), "artifact": artifact}
            claims[(artifact, text, occurrence)] = entry
    return claims


def number(value: Any) -> float | None:
    """A finite statistic as a float, else None (null, text, NaN, a list)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _same(x: Any, y: Any) -> bool:
    """Equality of two recorded statistics, where NaN is the same as NaN (an undefined
    statistic that stayed undefined did not move)."""
    if isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y):
        return True
    return bool(x == y)


def is_null(value: Any) -> bool:
    """A statistic that is missing or not finite (the data contract forbids it in a verdict)."""
    if value is None or value == "":
        return True
    return isinstance(value, float) and not math.isfinite(value)


def interval(entry: Mapping[str, Any]) -> tuple[float, float] | None:
    """The entry's interval (lo, hi) if it has two finite bounds."""
    iv = entry.get("interval")
    if isinstance(iv, Sequence) and not isinstance(iv, str) and len(iv) == 2:
        lo, hi = number(iv[0]), number(iv[1])
        if lo is not None and hi is not None:
            return (min(lo, hi), max(lo, hi))
    return None


def statistic_moved(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether the statistic moved by more than its interval between two runs.

    Moved when neither run's statistic lies inside the other run's interval; an exact value
    (no interval in either run) moves on any change beyond rounding.
    """
    x, y = number(a.get("measured")), number(b.get("measured"))
    if x is None or y is None:
        return not _same(a.get("measured"), b.get("measured"))
    ia, ib = interval(a), interval(b)
    if ia is None and ib is None:
        return not math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12)
    inside_a = ia is not None and ia[0] <= y <= ia[1]
    inside_b = ib is not None and ib[0] <= x <= ib[1]
    return not (inside_a or inside_b)


def diff_trees(a: Mapping[Key, Mapping[str, Any]], b: Mapping[Key, Mapping[str, Any]]) -> dict:
    """What differs between two runs' claims (see the module docstring), keyed lists."""
    common = [k for k in a if k in b]
    status = [
        {"key": k, "a": a[k]["status"], "b": b[k]["status"]}
        for k in common
        if a[k]["status"] != b[k]["status"]
    ]
    moved = {tuple(s["key"]) for s in status}
    stat = [
        {"key": k, "a": a[k].get("measured"), "b": b[k].get("measured"), "status": b[k]["status"]}
        for k in common
        if k not in moved and statistic_moved(a[k], b[k])
    ]
    return {
        "compared": len(common),
        "status": status,
        "statistic": stat,
        "only_a": sorted(k for k in a if k not in b),
        "only_b": sorted(k for k in b if k not in a),
    }


def _num(value: Any) -> str:
    x = number(value)
    return f"{x:.4g}" if x is not None else ("null" if value is None else safe_text(value))


def safe_text(value: Any) -> str:
    """``value`` as text that cannot act on a terminal or forge a line: line breaks and tabs
    written as ``\\n``/``\\t``, every other control or invisible character visibly
    (:func:`lbrepro.report.sanitize.visible`)."""
    text = str(value)
    for char, shown in (("\n", "\\n"), ("\r", "\\r"), ("\t", "\\t")):
        text = text.replace(char, shown)
    return visible(text)


def _claim_name(key: Sequence[Any]) -> str:
    """``artifact: claim text`` (``#2`` and on for a text that occurs more than once)."""
    art, text, occurrence = key
    return f"{safe_text(art)}: {safe_text(text)}" + (f" #{occurrence + 1}" if occurrence else "")


def format_diff(diff: Mapping[str, Any], name_a: str = "A", name_b: str = "B") -> list[str]:
    """The diff as lines of text, the summary line last; every text terminal-safe."""
    lines: list[str] = []
    name_a, name_b = safe_text(name_a), safe_text(name_b)
    for s in diff["status"]:
        lines.append(
            f"status     {_claim_name(s['key'])}: {safe_text(s['a'])} -> {safe_text(s['b'])}"
        )
    for s in diff["statistic"]:
        lines.append(
            f"statistic  {_claim_name(s['key'])}: {_num(s['a'])} -> {_num(s['b'])} "
            f"({safe_text(s['status'])})"
        )
    for side, name in (("only_a", name_a), ("only_b", name_b)):
        for key in diff[side]:
            lines.append(f"only in {name}  {_claim_name(key)}")
    lines.append(
        f"{diff['compared']} claims in both: {len(diff['status'])} changed status, "
        f"{len(diff['statistic'])} moved by more than their interval; "
        f"{len(diff['only_a'])} only in {name_a}, {len(diff['only_b'])} only in {name_b}"
    )
    return lines


def seed_table(runs: Mapping[Any, Mapping[Key, Mapping[str, Any]]]) -> dict[str, Any]:
    """Per claim, its statuses across runs (one per seed), and the stability counts.

    ``flips``: claims reproduced in one run and not reproduced in another (must be 0;
    ``flips_paper``: those of them that are paper claims);
    ``undecided_fraction``: undecided verdicts over all verdicts of all runs (≤ 10% wanted);
    ``null_statistics``: verdicts without a finite statistic (must be 0). Consistency checks
    and diagnostics are listed but count in none of these.
    """
    seeds = list(runs)
    keys = sorted({k for tree in runs.values() for k in tree})
    rows = []
    for key in keys:
        entries = [runs[s].get(key) for s in seeds]
        statuses = [e["status"] if e else None for e in entries]
        kinds = {str(e.get("kind") or "verdict") for e in entries if e}
        present = [s for s in statuses if s is not None]
        rows.append(
            {
                "artifact": key[0],
                "claim": key[1],
                "source": next((str(e.get("source") or "") for e in entries if e), ""),
                "statuses": statuses,
                "measured": [e.get("measured") if e else None for e in entries],
                "verdict": bool(kinds - {CONSISTENCY, DIAGNOSTIC}),
                "stable": len(set(statuses)) == 1,
                "flip": REPRODUCED in present and NOT_REPRODUCED in present,
            }
        )
    per_seed = []
    for i, seed in enumerate(seeds):
        verdicts = [r for r in rows if r["verdict"] and r["statuses"][i] in VERDICT_STATUSES]
        counts = {s: sum(r["statuses"][i] == s for r in verdicts) for s in VERDICT_STATUSES}
        per_seed.append(
            {
                "seed": seed,
                "verdicts": len(verdicts),
                "reproduced": counts[REPRODUCED],
                "not_reproduced": counts[NOT_REPRODUCED],
                "undecided": counts[UNDECIDED],
                "null_statistics": sum(is_null(r["measured"][i]) for r in verdicts),
            }
        )
    verdicts = sum(p["verdicts"] for p in per_seed)
    undecided = sum(p["undecided"] for p in per_seed)
    return {
        "seeds": seeds,
        "claims": len(rows),
        "verdicts": verdicts,
        "flips": sum(r["flip"] for r in rows),
        "flips_paper": sum(r["flip"] and r["source"] != "lbrepro" for r in rows),
        "moved": sum(not r["stable"] for r in rows),
        "undecided_fraction": undecided / verdicts if verdicts else 0.0,
        "null_statistics": sum(p["null_statistics"] for p in per_seed),
        "per_seed": per_seed,
        "rows": rows,
    }
