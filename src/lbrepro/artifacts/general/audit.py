"""general-audit: u_2, u_3, E[T] per distribution and ρ from the closed form, the exact mean
field (PH only) and simulation, with relative errors and a verdict."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from lbrepro.artifacts.general.comparisons import (
    LIMIT_RULE,
    sim_estimates,
    sweep_claims,
    table_ref,
)
from lbrepro.artifacts.general.config_checks import check_load_sweep
from lbrepro.artifacts.general.point_runs import (
    PH_NOTE,
    Item,
    load_sweep_compute,
    load_sweep_cost,
    load_sweep_points,
    main_rows,
    point_memory,
)
from lbrepro.artifacts.registry import Artifact, Rows
from lbrepro.core.claims import Claim
from lbrepro.core.io import select
from lbrepro.core.rows import pm
from lbrepro.core.verdicts import AGREEMENT


def validate(cfg: Mapping[str, Any]) -> None:
    """Loads, distributions and run length of the sweep."""
    check_load_sweep(cfg)


ITEMS: list[Item] = [("u", 2), ("u", 3), ("mean_sojourn", None)]

#: The point's rows with the N/4 run, and the controls' predictions of ITEMS.
compute = load_sweep_compute(ITEMS)


def audit_table(rows: Rows) -> list[dict[str, Any]]:
    """Per (distribution, ρ, quantity): simulation at N, its N → ∞ extrapolation, CF, MF."""
    out = []
    for s in select(main_rows(rows), method="sim", quantity="mean_sojourn"):
        spec, rho, d = s["dist"], s["rho"], s["d"]
        fixed, _ = sim_estimates(rows, spec, rho, d, ITEMS, limit=False)
        has_limit = bool(select(rows, role="limit", dist=spec, rho=rho, d=d))
        lim = sim_estimates(rows, spec, rho, d, ITEMS, limit=True)[0] if has_limit else None
        for i, item in enumerate(ITEMS):
            cf = table_ref(rows, "cf", spec, rho, d, item)
            mf = table_ref(rows, "mf", spec, rho, d, item)
            e = fixed[i]
            best = lim[i] if lim else e
            out.append(
                {"dist": spec, "rho": rho, "d": d, "label": s["label"]}
                | {
                    "quantity": "E[T]" if item[1] is None else f"u_{item[1]}",
                    "sim": e.mean,
                    "half": e.half_width,
                    "limit": None if lim is None else lim[i].mean,
                    "limit_half": None if lim is None else lim[i].half_width,
                    "cf": cf,
                    "mf": mf,
                    "rel_cf": (cf - best.mean) / best.mean if best.mean > 0 else math.inf,
                    "rel_mf": None if mf is None else (mf - best.mean) / best.mean,
                    # The claims' rule: within the 2% margin, the whole interval inside it.
                    "cf_ok": abs(cf - best.mean) + best.half_width < AGREEMENT * abs(cf),
                }
            )
    return out


def check(rows: Rows, cfg: Mapping[str, Any]) -> list[Claim]:
    """Per distribution: the published form, then the exact mean field, as the N → ∞ values."""
    return sweep_claims(
        rows,
        cfg,
        ITEMS,
        published=lambda label: (
            f"{label}: the published closed form (Π_2, Π_3, T_d) gives the N → ∞ values at every ρ"
        ),
        published_name="the published form",
        mean_field=lambda label: (
            f"{label}: the exact PH mean field gives the N → ∞ u_2, u_3, E[T] at every ρ"
        ),
    )


def summary(rows: Rows) -> Rows:
    """The audit table as the report shows it: values, errors and the published verdict."""
    out: Rows = []
    for t in audit_table(rows):
        lim = "—" if t["limit"] is None else pm(t["limit"], t["limit_half"], ".4g", ".1g")
        out.append(
            {
                "service": t["label"],
                "ρ": t["rho"],
                "quantity": t["quantity"],
                "published": f"{t['cf']:.4g}",
                "exact MF": "—" if t["mf"] is None else f"{t['mf']:.4g}",
                "simulation ± CI": pm(t["sim"], t["half"], ".4g", ".1g"),
                "N → ∞ (extrapolated) ± CI": lim,
                "published error": f"{100 * t['rel_cf']:+.1f}%",
                "MF error": "—" if t["rel_mf"] is None else f"{100 * t['rel_mf']:+.2f}%",
                "verdict": "published holds" if t["cf_ok"] else "published fails",
            }
        )
    return out


ARTIFACT = Artifact(
    id="general-audit",
    slug="general",
    kind="table",
    title="Audit: the published closed form against the exact mean field and simulation",
    caption=(
        "Per service distribution (mean 1) and load ρ at the configured d: u_2, u_3 and E[T] "
        "from the published closed form (Π_k, T_d), the exact phase-type mean field (cavity "
        "queue; PH service only) and simulation of N FCFS servers (95% batch-means CI); "
        "relative errors against simulation and a verdict (published holds: within the "
        f"{AGREEMENT:.0%} margin, the whole interval inside it). The closed form integrates "
        "∫s_{k−1}(x)^d dx where the probability that all d sampled queues hold ≥ k−1 jobs "
        "is (∫s_{k−1})^d: even for exponential service it gives u_2 = ρ^(d+1)/d instead "
        "of ρ^(d+1)."
    ),
    methods=("CF", "MF", "SIM"),
    points=load_sweep_points,
    cost=load_sweep_cost,
    memory=point_memory,
    compute=compute,
    check=check,
    summary=summary,
    validate=validate,
    reconstructions=(
        LIMIT_RULE,
        PH_NOTE,
    ),
)
