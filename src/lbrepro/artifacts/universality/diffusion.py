"""``universality-diffusion``: JSQ(d(N)) against the JSQ diffusion limit over a finite horizon.

What Mukherjee et al. (2016) state at the diffusion scale is *process-level* convergence:
in the Halfin–Whitt regime λ(N) = N − β√N, from a start whose scaled state converges, the
scaled process ((N − Q₁)/√N, Q₂/√N) of JSQ(d(N)) converges, over every finite horizon
[0, T], to the JSQ diffusion limit of Eschenfeldt & Gamarnik when d(N)/(√N log N) → ∞. The
paper does not claim that the stationary distributions converge (an interchange of limits),
so this artifact compares paths, not stationary means:

- every run starts at (N − Q₁)/√N = ``start.idle``, Q₂/√N = ``start.q2``;
- ``replications`` independent JSQ(d) paths per (family, N), and ``sde.replications`` paths
  of the reflected SDE (coupled Euler schemes, extrapolated to dt → 0 path by path);
- the means of the two scaled coordinates at ``times`` (horizon T = max(times)) compared by
  equivalence (two one-sided tests, Bonferroni over the times and coordinates) with a margin
  of 10% of |SDE mean|, never below 0.02 (a rule fixed before the data);
- the claim lives at N → ∞: it is judged at the largest N; the smaller N are detail. The
  near-miss control is the family ``control`` (d = ⌈√N⌉, below the condition), used at the
  largest N where its predicted gap from the limit (the chain's drift ODE against the
  noise-free limit, computed before any data) is at least 3 margins.

Each path is an independent replication: Student-t intervals on the means, no batch means.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from lbrepro.artifacts.registry import Artifact, Rows
from lbrepro.artifacts.universality.estimates import difference
from lbrepro.artifacts.universality.families import d_of, d_row, label, of_family
from lbrepro.artifacts.universality.paths import (
    drift_ode,
    jsq_paths,
    limit_ode,
    path_mean,
    sde_paths,
)
from lbrepro.core import footprint
from lbrepro.core.claims import Claim, make_claim
from lbrepro.core.errors import ConfigError
from lbrepro.core.ids import add_point
from lbrepro.core.io import select
from lbrepro.core.packing import simulation_seconds
from lbrepro.core.rows import estimate_row, not_converged, pm, pm_text
from lbrepro.core.stats import Estimate
from lbrepro.core.verdicts import EmptyComparisonError, Verdict, agrees, estimate
from lbrepro.models import universality as model
from lbrepro.plotting.intervals import legend, simulated
from lbrepro.plotting.style import color, new_figure
from lbrepro.sim.occupancy import EVENTS_PER_SECOND

#: Families with d(N)/(√N log N) → ∞: the diffusion-scale theorem covers these.
_ABOVE = ("sqrtNlog2N", "N")
#: The two scaled coordinates: (N − Q₁)/√N (idle mass, −X₁ in the limit) and Q₂/√N (X₂).
QUANTITIES = ("idle", "q2")
_NAMES = {"idle": "E[(N − Q₁)/√N]", "q2": "E[Q₂/√N]"}
#: Agreement margin, relative to |SDE mean| at each time and coordinate, and its floor: a
#: pre-limit mean within 10% of the limit's is what a reader calls agreement at N ≤ 10⁵
#: (the finite-N remainder is O(1/√N) up to logarithms); the floor keeps a mean near 0 from
#: asking for an absolute precision no run of this size has. Fixed before the data.
_AGREE, _FLOOR = 0.10, 0.02
#: The control family is used only where its predicted gap is at least this many margins.
_CONTROL_MARGINS = 3.0
#: The fallback near miss where the control cannot be used: a limit this many margins off.
_NEAR = 2.5
#: Seconds of one Euler step of the SDE paths (all dts on one Brownian path, Python's
#: per-path calls included: measured 0.46 s for 1.4·10⁷ steps).
_SDE_STEP_SECONDS = 5e-8


def margin_of(value: float) -> float:
    """The agreement margin at one SDE mean: 10% of its size, never below 0.02."""
    return max(_AGREE * abs(float(value)), _FLOOR)


def _start(cfg: Mapping[str, Any]) -> tuple[float, float]:
    return float(cfg["start"]["idle"]), float(cfg["start"]["q2"])


def validate(cfg: Mapping[str, Any]) -> None:
    """Refuse β ≥ √N, bad families, a sweep without a family above √N log N, a control above
    it, a start that is no state, and SDE step sizes whose grids miss a compared time."""
    for N in cfg["N"]:
        model.halfin_whitt_lam(N, cfg["beta"])  # its ConfigError names beta
    families = [str(f) for f in cfg["d"]]
    for i, family in enumerate(cfg["d"]):
        for N in cfg["N"]:
            try:
                model.d_of_N(family, N)
            except ConfigError as err:
                raise ConfigError(f"d[{i}]", str(err)) from None
    if not any(f in _ABOVE for f in families):
        raise ConfigError(
            "d",
            "needs a family with d(N)/(√N log N) → ∞ (sqrtNlog2N or N), which the claim is about",
        )
    control = str(cfg["control"])
    if control in _ABOVE:
        raise ConfigError("control", f"{control!r} satisfies the theorem's condition: no control")
    if control in families:
        raise ConfigError("control", f"{control!r} is also a claim's family in d")
    for N in cfg["N"]:
        try:
            model.d_of_N(control, N)
        except ConfigError as err:
            raise ConfigError("control", str(err)) from None
    idle, q2 = _start(cfg)
    for N in cfg["N"]:
        root = math.sqrt(N)
        if not 0 <= round(q2 * root) <= N - round(idle * root) <= N:
            raise ConfigError("start", f"({idle:g}, {q2:g}) is no N-server state at N = {N}")
    times = [float(t) for t in cfg["times"]]
    if len(set(times)) != len(times):
        raise ConfigError("times", "lists a time twice")
    from lbrepro.sim.diffusion import step_multipliers

    try:
        h, mult = step_multipliers(tuple(float(x) for x in cfg["sde"]["dt"]))
    except ConfigError as err:
        raise ConfigError("sde.dt", str(err)) from None
    grid = math.lcm(*(int(m) for m in mult)) * h
    for t in times:
        if abs(t / grid - round(t / grid)) > 1e-9 * max(t / grid, 1.0):
            raise ConfigError("sde.dt", f"time {t:g} is not on the grid of every step size")


def points(cfg: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """One point per (family, N) — the claims' families and the control — and one SDE point."""
    pts: dict[str, dict[str, Any]] = {}
    common = {
        "beta": cfg["beta"],
        "start": list(_start(cfg)),
        "times": sorted(float(t) for t in cfg["times"]),
    }
    control = str(cfg["control"])
    for family in [*map(str, cfg["d"]), control]:
        for N in sorted(cfg["N"]):
            params = common | {
                "family": family,
                "N": N,
                "replications": cfg["replications"],
            }
            if family == control:
                params["control"] = True
            add_point(pts, f"d{family}-N{N}", params, "d, N")
    sde = cfg["sde"]
    pts["sde"] = common | {
        "dts": list(sde["dt"]),
        "scheme": sde["scheme"],
        "replications": sde["replications"],
    }
    return pts


