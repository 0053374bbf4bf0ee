"""Artifacts of the general-service paper (seed 002, Li & Lui; models.md §C).

The paper's closed form is reproduced as published — θ, Π_k, T_d — and set beside the truth:
the exact mean field for phase-type service (cavity queue; it agrees with the (n, phase) ODE
to 1e-8, see tests) and simulation of N FCFS servers for any service distribution.

- ``general-theta-table``: Table 1, θ for Erlang service, m, d = 1..5, under the two readings
  of the seed's example (A: m phases of rate 1, μ = 1/m; B: the printed formula, μ = 1).
- ``general-theta-exp``: θ against μ for exponential service, d = 2 and 3.
- ``general-theta-examples``: θ by quadrature against the closed forms of models.md §C.
- ``general-sojourn``: E[T] against ρ for Erlang-2, d = 2 — published T_d, exact mean field,
  simulation; exponential for reference.
- ``general-tail``: log10 u_k against k at ρ = 0.7, d = 2 for light and heavy tails; the
  Bramson–Lu–Prabhakar threshold β = d/(d − 1) decides doubly exponential against power law.
- ``general-audit``: u_2, u_3, E[T] per distribution and ρ from the closed form, the exact mean
  field (PH only) and simulation, with relative errors and a verdict.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from lbrepro.artifacts.registry import Artifact, Rows, register
from lbrepro.artifacts.supermarket import (
    geometric_control,
    neighbour_load,
    resolution,
    tail_levels,
    tail_shape,
)
from lbrepro.core.claims import Claim, close, consistency, make_claim
from lbrepro.core.errors import ConfigError
from lbrepro.core.ids import add_point, num
from lbrepro.core.io import select
from lbrepro.core.stats import Estimate
from lbrepro.core.verdicts import EmptyComparisonError, Verdict, estimate, within
from lbrepro.models import general as model
from lbrepro.models import service
from lbrepro.plotting.style import METHOD_STYLE, color, new_figure

_PAPER_PH_NOTE = (
    "The exact mean field (method mf) is computed for phase-type service only (exponential, "
    "Erlang, hyperexponential, Coxian): the cavity queue iterated to its fixed point, checked "
    "against the (queue length, phase) ODE to 1e-8 in the tests."
)


def _safe(spec: str) -> str:
    """A point-id fragment from a distribution spec ('lomax:1.5' → 'lomax1.5')."""
    return spec.replace(":", "").replace(",", "-").replace(";", "-").replace("+", "")


def _check_dists(key: str, specs: Any) -> list[service.ServiceDist]:
    out = []
    for i, spec in enumerate(specs):
        try:
            out.append(service.parse(spec))
        except ConfigError as err:
            raise ConfigError(f"{key}[{i}]", str(err)) from None
    return out


def _check_rhos(key: str, rhos: Any) -> None:
    for i, rho in enumerate(rhos):
        if not 0 < rho < 1:
            raise ConfigError(f"{key}[{i}]", f"load rho = {rho} must lie in (0, 1) (stability)")


def _check_sim(key: str, cfg: Mapping[str, Any]) -> None:
    if cfg["warmup"] >= cfg["horizon"]:
        raise ConfigError(f"{key}.warmup", "must be shorter than the horizon")
    if cfg["N"] < 1:
        raise ConfigError(f"{key}.N", "must be >= 1")


# ---------------------------------------------------------------------------------------
# general-theta-table


def _theta_table_points(cfg: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {"table": {"m": list(cfg["m"]), "d": list(cfg["d"])}}


#: The two readings of the seed's Erlang example (Table 1), see the artifact's reconstructions.
READINGS = {
    "A": "m phases of rate 1, μ = 1/m (Ḡ summed to m − 1)",
    "B": "the seed's formula read literally: μ = 1, Ḡ = e^(−x)·Σ_{k=0..m} x^k/k!",
}


def _reading(m: int, reading: str) -> service.ServiceDist:
    """Table 1's Erlang distribution for (m, reading).

    Reading A: m phases of rate 1, and θ = ∫(μḠ)^d with μ = 1/m. Reading B: Ḡ summed to m is
    Erlang-(m+1) of rate 1, and μ = 1 in θ, so θ_B = ∫Ḡ^d = mean^d · θ(dist).
    """
    return service.erlang(m if reading == "A" else m + 1, 1.0)


def _theta_table_compute(p: dict[str, Any], seed: np.random.SeedSequence) -> Rows:
    rows: Rows = []
    for reading in READINGS:
        for m in p["m"]:
            dist = _reading(m, reading)
            mu = dist.mu if reading == "A" else 1.0
            scale = 1.0 if reading == "A" else dist.mean  # θ_B = mean^d · θ(dist)
            for d in p["d"]:
                base = {"m": m, "d": d, "mu": mu, "reading": reading, "quantity": "theta"}
                quad = model.theta(dist, d) * scale**d
                exact = model.theta_closed_form(dist, d) * scale**d
                rows.append(base | {"method": "cf", "how": "quadrature", "value": quad})
                rows.append(base | {"method": "cf", "how": "exact", "value": exact})
    return rows


def _theta_grid(rows: Rows, reading: str = "A", how: str = "quadrature"):
    sel = [r for r in select(rows, quantity="theta", how=how) if r.get("reading", "A") == reading]
    return {(int(r["m"]), int(r["d"])): float(r["value"]) for r in sel}


def _monotone(
    grid: Mapping[tuple[int, int], float], along: str, ds: list[int], ms: list[int]
) -> Verdict:
    """θ strictly decreasing in m (at every d in ``ds``) or in d (at every m in ``ms``)."""
    bad = []
    if along == "m":
        pairs = [((m0, d), (m, d)) for d in ds for m0, m in itertools.pairwise(ms)]
    else:
        pairs = [((m, d0), (m, d)) for m in ms for d0, d in itertools.pairwise(ds)]
    if not pairs:
        raise EmptyComparisonError(f"θ monotone in {along}: no pairs to compare")
    bad = [b for a, b in pairs if not grid[b] < grid[a]]
    worst = max(pairs, key=lambda ab: grid[ab[1]] - grid[ab[0]])
    return Verdict(
        passed=not bad,
        measured=f"{len(pairs) - len(bad)}/{len(pairs)} steps decrease",
        expected=f"θ strictly decreasing in {along}",
        tolerance="exact (quadrature, 1e-12 relative)",
        details=(
            f"largest step θ{worst[0]} = {grid[worst[0]]:.6g} → θ{worst[1]} = "
            f"{grid[worst[1]]:.6g}" + (f"; not decreasing at (m, d) = {bad}" if bad else "")
        ),
    )


def _both(va: Verdict, vb: Verdict) -> Verdict:
    """One verdict over readings A and B."""
    return Verdict(
        passed=bool(va.passed and vb.passed),
        measured=f"A: {va.measured}; B: {vb.measured}",
        expected=va.expected,
        tolerance=va.tolerance,
        details=f"A: {va.details}; B: {vb.details}",
    )


def _theta_table_check(rows: Rows, cfg: Mapping[str, Any]) -> list[Claim]:
    ms, ds = sorted(cfg["m"]), sorted(cfg["d"])
    a, b = _theta_grid(rows, "A"), _theta_grid(rows, "B")
    d2 = [d for d in ds if d >= 2]
    errs = []
    for reading in READINGS:
        quad, exact = _theta_grid(rows, reading), _theta_grid(rows, reading, "exact")
        errs += [abs(quad[k] - exact[k]) / exact[k] for k in quad]
    if not errs:
        raise EmptyComparisonError("general-theta-table: no θ values")
    err = max(errs)
    return [
        make_claim(
            "Table 1: θ decreases in the number of Erlang phases m at every d ≥ 2 — holds "
            f"under reading A ({READINGS['A']})",
            _monotone(a, "m", d2, ms),
            control=(
                f"reading B ({READINGS['B']}): the same test on its θ",
                _monotone(b, "m", d2, ms),
            ),
            details="the paper's claim holds under reading A only; see the reconstruction note",
        ),
        consistency(
            "Table 1: θ decreases in d at every m (both readings) — cannot fail: μ ≤ 1 in "
            "both, so μḠ ≤ 1 and its powers decrease",
            _both(_monotone(a, "d", ds, ms), _monotone(b, "d", ds, ms)),
            source="paper",
        ),
        consistency(
            "θ by adaptive quadrature equals the exact Erlang value (polynomial expansion), "
            "both readings",
            close(0.0, float(f"{err:.3g}"), 1e-9),
            details="max relative difference over both tables",
        ),
    ]


def _theta_table_summary(rows: Rows) -> Rows:
    out: Rows = []
    for reading in READINGS:
        grid = _theta_grid(rows, reading)
        ms = sorted({m for m, _ in grid})
        ds = sorted({d for _, d in grid})
        for m in ms:
            out.append(
                {
                    "reading": f"{reading}: {READINGS[reading]}",
                    "m": m,
                    "μ in θ": f"1/{m}" if reading == "A" else "1",
                }
                | {f"d = {d}": f"{grid[m, d]:.6f}" for d in ds}
            )
    return out


register(
    Artifact(
        id="general-theta-table",
        slug="general",
        kind="table",
        title="Table 1: θ for Erlang service",
        caption=(
            "θ = ∫(μḠ(x))^d dx for the paper's Erlang example under two readings: A — m "
            "phases of rate 1 (mean m, μ = 1/m); B — the formula as printed, μ = 1 and "
            "Ḡ(x) = e^(−x)Σ_{k=0..m} x^k/k! (m + 1 phases). Adaptive quadrature, checked "
            "against the exact value from the polynomial expansion of the Erlang survival "
            "function. θ decreases in m under A and increases under B."
        ),
        methods=("CF",),
        points=_theta_table_points,
        compute=_theta_table_compute,
        check=_theta_table_check,
        summary=_theta_table_summary,
        reconstructions=(
            "The seed lost Table 1's numbers; the table is recomputed from the definition of θ.",
            "[reconstruction] The seed's Erlang example is ambiguous: it sets μ = 1 and writes "
            "Ḡ(x) = e^(−μx)Σ_{k=0..m}(μx)^k/k! (m + 1 phases), while θ = ∫(μḠ)^d needs μ = "
            "1/mean. Reading A (used by the other artifacts and by the claim) takes m phases "
            "of rate 1 and μ = 1/m; reading B takes the formula literally (μ = 1). As measured "
            "here, θ decreases in m under reading A (θ scales as mean^(1−d)) and increases "
            'in m under reading B (Ḡ grows with m), so the paper\'s "θ decreases in m" '
            "holds under reading A only. Summing to m or to m − 1 only shifts m by one; "
            "the direction is set by the choice of μ.",
        ),
    )
)

# ---------------------------------------------------------------------------------------
# general-theta-exp


def _theta_exp_points(cfg: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {"curve": {"mu": list(cfg["mu"]), "d": list(cfg["d"])}}


def _theta_exp_compute(p: dict[str, Any], seed: np.random.SeedSequence) -> Rows:
    rows: Rows = []
    for d in p["d"]:
        for mu in p["mu"]:
            dist = service.exponential(mu)
            base = {"d": d, "mu": mu, "quantity": "theta"}
            rows.append(base | {"method": "cf", "how": "quadrature", "value": model.theta(dist, d)})
            rows.append(
                base | {"method": "published", "how": "mu^(d-1)/d", "value": mu ** (d - 1) / d}
            )
    return rows


def _theta_exp_check(rows: Rows, cfg: Mapping[str, Any]) -> list[Claim]:
    pub = {(r["d"], r["mu"]): r["value"] for r in select(rows, method="published")}
    quad = {(r["d"], r["mu"]): r["value"] for r in select(rows, how="quadrature")}
    if not pub:
        raise EmptyComparisonError("general-theta-exp: no published θ values")
    err = max(abs(quad[k] - pub[k]) / pub[k] for k in pub)
    # θ = μ^(d−1)/d is the integral ∫(μe^(−μx))^d dx done by hand: quadrature of the same
    # integral can only confirm it (a formula compared with itself).
    return [
        consistency(
            "Exponential service: θ = μ^(d−1)/d (θ = μ/2 for d = 2, μ²/3 for d = 3) — the "
            "defining integral by quadrature equals the published formula",
            close(0.0, float(f"{err:.3g}"), 1e-9),
            source="paper",
            details="max relative difference between quadrature and the published formula",
        )
    ]


def _theta_exp_plot(rows: Rows, cfg: Mapping[str, Any]):
    fig, axes = new_figure(1, 1, width=5.0, height=3.4)
    ax = axes[0][0]
    for i, d in enumerate(cfg["d"]):
        pub = sorted((r["mu"], r["value"]) for r in select(rows, method="published", d=d))
        quad = sorted((r["mu"], r["value"]) for r in select(rows, how="quadrature", d=d))
        ax.plot(
            *zip(*pub, strict=True),
            color=color(i),
            **METHOD_STYLE["cf"] | {"label": f"d = {d}: μ^{d - 1}/{d} (published)"},
        )
        ax.plot(
            *zip(*quad, strict=True),
            color=color(i),
            ls="none",
            marker="o",
            mfc="none",
            label=f"d = {d}: quadrature",
        )
    ax.set(
        xlabel="μ (service rate, 1/time)",
        ylabel="θ (rate^(d−1))",
        title="θ for exponential service",
    )
    ax.legend()
    return fig


register(
    Artifact(
        id="general-theta-exp",
        slug="general",
        kind="figure",
        title="θ against μ for exponential service",
        caption=(
            "θ = ∫(μe^(−μx))^d dx against the service rate μ for d = 2 (θ = μ/2) and d = 3 "
            "(θ = μ²/3): the published formula (lines) and adaptive quadrature (circles)."
        ),
        methods=("CF",),
        points=_theta_exp_points,
        compute=_theta_exp_compute,
        check=_theta_exp_check,
        plot=_theta_exp_plot,
    )
)

# ---------------------------------------------------------------------------------------
# general-theta-examples


def _theta_examples_points(cfg: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {"examples": {"dists": list(cfg["dists"]), "d": list(cfg["d"])}}


def _validate_examples(cfg: Mapping[str, Any]) -> None:
    _check_dists("general-theta-examples.dists", cfg["dists"])


def _theta_examples_compute(p: dict[str, Any], seed: np.random.SeedSequence) -> Rows:
    rows: Rows = []
    for spec in p["dists"]:
        dist = service.parse(spec)
        for d in p["d"]:
            base = {"dist": spec, "label": dist.label, "d": d, "quantity": "theta"}
            rows.append(base | {"method": "cf", "how": "quadrature", "value": model.theta(dist, d)})
            cf = model.theta_closed_form(dist, d)
            if cf is not None:
                rows.append(base | {"method": "published", "how": "closed form", "value": cf})
    return rows


def _theta_examples_check(rows: Rows, cfg: Mapping[str, Any]) -> list[Claim]:
    claims = []
    for spec in cfg["dists"]:
        pub = {r["d"]: r["value"] for r in select(rows, method="published", dist=spec)}
        if not pub:
            continue
        quad = {r["d"]: r["value"] for r in select(rows, how="quadrature", dist=spec)}
        err = max(abs(quad[d] - pub[d]) / pub[d] for d in pub)
        claims.append(
            consistency(
                f"θ closed form of the paper's example for {service.parse(spec).label} equals "
                "the quadrature ∫(μḠ)^d (the same integral done by hand)",
                close(0.0, float(f"{err:.3g}"), 1e-8),
                source="paper",
                details=f"max relative difference over d = {sorted(pub)}",
            )
        )
    if not claims:
        raise EmptyComparisonError("general-theta-examples: no distribution has a closed form")
    return claims


def _theta_examples_summary(rows: Rows) -> Rows:
    out: Rows = []
    for r in select(rows, how="quadrature"):
        pub = select(rows, method="published", dist=r["dist"], d=r["d"])
        out.append(
            {
                "distribution (mean 1)": r["label"],
                "d": r["d"],
                "θ quadrature": f"{r['value']:.10g}",
                "θ closed form": f"{pub[0]['value']:.10g}" if pub else "—",
            }
        )
    return out


register(
    Artifact(
        id="general-theta-examples",
        slug="general",
        kind="table",
        title="θ for the paper's example distributions",
        caption=(
            "θ for exponential, Erlang, Weibull, Lomax and deterministic service (mean 1): "
            "adaptive quadrature of ∫(μḠ)^d against the closed forms (Weibull μ^(d−1)d^(−1/k), "
            "Lomax μ^(d−1)(α−1)/(dα−1), deterministic μ^(d−1))."
        ),
        methods=("CF",),
        points=_theta_examples_points,
        compute=_theta_examples_compute,
        check=_theta_examples_check,
        summary=_theta_examples_summary,
        validate=_validate_examples,
    )
)

# ---------------------------------------------------------------------------------------
# shared: one distribution at one load, closed form + mean field + simulation


def _sim_rows(sim: Any, seed: np.random.SeedSequence, kmax: int, base: dict[str, Any]) -> Rows:
    common = base | {
        "method": "sim",
        "N": sim.N,
        "seed": seed.entropy,
        "batches": sim.batches,
        "measured_time": sim.horizon - sim.warmup_used,
        "warmup_used": sim.warmup_used,
        "converged": sim.converged,
        "events": sim.events_total,
    }
    rows: Rows = []
    for k in range(kmax + 1):
        inside = k < len(sim.u)
        rows.append(
            common
            | {
                "quantity": "u",
                "k": k,
                "value": float(sim.u[k]) if inside else 0.0,
                "ci_low": float(sim.u_ci_low[k]) if inside else 0.0,
                "ci_high": float(sim.u_ci_high[k]) if inside else 0.0,
            }
        )
    rows.append(
        common
        | {
            "quantity": "mean_sojourn",
            "value": sim.mean_sojourn,
            "ci_low": sim.mean_sojourn_ci[0],
            "ci_high": sim.mean_sojourn_ci[1],
        }
    )
    # The longest queue seen: a sample-path maximum, not an estimate with a CI.
    rows.append(common | {"method": "path", "quantity": "max_queue", "value": sim.max_queue})
    return rows


def _point_rows(
    p: Mapping[str, Any], seed: np.random.SeedSequence, simulate: bool = True, limit: bool = False
) -> Rows:
    """CF (published), MF (PH only) and SIM rows of u_k (k ≤ kmax) and E[T] for one point.

    ``limit``: also simulate N/LIMIT_RATIO servers (rows marked ``role = limit``), for the
    tests of the N → ∞ claims.
    """
    spec, rho, d, kmax = p["dist"], p["rho"], p["d"], p["kmax"]
    dist = service.parse(spec)
    lam = rho / dist.mean
    base = {"dist": spec, "label": dist.label, "rho": rho, "d": d}
    rows: Rows = []
    pub = model.published_tail(dist, lam, d, kmax=kmax, tol=0.0)
    for k in range(kmax + 1):
        rows.append(
            base
            | {
                "method": "cf",
                "quantity": "u",
                "k": k,
                "value": float(pub[k]) if k < pub.size else 0.0,
            }
        )
    t_pub = model.published_sojourn(dist, lam, d)
    rows.append(
        base
        | {
            "method": "cf",
            "quantity": "mean_sojourn",
            "value": t_pub if math.isfinite(t_pub) else "inf",
        }
    )
    rows.append(base | {"method": "cf", "quantity": "theta", "value": model.theta(dist, d)})
    if dist.is_phase_type:
        mf = model.cavity_fixed_point(dist, lam, d)
        for k in range(kmax + 1):
            rows.append(
                base
                | {
                    "method": "mf",
                    "quantity": "u",
                    "k": k,
                    "value": float(mf.u[k]) if k < mf.u.size else 0.0,
                }
            )
        rows.append(
            base | {"method": "mf", "quantity": "mean_sojourn", "value": mf.mean_sojourn(lam)}
        )
    if d == 1:
        rows.append(
            base
            | {
                "method": "cf",
                "quantity": "mg1_mean_sojourn",
                "value": model.mg1_mean_sojourn(dist, lam),
            }
        )
    if simulate:
        sim = model.simulate(
            dist,
            lam,
            d,
            N=p["N"],
            horizon=p["horizon"],
            warmup=p["warmup"],
            seed=seed,
            batches=p["batches"],
        )
        rows += _sim_rows(sim, seed, kmax, base)
        if limit:
            # A second, independent run with N/LIMIT_RATIO servers: with the first it
            # extrapolates to N → ∞ at the 1/N rate (see _extrapolated).
            small = np.random.SeedSequence(seed.entropy, spawn_key=(*seed.spawn_key, 1))
            sim2 = model.simulate(
                dist,
                lam,
                d,
                N=max(p["N"] // LIMIT_RATIO, 2),
                horizon=p["horizon"],
                warmup=p["warmup"],
                seed=small,
                batches=p["batches"],
            )
            rows += [
                r | {"role": "limit"}
                for r in _sim_rows(sim2, small, kmax, base)
                if r["method"] == "sim"
            ]
    return rows


#: The second run of a limit test has N / LIMIT_RATIO servers.
LIMIT_RATIO = 4


def _main(rows: Rows) -> Rows:
    """The rows of the main runs (without the smaller runs of the limit tests)."""
    return [r for r in rows if r.get("role") != "limit"]


def _extrapolated(big: Estimate, small: Estimate) -> Estimate:
    """Richardson extrapolation to N → ∞ of two runs at N1 > N2, assuming E_N = L + c/N.

    L = (N1·E1 − N2·E2)/(N1 − N2); the runs are independent, so the half-widths add in
    quadrature with the same weights. The O(1/N²) remainder is not granted.
    """
    n1, n2 = float(big.N), float(small.N)
    w1, w2 = n1 / (n1 - n2), n2 / (n1 - n2)
    mean = w1 * big.mean - w2 * small.mean
    half = math.hypot(w1 * big.half_width, w2 * small.half_width)
    batches = min(b for b in (big.batches, small.batches) if b) if big.batches else 0
    return Estimate(mean, mean - half, mean + half, half, batches)


def _sim_estimates(
    rows: Rows, spec: str, rho: float, d: int, items: list[tuple[str, int | None]], limit: bool
) -> tuple[list[Estimate], list[float]]:
    """Simulated (quantity, k) of one point as estimates, and each one's resolution allowance.

    ``limit``: the N → ∞ extrapolation of the main and the small run; else the main run. A
    fraction u_k gets the allowance of :func:`resolution` (of the smaller run when
    extrapolating); a mean sojourn time none.
    """
    key = {"dist": spec, "rho": rho, "d": d}
    out, allow = [], []
    for q, k in items:
        sel = select(rows, method="sim", quantity=q, **key)
        if k is not None:
            sel = [r for r in sel if r.get("k") == k]
        main = [r for r in sel if r.get("role") != "limit"]
        small = [r for r in sel if r.get("role") == "limit"]
        if not main or (limit and not small):
            raise EmptyComparisonError(f"no simulation of {q} k={k} at {key} (limit={limit})")
        row = small[0] if limit else main[0]
        e = estimate(main[0])
        if limit:
            e = _extrapolated(e, estimate(small[0]))
        res = resolution(int(row["N"]), float(row["measured_time"])) if q == "u" else 0.0
        out.append(e)
        allow.append(res)
    return out, allow


def _value(rows: Rows, method: str, quantity: str, k: int | None = None, **key: Any):
    sel = select(rows, method=method, quantity=quantity, **key)
    if k is not None:
        sel = [r for r in sel if r.get("k") == k]
    return sel[0] if sel else None


def _num(v: Any) -> float:
    return math.inf if v == "inf" else float(v)


# ---------------------------------------------------------------------------------------
# general-sojourn


def _validate_sojourn(cfg: Mapping[str, Any]) -> None:
    _check_rhos("general-sojourn.rho", cfg["rho"])
    _check_dists("general-sojourn.dists", cfg["dists"])
    _check_sim("general-sojourn", cfg)


def _sojourn_points(cfg: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    keep = ("d", "N", "horizon", "warmup", "batches")
    points: dict[str, dict[str, Any]] = {}
    for spec in cfg["dists"]:
        for rho in cfg["rho"]:
            params = {"dist": spec, "rho": rho, "kmax": 6} | {k: cfg[k] for k in keep}
            add_point(points, f"{_safe(spec)}-rho{num(rho)}", params, "dists, rho")
    return points


Item = tuple[str, int | None]  # (quantity, level k or None)


def _item_label(item: Item, rho: float) -> str:
    k = item[1]
    return f"{'E[T]' if k is None else f'u_{k}'} at ρ={rho:g}"


def _table_ref(rows: Rows, method: str, spec: str, rho: float, d: int, item: Item) -> float | None:
    row = _value(_main(rows), method, item[0], item[1], dist=spec, rho=rho, d=d)
    return None if row is None else _num(row["value"])


def _model_ref(method: str, spec: str, rho: float, d: int, items: list[Item]) -> list[float]:
    """The published form (cf) or the exact PH mean field (mf) at load ρ, recomputed."""
    dist = service.parse(spec)
    lam = rho / dist.mean
    if method == "cf":
        kmax = max((k for _, k in items if k is not None), default=1)
        u = model.published_tail(dist, lam, d, kmax=kmax, tol=0.0)
        t = model.published_sojourn(dist, lam, d)
    else:
        mf = model.cavity_fixed_point(dist, lam, d)
        u, t = mf.u, mf.mean_sojourn(lam)
    return [t if k is None else (float(u[k]) if k < len(u) else 0.0) for _, k in items]


def _against(
    rows: Rows,
    spec: str,
    rhos: list[float],
    d: int,
    items: list[Item],
    method: str,
    limit: bool,
) -> tuple[Verdict, Verdict]:
    """Simulation (N → ∞ extrapolation if ``limit``) against a method, and its control.

    The statistic is :func:`within` over every (ρ, item) together, with the resolution
    allowance of :func:`resolution`; the control replaces the method by the same method at the
    neighbouring load (:func:`neighbour_load`), which the statistic must reject.
    """
    est, allow, refs, alt, labels = [], [], [], [], []
    for rho in rhos:
        e, a = _sim_estimates(rows, spec, rho, d, items, limit)
        est += e
        allow += a
        refs += [_table_ref(rows, method, spec, rho, d, it) for it in items]
        alt += _model_ref(method, spec, neighbour_load(rho), d, items)
        labels += [_item_label(it, rho) for it in items]
    if any(r is None for r in refs):
        raise EmptyComparisonError(f"{spec}: no {method} rows to compare with")
    return (
        within(est, refs, allowance=allow, labels=labels),
        within(est, alt, allowance=allow, labels=labels),
    )


_LIMIT_NOTE = (
    f"N → ∞ estimated from runs at N and N/{LIMIT_RATIO} by Richardson extrapolation at the "
    "1/N rate"
)


_LIMIT_RULE = (
    "Limit rule (ours): the paper's formulas are N → ∞ statements, while a simulation "
    "at N sits O(1/N) away. Each point is also simulated with N/4 servers (an "
    "independent stream) and the two runs are extrapolated to N → ∞ at the 1/N rate "
    "(Richardson: (4·E_N − E_(N/4))/3, CI in quadrature); the published form and the "
    "exact mean field are judged against that limit, inside its Bonferroni-widened 95% "
    "CI plus the resolution 1/(N·T) of a time-averaged fraction. The comparison at the "
    "fixed N is kept as a labelled finite-N finding. Controls: the same reference at "
    "the neighbouring load ρ − 0.02."
)


def _neighbours(rhos: list[float]) -> str:
    return ", ".join(f"{neighbour_load(r):g}" for r in rhos)


def _sojourn_check(rows: Rows, cfg: Mapping[str, Any]) -> list[Claim]:
    claims: list[Claim] = []
    d, N, rhos = cfg["d"], cfg["N"], list(cfg["rho"])
    items: list[Item] = [("mean_sojourn", None)]
    for spec in cfg["dists"]:
        dist = service.parse(spec)
        label = dist.label
        claim, ctrl = _against(rows, spec, rhos, d, items, "cf", limit=True)
        claims.append(
            make_claim(
                f"{label}, d = {d}: the published sojourn time T_d is the N → ∞ mean sojourn "
                "time at every ρ",
                claim,
                control=(f"the published T_d at the neighbouring loads {_neighbours(rhos)}", ctrl),
                details=_LIMIT_NOTE,
            )
        )
        if not dist.is_phase_type:
            continue
        claim, ctrl = _against(rows, spec, rhos, d, items, "mf", limit=True)
        claims.append(
            make_claim(
                f"{label}, d = {d}: the exact PH mean-field E[T] is the N → ∞ mean sojourn time "
                "at every ρ",
                claim,
                control=(f"the mean field at the neighbouring loads {_neighbours(rhos)}", ctrl),
                source="lbrepro",
                details=_LIMIT_NOTE,
            )
        )
        claim, ctrl = _against(rows, spec, rhos, d, items, "mf", limit=False)
        claims.append(
            make_claim(
                f"{label}, d = {d}: finite-N finding — at N = {N} the simulated E[T] lies within "
                "its CI of the exact PH mean field at every ρ (no 1/N allowance)",
                claim,
                control=(f"the mean field at the neighbouring loads {_neighbours(rhos)}", ctrl),
                source="lbrepro",
            )
        )
    return claims


def _sojourn_plot(rows: Rows, cfg: Mapping[str, Any]):
    rows = _main(rows)
    fig, axes = new_figure(1, 2, width=8.5, height=3.5)
    ax, ax_err = axes[0]
    d = cfg["d"]
    for i, spec in enumerate(cfg["dists"]):
        c = color(i)
        label = service.parse(spec).label
        rhos = sorted(cfg["rho"])
        cf = [
            _num(_value(rows, "cf", "mean_sojourn", dist=spec, rho=r, d=d)["value"]) for r in rhos
        ]
        mf = [_value(rows, "mf", "mean_sojourn", dist=spec, rho=r, d=d) for r in rhos]
        sim = [_value(rows, "sim", "mean_sojourn", dist=spec, rho=r, d=d) for r in rhos]
        ax.plot(rhos, cf, color=c, **METHOD_STYLE["cf"] | {"label": f"{label}: published T_d"})
        if all(m is not None for m in mf):
            ax.plot(
                rhos,
                [m["value"] for m in mf],
                color=c,
                **METHOD_STYLE["mf"] | {"label": f"{label}: exact mean field"},
            )
        ax.errorbar(
            rhos,
            [s["value"] for s in sim],
            yerr=[
                [s["value"] - s["ci_low"] for s in sim],
                [s["ci_high"] - s["value"] for s in sim],
            ],
            color=c,
            capsize=2,
            **METHOD_STYLE["sim"] | {"label": f"{label}: simulation"},
        )
        ax_err.plot(
            rhos,
            [100 * (a - s["value"]) / s["value"] for a, s in zip(cf, sim, strict=True)],
            color=c,
            marker="o",
            label=f"{label}: published − sim",
        )
    ax.set(
        xlabel="ρ (load)", ylabel="E[T] (mean service times)", title=f"Mean sojourn time, d = {d}"
    )
    ax_err.axhline(0, color="0.5", lw=0.8)
    ax_err.set(
        xlabel="ρ (load)",
        ylabel="relative error of T_d (%)",
        title="Published formula vs simulation",
    )
    ax.legend(fontsize=7)
    ax_err.legend(fontsize=7)
    return fig


def _sojourn_summary(rows: Rows) -> Rows:
    rows = _main(rows)
    out: Rows = []
    for s in select(rows, method="sim", quantity="mean_sojourn"):
        key = {"dist": s["dist"], "rho": s["rho"], "d": s["d"]}
        cf = _num(_value(rows, "cf", "mean_sojourn", **key)["value"])
        mf = _value(rows, "mf", "mean_sojourn", **key)
        out.append(
            {
                "service": s["label"],
                "ρ": s["rho"],
                "published T_d": f"{cf:.4f}",
                "exact mean field": f"{mf['value']:.4f}" if mf else "—",
                "simulation (95% CI)": f"{s['value']:.4f} [{s['ci_low']:.4f}, {s['ci_high']:.4f}]",
                "published error": f"{100 * (cf - s['value']) / s['value']:+.1f}%",
            }
        )
    return out


register(
    Artifact(
        id="general-sojourn",
        slug="general",
        kind="figure",
        title="Mean sojourn time with Erlang-2 service: published formula vs truth",
        caption=(
            "E[T] against ρ with d = 2 for Erlang-2 service (mean 1) and exponential service "
            "for reference: the published T_d built on Π_k (solid), the exact phase-type mean "
            "field (dashed) and simulation of N FCFS servers (markers, 95% batch-means CI). "
            "Right: relative error of the published T_d against simulation."
        ),
        methods=("CF", "MF", "SIM"),
        points=_sojourn_points,
        compute=lambda p, seed: _point_rows(p, seed, limit=True),
        check=_sojourn_check,
        plot=_sojourn_plot,
        summary=_sojourn_summary,
        validate=_validate_sojourn,
        reconstructions=(
            "The paper's E(2,1) is taken as Erlang-2 scaled to mean 1, so ρ = λ; only the time "
            "unit differs from two phases of rate 1.",
            "T_d = Σ_k (Π_{k−1}^d − Π_k^d)[1/μ + 1{k≥2}(E[X_R] + (k−2)/μ)] is models.md's "
            "reconstruction of how the paper builds its sojourn time (the seed lost the "
            "equation).",
            _LIMIT_RULE,
            _PAPER_PH_NOTE,
        ),
    )
)

# ---------------------------------------------------------------------------------------
# general-tail


def _validate_tail(cfg: Mapping[str, Any]) -> None:
    _check_rhos("general-tail.rho", [cfg["rho"]])
    _check_dists("general-tail.dists", cfg["dists"])
    _check_sim("general-tail", cfg)


def _tail_points(cfg: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    keep = ("rho", "d", "N", "horizon", "warmup", "batches", "kmax")
    points: dict[str, dict[str, Any]] = {}
    for spec in cfg["dists"]:
        add_point(points, _safe(spec), {"dist": spec} | {k: cfg[k] for k in keep}, "dists")
    return points


def _power_tail(dist: service.ServiceDist) -> float:
    """β with Ḡ(x) ~ x^−β (inf for lighter-than-power-law tails)."""
    return dist.params["alpha"] if dist.family == "lomax" else math.inf


def _sim_tail(rows: Rows, spec: str, rho: float, d: int) -> tuple[dict[int, Estimate], int]:
    """The main run's simulated u_k of one distribution as estimates, and its N."""
    sel = select(_main(rows), method="sim", quantity="u", dist=spec, rho=rho, d=d)
    if not sel:
        raise EmptyComparisonError(f"general-tail: no simulated u_k for {spec}")
    return {int(r["k"]): estimate(r) for r in sel}, int(sel[0]["N"])


