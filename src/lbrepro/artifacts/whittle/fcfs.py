"""whittle-fcfs: the FCFS (d = 1) closed form of Whittle's index against the numerical index.

The closed form comes from the birth–death product form of the threshold chains
(``lbrepro.models.whittle``); the numerical index from a linear solve of the general LPS-d
chain, so a wrong closed form would fail. Control: the closed form at a 1% lower capacity.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from lbrepro.artifacts.registry import Artifact, Rows
from lbrepro.artifacts.whittle.estimates import fcfs_cost, index_memory
from lbrepro.artifacts.whittle.grid import check_grid
from lbrepro.artifacts.whittle.reconstructions import RECON_COSTS, RECON_EVENTS
from lbrepro.core.claims import Claim, close, consistency, make_claim
from lbrepro.core.errors import ConfigError
from lbrepro.core.ids import add_point, num
from lbrepro.core.io import select
from lbrepro.core.verdicts import EmptyComparisonError
from lbrepro.models import whittle as model


def points(cfg: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """One point per p: every q and cost of that arrival probability."""
    table: dict[str, dict[str, Any]] = {}
    for p in cfg["p"]:
        params = {"p": p, "q": list(cfg["q"]), "beta": list(cfg["beta"]), "nmax": cfg["nmax"]}
        add_point(table, f"p{num(p)}", params, "p")
    return table


#: The control of the FCFS closed form: evaluated at q·(1 − FCFS_CONTROL_DQ) instead of q.
FCFS_CONTROL_DQ = 0.01


def compute(params: dict[str, Any], seed: np.random.SeedSequence) -> Rows:
    """Closed form against numerical index per (q, cost), its control at q·0.99, and the
    explicit geometric-sum form (linear cost)."""
    p, nmax = params["p"], params["nmax"]
    rows: Rows = []
    for q in params["q"]:
        for beta in [0.0, *params["beta"]]:
            cost = "linear" if beta == 0 else "meanvar"
            numerical = model.whittle_indices(p, q, 1, nmax, cost, beta)
            cf = model.fcfs_index(p, q, nmax, cost, beta)
            ok = np.isfinite(cf)
            diff = np.abs(numerical[ok] - cf[ok])
            rel = diff / np.maximum(1.0, np.abs(cf[ok]))
            base = {"p": p, "q": q, "cost": cost, "beta": beta, "nmax": nmax}
            rows.append(base | {"method": "cf", "quantity": "max_abs_diff", "value": diff.max()})
            rows.append(base | {"method": "cf", "quantity": "max_rel_diff", "value": rel.max()})
            rows.append(base | {"method": "cf", "quantity": "W_max", "value": float(cf[ok].max())})
            # control: the closed form at a capacity 1% lower, against the index at q
            q_ctrl = q * (1 - FCFS_CONTROL_DQ)
            cf_ctrl = model.fcfs_index(p, q_ctrl, nmax, cost, beta)
            both = ok & np.isfinite(cf_ctrl) & np.isfinite(numerical)
            rel_ctrl = np.abs(numerical[both] - cf_ctrl[both]) / np.maximum(
                1.0, np.abs(numerical[both])
            )
            rows.append(
                base
                | {
                    "method": "cf",
                    "quantity": "control_rel_diff",
                    "value": float(rel_ctrl.max()),
                    "q_control": q_ctrl,
                }
            )
            if cost == "linear":
                ex = np.array([model.fcfs_index_linear(p, q, m) for m in range(nmax + 1)])
                rel_ex = np.abs(ex[ok] - cf[ok]) / np.maximum(1.0, np.abs(cf[ok]))
                rows.append(
                    base | {"method": "cf", "quantity": "explicit_rel_diff", "value": rel_ex.max()}
                )
    return rows


def largest(rows: Rows, quantity: str) -> dict[str, Any]:
    """The row with the largest value of ``quantity`` (the worst point of the grid)."""
    sel = select(rows, quantity=quantity)
    if not sel:
        raise EmptyComparisonError(f"whittle-fcfs: no {quantity} rows")
    return max(sel, key=lambda r: r["value"])


def check(rows: Rows, cfg: Mapping[str, Any]) -> list[Claim]:
    """The closed form equals the numerical index (control: at q·0.99); the two closed forms
    agree (a consistency check)."""
    worst = largest(rows, "max_rel_diff")
    ctrl = min(select(rows, quantity="control_rel_diff"), key=lambda r: r["value"])
    ex = largest(rows, "explicit_rel_diff")
    wmax = largest(rows, "W_max")["value"]
    where = f"p={worst['p']:g}, q={worst['q']:g}, {worst['cost']} (β={worst['beta']:g})"
    # A verdict, not a consistency check: the closed form (birth–death product form) and the
    # numerical index (a linear solve of the general LPS-d threshold chain) are computed
    # independently, so a wrong closed form would fail; the control shows that the 1e-9
    # tolerance resolves a 1% change of q.
    ctrl_verdict = close(0.0, float(ctrl["value"]), 1e-9)
    ctrl_verdict = dataclasses.replace(
        ctrl_verdict,
        details=f"smallest difference over the grid at p={ctrl['p']:g}, q={ctrl['q']:g}, "
        f"{ctrl['cost']}: {ctrl['value']:.3g}",
    )
    return [
        make_claim(
            "FCFS (d = 1): Whittle's index has a closed form in terms of the threshold policies' "
            "product-form stationary distributions; it equals the numerical index "
            f"(m ≤ {cfg['nmax']}, every (p, q, cost); max |W_cf − W_mdp| / max(1, |W|) < 1e-9)",
            close(0.0, float(worst["value"]), 1e-9),
            control=(
                f"a near miss: the closed form at a capacity {FCFS_CONTROL_DQ:.0%} lower, "
                f"q·{1 - FCFS_CONTROL_DQ:g}, against the numerical index at q",
                ctrl_verdict,
            ),
            distance=f"its smallest difference over the grid {ctrl['value']:.3g} relative "
            f"({ctrl['value'] / 1e-9:.2g} tolerances)",
            details=f"worst at {where}; indices reach {wmax:.3g}",
        ),
        consistency(
            "FCFS, linear cost: the explicit geometric-sum form equals the finite-sum closed "
            "form (the same formula summed two ways)",
            close(0.0, float(ex["value"]), 1e-9),
        ),
    ]


def summary(rows: Rows) -> Rows:
    """Largest absolute and relative differences and the largest index, per (cost, p, q)."""
    out: Rows = []
    for r in sorted(
        select(rows, quantity="max_abs_diff"), key=lambda r: (r["beta"], r["p"], r["q"])
    ):
        rel = select(rows, quantity="max_rel_diff", p=r["p"], q=r["q"], beta=r["beta"])[0]
        wmax = select(rows, quantity="W_max", p=r["p"], q=r["q"], beta=r["beta"])[0]
        out.append(
            {
                "cost": r["cost"] + (f" β={r['beta']:g}" if r["beta"] else ""),
                "p": r["p"],
                "q": r["q"],
                "max |cf − mdp|": f"{r['value']:.2e}",
                "max relative": f"{rel['value']:.2e}",
                "max W(m)": f"{wmax['value']:.3g}",
            }
        )
    return out


def validate(cfg: Mapping[str, Any]) -> None:
    """The grid's ranges and β > 0, errors named by the key inside the section."""
    check_grid(cfg)
    for i, b in enumerate(cfg["beta"]):
        if b <= 0:
            raise ConfigError(f"beta[{i}]", f"must be > 0, got {b}")


ARTIFACT = Artifact(
    id="whittle-fcfs",
    slug="whittle",
    kind="table",
    title="FCFS closed form of Whittle's index against the numerical index",
    caption=(
        "For d = 1 the threshold chains are birth–death, giving x_n = a r^{n−1} (ρ = p/q, "
        "r = p(1−q)/(q(1−p)), a = ρ/(1−p)) and W(m) = ρ Σ_n x_n [q C(m) + (1−q) C(m+1) − "
        "C(n)]. Largest absolute and relative differences to the numerical index over "
        "m = 0..nmax, per (p, q) and cost."
    ),
    methods=("CF", "MDP"),
    points=points,
    cost=fcfs_cost,
    memory=index_memory,
    compute=compute,
    check=check,
    summary=summary,
    validate=validate,
    reconstructions=(RECON_EVENTS, RECON_COSTS),
)
