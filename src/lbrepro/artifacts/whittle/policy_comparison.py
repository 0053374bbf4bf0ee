"""Shared by whittle-compare and whittle-gaps: the scenario points, each policy's exact (and
simulated) cost per point, and the paper's claims on the dispatching policies.

A scenario is a list of (d, q) servers and a p grid; a point is one (scenario, cost, p). Costs
are judged relative to the exact optimal cost (relative value iteration on the truncated
joint chain).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from lbrepro.artifacts.registry import Rows
from lbrepro.artifacts.whittle.reconstructions import (
    RECON_COSTS,
    RECON_EVENTS,
    RECON_JSEW,
    RECON_RELAX,
    RECON_TIES,
    RECON_TRUNC,
)
from lbrepro.core.claims import Claim, make_claim
from lbrepro.core.errors import ConfigError
from lbrepro.core.ids import add_point, num
from lbrepro.core.io import select
from lbrepro.core.rows import estimate_row
from lbrepro.core.stats import Estimate
from lbrepro.core.verdicts import (
    AGREEMENT,
    NOT_REPRODUCED,
    EmptyComparisonError,
    Verdict,
    better,
    estimate,
)
from lbrepro.models import whittle as model
from lbrepro.models import whittle_policies as pol

#: The simulation check's control: the exact cost at arrival probability CONTROL_LOAD·p.
CONTROL_LOAD = 0.9
#: "Outperforms": a cost lower by more than the default agreement margin (2% of the optimal
#: cost, in points of the relative costs below); a smaller difference a reader calls agreement.
OUTPERFORM = 100 * AGREEMENT
#: "Never worse" (non-inferiority): not above the rival's cost by more than half of that.
NON_INFERIOR = OUTPERFORM / 2
RIVALS = ("jsq", "jsew", "rsa")
#: "Close to optimal" (ours): within this % of the optimal cost (config near_optimal_pct).
NEAR_OPTIMAL_PCT = 5.0
#: Its near miss: the rival whose largest gap lies above the bound, within this many times it;
#: else a hypothetical policy this many points above the bound.
RIVAL_WINDOW = 2.0
NEAR_MISS_POINTS = 3.0
#: Relative costs per point: {(scenario, cost, p): {policy: cost in % of the exact optimal}}.
CostTable = dict[tuple[str, str, float], dict[str, Estimate]]


def system_of(sc: Mapping[str, Any], p: float, cost: str, beta: float) -> pol.System:
    """The validated K-server system of a scenario at arrival probability p and one cost."""
    return pol.System.make(p, sc["q"], sc["d"], cost, beta)


def scenarios(cfg: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """The scenarios by name (config: a list of {name, d, q, p, B}).

    A list, not a mapping: the quick profile must be able to *replace* the scenarios, and
    config files merge mappings key by key but replace lists whole.
    """
    named: dict[str, Mapping[str, Any]] = {}
    for i, sc in enumerate(cfg["scenarios"]):
        if sc["name"] in named:
            raise ConfigError(f"scenarios[{i}].name", f"duplicate scenario name {sc['name']!r}")
        named[sc["name"]] = sc
    return named


def validate_scenarios(cfg: Mapping[str, Any]) -> None:
    """Unique names, one d per q, valid p, q, d, p < Σq and β ≥ 0, errors named by the key
    inside the section (``scenarios.A.p[0]``)."""
    names = [sc["name"] for sc in cfg["scenarios"]]
    for i, name in enumerate(names):
        if names.index(name) != i:
            raise ConfigError(f"scenarios[{i}].name", f"{name!r} appears twice")
    for name, sc in scenarios(cfg).items():
        key = f"scenarios.{name}"
        if len(sc["q"]) != len(sc["d"]):
            raise ConfigError(f"{key}.d", f"{len(sc['d'])} values of d for {len(sc['q'])} servers")
        for i, q in enumerate(sc["q"]):
            model.check_q(q, f"{key}.q[{i}]")
        for i, d in enumerate(sc["d"]):
            model.parse_d(d, f"{key}.d[{i}]")
        for i, p in enumerate(sc["p"]):
            model.check_p(p, f"{key}.p[{i}]")
            if p >= sum(sc["q"]):
                raise ConfigError(
                    f"{key}.p[{i}]", f"p={p} >= Σq={sum(sc['q']):g}: the system is unstable"
                )
    if cfg["beta"] < 0:
        raise ConfigError("beta", f"must be >= 0, got {cfg['beta']}")


def policy_points(cfg: Mapping[str, Any], simulate: bool) -> dict[str, dict[str, Any]]:
    """One point per (scenario, cost, p); with ``simulate`` the run lengths join the params."""
    out = {}
    for name, sc in scenarios(cfg).items():
        for cost in ("linear", "meanvar"):
            for p in sc["p"]:
                params = {
                    "scenario": name,
                    "q": list(sc["q"]),
                    "d": [str(d) for d in sc["d"]],
                    "p": p,
                    "cost": cost,
                    "beta": cfg["beta"] if cost == "meanvar" else 0.0,
                    "B": sc.get("B", 20),
                }
                if simulate:
                    params |= {k: cfg[k] for k in ("slots", "warmup", "batches")}
                add_point(out, f"{name}-{cost}-p{num(p)}", params, f"scenarios.{name}.p")
    return out


def compute_policy_rows(
    params: dict[str, Any], seed: np.random.SeedSequence, simulate: bool
) -> Rows:
    """Exact cost and gap of every policy (B grown to the truncation tolerance), the optimal
    cost's RVI bounds and, with ``simulate``, the control costs at CONTROL_LOAD·p and each
    policy's simulated cost with its CI."""
    system = system_of(params, params["p"], params["cost"], params["beta"])
    res = pol.choose_buffer(system, start=params["B"])
    base = {
        "scenario": params["scenario"],
        "K": system.K,
        "p": params["p"],
        "cost": params["cost"],
        "beta": params["beta"],
        "B": res.B,
    }
    rows: Rows = []
    for policy in pol.POLICIES:
        c = res.costs[policy]
        gap = res.gap(policy) if math.isfinite(c) else math.inf
        info = base | {
            "policy": policy,
            "boundary_mass": res.boundary_mass[policy],
            "stable": math.isfinite(c),
        }
        rows.append(info | {"method": "mdp", "quantity": "cost", "value": c})
        rows.append(info | {"method": "mdp", "quantity": "gap_pct", "value": gap})
    rows.append(base | {"method": "mdp", "quantity": "g_low", "value": res.g_bounds[0]})
    rows.append(base | {"method": "mdp", "quantity": "g_high", "value": res.g_bounds[1]})
    if simulate:
        # control of the simulation check: each policy's exact cost at a neighbouring load
        # (the same routing table, arrival probability CONTROL_LOAD·p) must be rejected
        p_ctrl = CONTROL_LOAD * params["p"]
        sys_ctrl = system_of(params, p_ctrl, params["cost"], params["beta"])
        chain = pol.JointChain(sys_ctrl, res.B)
        for policy in pol.POLICIES:
            if not math.isfinite(res.costs[policy]):
                continue
            if policy == "rsa":
                c_ctrl = pol.rsa_cost(sys_ctrl)
            else:
                c_ctrl = chain.evaluate(res.route[policy])["cost"]
            rows.append(
                base
                | {
                    "policy": policy,
                    "method": "mdp",
                    "quantity": "cost_control",
                    "value": c_ctrl,
                    "p_control": p_ctrl,
                }
            )
        for i, policy in enumerate(pol.POLICIES):
            if not math.isfinite(res.costs[policy]):
                continue
            child = np.random.SeedSequence(seed.entropy, spawn_key=(*seed.spawn_key, i))
            sim = pol.simulate(
                system,
                policy,
                params["slots"],
                params["warmup"],
                child,
                params["batches"],
                costs=res,
                prio_nmax=max(2 * res.B, 60),
            )
            rows.append(
                base
                | {
                    "policy": policy,
                    "method": "sim",
                    "quantity": "cost",
                    **estimate_row(
                        Estimate.from_interval(
                            sim["cost"],
                            *sim["ci"],
                            batches=sim["batches"],
                            N=system.K,
                            seed=seed.entropy,
                            converged=sim["converged"],
                        )
                    ),
                    "slots": sim["slots"],
                    "outside_slots": sim["outside_slots"],
                }
            )
    return rows


