"""``supermarket-tail``: doubly exponential tails of the supermarket model (docs/models.md §S).

u_k against k for several d and ρ — closed form, numerical mean-field fixed point and
simulation at N = 1000 — and log(−log u_k) against k, whose slope tends to log d (doubly
exponential decay).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from lbrepro.artifacts.registry import Artifact, Rows
from lbrepro.artifacts.supermarket.simulation import (
    check_stable,
    mean_jobs_row,
    simulate_point,
    simulation_cost,
)
from lbrepro.core.claims import Claim, make_claim
from lbrepro.core.errors import ConfigError
from lbrepro.core.ids import add_point, num
from lbrepro.core.io import select
from lbrepro.core.stats import Estimate
from lbrepro.core.tail_verdicts import (
    geometric_control,
    neighbour_load,
    resolution,
    tail_levels,
    tail_shape,
)
from lbrepro.core.verdicts import Verdict, estimate, fit_slope, within
from lbrepro.models import supermarket as model
from lbrepro.plotting.style import METHOD_STYLE, color, new_figure

#: Levels compared with a reference: u_1 .. u_KMAX.
KMAX = 4


def validate(cfg: Mapping[str, Any]) -> None:
    """Refuse unstable loads and a warm-up as long as the horizon, naming the key."""
    for i, rho in enumerate(cfg["rho"]):
        check_stable(f"supermarket-tail.rho[{i}]", rho)
        for d in cfg["d"]:  # the mean field of every (ρ, d) must fit in memory
            model.check_mean_field_memory(f"supermarket-tail.rho[{i}]", rho, d)
    if cfg["warmup"] >= cfg["horizon"]:
        raise ConfigError("supermarket-tail.warmup", "must be shorter than the horizon")


def points(cfg: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """One point per (ρ, d), each with the shared N, run length and kmax."""
    keep = ("N", "horizon", "warmup", "kmax", "batches", "replace")
    points: dict[str, dict[str, Any]] = {}
    for rho in cfg["rho"]:
        for d in cfg["d"]:
            params = {"rho": rho, "d": d, **{k: cfg[k] for k in keep}}
            add_point(points, f"rho{num(rho)}-d{d}", params, "rho, d")
    return points


def _tail_rows(method: str, u: np.ndarray, kmax: int, **extra: Any) -> Rows:
    """Tidy rows u_0..u_kmax of one method (levels beyond ``u`` are 0)."""
    return [
        {"method": method, "quantity": "u", "k": k, "value": float(u[k]) if k < len(u) else 0.0}
        | extra
        for k in range(kmax + 1)
    ]


def compute(p: dict[str, Any], seed: np.random.SeedSequence) -> Rows:
    """Closed form, mean field, refined mean field and one simulation of a point's tail."""
    rho, d, N, kmax = p["rho"], p["d"], p["N"], p["kmax"]
    params = {"rho": rho, "d": d}
    cf = model.fixed_point_closed_form(rho, d)
    mf = model.fixed_point(rho, d)
    rmf = model.refined(rho, d)
    rows: Rows = []
    rows += [r | params for r in _tail_rows("cf", cf, kmax)]
    rows += [r | params for r in _tail_rows("mf", mf.u, kmax)]
    rows += [r | params | {"N": N} for r in _tail_rows("rmf", rmf.u + rmf.V / N, kmax)]
    sim = simulate_point(p, seed)
    for k in range(kmax + 1):
        inside = k < len(sim.u_all)
        rows.append(
            params
            | {
                "method": "sim",
                "quantity": "u",
                "k": k,
                "value": float(sim.u_all[k]) if inside else 0.0,
                "ci_low": float(sim.u_all_ci_low[k]) if inside else 0.0,
                "ci_high": float(sim.u_all_ci_high[k]) if inside else 0.0,
                "N": N,
                "seed": seed.entropy,
                "batches": sim.batches,
                "measured_time": sim.horizon - sim.warmup_used,
                "warmup_used": sim.warmup_used,
                "converged": sim.converged,
            }
        )
    for method, value in (("cf", model.mean_jobs(cf)), ("mf", model.mean_jobs(mf.u))):
        rows.append(params | {"method": method, "quantity": "mean_jobs", "value": value})
    rows.append(params | mean_jobs_row(sim, seed))
    return rows