def _tail_check(rows: Rows, cfg: Mapping[str, Any]) -> list[Claim]:
    rho, d = cfg["rho"], cfg["d"]
    beta_star = d / (d - 1) if d > 1 else math.inf
    claims: list[Claim] = []
    for spec in cfg["dists"]:
        dist = service.parse(spec)
        beta = _power_tail(dist)
        u, N = _sim_tail(rows, spec, rho, d)
        theory = "doubly exponential" if beta > beta_star else "power law"
        longest = select(rows, method="path", quantity="max_queue", dist=spec, rho=rho, d=d)
        deepest = int(longest[0]["value"]) if longest else max(u)
        blp = (
            f"Bramson–Lu–Prabhakar: Ḡ ~ x^−{beta:g}, β {'>' if beta > beta_star else '<'} "
            f"d/(d−1) = {beta_star:g} ⇒ {theory}"
            if math.isfinite(beta)
            else "light-tailed service: doubly exponential expected"
        )
        claims.append(
            make_claim(
                "“Doubly exponential even for heavy tails” (the paper: for every service law "
                "of finite mean): "
                f"{dist.label}, d = {d}, ρ = {rho:g} — simulated u_k decay doubly "
                f"exponentially — log(−log u_k) rises significantly faster than for a geometric "
                f"tail (N = {N})",
                tail_shape(u, d, N, base=False),
                control=(
                    f"the geometric tail ρ^k (d = 1) at ρ = {rho:g}, with the claim's relative CI",
                    tail_shape(geometric_control(rho, u, N), d, N, base=False),
                ),
                details=f"{blp}; longest queue seen: {deepest} jobs",
            )
        )
        geo = geometric_control(rho, u, N)
        claims.append(
            make_claim(
                f"{dist.label}, d = {d}, ρ = {rho:g}: the published Π_k's rate — log(−log u_k) "
                f"rises with slope log d = {math.log(d):.3f}, as Π_k = ρ^((d^k−1)/(d−1))·"
                f"θ^((d^(k−1)−1)/(d−1)) predicts for every service law (simulation, N = {N})",
                tail_shape(u, d, N),
                control=(
                    f"the geometric tail ρ^k (d = 1) at ρ = {rho:g}, with the claim's relative CI",
                    tail_shape(geo, d, N),
                ),
                details=f"{blp}; the doubly exponential regime of a power-law tail need not "
                "have base d",
            )
        )
        # Work conservation: u_1 = ρ in equilibrium whatever the policy, so this cannot fail
        # in a stationary run; a failure flags a warm-up too short for the service tail (heavy
        # tails relax like ∫_t^∞ Ḡ, i.e. t^{1−β}).
        claims.append(
            consistency(
                f"{dist.label}: the simulation is in equilibrium — time-average busy fraction "
                "u_1 equals ρ (work conservation)",
                within([u[1]], [rho], allowance=resolution(N, _measured_time(rows, spec))),
            )
        )
        est, allow = _sim_estimates(rows, spec, rho, d, [("u", 2), ("u", 3)], limit=False)
        refs = [_table_ref(rows, "cf", spec, rho, d, ("u", k)) for k in (2, 3)]
        alt = _model_ref("cf", spec, neighbour_load(rho), d, [("u", 2), ("u", 3)])
        labels = ["u_2", "u_3"]
        claims.append(
            make_claim(
                f"{dist.label}, d = {d}, ρ = {rho:g}: finite-N finding — at N = {N} the "
                "simulated u_2, u_3 lie within their CI of the published Π_2, Π_3",
                within(est, refs, allowance=allow, labels=labels),
                control=(
                    f"the published Π_2, Π_3 at the neighbouring load {neighbour_load(rho):g}",
                    within(est, alt, allowance=allow, labels=labels),
                ),
                source="lbrepro",
                details="the N → ∞ test of the published form is general-audit's",
            )
        )
    return claims