def table_policies(rows: Rows) -> list[str]:
    """The policies whose exact costs the table holds, in the order compute wrote them (the
    optimal policy first)."""
    return list(
        dict.fromkeys(str(r["policy"]) for r in select(rows, method="mdp", quantity="cost"))
    )


def heuristics(rows: Rows) -> list[str]:
    """The table's dispatching heuristics: every policy but the optimal one."""
    return [x for x in table_policies(rows) if x != "optimal"]


def gap_pct(rows: Rows, scenario: str, cost: str, policy: str, p: float) -> float:
    """The exact gap to optimal (%) of one policy at one point (+∞ where it is unstable)."""
    r = [
        x
        for x in select(rows, method="mdp", quantity="gap_pct", scenario=scenario, cost=cost, p=p)
        if x["policy"] == policy
    ]
    v = r[0]["value"]
    return math.inf if v is None else float(v)


def exact_value(
    rows: Rows, quantity: str, scenario: str, cost: str, p: float, policy: str
) -> float:
    """One exact ``quantity`` (cost or cost_control) of a policy at a point (+∞ if unstable)."""
    sel = [
        x
        for x in select(rows, method="mdp", quantity=quantity, scenario=scenario, cost=cost, p=p)
        if x["policy"] == policy
    ]
    if not sel:
        raise EmptyComparisonError(f"no exact {quantity} of {policy} at {scenario}/{cost}/p={p:g}")
    v = sel[0]["value"]
    return math.inf if v is None else float(v)


