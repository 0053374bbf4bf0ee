"""How the affinity claims are judged beyond the shared toolkit: exact verdicts, the paper's
words turned into stated bands, the O(1/N) remainder from N and N/2, the convergence
diagnostic of a fixed-batch run and trends of capped (censored) exit times."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from lbrepro.core.rows import not_converged
from lbrepro.core.stats import Estimate, von_neumann
from lbrepro.core.verdicts import AGREEMENT, Component, Verdict, bounded_margin, decide, exact
from lbrepro.judging.neighbours import neighbour_load
from lbrepro.judging.tails import TAIL_SERVERS

#: One yardstick for the paper's words "slightly" and "significantly" (it gives no number): a
#: relative difference of at most a quarter is slight, one of more than a quarter significant.
#: The same boundary bounds both words, so neither can be tuned to its own data.
QUARTER = 0.25

#: Absolute floor of the agreement margin of the performance quantities (jobs, or mean type-I
#: service times): the smallest difference Figs. 6/7 resolve. Below it the 2% relative margin
#: of a tiny value (W_I = 0.008 at λ = 0.6) would ask for a precision no figure shows.
PERF_FLOOR = 0.002

#: Level of the von Neumann test of a run's batch means (the convergence diagnostic): one test
#: per run, on its slowest observable (the fraction of servers with a type-II job).
CONVERGENCE_ALPHA = 0.001

#: The agreement margin of a fraction (of servers, or of arrivals): 0.01, one hundredth of the
#: 0–1 axis of Figs. 3/5, where curves that coincide to the eye differ by less. Absolute, not
#: 2% relative: the cells range from 0.007 to 0.8, and a relative margin on the smallest would
#: ask for a precision the figure never shows.
FRACTION_MARGIN = 0.01

#: How far a batch's type-II fraction may stray from the fixed point's before the run counts
#: as having left the quasi-stable state (the two states differ by ≥ 0.39 at λ = 0.8, d1 = 25).
STAY = 0.15

#: A cell of a fixed point enters the family only if it is held on average by at least
#: TAIL_SERVERS servers at N/2 (judging.tails.held, the rule of every tail verdict): a
#: fraction the run barely observes (d1 = 25, x21 ≈ 1.7e-6 at N = 2000: 0.003 servers) has no
#: interval to decide on, and its margin would dwarf it.
MIN_SERVERS = TAIL_SERVERS

#: The paper's residence-time claim is about large N with d1 fixed: it is judged only where
#: d1/N ≤ SMALL_D1_RATIO (N ≥ 125 at d1 = 25).
SMALL_D1_RATIO = 0.2

#: One-sided level of the lower bound of a capped mean whose runs are all censored: the
#: Clopper–Pearson bound of P(T ≥ cap) at 97.5% is CENSORED_TAIL^(1/n).
CENSORED_TAIL = 0.025


def neighbour_sign(lams: Sequence[float]) -> str:
    """Which way the neighbouring loads (``neighbour_load``, the controls' rule) lie from the
    loads ``lams``, as the sign of the step: "−" below, "+" above, "±" when they differ."""
    signs = {"−" if neighbour_load(lam) < lam else "+" for lam in lams}
    return signs.pop() if len(signs) == 1 else "±"


def exact_verdict(passed: bool, measured: Any, expected: Any, details: str = "") -> Verdict:
    """The verdict of an exact (integer or rational) comparison: decided outright."""
    return exact(bool(passed), measured, str(expected), "exact", details)


def band_verdict(
    ratio: Mapping[float, float], lo: float, hi: float, what: str, words: str
) -> Verdict:
    """Exact ratios (formulas) in the band (lo, hi] at every λ; ``words`` names the reading.

    The statistic is the ratio farthest outside the band (else the one nearest its edge).
    """
    bad = {lam: v for lam, v in ratio.items() if not lo < v <= hi}
    pool = bad or ratio
    worst = max(pool, key=lambda lam: min(abs(pool[lam] - lo), abs(pool[lam] - hi)))
    if not bad:
        worst = min(pool, key=lambda lam: min(abs(pool[lam] - lo), abs(pool[lam] - hi)))
    listing = "; ".join(
        f"λ={lam:g}: {v:.3f}" for lam, v in list(ratio.items())[:: max(1, len(ratio) // 6)]
    )
    return exact(
        not bad,
        round(float(ratio[worst]), 6),
        f"{what} in ({lo:g}, {hi:g}] at every λ ({words})",
        f"band ({lo:g}, {hi:g}], exact formulas",
        (f"outside at λ = {sorted(bad)}; " if bad else "")
        + f"{what} {min(ratio.values()):.3f}–{max(ratio.values()):.3f}; {listing}",
    )


def remainder(big: Estimate, small: Estimate) -> float:
    """The O(1/N) remainder of the estimate at N: with x_N = x_∞ + c/N, x_N − x_∞ = c/N =
    x_{N/2} − x_N."""
    return float(small.mean) - float(big.mean)


def batches_converged(series: Sequence[float] | np.ndarray) -> bool:
    """Whether a run's batch means pass the one-sided von Neumann test at CONVERGENCE_ALPHA.

    The affinity simulator uses a fixed number of equal batches; a run whose batch means of the
    type-II fraction stay correlated has too narrow intervals (its verdicts become undecided).
    """
    x = np.asarray(series, dtype=float)
    if x.size < 3:
        return True  # too few batches to test; the interval's t quantile carries it
    return von_neumann(x)[1] > CONVERGENCE_ALPHA


def perf_margin(reference: float) -> float:
    """The agreement margin of a performance quantity: 2% relative, at least PERF_FLOOR, but
    never above half the quantity (:func:`~lbrepro.core.verdicts.bounded_margin`)."""
    return bounded_margin(reference, max(AGREEMENT * abs(float(reference)), PERF_FLOOR))


# -- capped exit times ----------------------------------------------------------------------


def exit_bounds(row: Mapping[str, Any]) -> tuple[float, float, bool]:
    """A 95% interval (low, high) of E[T] from a row of exit times capped at ``cap``.

    Uncensored: the row's Student-t interval. Censored runs make the capped mean a lower bound
    only: high = ∞, and low is the t-interval's low end, or — when every run is censored and
    the capped values have no spread — cap × the one-sided 97.5% Clopper–Pearson lower bound of
    P(T ≥ cap) (all n censored: CENSORED_TAIL^(1/n)). Never a zero-width interval. Returns
    whether the row is censored.
    """
    n = int(row.get("reps") or row.get("batches") or 0)
    c = int(row.get("censored") or 0)
    cap = float(row.get("cap") or math.inf)
    low, high = float(row["ci_low"]), float(row["ci_high"])
    if c == 0:
        return low, high, False
    if c >= n and n > 0:
        return cap * CENSORED_TAIL ** (1.0 / n), math.inf, True
    return low, math.inf, True


def grows(
    rows: Sequence[Mapping[str, Any]], min_effect: float = AGREEMENT
) -> tuple[Verdict, Verdict]:
    """E[T] increases with N (first → last by more than δ = ``min_effect`` × the first value),
    and its near miss: T flat from first to last (|change| < δ).

    Components from interval bounds (``exit_bounds``): the first → last change is
    [low_last − high_first, high_last − low_first]; a censored last point (high = ∞) can only
    confirm an increase (its lower bound above), never refute it — where it does not confirm,
    the component is unresolved, not open. A censored first point leaves it unresolved. Steps
    between neighbours are vetoes (no reversal by more than δ). Bonferroni: the half-widths of
    the rows are already 95%; each component is judged at its own level and the family's
    components share the rows, a conservative reading.
    """
    rs = sorted(rows, key=lambda r: r["N"])
    if len(rs) < 2:
        v = exact(False, float(len(rs)), "≥ 2 values of N", "n/a", "fewer than two usable N")
        return v, v
    b = [exit_bounds(r) for r in rs]
    ests = [_row_estimate(r) for r in rs]
    delta = min_effect * max(float(rs[0]["value"]), 1e-12)

    def change(i: int, j: int, label: str, veto: bool) -> Component:
        lo = b[j][0] - b[i][1]
        hi = b[j][1] - b[i][0]
        if math.isfinite(hi):
            return Component(label, (lo + hi) / 2, (hi - lo) / 2, -delta if veto else delta,
                             veto=veto)  # fmt: skip
        # Open above (the later point censored): decides "holds" only, else unresolved.
        ok = math.isfinite(lo) and lo > (-delta if veto else delta)
        return Component(label, lo, 0.0, -delta if veto else delta, veto=veto, resolved=ok,
                         notes=("lower bound: the later N censored",))  # fmt: skip

    first, last = rs[0]["N"], rs[-1]["N"]
    comps = [change(0, len(rs) - 1, f"N={first}→{last}", False)]
    comps += [
        change(i, i + 1, f"step N={rs[i]['N']}→{rs[i + 1]['N']}", True) for i in range(len(rs) - 1)
    ]
    listing = ", ".join(
        f"N={r['N']}: [{lo:.4g}, {'∞' if not math.isfinite(hi) else f'{hi:.4g}'}]"
        for r, (lo, hi, _) in zip(rs, b, strict=True)
    )
    claim = decide(
        comps,
        expected=f"increasing: first → last by more than δ = {delta:.3g} (2% of the first)",
        tolerance=f"δ = {delta:.3g}; 95% intervals, censored points as lower bounds",
        margin=delta,
        details=f"E[T] intervals {listing}",
        estimates=ests,
    )
    c0 = comps[0]
    # The near miss "flat": the same first → last change inside (−δ, δ). A censored last point
    # that does not confirm the increase leaves it unresolved too.
    flat = [
        Component("flat (δ > −m)", c0.value, c0.half_width, -delta, "above", resolved=c0.resolved),
        Component("flat (δ < m)", c0.value, c0.half_width, delta, "below", resolved=c0.resolved),
    ]
    control = decide(
        flat,
        expected=f"flat: |E[T_last] − E[T_first]| < δ = {delta:.3g}",
        tolerance=f"δ = {delta:.3g}",
        margin=delta,
        estimates=ests,
    )
    return claim, control


def _row_estimate(row: Mapping[str, Any]) -> Estimate:
    """The Estimate of an exit-time row (independent replications: converged by design)."""
    v = float(row["value"])
    return Estimate(v, float(row["ci_low"]), float(row["ci_high"]),
                    (float(row["ci_high"]) - float(row["ci_low"])) / 2,
                    int(row.get("batches") or 0),
                    converged=not not_converged(row.get("converged")))  # fmt: skip
