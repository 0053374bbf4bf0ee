"""Dispatching policies on the joint K-server LPS-d chain (docs/models.md §B): exact costs and
simulation.

The chain itself (state, truncation, operators, RVI) is :mod:`lbrepro.models.whittle_chain`.
B is acceptable when the stationary probability of the boundary (some n_k = B) is below the
tolerance (1e-6): that mass bounds what the truncation changes.

Policies [reconstruction of the tie rules]: Whittle (smallest W_k(n_k)), JSQ (fewest jobs),
JSEW (smallest (n_k + 1)/q_k), all with ties to the larger q_k and then to the server listed
first; RSA (uniform over the servers with room); optimal (relative value iteration). The
slotted system is simulated by :mod:`lbrepro.sim.slotted_lps` with these policies' tables.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from lbrepro.core.args import float_arg, int_arg, run_length
from lbrepro.core.errors import ConfigError, ConvergenceError
from lbrepro.models import whittle as arm
from lbrepro.models.spec import RUN_PARAMS, Conserved, Model, Param
from lbrepro.models.whittle_chain import JointChain, System
from lbrepro.sim.slotted_lps import (
    ROUTE_INDEX,
    ROUTE_TABLE,
    ROUTE_UNIFORM,
    simulate_slotted,
)

__all__ = [
    "MODEL",
    "POLICIES",
    "JointChain",
    "PolicyCosts",
    "System",
    "choose_buffer",
    "compare_policies",
    "conservation",
    "priorities",
    "rsa_cost",
    "simulate",
    "simulate_summary",
    "solve_summary",
    "whittle_routing",
]

POLICIES = ("optimal", "whittle", "jsq", "jsew", "rsa")
TRUNCATION_TOL = 1e-6
# Largest joint chain choose_buffer builds (≈ 8 bytes × ~10 arrays each: ~400 MB).
MAX_STATES = 5_000_000


def priorities(system: System, policy: str, nmax: int) -> np.ndarray:
    """Index table prio[k, n], n = 0..nmax, of an index policy (smallest is served)."""
    n = np.arange(nmax + 1, dtype=float)
    if policy == "whittle":
        return np.array(
            [
                arm.whittle_indices(system.p, q, d, nmax, system.cost, system.beta)
                for q, d in zip(system.q, system.d, strict=True)
            ]
        )
    if policy == "jsq":
        return np.tile(n, (system.K, 1))
    if policy == "jsew":
        return np.array([(n + 1) / q for q in system.q])
    raise ConfigError("policy", f"not an index policy: {policy!r}")


def whittle_routing(system: System, nmax: int) -> np.ndarray:
    """The Whittle policy's routing table on n = 0..nmax: the indices, or, when some index is
    beyond the float range (p > q_k, deep states), asinh of every server's indices, which
    routes the same (asinh is increasing) and keeps their order there (was: +∞ for all of
    them, a tie sent to the larger q, then to the first server, whichever queue was
    shorter)."""
    pairs = [
        arm.whittle_indices_and_ranks(system.p, q, d, nmax, system.cost, system.beta)
        for q, d in zip(system.q, system.d, strict=True)
    ]
    W = np.array([w for w, _ in pairs])
    ranks = np.array([r for _, r in pairs])
    return ranks if bool((np.isinf(W) & np.isfinite(ranks)).any()) else W


def rsa_cost(system: System, nmax: int = 200, tol: float = 1e-13) -> float:
    """Exact RSA cost: server k alone sees Bernoulli(p/K) arrivals (inf if p/K ≥ q_k).

    RSA needs no joint chain: routing is independent of the state, so each server's marginal
    is the single-server chain with arrival probability p/K. Its truncation level doubles
    (sparse banded chain) until the mass at the top is below ``tol``; a load within 1e-9 of
    q_k counts as unstable (p/K = q_k can come out a rounding error below q_k).
    """
    total = 0.0
    lam = system.p / system.K
    for q, d in zip(system.q, system.d, strict=True):
        if lam >= q * (1 - 1e-9):
            return math.inf
        n = nmax
        while True:
            pi = _single_server_stationary(n, lam, q, d)
            if pi[-1] < tol:
                break
            if n >= 100_000:
                raise ConvergenceError(
                    f"RSA: server (d={arm.d_label(d)}, q={q:g}) at load {lam / q:.6f} needs more "
                    f"than {n} levels"
                )
            n *= 2
        total += float(pi @ arm.cost_values(n, q, d, system.cost, system.beta))
    return total


def _single_server_stationary(nmax: int, lam: float, q: float, d: float) -> np.ndarray:
    """Stationary distribution of one always-active server on {0..nmax} (sparse solve)."""
    bands = arm.departure_bands(nmax, q, d)
    n = np.arange(nmax + 1)
    rows, cols, vals = [], [], []
    for j in range(bands.shape[0]):
        ok = n >= j
        for arrive, prob in ((0, 1 - lam), (1, lam)):
            dest = np.minimum(n[ok] - j + arrive, nmax)  # arrival lost at the top
            rows.append(n[ok])
            cols.append(dest)
            vals.append(prob * bands[j, ok])
    P = sp.csr_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
        shape=(nmax + 1, nmax + 1),
    )
    A = (sp.eye(nmax + 1) - P).T.tolil()
    A[0, :] = 1.0
    b = np.zeros(nmax + 1)
    b[0] = 1.0
    return spla.spsolve(A.tocsc(), b)


@dataclass
class PolicyCosts:
    """Exact average costs of every policy on one truncated chain."""

    system: System
    B: int
    costs: dict[str, float]
    boundary_mass: dict[str, float]
    g_bounds: tuple[float, float]
    iterations: dict[str, int] = field(default_factory=dict)
    route: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    prio: dict[str, np.ndarray] = field(default_factory=dict, repr=False)

    def gap(self, policy: str) -> float:
        """Relative gap to the optimal policy, in %."""
        return 100.0 * (self.costs[policy] / self.costs["optimal"] - 1.0)


def compare_policies(
    system: System,
    B: int,
    policies: Sequence[str] = POLICIES,
    tol: float = TRUNCATION_TOL,
    check_truncation: bool = True,
    index_first: bool = False,
) -> PolicyCosts:
    """Exact average cost of each policy (and the optimum by RVI) on the chain truncated at B.

    A policy whose boundary mass exceeds ``tol`` means B is too small: ConfigError on ``B``,
    naming the first such policy in the order evaluated. ``index_first`` evaluates the index
    policies before the optimal one, so a too-small B is found without the RVI (the costs
    are the same either way). RSA is computed server by server without truncation
    (:func:`rsa_cost`; +∞ when p/K ≥ min q_k); the joint chain's RSA routing is cross-checked
    against it in the tests.
    """
    chain = JointChain(system, B)
    order = list(policies)
    if index_first:  # the index policies, then the optimal one, then RSA (last, as before)
        order = [x for x in order if x not in ("optimal", "rsa")] + [
            x for x in order if x in ("optimal", "rsa")
        ]
    found: dict[str, dict[str, Any]] = {}
    bounds = (math.nan, math.nan)
    for policy in order:
        entry: dict[str, Any] = {}
        if policy == "optimal":
            res = chain.rvi()
            route = res["route"]
            bounds = (res["g_low"], res["g_high"])
            entry["rvi_iterations"] = res["iterations"]
        elif policy == "rsa":
            # exact and untruncated (its tails are far heavier than the others')
            found[policy] = {"cost": rsa_cost(system), "mass": 0.0}
            continue
        else:
            # Whittle as the simulation routes it (indices past the float range in order)
            prio = (
                whittle_routing(system, chain.B)
                if policy == "whittle"
                else priorities(system, policy, chain.B)
            )
            entry["prio"] = prio
            route = chain.index_route(prio)
        ev = chain.evaluate(route)
        found[policy] = entry | {
            "cost": ev["cost"],
            "mass": ev["boundary_mass"],
            "iterations": ev["iterations"],
            "route": route,
        }
        if check_truncation and ev["boundary_mass"] >= tol:
            raise ConfigError(
                "B",
                f"buffer {B} too small: boundary mass {ev['boundary_mass']:.2e} under {policy} "
                f">= truncation tolerance {tol:g} ({system.label()}, p={system.p:g})",
            )
    # the tables in the order of ``policies``, whatever the order of evaluation
    costs = {x: found[x]["cost"] for x in policies}
    mass = {x: found[x]["mass"] for x in policies}
    iters: dict[str, int] = {}
    for x in policies:
        if "rvi_iterations" in found[x]:
            iters["optimal_rvi"] = found[x]["rvi_iterations"]
        if "iterations" in found[x]:
            iters[x] = found[x]["iterations"]
    routes = {x: found[x]["route"] for x in policies if "route" in found[x]}
    prios = {x: found[x]["prio"] for x in policies if "prio" in found[x]}
    return PolicyCosts(system, chain.B, costs, mass, bounds, iters, routes, prios)


def choose_buffer(
    system: System,
    start: int = 10,
    limit: int = 400,
    tol: float = TRUNCATION_TOL,
    policies: Sequence[str] = POLICIES,
) -> PolicyCosts:
    """Grow B (×1.5) from ``start`` until every stable policy's boundary mass is below ``tol``.

    While B can still grow, the index policies are evaluated first: a too-small B is then
    usually found before the RVI, the costliest step (the result at the final B is the same).
    """
    B = int_arg("B", start, 1)
    while True:
        grown = min(limit, math.ceil(B * 1.5))
        last = limit <= B or (grown + 1) ** system.K > MAX_STATES
        try:
            return compare_policies(system, B, policies, tol, index_first=not last)
        except ConfigError as err:
            if err.key != "B":
                raise
            if last:
                raise ConfigError(
                    "B",
                    f"no buffer up to {B} ({(B + 1) ** system.K} states; limits {limit} and "
                    f"{MAX_STATES} states) reaches truncation tolerance {tol:g}: {err}",
                ) from None
            B = grown


# ------------------------------------------------------------------------------ simulation
def simulate(
    system: System,
    policy: str,
    slots: int,
    warmup: int,
    seed: np.random.SeedSequence | int,
    batches: int = 20,
    costs: PolicyCosts | None = None,
    prio_nmax: int = 400,
) -> dict[str, Any]:
    """Simulate the slotted system under ``policy`` (no buffer), batch-means CI of the cost.

    ``warmup`` slots are a minimum warm-up; MSER-5 and the batching rule of
    :mod:`lbrepro.sim.runlength` choose the rest, and the run doubles while the batch means
    stay correlated. ``slots`` in the result is the number run, ``batches`` the number used.

    Index policies use their priority tables up to ``prio_nmax`` jobs; the optimal policy uses
    the RVI action table of ``costs`` inside its box and JSEW outside it (counted in
    ``outside_slots``; the box holds all but < 1e-6 of the stationary mass).
    """
    slots = int_arg("slots", slots, 2)
    warmup = int_arg("warmup", warmup, 0)
    batches = int_arg("batches", batches, 2)
    K = system.K
    d_int = np.array([min(d, 1 << 30) for d in system.d], dtype=np.int64)
    table = np.zeros(1, dtype=np.int64)
    B = 0
    if policy == "rsa":
        kind, prio = ROUTE_UNIFORM, np.zeros((K, 1))
    elif policy == "optimal":
        if costs is None or "optimal" not in costs.route:
            raise ConfigError("policy", "simulating the optimal policy needs its RVI table")
        kind = ROUTE_TABLE
        B = costs.B
        table = np.argmax(costs.route["optimal"], axis=0).astype(np.int64).ravel()
        prio = priorities(system, "jsew", prio_nmax)
    elif policy == "whittle":
        kind, prio = ROUTE_INDEX, whittle_routing(system, prio_nmax)
    elif policy in ("jsq", "jsew"):
        kind, prio = ROUTE_INDEX, priorities(system, policy, prio_nmax)
    else:
        raise ConfigError("policy", f"unknown policy {policy!r}; known: {', '.join(POLICIES)}")
    run = simulate_slotted(
        system.p,
        np.array(system.q),
        d_int,
        system.cost == "meanvar",
        system.beta,
        kind,
        prio,
        table,
        B,
        slots,
        warmup,
        seed,
        batches,
    )
    return {
        "cost": run.cost,
        "ci": run.cost_ci,
        "mean_jobs": run.mean_jobs,
        "mean_jobs_ci": run.mean_jobs_ci,
        "served": run.served,
        "served_ci": run.served_ci,
        "slots": run.slots,
        "batches": run.batches,
        "warmup_used": run.warmup_used,
        "converged": run.converged,
        "outside_slots": run.outside_slots,
    }


# ------------------------------------------------------------------------------ CLI
def _split(text: Any) -> list[str]:
    """A comma-separated list (or a sequence, or one value) as a list of strings."""
    if isinstance(text, str):
        return [t for t in text.split(",") if t.strip()]
    if isinstance(text, Sequence):
        return [str(t) for t in text]
    return [str(text)]


def solve_summary(
    p: float,
    q: str,
    d: str,
    cost: str = "linear",
    beta: float = 0.0,
    nmax: int = 20,
    B: int = 20,
) -> dict[str, Any]:
    """``lbrepro solve whittle``: indices of one server, or (K ≥ 2) every policy's exact cost.

    ``q`` and ``d`` are comma-separated lists (``--q 0.3,0.6 --d 1,inf``). One server: the
    Whittle indices W(0..nmax) (and the FCFS closed form when d = 1). Several: the indices
    of each server plus the exact average cost and gap of every policy, B grown from ``B``
    until the truncated mass is below 1e-6.
    """
    qs, ds = _split(q), _split(d)
    if len(qs) == 1 and len(ds) == 1:
        return arm.solve(p, qs[0], ds[0], cost, beta, nmax)
    system = System.make(p, qs, ds, cost, beta)
    res = choose_buffer(system, start=B)
    return {
        "model": "whittle",
        "params": {
            "p": system.p,
            "q": list(system.q),
            "d": [arm.d_label(v) for v in system.d],
            "cost": system.cost,
            "beta": system.beta,
            "B": res.B,
        },
        "method": "mdp",
        "index": [
            [float(v) if math.isfinite(v) else None for v in row]
            for row in priorities(system, "whittle", nmax)
        ],
        "policy_cost": {k: (v if math.isfinite(v) else None) for k, v in res.costs.items()},
        "gap_pct": {k: (res.gap(k) if math.isfinite(res.costs[k]) else None) for k in res.costs},
        "boundary_mass": res.boundary_mass,
        "optimal_bounds": list(res.g_bounds),
    }


def simulate_summary(
    p: float,
    q: str,
    d: str,
    *,
    horizon: float,
    policy: str = "whittle",
    cost: str = "linear",
    beta: float = 0.0,
    warmup: float | None = None,
    seed: int = 1,
    batches: int = 20,
    B: int = 20,
) -> dict[str, Any]:
    """``lbrepro simulate whittle``: the slotted K-server system under one policy.

    ``horizon`` slots are measured after ``warmup`` slots (default: a hundredth of the
    horizon — the slotted chain forgets its empty start within a few hundred slots and the
    warm-up is only a minimum, MSER-5 discards more when it finds a longer transient; the
    pipeline's runs use 0.25–0.5%). The optimal policy first needs its RVI table (B grown from
    ``B`` as in :func:`solve_summary`); the exact cost is returned alongside.
    """
    import time

    system = System.make(p, _split(q), _split(d), cost, beta)
    horizon, warmup, batches = run_length(
        horizon, 0.01 * float_arg("horizon", horizon) if warmup is None else warmup, batches
    )
    slots = int(horizon)
    warm = int(warmup)
    costs = None
    exact = None
    if policy == "optimal":
        costs = choose_buffer(system, start=B, policies=["optimal"])
        exact = costs.costs["optimal"]
    t = time.perf_counter()
    out = simulate(system, policy, slots, warm, seed, batches, costs=costs, prio_nmax=200)
    wall = time.perf_counter() - t
    # Every slot run: the measured ones and the warm-up MSER-5 chose (at least ``warm``).
    events = out["slots"] + out["warmup_used"]
    return {
        "model": "whittle",
        "params": {
            "p": system.p,
            "q": list(system.q),
            "d": [arm.d_label(v) for v in system.d],
            "cost": system.cost,
            "beta": system.beta,
            "policy": policy,
        },
        "mean_cost": out["cost"],
        "mean_jobs": out["mean_jobs"],
        "served": out["served"],
        "ci": {
            "mean_cost": list(out["ci"]),
            "mean_jobs": list(out["mean_jobs_ci"]),
            "served": list(out["served_ci"]),
        },
        "exact_cost": exact,
        "N": system.K,
        "seed": seed,
        "slots": out["slots"],
        "warmup_used": out["warmup_used"],
        "batches": out["batches"],
        "converged": out["converged"],
        "events": events,
        "events_per_second": events / wall if wall > 0 else None,
    }


def conservation(result: Mapping[str, Any]) -> Conserved | None:
    """Served capacity Σ_k q_k·1{n_k > 0} = p: a busy server's expected departures per slot
    are q_k, so in equilibrium departures (the served capacity) equal arrivals (p), whatever
    the policy. Read from ``lbrepro simulate whittle``'s JSON (``served``, ``ci.served``). It
    moves in steps of the smallest capacity min q_k per slot (one server idle one slot more)."""
    try:
        p = float(result["params"]["p"])
        low, high = result["ci"]["served"]
        step = min(float(q) for q in result["params"]["q"])
        what = "served capacity Σ q_k·1{n_k>0} = p"
        return Conserved(what, float(result["served"]), float(low), float(high), p, step)
    except (KeyError, TypeError, IndexError, ValueError):
        return None


MODEL = Model(
    name="whittle",
    help="slotted K-server LPS-d system of Ayesta et al. 2018 (Whittle, JSQ, JSEW, RSA, optimal)",
    params=(
        Param("p", "real", "arrival probability per slot"),
        Param("q", "text", "service capacities, comma-separated (one per server)"),
        Param("d", "text", "LPS levels, comma-separated; inf for processor sharing"),
        Param("cost", "text", "linear or meanvar"),
        Param("beta", "real", "mean–variance weight β"),
        Param(
            "B",
            "integer",
            "starting buffer per server (grown to 1e-6 mass)",
            minimum=2,
            maximum="buffer",
        ),
        Param(
            "nmax",
            "integer",
            "largest state whose index is printed",
            minimum=1,
            maximum="nmax",
            commands=("solve",),
        ),
        Param("policy", "text", "whittle, jsq, jsew, rsa or optimal", commands=("simulate",)),
        Param(
            "horizon",
            "real",
            "simulated slots (after the warm-up)",
            minimum=0,
            exclusive_minimum=True,
            commands=("simulate",),
        ),
        Param(
            "warmup",
            "real",
            "slots discarded first (default: a hundredth of the horizon)",
            minimum=0,
            commands=("simulate",),
        ),
        *(p for p in RUN_PARAMS if p.name in ("seed", "batches")),
    ),
    solve=solve_summary,
    simulate=simulate_summary,
    load="p",
    conservation=conservation,
)
