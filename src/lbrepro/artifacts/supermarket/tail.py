"""``supermarket-tail``: doubly exponential tails of the supermarket model (docs/models.md §S).

u_k against k for several d and ρ — closed form, numerical mean-field fixed point and
simulation at N = 1000 — and log(−log u_k) against k, whose slope tends to log d (doubly
exponential decay).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from lbrepro.artifacts.registry import Artifact, Rows
from lbrepro.artifacts.supermarket.simulation import (
    arrival_rate,
    check_stable,
    mean_jobs_row,
    simulate_point,
    simulation_cost,
    simulation_memory,
)
from lbrepro.core.args import check_warmup
from lbrepro.core.claims import Claim, diagnostic, make_claim
from lbrepro.core.ids import add_point, num
from lbrepro.core.io import select
from lbrepro.core.rows import estimate_row, interval_text, pm
from lbrepro.core.stats import Estimate
from lbrepro.core.verdicts import (
    AGREEMENT,
    EmptyComparisonError,
    Verdict,
    agrees,
    estimate,
    length_to_decide,
)
from lbrepro.judging.neighbours import NEIGHBOUR, neighbour_load
from lbrepro.judging.tails import (
    DIAGNOSTIC_LEVEL,
    NOTCH,
    TAIL_LEVELS,
    TAIL_SERVERS,
    doubly_exponential_slope,
    fraction_margin,
    slope_margin,
    tail_fit,
    tail_shape,
    work_conservation,
)
from lbrepro.models import supermarket as model
from lbrepro.plotting.intervals import legend, loglog_interval, simulated
from lbrepro.plotting.style import METHOD_STYLE, color, new_figure
from lbrepro.sim.occupancy import OccupancySimResult

#: Levels compared with a reference: u_1 .. u_KMAX.
KMAX = 4


def validate(cfg: Mapping[str, Any]) -> None:
    """Refuse unstable loads and a warm-up as long as the horizon, naming the key."""
    for i, rho in enumerate(cfg["rho"]):
        check_stable(f"rho[{i}]", rho)
    check_warmup("warmup", cfg["warmup"], cfg["horizon"])


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
    cf = model.fixed_point_closed_form(arrival_rate(rho), d)
    mf = model.fixed_point(arrival_rate(rho), d)
    rmf = model.refined(arrival_rate(rho), d)
    rows: Rows = []
    rows += [r | params for r in _tail_rows("cf", cf, kmax)]
    rows += [r | params for r in _tail_rows("mf", mf.u, kmax)]
    rows += [r | params | {"N": N} for r in _tail_rows("rmf", rmf.u + rmf.V / N, kmax)]
    # The limit claim's control: the closed form at the neighbouring load, written here so
    # the check reads only its table.
    rho2 = neighbour_load(rho)
    near = model.fixed_point_closed_form(arrival_rate(rho2), d)
    rows += [
        r | params | {"quantity": "u_neighbour", "rho_neighbour": rho2}
        for r in _tail_rows("cf", near, kmax)
    ]
    # The run doubles until its claims are decided (within simulation.extend and the event
    # budget): judged on the run so far exactly as check() judges the final one.
    sim = simulate_point(p, seed, needed=lambda so_far: _length_needed(rows, so_far, rho, d, kmax))
    for k in range(kmax + 1):
        inside = k < len(sim.u_all)
        rows.append(
            params
            | {
                "method": "sim",
                "quantity": "u",
                "k": k,
                **estimate_row(
                    sim.estimate("u_all", k) if inside else sim.unreached(), N=N, seed=seed.entropy
                ),
                "measured_time": sim.horizon - sim.warmup_used,
                "warmup_used": sim.warmup_used,
            }
        )
    for method, value in (("cf", model.mean_jobs(cf)), ("mf", model.mean_jobs(mf.u))):
        rows.append(params | {"method": method, "quantity": "mean_jobs", "value": value})
    rows.append(params | mean_jobs_row(sim, seed))
    return rows


def _length_needed(rows: Rows, sim: OccupancySimResult, rho: float, d: int, kmax: int) -> float:
    """The run-length factor the run ``sim`` of (ρ, d) asks for: the nearest that decides one
    of its undecided claims (:func:`length_to_decide`) — the limit claim and (d ≥ 2) the tail
    claim, judged from the exact rows ``rows`` of the point as check() judges them."""
    u = {
        k: sim.estimate("u_all", k) if k < len(sim.u_all) else sim.unreached()
        for k in range(kmax + 1)
    }
    measured = sim.horizon - sim.warmup_used
    verdicts = []
    for verdict in (_limit_verdict, _tail_verdict):
        if verdict is _tail_verdict and d < 2:
            continue
        try:
            verdicts.append(verdict(rows, u, rho, d, sim.N, measured)[0])
        except EmptyComparisonError:  # nothing the run resolves yet: no length is promised
            return math.inf
    return length_to_decide(verdicts)


def _simulated_tail(rows: Rows, rho: float, d: int) -> dict[int, Estimate]:
    """The simulated u_k of one (ρ, d) as estimates with their CIs, by level."""
    return {r["k"]: estimate(r) for r in select(rows, method="sim", quantity="u", rho=rho, d=d)}


def _reference_tail(rows: Rows, method: str, rho: float, d: int) -> dict[int, float]:
    """The u_k of one exact method (cf, mf, rmf) of one (ρ, d), by level."""
    return {
        r["k"]: float(r["value"]) for r in select(rows, method=method, quantity="u", rho=rho, d=d)
    }


def run_label(rho: float, d: int) -> str:
    """The run label of one (ρ, d) simulation: its point id (diagnostics gate by it)."""
    return f"rho{num(rho)}-d{d}"


def _run_facts(rows: Rows, rho: float, d: int) -> tuple[int, float]:
    """(N, measured time) of one (ρ, d) simulation."""
    first = select(rows, method="sim", quantity="u", rho=rho, d=d)[0]
    return int(first["N"]), float(first["measured_time"])


def limit_levels(reference: Mapping[int, float], N: int) -> list[int]:
    """The levels 2..KMAX a limit claim compares: held by ≥ TAIL_SERVERS servers on average.

    u_1 = ρ by work conservation (a diagnostic, not a test); a deeper level held by fewer
    servers is not resolved at a 2% margin by any run of the profile's length. Chosen from
    the reference, so every seed compares the same levels.
    """
    return [k for k in range(2, KMAX + 1) if reference.get(k, 0.0) >= TAIL_SERVERS / N]


def _work_conservation(rows: Rows, rho: float, d: int) -> Claim:
    """u₁ = ρ on the run of (ρ, d): the diagnostic that gates its verdicts."""
    N, T = _run_facts(rows, rho, d)
    return diagnostic(
        f"ρ = {rho:g}, d = {d}: the simulation (N = {N}) conserves work — the time-average "
        "busy fraction u_1 equals ρ",
        work_conservation(_simulated_tail(rows, rho, d)[1], rho, N, T),
        runs=[run_label(rho, d)],
    )


def _limit_verdict(
    rows: Rows, sim: Mapping[int, Estimate], rho: float, d: int, N: int, T: float
) -> tuple[Verdict, Verdict, dict[str, Any]]:
    """The limit claim's verdict and its control's on the simulated u_k ``sim`` (N servers,
    measured time T), with what the claim states about them."""
    cf, mf, rmf = (_reference_tail(rows, m, rho, d) for m in ("cf", "mf", "rmf"))
    ref = {k: cf[k] + rmf[k] - mf[k] for k in cf}  # closed form + V_k/N
    ks = limit_levels(ref, N)
    if not ks:
        raise EmptyComparisonError(f"ρ = {rho:g}, d = {d}: no level u_2.. held by 10 servers")
    near = select(rows, method="cf", quantity="u_neighbour", rho=rho, d=d)
    alt = {r["k"]: float(r["value"]) for r in near}
    alt_u = {k: alt.get(k, 0.0) + rmf[k] - mf[k] for k in ks}
    est = [sim[k] for k in ks]
    margins = [fraction_margin(ref[k], N, T) for k in ks]
    labels = [f"u_{k}" for k in ks]
    facts = {
        "ks": ks,
        "rho_neighbour": near[0]["rho_neighbour"],
        "far": max(abs(alt_u[k] - ref[k]) / m for k, m in zip(ks, margins, strict=True)),
        "offsets": ", ".join(
            f"u_{k}: sim − cf = {pm(sim[k].mean - cf[k], sim[k].half_width, '+.2e', '.1e')} vs "
            f"V_k/N = {rmf[k] - mf[k]:+.2e}"
            for k in ks
        ),
    }
    return (
        agrees(est, [ref[k] for k in ks], margin=margins, labels=labels),
        agrees(est, [alt_u[k] for k in ks], margin=margins, labels=labels),
        facts,
    )


def _limit_claim(rows: Rows, rho: float, d: int) -> Claim:
    """The closed form as the N → ∞ limit of u_2..u_4, judged at N through its 1/N correction.

    The paper's statement is about N → ∞; a simulation at finite N sits O(1/N) away from it,
    which a long run resolves. So the simulation is compared with the closed form plus its
    1/N correction V_k/N (refined mean field: exact at this N up to O(1/N²)), each level with
    the default 2% agreement margin (at least the run's resolution 1/(N·T)). The control is
    the closed form at the neighbouring load plus the same V_k/N.
    """
    N, T = _run_facts(rows, rho, d)
    verdict, control, facts = _limit_verdict(rows, _simulated_tail(rows, rho, d), rho, d, N, T)
    rho2 = facts["rho_neighbour"]
    return make_claim(
        f"ρ = {rho:g}, d = {d}: the closed form ρ^((d^k−1)/(d−1)) is the N → ∞ limit of "
        f"u_k — the simulation at N = {N} agrees with it (2% margin, u_2..u_{facts['ks'][-1]}) "
        "once its 1/N correction V_k/N (refined mean field) is added",
        verdict,
        control=(
            f"the closed form at the neighbouring load ρ = {rho2:g}, plus the same V_k/N",
            control,
        ),
        distance=f"ρ − {rho - rho2:.2g}: up to {facts['far']:.1f} margins from the prediction "
        f"(at the level farthest off)",
        details=f"the O(1/N) offset: {facts['offsets']}",
        runs=[run_label(rho, d)],
    )


def _tail_verdict(
    rows: Rows, sim: Mapping[int, Estimate], rho: float, d: int, N: int, T: float
) -> tuple[Verdict, Verdict, dict[str, Any]]:
    """The tail claim's verdict and its control's on the simulated u_k ``sim`` (N servers),
    first moved to N → ∞ by −V_k/N, with what the claim states about them."""
    limit = _moved_to_limit(rows, sim, rho, d)
    levels, _, sig = tail_fit(limit, N)
    s_d = doubly_exponential_slope(levels, d, sig)
    margin = slope_margin(s_d)
    s_near = s_d - NOTCH * margin
    facts = {
        "levels": levels,
        "s_d": s_d,
        "s_near": s_near,
        "margin": margin,
        "base_half_below": (s_d - doubly_exponential_slope(levels, d - 0.5, sig)) / margin,
    }
    return (
        tail_shape(limit, N, s_d, margin, what=f"closed form, base d = {d}"),
        tail_shape(limit, N, s_near, margin, what="one notch slower"),
        facts,
    )


def _tail_claim(rows: Rows, rho: float, d: int) -> Claim:
    """Doubly exponential tail with rate log d (simulation), against a rate one notch slower.

    The claim is about N → ∞, so the simulated u_k are first moved to the limit by removing
    their 1/N offset V_k/N (refined mean field). The slope of log(−log u_k) over the fit's
    levels must agree with the closed form's at the same levels and weights (it exceeds
    log d at finite depth) within the default 2% margin; the control is the near miss, a
    slope NOTCH = 3 margins lower (a doubly exponential rate one notch slower).
    """
    N, T = _run_facts(rows, rho, d)
    verdict, control, f = _tail_verdict(rows, _simulated_tail(rows, rho, d), rho, d, N, T)
    return make_claim(
        f"ρ = {rho:g}, d = {d}: the tail decays doubly exponentially with rate log d — "
        "the slope of log(−log u_k) agrees with the closed form's at the same levels "
        f"(simulation at N = {N}, moved to N → ∞ by −V_k/N)",
        verdict,
        control=(
            f"a doubly exponential rate one notch slower: the closed form's slope lowered by "
            f"{NOTCH:g} margins ({f['s_near']:.4f})",
            control,
        ),
        distance=f"slope {f['s_near']:.4f} vs {f['s_d']:.4f} at levels {f['levels']}: "
        f"{NOTCH:g} margins (2% of the slope, {f['margin']:.3g}); log d = {math.log(d):.3f}; "
        f"the closed form of base d − ½ would be {f['base_half_below']:.1f} margins away",
        details="simulated u_k − V_k/N",
        runs=[run_label(rho, d)],
    )


def _moved_to_limit(
    rows: Rows, sim: Mapping[int, Estimate], rho: float, d: int
) -> dict[int, Estimate]:
    """Simulated u_k minus their refined-mean-field offset V_k/N: estimates of the limit."""
    mf, rmf = _reference_tail(rows, "mf", rho, d), _reference_tail(rows, "rmf", rho, d)
    out = {}
    for k, e in sim.items():
        c = rmf.get(k, 0.0) - mf.get(k, 0.0)
        out[k] = replace(e, mean=e.mean - c, low=e.low - c, high=e.high - c)
    return out


def check(rows: Rows, cfg: Mapping[str, Any]) -> list[Claim]:
    """Per (ρ, d): work conservation (diagnostic) and the limit claim; per d ≥ 2 the tail."""
    claims: list[Claim] = []
    for rho in cfg["rho"]:
        for d in cfg["d"]:
            claims += [_work_conservation(rows, rho, d), _limit_claim(rows, rho, d)]
    for rho in cfg["rho"]:
        for d in (d for d in cfg["d"] if d >= 2):
            claims.append(_tail_claim(rows, rho, d))
    return claims


def plot(rows: Rows, cfg: Mapping[str, Any]) -> Any:
    """Tail fractions u_k (log scale) and log(−log u_k) against k, one row of panels per ρ."""
    rhos, ds = cfg["rho"], cfg["d"]
    fig, axes = new_figure(len(rhos), 2, width=7.5, height=2.9 * len(rhos))
    lls: list = []
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
                **METHOD_STYLE["cf"] | {"label": None},
            )
            ax_tail.semilogy(
                [r["k"] for r in mf if r["k"] in ks],
                [r["value"] for r in mf if r["k"] in ks],
                color=c,
                alpha=0.6,
                **METHOD_STYLE["mf"] | {"label": None},
            )
            pos = [r for r in sim if r["value"] > 0]
            simulated(  # a u_k of 0 is left out of the log axis, and noted in the legend
                ax_tail,
                [r["k"] for r in sim],
                [r["value"] for r in sim],
                [r.get("ci_low") for r in sim],
                [r.get("ci_high") for r in sim],
                color=c,
                clip=(1e-7, 1.5),
                converged=[r.get("converged") for r in sim],
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
                for method_rows, method in ((cf, "cf"), (rmf, "rmf")):
                    pts = [
                        (r["k"], math.log(-math.log(r["value"])))
                        for r in method_rows
                        if r["k"] >= 1 and 1e-300 < r["value"] < 1
                    ]
                    if pts:
                        ax_ll.plot(
                            *zip(*pts, strict=True),
                            color=c,
                            **METHOD_STYLE[method] | {"label": None},
                        )
                imaged = [r for r in pos if r["k"] >= 1 and r["value"] < 1]
                ll = [
                    (r["k"], *loglog_interval(r["value"], r.get("ci_low"), r.get("ci_high")))
                    for r in imaged
                ]
                if ll:
                    lls.append((c, ll, [r.get("converged") for r in imaged]))
        # log(−log u) is unbounded where an interval leaves (0, 1): such ends run to the edge.
        values = [g for line in ax_ll.get_lines() for g in line.get_ydata()]
        values += [g for _, ll, _ in lls for _, g, _, _ in ll]
        bottom, top = min(values, default=-2.0) - 0.5, max(values, default=3.0) + 0.5
        for c, ll, flags in lls:
            simulated(ax_ll, *zip(*ll, strict=True), color=c, clip=(bottom, top), converged=flags)
        lls.clear()
        ax_tail.set(
            xlabel="k (jobs)",
            ylabel="u_k = fraction of servers with ≥ k jobs",
            title=f"ρ = {rho:g}: tail fractions",
            ylim=(1e-7, 1.5),
        )
        ax_ll.set(
            xlabel="k (jobs)",
            ylabel="log(−log u_k)",
            ylim=(bottom, top),
            title=f"ρ = {rho:g}: log(−log u_k), slope → log d",
        )
    handles = [
        axes[0][0].plot([], [], color="k", **METHOD_STYLE[m])[0] for m in ("cf", "mf", "rmf", "sim")
    ]
    handles[2].set_label(f"refined mean field, N = {cfg['N']}")
    handles[3].set_label(f"simulation, N = {cfg['N']} (95% CI)")
    by_d = [axes[0][0].plot([], [], color=color(j), lw=3, label=f"d = {d}")[0]
            for j, d in enumerate(ds)]  # fmt: skip
    legend(fig, handles=by_d + handles, where="below", ncols=4)
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
                "simulation (95% CI)": interval_text(r, ".5f"),
                "events simulated": f"{r['events']:.3g}",
            }
        )
    return out


ARTIFACT = Artifact(
    id="supermarket-tail",
    slug="supermarket",
    kind="figure",
    title="Doubly exponential tails of the supermarket model",
    caption=lambda cfg: (
        "Fraction u_k of servers with at least k jobs under JSQ(d): closed form "
        "ρ^((d^k−1)/(d−1)) (solid), numerical mean-field fixed point (dashed; it coincides "
        "with the closed form to 1e-14), refined mean field u_k + V_k/N (dotted) and "
        f"simulation with N = {cfg['N']} servers over {cfg['horizon']:g} mean service times "
        "(markers, 95% batch-means CI). Right: log(−log u_k), whose slope tends to log d: the "
        "tails decay doubly exponentially."
    ),
    methods=("CF", "MF", "SIM"),
    points=points,
    cost=simulation_cost,
    memory=simulation_memory("rho"),
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
        f"field (u_k + V_k/N is exact at this N up to O(1/N²)). Levels u_2..u_{KMAX} held by "
        f"at least {TAIL_SERVERS:g} servers on average (chosen from the reference, the same at "
        f"every seed) must agree within the default {AGREEMENT:.0%} relative margin "
        "(docs/methods.md; at least the resolution 1/(N·T) of a time-averaged fraction): "
        "equivalence, two one-sided tests on the Bonferroni-widened 95% CIs. The measured "
        "offset sim − cf is shown beside V_k/N in the claim; the former comparison with the "
        "plain closed form at this N (a 'finite-N finding') is dropped — it was the same "
        "statistic with the offset left in. Control: the closed form at the neighbouring load "
        f"ρ − {NEIGHBOUR:g} plus the same V_k/N, its distance stated in margins.",
        "u_1 = ρ holds exactly by work conservation at every N, so it is not a tested level: "
        f"it is a diagnostic per run (the 95% interval rescaled to {DIAGNOSTIC_LEVEL:.1%} must "
        "cover ρ, and the run must have converged); a failure makes every verdict on that run "
        "undecided (invalid run).",
        "Doubly exponential tail with rate log d (ours): the slope of log(−log u_k), weighted "
        f"least squares over the deepest {TAIL_LEVELS} levels held by ≥ {TAIL_SERVERS:g} servers "
        "on average, must agree with the closed form's slope at the same levels and weights "
        f"(which exceeds log d at finite depth) within the default {AGREEMENT:.0%} relative "
        "margin; the control is the near miss, a doubly exponential rate one notch slower — "
        f"the slope lowered by {NOTCH:g} margins. The geometric tail (d = 1) is not used: it is "
        "far from the claim. The simulated u_k enter the fit minus their refined-mean-field "
        "offset V_k/N.",
    ),
)
