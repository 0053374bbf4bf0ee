"""``supermarket-accuracy``: finite-N accuracy of the mean field and the refined mean field.

Mean number of jobs per server against N — simulation, mean field and refined mean field —
and the error of each against N on log–log axes (1/N and 1/N²) (docs/models.md §S).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from scipy import optimize

from lbrepro.artifacts.registry import Artifact, Rows
from lbrepro.artifacts.supermarket.simulation import (
    arrival_rate,
    check_stable,
    mean_jobs_row,
    simulate_point,
    simulation_cost,
    simulation_memory,
)
from lbrepro.core.claims import Claim, make_claim
from lbrepro.core.ids import add_point, num
from lbrepro.core.io import select
from lbrepro.core.rows import pm, pm_text
from lbrepro.core.stats import Estimate
from lbrepro.core.verdicts import (
    AGREEMENT,
    Z95,
    Component,
    EmptyComparisonError,
    Verdict,
    agreement_margin,
    better,
    decide,
    estimate,
)
from lbrepro.models import supermarket as model
from lbrepro.plotting.intervals import legend, simulated
from lbrepro.plotting.style import METHOD_STYLE, color, derived, new_figure


def validate(cfg: Mapping[str, Any]) -> None:
    """Refuse an unstable load in any case, naming its key."""
    for i, (rho, _d) in enumerate(cfg["cases"]):
        check_stable(f"cases[{i}][0]", rho)


def points(cfg: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """One point per (case, N), each simulating about the same server-time (horizon ∝ 1/N)."""
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


def compute(p: dict[str, Any], seed: np.random.SeedSequence) -> Rows:
    """E[jobs/server] of one point: mean field, refined mean field and simulation."""
    rho, d, N = p["rho"], p["d"], p["N"]
    params = {"rho": rho, "d": d}
    rmf = model.refined(arrival_rate(rho), d)
    mf_jobs = model.mean_jobs(rmf.u)
    sim = simulate_point(p, seed)
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
        params | mean_jobs_row(sim, seed),
    ]


def _errors_along_n(rows: Rows, rho: float, d: int, method: str) -> list[tuple[int, float, float]]:
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
    sigma = np.array([h for _, _, h in errs]) / Z95
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


#: Margin of an error order: orders are integers, so an exponent agrees with one when it is
#: nearer it than either neighbour — half the distance to the near-miss order.
ORDER_MARGIN = 0.5


def order_verdict(
    s: float, se: float, order: int, detail: str = "", estimates: Sequence[Estimate] = ()
) -> Verdict:
    """The error decays as 1/N^order: the fitted exponent s agrees with ``order`` within ½.

    Equivalence on s's 95% interval (s ± 1.96·se): reproduced when it lies in
    (order − ½, order + ½), not reproduced when it lies wholly outside, else undecided.
    """
    hw = Z95 * se
    return decide(
        [
            Component("exponent (δ > −½)", s, hw, order - ORDER_MARGIN, "above"),
            Component("exponent (δ < ½)", s, hw, order + ORDER_MARGIN, "below"),
        ],
        expected=f"exponent {pm(order, ORDER_MARGIN, '', '')}",
        tolerance=f"95% CI [{s - hw:.3f}, {s + hw:.3f}] (se {se:.2g})",
        margin=ORDER_MARGIN,
        details=detail,
        estimates=estimates,
    )


def at_least_order_verdict(
    s: float, se: float, order: int, detail: str = "", estimates: Sequence[Estimate] = ()
) -> Verdict:
    """The error is O(1/N^order): the exponent's 95% interval lies above order − ½ (nearer
    ``order`` than the next slower order, or faster still)."""
    hw = Z95 * se
    return decide(
        [Component("exponent (δ > −½)", s, hw, order - ORDER_MARGIN, "above")],
        expected=f"exponent ≥ {order} − {ORDER_MARGIN}",
        tolerance=f"95% CI [{s - hw:.3f}, {s + hw:.3f}] (se {se:.2g})",
        margin=ORDER_MARGIN,
        details=detail,
        estimates=estimates,
    )


def _failed_fit(reason: str) -> Verdict:
    """An undecided verdict that says why the exponent could not be fitted."""
    return decide(
        [Component("exponent", 0.0, math.inf, 0.0, resolved=False)],
        expected="a fitted exponent",
        tolerance="—",
        details=reason,
    )


def _exponent_fit(rows: Rows, rho: float, d: int, method: str) -> tuple[float, float, str] | str:
    """(s, se, description) of the weighted fit of sim − method, or the reason it failed."""
    try:
        c, s, se = _power_fit(_errors_along_n(rows, rho, d, method))
    except EmptyComparisonError:
        raise
    except (RuntimeError, ValueError) as err:
        return f"fit failed: {err}"
    return (
        s,
        se,
        f"weighted fit c·N^(−s) to sim − {method}: c = {c:.3g}, s = {pm(s, se, '.3f', '.3f')}",
    )


def _error_listing(rows: Rows, rho: float, d: int, method: str) -> str:
    """The errors sim − method with their CIs at every N, as one line of claim details."""
    errs = _errors_along_n(rows, rho, d, method)
    return f"sim − {method} (±95%): " + ", ".join(
        f"N={N}: {pm(e, h, '+.2e', '.1e', 'tight')}" for N, e, h in errs
    )


def _sims(rows: Rows, rho: float, d: int) -> list[Estimate]:
    """The simulated E[jobs/server] of one case, sorted by N (their converged flags count)."""
    return [
        estimate(r)
        for r in sorted(
            select(rows, method="sim", quantity="mean_jobs", rho=rho, d=d), key=lambda r: r["N"]
        )
    ]


def run_labels(rows: Rows, rho: float, d: int) -> list[str]:
    """The point ids of one case's runs (diagnostics gate by them)."""
    Ns = sorted(r["N"] for r in select(rows, method="sim", quantity="mean_jobs", rho=rho, d=d))
    return [f"rho{num(rho)}-d{d}-N{N}" for N in Ns]


