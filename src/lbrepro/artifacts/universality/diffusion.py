"""``universality-diffusion``: JSQ(d(N)) against the JSQ diffusion limit (Halfin–Whitt scale).

Halfin–Whitt load λ(N) = N − β√N; the idle mass (N − Q_1)/√N and Q_2/√N against N per d(N),
beside the stationary means of the JSQ diffusion limit (a reflected SDE simulated here).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from lbrepro.artifacts.registry import Artifact, Rows
from lbrepro.artifacts.universality.estimates import difference
from lbrepro.artifacts.universality.families import (
    d_of,
    d_row,
    label,
    of_family,
    series,
    sim_series,
    validate_families,
)
from lbrepro.artifacts.universality.replications import pool_replications, replications_needed
from lbrepro.artifacts.universality.simulation import (
    point_memory,
    sde_cost,
    sim_rows,
    simulate_point,
    simulation_cost,
)
from lbrepro.core.claims import Claim, diagnostic, make_claim
from lbrepro.core.errors import ConfigError
from lbrepro.core.ids import add_point
from lbrepro.core.io import select
from lbrepro.core.rows import estimate_row, pm, pm_text
from lbrepro.core.stats import Estimate
from lbrepro.core.verdicts import AGREEMENT, EmptyComparisonError, Verdict, agrees, estimate
from lbrepro.models import universality as model
from lbrepro.plotting.intervals import legend, simulated
from lbrepro.plotting.style import color, new_figure
from lbrepro.sim.runlength import event_budget, max_events


def validate(cfg: Mapping[str, Any]) -> None:
    """Refuse β ≥ √N, bad families, and a sweep without a family above and one below √N log N."""
    for N in cfg["N"]:
        model.halfin_whitt_lam(N, cfg["beta"])  # its ConfigError names beta
    validate_families("d", cfg["d"], cfg["N"])
    families = [str(f) for f in cfg["d"]]
    if not any(f in _ABOVE for f in families):
        raise ConfigError(
            "d",
            "needs a family with d(N)/(√N log N) → ∞ (sqrtNlog2N or N), which the claim is about",
        )
    top = [str(f) for f in cfg.get("largest_N_for", families)]
    for i, f in enumerate(top):
        if f not in families:
            raise ConfigError(f"largest_N_for[{i}]", f"{f!r} is not a family of d")
    if not any(f in _ABOVE for f in top):
        raise ConfigError(
            "largest_N_for",
            "must include a family above √N log N (sqrtNlog2N or N): the claim is tested there",
        )


#: Families with d(N)/(√N log N) → ∞: the diffusion-scale theorem covers these.
_ABOVE = ("sqrtNlog2N", "N")


def _diffusion_Ns(cfg: Mapping[str, Any], family: Any) -> list[int]:  # noqa: N802
    """The N of one family: the largest N only for the families in ``largest_N_for``.

    The largest N dominates the cost (one point at N = 10⁵ is ~5.6·10⁹ events); it is needed
    only where the claim lives (d(N) above √N log N), not for a family below the boundary
    that is already far off at the second largest N. Without ``largest_N_for`` every family
    runs at every N.
    """
    Ns = sorted(cfg["N"])
    top = cfg.get("largest_N_for")
    if top is None or str(family) in map(str, top):
        return Ns
    return Ns[:-1]


def events_per_time(N: int, beta: float) -> float:
    """Events per unit time of an N-server run at the Halfin–Whitt load: arrivals + departures."""
    return 2.0 * model.halfin_whitt_lam(N, beta) * N


def points(cfg: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """One point per (family, N) at the Halfin–Whitt load, and one for the SDE limit.

    A point expected to take more than ``job_events`` events is split into independent
    replications ``…-r1``, ``…-r2``, … (:mod:`.replications`), each measuring its share of
    ``horizon`` after its own warm-up; the claims pool them. With ``job_events`` every
    simulation job, a doubled run included, stays within that many events.
    """
    points: dict[str, dict[str, Any]] = {}
    job_events = cfg.get("job_events")
    for family in cfg["d"]:
        for N in _diffusion_Ns(cfg, family):
            rate = events_per_time(N, cfg["beta"])
            R = replications_needed(rate, cfg["horizon"], cfg["warmup"], job_events)
            params = {
                "beta": cfg["beta"],
                "family": str(family),
                "N": N,
                "horizon": cfg["warmup"] + cfg["horizon"] / R,
                "warmup": cfg["warmup"],
                "batches": cfg["batches"],
            }
            if job_events is not None:
                params["job_events"] = job_events
            if R == 1:
                add_point(points, f"d{family}-N{N}", params, "d, N")
                continue
            for i in range(1, R + 1):
                add_point(points, f"d{family}-N{N}-r{i}", params | {"replication": i}, "d, N")
    sde = cfg["sde"]
    points["sde"] = {
        "beta": cfg["beta"],
        "dts": list(sde["dt"]),
        "horizon": sde["horizon"],
        "warmup": sde["warmup"],
        "scheme": sde["scheme"],
        "batches": cfg["batches"],
    }
    return points


def compute(p: dict[str, Any], seed: np.random.SeedSequence) -> Rows:
    """The SDE means at every dt and extrapolated, or one N-server run's idle mass and Q₂/√N."""
    beta = p["beta"]
    if "dts" in p:
        means = model.jsq_diffusion_means(
            beta,
            dts=p["dts"],
            horizon=p["horizon"],
            warmup=p["warmup"],
            seed=seed,
            batches=p["batches"],
            scheme=p["scheme"],
        )
        rows: Rows = []
        for run in means["runs"]:
            for q, key in (("idle", "mean_idle"), ("q2", "mean_q2")):
                rows.append(
                    {
                        "beta": beta,
                        "method": "sde",
                        "scheme": p["scheme"],
                        "dt": run["dt"],
                        "quantity": q,
                        # fixed batches of horizon/batches ≫ the limit's O(1) relaxation
                        # time; the SDE kernel runs no independence test of its own
                        **estimate_row(
                            Estimate.from_interval(
                                run[key],
                                *run[f"{key}_ci"],
                                batches=p["batches"],
                                seed=seed.entropy,
                            )
                        ),
                    }
                )
        for q, key in (("idle", "mean_idle"), ("q2", "mean_q2")):
            ext = means["extrapolated"][key]
            # dt = 0: extrapolated to the continuous-time limit through the step sizes.
            rows.append(
                {
                    "beta": beta,
                    "method": "sde",
                    "scheme": p["scheme"],
                    "dt": 0.0,
                    "quantity": q,
                    **estimate_row(
                        Estimate.from_interval(
                            ext["mean"], *ext["ci"], batches=p["batches"], seed=seed.entropy
                        )
                    ),
                }
            )
        return rows
    params = _params(p)
    N, lam = p["N"], params["lam"]
    # A job's events, a doubled run included, stay within job_events when it is set.
    limit = p.get("job_events")
    with event_budget(None if limit is None else min(float(limit), max_events())):
        sim = simulate_point(p, lam, params["d"], seed)
    root = math.sqrt(N)
    if "replication" in p:
        params["replication"] = p["replication"]
    # (N − Q_1)/√N = √N (1 − u_1): the CI maps through the affine transform.
    idle_est = sim.derived(
        root * (1 - sim.u_all[1]),
        root * (1 - sim.u_all_ci_high[1]),
        root * (1 - sim.u_all_ci_low[1]),
    )
    idle = {"method": "sim", "quantity": "idle", **estimate_row(idle_est, N=N, seed=seed.entropy)}
    q2 = [r for r in sim_rows(sim, seed, scale=root) if r["quantity"] == "q2"]
    return [params | idle] + [params | r for r in q2] + exact_rows(p)


