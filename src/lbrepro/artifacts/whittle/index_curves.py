"""Shared by whittle-index-linear and whittle-index-meanvar: the index points and rows, the
d-versus-q ratio that judges "d matters little / strongly", and the d = 1 closed-form claim."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from lbrepro.artifacts.registry import Rows
from lbrepro.artifacts.whittle.grid import check_grid, table_d_label, table_d_labels
from lbrepro.artifacts.whittle.reconstructions import RECON_COSTS, RECON_EVENTS, RECON_RELAX
from lbrepro.core.claims import Claim, close, make_claim
from lbrepro.core.errors import ConfigError
from lbrepro.core.ids import add_point, num
from lbrepro.core.io import select
from lbrepro.core.verdicts import AGREEMENT, EmptyComparisonError, Verdict, exact
from lbrepro.models import whittle as model
from lbrepro.plotting.style import color

#: Mean–variance weight of the control rows the linear-cost artifact adds (its claims' control).
CONTROL_BETA = 5.0
#: "The impact of d on the dispatching decision is negligible" (the paper's own yardstick: the
#: decision): d changes at most this fraction of the Whittle policy's dispatching decisions
#: between two servers. The project's default agreement rule (2%): a smaller share of changed
#: decisions is what a reader calls negligible.
NEGLIGIBLE = AGREEMENT


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


def decision_flips(
    rows: Rows, quantity: str, p: float, qs: list[float], beta: float, ds: list[str]
) -> tuple[float, str] | None:
    """The largest share of dispatching decisions that d changes, and where.

    For two servers of capacities q_a ≠ q_b (both > p: not overloaded in the relaxation) the
    Whittle policy sends a job to a in state (n_a, n_b) iff W_a(n_a) < W_b(n_b) (ties to the
    faster, RECON_TIES: here b = the larger q). Over all (n_a, n_b) ≤ nmax, the share of
    states whose decision differs between two assignments of disciplines (d_a, d_b) and
    (d_a', d_b'), largest over the assignments and the capacity pairs. None with fewer than
    two q > p.
    """
    light = sorted(q for q in qs if q > p)
    if len(light) < 2:
        return None
    curves = {q: index_table(rows, quantity, p, q, beta, ds) for q in light}
    best, where = -1.0, ""
    for i, qa in enumerate(light):
        for qb in light[i + 1 :]:
            decisions = {
                (da, db): curves[qa][ia][:, None] < curves[qb][ib][None, :]
                for ia, da in enumerate(ds)
                for ib, db in enumerate(ds)
            }
            keys = list(decisions)
            for j, x in enumerate(keys):
                for y in keys[j + 1 :]:
                    share = float(np.mean(decisions[x] != decisions[y]))
                    if share > best:
                        best, where = share, f"q = ({qa:g}, {qb:g}), d {x} vs {y}"
    return best, where


def flip_stats(
    rows: Rows, cfg: Mapping[str, Any], quantity: str, beta: float
) -> list[tuple[str, float, str]]:
    """The share of decisions d changes at every p that has two capacities q > p."""
    ds = table_d_labels(rows)
    out = []
    for p in cfg["p"]:
        res = decision_flips(rows, quantity, p, list(cfg["q"]), beta, ds)
        if res is not None:
            out.append((f"p={p:g}", *res))
    return out


def flips_verdict(stats: list[tuple[str, float, str]], mode: str) -> Verdict:
    """The share of decisions d changes: ≤ NEGLIGIBLE at every p (``small``) or above it at
    every p (``large``); exact indices, decided outright."""
    if not stats:
        raise EmptyComparisonError("decision flips: no p with two capacities q > p in the grid")
    values = [f for _, f, _ in stats]
    worst = max(values) if mode == "small" else min(values)
    holds = worst <= NEGLIGIBLE if mode == "small" else worst > NEGLIGIBLE
    return exact(
        bool(holds),
        round(100 * worst, 4),
        f"{'max' if mode == 'small' else 'min'} over p of the share of decisions d changes "
        f"{'≤' if mode == 'small' else '>'} {NEGLIGIBLE:.0%} (measured in %)",
        f"exact indices; bound {NEGLIGIBLE:.0%} (the default agreement rule)",
        "; ".join(f"{lab}: {100 * f:.3g}% ({w})" for lab, f, w in stats),
    )


def unjudged_note(cfg: Mapping[str, Any]) -> str:
    """The p at which the share is not judged (fewer than two q > p), for the claim's details."""
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
    near = worst(d_ctrl)
    return make_claim(
        "d = 1: the closed-form index equals the numerical index from threshold-policy "
        "stationary distributions (max relative difference < 1e-9)",
        close(0.0, worst("1"), 1e-9),
        control=(
            f"a near miss: the numerical index of the neighbouring discipline d = {d_ctrl}",
            close(0.0, near, 1e-9),
        ),
        distance=f"it differs from the d = 1 closed form by {near:.3g} relative "
        f"({near / 1e-9:.2g} tolerances)",
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


def validate_index(cfg: Mapping[str, Any]) -> None:
    """The grid's ranges and nmax ∈ 1..200 (the index curves' length), errors named by the key
    inside the section."""
    check_grid(cfg)
    if not 1 <= cfg["nmax"] <= 200:
        raise ConfigError("nmax", f"must lie in 1..200, got {cfg['nmax']}")


def plot_index_curves(ax: Any, rows: Rows, ds: list[str], p: float, q: float, beta: float) -> None:
    """The numerical index W(n) against n on one (p, q, β) panel, one curve per discipline d."""
    for k, d in enumerate(ds):
        sel = sorted(
            [
                r
                for r in select(rows, method="mdp", quantity="W", p=p, q=q, beta=beta)
                if str(r["d"]) == d and r["value"] is not None
            ],
            key=lambda r: r["n"],
        )
        ax.plot(
            [r["n"] for r in sel],
            [r["value"] for r in sel],
            color=color(k),
            marker="s",
            markersize=2.5,
            label=f"d = {d}",
        )


RECON_DECISIONS = (
    "'d matters little / strongly' [the paper's yardstick, the dispatching decision]: between "
    "two servers of capacities q_a < q_b (both > p), Whittle sends the job to a in state "
    "(n_a, n_b) iff W_a(n_a) < W_b(n_b); the statistic is the largest share of the "
    "(nmax + 1)² states whose decision changes between two assignments of disciplines d. "
    f"Negligible = at most {NEGLIGIBLE:.0%} of the decisions (the default agreement rule), "
    "strong = more. "
    "The former bound 1/6 on a ratio of index changes was ours and is gone."
)

INDEX_RECONSTRUCTIONS = (RECON_EVENTS, RECON_COSTS, RECON_RELAX, RECON_DECISIONS)