def _measured_time(rows: Rows, spec: str) -> float:
    return float(select(_main(rows), method="sim", quantity="u", dist=spec)[0]["measured_time"])


def _tail_plot(rows: Rows, cfg: Mapping[str, Any]):
    rows = _main(rows)
    rho, d = cfg["rho"], cfg["d"]
    fig, axes = new_figure(1, 2, width=9.0, height=3.8)
    ax, ax_ll = axes[0]
    beta_star = d / (d - 1) if d > 1 else math.inf
    for i, spec in enumerate(cfg["dists"]):
        c = color(i)
        dist = service.parse(spec)
        key = {"dist": spec, "rho": rho, "d": d}
        sim = sorted(select(rows, method="sim", quantity="u", **key), key=lambda r: r["k"])
        cf = sorted(select(rows, method="cf", quantity="u", **key), key=lambda r: r["k"])
        tag = dist.label
        if dist.family == "lomax":
            tag += " (β > d/(d−1))" if _power_tail(dist) > beta_star else " (β < d/(d−1))"
        pos = [r for r in sim if r["value"] > 0 and r["k"] >= 1]
        ax.errorbar(
            [r["k"] for r in pos],
            [math.log10(r["value"]) for r in pos],
            color=c,
            **METHOD_STYLE["sim"] | {"label": tag},
            ms=3,
        )
        cfp = [r for r in cf if r["value"] > 1e-12 and r["k"] >= 1]
        ax.plot(
            [r["k"] for r in cfp],
            [math.log10(r["value"]) for r in cfp],
            color=c,
            **METHOD_STYLE["cf"] | {"label": None},
            lw=0.9,
        )
        mf = [r for r in select(rows, method="mf", quantity="u", **key) if r["value"] > 1e-12]
        if mf:
            mf = sorted(mf, key=lambda r: r["k"])
            ax.plot(
                [r["k"] for r in mf if r["k"] >= 1],
                [math.log10(r["value"]) for r in mf if r["k"] >= 1],
                color=c,
                **METHOD_STYLE["mf"] | {"label": None},
                lw=0.9,
            )
        ll = [(r["k"], math.log(-math.log(r["value"]))) for r in pos if r["value"] < 1]
        if ll:
            ax_ll.plot(*zip(*ll, strict=True), color=c, marker="o", ms=3, lw=0.8, label=tag)
    # The guide stops a little above the highest plotted point so it does not squash the data.
    top = max((y for line in ax_ll.get_lines() for y in line.get_ydata()), default=3.0) + 1.0
    ks = np.arange(1, cfg["kmax"] + 1)
    guide = math.log(-math.log(rho)) + (ks - 1) * math.log(d)
    ax_ll.plot(
        ks[guide <= top],
        guide[guide <= top],
        color="0.4",
        ls="--",
        lw=0.8,
        label="slope log d (doubly exponential)",
    )
    ax.set(
        xlabel="k (jobs)",
        ylabel="log10 u_k",
        ylim=(-7, 0.2),
        title=f"Tail fractions, d = {d}, ρ = {rho:g}, N = {cfg['N']}",
    )
    ax_ll.set(
        xlabel="k (jobs)",
        ylabel="log(−log u_k)",
        title=f"log(−log u_k); BLP threshold β* = d/(d−1) = {beta_star:g}",
    )
    ax.plot([], [], color="k", **METHOD_STYLE["cf"] | {"label": "published Π_k"})
    ax.plot([], [], color="k", **METHOD_STYLE["mf"] | {"label": "exact mean field (PH)"})
    ax.legend(fontsize=7, loc="upper right")
    ax_ll.legend(fontsize=7, loc="upper left")
    return fig


