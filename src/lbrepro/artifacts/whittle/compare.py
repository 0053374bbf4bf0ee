"""whittle-compare: the gap to the optimal dispatcher of Whittle, JSQ, JSEW and RSA against p.

Exact on the truncated joint chain and cross-checked by simulating the slotted system (no
buffer): the simulated costs must agree with the exact ones within 2%, and the paper's policy
claims are judged again on the simulated costs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from lbrepro.artifacts.registry import Artifact, Rows
from lbrepro.artifacts.whittle.estimates import chain_cost, chain_memory
from lbrepro.artifacts.whittle.grid import table_d_label
from lbrepro.artifacts.whittle.policy_comparison import (
    CONTROL_LOAD,
    POLICY_RECONSTRUCTIONS,
    compute_policy_rows,
    exact_value,
    gap_pct,
    policy_claims,
    policy_points,
    scenarios,
    summary_gaps,
    validate_scenarios,
)
from lbrepro.core.claims import Claim, make_claim
from lbrepro.core.io import select
from lbrepro.core.verdicts import (
    AGREEMENT,
    EmptyComparisonError,
    agreement_margin,
    agrees,
    estimate,
)
from lbrepro.models import whittle_policies as pol
from lbrepro.plotting.intervals import legend, sim_handle, simulated
from lbrepro.plotting.style import color, derived, new_figure

if TYPE_CHECKING:
    from matplotlib.figure import Figure  # annotations only: compute jobs skip matplotlib


def points(cfg: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """One point per (scenario, cost, p), with the simulation's run lengths."""
    return policy_points(cfg, simulate=True)


def compute(params: dict[str, Any], seed: np.random.SeedSequence) -> Rows:
    """Exact costs, their control at CONTROL_LOAD·p, and the simulated costs of one point."""
    return compute_policy_rows(params, seed, simulate=True)


def validate(cfg: Mapping[str, Any]) -> None:
    """The scenarios."""
    validate_scenarios(cfg)


def check(rows: Rows, cfg: Mapping[str, Any]) -> list[Claim]:
    """Exact costs inside the simulation's CIs (control: the costs at CONTROL_LOAD·p), then the
    paper's policy claims judged on the simulated costs."""
    # RSA's exact cost is not the truncated chain's (it is computed server by server without
    # truncation) and its simulated cost, heavy-tailed near p/K = q, needs ~50× the slots to
    # be resolved to 2%: the cross-check covers the policies evaluated on the chain.
    sims = [s for s in select(rows, method="sim", quantity="cost") if s["policy"] != "rsa"]
    if not sims:
        raise EmptyComparisonError("whittle-compare: no simulated costs")
    keys = [(s["scenario"], s["cost"], s["p"], s["policy"]) for s in sims]
    labels = [f"{n}/{c}/p={p:g}/{pol_}" for n, c, p, pol_ in keys]
    est = [estimate(s) for s in sims]
    exact = [exact_value(rows, "cost", n, c, p, pol_) for n, c, p, pol_ in keys]
    ctrl = [exact_value(rows, "cost_control", n, c, p, pol_) for n, c, p, pol_ in keys]
    margins = [agreement_margin(x) for x in exact]
    near = [abs(c - x) / m for c, x, m in zip(ctrl, exact, margins, strict=True)]
    claims = [
        make_claim(
            "the exact average cost on the truncated chain of every policy evaluated there "
            "(optimal, Whittle, JSQ, JSEW) agrees with the simulated cost of the slotted system "
            f"(no buffer) within the default {AGREEMENT:.0%} relative agreement margin",
            agrees(est, exact, margin=margins, labels=labels, what="simulated − exact cost"),
            control=(
                f"the exact cost of the same routing at the neighbouring load {CONTROL_LOAD:g}·p",
                agrees(est, ctrl, margin=margins, labels=labels, what="simulated − control"),
            ),
            distance=f"{min(near):.1f}–{max(near):.1f} margins from the exact cost at p",
            source="lbrepro",
            runs=sorted({str(s["point"]) for s in sims if s.get("point")}),
        )
    ]
    # The paper's policy statements are decided once, on exact costs (whittle-gaps); here the
    # same tests on the simulated costs are lbrepro's cross-check of the simulation, counted
    # apart and charging no finding.
    return claims + [
        replace(
            c,
            claim=f"cross-check on the simulation of whittle-gaps' decision: {c.claim}",
            source="lbrepro",
            finding=None,
        )
        for c in policy_claims(rows, cfg, "sim")
    ]


