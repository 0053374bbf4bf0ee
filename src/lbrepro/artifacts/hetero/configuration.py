"""The paper's config sections: named systems, load limits and simulation lengths, checked.

Every artifact lists its clusters as ``systems: [{name, gamma, C, d}]`` and normalises loads by
the full capacity μΣγC; the checks here run before any job, so a bad value stops the run with
a message naming its key.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lbrepro.core import footprint
from lbrepro.core.args import check_stable_load, run_length, run_options
from lbrepro.core.errors import ConfigError
from lbrepro.core.packing import queue_simulation_seconds, simulation_seconds
from lbrepro.models import hetero as model
from lbrepro.sim.occupancy import EVENTS_PER_SECOND, OccupancySimResult
from lbrepro.sim.occupancy_routing import server_counts

#: Static random routing leaves the d = 1 queues long (many occupied levels per event): its
#: runs took 4–8× those of the schemes in the full run's benchmark files.
RANDOM_ROUTING_SLOWDOWN = 6.0


def system_from_spec(spec: Mapping[str, Any]) -> model.System:
    """The model's System from one config entry ``{name, gamma, C, d[, mu]}``."""
    return model.System(
        tuple(spec["gamma"]), tuple(spec["C"]), tuple(spec["d"]), spec.get("mu", 1.0)
    )


