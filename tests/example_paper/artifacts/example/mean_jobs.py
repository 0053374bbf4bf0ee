"""example-mean-jobs: E[jobs per server] under random routing, closed form vs simulation."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from lbrepro.artifacts.registry import Artifact
from lbrepro.core.claims import Claim, make_claim
from lbrepro.core.errors import ConfigError
from lbrepro.core.verdicts import estimate, within
from lbrepro.models import random_routing as model
from lbrepro.plotting.style import new_figure

Rows = list[dict[str, Any]]
# The control multiplies the closed form by this: a 10% error the check must catch.
CONTROL_FACTOR = 1.1


def validate(cfg: Mapping[str, Any]) -> None:
    """Every load must be stable (the schema only knows ρ > 0)."""
    for rho in cfg["rho"]:
        if rho >= 1:
            raise ConfigError("rho", f"must be < 1 (stable), got {rho}")


def points(cfg: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """One job per load ρ."""
    keys = ("N", "horizon", "warmup", "batches")
    return {f"rho{rho:g}": {"rho": rho} | {k: cfg[k] for k in keys} for rho in cfg["rho"]}


def compute(p: dict[str, Any], seed: np.random.SeedSequence) -> Rows:
    """The closed form and one simulation at this load, as tidy rows."""
    rho = p["rho"]
    sim = model.simulate(
        lam=rho, N=p["N"], horizon=p["horizon"], warmup=p["warmup"], seed=seed,
        batches=p["batches"],
    )  # fmt: skip
    low, high = sim.mean_jobs_ci
    return [
        {"rho": rho, "method": "cf", "quantity": "mean_jobs", "value": model.mean_jobs(rho)},
        {
            "rho": rho,
            "method": "sim",
            "quantity": "mean_jobs",
            "value": sim.mean_jobs,
            "ci_low": low,
            "ci_high": high,
            "N": p["N"],
            "batches": sim.batches,
            "converged": sim.converged,
        },
    ]


def check(rows: Rows, cfg: Mapping[str, Any]) -> list[Claim]:
    """E[jobs] = ρ/(1 − ρ) at every load, with the closed form off by 10% as the control."""
    sims = sorted((r for r in rows if r["method"] == "sim"), key=lambda r: r["rho"])
    estimates = [estimate(r) for r in sims]
    exact = [model.mean_jobs(r["rho"]) for r in sims]
    labels = [f"ρ = {r['rho']:g}" for r in sims]
    verdict = within(estimates, exact, labels=labels)
    control = within(estimates, [CONTROL_FACTOR * x for x in exact], labels=labels)
    return [
        make_claim(
            "Under random routing E[jobs per server] = ρ/(1 − ρ) at every load",
            verdict,
            control=(f"the closed form × {CONTROL_FACTOR}", control),
        )
    ]


def plot(rows: Rows, cfg: Mapping[str, Any]) -> Any:
    """Closed form (line) and simulation (markers with 95% CIs) against the load."""
    fig, axes = new_figure()
    ax = axes[0][0]
    cf = sorted((r for r in rows if r["method"] == "cf"), key=lambda r: r["rho"])
    sim = sorted((r for r in rows if r["method"] == "sim"), key=lambda r: r["rho"])
    ax.plot([r["rho"] for r in cf], [r["value"] for r in cf], label="closed form ρ/(1 − ρ)")
    ax.errorbar(
        [r["rho"] for r in sim],
        [r["value"] for r in sim],
        yerr=[[r["value"] - r["ci_low"] for r in sim], [r["ci_high"] - r["value"] for r in sim]],
        fmt="o",
        label=f"simulation, N = {cfg['N']} (95% CI)",
    )
    ax.set(xlabel="load ρ (arrival rate / service rate)", ylabel="E[jobs per server] (jobs)")
    ax.legend()
    return fig


def summary(rows: Rows) -> Rows:
    """One line per load for the report."""
    return [
        {"ρ": r["rho"], "simulation (95% CI)": f"{r['value']:.4f} [{r['ci_low']:.4f}, "
         f"{r['ci_high']:.4f}]", "closed form": f"{model.mean_jobs(r['rho']):.4f}"}
        for r in rows
        if r["method"] == "sim"
    ]  # fmt: skip


ARTIFACT = Artifact(
    id="example-mean-jobs",
    slug="example",
    kind="figure",
    title="Mean jobs per server under random routing",
    caption="E[jobs per server]: closed form ρ/(1 − ρ) (line) and simulation (95% CI).",
    methods=("CF", "SIM"),
    points=points,
    compute=compute,
    check=check,
    plot=plot,
    summary=summary,
    validate=validate,
)
