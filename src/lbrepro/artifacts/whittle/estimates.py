"""Time and memory estimates of the whittle artifacts' points (lbrepro.core.footprint).

Measured on one core (the full run's configs, and nmax at the schema's maxima): an index
computation per (q, d) grows as (nmax + 1)² (linear cost) or (nmax + 1)³ (mean–variance, the
FCFS closed forms' numerical control); the joint chain of K servers truncated at B has
(B + 1)^K states, ~400 bytes and ~1.7e-4 s (every policy, the RVI included) per state.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lbrepro.core import footprint
from lbrepro.core.packing import POINT_START_SECONDS, simulation_seconds
from lbrepro.sim.slotted_lps import EVENTS_PER_SECOND

LINEAR_INDEX_SECONDS = 3e-6  # × (nmax + 1)²
MEANVAR_INDEX_SECONDS = 3e-7  # × (nmax + 1)³
FCFS_INDEX_SECONDS = 2.4e-8  # × (nmax + 1)³, per cost
CHAIN_STATE_BYTES = 400
CHAIN_STATE_SECONDS = 1.7e-4
#: Rows of an index point per (q, d) and level; of an FCFS point per q.
INDEX_ROWS_PER_LEVEL = 3
FCFS_ROWS_PER_Q = 16


def _pairs(p: Mapping[str, Any]) -> int:
    return len(p["q"]) * len(p.get("d", [1]))


def index_cost(p: Mapping[str, Any]) -> float:
    """Seconds of an index point: every (q, d), at its cost (linear or mean–variance)."""
    n = p["nmax"] + 1
    per = MEANVAR_INDEX_SECONDS * n**3 if p.get("beta") else LINEAR_INDEX_SECONDS * n**2
    return POINT_START_SECONDS + _pairs(p) * per


def fcfs_cost(p: Mapping[str, Any]) -> float:
    """Seconds of an FCFS point: every q, at the linear cost and each β."""
    costs = 1 + len(p["beta"])
    return POINT_START_SECONDS + len(p["q"]) * costs * FCFS_INDEX_SECONDS * (p["nmax"] + 1) ** 3


def index_memory(p: Mapping[str, Any]) -> footprint.Footprint:
    """Bytes of an index, indexability or FCFS point: a few (nmax + 1)² tables (indexability:
    nmax = 2·mmax + 20 at most), and its rows."""
    nmax = p["nmax"] if "nmax" in p else 2 * p["mmax"] + 20
    tables = 4 * footprint.FLOAT * (nmax + 1) ** 2
    if "d" in p:
        n_rows = _pairs(p) * INDEX_ROWS_PER_LEVEL * (nmax + 1)
    else:  # FCFS: per q, at the linear cost and each β
        n_rows = len(p["q"]) * FCFS_ROWS_PER_Q * (1 + len(p["beta"]))
    return {"nmax": tables, "q": footprint.rows(n_rows)}


def chain_states(p: Mapping[str, Any]) -> float:
    """States of the joint chain at the point's starting buffer: (B + 1)^K (it only grows)."""
    return float(p["B"] + 1) ** len(p["q"])


def chain_cost(p: Mapping[str, Any]) -> float:
    """Seconds of a policy-comparison point: the chain's exact costs, then ``slots`` slots
    per policy when it simulates."""
    work = CHAIN_STATE_SECONDS * chain_states(p)
    return simulation_seconds(p.get("slots", 0), EVENTS_PER_SECOND) + work


def chain_memory(p: Mapping[str, Any]) -> footprint.Footprint:
    """Bytes of a policy-comparison point: the joint chain at its starting buffer."""
    return {f"scenarios.{p['scenario']}.B": CHAIN_STATE_BYTES * chain_states(p)}