def _params(p: Mapping[str, Any]) -> dict[str, Any]:
    """The parameter columns of a simulation point's rows: β, the family, its d and the
    Halfin–Whitt load λ(N)/N at this N."""
    N, family = p["N"], p["family"]
    lam = model.halfin_whitt_lam(N, p["beta"])
    return {"beta": p["beta"], "family": family, "d": model.d_of_N(family, N), "lam": lam}


def exact_rows(p: Mapping[str, Any]) -> Rows:
    """The exact row of a simulation point the claims read: its d(N), with the family's
    label; once per (family, N), so a split point writes it at its first replication."""
    if p.get("replication", 1) != 1:
        return []
    params = _params(p)
    return [params | d_row(p["family"], params["d"]) | {"N": p["N"]}]


def _sde_limit(rows: Rows, quantity: str) -> tuple[float, float]:
    """The SDE mean extrapolated to dt → 0 (the dt = 0 row) and its 95% half-width."""
    limit = select(rows, method="sde", quantity=quantity, dt=0.0)[0]
    return limit["value"], (limit["ci_high"] - limit["ci_low"]) / 2


def _sde_estimate(rows: Rows, quantity: str) -> Estimate:
    """The SDE mean extrapolated to dt → 0 (the dt = 0 row) as an estimate."""
    limit = select(rows, method="sde", quantity=quantity, dt=0.0)
    if not limit:
        raise EmptyComparisonError(f"no extrapolated SDE row of {quantity}")
    return estimate(limit[0])


