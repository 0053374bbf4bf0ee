"""One distribution at one load: the published closed form, the exact mean field (phase-type
service) and simulation of N FCFS servers, as tidy rows — the compute step shared by
general-sojourn, general-tail and general-audit — and the controls' predictions at the
neighbouring loads (:func:`neighbour_rows`), so that their checks read only their tables."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from lbrepro.artifacts.general.config_checks import point_id_fragment
from lbrepro.artifacts.registry import Rows
from lbrepro.core import footprint
from lbrepro.core.ids import add_point, num
from lbrepro.core.packing import simulation_seconds
from lbrepro.core.rows import estimate_row
from lbrepro.judging.neighbours import MAX_STEPS, neighbour_load
from lbrepro.models import general as model
from lbrepro.models import service
from lbrepro.sim.general_service import EVENTS_PER_SECOND

#: The second run of a limit test has N / LIMIT_RATIO servers.
LIMIT_RATIO = 4

Item = tuple[str, int | None]  # (quantity, level k or None): u_k, or E[T] ("mean_sojourn")

PH_NOTE = (
    "The exact mean field (method mf) is computed for phase-type service only (exponential, "
    "Erlang, hyperexponential, Coxian): the cavity queue iterated to its fixed point, checked "
    "against the (queue length, phase) ODE to 1e-8 in the tests."
)


def load_sweep_points(cfg: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """One point per (distribution, load), for general-sojourn and general-audit alike."""
    keep = ("d", "N", "horizon", "warmup", "batches")
    points: dict[str, dict[str, Any]] = {}
    for spec in cfg["dists"]:
        for rho in cfg["rho"]:
            params = {"dist": spec, "rho": rho, "kmax": 6} | {k: cfg[k] for k in keep}
            add_point(points, f"{point_id_fragment(spec)}-rho{num(rho)}", params, "dists, rho")
    return points


def load_sweep_cost(p: Mapping[str, Any]) -> float:
    """Estimated seconds of a load-sweep point: arrivals and departures, 2ρN per unit time."""
    return simulation_seconds(2 * p["rho"] * p["N"] * p["horizon"], EVENTS_PER_SECOND)


#: Bytes per server of the general-service kernel (queue length, head-of-line times and
#: phases, int64/float64 each) and of its start state.
BYTES_PER_SERVER = 32
#: Levels of the phase-type mean field at least (distribution phases ≤ MAX_PHASES = 64 are
#: refused beyond, by the spec parser): 64 levels × 64² phases of float64 at most.
MEAN_FIELD_BYTES = 64 * 64 * 64 * footprint.FLOAT


#: Rows of the controls' predictions of a point at most: two methods × MAX_STEPS loads ×
#: three quantities (:func:`neighbour_rows`), and general-sojourn's three Mitzenmacher rows.
CONTROL_ROWS = 2 * MAX_STEPS * 3 + 3


def point_memory(p: Mapping[str, Any]) -> footprint.Footprint:
    """Bytes of a simulation point: the kernel's per-server arrays, the phase-type mean field,
    and its rows (u_0..u_kmax of the runs and general-tail's log Π_1..log Π_kmax, and the
    controls' predictions)."""
    return {
        "N": BYTES_PER_SERVER * p["N"],
        "dists": MEAN_FIELD_BYTES,
        "kmax": footprint.rows(5 * (p["kmax"] + 1) + 8 + CONTROL_ROWS),
    }


def sim_rows(sim: Any, seed: np.random.SeedSequence, kmax: int, base: dict[str, Any]) -> Rows:
    """Rows of one simulation run: u_0..u_kmax and E[T] with their CIs, and the longest queue."""
    common = base | {
        "method": "sim",
        "measured_time": sim.horizon - sim.warmup_used,
        "warmup_used": sim.warmup_used,
        "events": sim.events_total,
    }
    rows: Rows = []
    for k in range(kmax + 1):
        inside = k < len(sim.u)
        rows.append(
            common
            | {
                "quantity": "u",
                "k": k,
                **estimate_row(
                    sim.estimate("u", k) if inside else sim.unreached(), seed=seed.entropy
                ),
            }
        )
    rows.append(
        common
        | {
            "quantity": "mean_sojourn",
            **estimate_row(sim.estimate("mean_sojourn"), seed=seed.entropy),
        }
    )
    # The longest queue seen: a sample-path maximum, not an estimate with a CI.
    facts = {"N": sim.N, "seed": seed.entropy, "batches": sim.batches, "converged": sim.converged}
    rows.append(
        common | facts | {"method": "path", "quantity": "max_queue", "value": sim.max_queue}
    )
    return rows


def point_rows(
    p: Mapping[str, Any], seed: np.random.SeedSequence, simulate: bool = True, limit: bool = False
) -> Rows:
    """CF (published), MF (PH only) and SIM rows of u_k (k ≤ kmax) and E[T] for one point.

    ``limit``: also simulate N/LIMIT_RATIO servers (rows marked ``role = limit``), for the
    tests of the N → ∞ claims.
    """
    spec, rho, d, kmax = p["dist"], p["rho"], p["d"], p["kmax"]
    dist = service.parse(spec)
    lam = rho / dist.mean
    base = {"dist": spec, "label": dist.label, "rho": rho, "d": d}
    rows: Rows = []
    pub = model.published_tail(dist, lam, d, kmax=kmax, tol=0.0)
    for k in range(kmax + 1):
        rows.append(
            base
            | {
                "method": "cf",
                "quantity": "u",
                "k": k,
                "value": float(pub[k]) if k < pub.size else 0.0,
            }
        )
    t_pub = model.published_sojourn(dist, lam, d)
    rows.append(
        base
        | {
            "method": "cf",
            "quantity": "mean_sojourn",
            "value": t_pub if math.isfinite(t_pub) else "inf",
        }
    )
    rows.append(base | {"method": "cf", "quantity": "theta", "value": model.theta(dist, d)})
    if dist.is_phase_type:
        mf = model.cavity_fixed_point(dist, lam, d)
        for k in range(kmax + 1):
            rows.append(
                base
                | {
                    "method": "mf",
                    "quantity": "u",
                    "k": k,
                    "value": float(mf.u[k]) if k < mf.u.size else 0.0,
                }
            )
        rows.append(
            base | {"method": "mf", "quantity": "mean_sojourn", "value": mf.mean_sojourn(lam)}
        )
    if d == 1:
        rows.append(
            base
            | {
                "method": "cf",
                "quantity": "mg1_mean_sojourn",
                "value": model.mg1_mean_sojourn(dist, lam),
            }
        )
    if simulate:
        sim = model.simulate(
            dist,
            lam,
            d,
            N=p["N"],
            horizon=p["horizon"],
            warmup=p["warmup"],
            seed=seed,
            batches=p["batches"],
        )
        rows += sim_rows(sim, seed, kmax, base)
        if limit:
            # A second, independent run with N/LIMIT_RATIO servers: with the first it
            # extrapolates to N → ∞ at the 1/N rate (see comparisons.extrapolated).
            small = np.random.SeedSequence(seed.entropy, spawn_key=(*seed.spawn_key, 1))
            sim2 = model.simulate(
                dist,
                lam,
                d,
                N=max(p["N"] // LIMIT_RATIO, 2),
                horizon=p["horizon"],
                warmup=p["warmup"],
                seed=small,
                batches=p["batches"],
            )
            rows += [
                r | {"role": "limit"}
                for r in sim_rows(sim2, small, kmax, base)
                if r["method"] == "sim"
            ]
    return rows


def point_rows_with_limit_run(p: Mapping[str, Any], seed: np.random.SeedSequence) -> Rows:
    """:func:`point_rows` plus the N/LIMIT_RATIO run that the N → ∞ claims extrapolate from."""
    return point_rows(p, seed, limit=True)


def model_ref(method: str, spec: str, rho: float, d: int, items: list[Item]) -> list[float]:
    """The published form (cf) or the exact PH mean field (mf) of ``items`` at load ρ.

    The controls need the reference at a load no point was computed at.
    """
    dist = service.parse(spec)
    lam = rho / dist.mean
    if method == "cf":
        kmax = max((k for _, k in items if k is not None), default=1)
        u = model.published_tail(dist, lam, d, kmax=kmax, tol=0.0)
        t = model.published_sojourn(dist, lam, d)
    else:
        mf = model.cavity_fixed_point(dist, lam, d)
        u, t = mf.u, mf.mean_sojourn(lam)
    return [t if k is None else (float(u[k]) if k < len(u) else 0.0) for _, k in items]


#: The quantity of a control's prediction of ``quantity`` at a neighbouring load.
NEIGHBOUR_SUFFIX = "_neighbour"


def neighbour_rows(
    p: Mapping[str, Any],
    items: list[Item],
    methods: Iterable[str] = ("cf", "mf"),
    steps: Iterable[int] = range(1, MAX_STEPS + 1),
) -> Rows:
    """The controls' predictions of one point: ``items`` by each method (mf for phase-type
    service only) at the loads ``steps`` steps of NEIGHBOUR below the point's
    (:func:`lbrepro.judging.neighbours.neighbour_load`), as exact rows of quantity
    ``<quantity>_neighbour`` with their ``steps`` and ``rho_neighbour``.

    Every step a search may reach is written: which one a control uses depends on the margins
    of the whole load sweep (the check picks it, :mod:`.comparisons`).
    """
    spec, rho, d = p["dist"], p["rho"], p["d"]
    dist = service.parse(spec)
    base = {"dist": spec, "label": dist.label, "rho": rho, "d": d}
    rows: Rows = []
    for method in methods:
        if method == "mf" and not dist.is_phase_type:
            continue
        for s in steps:
            load = neighbour_load(rho, s)
            for (q, k), v in zip(items, model_ref(method, spec, load, d, items), strict=True):
                level = {} if k is None else {"k": k}
                rows.append(
                    base
                    | {"method": method, "quantity": q + NEIGHBOUR_SUFFIX}
                    | level
                    | {
                        "value": "inf" if v == math.inf else float(v),
                        "steps": s,
                        "rho_neighbour": load,
                    }
                )
    return rows


def load_sweep_compute(items: list[Item]):
    """The compute of a load-sweep artifact whose claims compare ``items``: the point's rows
    with the N/LIMIT_RATIO run, and its controls' predictions (:func:`neighbour_rows`)."""

    def compute(p: Mapping[str, Any], seed: np.random.SeedSequence) -> Rows:
        return point_rows_with_limit_run(p, seed) + neighbour_rows(p, items)

    return compute


def main_rows(rows: Rows) -> Rows:
    """The rows of the main runs (without the smaller runs of the limit tests)."""
    return [r for r in rows if r.get("role") != "limit"]
