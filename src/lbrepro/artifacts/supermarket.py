"""Artifacts of the supermarket baseline (artifacts.md §S): tails and finite-N accuracy.

``supermarket-tail``: u_k against k for several d and ρ — closed form, numerical mean-field
fixed point and simulation at N = 1000 — and log(−log u_k) against k, whose slope tends to
log d (doubly exponential decay).

``supermarket-accuracy``: mean number of jobs per server against N — simulation, mean field
and refined mean field — and the error of each against N on log–log axes (1/N and 1/N²).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from scipy import optimize, stats

from lbrepro.artifacts.registry import Artifact, Rows, register
from lbrepro.core.claims import Claim, make_claim
from lbrepro.core.errors import ConfigError
from lbrepro.core.ids import add_point, num
from lbrepro.core.io import select
from lbrepro.core.stats import Estimate
from lbrepro.core.verdicts import (
    Z95,
    EmptyComparisonError,
    Verdict,
    better,
    estimate,
    fit_slope,
    within,
)
from lbrepro.models import supermarket as model
from lbrepro.plotting.style import METHOD_STYLE, color, new_figure
from lbrepro.sim.occupancy import OccupancySimResult

# ---------------------------------------------------------------------------------------
# Shared claim statistics (also used by the general-service artifacts)

#: The levels of a tail fit: the deepest ``TAIL_LEVELS`` levels held on average by at least
#: ``TAIL_SERVERS`` servers (u_k ≥ TAIL_SERVERS/N) with u_k ≤ ``TAIL_TOP``. Deeper levels are
#: held by a handful of servers at a time, where u_k is no longer a mean-field quantity.
TAIL_LEVELS, TAIL_SERVERS, TAIL_TOP = 3, 10.0, 0.95


def resolution(N: int, measured_time: float) -> float:
    """The one finite-run allowance of every ``within`` check of the supermarket artifacts.

    A time-averaged fraction of N servers over a measured time T moves in steps of 1/(N·T) (one
    server holding a level for one time unit): a reference below that cannot be told from 0 by
    the run, so it is granted as the allowance. No other allowance is granted: a reference
    exact at this N (u_k + V_k/N) gets no finite-N bias, and the N → ∞ closed form compared at
    fixed N is a labelled finite-N finding, not the paper's claim.
    """
    return 1.0 / (float(N) * float(measured_time))


def tail_levels(u: Mapping[int, Estimate], N: int) -> list[int]:
    """The levels a tail-shape fit uses (see ``TAIL_LEVELS``), deepest last."""
    floor = TAIL_SERVERS / N
    keep = [
        k
        for k in sorted(u)
        if k >= 1 and floor <= u[k].mean <= TAIL_TOP and u[k].half_width > 0 and u[k].mean < 1
    ]
    return keep[-TAIL_LEVELS:]


def tail_shape(u: Mapping[int, Estimate], d: int, N: int, *, base: bool = True) -> Verdict:
    """Is the tail doubly exponential with exponent base d, or no faster than geometric?

    ``log(−log u_k)`` is fitted against k over :func:`tail_levels` by weighted least squares
    (σ of each point from its CI by the delta method: σ_y = σ_u/(u·|log u|)). For u_k =
    ρ^((d^k−1)/(d−1)) the local slope exceeds log d at every depth; for a geometric tail ρ^k it
    is the slope of log k over the same levels, and for a power law it is smaller still. The
    claim holds when the slope's 95% interval (normal quantile: the σ are known) lies wholly
    above the geometric slope at those levels — significantly faster than any geometric tail —
    and, with ``base`` (the closed form's rate), also reaches log d — not significantly below
    the rate of ρ^((d^k−1)/(d−1)).
    """
    levels = tail_levels(u, N)
    if len(levels) < 2:
        raise EmptyComparisonError(f"tail shape: fewer than two resolved levels ({levels})")
    y = [math.log(-math.log(u[k].mean)) for k in levels]
    sig = [u[k].half_width / Z95 / (u[k].mean * abs(math.log(u[k].mean))) for k in levels]
    fit = fit_slope(levels, y, sigma=sig)
    geo = fit_slope(levels, [math.log(k) for k in levels]).slope
    lo, hi = fit.slope - Z95 * fit.se, fit.slope + Z95 * fit.se
    target = math.log(d)
    reach = f"reaches log d = {target:.3f} and " if base else ""
    return Verdict(
        passed=bool((hi >= target or not base) and lo > geo),
        measured=round(fit.slope, 4),
        expected=f"slope of log(−log u_k): 95% CI {reach}lies above the geometric slope "
        f"{geo:.3f} at the same levels",
        tolerance=f"95% CI [{lo:.3f}, {hi:.3f}] (se {fit.se:.2g})",
        details=f"levels k = {levels}: u = "
        + ", ".join(f"{u[k].mean:.4g}±{u[k].half_width:.1g}" for k in levels)
        + ("" if base else f"; log d = {target:.3f} for comparison"),
    )


def geometric_control(
    rho: float, like: Mapping[int, Estimate], N: int, kmax: int = 400
) -> dict[int, Estimate]:
    """The geometric tail ρ^k (d = 1, exponential service) at the same load, as estimates.

    Each level gets the median relative CI half-width of the levels ``like`` fits, so the
    control is judged with the precision of the claim's own data.
    """
    rel = [like[k].half_width / like[k].mean for k in tail_levels(like, N)]
    r = float(np.median(rel)) if rel else 0.01
    out = {}
    for k in range(kmax + 1):
        v = rho**k
        out[k] = Estimate(v, v * (1 - r), v * (1 + r), v * r, 20)
    return out


# ---------------------------------------------------------------------------------------
# supermarket-tail


def _check_stable(key: str, rho: float) -> None:
    if rho >= 1:
        raise ConfigError(key, f"load rho={rho} >= 1: the supermarket model is unstable")


def _validate_tail(cfg: Mapping[str, Any]) -> None:
    for i, rho in enumerate(cfg["rho"]):
        _check_stable(f"supermarket-tail.rho[{i}]", rho)
    if cfg["warmup"] >= cfg["horizon"]:
        raise ConfigError("supermarket-tail.warmup", "must be shorter than the horizon")


def _tail_points(cfg: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    keep = ("N", "horizon", "warmup", "kmax", "batches", "replace")
    points: dict[str, dict[str, Any]] = {}
    for rho in cfg["rho"]:
        for d in cfg["d"]:
            params = {"rho": rho, "d": d, **{k: cfg[k] for k in keep}}
            add_point(points, f"rho{num(rho)}-d{d}", params, "rho, d")
    return points


def _u_rows(method: str, u: np.ndarray, kmax: int, **extra: Any) -> Rows:
    return [
        {"method": method, "quantity": "u", "k": k, "value": float(u[k]) if k < len(u) else 0.0}
        | extra
        for k in range(kmax + 1)
    ]


def _sim_mean_jobs_row(sim: OccupancySimResult, seed: np.random.SeedSequence) -> dict[str, Any]:
    """The tidy row of a simulation's mean jobs per server, with its CI and run facts.

    Wall-clock speed is left out on purpose: tables hold only what the seed determines (the
    same config gives byte-identical tables); runtimes live in benchmarks/.
    """
    return {
        "method": "sim",
        "quantity": "mean_jobs",
        "value": sim.mean_jobs,
        "ci_low": sim.mean_jobs_ci[0],
        "ci_high": sim.mean_jobs_ci[1],
        "N": sim.N,
        "seed": seed.entropy,
        "batches": sim.batches,
        "horizon": sim.horizon,
        "warmup_used": sim.warmup_used,
        "converged": sim.converged,
        "events": sim.events,
    }


def _simulate(p: Mapping[str, Any], seed: np.random.SeedSequence) -> OccupancySimResult:
    """Simulate one point's (ρ, d, N) with its horizon, warm-up, batches and sampling rule."""
    return model.simulate(
        lam=p["rho"],
        d=p["d"],
        N=p["N"],
        horizon=p["horizon"],
        warmup=p["warmup"],
        seed=seed,
        batches=p["batches"],
        replace=p["replace"],
    )


def _compute_tail(p: dict[str, Any], seed: np.random.SeedSequence) -> Rows:
    rho, d, N, kmax = p["rho"], p["d"], p["N"], p["kmax"]
    params = {"rho": rho, "d": d}
    cf = model.fixed_point_closed_form(rho, d)
    mf = model.fixed_point(rho, d)
    rmf = model.refined(rho, d)
    rows: Rows = []
    rows += [r | params for r in _u_rows("cf", cf, kmax)]
    rows += [r | params for r in _u_rows("mf", mf.u, kmax)]
    rows += [r | params | {"N": N} for r in _u_rows("rmf", rmf.u + rmf.V / N, kmax)]
    sim = _simulate(p, seed)
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
    rows.append(params | _sim_mean_jobs_row(sim, seed))
    return rows


def _sim_u(rows: Rows, rho: float, d: int) -> dict[int, Estimate]:
    """The simulated u_k of one (ρ, d) as estimates with their CIs, by level."""
    return {r["k"]: estimate(r) for r in select(rows, method="sim", quantity="u", rho=rho, d=d)}


def _ref_u(rows: Rows, method: str, rho: float, d: int) -> dict[int, float]:
    return {
        r["k"]: float(r["value"]) for r in select(rows, method=method, quantity="u", rho=rho, d=d)
    }


#: Levels compared with a reference (u_1 .. u_KMAX), and the control's load offset.
KMAX, NEIGHBOUR = 4, 0.02


def neighbour_load(rho: float) -> float:
    """The neighbouring load of a control: ρ − 0.02 (ρ + 0.02 if that is not a load)."""
    return rho - NEIGHBOUR if rho - NEIGHBOUR > 0 else rho + NEIGHBOUR


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
    sim = _sim_u(rows, rho, d)
    ks = list(range(1, KMAX + 1))
    first = sim_rows[1]
    N, T = int(first["N"]), float(first["measured_time"])
    cf, mf, rmf = (_ref_u(rows, m, rho, d) for m in ("cf", "mf", "rmf"))
    corr = {k: rmf[k] - mf[k] for k in ks}  # V_k / N
    rho2 = neighbour_load(rho)
    alt = model.fixed_point_closed_form(rho2, d)
    alt_u = {k: float(alt[k]) if k < len(alt) else 0.0 for k in ks}
    est = [sim[k] for k in ks]
    labels = [f"u_{k}" for k in ks]
    allow = resolution(N, T)

    def test(ref: Mapping[int, float], plus: Mapping[int, float] | None = None) -> Verdict:
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
    cf = _ref_u(rows, "cf", rho, d)
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
    sim = _sim_u(rows, rho, d)
    if not sim:
        return {}
    mf, rmf = _ref_u(rows, "mf", rho, d), _ref_u(rows, "rmf", rho, d)
    out = {}
    for k, e in sim.items():
        c = rmf.get(k, 0.0) - mf.get(k, 0.0)
        out[k] = Estimate(e.mean - c, e.low - c, e.high - c, e.half_width, e.batches, e.N)
    return out


def _check_tail(rows: Rows, cfg: Mapping[str, Any]) -> list[Claim]:
    claims: list[Claim] = []
    for rho in cfg["rho"]:
        for d in cfg["d"]:
            claims += _limit_claims(rows, rho, d)
    for rho in cfg["rho"]:
        for d in (d for d in cfg["d"] if d >= 2):
            claims.append(_tail_claim(rows, rho, d))
    return claims


def _plot_tail(rows: Rows, cfg: Mapping[str, Any]):
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


def _summary_tail(rows: Rows) -> Rows:
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


register(
    Artifact(
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
        points=_tail_points,
        compute=_compute_tail,
        check=_check_tail,
        plot=_plot_tail,
        summary=_summary_tail,
        validate=_validate_tail,
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
)

# ---------------------------------------------------------------------------------------
# supermarket-accuracy


def _validate_accuracy(cfg: Mapping[str, Any]) -> None:
    for i, (rho, _d) in enumerate(cfg["cases"]):
        _check_stable(f"supermarket-accuracy.cases[{i}][0]", rho)


def _accuracy_points(cfg: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    points: dict[str, dict[str, Any]] = {}
    for rho, d in cfg["cases"]:
        for N in cfg["N"]:
            params = {
                "rho": rho,
                "d": d,
                "N": N,
                "horizon": cfg["warmup"] + cfg["server_time"] / N,
                "warmup": cfg["warmup"],
                "batches": cfg["batches"],
                "replace": cfg["replace"],
            }
            add_point(points, f"rho{num(rho)}-d{d}-N{N}", params, "cases, N")
    return points


def _compute_accuracy(p: dict[str, Any], seed: np.random.SeedSequence) -> Rows:
    rho, d, N = p["rho"], p["d"], p["N"]
    params = {"rho": rho, "d": d}
    rmf = model.refined(rho, d)
    mf_jobs = model.mean_jobs(rmf.u)
    sim = _simulate(p, seed)
    return [
        params | {"method": "mf", "quantity": "mean_jobs", "value": mf_jobs, "N": N},
        params
        | {
            "method": "rmf",
            "quantity": "mean_jobs",
            "value": mf_jobs + float(np.sum(rmf.V)) / N,
            "N": N,
            "rmf_coefficient": float(np.sum(rmf.V)),
        },
        params | _sim_mean_jobs_row(sim, seed),
    ]


def _errors(rows: Rows, rho: float, d: int, method: str) -> list[tuple[int, float, float]]:
    """(N, sim − method, CI half-width) for one case, sorted by N."""
    out = []
    for s in sorted(
        select(rows, method="sim", quantity="mean_jobs", rho=rho, d=d), key=lambda r: r["N"]
    ):
        ref = select(rows, method=method, quantity="mean_jobs", rho=rho, d=d, N=s["N"])[0]["value"]
        out.append((s["N"], s["value"] - ref, (s["ci_high"] - s["ci_low"]) / 2))
    return out


def _power_fit(errs: list[tuple[int, float, float]]) -> tuple[float, float, float]:
    """Weighted fit of error(N) = c·N^(−s) over every N: (c, s, standard error of s).

    Every N is used, weighted by its simulation CI (σ = half-width/1.96, absolute): an N whose
    error is not resolved still bounds c·N^(−s). Raises ``RuntimeError`` if the fit fails.
    """
    Ns = np.array([N for N, _, _ in errs], dtype=float)
    es = np.array([e for _, e, _ in errs])
    sigma = np.array([h for _, _, h in errs]) / stats.norm.ppf(0.975)
    if len(errs) < 3:
        raise EmptyComparisonError(f"error fit: needs three values of N, got {len(errs)}")
    i0 = int(np.argmax(np.abs(es) / sigma))
    (c, s_hat), cov = optimize.curve_fit(
        lambda n, c, s: c * n ** (-s),
        Ns,
        es,
        p0=(es[i0] * Ns[i0], 1.0),
        sigma=sigma,
        absolute_sigma=True,
        maxfev=10_000,
    )
    se = float(np.sqrt(cov[1, 1]))
    if not np.isfinite(se):
        raise RuntimeError("the exponent's standard error is not finite")
    return float(c), float(s_hat), se


def order_verdict(s: float, se: float, order: int, detail: str = "") -> Verdict:
    """The error decays as 1/N^order exactly: the fitted exponent s against the integer order.

    An order is an integer, so the rule has no tuned constant: s must be nearer ``order`` than
    either neighbour (|s − order| ≤ ½) and its 95% interval s ± 1.96·se must exclude both
    neighbouring orders ``order ± 1``. The control applies the same rule to a wrong order.
    """
    lo, hi = s - Z95 * se, s + Z95 * se
    return Verdict(
        passed=bool(abs(s - order) <= 0.5 and lo > order - 1 and hi < order + 1),
        measured=round(s, 3),
        expected=f"exponent {order}: |s − {order}| ≤ 0.5 and 95% CI inside ({order - 1}, "
        f"{order + 1})",
        tolerance=f"95% CI [{lo:.3f}, {hi:.3f}] (se {se:.2g})",
        details=detail,
    )


def at_least_order_verdict(s: float, se: float, order: int, detail: str = "") -> Verdict:
    """The error is O(1/N^order): decays at least that fast, and faster than 1/N^(order−1).

    s's 95% interval must reach ``order`` (not significantly slower than 1/N^order) and lie
    wholly above ``order − 1`` (significantly faster than the next slower order).
    """
    lo, hi = s - Z95 * se, s + Z95 * se
    return Verdict(
        passed=bool(hi >= order and lo > order - 1),
        measured=round(s, 3),
        expected=f"exponent ≥ {order}: 95% CI reaches {order} and lies above {order - 1}",
        tolerance=f"95% CI [{lo:.3f}, {hi:.3f}] (se {se:.2g})",
        details=detail,
    )


def _failed(reason: str) -> Verdict:
    return Verdict(False, reason, "a fitted exponent", None, reason)


def _fit(rows: Rows, rho: float, d: int, method: str) -> tuple[float, float, str] | str:
    """(s, se, description) of the weighted fit of sim − method, or the reason it failed."""
    try:
        c, s, se = _power_fit(_errors(rows, rho, d, method))
    except EmptyComparisonError:
        raise
    except (RuntimeError, ValueError) as err:
        return f"fit failed: {err}"
    return s, se, f"weighted fit c·N^(−s) to sim − {method}: c = {c:.3g}, s = {s:.3f} ± {se:.3f}"


def _listing(rows: Rows, rho: float, d: int, method: str) -> str:
    errs = _errors(rows, rho, d, method)
    return f"sim − {method} (±95%): " + ", ".join(f"N={N}: {e:+.2e}±{h:.1e}" for N, e, h in errs)


def _error_order_claims(rows: Rows, rho: float, d: int) -> list[Claim]:
    """MF error Θ(1/N) (control: the wrong order 1/N²) and RMF error O(1/N²) (control: the
    same rule on the mean-field error, which is only O(1/N))."""
    mf, rmf = _fit(rows, rho, d, "mf"), _fit(rows, rho, d, "rmf")

    def judge(fit, rule, order):
        return _failed(fit) if isinstance(fit, str) else rule(fit[0], fit[1], order, fit[2])

    return [
        make_claim(
            f"ρ = {rho:g}, d = {d}: the mean field error on E[jobs/server] decays as 1/N",
            judge(mf, order_verdict, 1),
            control=(
                "the same fit judged against the wrong order 1/N²",
                judge(mf, order_verdict, 2),
            ),
            details=_listing(rows, rho, d, "mf"),
        ),
        make_claim(
            f"ρ = {rho:g}, d = {d}: the refined mean field error on E[jobs/server] is O(1/N²) "
            "(decays at least as fast as 1/N², faster than 1/N)",
            judge(rmf, at_least_order_verdict, 2),
            control=(
                "the same rule applied to the mean-field error (only O(1/N))",
                judge(mf, at_least_order_verdict, 2),
            ),
            source="lbrepro",
            details=_listing(rows, rho, d, "rmf"),
        ),
    ]


def _abs_errors(rows: Rows, rho: float, d: int, method: str) -> list[Estimate]:
    """|sim − method| per N as estimates with the simulation's CI."""
    return [
        Estimate(abs(e), abs(e) - h, abs(e) + h, h, _batches(rows, rho, d, N), N)
        for N, e, h in _errors(rows, rho, d, method)
    ]


def _batches(rows: Rows, rho: float, d: int, N: int) -> int:
    sim = select(rows, method="sim", quantity="mean_jobs", rho=rho, d=d, N=N)
    b = sim[0].get("batches") if sim else None
    return int(b) if b is not None and b == b else 0


def _check_accuracy(rows: Rows, cfg: Mapping[str, Any]) -> list[Claim]:
    claims: list[Claim] = []
    for rho, d in cfg["cases"]:
        claims += _error_order_claims(rows, rho, d)
        mf, rmf = _abs_errors(rows, rho, d, "mf"), _abs_errors(rows, rho, d, "rmf")
        labels = [f"N={e.N}" for e in mf]
        claims.append(
            make_claim(
                f"ρ = {rho:g}, d = {d}: the refined mean field is at least as accurate as the "
                "mean field at every N (|sim − rmf| not significantly above |sim − mf|)",
                better(rmf, mf, strict=False, labels=labels),
                control=(
                    "the mean field at least as accurate as the refined mean field at every N",
                    better(mf, rmf, strict=False, labels=labels),
                ),
                source="lbrepro",
            )
        )
    return claims


def _plot_accuracy(rows: Rows, cfg: Mapping[str, Any]):
    fig, axes = new_figure(1, 2, width=8.0, height=3.8)
    ax_val, ax_err = axes[0]
    Ngrid = np.geomspace(min(cfg["N"]), max(cfg["N"]), 100)
    for i, (rho, d) in enumerate(cfg["cases"]):
        c = color(i)
        sim = sorted(
            select(rows, method="sim", quantity="mean_jobs", rho=rho, d=d), key=lambda r: r["N"]
        )
        mf = select(rows, method="mf", quantity="mean_jobs", rho=rho, d=d)[0]["value"]
        coef = select(rows, method="rmf", quantity="mean_jobs", rho=rho, d=d)[0]["rmf_coefficient"]
        ax_val.errorbar(
            [r["N"] for r in sim],
            [r["value"] for r in sim],
            yerr=[
                [r["value"] - r["ci_low"] for r in sim],
                [r["ci_high"] - r["value"] for r in sim],
            ],
            color=c,
            capsize=2,
            **METHOD_STYLE["sim"] | {"label": f"ρ={rho:g}, d={d}"},
        )
        ax_val.axhline(mf, color=c, **METHOD_STYLE["mf"] | {"label": None})
        ax_val.plot(Ngrid, mf + coef / Ngrid, color=c, **METHOD_STYLE["rmf"] | {"label": None})
        for method, marker in (("mf", "o"), ("rmf", "s")):
            errs = _errors(rows, rho, d, method)
            ls, mfc = ("--", c) if method == "mf" else (":", "white")
            ax_err.plot(
                [N for N, _, _ in errs],
                [max(abs(e), h) for _, e, h in errs],
                color=c,
                ls=ls,
                lw=0.8,
            )
            # Resolved errors with their CI; unresolved ones (|error| ≤ half-width) as upper
            # bounds at |error| + half-width, so no error bar runs off a log axis.
            ok = [(N, abs(e), h) for N, e, h in errs if abs(e) > h]
            if ok:
                ax_err.errorbar(
                    [N for N, _, _ in ok],
                    [e for _, e, _ in ok],
                    yerr=[h for _, _, h in ok],
                    color=c,
                    marker=marker,
                    mfc=mfc,
                    ls="none",
                    capsize=2,
                )
            bound = [(N, abs(e) + h) for N, e, h in errs if abs(e) <= h]
            if bound:
                ax_err.plot(
                    *zip(*bound, strict=True), color=c, marker="v", ls="none", mfc=mfc, alpha=0.7
                )
    n0 = min(cfg["N"])
    ax_err.plot(Ngrid, 1.0 * n0 / Ngrid, color="0.5", lw=0.8, ls="-.", label="∝ 1/N")
    ax_err.plot(Ngrid, 0.1 * (n0 / Ngrid) ** 2, color="0.5", lw=0.8, ls=(0, (1, 3)), label="∝ 1/N²")
    ax_err.plot([], [], color="k", marker="o", ls="--", label="|sim − mean field|")
    ax_err.plot([], [], color="k", marker="s", mfc="white", ls=":", label="|sim − refined MF|")
    ax_err.plot(
        [], [], color="k", marker="v", ls="none", mfc="white", label="upper bound (unresolved)"
    )
    ax_val.plot([], [], color="k", **METHOD_STYLE["mf"])
    ax_val.plot([], [], color="k", **METHOD_STYLE["rmf"])
    ax_val.set(
        xscale="log",
        xlabel="N (servers)",
        ylabel="E[jobs per server]",
        title="Mean jobs per server vs N",
    )
    ax_err.set(
        xscale="log",
        yscale="log",
        xlabel="N (servers)",
        ylabel="|error| in E[jobs per server]",
        title="Error of the approximations",
    )
    ax_val.legend(loc="upper right")
    fig.legend(*ax_err.get_legend_handles_labels(), loc="outside lower center", ncols=3)
    return fig


def _summary_accuracy(rows: Rows) -> Rows:
    out: Rows = []
    for s in sorted(
        select(rows, method="sim", quantity="mean_jobs"), key=lambda r: (r["rho"], r["d"], r["N"])
    ):
        key = {"rho": s["rho"], "d": s["d"], "N": s["N"]}
        mf = select(rows, method="mf", quantity="mean_jobs", **key)[0]["value"]
        rmf = select(rows, method="rmf", quantity="mean_jobs", **key)[0]["value"]
        half = (s["ci_high"] - s["ci_low"]) / 2
        out.append(
            {
                "ρ": s["rho"],
                "d": s["d"],
                "N": s["N"],
                "simulation": f"{s['value']:.5f} ± {half:.1e}",
                "mean field": f"{mf:.5f}",
                "refined MF": f"{rmf:.5f}",
                "sim − MF": f"{s['value'] - mf:+.2e}",
                "sim − RMF": f"{s['value'] - rmf:+.2e}",
            }
        )
    return out


register(
    Artifact(
        id="supermarket-accuracy",
        slug="supermarket",
        kind="figure + table",
        title="Finite-N accuracy of the mean field and the refined mean field",
        caption=(
            "Mean number of jobs per server against N: simulation (markers, 95% CI), mean field "
            "(dashed, N-independent) and refined mean field Σu_k + ΣV_k/N (dotted). Right: "
            "absolute error of each approximation against N on log–log axes, with 1/N and 1/N² "
            "guides."
        ),
        methods=("MF", "RMF", "SIM"),
        points=_accuracy_points,
        compute=_compute_accuracy,
        check=_check_accuracy,
        plot=_plot_accuracy,
        summary=_summary_accuracy,
        validate=_validate_accuracy,
        reconstructions=(
            "Simulation length per point is server_time/N so that every N gets about the same "
            "number of events.",
            "Error orders (ours): error(N) = sim − approximation is fitted as c·N^(−s) by "
            "weighted nonlinear least squares over every N of the sweep (weights from the "
            "simulation CIs; an unresolved N still bounds the curve), with the standard error "
            "of s. Mean field, error ∝ 1/N: s nearer 1 than 0 or 2 and its 95% interval "
            "excluding 0 and 2 (orders are integers: no tuned tolerance); control: the same "
            "fit judged against the wrong order 2. Refined mean field, error O(1/N²): the 95% "
            "interval of s reaches 2 and lies above 1; control: the same rule on the "
            "mean-field error.",
        ),
    )
)
