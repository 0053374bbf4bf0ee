"""``hetero-chaos``: covariance of two tagged servers' occupancies against N (propagation of
chaos)."""

from __future__ import annotations

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
from lbrepro.artifacts.hetero.estimates import signed
from lbrepro.artifacts.hetero.policies import POLICY_LABELS
from lbrepro.artifacts.registry import Artifact, Rows
from lbrepro.core.claims import Claim, make_claim
from lbrepro.core.ids import add_point
from lbrepro.core.io import select
from lbrepro.core.stats import Estimate
from lbrepro.core.verdicts import (
    Verdict,
    better,
    estimate,
    trend,
)
from lbrepro.models import hetero as model
from lbrepro.plotting.style import color, new_figure


def validate(cfg: Mapping[str, Any]) -> None:
    """Systems and the load checked before any job runs."""
    validate_systems("hetero-chaos", cfg)
    check_load("hetero-chaos.rho", cfg["rho"])


def points(cfg: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """One simulation per (system, N), each of the same total server-time."""
    points: dict[str, dict[str, Any]] = {}
    for name, spec in named_systems(cfg).items():
        for N in cfg["N"]:
            params = {
                "system": name,
                "spec": spec,
                "policy": cfg["policy"],
                "rho": cfg["rho"],
                "N": N,
                "horizon": cfg["warmup"] + cfg["server_time"] / N,
                "warmup": cfg["warmup"],
                "batches": cfg["batches"],
            }
            add_point(points, f"{name}-N{N}", params, "N")
    return points


def _variance(sim: Any, j: int) -> dict[str, float]:
    """Var(q) of a type-j server from its tail u_k, with a linear (conservative) 95% bound.

    Var = Σ_k (2k − 1)u_k − (Σ_k u_k)²; the half-width adds |∂Var/∂u_k|·h_k over the levels
    (the u_k's CIs are correlated, so their worst case, not quadrature).
    """
    u = np.asarray(sim.u[j], dtype=float)[1:]
    half = (np.asarray(sim.u_ci_high[j], dtype=float) - np.asarray(sim.u_ci_low[j], dtype=float))[
        1:
    ] / 2
    k = np.arange(1, u.size + 1)
    m = float(u.sum())
    value = float(((2 * k - 1) * u).sum() - m**2)
    h = float((np.abs(2 * k - 1 - 2 * m) * np.nan_to_num(half)).sum())
    return {"value": value, "ci_low": value - h, "ci_high": value + h}


def compute(p: dict[str, Any], seed: np.random.SeedSequence) -> Rows:
    """Tagged-server covariances (same and cross type) and the tagged variance, per type."""
    system = system_from_spec(p["spec"])
    sim = model.simulate(
        system,
        p["rho"] * system.total_capacity,
        policy=p["policy"],
        N=p["N"],
        horizon=p["horizon"],
        warmup=p["warmup"],
        seed=seed,
        batches=p["batches"],
        chaos=True,
    )
    base = {
        "system": p["system"],
        "policy": p["policy"],
        "rho": p["rho"],
        "method": "sim",
        "N": p["N"],
        "seed": seed.entropy,
        "batches": sim.batches,
    }
    rows: Rows = []
    for j in range(system.num_types):
        # The control's quantity: the variance of one tagged server's occupancy, which
        # propagation of chaos leaves at its mean-field value (it does not vanish with N).
        rows.append(base | {"quantity": "var_tagged", "type_a": j, "type_b": j} | _variance(sim, j))
        value, lo, hi = sim.cov_same[j], sim.cov_same_ci_low[j], sim.cov_same_ci_high[j]
        rows.append(
            base
            | {
                "quantity": "cov_same",
                "type_a": j,
                "type_b": j,
                "value": value,
                "ci_low": lo,
                "ci_high": hi,
            }
        )
        for i in range(j + 1, system.num_types):
            value = sim.cov_cross[j, i]
            lo, hi = sim.cov_cross_ci_low[j, i], sim.cov_cross_ci_high[j, i]
            rows.append(
                base
                | {
                    "quantity": "cov_cross",
                    "type_a": j,
                    "type_b": i,
                    "value": value,
                    "ci_low": lo,
                    "ci_high": hi,
                }
            )
    return rows


def _vanishes(Ns: list[int], ests: list[Estimate]) -> Verdict:
    """A sequence tends to 0 as N grows, as far as a finite sweep can show it.

    Both needed: :func:`trend` ``to_zero`` (a significant fall to below half the first
    value), and N·x not significantly larger at the largest N than at the smallest — the
    O(1/N) rate of the mean-field expansion. The second part separates a vanishing sequence
    from one falling towards a positive limit (which a short sweep can also halve).
    """
    falls = trend(Ns, ests, "to_zero", ratio=0.5)
    scaled = [signed(e, 1.0, N) for e, N in zip(ests, Ns, strict=True)]
    rate = better([scaled[-1]], [scaled[0]], strict=False, labels=["N·x, largest vs smallest N"])
    return Verdict(
        passed=bool(falls.passed and rate.passed),
        measured={"fall z": falls.measured, "N·x rise z": -rate.measured},
        expected=f"{falls.expected}; and N·x not significantly rising",
        tolerance=f"{falls.tolerance}; {rate.tolerance}",
        details=f"{falls.details}; N·x: {rate.details}",
    )


def check(rows: Rows, cfg: Mapping[str, Any]) -> list[Claim]:
    """Each tagged covariance vanishes with N; control: the tagged variance, which does not."""
    claims = []
    for name in named_systems(cfg):
        variance: dict[int, Verdict] = {}
        for q in ("cov_same", "cov_cross"):
            series = select(rows, system=name, quantity=q)
            pairs = sorted({(r["type_a"], r["type_b"]) for r in series})
            for a, b in pairs:
                pts = sorted(select(series, type_a=a, type_b=b), key=lambda r: r["N"])
                Ns = [r["N"] for r in pts]
                ests = [estimate(r) for r in pts]
                # Judge the covariance with the sign it has at the smallest N (it may be < 0).
                sign = -1.0 if ests[0].mean < 0 else 1.0
                if a not in variance:
                    var = sorted(
                        select(rows, system=name, quantity="var_tagged", type_a=a),
                        key=lambda r: r["N"],
                    )
                    variance[a] = _vanishes([r["N"] for r in var], [estimate(r) for r in var])
                claims.append(
                    make_claim(
                        f"{name}: the covariance of two tagged servers (types {a + 1}, {b + 1}) "
                        "vanishes as N grows (propagation of chaos at equilibrium)",
                        _vanishes(Ns, [signed(e, sign) for e in ests]),
                        control=(
                            f"the variance of one tagged type-{a + 1} server (its covariance "
                            "with itself, which chaos leaves at the mean-field value), same "
                            "statistic",
                            variance[a],
                        ),
                        details=(
                            "judged with CIs: significant fall from the smallest to the largest "
                            "N to below half, no significant rise between neighbours, and N·Cov "
                            "not significantly rising (the mean-field O(1/N) rate: a finite "
                            "sweep cannot otherwise tell a vanishing limit from a small one)"
                        ),
                    )
                )
    return claims


def plot(rows: Rows, cfg: Mapping[str, Any]):
    """|Cov| of two tagged servers against N per system, with a 1/N guide."""
    names = list(named_systems(cfg))
    fig, axes = new_figure(1, len(names), width=4.0 * len(names), height=3.3)
    for ax, name in zip(axes[0], names, strict=True):
        series = [r for r in select(rows, system=name) if r["quantity"] != "var_tagged"]
        for i, (a, b) in enumerate(sorted({(r["type_a"], r["type_b"]) for r in series})):
            pts = sorted(select(series, type_a=a, type_b=b), key=lambda r: r["N"])
            ax.errorbar(
                [r["N"] for r in pts],
                [abs(r["value"]) for r in pts],
                yerr=[(r["ci_high"] - r["ci_low"]) / 2 for r in pts],
                color=color(i),
                marker="o",
                capsize=2,
                ls="-",
                lw=0.8,
                label=f"types {a + 1}–{b + 1}" + (" (same)" if a == b else ""),
            )
        Ns = np.array(sorted(cfg["N"]), dtype=float)
        ax.plot(Ns, Ns[0] / Ns * 0.1, color="0.5", ls="-.", lw=0.8, label="∝ 1/N")
        ax.set(
            xscale="log",
            yscale="log",
            xlabel="N (servers)",
            ylabel="|Cov(x_a, x_b)| of two tagged servers",
            title=f"{name}, {POLICY_LABELS[cfg['policy']]}",
        )
        ax.legend(fontsize=7)
    return fig


ARTIFACT = Artifact(
    id="hetero-chaos",
    slug="hetero",
    kind="figure",
    title="Propagation of chaos: tagged-server covariances against N",
    caption=(
        "Absolute stationary covariance of the occupancies of two distinct tagged servers "
        "(same type and different types) against N, with 95% CIs; independence in the limit "
        "(propagation of chaos) means it vanishes, at rate 1/N."
    ),
    methods=("SIM",),
    points=points,
    cost=simulation_cost,
    compute=compute,
    check=check,
    plot=plot,
    validate=validate,
    reconstructions=(
        "The systems (H2, H3 as in hetero-accuracy), the policy, load and N grid are our "
        "choice: the seed proves propagation of chaos but gives no numbers [reconstruction].",
    ),
)
