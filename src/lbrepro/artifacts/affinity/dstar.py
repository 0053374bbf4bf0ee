"""affinity-dstar: d1*, the smallest primary selection with no-queueing fixed points."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from lbrepro.artifacts.affinity import estimates
from lbrepro.artifacts.affinity.config_checks import MU1, check_loads_and_d1
from lbrepro.artifacts.affinity.judging import exact_verdict
from lbrepro.artifacts.affinity.rows import SLUG, is_real_number, table_row
from lbrepro.artifacts.registry import Artifact, Rows
from lbrepro.core.claims import Claim, consistency, make_claim
from lbrepro.core.io import select
from lbrepro.core.verdicts import EmptyComparisonError, Verdict
from lbrepro.models import affinity as model

#: The paper's bracket of d1* (Figs. 4 and 9): at λ = BRACKET_LAM, μ2 = BRACKET_MU2 the
#: selection d1 = BRACKET[0] lies below d1* (a unique fixed point), BRACKET[1] at or above it.
BRACKET_LAM = 0.8
BRACKET_MU2 = 0.5
BRACKET = (3, 25)
#: The bracket's control searches the nearest load where it fails in steps of LOAD_STEP.
LOAD_STEP = 0.01


def points(cfg: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """One job: every (λ, μ2) of the table (closed forms, instantaneous)."""
    return {"all": {"lam": list(cfg["lam"]), "mu2": list(cfg["mu2"]), "mu1": cfg.get("mu1", MU1)}}


def validate(cfg: Mapping[str, Any]) -> None:
    """Every (λ, μ2) pair must be a valid, stable parameter set."""
    for mu2 in cfg["mu2"]:
        check_loads_and_d1({"lam": cfg["lam"], "mu2": mu2, "mu1": cfg.get("mu1", MU1)})


def compute(p: dict[str, Any], seed: np.random.SeedSequence) -> Rows:
    """d1* and its real-valued birth point per (λ, μ2), with an independent dense-grid check."""
    rows: Rows = []
    u = np.linspace(0.0, 1.0, 100001)[1:]
    for mu2 in p["mu2"]:
        for lam in p["lam"]:
            d = model.dstar(lam, mu2, p["mu1"])
            dc = model.dstar_continuous(lam, mu2, p["mu1"])
            # Independent check of d1* on a dense u grid: a root at d1*, none at d1* − 1.
            has = (
                float(np.min(model.no_queueing_balance(u, lam, mu2, p["mu1"], d))) < 0 or lam < mu2
            )
            none_below = (
                d == 1 or float(np.min(model.no_queueing_balance(u, lam, mu2, p["mu1"], d - 1))) > 0
            )
            # The control: the same grid test with d1* − 1 as the candidate must not confirm it.
            shifted = None
            if d >= 2:
                bal = model.no_queueing_balance
                shifted = bool(
                    float(np.min(bal(u, lam, mu2, p["mu1"], d - 1))) < 0
                    and (d == 2 or float(np.min(bal(u, lam, mu2, p["mu1"], d - 2))) > 0)
                )
            rows.append(
                table_row(
                    "cf",
                    "dstar",
                    d,
                    lam=lam,
                    mu2=mu2,
                    dstar_real=dc,
                    grid_confirms=bool(has and none_below),
                    grid_confirms_shifted=shifted,
                )
            )
    # The bracket claim's control, where the point holds its (λ, μ2): d1* at the nearest load
    # where the bracket fails (none found: no row, and the claim is undecidable).
    if _holds(p["lam"], BRACKET_LAM) and _holds(p["mu2"], BRACKET_MU2):
        lam_c = _nearest_failing_load(BRACKET_LAM, BRACKET_MU2, p["mu1"])
        if lam_c is not None:
            d_c = model.dstar(lam_c, BRACKET_MU2, p["mu1"])
            rows.append(table_row("cf", "dstar_control", d_c, lam=lam_c, mu2=BRACKET_MU2))
    return rows


def _holds(values: Iterable[float], x: float) -> bool:
    """Whether ``x`` is one of ``values`` (to 1e-12, as ``select`` matches them)."""
    return any(math.isclose(v, x, rel_tol=1e-12, abs_tol=1e-15) for v in values)


def _in_bracket(d: int) -> bool:
    """Whether d1* lies in the paper's bracket: d1 = BRACKET[0] below it, BRACKET[1] at or
    above it."""
    return BRACKET[0] < d <= BRACKET[1]


def check(rows: Rows, cfg: Mapping[str, Any]) -> list[Claim]:
    """The d1 = 3 / 25 bracket at λ = 0.8, the grid search's agreement, d1* increasing in λ."""
    claims = []
    lo, hi = BRACKET

    def bracket(d: int, lam: float) -> Verdict:
        """Whether d1* lies in the bracket (lo, hi]: d1 = lo below it, d1 = hi at or above it."""
        return exact_verdict(_in_bracket(d), d, f"{lo} < d1* ≤ {hi}", f"d1* = {d} at λ = {lam:g}")

    found = select(rows, quantity="dstar")
    r = select(found, lam=BRACKET_LAM, mu2=BRACKET_MU2)
    if r:
        # Control: the nearest load (LOAD_STEP steps) at which the bracket no longer holds.
        near = select(rows, quantity="dstar_control", mu2=BRACKET_MU2)
        if not near:
            raise EmptyComparisonError("affinity-dstar: no load breaks the bracket")
        lam_c = near[0]["lam"]
        claims.append(
            make_claim(
                f"λ = {BRACKET_LAM:g}, μ2 = {BRACKET_MU2:g}: d1 = {lo} lies below d1* (the fixed "
                f"point is unique) and d1 = {hi} at or above it (two more fixed points)",
                bracket(r[0]["value"], BRACKET_LAM),
                control=(
                    f"the same bracket holds at λ = {lam_c:g}",
                    bracket(near[0]["value"], lam_c),
                ),
                distance=f"the nearest load in steps of {LOAD_STEP:g} where the bracket changes: "
                f"Δλ = {lam_c - BRACKET_LAM:+.2f}",
            )
        )
    ok = [r for r in found if r["grid_confirms"]]
    shifted = [r for r in found if r.get("grid_confirms_shifted") is not None]
    claims.append(
        make_claim(
            "d1* from the convexity of F agrees with a dense grid search (a root at d1*, none at "
            "d1* − 1) for every (λ, μ2)",
            exact_verdict(len(ok) == len(found), len(ok), f"{len(found)} of {len(found)} (λ, μ2)"),
            control=(
                "the same grid test confirms d1* − 1 as the candidate "
                f"({len(shifted)} rows with d1* ≥ 2)",
                exact_verdict(
                    bool(shifted) and all(r["grid_confirms_shifted"] for r in shifted),
                    sum(bool(r["grid_confirms_shifted"]) for r in shifted),
                    f"{len(shifted)} of {len(shifted)} (λ, μ2)",
                ),
            ),
            distance="one step below the claimed threshold (d1* − 1) at every (λ, μ2)",
            source="lbrepro",
        )
    )

    def monotone(vals: list[int]) -> Verdict:
        """Whether the d1* values are non-decreasing in λ and larger at the last λ."""
        if len(vals) < 2:
            raise EmptyComparisonError(f"affinity-dstar: a trend needs two λ, got {vals}")
        ok = all(a <= b for a, b in itertools.pairwise(vals)) and vals[-1] > vals[0]
        return exact_verdict(ok, vals[-1] - vals[0], "non-decreasing, last > first", str(vals))

    for mu2 in cfg["mu2"]:
        vals = [r["value"] for r in sorted(select(found, mu2=mu2), key=lambda r: r["lam"])]
        # ∂F/∂λ = (1 − (1−u)^d1)/μ1 + (1−u)^d1/μ2 > 0: F rises with λ, so a root needs a
        # larger d1 — monotone by construction, a consistency check of the computation.
        claims.append(
            consistency(
                f"μ2 = {mu2:.4g}: d1* increases with λ (non-decreasing, larger at the largest λ; "
                "F increases in λ, so this holds by construction)",
                monotone(vals),
            )
        )
    return claims


