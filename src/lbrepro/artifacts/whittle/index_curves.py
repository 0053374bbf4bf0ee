"""Shared by whittle-index-linear and whittle-index-meanvar: the index points and rows, the
d-versus-q ratio that judges "d matters little / strongly", and the d = 1 closed-form claim."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from lbrepro.artifacts.registry import Rows
from lbrepro.artifacts.whittle.grid import check_grid, table_d_label
from lbrepro.artifacts.whittle.reconstructions import RECON_COSTS, RECON_EVENTS, RECON_RELAX
from lbrepro.core.claims import Claim, close, make_claim
from lbrepro.core.errors import ConfigError
from lbrepro.core.ids import add_point, num
from lbrepro.core.io import select
from lbrepro.core.verdicts import EmptyComparisonError, Verdict
from lbrepro.models import whittle as model

#: Mean–variance weight of the control rows the linear-cost artifact adds (its claims' control).
CONTROL_BETA = 5.0
#: "d matters little / strongly": the largest change of W(n) across d, at a fixed q, against
#: the smallest change across q (q > p), at a fixed d, at the same state n. Our yardstick.
D_OVER_Q = 1 / 6


def index_points(cfg: Mapping[str, Any], betas: list[float]) -> dict[str, dict[str, Any]]:
    """One point per (p, β): the whole (q, d) grid of one arrival probability and cost."""
    points: dict[str, dict[str, Any]] = {}
    for p in cfg["p"]:
        for b in betas:
            params = {
                "p": p,
                "beta": b,
                "q": list(cfg["q"]),
                "d": [str(d) for d in cfg["d"]],
                "nmax": cfg["nmax"],
            }
            point_id = f"p{num(p)}-beta{num(b)}" if betas != [0.0] else f"p{num(p)}"
            add_point(points, point_id, params, "p, beta")
    return points


def compute_index(params: dict[str, Any], seed: np.random.SeedSequence) -> Rows:
    """W(0..nmax) per (q, d), the d = 1 closed form, and the other cost's index as control."""
    p, beta, nmax = params["p"], params["beta"], params["nmax"]
    cost = "linear" if beta == 0 else "meanvar"
    rows: Rows = []
    for q in params["q"]:
        for d in params["d"]:
            dv = model.parse_d(d)
            W = model.whittle_indices(p, q, dv, nmax, cost, beta)
            base = {"p": p, "q": q, "d": table_d_label(d), "cost": cost, "beta": beta}
            rows += [
                base | {"method": "mdp", "quantity": "W", "n": n, "value": float(W[n])}
                for n in range(nmax + 1)
            ]
            if dv == 1.0:
                cf = model.fcfs_index(p, q, nmax, cost, beta)
                rows += [
                    base | {"method": "cf", "quantity": "W", "n": n, "value": float(cf[n])}
                    for n in range(nmax + 1)
                ]
            # the other cost at the same point: the control of the d-versus-q claims
            if cost == "meanvar":
                other, other_q = model.whittle_indices(p, q, dv, nmax, "linear"), "W_linear"
            else:
                other = model.whittle_indices(p, q, dv, nmax, "meanvar", CONTROL_BETA)
                other_q = "W_meanvar"
            rows += [
                base | {"method": "mdp", "quantity": other_q, "n": n, "value": float(other[n])}
                for n in range(nmax + 1)
            ]
    return rows


def index_table(
    rows: Rows, quantity: str, p: float, q: float, beta: float, ds: list[str]
) -> np.ndarray:
    """The index curves of one (p, q, β) as an array [d, n], in the order of ``ds``."""
    out = []
    for d in ds:
        sel = select(rows, method="mdp", quantity=quantity, p=p, q=q, beta=beta)
        vals = sorted((r["n"], r["value"]) for r in sel if str(r["d"]) == d)
        out.append([v for _, v in vals])
    return np.array(out, dtype=float)


def d_over_q(
    rows: Rows, quantity: str, p: float, qs: list[float], beta: float, ds: list[str]
) -> tuple[float, int] | None:
    """max over n ≥ 1 of [largest change across d at a fixed q] / [smallest change across q].

    Only servers with q > p (not overloaded in the relaxation) take part; None when fewer
    than two such q are in the grid (no change across q to compare with).
    """
    light = [q for q in qs if q > p]
    if len(light) < 2:
        return None
    W = np.array([index_table(rows, quantity, p, q, beta, ds)[:, 1:] for q in light])
    d_change = (W.max(axis=1) - W.min(axis=1)).max(axis=0)  # worst q, per n
    q_change = (W.max(axis=0) - W.min(axis=0)).min(axis=0)  # least-varying d, per n
    ratio = d_change / q_change
    return float(ratio.max()), int(ratio.argmax()) + 1


