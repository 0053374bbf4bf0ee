"""Time and memory estimates of the affinity artifacts' points (lbrepro.core.footprint).

Measured on one core: a fluid RK4 step of the truncated limit takes ~1.5e-7 + 1.1e-8·K s
(2.8e-7 at K = 12, 7.9e-7 at K = 60); a fixed-point solve 2–15 ms; an exact step function
~2 µs per position (a Fraction of binomials, ~200 bytes); the simulator keeps ~64 bytes per
server and ~128 per snapshot.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lbrepro.artifacts.affinity.performance import simulation_cost
from lbrepro.core import footprint
from lbrepro.core.packing import (
    POINT_START_SECONDS,
    queue_simulation_seconds,
)
from lbrepro.sim.affinity import EVENTS_PER_SECOND

FIXED_POINT_SECONDS = 0.015
POSITION_SECONDS = 5e-6
FRACTION_BYTES = 200
GRID_CHECK_SECONDS = 5e-3  # affinity-dstar's dense u grid, per (λ, μ2)
GRID_BYTES = 6 * 100_001 * footprint.FLOAT
BYTES_PER_SERVER = 64
SNAPSHOT_BYTES = 128
#: Spacing 1/CONTROL_GRID of affinity-basin's control grid at d1* − 1 (one fixed point there,
#: so a coarse grid suffices to show a single basin).
CONTROL_GRID = 10


def simplex_states(grid: int) -> int:
    """Initial states of the triangular grid of spacing 1/grid on x00 + x01 + x10 = 1."""
    return (grid + 1) * (grid + 2) // 2


#: Initial states of the basin's control grid (at most: a finer main grid is used as it is).
CONTROL_STATES = simplex_states(CONTROL_GRID)


def step_seconds(K: int) -> float:
    """Seconds of one RK4 step of the fluid limit truncated at K levels."""
    return 1.5e-7 + 1.1e-8 * K


def _steps(p: Mapping[str, Any]) -> float:
    return max(1.0, p["t_end"] / p["dt"])


def table1_cost(p: Mapping[str, Any]) -> float:
    """affinity-table1: per k, a search over d and two step functions of N + 1 positions."""
    return POINT_START_SECONDS + p["k_max"] * 3 * (p["N"] + 1) * POSITION_SECONDS


def table1_memory(p: Mapping[str, Any]) -> footprint.Footprint:
    """Two exact step functions of N + 1 Fractions; a row per k."""
    return {"N": 2 * FRACTION_BYTES * (p["N"] + 1), "k_max": footprint.rows(p["k_max"])}


def stepfunctions_cost(p: Mapping[str, Any]) -> float:
    """affinity-stepfunctions: f_ref and f_aff per d (and two controls) at N + 1 positions."""
    return POINT_START_SECONDS + (len(p["d"]) + 4) * (p["N"] + 1) * POSITION_SECONDS


def stepfunctions_memory(p: Mapping[str, Any]) -> footprint.Footprint:
    """A row (and a Fraction) per position of every step function."""
    positions = (len(p["d"]) + 3) * (p["N"] + 1)
    return {"N": footprint.rows(positions) + FRACTION_BYTES * positions}


def dstar_cost(p: Mapping[str, Any]) -> float:
    """affinity-dstar: closed forms and a dense-grid check per (λ, μ2)."""
    return POINT_START_SECONDS + len(p["lam"]) * len(p["mu2"]) * GRID_CHECK_SECONDS


def dstar_memory(p: Mapping[str, Any]) -> footprint.Footprint:
    """The dense u grid and its balances; a row per (λ, μ2)."""
    return {"lam": GRID_BYTES + footprint.rows(len(p["lam"]) * len(p["mu2"]))}


def trajectory_cost(p: Mapping[str, Any]) -> float:
    """affinity-trajectories, -bistability: n_traj trajectories of t_end/dt RK4 steps (at
    least: a bistable case adds final states), two fixed-point solves."""
    work = p["n_traj"] * _steps(p) * step_seconds(p["K"]) + 2 * FIXED_POINT_SECONDS
    return POINT_START_SECONDS + work


def trajectory_memory(p: Mapping[str, Any]) -> footprint.Footprint:
    """Eight rows per recorded state of every trajectory, and one recorded trajectory."""
    recorded = min(p["n_record"], _steps(p) + 1)
    states = recorded * (p["K"] + 1) * 2 * footprint.FLOAT
    return {"n_record": footprint.rows(8 * recorded * p["n_traj"]) + states}


def basin_cost(p: Mapping[str, Any]) -> float:
    """affinity-basin: one trajectory per initial state of the grid (and of the control)."""
    states = simplex_states(p["grid"]) + CONTROL_STATES
    return POINT_START_SECONDS + states * _steps(p) * step_seconds(p["K"])


def basin_memory(p: Mapping[str, Any]) -> footprint.Footprint:
    """A row per initial state (grid ≤ 200 in the schema: ~10 MB at most)."""
    return {"grid": footprint.rows(simplex_states(p["grid"]) + CONTROL_STATES)}


def _sweep(p: Mapping[str, Any]) -> int:
    return len(p["d1"]) if p["axis"] == "d1" else len(p["lam"])


def bifurcation_cost(p: Mapping[str, Any]) -> float:
    """affinity-bifurcation: the fixed points (and their Jacobians) at every sweep value."""
    return POINT_START_SECONDS + _sweep(p) * FIXED_POINT_SECONDS


def bifurcation_memory(p: Mapping[str, Any]) -> footprint.Footprint:
    """Up to three fixed points (a row each) per sweep value."""
    return {"lam_grid" if p["axis"] == "lam" else "d1_max": footprint.rows(3 * _sweep(p) + 1)}


def performance_memory(p: Mapping[str, Any]) -> footprint.Footprint:
    """affinity-queue-length, -waiting: the simulator's per-server arrays, or the formula
    grid's rows."""
    if p["kind"] == "cf":
        return {"lam_grid": footprint.rows(8 * len(p["lam"]))}
    return {"N": BYTES_PER_SERVER * p["N"], "lam_sim": footprint.rows(16)}


