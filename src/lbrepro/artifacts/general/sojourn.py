"""general-sojourn: E[T] against ρ for Erlang-2, d = 2 — published T_d, exact mean field,
simulation; exponential for reference."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lbrepro.artifacts.general.comparisons import (
    LIMIT_RULE,
    Item,
    as_float,
    first_row,
    published_and_mean_field_claims,
)
from lbrepro.artifacts.general.config_checks import check_load_sweep
from lbrepro.artifacts.general.point_runs import (
    PH_NOTE,
    load_sweep_cost,
    load_sweep_points,
    main_rows,
    point_rows_with_limit_run,
)
from lbrepro.artifacts.registry import Artifact, Rows
from lbrepro.core.claims import Claim
from lbrepro.core.io import select
from lbrepro.models import service
from lbrepro.plotting.style import METHOD_STYLE, color, new_figure

ITEMS: list[Item] = [("mean_sojourn", None)]


def validate(cfg: Mapping[str, Any]) -> None:
    """Loads, distributions and run length of the sweep."""
    check_load_sweep("general-sojourn", cfg)


def check(rows: Rows, cfg: Mapping[str, Any]) -> list[Claim]:
    """Per distribution: the published T_d, then the exact mean field, as the N → ∞ E[T]."""
    claims: list[Claim] = []
    d, N, rhos = cfg["d"], cfg["N"], list(cfg["rho"])
    for spec in cfg["dists"]:
        label = service.parse(spec).label
        claims += published_and_mean_field_claims(
            rows,
            spec,
            rhos,
            d,
            ITEMS,
            published=(
                f"{label}, d = {d}: the published sojourn time T_d is the N → ∞ mean sojourn "
                "time at every ρ"
            ),
            published_name="the published T_d",
            mean_field=(
                f"{label}, d = {d}: the exact PH mean-field E[T] is the N → ∞ mean sojourn time "
                "at every ρ"
            ),
            finite_n=(
                f"{label}, d = {d}: finite-N finding — at N = {N} the simulated E[T] lies within "
                "its CI of the exact PH mean field at every ρ (no 1/N allowance)"
            ),
        )
    return claims


def plot(rows: Rows, cfg: Mapping[str, Any]):
    """E[T] against ρ per distribution (left) and the published T_d's error (right)."""
    rows = main_rows(rows)
    fig, axes = new_figure(1, 2, width=8.5, height=3.5)
    ax, ax_err = axes[0]
    d = cfg["d"]
    for i, spec in enumerate(cfg["dists"]):
        c = color(i)
        label = service.parse(spec).label
        rhos = sorted(cfg["rho"])
        cf = [
            as_float(first_row(rows, "cf", "mean_sojourn", dist=spec, rho=r, d=d)["value"])
            for r in rhos
        ]
        mf = [first_row(rows, "mf", "mean_sojourn", dist=spec, rho=r, d=d) for r in rhos]
        sim = [first_row(rows, "sim", "mean_sojourn", dist=spec, rho=r, d=d) for r in rhos]
        ax.plot(rhos, cf, color=c, **METHOD_STYLE["cf"] | {"label": f"{label}: published T_d"})
        if all(m is not None for m in mf):
            ax.plot(
                rhos,
                [m["value"] for m in mf],
                color=c,
                **METHOD_STYLE["mf"] | {"label": f"{label}: exact mean field"},
            )
        ax.errorbar(
            rhos,
            [s["value"] for s in sim],
            yerr=[
                [s["value"] - s["ci_low"] for s in sim],
                [s["ci_high"] - s["value"] for s in sim],
            ],
            color=c,
            capsize=2,
            **METHOD_STYLE["sim"] | {"label": f"{label}: simulation"},
        )
        ax_err.plot(
            rhos,
            [100 * (a - s["value"]) / s["value"] for a, s in zip(cf, sim, strict=True)],
            color=c,
            marker="o",
            label=f"{label}: published − sim",
        )
    ax.set(
        xlabel="ρ (load)", ylabel="E[T] (mean service times)", title=f"Mean sojourn time, d = {d}"
    )
    ax_err.axhline(0, color="0.5", lw=0.8)
    ax_err.set(
        xlabel="ρ (load)",
        ylabel="relative error of T_d (%)",
        title="Published formula vs simulation",
    )
    ax.legend(fontsize=7)
    ax_err.legend(fontsize=7)
    return fig


def summary(rows: Rows) -> Rows:
    """Per (distribution, ρ): published T_d, exact mean field, simulation, published error."""
    rows = main_rows(rows)
    out: Rows = []
    for s in select(rows, method="sim", quantity="mean_sojourn"):
        key = {"dist": s["dist"], "rho": s["rho"], "d": s["d"]}
        cf = as_float(first_row(rows, "cf", "mean_sojourn", **key)["value"])
        mf = first_row(rows, "mf", "mean_sojourn", **key)
        out.append(
            {
                "service": s["label"],
                "ρ": s["rho"],
                "published T_d": f"{cf:.4f}",
                "exact mean field": f"{mf['value']:.4f}" if mf else "—",
                "simulation (95% CI)": f"{s['value']:.4f} [{s['ci_low']:.4f}, {s['ci_high']:.4f}]",
                "published error": f"{100 * (cf - s['value']) / s['value']:+.1f}%",
            }
        )
    return out


ARTIFACT = Artifact(
    id="general-sojourn",
    slug="general",
    kind="figure",
    title="Mean sojourn time with Erlang-2 service: published formula vs truth",
    caption=(
        "E[T] against ρ with d = 2 for Erlang-2 service (mean 1) and exponential service "
        "for reference: the published T_d built on Π_k (solid), the exact phase-type mean "
        "field (dashed) and simulation of N FCFS servers (markers, 95% batch-means CI). "
        "Right: relative error of the published T_d against simulation."
    ),
    methods=("CF", "MF", "SIM"),
    points=load_sweep_points,
    cost=load_sweep_cost,
    compute=point_rows_with_limit_run,
    check=check,
    plot=plot,
    summary=summary,
    validate=validate,
    reconstructions=(
        "The paper's E(2,1) is taken as Erlang-2 scaled to mean 1, so ρ = λ; only the time "
        "unit differs from two phases of rate 1.",
        "T_d = Σ_k (Π_{k−1}^d − Π_k^d)[1/μ + 1{k≥2}(E[X_R] + (k−2)/μ)] is docs/models.md's "
        "reconstruction of how the paper builds its sojourn time (the seed lost the "
        "equation).",
        LIMIT_RULE,
        PH_NOTE,
    ),
)