def _simulated_tail(rows: Rows, rho: float, d: int) -> dict[int, Estimate]:
    """The simulated u_k of one (ρ, d) as estimates with their CIs, by level."""
    return {r["k"]: estimate(r) for r in select(rows, method="sim", quantity="u", rho=rho, d=d)}


def _reference_tail(rows: Rows, method: str, rho: float, d: int) -> dict[int, float]:
    """The u_k of one exact method (cf, mf, rmf) of one (ρ, d), by level."""
    return {
        r["k"]: float(r["value"]) for r in select(rows, method=method, quantity="u", rho=rho, d=d)
    }


def _limit_claims(rows: Rows, rho: float, d: int) -> list[Claim]:
    """The closed form as the N → ∞ limit (paper) and at fixed N (finite-N lbrepro finding).

    The paper's statement is about N → ∞; a simulation at finite N sits O(1/N) away from it,
    and a long run resolves that offset. So the limit is tested against the closed form plus
    its 1/N correction V_k/N (refined mean field: exact at this N up to O(1/N²)); the plain
    closed form at this N is kept as a labelled finite-N finding. Both use :func:`within`
    with the one allowance of :func:`resolution`, and both controls replace the closed form
    by the closed form at a neighbouring load, which the same statistic must reject.
    """
    sim_rows = {r["k"]: r for r in select(rows, method="sim", quantity="u", rho=rho, d=d)}
    sim = _simulated_tail(rows, rho, d)
    ks = list(range(1, KMAX + 1))
    first = sim_rows[1]
    N, T = int(first["N"]), float(first["measured_time"])
    cf, mf, rmf = (_reference_tail(rows, m, rho, d) for m in ("cf", "mf", "rmf"))
    corr = {k: rmf[k] - mf[k] for k in ks}  # V_k / N
    rho2 = neighbour_load(rho)
    alt = model.fixed_point_closed_form(rho2, d)
    alt_u = {k: float(alt[k]) if k < len(alt) else 0.0 for k in ks}
    est = [sim[k] for k in ks]
    labels = [f"u_{k}" for k in ks]
    allow = resolution(N, T)

    def test(ref: Mapping[int, float], plus: Mapping[int, float] | None = None) -> Verdict:
        """``within`` of the simulated u_1..u_KMAX against ref (+ plus), one allowance."""
        refs = [ref[k] + (plus[k] if plus else 0.0) for k in ks]
        return within(est, refs, allowance=allow, labels=labels)

    neighbour = f"the closed form at the neighbouring load ρ = {rho2:g}"
    v_note = "V_k/N = " + ", ".join(f"{corr[k]:+.2e}" for k in ks)
    return [
        make_claim(
            f"ρ = {rho:g}, d = {d}: the closed form ρ^((d^k−1)/(d−1)) is the N → ∞ limit of "
            f"u_k (k ≤ {KMAX}) — the simulation at N = {N} agrees with it once its 1/N "
            "correction V_k/N (refined mean field) is added",
            test(cf, corr),
            control=(f"{neighbour}, plus the same V_k/N", test(alt_u, corr)),
            details=v_note,
        ),
        make_claim(
            f"ρ = {rho:g}, d = {d}: finite-N finding — at N = {N} the simulated u_k "
            f"(k ≤ {KMAX}) lie within the CI of the plain closed form (no 1/N correction)",
            test(cf),
            control=(neighbour, test(alt_u)),
            source="lbrepro",
            details=f"a failure here is the O(1/N) offset, resolved by a long run: {v_note}",
        ),
    ]


