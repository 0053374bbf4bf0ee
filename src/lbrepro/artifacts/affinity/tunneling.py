"""affinity-tunneling: finite-N switching between the two quasi-stable states."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from lbrepro.artifacts.affinity import estimates
from lbrepro.artifacts.affinity.config_checks import MU2, service_rates, validate_with_hysteresis
from lbrepro.artifacts.affinity.judging import SMALL_D1_RATIO, exact_verdict, grows
from lbrepro.artifacts.affinity.reconstructions import ASSIGNMENT_NOTE, PRIMARY_NOTE, TUNNELING_NOTE
from lbrepro.artifacts.affinity.rows import (
    SLUG,
    estimate_table_row,
    format_or_na,
    table_row,
    with_contract_columns,
)
from lbrepro.artifacts.registry import Artifact, Rows
from lbrepro.core.claims import Claim, make_claim
from lbrepro.core.ids import add_point
from lbrepro.core.io import select
from lbrepro.core.rows import NO_CI, not_converged
from lbrepro.core.stats import Estimate, kaplan_meier_mean, t_quantile
from lbrepro.core.verdicts import EmptyComparisonError, Verdict
from lbrepro.models import affinity as model
from lbrepro.plotting.intervals import legend, simulated
from lbrepro.plotting.style import color, new_figure
from lbrepro.sim.affinity import residence_times, simulate_affinity

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def points(cfg: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """One job per long-path N and per first-exit N (from empty, from the queueing state)."""
    mu1, mu2 = service_rates(cfg)
    keep = ("lam", "d1", "horizon", "dt_snap", "low", "high", "t_trace")
    pts: dict[str, dict[str, Any]] = {}
    for N in cfg["N"]:
        add_point(pts, f"N{N}", {k: cfg[k] for k in keep} | {"N": N, "mu1": mu1, "mu2": mu2}, "N")
    for N in cfg.get("N_exit", []):
        params = {k: cfg[k] for k in keep} | {
            "N": N,
            "mu1": mu1,
            "mu2": mu2,
            "exit": True,
            "reps": cfg["exit_reps"],
            "exit_cap": cfg["exit_cap"],
        }
        add_point(pts, f"exit-N{N}", params, "N_exit")
    for N in cfg.get("N_exit_queueing", []):
        params = {k: cfg[k] for k in keep} | {
            "N": N,
            "mu1": mu1,
            "mu2": mu2,
            "qexit": True,
            "reps": cfg["exit_reps"],
            "exit_cap": cfg["exit_cap_queueing"],
        }
        add_point(pts, f"qexit-N{N}", params, "N_exit_queueing")
    return pts


def _no_queueing_exit_rows(p: dict[str, Any], seed: np.random.SeedSequence) -> Rows:
    """First exit times from the no-queueing state, starting empty (censored at the cap)."""
    times = [
        sim.stopped_at if sim.stopped_at == sim.stopped_at else math.inf
        for sim in _exit_runs(p, seed, "empty", stop_type2_fraction=p["high"])
    ]
    return _capped_mean_rows(times, p["exit_cap"], "exit_time", p["N"], seed.entropy)


def _exit_runs(
    p: dict[str, Any], seed: np.random.SeedSequence, start: str, **stop: Any
) -> list[Any]:
    """The ``reps`` runs of a first-exit point, each with its own child stream, up to the cap."""
    return [
        simulate_affinity(
            p["lam"], p["mu2"], p["mu1"], p["d1"], p["N"], horizon=p["exit_cap"], batches=1,
            start=start, seed=child, **stop,
        )
        for child in seed.spawn(p["reps"])
    ]  # fmt: skip


def _capped_mean_rows(times: list[float], cap: float, quantity: str, N: int, seed: Any) -> Rows:
    """The mean of min(T, cap) over replications with its Student-t 95% CI: a lower bound of
    E[T] when runs are censored (the censored count is in the row)."""
    capped = np.minimum(np.asarray(times, dtype=float), cap)
    n = len(capped)
    mean = float(capped.mean())
    half = (
        float(t_quantile(0.975, n - 1) * capped.std(ddof=1) / math.sqrt(n)) if n >= 2 else math.nan
    )
    # independent replications: the interval is honest (converged)
    est = Estimate.from_interval(mean, mean - half, mean + half, batches=n, N=N, seed=seed)
    return [
        estimate_table_row(
            "sim",
            quantity,
            est,
            censored=int(sum(not math.isfinite(t) for t in times)),
            reps=n,
            cap=cap,
        )
    ]


def _queueing_exit_rows(p: dict[str, Any], seed: np.random.SeedSequence) -> Rows:
    """First exit times from the queueing state, starting with a type-II job at every server:
    the first snapshot at which the fraction of servers with a type-II job is ≤ ``low``
    (censored at the cap; the simulator cannot stop on a downward crossing, so every run lasts
    the cap)."""
    snap = np.arange(0.0, p["exit_cap"], p["dt_snap"])
    times = []
    for sim in _exit_runs(p, seed, "type2", snap_times=snap):
        below = np.nonzero(sim.snap_type2 <= p["low"])[0]
        times.append(float(snap[below[0]]) if below.size else math.inf)
    return _capped_mean_rows(times, p["exit_cap"], "queueing_exit_time", p["N"], seed.entropy)


def compute(p: dict[str, Any], seed: np.random.SeedSequence) -> Rows:
    """One point: first exits from empty, from the queueing state, or one long path."""
    if p.get("exit"):
        return _no_queueing_exit_rows(p, seed)
    if p.get("qexit"):
        return _queueing_exit_rows(p, seed)
    N = p["N"]
    snap = np.arange(0.0, p["horizon"], p["dt_snap"])
    sim = simulate_affinity(
        p["lam"],
        p["mu2"],
        p["mu1"],
        p["d1"],
        N,
        horizon=p["horizon"],
        batches=1,
        start="empty",
        seed=seed,
        snap_times=snap,
    )
    h = sim.snap_type2
    stays = residence_times(snap, h, p["low"], p["high"])
    rows: Rows = []
    for name, key, res in (("no-queueing", "low", stays.low), ("queueing", "high", stays.high)):
        n = len(res)
        # The stay the path was still in at the end is right-censored: counted for the time
        # seen (Kaplan–Meier), not dropped. Stays are independent (strong Markov property at
        # each switch): Student's t on the complete stays (coverage: test_kaplan_meier.py).
        cut = [stays.last[1]] if stays.last is not None and stays.last[0] == key else []
        if n:
            mean, se, open_above = kaplan_meier_mean(res + cut, [True] * n + [False] * len(cut))
        else:
            mean, se, open_above = math.nan, math.nan, bool(cut)
        half = float(t_quantile(0.975, n - 1)) * se if n >= 2 else math.nan
        est = Estimate.from_interval(
            mean, mean - half, mean + half, batches=n, N=N, seed=seed.entropy
        )
        rows.append(
            estimate_table_row(
                "sim" if n >= 2 else "path",  # one residence gives no CI
                "residence",
                est,
                state=name,
                count=n,
                # 1: the longest stay was cut off, the mean a lower bound (judging.exit_bounds).
                censored=int(open_above),
                censored_stays=len(cut),
                switches=stays.switches,
                horizon=p["horizon"],
            )
        )
    rows.append(table_row("path", "time_fraction_queueing", float(np.mean(h >= 0.5)), N=N))
    # The tunneling claim's control: the switches of the N = ∞ system (the fluid limit).
    t_end, switches = _fluid_switches(p)
    rows.append(table_row("mf", "fluid_switches", switches, N=N, t_end=t_end))
    every = max(1, round(1.0 / p["dt_snap"]))
    for t, v in zip(snap[::every], h[::every], strict=True):
        if t <= p["t_trace"]:
            rows.append(table_row("path", "type2_fraction", float(v), t=float(t), N=N))
    return with_contract_columns(rows, seed, N)


#: The fluid limit's path (the tunneling control) runs from empty up to the horizon, at most
#: FLUID_T_END time units (it settles long before), recorded at FLUID_RECORDS times.
FLUID_T_END = 500.0
FLUID_RECORDS = 1001


def _fluid_switches(p: Mapping[str, Any]) -> tuple[float, int]:
    """(t_end, switches) of the N = ∞ system, the fluid limit from empty, counted with the
    point's hysteresis thresholds: the tunneling claim's control."""
    K = model.K_DEFAULT
    t_end = min(float(p["horizon"]), FLUID_T_END)
    times, tr = model.fluid_trajectory(
        model.start_state("empty", K),
        p["lam"],
        p["mu2"],
        p["mu1"],
        p["d1"],
        t_end=t_end,
        n_record=FLUID_RECORDS,
        K=K,
    )
    switches = residence_times(times, tr[:, :, 1].sum(axis=1), p["low"], p["high"]).switches
    return t_end, int(switches)


def check(rows: Rows, cfg: Mapping[str, Any]) -> list[Claim]:
    """Residence times grow with N (first exits; long paths: finite-N); the smallest N switches."""
    d1 = cfg["d1"]
    small = f"d1/N ≤ {SMALL_D1_RATIO:g}"
    hyst = (
        f"λ = {cfg['lam']}, d1 = {d1}; hysteresis on the fraction of servers with a type-II job: "
        f"≤ {cfg['low']} no-queueing, ≥ {cfg['high']} queueing"
    )
    claims = []
    # The same trend test for the first exits from each quasi-stable state. Capped runs make a
    # point a lower bound (judging.grows): it can confirm an increase, never decide against it.
    for quantity, state, start, show_cap in (
        ("exit_time", "no-queueing", "empty", False),
        ("queueing_exit_time", "queueing", "a type-II job everywhere", True),
    ):
        runs = sorted(
            (r for r in select(rows, quantity=quantity) if d1 / r["N"] <= SMALL_D1_RATIO),
            key=lambda r: r["N"],
        )
        v, c = grows(runs)
        censored = ", ".join(
            f"N={r['N']}: {r['censored']}/{r['reps']}"
            + (f" (cap {r['cap']:g})" if show_cap else "")
            for r in runs
        )
        claims.append(
            make_claim(
                f"The residence time near the {state} state increases with N ({small}): the mean "
                f"first exit time from {start} increases with N (censored runs as lower bounds)",
                v,
                control=("the first exit time is flat in N", c),
                distance="the flat alternative: first → last change within ±2% of the first "
                "value, the increase's own minimum effect",
                details=hyst + "; censored at the cap: " + censored,
                runs=[f"{'exit' if quantity == 'exit_time' else 'qexit'}-N{r['N']}" for r in runs],
            )
        )
    for state in ("queueing", "no-queueing"):
        res = sorted(
            (r for r in select(rows, quantity="residence", state=state) if r["method"] == "sim"),
            key=lambda r: r["N"],
        )
        v, c = grows(res)
        ratios = ", ".join(f"{d1 / r['N']:.2g}" for r in res)
        claims.append(
            make_claim(
                f"Finite-N (d1/N = {ratios}, not small): the mean residence near the {state} "
                "state, over the complete stays of one long path per N, increases with N",
                v,
                control=("the mean residence is flat in N", c),
                distance="the flat alternative: first → last change within ±2% of the first "
                "value, the increase's own minimum effect",
                source="lbrepro",
                details=hyst
                + "; complete stays (and the one cut off at the end, counted as censored): "
                + ", ".join(
                    f"N={r['N']}: {r['count']} (+{r.get('censored_stays', 0)})" for r in res
                ),
                runs=[f"N{r['N']}" for r in res],
            )
        )
    sw = select(rows, quantity="residence", state="queueing")
    if not sw:
        raise EmptyComparisonError("affinity-tunneling: no residence rows")
    smallest = min(sw, key=lambda r: r["N"])
    fluid = select(rows, quantity="fluid_switches", N=smallest["N"])
    if not fluid:
        raise EmptyComparisonError(f"affinity-tunneling: no fluid-limit row at N = {smallest['N']}")

    def switching(n: int, who: str) -> Verdict:
        """Whether a path switched between the states at least twice."""
        return exact_verdict(n >= 2, n, "≥ 2 switches", who)

    claims.append(
        make_claim(
            f"Finite-N tunneling: the smallest system (N = {smallest['N']}) switches between "
            "both quasi-stable states",
            switching(int(smallest["switches"]), f"N = {smallest['N']}"),
            control=(
                "the fluid limit (N = ∞) from empty switches too",
                switching(int(fluid[0]["value"]), "fluid limit"),
            ),
            distance="the same system without its finite-N noise (the N → ∞ limit the "
            "tunneling departs from)",
            source="lbrepro",
            runs=[f"N{smallest['N']}"],
        )
    )
    return claims


def plot(rows: Rows, cfg: Mapping[str, Any]) -> Figure:
    """Left: type-II fraction along simulated paths; right: residence and exit times against N."""
    fig, axes = new_figure(1, 2, width=9.0, height=3.4)
    ax_tr, ax_res = axes[0]
    for c, N in enumerate(cfg["N"]):
        tr = select(rows, quantity="type2_fraction", N=N)
        if N in cfg.get("trace_N", []) and tr:
            ax_tr.plot(
                [r["t"] for r in tr],
                [r["value"] for r in tr],
                color=color(c),
                lw=0.6,
                label=f"N = {N}",
            )
    ax_tr.set(
        xlabel="time (mean type-I service times)",
        ylabel="servers with a type-II job",
        title="Tunneling between the quasi-stable states",
    )
    ax_res.set(yscale="log", xscale="log")
    for c, state in enumerate(("queueing", "no-queueing")):
        res = sorted(
            (r for r in select(rows, quantity="residence", state=state) if r["count"] >= 2),
            key=lambda r: r["N"],
        )
        simulated(
            ax_res,
            [r["N"] for r in res],
            [r["value"] for r in res],
            [r.get("ci_low") for r in res],
            [r.get("ci_high") for r in res],
            color=color(c),
            ls="-",
            label=f"{state} (95% CI)",
            converged=[r.get("converged") for r in res],
        )
    ex = sorted(select(rows, quantity="exit_time"), key=lambda r: r["N"])
    if ex:
        simulated(
            ax_res,
            [r["N"] for r in ex],
            [r["value"] for r in ex],
            [r.get("ci_low") for r in ex],
            [r.get("ci_high") for r in ex],
            color=color(2),
            marker="s",
            ls="-",
            label="no-queueing: first exit from empty (95% CI)",
            converged=[r.get("converged") for r in ex],
        )
    ax_res.set(
        xlabel="N (servers)",
        ylabel="mean residence time",
        yscale="log",
        xscale="log",
        title=f"Residence times, λ = {cfg['lam']}, d1 = {cfg['d1']}",
    )
    legend(fig, where="below", ncols=3)
    return fig


def _ci_text(r: Mapping[str, Any]) -> str:
    """An estimate and its 95% interval as text (n/a where missing; the value alone for a run
    that did not converge, whose interval is not trusted)."""
    if not_converged(r.get("converged")):
        return f"{format_or_na(r['value'], '.4g')} ({NO_CI})"
    low, high = format_or_na(r["ci_low"], ".4g"), format_or_na(r["ci_high"], ".4g")
    return f"{format_or_na(r['value'], '.4g')} [{low}, {high}]"


def summary(rows: Rows) -> Rows:
    """Mean residence and exit times per N and state, with the number of complete stays."""
    out: Rows = [
        {
            "N": r["N"],
            "state": r["state"],
            "complete stays": r["count"],
            "mean residence (95% CI)": _ci_text(r),
        }
        for r in sorted(select(rows, quantity="residence"), key=lambda r: (r["N"], r["state"]))
    ]
    out += _exit_summary(rows, "exit_time", "no-queueing (first exit from empty)", False)
    out += _exit_summary(
        rows, "queueing_exit_time", "queueing (first exit from a type-II job everywhere)", True
    )
    return out


def _exit_summary(rows: Rows, quantity: str, state: str, show_cap: bool) -> Rows:
    """The summary rows of one kind of first exit: uncensored runs and the capped mean per N."""
    return [
        {
            "N": r["N"],
            "state": state,
            "complete stays": f"{r['reps'] - r['censored']}/{r['reps']}"
            + (f" (cap {r['cap']:g})" if show_cap else ""),
            "mean residence (95% CI)": _ci_text(r),
        }
        for r in sorted(select(rows, quantity=quantity), key=lambda r: r["N"])
    ]


ARTIFACT = Artifact(
    id="affinity-tunneling",
    slug=SLUG,
    kind="figure",
    title="Tunneling: finite-N switching between the two quasi-stable states",
    caption=(
        "Left: fraction of servers holding a type-II job along simulated paths at the "
        f"section's λ and d1 (in the title on the right; μ2 = {MU2:g} unless the section sets "
        "it): near 1 in the queueing state, near 0 in the no-queueing state. "
        "Right: mean residence time in each state against N (hysteresis thresholds; "
        "95% CI over complete stays) and the mean first exit time from empty at larger N "
        "(95% CI over replications)."
    ),
    methods=("SIM",),
    points=points,
    compute=compute,
    cost=estimates.tunneling_cost,
    memory=estimates.tunneling_memory,
    check=check,
    plot=plot,
    summary=summary,
    validate=validate_with_hysteresis,
    reconstructions=(ASSIGNMENT_NOTE, PRIMARY_NOTE, TUNNELING_NOTE),
    # `horizon` is the length of the traced paths, and the first exits are censored at
    # `exit_cap`: a longer run is not simply a more precise one (lbrepro.extension).
    run_length=None,
)
