"""jiq-mean-jobs: mean jobs per server under idle-first routing — refined mean field against
exact simulation at finite N, with the mean field beside them."""

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
from lbrepro.plotting.intervals import legend, simulated
from lbrepro.plotting.style import new_figure
from lbrepro_jiq import policy

Rows = list[dict[str, Any]]
#: Events per second of the transition-declared simulator on this model, conservatively (the
#: cost estimate by which cheap points share a job; lbrepro's bench measures the kernel).
EVENTS_PER_SECOND = 2.0e6
#: The near miss: the refined mean field at the nearest higher load (in steps of LOAD_STEP)
#: whose prediction lies at least this many agreement margins above the claim's.
NEAR_MISS_MARGINS = 3.0
LOAD_STEP = 0.01
RUN_KEYS = ("N", "horizon", "warmup", "batches", "d", "K")


def near_miss_load(rho: float, d: int, K: int, N: int) -> float:
    """The nearest load above ρ whose refined mean field is NEAR_MISS_MARGINS margins higher."""
    target = policy.mean_field(rho, d, K, N) * (1 + NEAR_MISS_MARGINS * AGREEMENT)
    load = rho
    while load + LOAD_STEP < 1:
        load = round(load + LOAD_STEP, 10)
        if policy.mean_field(load, d, K, N) >= target:
            return load
    raise ConfigError("rho", f"no stable load above {rho:g} is {NEAR_MISS_MARGINS:g} margins off")


def validate(cfg: Mapping[str, Any]) -> None:
    """Stable loads only, and a truncation that holds the queue lengths they reach."""
    for i, rho in enumerate(cfg["rho"]):
        if not 0 < rho < 0.95:
            raise ConfigError(f"rho[{i}]", f"must be in (0, 0.95), got {rho}")
        # Above level 1 the tail decays geometrically at about λ·x_1^(d−1) = ρ^d (x_1 = ρ).
        if (rho ** cfg["d"]) ** (cfg["K"] - 1) > 1e-9:
            raise ConfigError("K", f"truncation K = {cfg['K']} too low for rho = {rho}")