def scaled(e: Estimate, by: float) -> Estimate:
    """The estimate divided by a positive constant (a cost relative to the optimal cost)."""
    return Estimate(
        e.mean / by, e.low / by, e.high / by, e.half_width / by, e.batches, e.N, e.seed, e.converged
    )


def shifted(e: Estimate, by: float) -> Estimate:
    """The estimate plus a constant: a hypothetical near-miss policy's relative cost."""
    return Estimate(
        e.mean + by, e.low + by, e.high + by, e.half_width, e.batches, e.N, e.seed, e.converged
    )


def gap_of(a: Estimate, b: Estimate) -> Estimate:
    """b − a of two independent estimates, half-widths in quadrature."""
    diff = float(b.mean) - float(a.mean)
    half = math.hypot(float(a.half_width), float(b.half_width))
    batches = min((x for x in (a.batches, b.batches) if x), default=0)
    return Estimate(
        diff, diff - half, diff + half, half, batches, None, None, a.converged and b.converged
    )


def relative_costs(rows: Rows, cfg: Mapping[str, Any], method: str) -> CostTable:
    """{(scenario, cost, p): {policy: cost in % of the exact optimal cost, an Estimate}}.

    ``mdp``: exact costs (zero-width intervals; +∞ where a policy is unstable); ``sim``: the
    simulated costs with their CIs, relative to the exact optimal cost. In % (the optimum is
    100), so gaps and margins read in points of the optimal cost.
    """
    out: dict[tuple[str, str, float], dict[str, Estimate]] = {}
    policies = table_policies(rows)
    for name, sc in scenarios(cfg).items():
        for cost in ("linear", "meanvar"):
            for p in sc["p"]:
                opt = exact_value(rows, "cost", name, cost, p, "optimal")
                point: dict[str, Estimate] = {}
                for policy in policies:
                    if method == "mdp":
                        c = exact_value(rows, "cost", name, cost, p, policy)
                        point[policy] = Estimate.exact(100 * c / opt)
                        continue
                    sims = [
                        r
                        for r in select(
                            rows, method="sim", quantity="cost", scenario=name, cost=cost, p=p
                        )
                        if r["policy"] == policy
                    ]
                    if sims:
                        point[policy] = scaled(estimate(sims[0]), opt / 100)
                out[(name, cost, p)] = point
    if not out:
        raise EmptyComparisonError("no (scenario, cost, p) points")
    return out


def point_label(key: tuple[str, str, float]) -> str:
    """scenario/cost/p=…, how a point is named in verdict details."""
    return f"{key[0]}/{key[1]}/p={key[2]:g}"


def finite_pairs(
    table: CostTable, a: str, b: str
) -> tuple[list[Estimate], list[Estimate], list[str]]:
    """Points where both policies have a finite relative cost: (A, B, labels)."""
    keys = [
        k
        for k, v in table.items()
        if a in v and b in v and math.isfinite(v[a].mean) and math.isfinite(v[b].mean)
    ]
    return [table[k][a] for k in keys], [table[k][b] for k in keys], [point_label(k) for k in keys]