def _error_order_claims(rows: Rows, rho: float, d: int) -> list[Claim]:
    """MF error Θ(1/N) (control: the near-miss order 1/N²) and RMF error O(1/N²) (control:
    the near-miss order 1/N on the same fit)."""
    mf, rmf = _exponent_fit(rows, rho, d, "mf"), _exponent_fit(rows, rho, d, "rmf")
    sims = _sims(rows, rho, d)

    def judge(fit: tuple[float, float, str] | str, rule: Any, order: int) -> Verdict:
        """Apply an order rule to a fit, or say why the fit failed (undecided)."""
        if isinstance(fit, str):
            return _failed_fit(fit)
        return rule(fit[0], fit[1], order, fit[2], sims)

    runs = run_labels(rows, rho, d)
    return [
        make_claim(
            f"ρ = {rho:g}, d = {d}: the mean field error on E[jobs/server] decays as 1/N",
            judge(mf, order_verdict, 1),
            control=("the same fit judged against order 1/N²", judge(mf, order_verdict, 2)),
            distance="the neighbouring order: 1 from the prediction, 2 margins (½ each)",
            details=_error_listing(rows, rho, d, "mf"),
            runs=runs,
        ),
        make_claim(
            f"ρ = {rho:g}, d = {d}: the refined mean field error on E[jobs/server] is O(1/N²) "
            "(its fitted exponent is nearer 2, or above, than 1)",
            judge(rmf, at_least_order_verdict, 2),
            control=(
                "the same fit judged against the next slower order, 1/N (exponent 1 ± ½)",
                judge(rmf, order_verdict, 1),
            ),
            distance="the neighbouring order: 1 from the prediction, 2 margins (½ each)",
            source="lbrepro",
            details=_error_listing(rows, rho, d, "rmf"),
            runs=runs,
        ),
    ]


