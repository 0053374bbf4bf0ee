"""Points run longer until their claims are decided: the workflow's extension round.

A claim that reads one run can be doubled until decided inside its job
(:func:`lbrepro.sim.runlength.run_micro_batches` with ``needed``). A claim that reads
several points — a fitted order over a sweep of N, a comparison over a grid of loads, an
agreement judged on a run whose simulator has no such hook — has no job that sees all its
points. For those the workflow takes one more look: the artifact's check runs on the job
tables; each verdict left undecided because its interval straddles the margin states the
run-length factor that would decide it (:attr:`lbrepro.core.claims.Claim.length_needed`);
where that factor is within reach, every point the claim reads (``Claim.runs``) is run
again 2^k times longer, and the artifact's table takes those rows in place of the first.
The check then looks again at the table with the longer rows, and so on while a claim is
undecided within reach (sequential doubling, a round at a time; each round's k is larger
than the last for every point it reruns, so the rounds end within ``extend``).

**Within reach** means the same cap as in-job doubling: no run longer than 2^``extend``
times its configured length (``simulation.extend``), counted from what the first run
already did (its ``doublings`` column), and no run beyond the event budget
(``simulation.max_events``: such a point keeps its first rows, and its job log says why).
A factor beyond reach, an infinite one (a component no run length resolves), an invalid
run or a claim whose control is reproduced too is not extended: it stays undecided and
says what precision would decide it. A point several claims ask for runs at the longest
length they need.

**Looks.** Each round's check decided "undecided, extend"; the check of the final table is
one more look at the same claim: the rows of a run made after r rounds carry ``looks`` r
higher than their run gave, so the report counts a verdict on them at r + 1 times its error
rate (its union bound). The longer run draws from the point's own random stream (same seed,
artifact and point), so the result is still a function of the seed alone.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from lbrepro.core.claims import STRADDLES, VERDICT, Claim
from lbrepro.core.rows import SIMULATED

__all__ = ["doublings_of", "extended_params", "lengthen", "merge_extension", "plan_extension"]

#: A factor within this of a power of two needs no further doubling (rounding of 1/√length).
_SLACK = 1e-9


def doublings_of(rows: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """How often each point's run was already doubled beyond its configured length: the
    largest ``doublings`` of its simulated rows (0 where none is written)."""
    done: dict[str, int] = {}
    for row in rows:
        if row.get("method") not in SIMULATED:
            continue
        point = str(row["point"])
        done[point] = max(done.get(point, 0), int(row.get("doublings") or 0))
    return done


def plan_extension(
    claims: Sequence[Claim],
    extendable: Iterable[str],
    done: Mapping[str, int],
    extend: int,
) -> dict[str, int]:
    """The points to run longer: point id → k, the run is 2^k times its configured length.

    ``claims`` are the check's claims on the table as it stands (the job tables' rows, with
    the rows of earlier rounds in place of the first), ``extendable`` the points that have
    a run-length key, ``done`` their doublings so far (:func:`doublings_of`) and ``extend``
    the doublings allowed in all. A claim is extended when it is an undecided verdict whose
    interval straddles its margin, its factor is finite, every point it reads is extendable,
    and the length it needs — factor × 2^(doublings done) — is at most 2^extend.
    """
    extendable = set(extendable)
    plan: dict[str, int] = {}
    for claim in claims:
        # undecided because it straddles: not an invalid run, nor a control reproduced too
        if claim.kind != VERDICT or not claim.runs or claim.to_dict()["reason"] != STRADDLES:
            continue
        factor = float(claim.length_needed)
        if not 1.0 < factor < math.inf or not set(claim.runs) <= extendable:
            continue
        # The run length each point needs, in configured lengths (its run may have doubled).
        first = max(done.get(run, 0) for run in claim.runs)
        k = math.ceil(math.log2(factor) + first - _SLACK)
        if k > extend:
            continue
        for run in claim.runs:
            plan[run] = max(plan.get(run, 0), k)
    # A point already that long gains nothing by running again.
    return {p: k for p, k in sorted(plan.items()) if k > done.get(p, 0)}


def extended_params(params: Mapping[str, Any], key: str, k: int) -> dict[str, Any]:
    """A point's parameters with its run length ``key`` 2^k times as long (an integer length,
    such as a number of slots, stays an integer)."""
    length = params[key]
    longer = length * 2**k if isinstance(length, int) else float(length) * 2.0**k
    return dict(params) | {key: longer}


def lengthen(rows: Iterable[Mapping[str, Any]], k: int, looks: int = 1) -> list[dict[str, Any]]:
    """The rows of a point run 2^k times longer, as the table records them: its simulated rows
    carry ``doublings`` (k plus the run's own) and ``looks`` more looks — the rounds that
    looked at its claims before this run (the first table's, and each earlier extension's)."""
    out = []
    for row in rows:
        row = dict(row)
        if row.get("method") in SIMULATED:
            row["doublings"] = k + int(row.get("doublings") or 0)
            row["looks"] = int(row.get("looks") or 1) + looks
        out.append(row)
    return out


def merge_extension(
    rows: Sequence[Mapping[str, Any]], extended: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """The artifact's table: the job tables' rows, with each extended point's rows replaced
    by its longer run's, in the place of the point's first row."""
    longer: dict[str, list[dict[str, Any]]] = {}
    for row in extended:
        longer.setdefault(str(row["point"]), []).append(dict(row))
    out: list[dict[str, Any]] = []
    placed: set[str] = set()
    for row in rows:
        point = str(row["point"])
        if point not in longer:
            out.append(dict(row))
        elif point not in placed:
            out.extend(longer[point])
            placed.add(point)
    if set(longer) - placed:
        missing = ", ".join(sorted(set(longer) - placed))
        raise ValueError(f"extended points not in the job tables: {missing}")
    return out