def compute(p: dict[str, Any], seed: np.random.SeedSequence) -> Rows:
    """One point's rows: the SDE's means at every dt and extrapolated (and the noise-free
    limit), or one (family, N)'s path means (and, for the control, its drift-ODE prediction)."""
    beta, times, start = p["beta"], p["times"], tuple(p["start"])
    rows: Rows = []
    if "dts" in p:
        per_dt, extrapolated, _ = sde_paths(
            beta=beta,
            dts=p["dts"],
            scheme=p["scheme"],
            start=start,
            times=times,
            R=p["replications"],
            seed=seed,
        )
        for dt, values in [*zip(p["dts"], per_dt, strict=True), (0.0, extrapolated)]:
            for i, t in enumerate(times):
                for c, q in enumerate(QUANTITIES):
                    est = path_mean(values[:, i, c], seed=seed.entropy)
                    rows.append(
                        {
                            "beta": beta,
                            "method": "sde",
                            "scheme": p["scheme"],
                            "dt": float(dt),
                            "t": t,
                            "quantity": q,
                            **estimate_row(est, seed=seed.entropy),
                        }
                    )
        for i, t in enumerate(times):
            for c, q in enumerate(QUANTITIES):
                value = float(limit_ode(beta, start, times)[i, c])
                rows.append(
                    {"beta": beta, "method": "mf", "family": "limit", "t": t, "quantity": q}
                    | {"value": value}
                )
        return rows
    N, family = p["N"], p["family"]
    d = model.d_of_N(family, N)
    lam = model.halfin_whitt_lam(N, beta)
    params = {"beta": beta, "family": family, "d": d, "lam": lam}
    values, events = jsq_paths(
        N=N, d=d, lam_n=lam * N, start=start, times=times, R=p["replications"], seed=seed
    )
    for i, t in enumerate(times):
        for c, q in enumerate(QUANTITIES):
            est = path_mean(values[:, i, c], N=N, seed=seed.entropy)
            rows.append(
                params
                | {"method": "sim", "t": t, "quantity": q, "events": events}
                | estimate_row(est)
            )
    rows.append(params | d_row(family, d, control=bool(p.get("control"))) | {"N": N})
    if p.get("control"):
        predicted = drift_ode(N, d, lam * N, start, times)
        for i, t in enumerate(times):
            for c, q in enumerate(QUANTITIES):
                rows.append(
                    params
                    | {"method": "mf", "t": t, "quantity": q, "N": N}
                    | {"value": float(predicted[i, c])}
                )
    return rows


