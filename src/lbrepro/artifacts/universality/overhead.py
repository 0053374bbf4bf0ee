"""``universality-overhead``: servers sampled per job against E[T] and P(wait > 0)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from lbrepro.artifacts.registry import Artifact, Rows
from lbrepro.artifacts.universality.estimates import scaled
from lbrepro.artifacts.universality.families import (
    control_family,
    d_of,
    d_row,
    of_family,
    validate_families,
)
from lbrepro.artifacts.universality.simulation import (
    load_cost,
    point_memory,
    sim_rows,
    simulate_point,
)
from lbrepro.core.args import check_stable_load, check_warmup
from lbrepro.core.claims import Claim, diagnostic, make_claim
from lbrepro.core.errors import ConfigError
from lbrepro.core.ids import add_point
from lbrepro.core.io import select
from lbrepro.core.rows import pm_text
from lbrepro.core.verdicts import (
    EmptyComparisonError,
    Verdict,
    agreement_margin,
    agrees,
    better,
    estimate,
)
from lbrepro.models import universality as model
from lbrepro.plotting.intervals import legend, simulated
from lbrepro.plotting.style import color, new_figure


def validate(cfg: Mapping[str, Any]) -> None:
    """Refuse an unstable load, a warm-up ≥ the horizon, or a grid without sqrtN and N."""
    check_warmup("warmup", cfg["warmup"], cfg["horizon"])
    check_stable_load("lam", cfg["lam"])
    validate_families("d", cfg["d"], [cfg["N"]])
    families = [str(f) for f in cfg["d"]]
    missing = [f for f in ("sqrtN", "N") if f not in families]
    if missing:
        raise ConfigError(
            "d",
            f"must include sqrtN and N (the claim compares ⌈√N⌉ with JSQ); missing "
            f"{', '.join(missing)}",
        )


def near_miss_d(lam: float) -> int:
    """The near miss of "⌈√N⌉ keeps JSQ's delay within 5%": the largest fixed d whose fluid
    E[T] = Σ_k λ^((d^k − 1)/(d − 1)) / λ is still 2 × 5% above JSQ's fluid E[T] = 1."""
    d = 2
    while _fluid_sojourn(lam, d + 1) >= 1 + 2 * _CLOSE:
        d += 1
    return d


def _fluid_sojourn(lam: float, d: int) -> float:
    """E[T] at the supermarket fluid fixed point of JSQ(d) (Little: Σ_k≥1 u_k / λ)."""
    return float(np.sum(model.fluid_fixed_point(lam, d)[1:]) / lam)


def _families(cfg: Mapping[str, Any]) -> list[str]:
    """The configured families plus the near-miss fixed d if absent."""
    families = [str(f) for f in cfg["d"]]
    near = str(near_miss_d(cfg["lam"]))
    return families if near in families else [*families, near]