def sim_vs_fluid_cost(p: Mapping[str, Any]) -> float:
    """affinity-sim-vs-fluid: a case's simulation (performance.simulation_cost), or the
    published point's closed forms (a fixed point)."""
    if p.get("published"):
        return POINT_START_SECONDS + FIXED_POINT_SECONDS
    return simulation_cost(p)


def sim_vs_fluid_memory(p: Mapping[str, Any]) -> footprint.Footprint:
    """The simulator's per-server arrays; snapshots every dt_snap up to t_plot, eight rows
    each (the published point: a few rows)."""
    if p.get("published"):
        return {"cases": footprint.rows(8)}
    snaps = p["t_plot"] / p["dt_snap"] + 1
    return {
        "N": BYTES_PER_SERVER * p["N"],
        "dt_snap": snaps * (SNAPSHOT_BYTES + footprint.rows(8)),
    }


def tunneling_cost(p: Mapping[str, Any]) -> float:
    """affinity-tunneling: one long path, or ``reps`` runs up to the exit cap (2λN events per
    unit time each)."""
    if p.get("exit") or p.get("qexit"):
        return queue_simulation_seconds(
            p["lam"], p["N"], p["reps"] * p["exit_cap"], EVENTS_PER_SECOND
        )
    return queue_simulation_seconds(p["lam"], p["N"], p["horizon"], EVENTS_PER_SECOND)


def tunneling_memory(p: Mapping[str, Any]) -> footprint.Footprint:
    """Per-server arrays; snapshots every dt_snap of the path (of every run from the queueing
    state, all kept); a row per traced time unit."""
    out = {"N": BYTES_PER_SERVER * p["N"]}
    if p.get("qexit"):
        out["dt_snap"] = p["reps"] * (p["exit_cap"] / p["dt_snap"] + 1) * SNAPSHOT_BYTES
    elif not p.get("exit"):
        out["dt_snap"] = (p["horizon"] / p["dt_snap"] + 1) * SNAPSHOT_BYTES
        traced = min(p["t_trace"], p["horizon"]) / max(1.0, p["dt_snap"]) + 1
        out["t_trace"] = footprint.rows(traced)
    return out