# --------------------------------------------------------------------------- reading rows
def _sde(rows: Rows) -> dict[tuple[float, str], Estimate]:
    """The SDE means extrapolated to dt → 0, by (t, quantity)."""
    out = {(float(r["t"]), r["quantity"]): estimate(r) for r in select(rows, method="sde", dt=0.0)}
    if not out:
        raise EmptyComparisonError("no extrapolated SDE rows")
    return out


def _sim(rows: Rows, family: str, N: int) -> dict[tuple[float, str], Estimate]:
    return {
        (float(r["t"]), r["quantity"]): estimate(r)
        for r in of_family(rows, family, method="sim", N=N)
    }


def _Ns(rows: Rows, family: str) -> list[int]:  # noqa: N802
    return sorted({int(r["N"]) for r in of_family(rows, family, method="sim")})


def _families(rows: Rows) -> tuple[list[str], str | None]:
    """The claims' families (in table order) and the control family (None if absent)."""
    claims: list[str] = []
    control = None
    for r in select(rows, method="cf", quantity="d"):
        f = str(r["family"])
        if r.get("role") == "control":
            control = f
        elif f not in claims:
            claims.append(f)
    return claims, control


def _compare(
    sim: dict[tuple[float, str], Estimate], sde: dict[tuple[float, str], Estimate], N: int
) -> Verdict:
    """Equivalence of the path means with the SDE's at every (t, coordinate), Bonferroni over
    them all, margin 10% of |SDE mean| (≥ 0.02)."""
    keys = sorted(sde)
    missing = [k for k in keys if k not in sim]
    if missing:
        raise EmptyComparisonError(f"no simulated rows at N = {N} for {missing}")
    gaps = [difference(sim[k], sde[k]) for k in keys]
    return agrees(
        gaps,
        [0.0] * len(keys),
        margin=[margin_of(sde[k].mean) for k in keys],
        labels=[f"N={N}, t={t:g}, {_NAMES[q]}" for t, q in keys],
        what="path mean − SDE mean",
    )


def largest_gap(
    sim: dict[tuple[float, str], Estimate], sde: dict[tuple[float, str], Estimate]
) -> float:
    """The largest |path mean − SDE mean| over the compared times and coordinates, in
    margins."""
    return max(abs(sim[k].mean - sde[k].mean) / margin_of(sde[k].mean) for k in sde)


def predicted_gap(rows: Rows, family: str, N: int, sde: dict[tuple[float, str], Estimate]) -> float:
    """The control's predicted gap from the limit at N, in margins: the largest over the times
    and coordinates of |drift ODE − noise-free limit| / margin (both exact rows, written before
    any path was simulated)."""
    limit = {
        (float(r["t"]), r["quantity"]): r["value"] for r in of_family(rows, "limit", method="mf")
    }
    pred = {
        (float(r["t"]), r["quantity"]): r["value"]
        for r in of_family(rows, family, method="mf", N=N)
    }
    gaps = [abs(pred[k] - limit[k]) / margin_of(sde[k].mean) for k in sde if k in pred]
    return max(gaps) if gaps else 0.0


def control_point(rows: Rows, sde: dict[tuple[float, str], Estimate]) -> tuple[int | None, str]:
    """The largest N at which the control family may be used (its predicted gap ≥ 3 margins),
    or None, and the reason in words."""
    _, control = _families(rows)
    if control is None:
        return None, "no control family in the table"
    usable = []
    notes = []
    for N in _Ns(rows, control):
        gap = predicted_gap(rows, control, N, sde)
        notes.append(f"N = {N:g}: {gap:.3g}")
        if gap >= _CONTROL_MARGINS:
            usable.append(N)
    text = f"predicted gap of {label(rows, control)} from the limit, in margins: " + ", ".join(
        notes
    )
    return (max(usable) if usable else None), text


