"""One distribution at one load: the published closed form, the exact mean field (phase-type
service) and simulation of N FCFS servers, as tidy rows — the compute step shared by
general-sojourn, general-tail and general-audit."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from lbrepro.artifacts.general.config_checks import point_id_fragment
from lbrepro.artifacts.registry import Rows
from lbrepro.core import footprint
from lbrepro.core.ids import add_point, num
from lbrepro.core.packing import simulation_seconds
from lbrepro.core.rows import estimate_row
from lbrepro.models import general as model
from lbrepro.models import service
from lbrepro.sim.general_service import EVENTS_PER_SECOND

#: The second run of a limit test has N / LIMIT_RATIO servers.
LIMIT_RATIO = 4

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


def point_memory(p: Mapping[str, Any]) -> footprint.Footprint:
    """Bytes of a simulation point: the kernel's per-server arrays, the phase-type mean field,
    and its rows (u_0..u_kmax of the runs)."""
    return {
        "N": BYTES_PER_SERVER * p["N"],
        "dists": MEAN_FIELD_BYTES,
        "kmax": footprint.rows(4 * (p["kmax"] + 1) + 8),
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


def main_rows(rows: Rows) -> Rows:
    """The rows of the main runs (without the smaller runs of the limit tests)."""
    return [r for r in rows if r.get("role") != "limit"]
