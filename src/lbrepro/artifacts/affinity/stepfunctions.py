"""affinity-stepfunctions: Fig. 2, the coupling step functions f_ref and f_aff (exact)."""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np

from lbrepro.artifacts.affinity import estimates
from lbrepro.artifacts.affinity.judging import exact_verdict
from lbrepro.artifacts.affinity.rows import SLUG, table_row
from lbrepro.artifacts.registry import Artifact, Rows
from lbrepro.core.claims import Claim, make_claim
from lbrepro.core.io import select
from lbrepro.core.verdicts import EmptyComparisonError, Verdict
from lbrepro.models import affinity as model
from lbrepro.plotting.intervals import legend
from lbrepro.plotting.style import color, new_figure

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def points(cfg: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """One job: every step function of the figure (exact, instantaneous)."""
    return {"all": {"N": cfg["N"], "k": cfg["k"], "d": list(cfg["d"])}}


def compute(p: dict[str, Any], seed: np.random.SeedSequence) -> Rows:
    """f_ref and f_aff at every position, exact, for the figure's and the controls' d, and
    Table 1's d for (N, k) (``d_min``), the boundary the claims are stated against."""
    N, k = p["N"], p["k"]
    rows: Rows = []
    for n, v in enumerate(model.f_ref(N, k)):
        rows.append(table_row("cf", "f_ref", float(v), N=N, k=k, n=n, exact=str(v)))
    # The controls' degrees: Table 1's d and d − 1 (on either side of the dominance boundary).
    need = model.table1_d(N, k)
    rows.append(table_row("cf", "d_min", need, N=N, k=k))
    extra = [d for d in (need - 1, need) if 2 * d >= N and d not in p["d"]]
    for d in [*p["d"], *extra]:
        for n, v in enumerate(model.f_aff(N, d)):
            rows.append(table_row("cf", "f_aff", float(v), N=N, d=d, n=n, exact=str(v)))
    return rows


def _smallest_gap(rows: Rows, d: int) -> tuple[Any, int] | None:
    """min over positions of f_aff(d) − f_ref (exact) and where it is attained; None if absent."""
    fr = {r["n"]: Fraction(r["exact"]) for r in select(rows, quantity="f_ref")}
    fa = {r["n"]: Fraction(r["exact"]) for r in select(rows, quantity="f_aff", d=d)}
    if not fa:
        return None
    worst = min(fr, key=lambda n: fa[n] - fr[n])
    return fa[worst] - fr[worst], worst


def _table1_d(rows: Rows, N: int, k: int) -> int:
    """Table 1's smallest d for (N, k), as compute wrote it."""
    found = select(rows, quantity="d_min", N=N, k=k)
    if not found:
        raise EmptyComparisonError(f"affinity-stepfunctions: no Table 1 d for N = {N}, k = {k}")
    return int(found[0]["value"])


def check(rows: Rows, cfg: Mapping[str, Any]) -> list[Claim]:
    """Domination holds exactly for d at or above Table 1's threshold and fails below it."""
    N, k = cfg["N"], cfg["k"]
    need = _table1_d(rows, N, k)

    def verdict(d: int, above: bool) -> Verdict:
        """Whether f_aff(d) − f_ref has the expected sign at its worst position."""
        got = _smallest_gap(rows, d)
        if got is None:  # d − 1 < N/2: no worst-case step function exists, nothing dominates
            return exact_verdict(
                False, -1.0, "a two-jump step function", f"d = {d} < N/2: none exists"
            )
        gap, n = got
        ok = gap >= 0 if above else gap < 0
        return exact_verdict(
            ok,
            round(float(gap), 6),
            "min (f_aff − f_ref) ≥ 0 at every position"
            if above
            else "min (f_aff − f_ref) < 0 at some position",
            f"min (f_aff − f_ref) = {float(gap):+.4f} at n = {n} (exact {gap})",
        )

    claims = []
    for d in cfg["d"]:
        if d >= need:
            text = (
                f"N = {N}, k = {k}, d = {d} ≥ {need} (Table 1): f_aff ≥ f_ref at every position, "
                f"so the graph model is dominated by JSQ({k})"
            )
            ctrl_d = need - 1
        else:
            text = (
                f"N = {N}, k = {k}, d = {d} < {need} (Table 1): f_aff falls below f_ref at some "
                f"position (the graph must be denser for the JSQ({k}) bound)"
            )
            ctrl_d = need
        ctrl = (
            f"the same sign holds at d = {ctrl_d}, on the other side of Table 1's boundary",
            verdict(ctrl_d, d >= need),
        )
        claims.append(
            make_claim(
                text,
                verdict(d, d >= need),
                control=ctrl,
                distance=f"one degree across the dominance boundary (d = {need - 1} | {need})",
            )
        )
    return claims


def plot(rows: Rows, cfg: Mapping[str, Any]) -> Figure:
    """f_ref against f_aff for each configured d, as step functions of the position."""
    fig, axes = new_figure(1, 1, width=6.0, height=3.4)
    ax = axes[0][0]
    ref = select(rows, quantity="f_ref")
    ax.step(
        [r["n"] for r in ref],
        [r["value"] for r in ref],
        where="post",
        color="k",
        label=f"f_ref, JSQ({cfg['k']})",
    )
    for i, d in enumerate(cfg["d"]):
        aff = select(rows, quantity="f_aff", d=d)
        ax.step(
            [r["n"] for r in aff],
            [r["value"] for r in aff],
            where="post",
            color=color(i),
            ls="--",
            label=f"f_aff, d = {d}",
        )
    ax.set(
        xlabel="server position n (ordered by type-I jobs)",
        ylabel="fraction of selections",
        title=f"Coupling step functions, N = {cfg['N']}, k = {cfg['k']}",
    )
    legend(ax)
    return fig


ARTIFACT = Artifact(
    id="affinity-stepfunctions",
    slug=SLUG,
    kind="figure",
    title="Fig. 2: coupling step functions",
    caption=(
        "Step function f_ref of JSQ(k) (each selection stacked as a block from its lowest "
        "position) against the worst-case d-regular step function f_aff, which jumps "
        "(d+1)/N at position 1 and to 1 at N − d, for the section's N, k and each of its d: a d "
        "at or above Table 1's threshold for k lies above f_ref everywhere, one below it falls "
        "below somewhere."
    ),
    methods=("CF",),
    points=points,
    compute=compute,
    cost=estimates.stepfunctions_cost,
    memory=estimates.stepfunctions_memory,
    check=check,
    plot=plot,
)