def points(cfg: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """One point per family at the configured N, the near-miss fixed d included (its point
    marked ``control``)."""
    points: dict[str, dict[str, Any]] = {}
    near = str(near_miss_d(cfg["lam"]))
    for family in _families(cfg):
        params = {
            "lam": cfg["lam"],
            "family": str(family),
            "N": cfg["N"],
            "horizon": cfg["horizon"],
            "warmup": cfg["warmup"],
            "batches": cfg["batches"],
        }
        if family == near:
            params["control"] = True
        add_point(points, f"d{family}", params, "d")
    return points


def _params(p: Mapping[str, Any]) -> dict[str, Any]:
    """The parameter columns of a point's rows: λ, the family and its d (the samples per
    job)."""
    d = model.d_of_N(p["family"], p["N"])
    return {"lam": p["lam"], "family": p["family"], "d": d, "samples_per_job": d}


def exact_rows(p: Mapping[str, Any]) -> Rows:
    """The exact rows of a point the claim reads: its d (with the family's label and, for the
    near-miss d, its role) and its fluid E[T] (the supermarket fluid fixed point's)."""
    params = _params(p) | {"N": p["N"]}
    d = params["d"]
    fluid = {"method": "mf", "quantity": "mean_sojourn", "value": _fluid_sojourn(p["lam"], d)}
    return [params | d_row(p["family"], d, control=p.get("control", False)), params | fluid]


def compute(p: dict[str, Any], seed: np.random.SeedSequence) -> Rows:
    """The point's exact rows (:func:`exact_rows`) and one simulation of the family's d at N:
    q₁, q₂, E[T] and P(wait)."""
    params = _params(p)
    sim = simulate_point(p, p["lam"], params["d"], seed)
    return exact_rows(p) + [params | r for r in sim_rows(sim, seed)]


#: Our yardstick for "keeps JSQ's delay" (the paper gives none at finite N): E[T] within 5 %.
_CLOSE = 0.05


def _near_jsq(rows: Rows, family: str) -> Verdict:
    """E[T] of ``family`` significantly below (1 + _CLOSE) × JSQ's E[T]."""
    mine = of_family(rows, family, method="sim", quantity="mean_sojourn")
    jsq = of_family(rows, "N", method="sim", quantity="mean_sojourn")
    if not mine or not jsq:
        raise EmptyComparisonError(f"no mean_sojourn rows of {family!r} and of JSQ")
    return better(
        [estimate(mine[0])],
        [scaled(estimate(jsq[0]), 1 + _CLOSE)],
        min_effect=0.0,
        labels=[f"{family} vs JSQ"],
    )


def _fluid_sojourn_of(rows: Rows, family: str) -> float:
    """The fluid E[T] of one family's d, from its exact row."""
    found = of_family(rows, family, method="mf", quantity="mean_sojourn")
    if not found:
        raise EmptyComparisonError(f"no fluid mean_sojourn row of {family!r}")
    return float(found[0]["value"])


def check(rows: Rows, cfg: Mapping[str, Any]) -> list[Claim]:
    """q₁ = λ per run (diagnostic); ⌈√N⌉ keeps JSQ's E[T] within 5% (near miss: the fixed d
    whose fluid E[T] is 10% above JSQ's).

    Reads only its table: ⌈√N⌉, the near-miss d and their fluid E[T] are the points' exact
    rows (:func:`exact_rows`).
    """
    N, lam = cfg["N"], cfg["lam"]
    k = d_of(rows, "sqrtN", N)
    near_family = control_family(rows)
    near = d_of(rows, near_family, N)
    claims: list[Claim] = []
    q1 = select(rows, method="sim", quantity="q1")
    if not q1:
        raise EmptyComparisonError("universality-overhead: no q1 rows")
    for r in q1:
        claims.append(
            diagnostic(
                f"d = {r['d']}: q₁ = λ = {lam:g} (work conservation: the busy fraction of any "
                "work-conserving policy)",
                agrees([estimate(r)], [lam], margin=agreement_margin(lam), what="q₁ − λ"),
                runs=[f"d{r['family']}"],
            )
        )
    claims.append(
        make_claim(
            f"JSQ's fluid-level delay is kept with far fewer samples: d = ⌈√N⌉ = {k} servers "
            f"per job (≈ {N / k:.0f}× fewer than JSQ's N = {N}) gives E[T] significantly below "
            f"(1 + {_CLOSE:g}) × JSQ's E[T] (our yardstick: within {_CLOSE:.0%})",
            _near_jsq(rows, "sqrtN"),
            control=(
                f"a near miss: fixed d = {near}, the largest d whose fluid E[T] is still "
                f"{2 * _CLOSE:.0%} above JSQ's",
                _near_jsq(rows, near_family),
            ),
            distance=(
                f"fluid E[T] {_fluid_sojourn_of(rows, near_family):.3f} vs the bound "
                f"{1 + _CLOSE:g} (JSQ = 1): 2 × the {_CLOSE:.0%} yardstick; ⌈√N⌉'s fluid E[T] "
                f"{_fluid_sojourn_of(rows, 'sqrtN'):.3f}"
            ),
            details="the paper: overhead reduced by nearly a factor O(N) at the fluid level",
            runs=["dsqrtN", "dN", f"d{near}"],
        )
    )
    return claims


def plot(rows: Rows, cfg: Mapping[str, Any]) -> Any:
    """E[T] and P(wait > 0) against the servers sampled per job."""
    fig, axes = new_figure(1, 2, width=8.0, height=3.2)
    for ax, q, label in (
        (axes[0][0], "mean_sojourn", "E[T] (mean service times)"),
        (axes[0][1], "p_wait", "P(wait > 0)"),
    ):
        sims = sorted(select(rows, method="sim", quantity=q), key=lambda r: r["d"])
        ax.set(xscale="log", yscale="log" if q == "p_wait" else "linear")
        simulated(
            ax,
            [r["d"] for r in sims],
            [r["value"] for r in sims],
            [r.get("ci_low") for r in sims],
            [r.get("ci_high") for r in sims],
            color=color(0),
            ls="-",
            lw=0.8,
            label=f"simulation, N = {cfg['N']} (95% CI)",
            converged=[r.get("converged") for r in sims],
        )
        ax.set(
            xscale="log",
            xlabel="servers sampled per job d",
            ylabel=label,
            title=f"λ = {cfg['lam']:g}, N = {cfg['N']}",
        )
    legend(fig, where="below")
    return fig


def summary(rows: Rows) -> Rows:
    """One line per family: samples per job, E[T] and P(wait > 0) with CIs."""
    out = []
    for r in sorted(select(rows, method="sim", quantity="mean_sojourn"), key=lambda r: r["d"]):
        pw = select(rows, method="sim", quantity="p_wait", d=r["d"])[0]
        out.append(
            {
                "d(N)": model.family_label(str(r["family"])),
                "samples per job": r["d"],
                "E[T]": pm_text(r),
                "P(wait > 0)": pm_text(pw, ".4g"),
            }
        )
    return out


ARTIFACT = Artifact(
    id="universality-overhead",
    slug="universality",
    kind="figure + table",
    title="Sampling overhead against delay",
    caption=(
        "Servers sampled per job (d, sampled without replacement) against the mean sojourn "
        "time E[T] and the probability that a job waits, at the load λ and the N servers of "
        "the title; d = N is JSQ. 95% batch-means CIs."
    ),
    methods=("SIM",),
    points=points,
    cost=load_cost,
    memory=point_memory,
    compute=compute,
    check=check,
    plot=plot,
    summary=summary,
    validate=validate,
    reconstructions=(
        "The overhead table's parameters (λ, N, the d grid) are our choice, and so is the "
        f"{_CLOSE:.0%} yardstick of 'keeps JSQ's delay': the paper states the overhead "
        "reduction only in the limit N → ∞. Its near-miss control is the fixed d whose fluid "
        f"E[T] is {2 * _CLOSE:.0%} above JSQ's (2 yardsticks), always simulated. The former "
        "trends 'E[T] and P(wait) decrease in d' are gone: their only control was the "
        "reversed trend.",
    ),
)