def plot(rows: Rows, cfg: Mapping[str, Any]) -> Figure:
    """Gap to optimal against p, per scenario (columns) and cost (rows): exact lines and
    simulated points with their CIs."""
    names = list(scenarios(cfg))
    fig, axes = new_figure(2, len(names), width=max(7.0, 3.0 * len(names)), height=5.4)
    for j, name in enumerate(names):
        sc = scenarios(cfg)[name]
        label = " + ".join(
            f"({table_d_label(d)}, {q:g})" for d, q in zip(sc["d"], sc["q"], strict=True)
        )
        for i, cost in enumerate(("linear", "meanvar")):
            ax = axes[i][j]
            cost_label = "linear" if cost == "linear" else f"mean–variance β={cfg['beta']:g}"
            for k, policy in enumerate(pol.POLICIES[1:]):
                pts = [(p, gap_pct(rows, name, cost, policy, p)) for p in sc["p"]]
                pts = [(p, g) for p, g in pts if math.isfinite(g)]
                if pts:
                    ax.plot(
                        *zip(*pts, strict=True),
                        color=color(k),
                        marker="s",
                        label=policy.upper() if policy != "whittle" else "Whittle",
                    )
                sims = [
                    s
                    for s in select(rows, method="sim", quantity="cost", scenario=name, cost=cost)
                    if s["policy"] == policy
                ]
                if sims:
                    opt = {
                        x["p"]: x["value"]
                        for x in select(
                            rows, method="mdp", quantity="cost", scenario=name, cost=cost
                        )
                        if x["policy"] == "optimal"
                    }
                    ax.set_yscale("symlog", linthresh=0.1)
                    gaps = simulated(
                        ax,
                        [s["p"] for s in sims],
                        *(
                            [_gap(s.get(key), opt[s["p"]]) for s in sims]
                            for key in ("value", "ci_low", "ci_high")
                        ),
                        color=color(k),
                        converged=[s.get("converged") for s in sims],
                    )
                    derived("gap of the simulated cost to the RVI optimum's, %", gaps)
            ax.axhline(0.0, color="k", lw=0.8, label="optimal (RVI)")
            ax.set(
                xlabel="p (arrival probability per slot)",
                ylabel="gap to optimal (%)",
                title=f"{label}\n{cost_label}",
            )
            ax.set_yscale("symlog", linthresh=0.1)
            ax.set_ylim(bottom=-1.0)
    handles, labels = axes[0][0].get_legend_handles_labels()
    handles.append(sim_handle())
    labels.append("simulation (95% CI)")
    legend(fig, handles, labels, where="below", ncols=min(6, max(3, 2 * len(names))))
    return fig


def _gap(cost: float | None, optimal: float) -> float:
    """A simulated cost's gap to the optimal one, in % (NaN when there is none)."""
    return math.nan if cost is None else 100 * (cost / optimal - 1)


ARTIFACT = Artifact(
    id="whittle-compare",
    slug="whittle",
    kind="figure",
    title="Whittle, JSQ, JSEW and RSA against the optimal dispatcher",
    caption=(
        "Relative gap to the optimal policy (%; symmetric-log axis) against the arrival "
        "probability p, for the linear cost (top) and the mean–variance cost (bottom), per "
        "scenario of (d, q) servers. Lines: exact average costs on the truncated joint chain; "
        "open circles: simulation of the slotted system (95% CI). The optimal policy comes "
        "from relative value iteration; RSA is missing where it is unstable (p/K ≥ min q)."
    ),
    methods=("MDP", "SIM"),
    points=points,
    cost=chain_cost,
    memory=chain_memory,
    compute=compute,
    check=check,
    plot=plot,
    summary=summary_gaps,
    validate=validate,
    reconstructions=POLICY_RECONSTRUCTIONS,
    # A simulated point's length is its number of slots (lbrepro.extension).
    run_length="slots",
)
