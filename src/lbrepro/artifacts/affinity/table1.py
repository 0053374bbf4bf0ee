"""affinity-table1: Table 1, the smallest degree d of the JSQ(k) coupling (exact integers)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from lbrepro.artifacts.affinity import estimates
from lbrepro.artifacts.affinity.judging import exact_verdict
from lbrepro.artifacts.affinity.rows import SLUG, table_row
from lbrepro.artifacts.registry import Artifact, Rows
from lbrepro.core.claims import Claim, make_claim
from lbrepro.core.io import select
from lbrepro.core.verdicts import EmptyComparisonError, Verdict
from lbrepro.models import affinity as model


def points(cfg: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """One job: the whole table (exact integers, instantaneous)."""
    return {"all": {"N": cfg["N"], "k_max": cfg["k_max"]}}


#: The published row: the paper's Table 1 (Cardinaels et al. (2019), §3, N = 50; k = 2, 3, 4, 5).
PUBLISHED_TABLE1 = {2: 31, 3: 34, 4: 36, 5: 38}
#: The number of servers of the published Table 1.
TABLE1_N = 50
TABLE1_SOURCE = (
    f"the paper's Table 1 (Cardinaels et al. (2019), §3: N = {TABLE1_N}, "
    f"k = {min(PUBLISHED_TABLE1)}–{max(PUBLISHED_TABLE1)})"
)


def _dominance_row(quantity: str, N: int, k: int, d: int) -> dict[str, Any]:
    """A degree d found for k, with whether f_aff ≥ f_ref at every position for d and for
    d − 1 (exact fractions at all N + 1 positions)."""
    full = model.step_dominates(N, d, k)
    below = model.step_dominates(N, d - 1, k) if 2 * (d - 1) >= N else False
    return table_row("cf", quantity, d, N=N, k=k, dominates_everywhere=full, d_minus_1=below)


def _first_jump_d(N: int, k: int) -> int | None:
    """The control's wrong shortcut: the smallest d ≥ N/2 whose first jump beats f_ref(1)."""
    fr1 = model.f_ref(N, k)[1]
    return next((d for d in range((N + 1) // 2, N) if model.f_aff(N, d)[1] > fr1), None)


def compute(p: dict[str, Any], seed: np.random.SeedSequence) -> Rows:
    """The smallest d per k, with dominance checked at every position for d and d − 1, and
    the controls' rows: the naive first-jump test's d per k (``d_first_jump``, its dominance
    checked the same way) and the published k's smallest d at N ± 1 (``d_min_near``)."""
    N = p["N"]
    ks = range(1, p["k_max"] + 1)
    rows: Rows = [_dominance_row("d_min", N, k, model.table1_d(N, k)) for k in ks]
    for k in ks:
        d = _first_jump_d(N, k)
        if d is not None:
            rows.append(_dominance_row("d_first_jump", N, k, d))
    for n in (N - 1, N + 1):
        rows += [
            table_row("cf", "d_min_near", model.table1_d(n, k), N=n, k=k) for k in PUBLISHED_TABLE1
        ]
    return rows


def _shortcut_agrees(row: dict[str, Any]) -> bool:
    """The single-position test picked the row's d: f_aff ≥ f_ref everywhere at d, not at
    d − 1."""
    return bool(row["dominates_everywhere"]) and not row["d_minus_1"]


def check(rows: Rows, cfg: Mapping[str, Any]) -> list[Claim]:
    """The published row at N = 50 and the concavity shortcut, each with its control."""
    N = cfg["N"]
    got = {r["k"]: r["value"] for r in select(rows, quantity="d_min")}
    ks = list(PUBLISHED_TABLE1)
    pub = [PUBLISHED_TABLE1[k] for k in ks]
    listed = ", ".join(str(d) for d in pub)

    def reproduces(row: list[Any], n: int) -> Verdict:
        """Whether a computed row equals the published one, naming the k where it differs."""
        miss = [k for k, a, b in zip(ks, row, pub, strict=True) if a != b]
        return exact_verdict(
            not miss,
            len(ks) - len(miss),
            f"{len(ks)} of {len(ks)} k equal to {pub}",
            f"N = {n}: computed {row}"
            + (f", differs from the published row at k = {miss}" if miss else ""),
        )

    # A computed row against the published one can fail: a verdict. Control: the same exact
    # computation at N ± 1 must not reproduce the published row (the table pins N down).
    near = {n: _near_row(rows, n, ks) for n in (N - 1, N + 1)}
    ctrl = [reproduces(row, n) for n, row in near.items()]
    shifts = "; ".join(
        f"N = {n}: {row} (d moves by {[a - b for a, b in zip(row, pub, strict=True)]})"
        for n, row in near.items()
    )
    claims = [
        make_claim(
            f"Table 1 (N = {N}): the smallest degree d for k = {', '.join(map(str, ks))} equals "
            f"the published {listed} (source: {TABLE1_SOURCE})",
            reproduces([got.get(k) for k in ks], N),
            control=(
                f"the same computation at N = {N - 1} or N = {N + 1} reproduces the row",
                exact_verdict(
                    any(c.passed for c in ctrl),
                    max(c.measured for c in ctrl),
                    str(pub),
                    "; ".join(c.details for c in ctrl),
                ),
            ),
            distance=f"one server either side of N = {N}: {shifts}",
            details="exact integer arithmetic: (d+1)·C(N,k) > N·(C(N,k) − C(d+1,k))",
            source="published",
        )
    ]
    # The paper's shortcut: f_ref is concave, so the test at the single position N − d − 1
    # decides dominance everywhere. Control: a naive test at the first jump (position 1) must
    # not agree with dominance everywhere for every k.
    rows_d = select(rows, quantity="d_min")
    agree = [r["k"] for r in rows_d if _shortcut_agrees(r)]
    first = {r["k"]: r for r in select(rows, quantity="d_first_jump")}
    naive = [r["k"] for r in rows_d if r["k"] in first and _shortcut_agrees(first[r["k"]])]
    moved = [first[r["k"]]["value"] - r["value"] for r in rows_d if r["k"] in first]
    if not moved:
        raise EmptyComparisonError("affinity-table1: no first-jump degree for any k")
    claims.append(
        make_claim(
            "Concavity shortcut: the single-position test f_aff(N−d−1) > f_ref(N−d−1) gives "
            "the smallest d with f_aff ≥ f_ref at every position, for every k",
            exact_verdict(
                len(agree) == len(rows_d), len(agree), f"{len(rows_d)} of {len(rows_d)} k"
            ),
            control=(
                "a naive single-position test at the first jump (position 1) gives the same d "
                "for every k",
                exact_verdict(
                    len(naive) == len(rows_d), len(naive), f"{len(rows_d)} of {len(rows_d)} k"
                ),
            ),
            distance="the neighbouring single-position test (position 1 instead of N − d − 1): "
            f"its d differs from the shortcut's by {min(moved)} to {max(moved)} over k",
            details="checked with exact fractions at all N + 1 positions for d and d − 1",
            source="lbrepro",
        )
    )
    return claims


def _near_row(rows: Rows, n: int, ks: list[int]) -> list[Any]:
    """The control's row: the smallest d at n servers for the published k."""
    got = {r["k"]: r["value"] for r in select(rows, quantity="d_min_near", N=n)}
    if any(k not in got for k in ks):
        raise EmptyComparisonError(f"affinity-table1: no smallest d at N = {n} for every k")
    return [got[k] for k in ks]


def summary(rows: Rows) -> Rows:
    """Table 1 as in the paper: k and its smallest d."""
    return [
        {"k": r["k"], f"smallest d (N = {r['N']})": r["value"]}
        for r in select(rows, quantity="d_min")
    ]


ARTIFACT = Artifact(
    id="affinity-table1",
    slug=SLUG,
    kind="table",
    title="Table 1: smallest degree d for the JSQ(k) coupling",
    caption=(
        "Smallest degree d ≥ N/2 of a d-regular graph for which the worst-case step "
        "function f_aff lies above the JSQ(k) step function f_ref, for k = 1 … k_max at the "
        f"section's N (the paper's Table 1: N = {TABLE1_N}); computed with exact integers."
    ),
    methods=("CF",),
    points=points,
    compute=compute,
    cost=estimates.table1_cost,
    memory=estimates.table1_memory,
    check=check,
    summary=summary,
    reconstructions=(
        f"The published row {', '.join(map(str, PUBLISHED_TABLE1.values()))} is "
        f"{TABLE1_SOURCE}; the computed d for other k comes from the same exact integer "
        "condition.",
    ),
)