def _absolute_errors(rows: Rows, rho: float, d: int, method: str) -> list[Estimate]:
    """|sim − method| per N as estimates with the simulation's CI (and its run's flags)."""
    out = []
    for e, (N, err, h) in zip(
        _sims(rows, rho, d), _errors_along_n(rows, rho, d, method), strict=True
    ):
        a = abs(err)
        out.append(Estimate(a, a - h, a + h, h, e.batches, N, converged=e.converged))
    return out


def _accuracy_claim(rows: Rows, rho: float, d: int) -> Claim:
    """RMF at least as accurate as MF at every N (non-inferiority), its near miss the reverse.

    The non-inferiority margin δ is the default 2% agreement margin of the mean field's
    E[jobs/server]: a difference of accuracy below what the report calls agreement.
    """
    mf, rmf = _absolute_errors(rows, rho, d, "mf"), _absolute_errors(rows, rho, d, "rmf")
    labels = [f"N={e.N}" for e in mf]
    m_jobs = select(rows, method="mf", quantity="mean_jobs", rho=rho, d=d)[0]["value"]
    delta = agreement_margin(m_jobs)
    gain = max(a.mean - b.mean for a, b in zip(mf, rmf, strict=True))
    return make_claim(
        f"ρ = {rho:g}, d = {d}: the refined mean field is at least as accurate as the "
        f"mean field at every N (|sim − rmf| not above |sim − mf| by more than {AGREEMENT:.0%} "
        "of E[jobs/server])",
        better(rmf, mf, min_effect=delta, strict=False, labels=labels),
        control=(
            "the mean field at least as accurate as the refined mean field at every N",
            better(mf, rmf, min_effect=delta, strict=False, labels=labels),
        ),
        distance=f"the refined mean field's largest gain |sim − mf| − |sim − rmf| = "
        f"{gain:.3g}, {gain / delta:.1f} margins (δ = {delta:.3g})",
        source="lbrepro",
        runs=run_labels(rows, rho, d),
    )


def check(rows: Rows, cfg: Mapping[str, Any]) -> list[Claim]:
    """Per case: the error orders of MF and RMF, and RMF at least as accurate as MF at every N."""
    claims: list[Claim] = []
    for rho, d in cfg["cases"]:
        claims += _error_order_claims(rows, rho, d)
        claims.append(_accuracy_claim(rows, rho, d))
    return claims


def plot(rows: Rows, cfg: Mapping[str, Any]) -> Any:
    """E[jobs/server] against N per case, and |error| of MF and RMF against N on log–log axes."""
    fig, axes = new_figure(1, 2, width=8.0, height=3.8)
    ax_val, ax_err = axes[0]
    ax_err.set_yscale("log")
    Ngrid = np.geomspace(min(cfg["N"]), max(cfg["N"]), 100)
    for i, (rho, d) in enumerate(cfg["cases"]):
        c = color(i)
        sim = sorted(
            select(rows, method="sim", quantity="mean_jobs", rho=rho, d=d), key=lambda r: r["N"]
        )
        mf = select(rows, method="mf", quantity="mean_jobs", rho=rho, d=d)[0]["value"]
        coef = select(rows, method="rmf", quantity="mean_jobs", rho=rho, d=d)[0]["rmf_coefficient"]
        simulated(
            ax_val,
            [r["N"] for r in sim],
            [r["value"] for r in sim],
            [r.get("ci_low") for r in sim],
            [r.get("ci_high") for r in sim],
            color=c,
            label=f"ρ={rho:g}, d={d}: simulation",
            converged=[r.get("converged") for r in sim],
        )
        ax_val.axhline(mf, color=c, **METHOD_STYLE["mf"] | {"label": None})
        (rmf_line,) = ax_val.plot(
            Ngrid, mf + coef / Ngrid, color=c, **METHOD_STYLE["rmf"] | {"label": None}
        )
        derived("refined mean field mf + V/N over N, from mean_jobs and rmf_coefficient", rmf_line)
        for method, marker in (("mf", "o"), ("rmf", "s")):
            errs = _errors_along_n(rows, rho, d, method)
            ls = "--" if method == "mf" else ":"
            (join,) = ax_err.plot(
                [N for N, _, _ in errs],
                [max(abs(e), h) for _, e, h in errs],
                color=c,
                ls=ls,
                lw=0.8,
            )
            derived(f"max(|sim − {method}|, CI half-width) of mean_jobs", join)
            # |error| with the simulation's CI; where it holds 0 (unresolved) the bar runs off
            # the log axis to a caret. The line joins max(|error|, half-width).
            errors = simulated(
                ax_err,
                [N for N, _, _ in errs],
                [abs(e) for _, e, _ in errs],
                [abs(e) - h for _, e, h in errs],
                [abs(e) + h for _, e, h in errs],
                color=c,
                marker=marker,
                converged=[r.get("converged") for r in sim],  # errs run over sim, by N
            )
            derived(f"|sim − {method}| of mean_jobs", errors)
    n0 = min(cfg["N"])
    derived(
        "guide",
        *ax_err.plot(Ngrid, 1.0 * n0 / Ngrid, color="0.5", lw=0.8, ls="-.", label="∝ 1/N"),
        *ax_err.plot(
            Ngrid, 0.1 * (n0 / Ngrid) ** 2, color="0.5", lw=0.8, ls=(0, (1, 3)), label="∝ 1/N²"
        ),
    )
    ax_err.plot([], [], color="k", marker="o", mfc="none", ls="--", label="|sim − mean field|")
    ax_err.plot([], [], color="k", marker="s", mfc="none", ls=":", label="|sim − refined MF|")
    ax_err.plot([], [], color="k", marker="v", ls="none", label="CI reaches 0 (unresolved)")
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
    legend(fig, where="below", ncols=3)
    return fig