def points(cfg: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """One point per load."""
    found: dict[str, dict[str, Any]] = {}
    for rho in cfg["rho"]:
        add_point(found, f"rho{num(rho)}", {"rho": rho} | {k: cfg[k] for k in RUN_KEYS}, "rho")
    return found


def cost(p: Mapping[str, Any]) -> float:
    """Estimated seconds: 2λN events per unit time at the generic kernel's speed."""
    return queue_simulation_seconds(p["rho"], p["N"], p["horizon"], EVENTS_PER_SECOND)


def memory(p: Mapping[str, Any]) -> footprint.Footprint:
    """Bytes: the mean field's K × K matrices and the simulator's per-level arrays."""
    return {"K": 64.0 * p["K"] ** 2, "rho": footprint.rows(4)}


def compute(p: dict[str, Any], seed: np.random.SeedSequence) -> Rows:
    """Mean field, refined mean field (and its near miss) and one exact simulation."""
    rho, d, K, N = p["rho"], p["d"], p["K"], p["N"]
    sim = policy.model(rho, d, K).simulate(
        N=N, horizon=p["horizon"], warmup=p["warmup"], seed=seed, batches=p["batches"]
    )
    near = near_miss_load(rho, d, K, N)
    base = {"rho": rho, "quantity": "mean_jobs"}
    return [
        base | {"method": "mf", "value": policy.mean_field(rho, d, K)},
        base | {"method": "rmf", "value": policy.mean_field(rho, d, K, N)},
        base
        | {
            "method": "rmf",
            "quantity": "mean_jobs_near_miss",
            "value": policy.mean_field(near, d, K, N),
            "rho_near": near,
        },
        base | {"method": "sim", **estimate_row(sim.estimate("main"), seed=seed.entropy)},
    ]


def _of(rows: Rows, method: str, quantity: str) -> Rows:
    found = (r for r in rows if r["method"] == method and r["quantity"] == quantity)
    return sorted(found, key=lambda r: r["rho"])


def check(rows: Rows, cfg: Mapping[str, Any]) -> list[Claim]:
    """The refined mean field predicts the finite-N mean jobs within 2% at every load."""
    sims, rmf, near = (
        _of(rows, "sim", "mean_jobs"),
        _of(rows, "rmf", "mean_jobs"),
        _of(rows, "rmf", "mean_jobs_near_miss"),
    )
    estimates = [estimate(r) for r in sims]
    margins = [agreement_margin(r["value"]) for r in rmf]
    labels = [f"ρ = {r['rho']:g}" for r in sims]
    verdict = agrees(estimates, [r["value"] for r in rmf], margin=margins, labels=labels)
    control = agrees(estimates, [r["value"] for r in near], margin=margins, labels=labels)
    loads = ", ".join(f"{r['rho_near']:g}" for r in near)
    return [
        make_claim(
            f"With N = {cfg['N']} servers the refined mean field of idle-first routing "
            f"(d = {cfg['d']}) gives the mean jobs per server within {AGREEMENT:.0%} at every "
            "load",
            verdict,
            control=(f"the refined mean field at the higher loads {loads}", control),
            distance=f"at least {NEAR_MISS_MARGINS:g} margins above the prediction",
            runs=[f"rho{num(r['rho'])}" for r in sims],
        )
    ]


def plot(rows: Rows, cfg: Mapping[str, Any]) -> Any:
    """Mean field and refined mean field (lines), simulation (markers, 95% CIs) by load."""
    fig, axes = new_figure()
    ax = axes[0][0]
    for method, label, style in (("mf", "mean field", "--"), ("rmf", "refined mean field", "-")):
        line = _of(rows, method, "mean_jobs")
        ax.plot([r["rho"] for r in line], [r["value"] for r in line], style, label=label)
    sim = _of(rows, "sim", "mean_jobs")
    simulated(
        ax,
        [r["rho"] for r in sim],
        [r["value"] for r in sim],
        [r.get("ci_low") for r in sim],
        [r.get("ci_high") for r in sim],
        converged=[r.get("converged") for r in sim],
        color="C2",
        label=f"simulation, N = {cfg['N']} (95% CI)",
    )
    ax.set(xlabel="load ρ (arrival rate / service rate)", ylabel="E[jobs per server] (jobs)")
    legend(ax)
    return fig


def summary(rows: Rows) -> Rows:
    """One line per load for the report, from the table alone."""
    mf = {r["rho"]: r["value"] for r in _of(rows, "mf", "mean_jobs")}
    rmf = {r["rho"]: r["value"] for r in _of(rows, "rmf", "mean_jobs")}
    return [
        {
            "ρ": r["rho"],
            "simulation (95% CI)": f"{r['value']:.4f} [{r['ci_low']:.4f}, {r['ci_high']:.4f}]",
            "refined mean field": f"{rmf[r['rho']]:.4f}",
            "mean field": f"{mf[r['rho']]:.4f}",
        }
        for r in _of(rows, "sim", "mean_jobs")
    ]


ARTIFACT = Artifact(
    id="jiq-mean-jobs",
    slug="jiq",
    kind="figure",
    title="Idle-first routing: mean jobs per server at finite N",
    caption=lambda cfg: (
        f"Mean jobs per server under idle-first routing with d = {cfg['d']} samples: mean "
        f"field, refined mean field for N = {cfg['N']} (lines) and simulation of N = "
        f"{cfg['N']} servers (95% CI)."
    ),
    methods=("MF", "RMF", "SIM"),
    points=points,
    cost=cost,
    memory=memory,
    compute=compute,
    check=check,
    plot=plot,
    summary=summary,
    validate=validate,
)
