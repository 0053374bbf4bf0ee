"""``hetero-sojourn``: E[T] against load for six policies on H2, H2x, H3 (mean field and
simulation), and the claim that Schemes 1/2 need no load estimate to beat a mis-tuned split."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from lbrepro.artifacts.hetero.configuration import (
    check_load,
    named_systems,
    simulation_cost,
    system_from_spec,
    validate_systems,
)
from lbrepro.artifacts.hetero.estimates import sim_sojourn_row
from lbrepro.artifacts.hetero.policies import POLICY_LABELS, POLICY_STYLE, policy_args
from lbrepro.artifacts.registry import Artifact, Rows
from lbrepro.core.claims import Claim, make_claim
from lbrepro.core.errors import ConfigError
from lbrepro.core.ids import add_point, num
from lbrepro.core.io import select
from lbrepro.core.stats import Estimate
from lbrepro.core.verdicts import (
    EmptyComparisonError,
    Verdict,
    better,
    estimate,
    within,
)
from lbrepro.models import hetero as model
from lbrepro.plotting.style import METHOD_STYLE, new_figure


def validate(cfg: Mapping[str, Any]) -> None:
    """Systems and simulated loads checked; each simulated load must be on the mean-field grid."""
    validate_systems("hetero-sojourn", cfg)
    for i, rho in enumerate(cfg["rho_sim"]):
        check_load(f"hetero-sojourn.rho_sim[{i}]", rho)
        if rho not in cfg["rho_grid"]:
            raise ConfigError(
                f"hetero-sojourn.rho_sim[{i}]",
                f"load {rho} is not in rho_grid: the simulation is compared with the mean "
                "field at the same load, so add it to rho_grid",
            )


def _policy_limit(system: model.System, policy: str, lam_hat: float) -> float:
    """The policy's largest stable load, normalised by the capacity."""
    args = policy_args(system, policy, lam_hat)
    policy = args.pop("policy")
    return model.stability_limit(system, policy, **args) / system.total_capacity


