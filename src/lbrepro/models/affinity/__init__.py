"""Job allocation with affinity relations (Cardinaels et al. 2019, docs/models.md §D).

N servers; a job samples d1 *primary* servers. Served at a primary server it is a type-I job
(rate μ1), anywhere else a type-II job (rate μ2 < μ1). Assignment [reconstruction]: an idle
primary server takes it as type I; else any idle server as type II; else the primary server
with the fewest jobs as type I. Type I has preemptive priority over the (at most one) type-II
job of a server. State: x[i, j] = fraction of servers with i type-I and j ∈ {0, 1} type-II
jobs; u = x[0, 0] is the idle fraction.

Contents (one module each; this package re-exports their public API):

* ``coupling``: step functions f_ref, f_aff and Table 1, in exact integer / rational arithmetic;
* ``fluid``: the fluid limit (with the u = 0 face and its immediate switch), a robust integrator;
* ``fixed_points``: the no-queueing roots of F(u) = 0 and the queueing fixed point, their
  stability, d1* and the bifurcation points in d1 and λ;
* ``jacobians``: the Jacobians of the fluid field that decide that stability;
* ``performance``: the formulas of Figs. 6–7 (CM(d1), JSQ(d1), RA).

The parameter checks live with the simulator (``lbrepro.sim.affinity``), the lowest layer that
needs them.

Key fact used throughout: F(u) = u + (λ/μ1)(1 − (1−u)^d) + (λ/μ2)(1−u)^d − 1 is convex on
[0, 1] (F'' = λ(1/μ2 − 1/μ1) d(d−1)(1−u)^{d−2} ≥ 0), so it has at most two roots, separated
by its minimiser u* = 1 − (μ1μ2 / (λ d (μ1 − μ2)))^{1/(d−1)}; and the 2×2 Jacobian of the
fluid limit on the face {x00 + x10 + x01 = 1} has trace −μ1 − μ2 < 0 and determinant
μ1μ2 F'(u), so a root is stable iff F'(u) > 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lbrepro.core.errors import ConfigError, LbreproError
from lbrepro.models.affinity.coupling import f_aff, f_ref, step_dominates, table1_d
from lbrepro.models.affinity.fixed_points import (
    FixedPoint,
    dstar,
    dstar_continuous,
    face_jacobian_2x2,
    fixed_points,
    lambda_critical,
    nearest_fixed_point,
    no_queueing_balance,
    no_queueing_roots,
    queueing_fixed_point,
)
from lbrepro.models.affinity.fluid import (
    K_DEFAULT,
    fluid_field,
    fluid_final,
    fluid_trajectory,
    pad_state,
    start_state,
)
from lbrepro.models.affinity.jacobians import face_jacobian, interior_jacobian
from lbrepro.models.affinity.performance import performance
from lbrepro.models.spec import RUN_PARAMS, Conserved, Model, Param, Summary
from lbrepro.sim.affinity import check_params, check_state, simulate_affinity

__all__ = [
    "K_DEFAULT",
    "MODEL",
    "FixedPoint",
    "check_params",
    "check_state",
    "dstar",
    "dstar_continuous",
    "f_aff",
    "f_ref",
    "face_jacobian",
    "face_jacobian_2x2",
    "fixed_points",
    "fluid_field",
    "fluid_final",
    "fluid_trajectory",
    "interior_jacobian",
    "lambda_critical",
    "nearest_fixed_point",
    "no_queueing_balance",
    "no_queueing_roots",
    "pad_state",
    "performance",
    "queueing_fixed_point",
    "simulate",
    "solve",
    "start_state",
    "step_dominates",
    "table1_d",
]


def solve(*, lam: float, d1: int, mu2: float = 0.5, mu1: float = 1.0) -> Summary:
    """All fixed points, d1* and the performance measures (``lbrepro solve affinity``)."""
    pts = fixed_points(lam, mu2, mu1, d1)
    return Summary(
        {
            "dstar": dstar(lam, mu2, mu1),
            "fixed_points": [
                {
                    "kind": p.kind,
                    "u": p.u,
                    "stable": p.stable,
                    "x_i0": p.x[:6, 0].tolist(),
                    "x_i1": p.x[:6, 1].tolist(),
                }
                for p in pts
            ],
            "performance": performance(lam, mu2, mu1, d1),
        }
    )


def simulate(
    *,
    lam: float,
    d1: int,
    N: int,
    horizon: float,
    mu2: float = 0.5,
    mu1: float = 1.0,
    warmup: float | None = None,
    seed: int = 1,
    batches: int = 20,
    replace: bool = True,
    progress: bool = False,
    start: str = "fixed_point",
) -> Summary:
    """One simulation as plain data (``lbrepro simulate affinity``).

    ``start``: "empty", "type2" (one type-II job everywhere) or "fixed_point" (the queueing
    fixed point for λ > μ2, else the stable no-queueing point, rounded to N servers). The
    warm-up defaults to a tenth of the horizon. The d1 primary servers are always distinct, so
    ``replace=False`` (``--no-replace``) is refused as meaningless; ``progress`` is accepted
    for the command line's uniformity and ignored (the kernel shows no progress bar). The
    result's ``params`` adds N to the command line's echo: the size of the simulated system.
    """
    if warmup is None:
        warmup = 0.1 * horizon
    elif warmup >= horizon:
        raise ConfigError("warmup", f"must be shorter than --horizon = {horizon:g}")
    if not replace:
        raise LbreproError("replace: the d1 primary servers are always distinct already")
    lam, mu2, mu1, d1, N = check_params(lam, mu2, mu1, d1, N)
    init: Any = start
    if start == "fixed_point":
        xq = queueing_fixed_point(lam, mu2, mu1, d1)
        stable_nq = [p.x for p in no_queueing_roots(lam, mu2, mu1, d1) if p.stable]
        # At λ = μ2 exactly (the bifurcation) with d1 below d*, neither branch has a point of
        # its own: both end in one type-II job at every server (x01 = 1, ρ' = 0), the start
        # "type2" (was: an IndexError traceback).
        init = xq if xq is not None else stable_nq[0] if stable_nq else "type2"
    elif start not in ("empty", "type2"):
        raise ConfigError("start", f"must be fixed_point, empty or type2, got {start!r}")
    r = simulate_affinity(
        lam, mu2, mu1, d1, N, horizon=horizon, warmup=warmup, batches=batches, start=init, seed=seed
    )
    K = 6
    return Summary(
        {
            "params": {"lam": lam, "mu1": mu1, "mu2": mu2, "d1": d1, "N": N, "start": start},
            "x_i0": r.x[:K, 0].tolist(),
            "x_i1": r.x[:K, 1].tolist(),
            "ci": {
                "x_i0": [r.x_ci_low[:K, 0].tolist(), r.x_ci_high[:K, 0].tolist()],
                "x_i1": [r.x_ci_low[:K, 1].tolist(), r.x_ci_high[:K, 1].tolist()],
            },
            "switch_fraction": float(
                r.arrivals_type2.sum() / max(1, r.arrivals_type1.sum() + r.arrivals_type2.sum())
            ),
            "events": r.events,
            "elapsed": r.elapsed,
            "events_per_second": r.events_per_second,
            "horizon": horizon,
            "warmup": warmup,
            "batches": batches,
            "seed": seed,
        }
    )


def conservation(result: Mapping[str, Any]) -> Conserved | None:
    """Throughput = λ: a server serves type I at μ1 while it holds one (i ≥ 1), else type II
    at μ2 (x[0, 1]), so μ1·(1 − x00 − x01) + μ2·x01 = λ in a stationary run (no arrival is
    lost). The interval adds the two fractions' half-widths (worst case: correlated)."""
    try:
        p = result["params"]
        lam, mu1, mu2 = float(p["lam"]), float(p["mu1"]), float(p["mu2"])
        x00, x01 = result["x_i0"][0], result["x_i1"][0]
        (lo00, hi00), (lo01, hi01) = (
            [side[0] for side in result["ci"][k]] for k in ("x_i0", "x_i1")
        )
    except (KeyError, TypeError, IndexError, ValueError):
        return None
    mean = mu1 * (1.0 - x00 - x01) + mu2 * x01
    half = mu1 * (hi00 - lo00) / 2 + (mu1 - mu2) * (hi01 - lo01) / 2
    return Conserved(
        "throughput μ1·(1 − x00 − x01) + μ2·x01 = λ", mean, mean - half, mean + half, lam
    )


MODEL = Model(
    name="affinity",
    help="affinity relations (Cardinaels et al. 2019): d1 primary servers per job",
    params=(
        Param("lam", "real", "arrival rate per server (< mu1)"),
        Param("mu1", "real", "type-I service rate"),
        Param("mu2", "real", "type-II service rate (< mu1)"),
        Param("d1", "integer", "primary servers per type-I job", minimum=1, maximum="servers"),
        *RUN_PARAMS,
        Param(
            "start",
            "choice",
            "initial state: the fluid fixed point rounded to N servers, empty, or one type-II "
            "job at every server",
            choices=("fixed_point", "empty", "type2"),
            commands=("simulate",),
        ),
    ),
    solve=solve,
    simulate=simulate,
    conservation=conservation,
)