#: Agreement margin of E[Q₂/√N] with the limit's E[X₂], relative to E[X₂]: a diffusion
#: limit's pre-limit mean within 10% of it is what a reader calls agreement at N ≤ 10⁵. The
#: default 2% is below the finite-N remainder itself (JSQ's own E[Q₂/√N] moves by 0.12–0.14
#: per decade of N over N = 10²…10⁴, β = 1) and below the sweep's resolution (±0.04–0.09).
_AGREE = 0.10
#: The near miss of the agreement claims: a limit 2.5 margins off E[X₂], on the side of the
#: measured gap (the harder alternative to reject).
_NEAR = 2.5
#: Margin of the work-conservation diagnostics, relative to β: a simulator whose idle mass is
#: off by 20% of β (0.2β/√N of the busy fraction: 0.02 at N = 10², 6·10⁻⁴ at 10⁵) is broken;
#: at 10% a working one failed on a quick run (±0.05 widened half-widths, seed 1).
_DIAGNOSTIC = 0.20


def _runs(rows: Rows, family: str, Ns: list[int]) -> list[str]:
    """The point ids of one family's runs at ``Ns`` (replications included, as many as its
    pooled rows count): the diagnostics' labels."""
    ids = []
    for N in Ns:
        pooled = of_family(rows, family, method="sim", quantity="idle", N=N)
        R = int(pooled[0].get("replications") or 1) if pooled else 1
        base = f"d{family}-N{N}"
        ids += [base] if R == 1 else [f"{base}-r{i}" for i in range(1, R + 1)]
    return ids


def _agreement(rows: Rows, family: str, sde: Estimate) -> tuple[int, Verdict, Verdict, float]:
    """E[Q₂/√N] at the family's largest N against E[X₂] (margin _AGREE·E[X₂]), and the same
    test against the near-miss limit E[X₂] ± _NEAR margins (the side of the measured gap)."""
    Ns, ests = sim_series(rows, "q2", family)
    gap = difference(ests[-1], sde)
    margin = _AGREE * abs(sde.mean)
    label = [f"{family}, N={Ns[-1]}"]
    claim = agrees([gap], [0.0], margin=margin, labels=label, what="E[Q₂/√N] − E[X₂]")
    shift = math.copysign(_NEAR * margin, gap.mean)
    ctrl = agrees([gap], [shift], margin=margin, labels=label, what="E[Q₂/√N] − E[X₂]'")
    return Ns[-1], claim, ctrl, shift


