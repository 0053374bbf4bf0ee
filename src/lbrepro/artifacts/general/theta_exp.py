"""general-theta-exp: θ against μ for exponential service, d = 2 and 3."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from lbrepro.artifacts.general import theta_estimates
from lbrepro.artifacts.registry import Artifact, Rows
from lbrepro.core.claims import Claim, close, consistency
from lbrepro.core.io import select
from lbrepro.core.verdicts import EmptyComparisonError
from lbrepro.models import general as model
from lbrepro.models import service
from lbrepro.plotting.intervals import legend
from lbrepro.plotting.style import METHOD_STYLE, color, new_figure


def points(cfg: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """One point: the whole curve is a few quadratures."""
    return {"curve": {"mu": list(cfg["mu"]), "d": list(cfg["d"])}}


def compute(p: dict[str, Any], seed: np.random.SeedSequence) -> Rows:
    """θ by quadrature and by the published μ^(d−1)/d at every (d, μ)."""
    rows: Rows = []
    for d in p["d"]:
        for mu in p["mu"]:
            dist = service.exponential(mu)
            base = {"d": d, "mu": mu, "quantity": "theta"}
            rows.append(base | {"method": "cf", "how": "quadrature", "value": model.theta(dist, d)})
            rows.append(
                base | {"method": "published", "how": "mu^(d-1)/d", "value": mu ** (d - 1) / d}
            )
    return rows


def check(rows: Rows, cfg: Mapping[str, Any]) -> list[Claim]:
    """The published θ = μ^(d−1)/d against quadrature: a consistency check."""
    pub = {(r["d"], r["mu"]): r["value"] for r in select(rows, method="published")}
    quad = {(r["d"], r["mu"]): r["value"] for r in select(rows, how="quadrature")}
    if not pub:
        raise EmptyComparisonError("general-theta-exp: no published θ values")
    err = max(abs(quad[k] - pub[k]) / pub[k] for k in pub)
    # θ = μ^(d−1)/d is the integral ∫(μe^(−μx))^d dx done by hand: quadrature of the same
    # integral can only confirm it (a formula compared with itself).
    return [
        consistency(
            "Exponential service: θ = μ^(d−1)/d (θ = μ/2 for d = 2, μ²/3 for d = 3) — the "
            "defining integral by quadrature equals the published formula",
            close(0.0, float(f"{err:.3g}"), 1e-9),
            source="paper",
            details="max relative difference between quadrature and the published formula",
        )
    ]


def plot(rows: Rows, cfg: Mapping[str, Any]):
    """θ against μ per d: the published formula as lines, quadrature as circles."""
    fig, axes = new_figure(1, 1, width=5.0, height=3.4)
    ax = axes[0][0]
    for i, d in enumerate(cfg["d"]):
        pub = sorted((r["mu"], r["value"]) for r in select(rows, method="published", d=d))
        quad = sorted((r["mu"], r["value"]) for r in select(rows, how="quadrature", d=d))
        ax.plot(
            *zip(*pub, strict=True),
            color=color(i),
            **METHOD_STYLE["cf"] | {"label": f"d = {d}: μ^{d - 1}/{d} (published)"},
        )
        ax.plot(
            *zip(*quad, strict=True),
            color=color(i),
            ls="none",
            marker="o",
            mfc="none",
            label=f"d = {d}: quadrature",
        )
    ax.set(
        xlabel="μ (service rate, 1/time)",
        ylabel="θ (rate^(d−1))",
        title="θ for exponential service",
    )
    legend(ax)
    return fig


ARTIFACT = Artifact(
    id="general-theta-exp",
    slug="general",
    kind="figure",
    title="θ against μ for exponential service",
    caption=(
        "θ = ∫(μe^(−μx))^d dx against the service rate μ for each configured d (θ = "
        "μ^(d−1)/d: μ/2 at d = 2, μ²/3 at d = 3): the published formula (lines) and "
        "adaptive quadrature (circles)."
    ),
    methods=("CF",),
    points=points,
    compute=compute,
    cost=theta_estimates.grid_cost,
    memory=theta_estimates.memory,
    check=check,
    plot=plot,
)