def _nearest_failing_load(lam: float, mu2: float, mu1: float) -> float | None:
    """The load nearest to ``lam`` (steps of LOAD_STEP, below μ1) where the bracket fails,
    rounded to the step's two decimals; None if no load within 99 steps breaks it."""
    for k in range(1, 100):
        for cand in (lam - LOAD_STEP * k, lam + LOAD_STEP * k):
            if 0 < cand < mu1 and not _in_bracket(model.dstar(cand, mu2, mu1)):
                return round(cand, 2)
    return None


def summary(rows: Rows) -> Rows:
    """d1* per λ (rows) and μ2 (columns), with the real d where the roots are born."""
    out: Rows = []
    found = select(rows, quantity="dstar")
    for lam in sorted({r["lam"] for r in found}):
        row: dict[str, Any] = {"λ": lam}
        for r in select(found, lam=lam):
            dc = r["dstar_real"]
            row[f"d1* (μ2 = {r['mu2']:.3g})"] = f"{r['value']}" + (
                f"  (real {dc:.2f})" if is_real_number(dc) else ""
            )
        out.append(row)
    return out


ARTIFACT = Artifact(
    id="affinity-dstar",
    slug=SLUG,
    kind="table",
    title="d1*: the smallest primary selection with no-queueing fixed points",
    caption=(
        "d1* = smallest d1 for which F(u) = u + (λ/μ1)(1 − (1−u)^d1) + (λ/μ2)(1−u)^d1 − 1 "
        f"has a root (μ1 = {MU1:g} unless the section sets it); for λ < μ2 there is always "
        "exactly one (d1* = 1). F is convex, "
        "so its minimum decides; 'real' is the non-integer d at which the roots are born."
    ),
    methods=("CF",),
    points=points,
    compute=compute,
    cost=estimates.dstar_cost,
    memory=estimates.dstar_memory,
    check=check,
    summary=summary,
    validate=validate,
)