def _tail_claim(rows: Rows, rho: float, d: int) -> Claim:
    """Doubly exponential tail (simulation), with the d = 1 geometric tail as its control.

    The claim is about N → ∞, so the simulated u_k are first moved to the limit by removing
    their 1/N offset V_k/N (refined mean field; V = 0 for d = 1, so the control is unchanged).
    """
    N = int(select(rows, method="sim", quantity="u", rho=rho, d=d)[0]["N"])
    sim = _to_limit(rows, rho, d)
    geo = _to_limit(rows, rho, 1)
    if len(tail_levels(geo, N)) >= 2:
        what = f"the simulated d = 1 tail (geometric, ρ^k) at ρ = {rho:g}, same statistic"
    else:
        geo = geometric_control(rho, sim, N)
        what = f"the geometric tail ρ^k (d = 1) at ρ = {rho:g}, with the claim's relative CI"
    cf = _reference_tail(rows, "cf", rho, d)
    levels = tail_levels(sim, N)
    cf_levels = [k for k in levels if 0 < cf.get(k, 0.0) < 1]
    cf_slope = (
        fit_slope(cf_levels, [math.log(-math.log(cf[k])) for k in cf_levels]).slope
        if len(cf_levels) >= 2
        else math.nan
    )
    return make_claim(
        f"ρ = {rho:g}, d = {d}: the tail decays doubly exponentially — log(−log u_k) grows "
        f"in k with slope at least log d (simulation at N = {N}, moved to N → ∞ by −V_k/N)",
        tail_shape(sim, d, N),
        control=(what, tail_shape(geo, d, N)),
        details=f"simulated u_k − V_k/N; the closed form's slope over the same levels is "
        f"{cf_slope:.3f}",
    )


def _to_limit(rows: Rows, rho: float, d: int) -> dict[int, Estimate]:
    """Simulated u_k minus their refined-mean-field offset V_k/N: estimates of the limit."""
    sim = _simulated_tail(rows, rho, d)
    if not sim:
        return {}
    mf, rmf = _reference_tail(rows, "mf", rho, d), _reference_tail(rows, "rmf", rho, d)
    out = {}
    for k, e in sim.items():
        c = rmf.get(k, 0.0) - mf.get(k, 0.0)
        out[k] = Estimate(e.mean - c, e.low - c, e.high - c, e.half_width, e.batches, e.N)
    return out


def check(rows: Rows, cfg: Mapping[str, Any]) -> list[Claim]:
    """The limit claims of every (ρ, d), then the doubly exponential tail of every d ≥ 2."""
    claims: list[Claim] = []
    for rho in cfg["rho"]:
        for d in cfg["d"]:
            claims += _limit_claims(rows, rho, d)
    for rho in cfg["rho"]:
        for d in (d for d in cfg["d"] if d >= 2):
            claims.append(_tail_claim(rows, rho, d))
    return claims


def plot(rows: Rows, cfg: Mapping[str, Any]) -> Any:
    """Tail fractions u_k (log scale) and log(−log u_k) against k, one row of panels per ρ."""
    rhos, ds = cfg["rho"], cfg["d"]
    fig, axes = new_figure(len(rhos), 2, width=7.5, height=2.9 * len(rhos))
    for i, rho in enumerate(rhos):
        ax_tail, ax_ll = axes[i]
        for j, d in enumerate(ds):
            c = color(j)
            cf = select(rows, method="cf", quantity="u", rho=rho, d=d)
            mf = select(rows, method="mf", quantity="u", rho=rho, d=d)
            sim = select(rows, method="sim", quantity="u", rho=rho, d=d)
            ks = [r["k"] for r in cf if r["value"] > 1e-12]
            ax_tail.semilogy(
                ks,
                [r["value"] for r in cf if r["k"] in ks],
                color=c,
                **METHOD_STYLE["cf"] | {"label": f"d={d}"},
            )
            ax_tail.semilogy(
                [r["k"] for r in mf if r["k"] in ks],
                [r["value"] for r in mf if r["k"] in ks],
                color=c,
                alpha=0.6,
                **METHOD_STYLE["mf"] | {"label": None},
            )
            pos = [r for r in sim if r["value"] > 0]
            ax_tail.errorbar(
                [r["k"] for r in pos],
                [r["value"] for r in pos],
                yerr=[
                    [r["value"] - r["ci_low"] for r in pos],
                    [r["ci_high"] - r["value"] for r in pos],
                ],
                color=c,
                capsize=2,
                **METHOD_STYLE["sim"] | {"label": None},
            )
            rmf = [
                r for r in select(rows, method="rmf", quantity="u", rho=rho, d=d) if r["k"] in ks
            ]
            ax_tail.semilogy(
                [r["k"] for r in rmf if r["value"] > 0],
                [r["value"] for r in rmf if r["value"] > 0],
                color=c,
                **METHOD_STYLE["rmf"] | {"label": None},
            )
            if d >= 2:
                for method_rows, method in ((cf, "cf"), (rmf, "rmf"), (pos, "sim")):
                    pts = [
                        (r["k"], math.log(-math.log(r["value"])))
                        for r in method_rows
                        if r["k"] >= 1 and 1e-300 < r["value"] < 1
                    ]
                    if pts:
                        label = f"d={d}" if method == "cf" else None
                        ax_ll.plot(
                            *zip(*pts, strict=True),
                            color=c,
                            **METHOD_STYLE[method] | {"label": label},
                        )
        ax_tail.set(
            xlabel="k (jobs)",
            ylabel="u_k = fraction of servers with ≥ k jobs",
            title=f"ρ = {rho:g}: tail fractions",
            ylim=(1e-7, 1.5),
        )
        ax_ll.set(
            xlabel="k (jobs)",
            ylabel="log(−log u_k)",
            title=f"ρ = {rho:g}: log(−log u_k), slope → log d",
        )
        ax_tail.legend(loc="lower left", ncols=2)
        ax_ll.legend(loc="upper left")
    handles = [
        axes[0][0].plot([], [], color="k", **METHOD_STYLE[m])[0] for m in ("cf", "mf", "rmf", "sim")
    ]
    handles[2].set_label(f"refined mean field, N = {cfg['N']}")
    handles[3].set_label(f"simulation, N = {cfg['N']} (95% CI)")
    fig.legend(handles=handles, loc="outside lower center", ncols=2)
    return fig