def judge_costs(a: list[Estimate], b: list[Estimate], **kw: Any) -> Verdict:
    """:func:`better` on relative costs (in % of the optimal cost), its wording in points."""
    v = better(a, b, **kw)
    quantifier = kw.get("quantifier", "all")
    delta = float(np.max(kw["min_effect"]))
    threshold = f"> {delta:g}" if kw.get("strict", True) else f"> −{delta:g}"
    return dataclasses.replace(
        v,
        expected=f"(B − A) {threshold} points of the optimal cost at "
        f"{'some' if quantifier == 'any' else 'every'} point",
    )


def near_optimal_verdict(
    table: CostTable, policy: str, tol_pct: float, offset: float = 0.0
) -> Verdict:
    """policy's cost (+ ``offset``) not significantly above (1 + tol)·optimal at every point;
    an unstable policy (infinite cost) is not reproduced."""
    keys = [k for k, v in table.items() if policy in v]
    if not keys:
        raise EmptyComparisonError(f"no costs of {policy}")
    finite = [k for k in keys if math.isfinite(table[k][policy].mean)]
    unstable = [point_label(k) for k in keys if k not in finite]
    if unstable:
        return Verdict(
            NOT_REPRODUCED,
            float(len(unstable)),
            f"gap ≤ {tol_pct:g}% at every point",
            "exact: an unstable policy has an infinite gap",
            f"unstable (infinite gap) at {', '.join(unstable)}",
        )
    bound = Estimate.exact(100 + tol_pct)
    costs = [shifted(table[k][policy], offset) for k in finite]
    v = better(
        costs,
        [bound] * len(finite),
        min_effect=0.0,
        quantifier="all",
        strict=False,
        labels=[point_label(k) for k in finite],
    )
    worst = max(range(len(finite)), key=lambda i: costs[i].mean)
    gap = float(costs[worst].mean) - 100
    return dataclasses.replace(
        v,
        expected=f"(1 + {tol_pct:g}%)·optimal − cost > 0 at every point (points of the "
        "optimal cost)",
        margin=tol_pct,
        details=f"{v.details}; largest gap {gap:.3g}% at {point_label(finite[worst])}",
    )


def largest_gap(table: CostTable, policy: str) -> float:
    """The largest gap to optimal (%) of a policy over the points (+∞ if unstable anywhere)."""
    return max(float(v[policy].mean) - 100 for v in table.values() if policy in v)


def near_optimal_control(table: CostTable, tol_pct: float) -> tuple[str, Verdict, str]:
    """The near miss of "within tol of optimal": the rival whose largest gap lies closest above
    the bound if it is within RIVAL_WINDOW × tol of it, else a hypothetical policy
    NEAR_MISS_POINTS above the bound (Whittle's costs shifted so that its largest gap is
    tol + NEAR_MISS_POINTS)."""
    gaps = {r: largest_gap(table, r) for r in RIVALS}
    above = {r: g for r, g in gaps.items() if tol_pct < g <= RIVAL_WINDOW * tol_pct}
    if above:
        rival = min(above, key=above.get)
        return (
            f"{rival.upper()}, the rival whose largest gap lies nearest above the bound",
            near_optimal_verdict(table, rival, tol_pct),
            f"largest gap {above[rival]:.3g}% vs the bound {tol_pct:g}%",
        )
    offset = tol_pct + NEAR_MISS_POINTS - largest_gap(table, "whittle")
    return (
        f"a hypothetical policy {NEAR_MISS_POINTS:g} points above the bound: Whittle's costs "
        f"+ {offset:.3g}% of the optimum at every point (no rival's largest gap lies between "
        f"the bound and {RIVAL_WINDOW:g}× it: "
        + ", ".join(f"{r.upper()} {g:.3g}%" for r, g in gaps.items())
        + ")",
        near_optimal_verdict(table, "whittle", tol_pct, offset),
        f"largest gap {tol_pct + NEAR_MISS_POINTS:g}% vs the bound {tol_pct:g}%",
    )


