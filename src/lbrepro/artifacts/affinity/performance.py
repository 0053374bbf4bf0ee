"""Performance of CM(d1) against JSQ(d1) and RA, shared by Figs. 6 and 7
(affinity-queue-length and affinity-waiting): one computation, two views."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from lbrepro.artifacts.affinity.config_checks import check_loads_and_d1, service_rates
from lbrepro.artifacts.affinity.judging import (
    PERF_FLOOR,
    batches_converged,
    neighbour_sign,
    perf_margin,
    remainder,
)
from lbrepro.artifacts.affinity.rows import table_row, with_contract_columns
from lbrepro.artifacts.registry import Rows
from lbrepro.core.claims import Claim, make_claim
from lbrepro.core.ids import add_point, num
from lbrepro.core.io import select
from lbrepro.core.packing import queue_simulation_seconds, simulation_seconds
from lbrepro.core.rows import estimate_row, pm
from lbrepro.core.stats import Estimate, batch_means_ci
from lbrepro.core.verdicts import EmptyComparisonError, agrees, estimate
from lbrepro.judging.neighbours import NEIGHBOUR, neighbour_load
from lbrepro.meanfield.closed_forms import doubly_exponential_tail
from lbrepro.models import affinity as model
from lbrepro.models import supermarket
from lbrepro.plotting.intervals import legend, sim_handle, simulated
from lbrepro.plotting.style import color, new_figure
from lbrepro.sim.affinity import EVENTS_PER_SECOND, simulate_affinity

PERF_KEYS = (
    "cm_wait_jobs",
    "cm_wait_var",
    "cm_wait_time",
    "cm_wait_time_I",
    "cm_wait_time_II",
    "jsq_wait_jobs",
    "jsq_wait_var",
    "jsq_wait_time",
    "ra_wait_jobs",
    "ra_wait_var",
    "ra_wait_time",
)

#: The quantities of the formula grid (not of the formulas written beside a simulation).
GRID = frozenset(key.split("_", 1)[1] for key in PERF_KEYS)
#: The CM quantities a simulation is judged on, against the fixed-point formula.
CM_QUANTITIES = ("wait_jobs", "wait_var", "wait_time", "wait_time_I", "wait_time_II")
#: Levels of JSQ(d1)'s tail summed for the variance of the total jobs per server.
JSQ_LEVELS = 199

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def points(cfg: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """One job for the formula grid and one per simulated load."""
    mu1, mu2 = service_rates(cfg)
    base = {"mu1": mu1, "mu2": mu2, "d1": cfg["d1"]}
    pts = {"cf": base | {"kind": "cf", "lam": list(cfg["lam_grid"])}}
    for lam in cfg["lam_sim"]:
        params = base | {
            "kind": "sim",
            "lam": lam,
            "N": cfg["N"],
            "horizon": cfg["horizon"],
            "warmup": cfg["warmup"],
            "batches": cfg["batches"],
        }
        add_point(pts, f"sim-lam{num(lam)}", params, "lam_sim")
    return pts


def simulation_cost(p: Mapping[str, Any]) -> float:
    """Estimated seconds of a simulation point: arrivals and departures, 2λN per unit time."""
    return queue_simulation_seconds(p["lam"], p["N"], p["horizon"], EVENTS_PER_SECOND)


def cost(p: Mapping[str, Any]) -> float:
    """Estimated seconds of a point: the formula grid costs its start-up only."""
    return simulation_cost(p) if p["kind"] == "sim" else simulation_seconds(0.0, EVENTS_PER_SECOND)


def _cm_batch_measures(sim: Any) -> dict[str, np.ndarray]:
    """Per-batch waiting measures of a CM simulation (Little's law per type)."""
    L = sim.batch_x.shape[1]
    i = np.arange(L)[:, None]
    j = np.arange(2)[None, :]
    w = np.maximum(i + j - 1, 0)  # waiting jobs at a server with (i, j)
    bx = sim.batch_x
    mean = (bx * w).sum(axis=(1, 2))
    var = (bx * w**2).sum(axis=(1, 2)) - mean**2
    wait_i = (bx * np.maximum(i - 1, 0) * np.ones((1, 2))).sum(axis=(1, 2))
    wait_ii = bx[:, 1:, 1].sum(axis=1)
    scale = sim.N * sim.batch_length
    rate_i = sim.arrivals_type1 / scale
    rate_ii = sim.arrivals_type2 / scale
    return {
        "cm_wait_jobs": mean,
        "cm_wait_var": var,
        "cm_wait_time": mean / (rate_i + rate_ii),
        "cm_wait_time_I": wait_i / rate_i,
        "cm_wait_time_II": np.where(rate_ii > 0, wait_ii / np.maximum(rate_ii, 1e-300), 0.0),
    }


def jsq_jobs_var(lam: float, mu1: float, d1: int) -> float:
    """Var(total jobs per server) under JSQ(d1) at its fixed point: n with
    P(n ≥ k) = ρ^{(d^k−1)/(d−1)}, ρ = λ/μ1."""
    k = np.arange(1, JSQ_LEVELS + 1)
    tail = doubly_exponential_tail(lam / mu1, d1, JSQ_LEVELS)[1:]  # P(n ≥ k), k ≥ 1
    mean = tail.sum()
    return float(((2 * k - 1) * tail).sum() - mean**2)


def formula_rows(lam: float, mu2: float, mu1: float, d1: int) -> Rows:
    """The simulation claims' references at a simulated λ: each CM quantity's fixed-point
    formula (``<q>_fixed_point``) and, for the control, the same at the neighbouring load
    (``<q>_neighbour``)."""
    lam_c = neighbour_load(lam)
    perf, near = model.performance(lam, mu2, mu1, d1), model.performance(lam_c, mu2, mu1, d1)
    rows: Rows = []
    for q in CM_QUANTITIES:
        rows.append(table_row("cf", f"{q}_fixed_point", perf["cm_" + q], policy="cm", lam=lam,
                              d1=d1))  # fmt: skip
        rows.append(table_row("cf", f"{q}_neighbour", near["cm_" + q], policy="cm", lam=lam,
                              d1=d1, lam_neighbour=lam_c))  # fmt: skip
    return rows


def compute(p: dict[str, Any], seed: np.random.SeedSequence) -> Rows:
    """The formulas on the λ grid (with JSQ(d1)'s variance of the total jobs, ``jobs_var``), or
    the CM (N and N/2) and JSQ(d1) simulations at one λ with the formulas they are judged by."""
    mu1, mu2, d1 = p["mu1"], p["mu2"], p["d1"]
    rows: Rows = []
    if p["kind"] == "cf":
        for lam in p["lam"]:
            perf = model.performance(lam, mu2, mu1, d1)
            for key in PERF_KEYS:
                policy, quantity = key.split("_", 1)
                rows.append(table_row("cf", quantity, perf[key], policy=policy, lam=lam, d1=d1))
        rows += [
            table_row("cf", "jobs_var", jsq_jobs_var(lam, mu1, d1), policy="jsq", lam=lam, d1=d1)
            for lam in p["lam"]
        ]
        return rows
    lam, N = p["lam"], p["N"]
    cm_seed, jsq_seed = seed.spawn(2)
    # CM at N and, to measure the O(1/N) remainder at N, at N/2 (same horizon).
    half_seed = seed.spawn(1)[0]
    for n_srv, s in ((N, cm_seed), (N // 2, half_seed)):
        sim = simulate_affinity(
            lam,
            mu2,
            mu1,
            d1,
            n_srv,
            horizon=p["horizon"],
            warmup=p["warmup"],
            batches=p["batches"],
            start="empty",
            seed=s,
        )
        converged = batches_converged(sim.batch_x[:, :, 1].sum(axis=1))
        for key, vals in _cm_batch_measures(sim).items():
            # the run's batches, flagged by the affinity simulator's von Neumann test
            est = replace(batch_means_ci(vals), batches=p["batches"], converged=converged)
            rows.append(
                table_row(
                    "sim",
                    key.split("_", 1)[1],
                    **estimate_row(est, N=n_srv, seed=seed.entropy),
                    policy="cm",
                    lam=lam,
                    d1=d1,
                    events=sim.events,
                )
            )
    jsq = supermarket.simulate(
        lam=lam / mu1,
        d=d1,
        N=N,
        horizon=p["horizon"] * mu1,
        warmup=p["warmup"] * mu1,
        seed=jsq_seed,
        batches=p["batches"],
    )
    u = np.asarray(jsq.u_all)
    k = np.arange(u.size)
    w = u[2:]  # P(waiting ≥ m) = P(n ≥ m + 1)
    m = k[1:-1]
    mean = float(w.sum())
    var = float(((2 * m - 1) * w).sum()) - mean**2
    # mean waiting jobs = E[jobs] − P(busy): its CI from the mean-jobs CI (same batches).
    half = (jsq.mean_jobs_ci[1] - jsq.mean_jobs_ci[0]) / 2
    run = {"batches": int(jsq.batches), "N": N, "seed": seed.entropy}
    for quantity, value, ci in (
        ("wait_jobs", mean, (mean - half, mean + half)),
        ("wait_var", var, None),
        ("wait_time", mean / lam, ((mean - half) / lam, (mean + half) / lam)),
    ):
        if ci is None:  # no batch-means CI for the variance: a path value
            cells = {"value": value, **run, "converged": bool(jsq.converged)}
        else:
            est = Estimate(value, *ci, (ci[1] - ci[0]) / 2, converged=bool(jsq.converged), **run)
            cells = estimate_row(est)
        rows.append(
            table_row(
                "sim" if ci is not None else "path",
                quantity,
                **cells,
                policy="jsq",
                lam=lam,
                d1=d1,
            )
        )
    rows += formula_rows(lam, mu2, mu1, d1)
    return with_contract_columns(rows, seed, N)


def formula_values(rows: Rows, policy: str, quantity: str) -> dict[float, float]:
    """The closed-form values of one policy's quantity, keyed by λ."""
    return {
        r["lam"]: r["value"] for r in select(rows, method="cf", policy=policy, quantity=quantity)
    }


def exact_value(rows: Rows, quantity: str, lam: float) -> float:
    """The exact (formula) CM value of ``quantity`` at the simulated load λ."""
    found = select(rows, method="cf", policy="cm", quantity=quantity, lam=lam)
    if not found:
        raise EmptyComparisonError(f"affinity: no {quantity} row at λ = {lam:g}")
    return float(found[0]["value"])


def simulation_claims(
    rows: Rows, cfg: Mapping[str, Any], quantities: tuple[str, ...]
) -> list[Claim]:
    """CM simulation against the fixed-point formulas (N = ∞ values), one claim per quantity.

    The N-server estimate agrees with the formula within the agreement margin (2% relative,
    at least PERF_FLOOR) at every simulated λ. The formula is an N = ∞ value: the O(1/N)
    remainder at N, measured as x_{N/2} − x_N (x_N = x_∞ + c/N), is stated beside the margin
    it must stay well inside. Control: the formula at the neighbouring load (neighbour_load),
    its distance stated in margins.
    """
    sims = select(rows, method="sim", policy="cm")
    if not sims:
        raise EmptyComparisonError("affinity: no CM simulation rows")
    Ns = sorted({r["N"] for r in sims})
    N, Nh = Ns[-1], Ns[0]
    if Nh == N:
        raise EmptyComparisonError("affinity: the remainder needs runs at N and N/2")
    lams = sorted({r["lam"] for r in sims})
    sign = neighbour_sign(lams)
    claims: list[Claim] = []
    for q in quantities:
        by = {(r["N"], r["lam"]): estimate(r) for r in sims if r["quantity"] == q}
        ref = [exact_value(rows, f"{q}_fixed_point", lam) for lam in lams]
        ref_c = [exact_value(rows, f"{q}_neighbour", lam) for lam in lams]
        margins = [perf_margin(r) for r in ref]
        labels = [f"λ={lam:g}" for lam in lams]
        offsets = "; ".join(
            f"λ={lam:g}: N={n} "
            + pm(by[(n, lam)].mean - r, by[(n, lam)].half_width, "+.4g", ".2g", "paren")
            for lam, r in zip(lams, ref, strict=True)
            for n in (Nh, N)
        )
        sep = [abs(a - b) / m for a, b, m in zip(ref, ref_c, margins, strict=True)]
        est = [by[(N, lam)] for lam in lams]
        rem = [abs(remainder(by[(N, lam)], by[(Nh, lam)])) for lam in lams]
        claims.append(
            make_claim(
                f"CM({cfg['d1']}) {q}: the simulation with N = {N} agrees with the fixed-point "
                f"formula within 2% (at least {PERF_FLOOR:g}) at every simulated λ (the O(1/N) "
                f"remainder, measured from N = {Nh}, stated)",
                agrees(est, ref, margin=margins, labels=labels, what="simulation − formula"),
                control=(
                    f"the same agreement with the formula at the neighbouring loads λ {sign} "
                    f"{NEIGHBOUR:g}",
                    agrees(est, ref_c, margin=margins, labels=labels),
                ),
                distance=f"Δλ = {sign}{NEIGHBOUR:g}: the formula moves by {min(sep):.3g}–"
                f"{max(sep):.3g} margins",
                source="lbrepro",
                details=f"O(1/N) remainder at N = {N} (x_N/2 − x_N): {max(rem):.3g} at most, "
                f"{max(r / m for r, m in zip(rem, margins, strict=True)):.2g} margins; "
                f"offsets sim − formula: {offsets}",
                runs=[f"sim-lam{num(lam)}" for lam in lams],
                finding="affinity-type-one-remainder" if q == "wait_time_I" else None,
            )
        )
    return claims


def loads_above_mu2(rows: Rows, cfg: Mapping[str, Any]) -> list[float]:
    """The formula grid's loads in (μ2, μ1), where CM sits at its queueing fixed point."""
    mu1, mu2 = service_rates(cfg)
    grid = {r["lam"] for r in select(rows, method="cf", policy="cm") if r["quantity"] in GRID}
    lams = [lam for lam in sorted(grid) if mu2 < lam < mu1]
    if not lams:
        raise EmptyComparisonError("affinity: no λ of the formula grid lies in (μ2, μ1)")
    return lams


def plot_panels(rows: Rows, cfg: Mapping[str, Any], groups: tuple, ymax: float) -> Figure:
    """One panel per (title, ylabel, curves); curves = (policy, quantity, label) with fixed-point
    lines and simulation markers (95% CI). Linear axes capped at ``ymax`` (RA diverges)."""
    d = cfg["d1"]
    fig, axes = new_figure(1, len(groups), width=4.4 * len(groups), height=3.6)
    for ax, (title, ylabel, curves) in zip(axes[0], groups, strict=True):
        for c, (policy, quantity, label) in enumerate(curves):
            cf = sorted(
                select(rows, method="cf", policy=policy, quantity=quantity), key=lambda r: r["lam"]
            )
            ax.plot(
                [r["lam"] for r in cf],
                [r["value"] for r in cf],
                color=color(c),
                label=label.format(d=d),
            )
            sim = [
                r
                for r in select(rows, method="sim", policy=policy, quantity=quantity)
                if r["N"] == cfg["N"]
            ]
            if sim:
                simulated(
                    ax,
                    [r["lam"] for r in sim],
                    [r["value"] for r in sim],
                    [r.get("ci_low") for r in sim],
                    [r.get("ci_high") for r in sim],
                    color=color(c),
                    converged=[r.get("converged") for r in sim],
                )
        ax.add_line(sim_handle(f"simulation, N = {cfg['N']} (95% CI)"))
        ax.set(
            xlabel="arrival rate λ per server (μ1 = 1)",
            ylabel=ylabel,
            title=title,
            ylim=(0, ymax),
        )
    legend(fig, where="below", ncols=3)
    return fig


def summary_of(quantities: tuple[str, ...]) -> Callable[[Rows], Rows]:
    """The report's summary function for these quantities: simulation beside the fixed point."""

    def summary(rows: Rows) -> Rows:
        """Estimates at the largest N beside their fixed-point values, per λ and policy."""
        out = []
        for r in sorted(select(rows, method="sim"), key=lambda r: (r["lam"], r["policy"])):
            if r["quantity"] not in quantities:
                continue
            if r["N"] != max(q["N"] for q in rows if q["method"] == "sim"):
                continue  # the N/2 run only measures the O(1/N) remainder
            cf = select(rows, method="cf", policy=r["policy"], quantity=r["quantity"], lam=r["lam"])
            ci = f" [{r['ci_low']:.4f}, {r['ci_high']:.4f}]" if r.get("ci_low") is not None else ""
            out.append(
                {
                    "λ": r["lam"],
                    "policy": r["policy"],
                    "quantity": r["quantity"],
                    f"simulation N={r['N']} (95% CI)": f"{r['value']:.4f}{ci}",
                    "fixed point": f"{cf[0]['value']:.4f}" if cf else "—",
                }
            )
        return out

    return summary


def validate(cfg: Mapping[str, Any]) -> None:
    """The validate function of a performance section: the grid's and the simulated loads,
    each error naming the list the load came from (``lam_sim[1]``)."""
    check_loads_and_d1({**cfg, "lam": list(cfg["lam_grid"])}, "lam_grid")
    check_loads_and_d1({**cfg, "lam": list(cfg["lam_sim"])}, "lam_sim")
