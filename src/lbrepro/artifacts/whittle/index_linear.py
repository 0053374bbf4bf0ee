"""whittle-index-linear: Whittle's index of one LPS-d server for the linear cost C(n) = n.

The claims: the d = 1 closed form equals the numerical index; q is the key parameter and d
matters little (servers with q > p); servers overloaded in the relaxation (q ≤ p) are the
exception, where d changes the index by a large factor (outside the paper's regime).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from lbrepro.artifacts.registry import Artifact, Rows
from lbrepro.artifacts.whittle.estimates import index_cost, index_memory
from lbrepro.artifacts.whittle.grid import table_d_label, table_d_labels
from lbrepro.artifacts.whittle.index_curves import (
    CONTROL_BETA,
    INDEX_RECONSTRUCTIONS,
    NEGLIGIBLE,
    closed_form_claim,
    compute_index,
    flip_stats,
    flips_verdict,
    index_points,
    index_table,
    plot_index_curves,
    summary_index,
    unjudged_note,
    validate_index,
)
from lbrepro.core.claims import Claim, make_claim
from lbrepro.core.io import select
from lbrepro.core.verdicts import EmptyComparisonError, Verdict, exact
from lbrepro.plotting.style import METHOD_STYLE, new_figure

if TYPE_CHECKING:
    from matplotlib.figure import Figure  # annotations only: compute jobs skip matplotlib

#: Servers overloaded in the relaxation (q ≤ p): W(n) across d differs by at least this factor.
OVERLOADED_FACTOR = 1.5


def relative_spread(values: np.ndarray) -> np.ndarray:
    """Relative spread (max − min)/min along axis 0 (across d)."""
    return (values.max(axis=0) - values.min(axis=0)) / values.min(axis=0)


def points(cfg: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """One point per p (linear cost: β = 0)."""
    return index_points(cfg, [0.0])


def validate(cfg: Mapping[str, Any]) -> None:
    """The grid's ranges and nmax."""
    validate_index(cfg)


def check(rows: Rows, cfg: Mapping[str, Any]) -> list[Claim]:
    """d = 1 closed form; q matters, d does not (q > p); d matters for overloaded servers."""
    ds = table_d_labels(rows)
    claims = [closed_form_claim(rows, ds)]
    lin = flip_stats(rows, cfg, "W", 0.0)
    ctrl = flip_stats(rows, cfg, "W_meanvar", 0.0)
    ctrl_share = min(f for _, f, _ in ctrl) if ctrl else float("nan")
    claims.append(
        make_claim(
            "linear cost: q is the key parameter and the impact of d on the dispatching "
            f"decision is negligible — between two servers with q > p, changing their "
            f"disciplines d changes at most {NEGLIGIBLE:.0%} of the Whittle policy's "
            "decisions (states n ≤ nmax), at every p",
            flips_verdict(lin, "small"),
            control=(
                f"a near miss: the mean–variance cost (β = {CONTROL_BETA:g}) at the same "
                "(p, q, d), whose index the paper says depends strongly on d",
                flips_verdict(ctrl, "small"),
            ),
            distance=f"its smallest share of changed decisions {100 * ctrl_share:.3g}% vs "
            f"the bound {NEGLIGIBLE:.0%}",
            details="the paper's yardstick is the dispatching decision; 'negligible' = the "
            f"default {NEGLIGIBLE:.0%} agreement rule" + unjudged_note(cfg),
        )
    )
    # q ≤ p: the relaxation overloads the arm and its index explodes at a d-dependent rate
    heavy, light = [], []
    for p in cfg["p"]:
        for q in cfg["q"]:
            sp = float(relative_spread(index_table(rows, "W", p, q, 0.0, ds))[1:].max())
            (heavy if q <= p else light).append((f"p={p:g}, q={q:g}", sp))

    def factor_verdict(items: list[tuple[str, float]]) -> Verdict:
        """The smallest across-d factor over (p, q) against OVERLOADED_FACTOR."""
        if not items:
            raise EmptyComparisonError("no (p, q) in this regime")
        low = min(items, key=lambda x: x[1])
        return exact(
            bool(1 + low[1] >= OVERLOADED_FACTOR),
            round(1 + low[1], 4),
            f"min over (p, q) of max_n W_max(n)/W_min(n) across d ≥ {OVERLOADED_FACTOR:g}",
            "exact indices",
            "; ".join(f"{lab}: ×{1 + v:.3g}" for lab, v in items),
        )

    if heavy:
        claims.append(
            make_claim(
                "linear cost, servers overloaded in the relaxation (q ≤ p): d changes the "
                f"index by a factor ≥ {OVERLOADED_FACTOR:g} at some state n ≤ nmax (outside "
                "the paper's regime)",
                factor_verdict(heavy),
                control=(
                    "a near miss: the same statistic on the servers just inside the paper's "
                    "regime (q > p)",
                    factor_verdict(light),
                ),
                distance=f"their smallest factor ×{1 + min(v for _, v in light):.3g} vs "
                f"×{OVERLOADED_FACTOR:g}",
                source="lbrepro",
            )
        )
    return claims


def plot(rows: Rows, cfg: Mapping[str, Any]) -> Figure:
    """W(n) against n per (p, q) panel, one curve per d, the d = 1 closed form in black."""
    ps, qs, ds = cfg["p"], cfg["q"], [table_d_label(d) for d in cfg["d"]]
    fig, axes = new_figure(len(ps), len(qs), width=8.5, height=2.6 * len(ps))
    for i, p in enumerate(ps):
        for j, q in enumerate(qs):
            ax = axes[i][j]
            plot_index_curves(ax, rows, ds, p, q, 0.0)
            cf = sorted(
                [
                    r
                    for r in select(rows, method="cf", quantity="W", p=p, q=q, beta=0.0)
                    if r["value"] is not None
                ],
                key=lambda r: r["n"],
            )
            if cf:
                ax.plot(
                    [r["n"] for r in cf],
                    [r["value"] for r in cf],
                    color="k",
                    lw=0.8,
                    **METHOD_STYLE["cf"] | {"label": "closed form (d = 1)"},
                )
            ax.set(
                yscale="log",
                xlabel="n (jobs in the server)",
                ylabel="W(n)",
                title=f"p = {p:g}, q = {q:g}",
            )
    fig.legend(*axes[0][0].get_legend_handles_labels(), loc="outside lower center", ncols=5)
    return fig


ARTIFACT = Artifact(
    id="whittle-index-linear",
    slug="whittle",
    kind="figure",
    title="Whittle's index of an LPS-d server, linear cost",
    caption=(
        "W(n) for C(n) = n against the number of jobs n, for each discipline d of the grid "
        "(d = 1: FCFS, d = ∞: PS) "
        "(markers: numerical index from threshold-policy stationary distributions; black "
        "line: the d = 1 closed form). Rows: arrival probability p; columns: capacity q. "
        "Log scale: servers with q ≤ p are overloaded in the relaxation and their index "
        "grows geometrically."
    ),
    methods=("MDP", "CF"),
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
