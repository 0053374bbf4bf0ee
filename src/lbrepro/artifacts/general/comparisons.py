"""Simulation against the published form and the exact mean field: estimates, the N → ∞
extrapolation, and the claims general-sojourn and general-audit make alike (the published form
is the limit; the mean field is the limit; the finite-N finding), each with its control."""

from __future__ import annotations

import math
from typing import Any

from lbrepro.artifacts.general.point_runs import LIMIT_RATIO, main_rows
from lbrepro.artifacts.registry import Rows
from lbrepro.core.claims import Claim, make_claim
from lbrepro.core.io import select
from lbrepro.core.stats import Estimate
from lbrepro.core.tail_verdicts import neighbour_load, resolution
from lbrepro.core.verdicts import EmptyComparisonError, Verdict, estimate, within
from lbrepro.models import general as model
from lbrepro.models import service

Item = tuple[str, int | None]  # (quantity, level k or None)

LIMIT_NOTE = (
    f"N → ∞ estimated from runs at N and N/{LIMIT_RATIO} by Richardson extrapolation at the "
    "1/N rate"
)

LIMIT_RULE = (
    "Limit rule (ours): the paper's formulas are N → ∞ statements, while a simulation "
    "at N sits O(1/N) away. Each point is also simulated with N/4 servers (an "
    "independent stream) and the two runs are extrapolated to N → ∞ at the 1/N rate "
    "(Richardson: (4·E_N − E_(N/4))/3, CI in quadrature); the published form and the "
    "exact mean field are judged against that limit, inside its Bonferroni-widened 95% "
    "CI plus the resolution 1/(N·T) of a time-averaged fraction. The comparison at the "
    "fixed N is kept as a labelled finite-N finding. Controls: the same reference at "
    "the neighbouring load ρ − 0.02."
)


def extrapolated(big: Estimate, small: Estimate) -> Estimate:
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


def sim_estimates(
    rows: Rows, spec: str, rho: float, d: int, items: list[Item], limit: bool
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
            e = extrapolated(e, estimate(small[0]))
        res = resolution(int(row["N"]), float(row["measured_time"])) if q == "u" else 0.0
        out.append(e)
        allow.append(res)
    return out, allow


def first_row(rows: Rows, method: str, quantity: str, k: int | None = None, **key: Any):
    """The first row of (method, quantity[, level k]) matching ``key``, or None."""
    sel = select(rows, method=method, quantity=quantity, **key)
    if k is not None:
        sel = [r for r in sel if r.get("k") == k]
    return sel[0] if sel else None


def as_float(v: Any) -> float:
    """A table value as a float; the published T_d is stored as "inf" when E[X²] is infinite."""
    return math.inf if v == "inf" else float(v)


def item_label(item: Item, rho: float) -> str:
    """How a compared (quantity, k) at load ρ is named in a verdict's details."""
    k = item[1]
    return f"{'E[T]' if k is None else f'u_{k}'} at ρ={rho:g}"


def table_ref(rows: Rows, method: str, spec: str, rho: float, d: int, item: Item) -> float | None:
    """The published (cf) or mean-field (mf) value of one item as the main rows hold it."""
    row = first_row(main_rows(rows), method, item[0], item[1], dist=spec, rho=rho, d=d)
    return None if row is None else as_float(row["value"])


def model_ref(method: str, spec: str, rho: float, d: int, items: list[Item]) -> list[float]:
    """The published form (cf) or the exact PH mean field (mf) at load ρ, recomputed.

    The controls need the reference at a load no point was computed at.
    """
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


def against(
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
        e, a = sim_estimates(rows, spec, rho, d, items, limit)
        est += e
        allow += a
        refs += [table_ref(rows, method, spec, rho, d, it) for it in items]
        alt += model_ref(method, spec, neighbour_load(rho), d, items)
        labels += [item_label(it, rho) for it in items]
    if any(r is None for r in refs):
        raise EmptyComparisonError(f"{spec}: no {method} rows to compare with")
    return (
        within(est, refs, allowance=allow, labels=labels),
        within(est, alt, allowance=allow, labels=labels),
    )


def neighbours(rhos: list[float]) -> str:
    """The controls' neighbouring loads, listed for a claim's control text."""
    return ", ".join(f"{neighbour_load(r):g}" for r in rhos)


def published_and_mean_field_claims(
    rows: Rows,
    spec: str,
    rhos: list[float],
    d: int,
    items: list[Item],
    *,
    published: str,
    published_name: str,
    mean_field: str,
    finite_n: str,
) -> list[Claim]:
    """The three claims on one distribution's load sweep, each with its neighbouring-load control.

    ``published``: the published form is the N → ∞ limit (the paper's claim); for phase-type
    service also ``mean_field``: the exact mean field is that limit, and ``finite_n``: the
    simulation at N lies within its CI of the mean field (a labelled finite-N finding).
    ``published_name`` names the published reference in the control's text.
    """
    claims: list[Claim] = []
    loads = neighbours(rhos)
    claim, ctrl = against(rows, spec, rhos, d, items, "cf", limit=True)
    claims.append(
        make_claim(
            published,
            claim,
            control=(f"{published_name} at the neighbouring loads {loads}", ctrl),
            details=LIMIT_NOTE,
        )
    )
    if not service.parse(spec).is_phase_type:
        return claims
    claim, ctrl = against(rows, spec, rhos, d, items, "mf", limit=True)
    claims.append(
        make_claim(
            mean_field,
            claim,
            control=(f"the mean field at the neighbouring loads {loads}", ctrl),
            source="lbrepro",
            details=LIMIT_NOTE,
        )
    )
    claim, ctrl = against(rows, spec, rhos, d, items, "mf", limit=False)
    claims.append(
        make_claim(
            finite_n,
            claim,
            control=(f"the mean field at the neighbouring loads {loads}", ctrl),
            source="lbrepro",
        )
    )
    return claims