def summary(rows: Rows) -> Rows:
    """One line per (ρ, d, N): simulation, mean field, refined mean field and both errors."""
    out: Rows = []
    for s in sorted(
        select(rows, method="sim", quantity="mean_jobs"), key=lambda r: (r["rho"], r["d"], r["N"])
    ):
        key = {"rho": s["rho"], "d": s["d"], "N": s["N"]}
        mf = select(rows, method="mf", quantity="mean_jobs", **key)[0]["value"]
        rmf = select(rows, method="rmf", quantity="mean_jobs", **key)[0]["value"]
        out.append(
            {
                "ρ": s["rho"],
                "d": s["d"],
                "N": s["N"],
                "simulation": pm_text(s, ".5f", ".1e"),
                "mean field": f"{mf:.5f}",
                "refined MF": f"{rmf:.5f}",
                "sim − MF": f"{s['value'] - mf:+.2e}",
                "sim − RMF": f"{s['value'] - rmf:+.2e}",
            }
        )
    return out


ARTIFACT = Artifact(
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
    points=points,
    cost=simulation_cost,
    memory=simulation_memory("cases"),
    compute=compute,
    check=check,
    plot=plot,
    summary=summary,
    validate=validate,
    reconstructions=(
        "Simulation length per point is server_time/N so that every N gets about the same "
        "number of events.",
        "Error orders (ours): error(N) = sim − approximation is fitted as c·N^(−s) by "
        "weighted nonlinear least squares over every N of the sweep (weights from the "
        "simulation CIs; an unresolved N still bounds the curve), with the standard error "
        "of s. Orders are integers, so the margin is half the distance to the neighbouring "
        "order (½). Mean field, error ∝ 1/N: the 95% interval of s inside (½, 3/2); "
        "control, the near-miss order 2 by the same rule. Refined mean field, error "
        "O(1/N²): the 95% interval of s above 3/2; control, the near-miss order 1 "
        "(interval inside (½, 3/2)) on the same fit. A fit that fails is undecided.",
        "Refined at least as accurate (ours): non-inferiority of |sim − rmf| against "
        f"|sim − mf| at every N with the default {AGREEMENT:.0%} agreement margin of the mean "
        "field's E[jobs/server] as δ; control, the near miss of equal accuracy: the mean "
        "field at least as accurate as the refined one by the same rule (both hold where the "
        "two are within δ).",
    ),
)
