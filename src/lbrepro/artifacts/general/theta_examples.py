"""general-theta-examples: θ by quadrature against the closed forms of docs/models.md §C."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from lbrepro.artifacts.general import theta_estimates
from lbrepro.artifacts.general.comparisons import service_label
from lbrepro.artifacts.general.config_checks import check_dists
from lbrepro.artifacts.registry import Artifact, Rows
from lbrepro.core.claims import Claim, close, consistency
from lbrepro.core.io import select
from lbrepro.core.verdicts import EmptyComparisonError
from lbrepro.models import general as model
from lbrepro.models import service


def points(cfg: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """One point: every distribution's θ is a few quadratures."""
    return {"examples": {"dists": list(cfg["dists"]), "d": list(cfg["d"])}}


def validate(cfg: Mapping[str, Any]) -> None:
    """Refuse an unknown or invalid distribution spec, naming its index."""
    check_dists("dists", cfg["dists"])


def compute(p: dict[str, Any], seed: np.random.SeedSequence) -> Rows:
    """θ by quadrature for every (distribution, d), and the closed form where one is known."""
    rows: Rows = []
    for spec in p["dists"]:
        dist = service.parse(spec)
        for d in p["d"]:
            base = {"dist": spec, "label": dist.label, "d": d, "quantity": "theta"}
            rows.append(base | {"method": "cf", "how": "quadrature", "value": model.theta(dist, d)})
            cf = model.theta_closed_form(dist, d)
            if cf is not None:
                rows.append(base | {"method": "published", "how": "closed form", "value": cf})
    return rows


def check(rows: Rows, cfg: Mapping[str, Any]) -> list[Claim]:
    """Each closed form against quadrature: consistency checks (the same integral)."""
    claims = []
    for spec in cfg["dists"]:
        pub = {r["d"]: r["value"] for r in select(rows, method="published", dist=spec)}
        if not pub:
            continue
        quad = {r["d"]: r["value"] for r in select(rows, how="quadrature", dist=spec)}
        err = max(abs(quad[d] - pub[d]) / pub[d] for d in pub)
        claims.append(
            consistency(
                f"θ closed form of the paper's example for {service_label(rows, spec)} equals "
                "the quadrature ∫(μḠ)^d (the same integral done by hand)",
                close(0.0, float(f"{err:.3g}"), 1e-8),
                source="paper",
                details=f"max relative difference over d = {sorted(pub)}",
            )
        )
    if not claims:
        raise EmptyComparisonError("general-theta-examples: no distribution has a closed form")
    return claims


def summary(rows: Rows) -> Rows:
    """θ by quadrature beside its closed form, one row per (distribution, d)."""
    out: Rows = []
    for r in select(rows, how="quadrature"):
        pub = select(rows, method="published", dist=r["dist"], d=r["d"])
        out.append(
            {
                "distribution (mean 1)": r["label"],
                "d": r["d"],
                "θ quadrature": f"{r['value']:.10g}",
                "θ closed form": f"{pub[0]['value']:.10g}" if pub else "—",
            }
        )
    return out


ARTIFACT = Artifact(
    id="general-theta-examples",
    slug="general",
    kind="table",
    title="θ for the paper's example distributions",
    caption=(
        "θ for exponential, Erlang, Weibull, Lomax and deterministic service (mean 1): "
        "adaptive quadrature of ∫(μḠ)^d against the closed forms (Weibull μ^(d−1)d^(−1/k), "
        "Lomax μ^(d−1)(α−1)/(dα−1), deterministic μ^(d−1))."
    ),
    methods=("CF",),
    points=points,
    compute=compute,
    cost=theta_estimates.grid_cost,
    memory=theta_estimates.memory,
    check=check,
    summary=summary,
    validate=validate,
)