def check(rows: Rows, cfg: Mapping[str, Any]) -> list[Claim]:
    """Work-conservation diagnostics, then per family above √N log N: E[Q₂/√N] at its largest
    N agrees with the SDE's E[X₂] (near miss: a limit 2.5 margins off).

    Reads only its table: each family's d(N) and label are its points' exact rows.
    """
    rows = pool_replications(rows)
    beta = cfg["beta"]
    claims: list[Claim] = []
    families = [str(f) for f in cfg["d"]]
    above = [f for f in families if f in _ABOVE]
    if not above:
        raise EmptyComparisonError("universality-diffusion needs a family above √N log N")
    margin = _DIAGNOSTIC * beta
    for family in families:
        Ns, idle = sim_series(rows, "idle", family)
        claims.append(
            diagnostic(
                f"d(N) = {label(rows, family)}: E[(N − Q₁)/√N] = β at every N (servers "
                "are busy a fraction λ(N)/N = 1 − β/√N: work conservation, true of any policy)",
                agrees(
                    idle,
                    [beta] * len(idle),
                    margin=margin,
                    labels=[f"N={N}" for N in Ns],
                    what="E[(N − Q₁)/√N] − β",
                ),
                runs=_runs(rows, family, Ns),
            )
        )
    claims.append(
        diagnostic(
            "the simulated JSQ diffusion limit has E[−X₁] = β (flow balance of the reflected "
            "SDE, exact for the discretised scheme too: a check of its reflection bookkeeping)",
            agrees([_sde_estimate(rows, "idle")], [beta], margin=margin, labels=["SDE, dt → 0"]),
            runs=["sde"],
        )
    )
    sde = _sde_estimate(rows, "q2")
    for family in above:
        Ns, _ = sim_series(rows, "q2", family)
        d = [d_of(rows, family, N) for N in Ns]
        ratio = ", ".join(
            f"{dN / (math.sqrt(N) * math.log(N)):.3g}" for dN, N in zip(d, Ns, strict=True)
        )
        ds = ", ".join(map(str, d))
        top, claim, ctrl, shift = _agreement(rows, family, sde)
        claims.append(
            make_claim(
                f"{label(rows, family)}, d(N)/(√N log N) → ∞: E[Q₂/√N] tends to the JSQ "
                f"diffusion limit's stationary E[X₂] as N → ∞ — at the largest N = {top:g} the "
                f"two agree within {_AGREE:.0%} of E[X₂]",
                claim,
                control=(
                    f"a near miss: a limit {_NEAR:g} margins off, E[X₂] {shift:+.3g} "
                    "(on the side of the measured gap)",
                    ctrl,
                ),
                distance=f"{_NEAR:g} margins ({abs(shift):.3g}) from E[X₂]",
                details=(
                    f"d(N) = {ds} for N = {', '.join(f'{N:g}' for N in Ns)}; "
                    f"d(N)/(√N log N) = {ratio}; "
                    f"SDE E[X₂] = {pm(sde.mean, sde.half_width, '.4f', '.2g')}; "
                    f"margin {_AGREE:.0%} of E[X₂], the finite-N "
                    "remainder included"
                ),
                runs=[*_runs(rows, family, [top]), "sde"],
            )
        )
    return claims


def plot(rows: Rows, cfg: Mapping[str, Any]) -> Any:
    """Idle mass and E[Q₂/√N] against N beside the SDE limit; the SDE's step-size convergence."""
    rows = pool_replications(rows)
    fig, axes = new_figure(1, 3, width=10.5, height=3.4)
    ax_idle, ax_q2, ax_dt = axes[0]
    ax_q2.set_yscale("log")  # d = ⌈√N⌉ grows like √N: a log axis keeps the rest readable
    for i, family in enumerate(map(str, cfg["d"])):
        c = color(i)
        for ax, q in ((ax_idle, "idle"), (ax_q2, "q2")):
            sim = series(rows, "sim", q, family)
            simulated(
                ax,
                [r["N"] for r in sim],
                [r["value"] for r in sim],
                [r.get("ci_low") for r in sim],
                [r.get("ci_high") for r in sim],
                color=c,
                ls="-",
                lw=0.8,
                label=model.family_label(family),
                converged=[r.get("converged") for r in sim],
            )
    for ax, q, name in ((ax_idle, "idle", "E[(N − Q₁)/√N]"), (ax_q2, "q2", "E[Q₂/√N]")):
        value, half = _sde_limit(rows, q)
        ax.axhline(value, color="k", ls="--", lw=1, label="JSQ diffusion limit (SDE, dt → 0)")
        ax.axhspan(value - half, value + half, color="k", alpha=0.1)
        ax.set(
            xscale="log", xlabel="N (servers)", ylabel=name, title=f"{name}, β = {cfg['beta']:g}"
        )
    # Step-size convergence of the SDE: E[X2] at each dt and the extrapolation to dt = 0.
    sde = sorted(select(rows, method="sde", quantity="q2"), key=lambda r: r["dt"])
    simulated(
        ax_dt,
        [r["dt"] for r in sde],
        [r["value"] for r in sde],
        [r.get("ci_low") for r in sde],
        [r.get("ci_high") for r in sde],
        color="k",
        ls=":",
        lw=0.8,
        converged=[r.get("converged") for r in sde],
    )
    ax_dt.set(
        xlabel="Euler step dt",
        ylabel="E[X₂] of the SDE",
        title=f"SDE step-size convergence ({sde[0].get('scheme', '')})",
        xlim=(-0.001, None),
    )
    ax_dt.annotate(
        "extrapolated",
        (0, sde[0]["value"]),
        textcoords="offset points",
        xytext=(8, -12),
    )
    legend(fig, where="below", ncols=3)  # last: it explains any open marker of every panel
    return fig