def _tail_summary(rows: Rows) -> Rows:
    rows = _main(rows)
    out: Rows = []
    for s in select(rows, method="path", quantity="max_queue"):
        key = {"dist": s["dist"], "rho": s["rho"], "d": s["d"]}
        u_est, N = _sim_tail(rows, s["dist"], s["rho"], s["d"])
        shape = (
            tail_shape(u_est, s["d"], N, base=False) if len(tail_levels(u_est, N)) >= 2 else None
        )
        u = {r["k"]: r for r in select(rows, method="sim", quantity="u", **key)}
        cf = {r["k"]: r["value"] for r in select(rows, method="cf", quantity="u", **key)}
        out.append(
            {
                "service": s["label"],
                "sim u_1 (= ρ in equilibrium)": f"{u[1]['value']:.4f}",
                "sim u_2": f"{u[2]['value']:.4g}",
                "published Π_2": f"{cf[2]:.4g}",
                "sim u_4": f"{u[4]['value']:.3g}" if 4 in u else "—",
                "published Π_4": f"{cf.get(4, 0.0):.3g}",
                "log(−log u_k) slope": "—" if shape is None else f"{shape.measured:.3f}",
                "largest queue": int(s["value"]),
                "events": f"{s['events']:.3g}",
            }
        )
    return out


