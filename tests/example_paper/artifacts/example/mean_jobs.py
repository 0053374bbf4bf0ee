"""example-mean-jobs: E[jobs per server] under random routing, closed form vs simulation."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from lbrepro.artifacts.registry import Artifact
from lbrepro.core import footprint
from lbrepro.core.claims import Claim, make_claim
from lbrepro.core.errors import ConfigError
from lbrepro.core.ids import add_point, num
from lbrepro.core.packing import queue_simulation_seconds
from lbrepro.core.rows import estimate_row
from lbrepro.core.verdicts import AGREEMENT, agreement_margin, agrees, estimate
from lbrepro.models import random_routing as model
from lbrepro.plotting.intervals import legend, simulated
from lbrepro.plotting.style import new_figure
from lbrepro.sim.occupancy import EVENTS_PER_SECOND

#: Bytes per server of the occupancy simulator's arrays (queue lengths, positions, start state).
BYTES_PER_SERVER = 40

Rows = list[dict[str, Any]]
# The near miss sits this many agreement margins from the claim's prediction: the closed form
# at the load whose E[jobs] is that much larger (a plausible mis-estimated load).
NEAR_MISS_MARGINS = 3.0


def near_miss_load(rho: float) -> float:
    """The load whose closed form exceeds ρ/(1 − ρ) by NEAR_MISS_MARGINS agreement margins."""
    target = model.mean_jobs(rho) * (1 + NEAR_MISS_MARGINS * AGREEMENT)
    return target / (1 + target)  # inverts E = ρ/(1 − ρ)


def validate(cfg: Mapping[str, Any]) -> None:
    """Every load must be stable (the schema only knows ρ > 0)."""
    for i, rho in enumerate(cfg["rho"]):
        if rho >= 1:  # the key inside the section: the pipeline prefixes the artifact id
            raise ConfigError(f"rho[{i}]", f"must be < 1 (stable), got {rho}")


def points(cfg: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """One job per load ρ."""
    keys = ("N", "horizon", "warmup", "batches")
    points: dict[str, dict[str, Any]] = {}
    for rho in cfg["rho"]:
        # num() writes the shortest exact text ({rho:g} would merge 0.9 and 0.9000001).
        add_point(points, f"rho{num(rho)}", {"rho": rho} | {k: cfg[k] for k in keys}, "rho")
    return points


def cost(p: Mapping[str, Any]) -> float:
    """Estimated seconds of a point: arrivals and departures, 2λN events per unit time."""
    return queue_simulation_seconds(p["rho"], p["N"], p["horizon"], EVENTS_PER_SECOND)


def memory(p: Mapping[str, Any]) -> footprint.Footprint:
    """Bytes of a point, by the key that drives them: the simulator's per-server arrays."""
    return {"N": BYTES_PER_SERVER * p["N"], "rho": footprint.rows(3)}


def compute(p: dict[str, Any], seed: np.random.SeedSequence) -> Rows:
    """The closed form and one simulation at this load, as tidy rows."""
    rho = p["rho"]
    sim = model.simulate(
        lam=rho, N=p["N"], horizon=p["horizon"], warmup=p["warmup"], seed=seed,
        batches=p["batches"],
    )  # fmt: skip
    near = near_miss_load(rho)
    return [
        {"rho": rho, "method": "cf", "quantity": "mean_jobs", "value": model.mean_jobs(rho)},
        # The control's prediction is written here, so the check reads only its table.
        {
            "rho": rho,
            "method": "cf",
            "quantity": "mean_jobs_near_miss",
            "value": model.mean_jobs(near),
            "rho_near": near,
        },
        # An estimate as a row: value, ci_low, ci_high, N, seed, batches, converged.
        {
            "rho": rho,
            "method": "sim",
            "quantity": "mean_jobs",
            **estimate_row(sim.estimate("mean_jobs"), seed=seed.entropy),
        },
    ]


def check(rows: Rows, cfg: Mapping[str, Any]) -> list[Claim]:
    """E[jobs] = ρ/(1 − ρ) at every load within 2%, with a nearby load as the near miss."""

    def of(method: str, quantity: str) -> Rows:
        found = (r for r in rows if r["method"] == method and r["quantity"] == quantity)
        return sorted(found, key=lambda r: r["rho"])

    sims, exact, near = (
        of("sim", "mean_jobs"),
        of("cf", "mean_jobs"),
        of("cf", "mean_jobs_near_miss"),
    )
    estimates = [estimate(r) for r in sims]
    margins = [agreement_margin(r["value"]) for r in exact]
    labels = [f"ρ = {r['rho']:g}" for r in sims]
    verdict = agrees(estimates, [r["value"] for r in exact], margin=margins, labels=labels)
    control = agrees(estimates, [r["value"] for r in near], margin=margins, labels=labels)
    loads = ", ".join(f"{r['rho_near']:.4g}" for r in near)
    return [
        make_claim(
            "Under random routing E[jobs per server] = ρ/(1 − ρ) at every load (within "
            f"{AGREEMENT:.0%})",
            verdict,
            control=(f"the closed form at the slightly higher loads {loads}", control),
            distance=f"{NEAR_MISS_MARGINS:g} margins above the prediction at every load",
            runs=[f"rho{num(r['rho'])}" for r in sims],
        )
    ]


def plot(rows: Rows, cfg: Mapping[str, Any]) -> Any:
    """Closed form (line) and simulation (markers with 95% CIs) against the load."""
    fig, axes = new_figure()
    ax = axes[0][0]
    cf = sorted(
        (r for r in rows if r["method"] == "cf" and r["quantity"] == "mean_jobs"),
        key=lambda r: r["rho"],
    )
    sim = sorted((r for r in rows if r["method"] == "sim"), key=lambda r: r["rho"])
    ax.plot([r["rho"] for r in cf], [r["value"] for r in cf], label="closed form ρ/(1 − ρ)")
    simulated(
        ax,
        [r["rho"] for r in sim],
        [r["value"] for r in sim],
        [r.get("ci_low") for r in sim],
        [r.get("ci_high") for r in sim],
        color="C1",
        label=f"simulation, N = {cfg['N']} (95% CI)",
    )
    ax.set(xlabel="load ρ (arrival rate / service rate)", ylabel="E[jobs per server] (jobs)")
    legend(ax)
    return fig


def summary(rows: Rows) -> Rows:
    """One line per load for the report, from the table alone."""
    exact = {
        r["rho"]: r["value"] for r in rows if (r["method"], r["quantity"]) == ("cf", "mean_jobs")
    }
    return [
        {"ρ": r["rho"], "simulation (95% CI)": f"{r['value']:.4f} [{r['ci_low']:.4f}, "
         f"{r['ci_high']:.4f}]", "closed form": f"{exact[r['rho']]:.4f}"}
        for r in rows
        if r["method"] == "sim"
    ]  # fmt: skip


ARTIFACT = Artifact(
    id="example-mean-jobs",
    slug="example",
    kind="figure",
    title="Mean jobs per server under random routing",
    # A caption that states a configured number is a function of the section.
    caption=lambda cfg: (
        "E[jobs per server]: closed form ρ/(1 − ρ) (line) and simulation of "
        f"N = {cfg['N']} servers (95% CI)."
    ),
    methods=("CF", "SIM"),
    points=points,
    cost=cost,
    memory=memory,
    compute=compute,
    check=check,
    plot=plot,
    summary=summary,
    validate=validate,
)