def check(rows: Rows, cfg: Mapping[str, Any]) -> list[Claim]:
    """Per family above √N log N: its path means at the largest N agree with the SDE's at
    every compared time and coordinate; control: d = ⌈√N⌉ at the largest N where its
    predicted gap is ≥ 3 margins. Reads only its table."""
    sde = _sde(rows)
    families, control = _families(rows)
    above = [f for f in families if f in _ABOVE]
    if not above:
        raise EmptyComparisonError("universality-diffusion needs a family above √N log N")
    ctrl_N, ctrl_text = control_point(rows, sde)
    claims: list[Claim] = []
    start = cfg["start"]
    for family in above:
        Ns = _Ns(rows, family)
        if not Ns:
            raise EmptyComparisonError(f"no simulated rows of d(N) family {family!r}")
        sims = {N: _sim(rows, family, N) for N in Ns}  # each read once from the table
        verdicts = {N: _compare(sims[N], sde, N) for N in Ns}
        top = Ns[-1]
        claim = verdicts[top]
        d = [d_of(rows, family, N) for N in Ns]
        ratio = ", ".join(
            f"{dN / (math.sqrt(N) * math.log(N)):.3g}" for dN, N in zip(d, Ns, strict=True)
        )
        by_N = "; ".join(
            f"N = {N:g}: {v.outcome}, largest gap {largest_gap(sims[N], sde):.3g} margins"
            for N, v in verdicts.items()
        )
        if ctrl_N is not None:
            assert control is not None
            ctrl_sim = _sim(rows, control, ctrl_N)
            ctrl = _compare(ctrl_sim, sde, ctrl_N)
            what = (
                f"{label(rows, control)} (below the condition) at N = {ctrl_N:g}, the largest N "
                "where its predicted gap is ≥ 3 margins, agrees with the limit as well"
            )
            distance = (
                f"predicted {predicted_gap(rows, control, ctrl_N, sde):.3g} margins from the "
                f"limit at N = {ctrl_N:g}; measured "
                f"{largest_gap(ctrl_sim, sde):.3g}"
            )
            ctrl_note = ctrl_text
        else:
            worst = max(sde, key=lambda k: abs(difference(sims[top][k], sde[k]).mean))
            gap = difference(sims[top][worst], sde[worst])
            shift = math.copysign(_NEAR * margin_of(sde[worst].mean), gap.mean)
            ctrl = agrees(
                [gap],
                [shift],
                margin=margin_of(sde[worst].mean),
                labels=[f"N={top}, t={worst[0]:g}, {_NAMES[worst[1]]}"],
                what="path mean − shifted limit",
            )
            what = f"a near miss: a limit {_NEAR:g} margins off ({shift:+.3g})"
            distance = f"{_NEAR:g} margins from the limit"
            ctrl_note = (
                f"by design the control family cannot be used at this run's N ({ctrl_text}; "
                f"it needs ≥ {_CONTROL_MARGINS:g}), so the near miss is a shifted limit"
            )
        sde_text = ", ".join(
            f"t = {t:g}: {_NAMES[q]} {pm(e.mean, e.half_width, '.4f', '.2g')}"
            for (t, q), e in sorted(sde.items())
        )
        claims.append(
            make_claim(
                f"{label(rows, family)}, d(N)/(√N log N) → ∞: from (N − Q₁)/√N = "
                f"{start['idle']:g}, Q₂/√N = {start['q2']:g}, the scaled process of JSQ(d(N)) "
                f"converges to the JSQ diffusion limit over [0, {max(cfg['times']):g}] as "
                f"N → ∞ — judged at the largest N = {top:g}: the means of both coordinates "
                f"at t = {', '.join(f'{t:g}' for t in sorted(cfg['times']))} agree with the "
                f"limit's within {_AGREE:.0%} of |limit| (≥ {_FLOOR:g})",
                claim,
                control=(what, ctrl),
                distance=distance,
                details=(
                    f"per N (the largest decides, the others are detail): {by_N}; "
                    f"d(N) = {', '.join(map(str, d))} for N = "
                    f"{', '.join(f'{N:g}' for N in Ns)}; d(N)/(√N log N) = {ratio}; "
                    f"SDE (dt → 0): {sde_text}; control: {ctrl_note}"
                ),
                runs=[f"d{family}-N{top}", "sde"]
                + ([f"d{control}-N{ctrl_N}"] if ctrl_N is not None else []),
            )
        )
    return claims