def policy_claims(rows: Rows, cfg: Mapping[str, Any], method: str) -> list[Claim]:
    """The paper's claims on the dispatching policies, judged on exact or simulated costs."""
    table = relative_costs(rows, cfg, method)
    tol = cfg.get("near_optimal_pct", NEAR_OPTIMAL_PCT)
    how = "exact costs" if method == "mdp" else "simulated costs (95% CIs)"
    runs = sorted({str(r["point"]) for r in rows if r.get("point")}) if method == "sim" else []
    what, ctrl, distance = near_optimal_control(table, tol)
    claims = [
        make_claim(
            "Whittle's index policy is close to optimal over a wide range of parameters — "
            f"our yardstick: its average cost is not significantly above (1 + {tol:g}%) × the "
            f"optimal cost at every (scenario, cost, p) of the grid ({how})",
            near_optimal_verdict(table, "whittle", tol),
            control=(what, ctrl),
            distance=distance,
            runs=runs,
        )
    ]
    for rival in RIVALS:
        a, b, labels = finite_pairs(table, "whittle", rival)
        # The near miss: the closest rival the claim excludes — the rival's cost lowered,
        # only where Whittle is ahead, to half the minimum effect above Whittle's (a rival
        # Whittle never beats by the minimum effect). Not the negation "no gap anywhere",
        # which no run satisfying the claim can pass.
        lift = [
            min(0.0, float(x.mean) + OUTPERFORM / 2 - float(y.mean))
            for x, y in zip(a, b, strict=True)
        ]
        near = [shifted(y, d) for y, d in zip(b, lift, strict=True)]
        claims.append(
            make_claim(
                f"Whittle's index policy can outperform {rival.upper()}: its cost is lower by "
                f"more than {OUTPERFORM:g}% of the optimal cost at some (scenario, cost, p) "
                f"({how})",
                judge_costs(a, b, quantifier="any", min_effect=OUTPERFORM, labels=labels),
                control=(
                    f"a near miss: {rival.upper()} improved where Whittle is ahead, to "
                    f"{OUTPERFORM / 2:g} points above Whittle's cost (a rival Whittle never "
                    "outperforms by the minimum effect), same test",
                    judge_costs(a, near, quantifier="any", min_effect=OUTPERFORM, labels=labels),
                ),
                distance=f"the rival's cost lowered by at most {-min(lift, default=0.0):.3g} "
                f"points (half a minimum effect, {OUTPERFORM / 2:g}, short of the claim)",
                details=f"costs in % of the exact optimum; minimum effect {OUTPERFORM:g} points "
                "(the default agreement margin)",
                runs=runs,
            )
        )
    return claims


def summary_gaps(rows: Rows) -> Rows:
    """Mean / max gap (%) of each heuristic and the buffers used, per (scenario, cost)."""
    out: Rows = []
    keys = sorted(
        {(r["scenario"], r["cost"]) for r in select(rows, method="mdp", quantity="gap_pct")}
    )
    for name, cost in keys:
        sel = select(rows, method="mdp", quantity="gap_pct", scenario=name, cost=cost)
        row: dict[str, Any] = {"scenario": name, "cost": cost, "K": sel[0]["K"]}
        for policy in heuristics(rows):
            g = [r["value"] for r in sel if r["policy"] == policy]
            g = [math.inf if v is None else float(v) for v in g]
            fin = [v for v in g if math.isfinite(v)]
            row[f"{policy} mean/max gap %"] = (
                f"{np.mean(fin):.3g} / {max(fin):.3g}" if fin else "—"
            ) + (f" ({len(g) - len(fin)} unstable)" if len(fin) < len(g) else "")
        row["B"] = "/".join(str(b) for b in sorted({r["B"] for r in sel}))
        out.append(row)
    return out


RECON_MARGINS = (
    "Margins [lbrepro; the paper gives no numbers]: 'close to optimal' = within "
    f"near_optimal_pct (default {NEAR_OPTIMAL_PCT:g}%) of the optimal cost at every point (near "
    "miss: the rival whose largest gap lies nearest above that bound if within "
    f"{RIVAL_WINDOW:g}× it, else a hypothetical policy {NEAR_MISS_POINTS:g} points above it); "
    f"'outperforms' = cheaper by more than {OUTPERFORM:g}% of the optimal cost somewhere (the "
    f"default agreement margin; near miss: the rival agreeing with Whittle within "
    f"{OUTPERFORM:g}% everywhere); 'never worse' (ours) = non-inferiority, not dearer than the "
    f"rival by more than {NON_INFERIOR:g}% anywhere (near miss: a policy {2 * NON_INFERIOR:g}% "
    "dearer than the rival). Simulated against exact costs: agreement within "
    f"{AGREEMENT:.0%} (control: the exact costs at the neighbouring load {CONTROL_LOAD:g}·p)."
)

POLICY_RECONSTRUCTIONS = (
    RECON_EVENTS,
    RECON_COSTS,
    RECON_TIES,
    RECON_JSEW,
    RECON_TRUNC,
    RECON_RELAX,
    RECON_MARGINS,
)
