"""whittle-index-meanvar: Whittle's index of one LPS-d server for the mean–variance cost.

The claims: the d = 1 closed form equals the numerical index; for every β the index depends
strongly on d (the linear cost at the same points is the control).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from lbrepro.artifacts.registry import Artifact, Rows
from lbrepro.artifacts.whittle.estimates import index_cost, index_memory
from lbrepro.artifacts.whittle.grid import table_d_label, table_d_labels
from lbrepro.artifacts.whittle.index_curves import (
    INDEX_RECONSTRUCTIONS,
    NEGLIGIBLE,
    closed_form_claim,
    compute_index,
    flip_stats,
    flips_verdict,
    index_points,
    plot_index_curves,
    summary_index,
    unjudged_note,
    validate_index,
)
from lbrepro.core.claims import Claim, make_claim
from lbrepro.plotting.style import new_figure

if TYPE_CHECKING:
    from matplotlib.figure import Figure  # annotations only: compute jobs skip matplotlib


def points(cfg: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """One point per (p, β)."""
    return index_points(cfg, [float(b) for b in cfg["beta"]])


def validate(cfg: Mapping[str, Any]) -> None:
    """The grid's ranges and nmax."""
    validate_index(cfg)


def check(rows: Rows, cfg: Mapping[str, Any]) -> list[Claim]:
    """d = 1 closed form; per β, the index depends strongly on d (control: the linear cost)."""
    ds = table_d_labels(rows)
    claims = [closed_form_claim(rows, ds)]
    for beta in cfg["beta"]:
        mv = flip_stats(rows, cfg, "W", beta)
        lin = flip_stats(rows, cfg, "W_linear", beta)
        lin_share = max(f for _, f, _ in lin) if lin else float("nan")
        claims.append(
            make_claim(
                f"mean–variance cost (β={beta:g}): the dispatching policy strongly depends on "
                f"d — between two servers with q > p, changing their disciplines d changes "
                f"more than the negligible {NEGLIGIBLE:.0%} of the Whittle policy's decisions "
                "(states n ≤ nmax), at every p",
                flips_verdict(mv, "large"),
                control=(
                    "a near miss: the linear cost at the same (p, q, d), where the paper "
                    "finds d's impact negligible",
                    flips_verdict(lin, "large"),
                ),
                distance=f"its largest share of changed decisions {100 * lin_share:.3g}% vs "
                f"the bound {NEGLIGIBLE:.0%}",
                details="the paper's yardstick is the dispatching decision; the bound is the "
                f"default {NEGLIGIBLE:.0%} agreement rule" + unjudged_note(cfg),
            )
        )
    return claims


def plot(rows: Rows, cfg: Mapping[str, Any]) -> Figure:
    """W_β(n) against n, one figure with β as extra rows ((β, p) × q panels), a curve per d."""
    ps, qs, ds, betas = cfg["p"], cfg["q"], [table_d_label(d) for d in cfg["d"]], cfg["beta"]
    fig, axes = new_figure(
        len(ps) * len(betas), len(qs), width=8.5, height=2.4 * len(ps) * len(betas)
    )
    for bi, beta in enumerate(betas):
        for i, p in enumerate(ps):
            for j, q in enumerate(qs):
                ax = axes[bi * len(ps) + i][j]
                plot_index_curves(ax, rows, ds, p, q, beta)
                ax.set(
                    yscale="log",
                    xlabel="n (jobs in the server)",
                    ylabel="W_β(n)",
                    title=f"β = {beta:g}, p = {p:g}, q = {q:g}",
                )
    fig.legend(*axes[0][0].get_legend_handles_labels(), loc="outside lower center", ncols=4)
    return fig


ARTIFACT = Artifact(
    id="whittle-index-meanvar",
    slug="whittle",
    kind="figure",
    title="Whittle's index of an LPS-d server, mean–variance cost",
    caption=(
        "W(n) for C_β(n) = n + β E[D(n)²] against n, for each discipline d of the grid; "
        "rows: (β, p), "
        "columns: q. E[D²] = q + q²(1 − 1/min(d, n)) grows with the number of jobs served "
        "in parallel, so unlike the linear cost the index separates the disciplines."
    ),
    methods=("MDP",),
    points=points,
    cost=index_cost,
    memory=index_memory,
    compute=compute_index,
    check=check,
    plot=plot,
    summary=summary_index,
    validate=validate,
    reconstructions=INDEX_RECONSTRUCTIONS,
)