def points(cfg: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """One mean-field sweep per system, one simulation per (system, policy, load).

    Loads beyond a policy's stability region (whole-system SQ(d) above λ*, a static split
    that overloads a type) get no simulation: the figure shows where the policy fails by
    the absent curve, and the table says so.
    """
    common = {k: cfg[k] for k in ("N", "horizon", "warmup", "batches", "lam_hat")}
    points = {}
    for name, spec in named_systems(cfg).items():
        system = system_from_spec(spec)
        points[f"{name}-mf"] = {
            "system": name,
            "spec": spec,
            "rho_grid": cfg["rho_grid"],
            "policies": cfg["policies"],
            "lam_hat": cfg["lam_hat"],
        }
        for policy in cfg["policies"]:
            limit = _policy_limit(system, policy, cfg["lam_hat"])
            for rho in cfg["rho_sim"]:
                if rho < limit:
                    params = common | {"system": name, "spec": spec, "policy": policy, "rho": rho}
                    add_point(points, f"{name}-{policy}-rho{num(rho)}", params, "rho_sim")
    return points


def compute(p: dict[str, Any], seed: np.random.SeedSequence) -> Rows:
    """A mean-field sweep over the load grid (per policy), or one simulation with its RMF."""
    system = system_from_spec(p["spec"])
    cap = system.total_capacity
    if "rho_grid" in p:
        rows: Rows = []
        for policy in p["policies"]:
            args = policy_args(system, policy, p["lam_hat"])
            limit = _policy_limit(system, policy, p["lam_hat"])
            x0 = None
            for rho in sorted(p["rho_grid"]):
                value = None  # beyond this policy's stability region: no equilibrium
                if rho < limit:
                    # Warm start from the previous load's equilibrium: a sweep costs a few
                    # Newton steps per load instead of a cold solve.
                    mf = model.fixed_point(system, rho * cap, x0=x0, **args)
                    value, x0 = mf.mean_sojourn, mf.x
                rows.append(
                    {
                        "system": p["system"],
                        "policy": policy,
                        "rho": rho,
                        "method": "mf",
                        "quantity": "mean_sojourn",
                        "value": value,
                        "stability_limit": limit,
                    }
                )
        return rows
    args = policy_args(system, p["policy"], p["lam_hat"])
    lam = p["rho"] * cap
    sim = model.simulate(
        system,
        lam,
        N=p["N"],
        horizon=p["horizon"],
        warmup=p["warmup"],
        seed=seed,
        batches=p["batches"],
        **args,
    )
    rmf = model.refined(system, lam, **args)
    base = {"system": p["system"], "policy": p["policy"], "rho": p["rho"]}
    return [
        base | sim_sojourn_row(sim, seed),
        base
        | {
            "method": "rmf",
            "quantity": "mean_sojourn",
            "value": rmf.mean_sojourn_at(p["N"]),
            "N": p["N"],
        },
    ]


#: Loads at which the tuned split's assumed load λ̂ counts as wrong: |ρ − λ̂| ≥ this.
WRONG_LOAD_GAP = 0.25

_RECONSTRUCTED = (
    "[reconstruction] the system is ours, not the seed's (its numerical section is missing)"
)


def _mf_estimate(value: float | None) -> Estimate:
    """A mean-field E[T] as an exact estimate; no equilibrium (unstable) counts as +∞."""
    return Estimate.exact(math.inf if value is None else float(value))


def _on_exact(verdict: Verdict, a: list[Estimate], b: list[Estimate], labels: list[str]) -> Verdict:
    """A ``better`` verdict on exact values, with the compared values as its measurement.

    With zero-width values its z-scores are ±∞ (JSON null): the values say more.
    """

    def fmt(e: Estimate) -> str:
        """An exact value for the measurement: ∞ says the policy is unstable there."""
        return "∞ (unstable)" if math.isinf(e.mean) else f"{e.mean:.4g}"

    measured = {lab: f"{fmt(x)} vs {fmt(y)}" for lab, x, y in zip(labels, a, b, strict=True)}
    return dataclasses.replace(verdict, measured=measured)


def check(rows: Rows, cfg: Mapping[str, Any]) -> list[Claim]:
    """The schemes against the mis-tuned split (mean field), then the simulation claims."""
    claims: list[Claim] = []
    lam_hat = cfg["lam_hat"]
    wrong = [rho for rho in cfg["rho_grid"] if abs(rho - lam_hat) >= WRONG_LOAD_GAP - 1e-12]
    for name in named_systems(cfg):
        mf = {
            (r["policy"], r["rho"]): r["value"]
            for r in select(rows, method="mf", quantity="mean_sojourn", system=name)
        }
        # "The arrival rate cannot be estimated": judge the tuned split away from λ̂, where
        # its estimate is wrong (at λ̂ itself it is the best static split by construction).
        # Mean field (the paper's limit): exact values, +∞ where the split overloads a type.
        best = [_mf_estimate(min(mf[("scheme1", rho)], mf[("scheme2", rho)])) for rho in wrong]
        tuned = [_mf_estimate(mf.get(("typed-tuned", rho))) for rho in wrong]
        labels = [f"ρ = {rho:g}" for rho in wrong]
        at_hat = ""
        if ("typed-tuned", lam_hat) in mf and ("scheme1", lam_hat) in mf:
            own = mf[("typed-tuned", lam_hat)]
            sch = min(mf[("scheme1", lam_hat)], mf[("scheme2", lam_hat)])
            at_hat = f"; at λ̂ itself (split tuned right) schemes {sch:.4g} vs split {own:.4g}" + (
                ": the schemes win there too, so their lead is not due to mis-tuning alone "
                "(they sample d_j servers of every type)"
                if sch < own
                else ": the correctly tuned split wins there"
            )
        note = (
            f"mean field, best of Schemes 1/2 against the split optimised for λ̂ = "
            f"{lam_hat:g}·capacity, at loads |ρ − λ̂| ≥ {WRONG_LOAD_GAP:g} (an unstable split "
            f"is E[T] = ∞){at_hat}; {_RECONSTRUCTED}, and this verdict hinges on it"
        )
        control = (
            "reverse comparison (the negation): the mis-tuned split significantly below the "
            "schemes at every such load",
            _on_exact(better(tuned, best, quantifier="all", labels=labels), tuned, best, labels),
        )
        claims.append(
            make_claim(
                f"{name}: where the arrival rate cannot be estimated, Schemes 1/2 can give a "
                f"lower mean response time than type-based SQ(d) with a split tuned for a wrong "
                f"load (some load |ρ − λ̂| ≥ {WRONG_LOAD_GAP:g})",
                _on_exact(
                    better(best, tuned, quantifier="any", labels=labels), best, tuned, labels
                ),
                control=control,
                details=note,
            )
        )
        claims.append(
            make_claim(
                f"{name}: Schemes 1/2 give a lower mean response time than the mis-tuned split "
                f"at every load |ρ − λ̂| ≥ {WRONG_LOAD_GAP:g} (stricter than the paper)",
                _on_exact(
                    better(best, tuned, quantifier="all", labels=labels), best, tuned, labels
                ),
                control=(
                    "reverse comparison: the mis-tuned split significantly below the schemes "
                    "at some such load",
                    _on_exact(
                        better(tuned, best, quantifier="any", labels=labels), tuned, best, labels
                    ),
                ),
                source="lbrepro",
                details=note,
            )
        )
    claims.extend(_check_sojourn_sim(rows, cfg))
    return claims


def _sim_keys(rows: Rows) -> list[tuple[str, float]]:
    """The (system, load) pairs that have a simulation, sorted."""
    return sorted({(r["system"], r["rho"]) for r in select(rows, method="sim")})


def _check_sojourn_sim(rows: Rows, cfg: Mapping[str, Any]) -> list[Claim]:
    """Simulation: the schemes against the baselines, and the refined mean field at N."""
    sims = {
        (r["system"], r["policy"], r["rho"]): r
        for r in select(rows, method="sim", quantity="mean_sojourn")
    }
    if not sims:
        raise EmptyComparisonError("hetero-sojourn: no simulated point")
    # The better scheme at each simulated load against every simulated baseline there.
    a, b, labels = [], [], []
    for name, rho in _sim_keys(rows):
        schemes = [sims[(name, s, rho)] for s in ("scheme1", "scheme2") if (name, s, rho) in sims]
        if not schemes:
            continue
        scheme = min(schemes, key=lambda r: r["value"])
        for base in ("sqd", "typed", "random"):
            if (name, base, rho) in sims:
                a.append(estimate(scheme))
                b.append(estimate(sims[(name, base, rho)]))
                labels.append(f"{name} ρ = {rho:g} vs {POLICY_LABELS[base]}")
    claims: list[Claim] = []
    if a:
        claims.append(
            make_claim(
                f"the better of Schemes 1/2 has a significantly lower simulated E[T] "
                f"(N = {cfg['N']}) than every simulated baseline (whole-system SQ(d) where "
                "stable, type-based SQ(d) with p ∝ γC, random ∝ capacity) at every simulated "
                "load",
                better(a, b, quantifier="all", labels=labels),
                control=(
                    "reverse comparison: some baseline significantly below the schemes",
                    better(b, a, quantifier="any", labels=labels),
                ),
                source="lbrepro",
                details="simulation, 95% CIs in quadrature, Bonferroni over the pairs",
            )
        )
    # Finite N: the refined mean field u + V/N is the prediction at this N (no allowance).
    ests, refs, ctrl, labels = [], [], [], []
    grid = sorted(cfg["rho_grid"])
    for (name, policy, rho), sim in sorted(sims.items()):
        rmf = select(rows, method="rmf", quantity="mean_sojourn", system=name, policy=policy)
        rmf = [r for r in rmf if r["rho"] == rho]
        mf = {
            r["rho"]: r["value"]
            for r in select(rows, method="mf", quantity="mean_sojourn", system=name, policy=policy)
        }
        i = grid.index(rho)
        neighbour = grid[i - 1] if i > 0 else grid[i + 1] if len(grid) > 1 else None
        if not rmf or neighbour is None or mf.get(neighbour) is None:
            continue
        ests.append(estimate(sim))
        refs.append(rmf[0]["value"])
        ctrl.append(mf[neighbour])
        labels.append(f"{name} {POLICY_LABELS[policy]} ρ = {rho:g}")
    claims.append(
        make_claim(
            f"finite-N: the refined mean field E[T] + V/N lies within the simulation's CI at "
            f"N = {cfg['N']} at every simulated point",
            within(ests, refs, labels=labels),
            control=(
                "the mean field at the neighbouring grid load must be rejected by the same test",
                within(ests, ctrl, labels=labels),
            ),
            source="lbrepro",
            details=f"{len(ests)} simulated (system, policy, load) points",
        )
    )
    return claims


def plot(rows: Rows, cfg: Mapping[str, Any]):
    """E[T] against load per system: mean-field lines per policy, simulated markers."""
    names = list(named_systems(cfg))
    fig, axes = new_figure(1, len(names), width=3.6 * len(names), height=3.4)
    for ax, name in zip(axes[0], names, strict=True):
        for i, policy in enumerate(cfg["policies"]):
            mf = sorted(
                (
                    r
                    for r in select(rows, method="mf", system=name, policy=policy)
                    if r["value"] is not None
                ),
                key=lambda r: r["rho"],
            )
            ax.plot(
                [r["rho"] for r in mf],
                [r["value"] for r in mf],
                lw=1.4,
                label=POLICY_LABELS[policy],
                **POLICY_STYLE[policy],
            )
            sim = sorted(
                (
                    r
                    for r in select(rows, method="sim", system=name, policy=policy)
                    if r["value"] is not None
                ),
                key=lambda r: r["rho"],
            )
            ax.errorbar(
                [r["rho"] for r in sim],
                [r["value"] for r in sim],
                yerr=[
                    [r["value"] - r["ci_low"] for r in sim],
                    [r["ci_high"] - r["value"] for r in sim],
                ],
                color=POLICY_STYLE[policy]["color"],
                capsize=2,
                **METHOD_STYLE["sim"] | {"label": f"simulation, N = {cfg['N']}" if not i else None},
            )
        ax.set(
            yscale="log", xlabel="load ρ = λ/(μΣγC)", ylabel="E[T] (mean service times)", title=name
        )
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=3)
    return fig


ARTIFACT = Artifact(
    id="hetero-sojourn",
    slug="hetero",
    kind="figure",
    title="Mean sojourn time against load, six routing policies",
    caption=(
        "E[T] against ρ = λ/(μΣγC) for H2, H2x and H3: Scheme 1, Scheme 2, whole-system "
        "SQ(d), type-based SQ(d) with p ∝ γC and tuned for λ̂, static random routing ∝ "
        "capacity. Lines: mean field (absent where the policy is unstable); markers: "
        "simulation with N servers, 95% CI."
    ),
    methods=("MF", "SIM"),
    points=points,
    cost=simulation_cost,
    compute=compute,
    check=check,
    plot=plot,
    validate=validate,
    reconstructions=(
        "Section 6's parameters are not in the seed: the systems H2 = γ (0.5, 0.5), C (1, 2); "
        "H2x = γ (0.8, 0.2), C (1, 10); H3 = γ (0.5, 0.3, 0.2), C (1, 2, 4), d = 2 per type, "
        "and λ̂ = 0.5·capacity for the tuned split are our choice.",
    ),
)