def ratio_verdict(stats: list[tuple[str, float, int]], mode: str) -> Verdict:
    """The d-over-q ratio: ≤ D_OVER_Q at every p (``small``) or ≥ it at every p (``large``)."""
    if not stats:
        raise EmptyComparisonError("d-over-q: no p with two capacities q > p in the grid")
    values = [r for _, r, _ in stats]
    worst = max(values) if mode == "small" else min(values)
    passed = worst <= D_OVER_Q if mode == "small" else worst >= D_OVER_Q
    return Verdict(
        passed=bool(passed),
        measured=round(worst, 4),
        expected=f"{'max' if mode == 'small' else 'min'} over p of R "
        f"{'≤' if mode == 'small' else '≥'} {D_OVER_Q:.3g}",
        tolerance=f"margin {abs(worst - D_OVER_Q) / D_OVER_Q:.0%} of the bound",
        details="; ".join(f"{lab}: R = {r:.3f} (at n = {n})" for lab, r, n in stats),
    )


def ratio_stats(
    rows: Rows, cfg: Mapping[str, Any], quantity: str, beta: float
) -> list[tuple[str, float, int]]:
    """The d-over-q ratio and its state n at every p that has two capacities q > p."""
    ds = [table_d_label(d) for d in cfg["d"]]
    out = []
    for p in cfg["p"]:
        res = d_over_q(rows, quantity, p, list(cfg["q"]), beta, ds)
        if res is not None:
            out.append((f"p={p:g}", *res))
    return out


def unjudged_note(cfg: Mapping[str, Any]) -> str:
    """The p at which the ratio is not judged (fewer than two q > p), for the claim's details."""
    skip = [f"{p:g}" for p in cfg["p"] if sum(q > p for q in cfg["q"]) < 2]
    return f"; not judged (fewer than two q > p): p = {', '.join(skip)}" if skip else ""


def closed_form_claim(rows: Rows, ds: list[str]) -> Claim:
    """d = 1 closed form against the numerical index; control: against the next d's index."""
    d_ctrl = next((d for d in ds if d != "1"), None)

    def worst(d: str) -> float:
        """Largest relative difference of the closed form to the numerical index of this d."""
        out = []
        for r in select(rows, method="cf", quantity="W"):
            if not math.isfinite(r["value"]):
                continue
            m = select(
                rows, method="mdp", quantity="W", p=r["p"], q=r["q"], beta=r["beta"], n=r["n"]
            )
            m = next(x for x in m if str(x["d"]) == d)["value"]
            out.append(abs(m - r["value"]) / max(1.0, abs(r["value"])))
        if not out:
            raise EmptyComparisonError("no d = 1 closed-form rows to compare")
        return max(out)

    if d_ctrl is None:
        raise EmptyComparisonError("the closed-form check needs a d other than 1 as control")
    return make_claim(
        "d = 1: the closed-form index equals the numerical index from threshold-policy "
        "stationary distributions (max relative difference < 1e-9)",
        close(0.0, worst("1"), 1e-9),
        control=(
            f"the d = 1 closed form against the numerical index of d = {d_ctrl} must differ",
            close(0.0, worst(d_ctrl), 1e-9),
        ),
        source="lbrepro",
    )


def summary_index(rows: Rows) -> Rows:
    """W(5) per (p, q, β) and d: a glimpse of the curves for the report."""
    out: Rows = []
    keys = sorted({(r["p"], r["q"], r["beta"]) for r in rows if r["quantity"] == "W"})
    for p, q, beta in keys:
        row: dict[str, Any] = {"p": p, "q": q}
        if beta:
            row["β"] = beta
        for r in select(rows, method="mdp", quantity="W", p=p, q=q, beta=beta, n=5):
            row[f"W(5), d={r['d']}"] = f"{r['value']:.4g}"
        out.append(row)
    return out


def validate_index(cfg: Mapping[str, Any], aid: str) -> None:
    """The grid's ranges and nmax ∈ 1..200 (the index curves' length)."""
    check_grid(cfg, aid)
    if not 1 <= cfg["nmax"] <= 200:
        raise ConfigError(f"{aid}.nmax", f"must lie in 1..200, got {cfg['nmax']}")


INDEX_RECONSTRUCTIONS = (RECON_EVENTS, RECON_COSTS, RECON_RELAX)
