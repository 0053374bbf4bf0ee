"""affinity-basin: Fig. 8, basins of attraction on the simplex x00 + x01 + x10 = 1."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from lbrepro.artifacts.affinity import estimates
from lbrepro.artifacts.affinity.config_checks import MU2, service_rates, validate_with_hysteresis
from lbrepro.artifacts.affinity.estimates import CONTROL_GRID, simplex_states
from lbrepro.artifacts.affinity.fluid_trajectories import fixed_point_reached
from lbrepro.artifacts.affinity.judging import exact_verdict
from lbrepro.artifacts.affinity.reconstructions import FLUID_NOTE
from lbrepro.artifacts.affinity.rows import SLUG, table_row
from lbrepro.artifacts.registry import Artifact, Rows
from lbrepro.core.claims import Claim, make_claim
from lbrepro.core.io import select
from lbrepro.core.verdicts import EmptyComparisonError, Verdict, exact
from lbrepro.models import affinity as model
from lbrepro.plotting.intervals import legend
from lbrepro.plotting.style import color, new_figure

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def points(cfg: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """One job: the whole simplex grid (a deterministic fluid computation)."""
    mu1, mu2 = service_rates(cfg)
    keep = ("lam", "d1", "grid", "t_end", "dt", "K")
    return {"all": {k: cfg[k] for k in keep} | {"mu1": mu1, "mu2": mu2}}


def _grid_rows(
    quantity: str, p: Mapping[str, Any], n: int, degree: int, pts: list[Any], **extra: Any
) -> Rows:
    """The fixed point of ``pts`` reached from each state of the grid of spacing 1/n on
    x00 + x01 + x10 = 1 at d1 = ``degree``: its index (see the fixed_point rows), kind and
    distance."""
    K = p["K"]
    rows: Rows = []
    for a in range(n + 1):
        for b in range(n + 1 - a):
            x0 = np.zeros((K + 1, 2))
            x0[0, 0], x0[0, 1], x0[1, 0] = a / n, b / n, (n - a - b) / n
            f, dist = fixed_point_reached(x0, p, degree, pts)
            rows.append(
                table_row(
                    "mf",
                    quantity,
                    float(f),
                    kind=pts[f].kind,
                    x00=a / n,
                    x01=b / n,
                    x10=(n - a - b) / n,
                    distance=dist,
                    **extra,
                )
            )
    return rows


def compute(p: dict[str, Any], seed: np.random.SeedSequence) -> Rows:
    """The fixed point reached from every grid state, and the control grid at d1* − 1."""
    lam, mu1, mu2, d1, K, n = p["lam"], p["mu1"], p["mu2"], p["d1"], p["K"], p["grid"]
    pts = model.fixed_points(lam, mu2, mu1, d1, K)
    model.check_params(lam, mu2, mu1, d1)
    # Every grid state, then the control: the same grid (coarser) just below the saddle-node,
    # d1 = d1* − 1, where the queueing fixed point is the only one.
    rows = _grid_rows("limit", p, n, d1, pts)
    d1_c = model.dstar(lam, mu2, mu1) - 1
    if d1_c >= 1:
        pts_c = model.fixed_points(lam, mu2, mu1, d1_c, K)
        rows += _grid_rows("limit_control", p, min(n, CONTROL_GRID), d1_c, pts_c, d1=d1_c)
    for f, fp in enumerate(pts):
        rows.append(
            table_row(
                "mf",
                "fixed_point",
                float(f),
                kind=fp.kind,
                x00=float(fp.x[0, 0]),
                x01=float(fp.x[0, 1]),
                x10=float(fp.x[1, 0]),
                stable=fp.stable,
            )
        )
    return rows


def _two_basins_verdict(lim: Rows, tol: float) -> Verdict:
    """Every initial state converges (L1 ≤ tol) and both basins are non-empty."""
    if not lim:
        raise EmptyComparisonError("affinity-basin: no initial states")
    nq = sum(r["kind"] == "no-queueing" for r in lim)
    q = sum(r["kind"] == "queueing" for r in lim)
    far = sum(r["distance"] > tol for r in lim)
    return exact(
        bool(nq and q and not far),
        float(min(nq, q)),
        "both basins non-empty (the smaller has ≥ 1 state), every state converged",
        f"{tol:g} (L1)",
        f"no-queueing {nq}, queueing {q}, unconverged {far}; "
        f"max L1 distance {max(r['distance'] for r in lim):.1e}",
    )


def _basin_means(q: Rows, nq: Rows, key: str) -> float:
    """Mean of ``key`` over the queueing basin minus that over the no-queueing basin."""
    return float(np.mean([r[key] for r in q]) - np.mean([r[key] for r in nq]))


def _basin_sides_verdict(q: Rows, nq: Rows) -> Verdict:
    """The queueing basin has the higher mean x01 and the lower mean x00 (exact grid means)."""
    if not q or not nq:
        return exact_verdict(False, 0.0, "two basins", "one basin is empty")
    d01, d00 = _basin_means(q, nq, "x01"), _basin_means(q, nq, "x00")
    return exact(
        bool(d01 > 0 and d00 < 0),
        round(min(d01, -d00), 6),
        "mean x01 higher and mean x00 lower in the queueing basin (both differences > 0)",
        "exact (a deterministic grid)",
        f"queueing − no-queueing basin: mean x01 {d01:+.3f}, mean x00 {d00:+.3f}",
    )


def _type_one_verdict(q: Rows, nq: Rows) -> Verdict:
    """The near miss: the queueing basin is marked by type-I servers (higher mean x10)."""
    if not q or not nq:
        return exact_verdict(False, 0.0, "two basins", "one basin is empty")
    d10 = _basin_means(q, nq, "x10")
    return exact(
        d10 > 0,
        round(d10, 6),
        "mean x10 higher in the queueing basin",
        "exact (a deterministic grid)",
        f"queueing − no-queueing basin: mean x10 {d10:+.3f}",
    )


def check(rows: Rows, cfg: Mapping[str, Any]) -> list[Claim]:
    """Both basins are non-empty and every state converges; the queueing basin lies at high x01."""
    lim = select(rows, quantity="limit")
    ctrl = select(rows, quantity="limit_control")
    tol = cfg["tol"]
    d1_c = ctrl[0]["d1"] if ctrl else None
    claims = [
        make_claim(
            f"{len(lim)} initial states on x00 + x01 + x10 = 1 (λ = {cfg['lam']}, d1 = "
            f"{cfg['d1']}): each converges to a fixed point; both basins are non-empty",
            _two_basins_verdict(lim, tol),
            control=(
                f"the same test on a grid of {len(ctrl)} initial states (spacing "
                f"1/{CONTROL_GRID}) at d1 = d1* − 1 = {d1_c} shows two basins",
                _two_basins_verdict(ctrl, tol)
                if ctrl
                else exact_verdict(False, 0.0, "two basins", "d1* = 1: no d1 below it"),
            ),
            distance=f"d1 = {d1_c}, the largest d1 below the saddle-node (one fixed point)",
        )
    ]
    q = [r for r in lim if r["kind"] == "queueing"]
    nq = [r for r in lim if r["kind"] == "no-queueing"]
    claims.append(
        make_claim(
            "Initial states not converging to the no-queueing point have many type-II jobs and "
            "few idle servers (higher mean x01, lower mean x00 than the no-queueing basin)",
            _basin_sides_verdict(q, nq),
            control=(
                "the queueing basin is marked by servers with type-I jobs instead (higher mean "
                "x10)",
                _type_one_verdict(q, nq),
            ),
            distance="the third coordinate of the same simplex: the alternative way jobs "
            "could accumulate (type-I queues instead of type-II jobs)",
        )
    )
    return claims


def plot(rows: Rows, cfg: Mapping[str, Any]) -> Figure:
    """The grid states coloured by the fixed point they reach; no-queueing points marked."""
    fig, axes = new_figure(1, 1, width=5.0, height=4.0)
    ax = axes[0][0]
    for c, kind in enumerate(("no-queueing", "queueing")):
        pts = select(rows, quantity="limit", kind=kind)
        ax.scatter(
            [r["x00"] for r in pts],
            [r["x01"] for r in pts],
            s=8,
            color=color(c),
            label=f"→ {kind} fixed point",
        )
    for r in select(rows, quantity="fixed_point"):
        if r["kind"] == "no-queueing":
            ax.plot(
                r["x00"],
                r["x01"],
                marker="*" if r["stable"] else "x",
                color="k",
                ms=10,
                ls="none",
                label=f"no-queueing ({'stable' if r['stable'] else 'saddle'})",
            )
    ax.set(
        xlabel="initial idle fraction x00",
        ylabel="initial fraction x01 (one type-II job)",
        title=f"Basins, λ = {cfg['lam']}, d1 = {cfg['d1']} (x10 = 1 − x00 − x01)",
    )
    legend(ax)
    return fig


ARTIFACT = Artifact(
    id="affinity-basin",
    slug=SLUG,
    kind="figure",
    title="Fig. 8: basins of attraction on the simplex x00 + x01 + x10 = 1",
    caption=(
        "Initial states on a triangular grid of x00 + x01 + x10 = 1 (spacing 1/grid: "
        "(grid + 1)(grid + 2)/2 states) coloured by the fixed point their fluid trajectory "
        f"reaches, at the section's λ and d1 (in the title; μ2 = {MU2:g} unless the section sets "
        f"it). The control at d1* − 1 uses a grid of spacing 1/{CONTROL_GRID} (at most "
        f"{simplex_states(CONTROL_GRID)} states)."
    ),
    methods=("MF",),
    points=points,
    compute=compute,
    cost=estimates.basin_cost,
    memory=estimates.basin_memory,
    check=check,
    plot=plot,
    validate=validate_with_hysteresis,
    reconstructions=(FLUID_NOTE,),
)
