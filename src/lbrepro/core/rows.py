"""The tidy-row vocabulary: what every table row carries, declared once and enforced.

A row is one (point, method, quantity) value. Its first columns are the data contract's
(README, "Outputs"); an estimate — a value with a 95% interval — also carries where it came
from and whether it can be trusted. :func:`estimate_row` writes an
:class:`~lbrepro.core.stats.Estimate` as those columns and
:func:`lbrepro.core.verdicts.estimate` reads them back, so no artifact spells ``ci_low`` by
hand; :func:`table_problems` checks a table against :data:`COLUMNS` when a job writes it and
again when ``collect_table`` collects it, so a row without ``converged`` fails the job that
made it, naming the artifact, the row and the column (it once read as converged).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lbrepro.core.errors import LbreproError
from lbrepro.core.stats import Estimate

#: The ``method`` values of the data contract.
METHODS = frozenset({"cf", "mf", "rmf", "sim", "sde", "mdp", "published", "path"})
#: Methods whose values are estimates: each carries its 95% interval.
SIMULATED = frozenset({"sim", "sde"})
#: The columns every row carries, non-empty.
REQUIRED = ("artifact", "point", "method", "quantity")
#: The columns an estimate with an interval carries besides its value (``estimate_row``).
ESTIMATE_COLUMNS = ("ci_low", "ci_high", "N", "seed", "batches", "converged")


@dataclass(frozen=True)
class Column:
    """One column of the vocabulary: its meaning and the type of a non-empty cell."""

    meaning: str
    kind: str  # "text", "number", "integer", "flag", "id" (integer or text)


#: The declared vocabulary of the leading and estimate columns (an artifact adds its own
#: parameter columns after them: ``rho``, ``d``, ``k``, …).
COLUMNS: dict[str, Column] = {
    "artifact": Column("the artifact id", "text"),
    "point": Column("the point id (one parameter set)", "text"),
    "method": Column("how the value was obtained: " + ", ".join(sorted(METHODS)), "text"),
    "quantity": Column("what the value is (u, mean_jobs, mean_sojourn, …)", "text"),
    "value": Column(
        'the value (empty: not computed; "inf": infinite, e.g. E[T] at E[X²] = ∞)', "number"
    ),
    "ci_low": Column("lower end of the 95% interval", "number"),
    "ci_high": Column("upper end of the 95% interval", "number"),
    "N": Column("servers of the simulated system", "integer"),
    "seed": Column("entropy of the point's random stream", "id"),
    "batches": Column("batch means (or replications) behind the interval", "integer"),
    "converged": Column(
        "False: the run failed the relaxation check (too few relaxation times for any honest "
        "interval); True: its interval decides, the conservative one of few large batches "
        "for a slowly mixing run (batches <= 10)",
        "flag",
    ),
    "doublings": Column(
        "how often the point's run was doubled beyond its configured length (for its batch "
        "means to converge, for a claim's decision, or by a workflow extension; only where "
        "more than 0)",
        "integer",
    ),
    "looks": Column(
        "how often a claim's decision was taken while the run doubled until decided (only "
        "where it was more than once: a verdict on it can err at this many times its rate)",
        "integer",
    ),
}


class TableError(LbreproError, ValueError):
    """A table breaks the row vocabulary; the message names the artifact, row and column."""


def estimate_row(est: Estimate, *, N: int | None = None, seed: Any = None) -> dict[str, Any]:
    """The columns of one scalar estimate: value, interval, N, seed, batches, converged
    (and ``looks`` where the run was extended until a claim was decided).

    ``N`` and ``seed`` default to the estimate's own. ``lbrepro.core.verdicts.estimate``
    reads the row back to the same estimate.
    """
    row = {
        "value": float(est.mean),
        "ci_low": float(est.low),
        "ci_high": float(est.high),
        "N": est.N if N is None else N,
        "seed": est.seed if seed is None else seed,
        "batches": int(est.batches),
        "converged": bool(est.converged),
    }
    if est.looks > 1:
        row["looks"] = int(est.looks)
    return row


def not_converged(flag: Any) -> bool:
    """Whether a row's ``converged`` cell says the run has no honest interval: exactly False
    (a bool or NumPy bool, as :func:`lbrepro.core.io.read_table` gives it) or its text
    "False"; None (an exact row, or no flag) and everything else do not.

    The one rule for reading the flag. False is set only by the relaxation check
    (:func:`lbrepro.sim.runlength.slow_run_problem`: too few relaxation times, or an infinite
    one), never because the batch means stayed correlated: such a slowly mixing run carries
    the conservative interval of few large batches, flagged True, and decides. A False row's
    interval decides nothing (its verdicts are *undecided (invalid run)*); figures and
    summaries do not show it."""
    if isinstance(flag, bool | np.bool_):
        return not flag
    return isinstance(flag, str) and flag.strip().lower() == "false"


#: What a summary cell says instead of an interval that cannot be trusted.
NO_CI = "not converged: no CI"


def interval_text(row: Mapping[str, Any], spec: str = ".4f") -> str:
    """An estimate and its 95% interval for a summary cell, ``value [low, high]``; a row of a
    run that did not converge shows its value alone, saying why (:func:`not_converged`)."""
    if not_converged(row.get("converged")):
        return f"{row['value']:{spec}} ({NO_CI})"
    return f"{row['value']:{spec}} [{row['ci_low']:{spec}}, {row['ci_high']:{spec}}]"


#: The layouts of :func:`pm`: ``value ± half``, ``value±half`` (in a list), ``value (±half)``.
PM_LAYOUTS = {"spaced": "{v} ± {h}", "tight": "{v}±{h}", "paren": "{v} (±{h})"}


def pm(
    value: Any, half: Any, spec: str = ".4f", half_spec: str = ".1g", layout: str = "spaced"
) -> str:
    """A value and its half-width (or standard error, or margin), ``value ± half``: the one
    place an interval is written with "±" (``layout``: one of :data:`PM_LAYOUTS`). The
    formats are applied as in an f-string (``format(value, spec)``)."""
    return PM_LAYOUTS[layout].format(v=format(value, spec), h=format(half, half_spec))


def pm_text(row: Mapping[str, Any], spec: str = ".4f", half_spec: str = ".1g") -> str:
    """``value ± half-width`` of an estimate's row for a summary cell (:func:`pm`); the value
    alone, saying why, for a run that did not converge."""
    if not_converged(row.get("converged")):
        return f"{row['value']:{spec}} ({NO_CI})"
    return pm(row["value"], (row["ci_high"] - row["ci_low"]) / 2, spec, half_spec)


def _empty(cell: Any) -> bool:
    return cell is None or cell == "" or (isinstance(cell, float) and math.isnan(cell))


def _fits(cell: Any, kind: str) -> bool:
    if kind == "text":
        return isinstance(cell, str) and cell != ""
    if kind == "flag":
        return isinstance(cell, bool)
    if isinstance(cell, bool):
        return False
    if kind == "integer":
        return isinstance(cell, int) or (isinstance(cell, float) and cell.is_integer())
    if kind == "number":  # an infinite value is written "inf" (a cell, unlike JSON, can say so)
        return isinstance(cell, int | float) or cell in ("inf", "-inf")
    return isinstance(cell, int | str)  # "id"


def row_problem(row: Mapping[str, Any]) -> str | None:
    """What is wrong with one row (None if nothing): a missing or mistyped column."""
    for column in REQUIRED:
        if _empty(row.get(column)):
            return f"no {column!r}"
    if row["method"] not in METHODS:
        return f"method {row['method']!r} is none of {', '.join(sorted(METHODS))}"
    for column, spec in COLUMNS.items():
        cell = row.get(column)
        if not _empty(cell) and not _fits(cell, spec.kind):
            article = "an" if spec.kind in ("integer", "id") else "a"
            return f"{column!r} = {cell!r} is not {article} {spec.kind}"
    low, high = row.get("ci_low"), row.get("ci_high")
    if row["method"] in SIMULATED and not _empty(row.get("value")) and _empty(low):
        return f"a {row['method']!r} value without its interval (one without is a 'path')"
    if _empty(low) != _empty(high):
        return "an interval needs both 'ci_low' and 'ci_high'"
    if not _empty(low):
        # N is the simulated system's size; a diffusion limit (``sde``) is N → ∞ and has none.
        needed = (
            ESTIMATE_COLUMNS[2:] if row["method"] == "sim" else ("seed", "batches", "converged")
        )
        for column in needed:
            if _empty(row.get(column)):
                return f"an estimate with an interval has no {column!r}"
        if not low <= high:
            return f"'ci_low' {low!r} > 'ci_high' {high!r}"
    return None


def table_problems(rows: Sequence[Mapping[str, Any]], artifact_id: str | None) -> list[str]:
    """Every row that breaks the vocabulary (or, given ``artifact_id``, is another
    artifact's), one line each, naming the artifact, the row and the column."""
    problems = []
    for i, row in enumerate(rows):
        problem = row_problem(row)
        if problem is None and artifact_id is not None and row.get("artifact") != artifact_id:
            problem = f"artifact {row.get('artifact')!r}, not {artifact_id!r}"
        if problem is not None:
            where = f"row {i + 1} ({row.get('point')}, {row.get('method')}, {row.get('quantity')})"
            problems.append(f"{artifact_id or row.get('artifact')}: {where}: {problem}")
    return problems


def check_table(rows: Sequence[Mapping[str, Any]], artifact_id: str | None, where: str) -> None:
    """Raise :class:`TableError` naming the first bad row (and how many there are)."""
    problems = table_problems(rows, artifact_id)
    if problems:
        more = f" (and {len(problems) - 1} more rows)" if len(problems) > 1 else ""
        raise TableError(f"{where}: {problems[0]}{more}")