def named_systems(cfg: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """The artifact's systems by name (config: a list of {name, gamma, C, d}).

    A list, not a mapping: the quick profile must be able to *replace* the systems, and
    config files merge mappings key by key but replace lists whole.
    """
    named: dict[str, Mapping[str, Any]] = {}
    for i, spec in enumerate(cfg["systems"]):
        if spec["name"] in named:
            raise ConfigError(f"systems[{i}].name", f"duplicate system name {spec['name']!r}")
        named[spec["name"]] = spec
    return named


def check_load(key: str, rho: float) -> None:
    """Loads are normalised by the full capacity μΣγC: no policy is stable at ρ ≥ 1."""
    check_stable_load(key, rho)


def _validate_simulation(cfg: Mapping[str, Any]) -> None:
    """γ_j·N servers of each type must be whole; every horizon passes the run-length rule."""
    Ns = cfg["N"] if isinstance(cfg["N"], list) else [cfg["N"]]
    for spec in cfg["systems"]:
        for N in Ns:
            try:
                server_counts(tuple(spec["gamma"]), N)
            except ConfigError as err:
                raise ConfigError("N", f"system {spec['name']}: {err.message}") from None
    horizons = cfg.get("horizons", [cfg["horizon"]] if "horizon" in cfg else [])
    # The section has no batches of its own (the shared simulation section's are checked by
    # the schema), so the rule is applied with its least number of batches.
    batches = cfg.get("batches", 2)
    for h in horizons:
        try:
            run_length(h, cfg["warmup"], batches)
        except ConfigError as err:
            if err.key != "horizon":
                raise
            # A list of horizons shares one warm-up: a horizon too short is the warm-up's fault.
            raise ConfigError(
                "warmup", f"{cfg['warmup']} must be shorter than the horizon {h}"
            ) from None


def validate_systems(cfg: Mapping[str, Any]) -> None:
    """Build every configured system, so bad γ, C or d fail before any job runs; then check
    the simulation parameters against them (whole γ·N, warm-up < horizon). Errors name the
    key inside the artifact's section (``systems[1].C``)."""
    names = [spec["name"] for spec in cfg["systems"]]
    for i, spec in enumerate(cfg["systems"]):
        if names.index(spec["name"]) != i:
            raise ConfigError(f"systems[{i}].name", f"{spec['name']!r} appears twice")
        try:
            system_from_spec(spec)
        except ConfigError as err:
            field = {"capacity": "C"}.get(err.key, err.key)
            raise err.under(f"systems[{i}]", field) from None
    if "N" in cfg:
        _validate_simulation(cfg)


def simulate_point(
    system: model.System, p: Mapping[str, Any], seed: Any, **kw: Any
) -> OccupancySimResult:
    """One simulation of a point at its load ρ·capacity, with its N, horizon, warm-up and
    batches and (unless ``kw`` gives the model's own) its policy; ``kw`` goes to the model."""
    return model.simulate(
        system,
        p["rho"] * system.total_capacity,
        **run_options(p, seed),
        **{"policy": p["policy"]} | kw,
    )


def server_time_run(cfg: Mapping[str, Any], N: int) -> dict[str, Any]:
    """The run of N servers of a sweep over N at equal total server-time (``server_time``):
    N, horizon = warm-up + server_time/N, warm-up and batches."""
    return {
        "N": N,
        "horizon": cfg["warmup"] + cfg["server_time"] / N,
        "warmup": cfg["warmup"],
        "batches": cfg["batches"],
    }


def simulation_cost(p: Mapping[str, Any]) -> float:
    """Estimated seconds of a point that simulates one (system, policy, ρ, N, horizon):
    arrivals and departures, 2λN per unit time with λ = ρΣγC; a point without a
    simulation (a mean-field sweep) costs its start-up only."""
    if "horizon" not in p:
        return simulation_seconds(0.0, EVENTS_PER_SECOND)
    spec = p["spec"]
    capacity = sum(g * c for g, c in zip(spec["gamma"], spec["C"], strict=True))
    slowdown = RANDOM_ROUTING_SLOWDOWN if p.get("policy") == "random" else 1.0
    return queue_simulation_seconds(
        p["rho"] * capacity, p["N"], p["horizon"], EVENTS_PER_SECOND, slowdown
    )


#: Seconds of one mean-field solve (a fixed point per policy and load; a bisection of the
#: stability boundary solves ~20 of them: 0.2–0.6 s measured per policy).
MEAN_FIELD_SOLVE_SECONDS = 0.02
BISECTION_SECONDS = 0.3
#: Levels a simulation or a mean field allocates per server type at least (grown on demand).
MIN_LEVELS = 64
#: Bytes per server of a run's start state (occupancies drawn per server, and their counts).
START_BYTES_PER_SERVER = 16


def point_cost(p: Mapping[str, Any]) -> float:
    """Estimated seconds of any point of the paper: a simulation (:func:`simulation_cost`, or
    one run per horizon of ``horizons`` at ``side``·capacity), a mean-field sweep over
    ``rho_grid`` × ``policies``, or the boundary bisections of ``ratios_bisect``."""
    if "horizons" in p:
        spec = p["spec"]
        capacity = sum(g * c for g, c in zip(spec["gamma"], spec["C"], strict=True))
        lam = p["side"] * model.sqd_stability_closed_form(system_from_spec(spec), spec["d"][0])
        return queue_simulation_seconds(
            min(lam, capacity), p["N"], sum(p["horizons"]), EVENTS_PER_SECOND
        )
    if "ratios_bisect" in p:
        work = 3 * BISECTION_SECONDS * len(p["ratios_bisect"])
        return simulation_seconds(0.0, EVENTS_PER_SECOND) + work
    if "rho_grid" in p and "horizon" not in p:
        work = MEAN_FIELD_SOLVE_SECONDS * len(p["rho_grid"]) * len(p["policies"])
        return simulation_seconds(0.0, EVENTS_PER_SECOND) + work
    return simulation_cost(p)


def point_memory(p: Mapping[str, Any]) -> footprint.Footprint:
    """Bytes of any point of the paper: the kernel's per-type tables ((J + 2)·J) and levels
    (J × at least MIN_LEVELS, × deep_levels·C_max/C_min for the log-space tail), the start
    state's N draws, and the rows (per level, per load of a sweep, per ratio)."""
    spec = p.get("spec", {"gamma": [0.5, 0.5], "C": [1.0, 2.0]})
    J = len(spec["gamma"])
    ratio = max(spec["C"]) / min(spec["C"])
    out = {"systems": footprint.FLOAT * (3 * (J + 2) * J + 4 * J * MIN_LEVELS)}
    if "N" in p:
        out["N"] = START_BYTES_PER_SERVER * p["N"]
    if "deep_levels" in p:
        out["deep_levels"] = 4 * footprint.FLOAT * J * p["deep_levels"] * ratio
    n_rows = 2 * J * (p.get("kmax", 0) + 1) + 8
    if "rho_grid" in p and "horizon" not in p:
        out["rho_grid"] = footprint.rows(len(p["rho_grid"]) * len(p["policies"]) * (J + 4))
    if "ratios" in p:
        out["ratios"] = footprint.rows(len(p["ratios"]) + 5 * len(p["ratios_bisect"]))
    if "horizons" in p:
        n_rows += 2 * len(p["horizons"])
    out["kmax" if "kmax" in p else "points"] = footprint.rows(n_rows)
    return out