register(
    Artifact(
        id="general-tail",
        slug="general",
        kind="figure",
        title="Queue-length tails for light and heavy service tails",
        caption=(
            "log10 u_k against k with d = 2 at ρ = 0.7: simulation of N FCFS servers (markers) "
            "against the published Π_k (solid) and, for phase-type service, the exact mean "
            "field (dashed). Right: log(−log u_k), which grows with slope log d when the decay is "
            "doubly exponential and flattens for a power law. Bramson, Lu & Prabhakar (2013): "
            "for Ḡ(x) ~ x^−β the tail is doubly exponential iff β > d/(d − 1) = 2."
        ),
        methods=("CF", "MF", "SIM"),
        points=_tail_points,
        compute=lambda p, seed: _point_rows(p, seed),
        check=_tail_check,
        plot=_tail_plot,
        summary=_tail_summary,
        validate=_validate_tail,
        reconstructions=(
            "Heavy-tailed service (Lomax α = 1.5 has infinite variance) makes batch means "
            "correlated over long stretches: the horizon is set long (see config) and the CI "
            "comes from batch means over it.",
            "Doubly exponential verdict (ours): the slope of log(−log u_k), fitted by weighted "
            "least squares over the deepest 3 levels held by ≥ 10 servers on average, must "
            "have its 95% interval wholly above the slope a geometric tail ρ^k has at the same "
            "levels (log k against k). The control applies the same statistic to the "
            "geometric tail ρ^k at the same load with the claim's relative CI. The published "
            "Π_k's own rate, slope → log d, is a separate claim (the same fit's 95% interval "
            "must also reach log d): Bramson, Lu & Prabhakar's doubly exponential regime for "
            "power-law tails need not have base d.",
            "Runs start empty. With Ḡ(x) ~ x^−β the busy fraction relaxes to ρ only like "
            "t^(1−β) (t^−0.5 for Lomax α = 1.5), so a check that the simulated u_1 equals ρ is "
            "reported for every distribution as an equilibrium diagnostic (a consistency check: "
            "work conservation).",
            _PAPER_PH_NOTE,
        ),
    )
)