def summary(rows: Rows) -> Rows:
    """One line per (family, N) and per SDE step size: idle mass and E[Q₂/√N] with CIs."""
    rows = pool_replications(rows)
    out = []
    for r in sorted(
        select(rows, method="sim", quantity="q2"), key=lambda r: (str(r["family"]), r["N"])
    ):
        idle = of_family(rows, r["family"], method="sim", quantity="idle", N=r["N"])[0]
        out.append(
            {
                "d(N)": model.family_label(str(r["family"])),
                "N": r["N"],
                "d": r["d"],
                "E[(N−Q₁)/√N]": pm_text(idle),
                "E[Q₂/√N]": pm_text(r),
            }
        )
    for dt in sorted({r["dt"] for r in select(rows, method="sde")}, reverse=True):
        cells = {r["quantity"]: pm_text(r) for r in select(rows, method="sde", dt=dt)}
        label = f"SDE, dt = {dt:g}" if dt > 0 else "SDE, extrapolated to dt → 0"
        out.append(
            {
                "d(N)": label,
                "N": "∞",
                "d": "JSQ",
                "E[(N−Q₁)/√N]": cells["idle"],
                "E[Q₂/√N]": cells["q2"],
            }
        )
    return out


def cost(p: Mapping[str, Any]) -> float:
    """Estimated seconds of a simulation point, or of the SDE point (its steps)."""
    if "N" not in p:
        return sde_cost(p)
    return simulation_cost(model.halfin_whitt_lam(p["N"], p["beta"]), p)


ARTIFACT = Artifact(
    id="universality-diffusion",
    slug="universality",
    kind="figure",
    title="Diffusion scale (Halfin–Whitt): JSQ(d(N)) against the JSQ diffusion limit",
    caption=(
        "Halfin–Whitt load λ(N) = N − β√N: idle mass E[(N − Q₁)/√N] (left) and E[Q₂/√N] "
        "(middle) against N per d(N), simulated with 95% CIs, beside the stationary means of "
        "the JSQ diffusion limit of Eschenfeldt & Gamarnik (dashed, band: 95% CI), simulated "
        "as a reflected SDE (Euler–Maruyama with the reflection of sde.scheme, named in the "
        "right panel's title, extrapolated to dt → 0 through the step sizes sde.dt on one "
        "Brownian path; right: E[X₂] at each step size)."
    ),
    methods=("SIM",),
    points=points,
    cost=cost,
    memory=point_memory,
    compute=compute,
    check=check,
    plot=plot,
    summary=summary,
    validate=validate,
    reconstructions=(
        "β, the sweep N and the d(N) families of the config section are our choice (the "
        "seed's figures are missing). The diffusion limit's stationary means are simulated, "
        "not taken from a closed form. ⌈√N (log N)²⌉ ∧ N is the family with "
        "d(N)/(√N log N) → ∞ other than JSQ (it equals N below N ≈ 5500); ⌈√N⌉, below the "
        "√N log N boundary, is shown for contrast (no claim reads it: a family 130 margins "
        "off is no near miss); only the families in largest_N_for run at the largest N, to "
        "bound the cost.",
        "A point expected to take more than job_events events runs as R independent "
        "replications (separate jobs, each with its own warm-up and random stream, measuring "
        "1/R of the horizon); the claims, figure and table pool them: the mean of the R "
        "means, its standard error from each replication's batch-means interval, Student t "
        "with Welch–Satterthwaite degrees of freedom.",
        f"Agreement with the limit: |E[Q₂/√N] − E[X₂]| < {_AGREE:.0%} of E[X₂] (two one-sided "
        f"tests, the finite-N remainder included): the default {AGREEMENT:.0%} lies below "
        "JSQ's own pre-limit remainder (its E[Q₂/√N] moves by 0.12–0.14 per decade of N up "
        "to 10⁴ in the full run) and below the run's resolution. Near miss: a limit "
        f"{_NEAR:g} margins off on the side of the measured gap. The former 'distance "
        "|E[Q₂/√N] − E[X₂]| shrinks' checks are gone: the signed gap crosses 0 inside the "
        "sweep (d = N: −0.19, −0.05, +0.08 at N = 10², 10³, 10⁴), so the absolute distance "
        "need not shrink, and it flipped with the seed. Work conservation (idle mass = β) is "
        f"a diagnostic per family, margin {_DIAGNOSTIC:.0%} of β.",
    ),
)