# --------------------------------------------------------------------------- figure, table
def plot(rows: Rows, cfg: Mapping[str, Any]) -> Any:
    """Left, middle: the two coordinates' means against t at the largest N, per family, with
    the SDE's (line, band: 95% CI). Right: E[Q₂/√N] at the horizon against N."""
    fig, axes = new_figure(1, 3, width=10.5, height=3.4)
    ax_idle, ax_q2, ax_n = axes[0]
    families, control = _families(rows)
    every = [*families, *([control] if control else [])]
    T = max(float(t) for t in cfg["times"])
    sde = sorted(select(rows, method="sde", dt=0.0), key=lambda r: r["t"])
    width = 0.012 * T
    for ax, q in ((ax_idle, "idle"), (ax_q2, "q2")):
        s = [r for r in sde if r["quantity"] == q]
        simulated(
            ax,
            [r["t"] for r in s],
            [r["value"] for r in s],
            [r["ci_low"] for r in s],
            [r["ci_high"] for r in s],
            color="k",
            marker="s",
            ls="--",
            label="JSQ diffusion limit (SDE, dt → 0)",
            converged=[r.get("converged") for r in s],
        )
    for i, family in enumerate(every):
        c = color(i)
        Ns = _Ns(rows, family)
        if not Ns:
            continue
        top = Ns[-1]
        lab = label(rows, family) + (" (control)" if family == control else "")
        for ax, q in ((ax_idle, "idle"), (ax_q2, "q2")):
            sim = sorted(of_family(rows, family, method="sim", quantity=q, N=top), key=_t)
            simulated(
                ax,
                [r["t"] + (i + 1) * width for r in sim],
                [r["value"] for r in sim],
                [r["ci_low"] for r in sim],
                [r["ci_high"] for r in sim],
                color=c,
                label=lab,
                converged=[r.get("converged") for r in sim],
            )
        at_T = sorted(
            (r for r in of_family(rows, family, method="sim", quantity="q2") if _t(r) == T),
            key=lambda r: r["N"],
        )
        simulated(
            ax_n,
            [r["N"] for r in at_T],
            [r["value"] for r in at_T],
            [r["ci_low"] for r in at_T],
            [r["ci_high"] for r in at_T],
            color=c,
            ls="-",
            lw=0.8,
            converged=[r.get("converged") for r in at_T],
        )
    top_N = max((n for f in every for n in _Ns(rows, f)), default=0)
    for ax, q in ((ax_idle, "idle"), (ax_q2, "q2")):
        ax.set(
            xlabel="t (mean service times)",
            ylabel=_NAMES[q],
            title=f"{_NAMES[q]} from the start, N = {top_N:g}",
        )
    end = [r for r in sde if r["quantity"] == "q2" and _t(r) == T]
    if end:
        ax_n.axhline(end[0]["value"], color="k", ls="--", lw=1)
        if not not_converged(end[0].get("converged")):
            ax_n.axhspan(end[0]["ci_low"], end[0]["ci_high"], color="k", alpha=0.1)
    ax_n.set(
        xscale="log",
        yscale="log",
        xlabel="N (servers)",
        ylabel=_NAMES["q2"],
        title=f"{_NAMES['q2']} at t = {T:g} against N",
    )
    legend(fig, where="below", ncols=3)
    return fig


def _t(r: Mapping[str, Any]) -> float:
    return float(r["t"])


def summary(rows: Rows) -> Rows:
    """One line per (family, N, t) and per SDE step size and t: both coordinates' means."""
    out = []
    families, control = _families(rows)
    for family in [*families, *([control] if control else [])]:
        for N in _Ns(rows, family):
            cells = {(_t(r), r["quantity"]): r for r in of_family(rows, family, method="sim", N=N)}
            for t in sorted({k[0] for k in cells}):
                out.append(
                    {
                        "d(N)": label(rows, family) + (" (control)" if family == control else ""),
                        "N": N,
                        "d": d_of(rows, family, N),
                        "t": t,
                        "E[(N−Q₁)/√N]": pm_text(cells[(t, "idle")]),
                        "E[Q₂/√N]": pm_text(cells[(t, "q2")]),
                    }
                )
    sde = select(rows, method="sde")
    for dt in sorted({r["dt"] for r in sde}, reverse=True):
        cells = {(_t(r), r["quantity"]): r for r in sde if r["dt"] == dt}
        for t in sorted({k[0] for k in cells}):
            out.append(
                {
                    "d(N)": f"SDE, dt = {dt:g}" if dt > 0 else "SDE, extrapolated to dt → 0",
                    "N": "∞",
                    "d": "JSQ",
                    "t": t,
                    "E[(N−Q₁)/√N]": pm_text(cells[(t, "idle")]),
                    "E[Q₂/√N]": pm_text(cells[(t, "q2")]),
                }
            )
    return out


