"""affinity-bifurcation: the fixed points and their stability against d1 and λ."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from lbrepro.artifacts.affinity import estimates
from lbrepro.artifacts.affinity.config_checks import MU2, service_rates, validate_with_hysteresis
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
    """Two jobs: the sweep over d1 at fixed λ and the sweep over λ at fixed d1."""
    mu1, mu2 = service_rates(cfg)
    return {
        "d1": {
            "axis": "d1",
            "lam": cfg["lam"],
            "d1": list(range(1, cfg["d1_max"] + 1)),
            "mu1": mu1,
            "mu2": mu2,
        },
        "lam": {
            "axis": "lam",
            "lam": list(cfg["lam_grid"]),
            "d1": cfg["d1"],
            "mu1": mu1,
            "mu2": mu2,
        },
    }


def compute(p: dict[str, Any], seed: np.random.SeedSequence) -> Rows:
    """Every fixed point and its stability along one sweep, plus d1* or λ_c."""
    rows: Rows = []
    combos = (
        [(p["lam"], d) for d in p["d1"]]
        if p["axis"] == "d1"
        else [(lam, p["d1"]) for lam in p["lam"]]
    )
    for lam, d1 in combos:
        for fp in model.fixed_points(lam, p["mu2"], p["mu1"], d1):
            rows.append(
                table_row(
                    "mf",
                    "u",
                    fp.u,
                    axis=p["axis"],
                    lam=lam,
                    d1=d1,
                    kind=fp.kind,
                    stable=fp.stable,
                    max_real_eig=float(np.max(fp.eigenvalues.real)),
                )
            )
    if p["axis"] == "d1":
        rows.append(
            table_row(
                "cf",
                "dstar",
                model.dstar(p["lam"], p["mu2"], p["mu1"]),
                axis="d1",
                lam=p["lam"],
                dstar_real=model.dstar_continuous(p["lam"], p["mu2"], p["mu1"]),
            )
        )
    else:
        rows.append(
            table_row(
                "cf",
                "lambda_c",
                model.lambda_critical(p["d1"], p["mu2"], p["mu1"]),
                axis="lam",
                d1=p["d1"],
            )
        )
    return rows


def _threshold_pattern_verdict(rows: Rows, d1_max: int, ds: int) -> Verdict:
    """One stable (queueing) fixed point below ``ds``; from ``ds`` on three, two of them stable
    (queueing and no-queueing) and one saddle — at every d1 = 1..d1_max."""
    bad = []
    for d1 in range(1, d1_max + 1):
        fps = select(rows, quantity="u", axis="d1", d1=d1)
        if not fps:
            raise EmptyComparisonError(f"affinity-bifurcation: no fixed points at d1 = {d1}")
        stable = sorted(r["kind"] for r in fps if r["stable"])
        want = ["no-queueing", "queueing"] if d1 >= ds else ["queueing"]
        if stable != want or len(fps) != (3 if d1 >= ds else 1):
            bad.append(d1)
    return exact_verdict(
        not bad,
        d1_max - len(bad),
        f"{d1_max} of {d1_max} values of d1 agree with a threshold at d1 = {ds}",
        f"disagreeing d1: {bad}" if bad else "",
    )


def _two_stable_verdict(rows: Rows, d1: int) -> Verdict:
    """Exactly two of the fixed points at this d1 are locally stable."""
    fps = select(rows, quantity="u", axis="d1", d1=d1)
    if not fps:
        raise EmptyComparisonError(f"affinity-bifurcation: no fixed points at d1 = {d1}")
    n = sum(bool(r["stable"]) for r in fps)
    return exact_verdict(
        n == 2,
        n,
        f"2 stable fixed points at d1 = {d1}",
        f"{n} stable of {len(fps)}; "
        + "; ".join(
            f"{r['kind']} u = {r['value']:.4f}, max Re λ {r['max_real_eig']:.3g}" for r in fps
        ),
    )


def check(rows: Rows, cfg: Mapping[str, Any]) -> list[Claim]:
    """The saddle-node pattern at d1* and the two stable fixed points at the configured d1."""
    ds = select(rows, quantity="dstar")[0]["value"]
    d1_max = cfg["d1_max"]
    shifted = [_threshold_pattern_verdict(rows, d1_max, s) for s in (ds - 1, ds + 1)]
    claims = [
        make_claim(
            f"λ = {cfg['lam']}: one fixed point (queueing, stable) for d1 < d1* = {ds}; three "
            "for d1 ≥ d1* — two locally stable (queueing and no-queueing) and one saddle",
            _threshold_pattern_verdict(rows, d1_max, ds),
            control=(
                f"the same pattern holds with the threshold moved to {ds - 1} or {ds + 1}",
                exact_verdict(
                    any(v.passed for v in shifted),
                    max(v.measured for v in shifted),
                    f"{d1_max} of {d1_max} with a threshold at {ds - 1} or {ds + 1}",
                ),
            ),
            distance="the threshold one step either side of d1*",
        )
    ]
    d1 = cfg["d1"]
    claims.append(
        make_claim(
            f"λ = {cfg['lam']}, d1 = {d1}: two locally stable fixed points (Jacobian eigenvalues "
            "with negative real parts)",
            _two_stable_verdict(rows, d1),
            control=(
                f"the same count holds at d1 = d1* − 1 = {ds - 1}",
                _two_stable_verdict(rows, ds - 1),
            ),
            distance=f"the largest d1 below the saddle-node (d1* − 1 = {ds - 1})",
        )
    )
    return claims


def plot(rows: Rows, cfg: Mapping[str, Any]) -> Figure:
    """The idle fraction u of every fixed point against d1 and against λ, filled when stable."""
    fig, axes = new_figure(1, 2, width=8.5, height=3.4)
    for ax, axis, xkey, xlabel in (
        (axes[0][0], "d1", "d1", "primary selection size d1"),
        (axes[0][1], "lam", "lam", "arrival rate λ (per server)"),
    ):
        for c, kind in enumerate(("no-queueing", "queueing")):
            for stable, mfc in ((True, color(c)), (False, "white")):
                pts = [
                    r
                    for r in select(rows, quantity="u", axis=axis, kind=kind)
                    if r["stable"] == stable
                ]
                ax.plot(
                    [r[xkey] for r in pts],
                    [r["value"] for r in pts],
                    marker="o",
                    ls="none",
                    color=color(c),
                    mfc=mfc,
                    ms=3,
                    label=f"{kind} ({'stable' if stable else 'unstable'})" if pts else None,
                )
        ax.set(xlabel=xlabel, ylabel="idle fraction u at the fixed point")
    axes[0][0].set_title(f"Fixed points vs d1, λ = {cfg['lam']}")
    axes[0][1].set_title(f"Fixed points vs λ, d1 = {cfg['d1']}")
    drawn: dict[str, Any] = {}  # either panel's kinds, once each
    for ax in axes[0]:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            drawn.setdefault(label, handle)
    legend(axes[0][0], list(drawn.values()), list(drawn))
    return fig


ARTIFACT = Artifact(
    id="affinity-bifurcation",
    slug=SLUG,
    kind="figure",
    title="Bifurcation of the fixed points in d1 and λ",
    caption=(
        f"Idle fraction u of every fixed point of the fluid limit (μ2 = {MU2:g} unless the "
        "section sets it): filled = locally stable, open = unstable (Jacobian; on the face "
        "u = 0 for the queueing point). Left: vs d1 at the section's λ (saddle-node at d1*); "
        "right: vs λ at its d1 (both in the panel titles)."
    ),
    methods=("MF",),
    points=points,
    compute=compute,
    cost=estimates.bifurcation_cost,
    memory=estimates.bifurcation_memory,
    check=check,
    plot=plot,
    validate=validate_with_hysteresis,
)