def summary(rows: Rows) -> Rows:
    """E[jobs/server]: closed form beside the simulation, and the events simulated, per (ρ, d)."""
    out: Rows = []
    for r in select(rows, method="sim", quantity="mean_jobs"):
        rho, d = r["rho"], r["d"]
        cf = select(rows, method="cf", quantity="mean_jobs", rho=rho, d=d)[0]["value"]
        out.append(
            {
                "ρ": rho,
                "d": d,
                "N": r["N"],
                "E[jobs/server] closed form": f"{cf:.5f}",
                "simulation (95% CI)": f"{r['value']:.5f} [{r['ci_low']:.5f}, {r['ci_high']:.5f}]",
                "events simulated": f"{r['events']:.3g}",
            }
        )
    return out


ARTIFACT = Artifact(
    id="supermarket-tail",
    slug="supermarket",
    kind="figure",
    title="Doubly exponential tails of the supermarket model",
    caption=(
        "Fraction u_k of servers with at least k jobs under JSQ(d): closed form "
        "ρ^((d^k−1)/(d−1)) (solid), numerical mean-field fixed point (dashed; it coincides "
        "with the closed form to 1e-14), refined mean field u_k + V_k/N (dotted) and "
        "simulation with N servers (markers, 95% batch-means CI). Right: log(−log u_k), whose "
        "slope tends to log d: the tails decay doubly exponentially."
    ),
    methods=("CF", "MF", "SIM"),
    points=points,
    cost=simulation_cost,
    compute=compute,
    check=check,
    plot=plot,
    summary=summary,
    validate=validate,
    reconstructions=(
        "Simulations start from the mean-field fixed point rounded to N servers (not empty) "
        "and still discard the warm-up; d servers are sampled with replacement, as in the "
        "mean field.",
        "Claim rules (ours): the closed form is an N → ∞ statement, so it is judged against "
        "the simulation at N after adding its 1/N correction V_k/N from the refined mean "
        "field (u_k + V_k/N is exact at this N up to O(1/N²)); the comparison with the "
        "plain closed form at this N is a labelled finite-N finding, which a long run "
        "fails by the resolved O(1/N) offset. Both use the Bonferroni-widened 95% CI over "
        "u_1..u_4 plus one allowance, the resolution 1/(N·T) of a time-averaged fraction; "
        "their control is the closed form at the neighbouring load ρ − 0.02.",
        "Doubly exponential tail (ours): the slope of log(−log u_k), weighted least squares "
        "over the deepest 3 levels held by ≥ 10 servers on average, must have a 95% "
        "interval that reaches log d and lies wholly above the slope of a geometric tail "
        "(log k) at the same levels; the control is the same statistic on d = 1 at the "
        "same load (the simulated d = 1 run if the sweep has it, else ρ^k). The claim is "
        "about N → ∞, so the simulated u_k enter the fit minus their refined-mean-field "
        "offset V_k/N (zero for d = 1).",
    ),
)