def path_events(p: Mapping[str, Any]) -> float:
    """Events of a (family, N) point: arrivals and departures, ≈ (λ(N) + N)·T per path."""
    lam_n = model.halfin_whitt_lam(p["N"], p["beta"]) * p["N"]
    return (lam_n + p["N"]) * max(p["times"]) * p["replications"]


def cost(p: Mapping[str, Any]) -> float:
    """Estimated seconds of a point: its events, or the SDE's Euler steps."""
    if "N" not in p:
        steps = p["replications"] * max(p["times"]) * math.fsum(1.0 / dt for dt in p["dts"])
        return simulation_seconds(0.0, EVENTS_PER_SECOND) + steps * _SDE_STEP_SECONDS
    return simulation_seconds(path_events(p), EVENTS_PER_SECOND)


def memory(p: Mapping[str, Any]) -> footprint.Footprint:
    """Bytes of a point: its per-path states (8 bytes per path, time and coordinate; per
    step size too for the SDE) and its rows."""
    per_path = 8 * 2 * len(p["times"]) * p["replications"]
    if "N" not in p:
        return {"sde.replications": per_path * (len(p["dts"]) + 1), "sde.dt": footprint.rows(64)}
    return {"replications": per_path, "times": footprint.rows(32)}


ARTIFACT = Artifact(
    id="universality-diffusion",
    slug="universality",
    kind="figure",
    title="Diffusion scale (Halfin–Whitt): JSQ(d(N)) paths against the JSQ diffusion limit",
    caption=(
        "Halfin–Whitt load λ(N) = N − β√N, every path started at (N − Q₁)/√N = start.idle, "
        "Q₂/√N = start.q2. Left, middle: the means of the two scaled coordinates over "
        "[0, T] at the largest N per d(N) family (95% Student-t intervals over independent "
        "paths; markers offset in t for legibility), beside the JSQ diffusion limit of "
        "Eschenfeldt & Gamarnik (black squares with 95% CIs), simulated as a reflected SDE "
        "(Euler–Maruyama with the reflection of sde.scheme, extrapolated path by path to "
        "dt → 0 through the step sizes sde.dt). Right: E[Q₂/√N] at t = T against N, the "
        "limit's dashed."
    ),
    methods=("SIM",),
    points=points,
    cost=cost,
    memory=memory,
    compute=compute,
    check=check,
    plot=plot,
    summary=summary,
    validate=validate,
    reconstructions=(
        "The paper states process-level convergence over finite horizons from a converging "
        "start, not convergence of the stationary distributions (an interchange of limits it "
        "does not claim): the artifact compares the means of the scaled process at a few "
        "times of [0, T] from one start. β, the start, the times, the sweep N, the d(N) "
        "families and the control are our choice (the paper's figures are not in its text). The "
        "N-server start is the state nearest the scaled one (Q₁ = N − round(idle·√N), "
        "Q₂ = round(q2·√N), no server with 3 jobs): an O(1/√N) difference, part of the "
        "finite-N remainder.",
        f"Agreement: |path mean − SDE mean| < {_AGREE:.0%} of |SDE mean|, never below "
        f"{_FLOOR:g}, at every compared time and coordinate (two one-sided tests, 95% "
        "Student-t intervals over independent paths Bonferroni-widened over the "
        "comparisons, the SDE's interval in quadrature); a rule fixed before the data. The "
        "claim is about N → ∞ and is judged at the largest N; the others are reported.",
        f"Control: d = ⌈√N⌉, below the condition. It is used at the largest N where its "
        "predicted gap from the limit — the N-server chain's drift ODE (without-replacement "
        "sampling, fluctuations left out) against the noise-free limit — is at least "
        f"{_CONTROL_MARGINS:g} margins; where no N of the run allows it, the claim says so by "
        f"design and its near miss is a limit {_NEAR:g} margins off instead.",
    ),
)