# ---------------------------------------------------------------------------------------
# general-audit


def _validate_audit(cfg: Mapping[str, Any]) -> None:
    _check_rhos("general-audit.rho", cfg["rho"])
    _check_dists("general-audit.dists", cfg["dists"])
    _check_sim("general-audit", cfg)


def _audit_points(cfg: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    keep = ("d", "N", "horizon", "warmup", "batches")
    points: dict[str, dict[str, Any]] = {}
    for spec in cfg["dists"]:
        for rho in cfg["rho"]:
            params = {"dist": spec, "rho": rho, "kmax": 6} | {k: cfg[k] for k in keep}
            add_point(points, f"{_safe(spec)}-rho{num(rho)}", params, "dists, rho")
    return points


_AUDIT_ITEMS: list[Item] = [("u", 2), ("u", 3), ("mean_sojourn", None)]


def _audit_table(rows: Rows) -> list[dict[str, Any]]:
    """Per (distribution, ρ, quantity): simulation at N, its N → ∞ extrapolation, CF, MF."""
    out = []
    for s in select(_main(rows), method="sim", quantity="mean_sojourn"):
        spec, rho, d = s["dist"], s["rho"], s["d"]
        fixed, _ = _sim_estimates(rows, spec, rho, d, _AUDIT_ITEMS, limit=False)
        has_limit = bool(select(rows, role="limit", dist=spec, rho=rho, d=d))
        lim = _sim_estimates(rows, spec, rho, d, _AUDIT_ITEMS, limit=True)[0] if has_limit else None
        for i, item in enumerate(_AUDIT_ITEMS):
            cf = _table_ref(rows, "cf", spec, rho, d, item)
            mf = _table_ref(rows, "mf", spec, rho, d, item)
            e = fixed[i]
            best = lim[i] if lim else e
            out.append(
                {"dist": spec, "rho": rho, "d": d, "label": s["label"]}
                | {
                    "quantity": "E[T]" if item[1] is None else f"u_{item[1]}",
                    "sim": e.mean,
                    "half": e.half_width,
                    "limit": None if lim is None else lim[i].mean,
                    "limit_half": None if lim is None else lim[i].half_width,
                    "cf": cf,
                    "mf": mf,
                    "rel_cf": (cf - best.mean) / best.mean if best.mean > 0 else math.inf,
                    "rel_mf": None if mf is None else (mf - best.mean) / best.mean,
                    "cf_ok": abs(cf - best.mean) <= best.half_width,
                }
            )
    return out


def _audit_check(rows: Rows, cfg: Mapping[str, Any]) -> list[Claim]:
    claims: list[Claim] = []
    d, N, rhos = cfg["d"], cfg["N"], list(cfg["rho"])
    for spec in cfg["dists"]:
        dist = service.parse(spec)
        label = dist.label
        claim, ctrl = _against(rows, spec, rhos, d, _AUDIT_ITEMS, "cf", limit=True)
        claims.append(
            make_claim(
                f"{label}: the published closed form (Π_2, Π_3, T_d) gives the N → ∞ values "
                "at every ρ",
                claim,
                control=(f"the published form at the neighbouring loads {_neighbours(rhos)}", ctrl),
                details=_LIMIT_NOTE,
            )
        )
        if not dist.is_phase_type:
            continue
        claim, ctrl = _against(rows, spec, rhos, d, _AUDIT_ITEMS, "mf", limit=True)
        claims.append(
            make_claim(
                f"{label}: the exact PH mean field gives the N → ∞ u_2, u_3, E[T] at every ρ",
                claim,
                control=(f"the mean field at the neighbouring loads {_neighbours(rhos)}", ctrl),
                source="lbrepro",
                details=_LIMIT_NOTE,
            )
        )
        claim, ctrl = _against(rows, spec, rhos, d, _AUDIT_ITEMS, "mf", limit=False)
        claims.append(
            make_claim(
                f"{label}: finite-N finding — at N = {N} the simulated u_2, u_3, E[T] lie within "
                "their CI of the exact PH mean field at every ρ (no 1/N allowance)",
                claim,
                control=(f"the mean field at the neighbouring loads {_neighbours(rhos)}", ctrl),
                source="lbrepro",
            )
        )
    return claims


def _audit_summary(rows: Rows) -> Rows:
    out: Rows = []
    for t in _audit_table(rows):
        lim = "—" if t["limit"] is None else f"{t['limit']:.4g} ± {t['limit_half']:.1g}"
        out.append(
            {
                "service": t["label"],
                "ρ": t["rho"],
                "quantity": t["quantity"],
                "published": f"{t['cf']:.4g}",
                "exact MF": "—" if t["mf"] is None else f"{t['mf']:.4g}",
                "simulation ± CI": f"{t['sim']:.4g} ± {t['half']:.1g}",
                "N → ∞ (extrapolated) ± CI": lim,
                "published error": f"{100 * t['rel_cf']:+.1f}%",
                "MF error": "—" if t["rel_mf"] is None else f"{100 * t['rel_mf']:+.2f}%",
                "verdict": "published holds" if t["cf_ok"] else "published fails",
            }
        )
    return out


register(
    Artifact(
        id="general-audit",
        slug="general",
        kind="table",
        title="Audit: the published closed form against the exact mean field and simulation",
        caption=(
            "Per service distribution (mean 1) and load ρ with d = 2: u_2, u_3 and E[T] from the "
            "published closed form (Π_k, T_d), the exact phase-type mean field (cavity queue; PH "
            "service only) and simulation of N FCFS servers (95% batch-means CI); relative "
            "errors against simulation and a verdict. The closed form integrates "
            "∫s_{k−1}(x)^d dx where the probability that all d sampled queues hold ≥ k−1 jobs "
            "is (∫s_{k−1})^d: even for exponential service it gives u_2 = ρ^(d+1)/d instead "
            "of ρ^(d+1)."
        ),
        methods=("CF", "MF", "SIM"),
        points=_audit_points,
        compute=lambda p, seed: _point_rows(p, seed, limit=True),
        check=_audit_check,
        summary=_audit_summary,
        validate=_validate_audit,
        reconstructions=(
            _LIMIT_RULE,
            _PAPER_PH_NOTE,
        ),
    )
)
