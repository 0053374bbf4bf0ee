"""The statistics of a claim: one decision rule with a margin, and the few tests built on it.

A verdict is a decision with a margin. Every claim reduces to one or more *components*: a
statistic (a difference, a gap, a slope, a step of a sweep) with its 95% interval, Bonferroni-
widened over the components judged together, and a *threshold* on the side where the claim
holds. A component

- **holds** when its whole widened interval lies on the claim's side of the threshold,
- **fails** when its whole widened interval lies on the other side,
- is **open** otherwise (the run cannot tell), and **unresolved** when the run gave it no
  usable interval (a simulated value that was never observed, a degenerate interval).

A claim over all its components (``quantifier="all"``) is *reproduced* when every component
holds, *not reproduced* when one fails, and *undecided* otherwise; a claim that one of them
suffices (``"any"``) is reproduced when one holds and not reproduced when all fail. So a true
claim is decided "not reproduced" only when a widened 95% interval misses its true value on
the far side: at most 2.5% of the time, family-wise. The same rule decides every test:

- :func:`agrees` — equivalence (two one-sided tests): |estimate − reference| < margin;
- :func:`better` — A below B by more than a minimum effect (superiority), or not worse than B
  by more than a margin (non-inferiority);
- :func:`trend` — a sweep moves by more than a minimum effect first → last, and no step goes
  the other way by more than it;
- :func:`slope_in` — a fitted slope lies in an interval;
- :func:`exact` — a comparison of exact values (closed forms, mean fields, exact Markov
  computations): decided outright, there is no noise; :func:`close` is its within-a-tolerance
  form.

A verdict that rests on an estimate with no honest interval (``converged = False``: its run
failed the relaxation check, :func:`lbrepro.core.rows.not_converged`) is *undecided (invalid
run)*, whatever its numbers say; a slowly mixing run's conservative interval decides.
Each :class:`Verdict` carries the decisive statistic as a number (never null), its widened
interval, the margin in the claim's units, and for an undecided verdict the precision that
would decide it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from lbrepro.core.rows import not_converged, pm
from lbrepro.core.stats import Estimate, bonferroni_factor, normal_quantile, t_quantile

__all__ = [
    "NOT_REPRODUCED",
    "REPRODUCED",
    "UNDECIDED",
    "Component",
    "EmptyComparisonError",
    "SlopeFit",
    "Verdict",
    "agreement_margin",
    "agrees",
    "better",
    "bounded_margin",
    "close",
    "decide",
    "estimate",
    "exact",
    "fit_slope",
    "slope_in",
    "trend",
    "widening",
]

#: Two-sided 95% normal quantile: the level every claim is judged at.
Z95 = 1.959963984540054

#: The three outcomes of a verdict.
REPRODUCED, NOT_REPRODUCED, UNDECIDED = "reproduced", "not reproduced", "undecided"
OUTCOMES = (REPRODUCED, NOT_REPRODUCED, UNDECIDED)

#: The default agreement margin, relative to the reference: what a reader of a load-balancing
#: paper calls "agrees with" when the paper gives no yardstick of its own (a figure's curves
#: that coincide to the eye differ by less). A claim may state its own (docs/methods.md).
AGREEMENT = 0.02

HOLDS, FAILS, OPEN, UNRESOLVED = "holds", "fails", "open", "unresolved"


class EmptyComparisonError(ValueError):
    """A claim check was asked to judge nothing: a bug in the check or its data, never a pass."""


@dataclass(frozen=True)
class Verdict:
    """The outcome of one claim's test: a decision with its margin.

    ``outcome`` is reproduced / not reproduced / undecided; ``measured`` the decisive
    statistic (a finite number, in the claim's units), ``interval`` its widened 95% interval,
    ``margin`` the threshold's distance from the claim's prediction (claim units); ``expected``
    and ``tolerance`` say in words what the claim needs and how it is judged. An undecided
    verdict says in ``needs`` what precision would decide it; ``invalid`` names a failed
    diagnostic the verdict rests on (then the outcome is undecided whatever the numbers).
    """

    outcome: str
    measured: float | str
    expected: str
    tolerance: str
    details: str = ""
    interval: tuple[float, float] | None = None
    margin: float | None = None
    needs: str = ""
    invalid: str = ""
    #: Looks at this decision while its run doubled (:attr:`Estimate.looks`): the verdict
    #: can err at ``looks`` times the single-look rate.
    looks: int = 1
    #: The run-length factor that would decide an undecided verdict (1: decided; inf: no
    #: length would, e.g. a component the run cannot observe). What a run extended until
    #: its claim is decided asks (:func:`lbrepro.sim.runlength.run_micro_batches`).
    length_needed: float = field(default=1.0, compare=False)

    def __post_init__(self) -> None:
        if self.outcome not in OUTCOMES:
            raise TypeError(f"Verdict outcome must be one of {OUTCOMES}, got {self.outcome!r}")
        if isinstance(self.measured, float) and not math.isfinite(self.measured):
            raise ValueError(f"a verdict's statistic must be finite, got {self.measured}")
        if self.measured is None:
            raise ValueError("a verdict's statistic must not be null")

    @property
    def passed(self) -> bool:
        """Whether the claim is reproduced."""
        return self.outcome == REPRODUCED

    def __bool__(self) -> bool:  # a Verdict reads as "reproduced" in `if` and `all()`
        return self.passed

    def invalidated(self, reason: str) -> Verdict:
        """This verdict on a run that failed a diagnostic: undecided (invalid run)."""
        return Verdict(
            UNDECIDED,
            self.measured,
            self.expected,
            self.tolerance,
            self.details,
            self.interval,
            self.margin,
            self.needs,
            "; ".join(r for r in (self.invalid, reason) if r),
            self.looks,
            self.length_needed,
        )


@dataclass(frozen=True)
class Component:
    """One statistic of a claim, judged against a threshold.

    ``value`` ± ``half_width`` (already widened) is the statistic's interval; the claim holds
    on the ``side`` (``"above"`` or ``"below"``) of ``threshold``. ``veto``: the component can
    only make the claim fail (a step of a trend that must not reverse); it is not needed for
    "reproduced". ``resolved = False``: the run gave no usable interval; the component is
    neither held nor failed.
    """

    label: str
    value: float
    half_width: float
    threshold: float
    side: Literal["above", "below"] = "above"
    veto: bool = False
    resolved: bool = True
    unit: str = ""
    notes: tuple[str, ...] = field(default=())

    @property
    def low(self) -> float:
        return self.value - self.half_width

    @property
    def high(self) -> float:
        return self.value + self.half_width

    @property
    def state(self) -> str:
        """holds / fails / open / unresolved (see the module docstring)."""
        if not self.resolved or not math.isfinite(self.value) or math.isnan(self.half_width):
            return UNRESOLVED
        if self.side == "above":
            if self.low > self.threshold:
                return HOLDS
            if self.high < self.threshold:
                return FAILS
        else:
            if self.high < self.threshold:
                return HOLDS
            if self.low > self.threshold:
                return FAILS
        return OPEN

    @property
    def slack(self) -> float:
        """How far the interval's far end sits inside the claim's side (negative: outside)."""
        if self.side == "above":
            return self.low - self.threshold
        return self.threshold - self.high

    def describe(self) -> str:
        op = ">" if self.side == "above" else "<"
        hw = f" ± {self.half_width:.3g}" if self.half_width else ""
        return (
            f"{self.label}: {self.value:.6g}{hw}{self.unit} {op} {self.threshold:.6g}"
            f" [{self.state}]"
        )


def decide(
    components: Sequence[Component],
    *,
    quantifier: Literal["all", "any"] = "all",
    expected: str,
    tolerance: str,
    margin: float | None = None,
    details: str = "",
    estimates: Sequence[Estimate] = (),
) -> Verdict:
    """The outcome of a claim from its components (see the module docstring).

    The statistic reported is the decisive component's value: the failing one for "not
    reproduced", else the one nearest to failing. ``estimates`` are the simulated inputs:
    any not converged makes the verdict undecided (invalid run).
    """
    if not components:
        raise EmptyComparisonError(f"no components to judge ({expected})")
    states = [c.state for c in components]
    needed = [(c, s) for c, s in zip(components, states, strict=True) if not c.veto]
    if not needed:
        raise EmptyComparisonError(f"only veto components ({expected})")
    failing = [c for c, s in zip(components, states, strict=True) if s == FAILS]
    if quantifier == "all":
        if failing:
            outcome = NOT_REPRODUCED
        elif all(s == HOLDS for _, s in needed):
            outcome = REPRODUCED
        else:
            outcome = UNDECIDED
    else:
        if any(s == HOLDS for _, s in needed):
            outcome = REPRODUCED
        elif all(s == FAILS for _, s in needed):
            outcome = NOT_REPRODUCED
        else:
            outcome = UNDECIDED
    if outcome == NOT_REPRODUCED:
        pool = failing if quantifier == "all" else [c for c, _ in needed]
        decisive = min(pool, key=lambda c: c.slack)
    elif outcome == REPRODUCED and quantifier == "any":
        decisive = max((c for c, s in needed if s == HOLDS), key=lambda c: c.slack)
    else:
        # The statistic shown is a resolved component's where there is one: a component the
        # run did not resolve decides nothing, so neither is it the number a reader sees.
        resolved_parts = [c for c, s in needed if s != UNRESOLVED and math.isfinite(c.slack)]
        finite = resolved_parts or [c for c, _ in needed if math.isfinite(c.slack)]
        decisive = min(finite, key=lambda c: c.slack) if finite else needed[0][0]
    needs, length = "", 1.0
    if outcome == UNDECIDED:
        needs = _needs(components, states)
        length = _length_needed([c for c, _ in needed], quantifier)
    listing = "; ".join(c.describe() for c in components)
    invalid = _unconverged(estimates)
    # A value the run could not measure (an infinite ratio of a level never observed) is said
    # in words, never shown as a number (it once read 0.0); such a claim is undecided.
    value = float(decisive.value) if math.isfinite(decisive.value) else None
    hw = decisive.half_width if math.isfinite(decisive.half_width) else math.inf
    interval = (value - hw, value + hw) if value is not None and math.isfinite(hw) else None
    v = Verdict(
        outcome=outcome,
        measured=round(value, 6) if value is not None else f"{decisive.label}: not measured",
        expected=expected,
        tolerance=tolerance,
        details="; ".join(t for t in (f"decisive {decisive.label}", details, listing) if t),
        interval=(round(interval[0], 6), round(interval[1], 6)) if interval else None,
        margin=margin,
        needs=needs,
        looks=max((int(e.looks) for e in estimates), default=1),
        length_needed=length,
    )
    return v.invalidated(invalid) if invalid else v


def length_to_decide(verdicts: Sequence[Verdict]) -> float:
    """The run-length factor a run serving ``verdicts`` asks for, to be doubled until decided
    (:func:`lbrepro.sim.runlength.run_micro_batches`): the smallest factor that decides one of
    its undecided verdicts (1: all are decided). The nearest, not the farthest: a claim one
    doubling would decide is not left undecided because another on the same run needs more
    than the doublings left (that one says what precision would decide it); each doubling is
    then a look for every verdict on the run."""
    pending = [v.length_needed for v in verdicts if v.length_needed > 1.0]
    return min(pending, default=1.0)


def _length_needed(needed: Sequence[Component], quantifier: str) -> float:
    """The run-length factor that would decide an undecided claim, if its estimates stayed
    put: each open component needs its half-width below its gap to the threshold, and a
    half-width falls as 1/√length. All of them for "all", the cheapest for "any"; an
    unresolved component, or one on its threshold, needs what no length gives (inf)."""
    factors = []
    for c in needed:
        state = c.state
        if state == HOLDS or (state == FAILS and quantifier == "any"):
            continue
        gap = abs(c.value - c.threshold)
        if state == UNRESOLVED or not gap > 0 or not math.isfinite(c.half_width):
            factors.append(math.inf)
        else:
            factors.append(max((c.half_width / gap) ** 2, 1.0))
    if not factors:
        return 1.0
    return max(factors) if quantifier == "all" else min(factors)


def _needs(components: Sequence[Component], states: Sequence[str]) -> str:
    """What precision would decide an undecided claim: the half-width each open part needs."""
    parts = []
    for c, s in zip(components, states, strict=True):
        if s == UNRESOLVED:
            parts.append(f"{c.label} unresolved: a run that observes it")
        elif s == OPEN and not c.veto:
            gap = abs(c.value - c.threshold)
            parts.append(
                f"{c.label}: half-width < {gap:.3g} (now {c.half_width:.3g}, "
                f"≈ {(c.half_width / gap) ** 2 if gap else math.inf:.2g}× the run length)"
            )
    return "; ".join(parts)


def _unconverged(estimates: Sequence[Estimate]) -> str:
    """The diagnostic that invalidates a verdict: estimates from runs that did not converge."""
    n = sum(not e.converged for e in estimates)
    if not n:
        return ""
    return (
        f"{n} of {len(estimates)} estimates from runs too short for any honest interval "
        "(converged = False: fewer relaxation times than the relaxation check needs, or an "
        "infinite relaxation time; lbrepro.sim.runlength.slow_run_problem)"
    )


def estimate(row: Mapping[str, Any]) -> Estimate:
    """The :class:`Estimate` of one tidy row: its CI if it has one, else an exact value.

    Rows of methods ``cf``, ``mf``, ``rmf``, ``mdp``, ``published`` carry no interval and are
    exact values of a formula; simulated rows carry ``ci_low``/``ci_high`` and must carry
    ``batches`` and ``converged`` too (a row that does not is refused, naming the column).
    The flag is read by :func:`lbrepro.core.rows.not_converged`, the one rule for it.
    """
    value = float(row["value"])
    low, high = row.get("ci_low"), row.get("ci_high")
    simulated = not (low is None or high is None or _nan(low) or _nan(high))
    if not simulated:
        return Estimate(value, value, value, 0.0, 0, _int(row.get("N")), row.get("seed"))
    for column in ("batches", "converged"):
        if row.get(column) is None or _nan(row.get(column)):
            raise ValueError(
                f"a simulated row ({row.get('method')}, {row.get('quantity')}) has no "
                f"{column!r}: every simulated row must carry batches and converged"
            )
    # An interval clipped to the quantity's range (a fraction near 0) is asymmetric: the
    # unclipped side carries the half-width (Estimate.from_interval).
    return Estimate.from_interval(
        value,
        low,
        high,
        batches=row["batches"],
        N=_int(row.get("N")),
        seed=row.get("seed"),
        converged=not not_converged(row.get("converged")),
        looks=_int(row.get("looks")) or 1,
    )


def _int(x: Any) -> int | None:
    return int(x) if x is not None and not _nan(x) else None


def _nan(x: Any) -> bool:
    return isinstance(x, float) and math.isnan(x)


def resolved(e: Estimate) -> bool:
    """Whether an estimate has a usable interval: exact, or simulated with a positive width."""
    return e.batches == 0 or float(e.half_width) > 0


def widening(estimates: Sequence[Estimate], comparisons: int) -> float:
    """Bonferroni widening of 95% intervals for ``comparisons`` simultaneous checks: the
    factor every test here multiplies its half-widths by, and the one a check that builds its
    own :class:`Component` list uses.

    Student t with the smallest batch count among the estimates (normal if none is known).
    """
    dofs = [e.batches for e in estimates if e.batches and e.batches >= 2]
    if comparisons <= 1:
        return 1.0
    if dofs:
        return bonferroni_factor(min(dofs), comparisons)
    return normal_quantile(1 - 0.05 / (2 * comparisons)) / Z95


def agreement_margin(reference: float, *, relative: float = AGREEMENT, floor: float = 0.0) -> float:
    """The agreement margin of one comparison: ``relative`` × |reference|, at least ``floor``.

    ``floor`` is the smallest difference the claim's quantity can express at this run (for a
    fraction of N servers averaged over time T, 1/(N·T)); the relative part is the documented
    default :data:`AGREEMENT` unless the paper gives its own yardstick.
    """
    return max(relative * abs(float(reference)), float(floor))


#: The largest margin, as a fraction of the quantity judged, that an agreement may use: a
#: margin set in absolute terms (a figure's resolution, a fraction of an axis) becomes
#: relative where the quantity is small, so that agreement still tells the quantity from 0
#: and from its double (docs/methods.md, "Margins").
SMALL_QUANTITY = 0.5


def bounded_margin(reference: float, margin: float, *, floor: float = 0.0) -> float:
    """An absolute ``margin`` capped at :data:`SMALL_QUANTITY` × |reference|, at least ``floor``.

    A margin orders of magnitude larger than its quantity passes whatever the run says (0.01
    on a fraction of 10⁻⁴); capped, the pass means the run measured the quantity. ``floor`` is
    the run's resolution (1/(N·T) for a time-averaged fraction): no margin is finer.
    """
    return max(min(float(margin), SMALL_QUANTITY * abs(float(reference))), float(floor))


def agrees(
    estimates: Sequence[Estimate],
    references: Sequence[float],
    *,
    margin: float | Sequence[float],
    labels: Sequence[str] | None = None,
    what: str = "estimate − reference",
) -> Verdict:
    """Equivalence: every |estimate − reference| is below its margin (two one-sided tests).

    Each comparison i has the difference δ_i = x_i − r_i with the widened half-width w·h_i (w
    the Bonferroni widening over the m comparisons) and two components, δ_i > −m_i and
    δ_i < m_i: the claim is reproduced when every δ_i's interval lies inside (−m_i, m_i), not
    reproduced when one lies wholly outside, undecided otherwise. A margin must be positive:
    a claim that needs exact equality of a noisy estimate cannot be reproduced.
    """
    m = len(estimates)
    if m == 0:
        raise EmptyComparisonError("agrees: no estimates to compare")
    if len(references) != m:
        raise ValueError(f"agrees: {m} estimates but {len(references)} references")
    margins = np.broadcast_to(np.asarray(margin, dtype=float), (m,))
    if not np.all(margins > 0):
        raise ValueError(f"agrees: every margin must be positive, got {margins.tolist()}")
    w = widening(estimates, m)
    names = list(labels) if labels else [f"#{i}" for i in range(m)]
    components = []
    for e, ref, mi, name in zip(estimates, references, margins, names, strict=True):
        diff = float(e.mean) - float(ref)
        hw = w * float(e.half_width)
        ok = resolved(e)
        components.append(Component(f"{name} (δ > −m)", diff, hw, -float(mi), "above", resolved=ok))
        components.append(Component(f"{name} (δ < m)", diff, hw, float(mi), "below", resolved=ok))
    worst = int(np.argmax([abs(c.value) / c.threshold for c in components[1::2]]))
    e = estimates[worst]
    return decide(
        components,
        expected=f"|{what}| < margin (equivalence, two one-sided tests)",
        tolerance=f"margin ≤ {float(np.max(margins)):.3g}; 95% CIs Bonferroni ×{w:.3f} over {m}",
        margin=float(margins[worst]),
        details=(
            f"largest {names[worst]}: estimate {float(e.mean):.6g} "
            f"[{float(e.low):.6g}, {float(e.high):.6g}] vs reference "
            f"{float(references[worst]):.6g}, margin {float(margins[worst]):.3g}"
        ),
        estimates=estimates,
    )


def better(
    a: Sequence[Estimate],
    b: Sequence[Estimate],
    *,
    min_effect: float | Sequence[float],
    quantifier: Literal["all", "any"] = "all",
    strict: bool = True,
    labels: Sequence[str] | None = None,
) -> Verdict:
    """A is below B (lower is better) by more than a minimum effect, or not worse than it.

    Each pair's gap g = B − A (positive: A better) is one component with the widened
    half-width of the two intervals in quadrature (independent runs; exact values add
    nothing). ``strict`` (superiority): the claim holds where g > δ, ``min_effect`` δ ≥ 0 the
    smallest gap a reader would call "better". Not ``strict`` (non-inferiority): g > −δ, A
    not worse than B by more than δ. ``quantifier`` = ``all`` for "at every point", ``any``
    for "can outperform".
    """
    n = len(a)
    if n == 0:
        raise EmptyComparisonError("better: no pairs to compare")
    if len(b) != n:
        raise ValueError(f"better: {n} values of A but {len(b)} of B")
    deltas = np.broadcast_to(np.asarray(min_effect, dtype=float), (n,))
    if np.any(deltas < 0):
        raise ValueError("better: a minimum effect must be ≥ 0")
    w = widening([*a, *b], n)
    names = list(labels) if labels else [f"#{i}" for i in range(n)]
    comps = []
    for ea, eb, delta, name in zip(a, b, deltas, names, strict=True):
        gap = float(eb.mean) - float(ea.mean)
        hw = w * math.hypot(float(ea.half_width), float(eb.half_width))
        threshold = float(delta) if strict else -float(delta)
        comps.append(
            Component(name, gap, hw, threshold, "above", resolved=resolved(ea) and resolved(eb))
        )
    kind = "superiority: B − A > δ" if strict else "non-inferiority: B − A > −δ"
    return decide(
        comps,
        quantifier=quantifier,
        expected=f"{kind} ({quantifier} of {n})",
        tolerance=f"δ ≤ {float(np.max(deltas)):.3g}; 95% CIs Bonferroni ×{w:.3f} over {n}",
        margin=float(np.max(deltas)),
        estimates=[*a, *b],
    )


def trend(
    x: Sequence[float],
    estimates: Sequence[Estimate],
    direction: Literal["increasing", "decreasing", "to_zero"],
    *,
    min_effect: float,
    ratio: float = 0.5,
) -> Verdict:
    """A sweep (ordered by x) moves in one direction by more than a minimum effect.

    Components: first → last changes in the direction by more than ``min_effect`` δ > 0, and
    (veto) no step between neighbours goes the other way by more than δ. ``to_zero`` also
    needs the last value below ``ratio`` × the first (a finite sweep shows a decline by a
    stated factor, never the limit itself). Intervals are Bonferroni-widened over all the
    components.
    """
    n = len(estimates)
    if n < 2:
        raise EmptyComparisonError(f"trend: needs at least two points, got {n}")
    if len(x) != n:
        raise ValueError(f"trend: {len(x)} x values but {n} estimates")
    if not min_effect > 0:
        raise ValueError("trend: the minimum effect must be positive")
    order = np.argsort(np.asarray(x, dtype=float), kind="stable")
    est = [estimates[i] for i in order]
    xs = [float(x[i]) for i in order]
    sign = 1.0 if direction == "increasing" else -1.0
    count = 1 + (n - 1) + (direction == "to_zero")
    w = widening(est, count)

    def change(e0: Estimate, e1: Estimate) -> tuple[float, float, bool]:
        hw = w * math.hypot(float(e0.half_width), float(e1.half_width))
        return sign * (float(e1.mean) - float(e0.mean)), hw, resolved(e0) and resolved(e1)

    g, hw, ok = change(est[0], est[-1])
    comps = [Component(f"{xs[0]:g}→{xs[-1]:g}", g, hw, min_effect, "above", resolved=ok)]
    for i in range(n - 1):
        g, hw, ok = change(est[i], est[i + 1])
        comps.append(
            Component(f"step {xs[i]:g}→{xs[i + 1]:g}", g, hw, -min_effect, veto=True, resolved=ok)
        )
    if direction == "to_zero":
        last, first = est[-1], est[0]
        v = float(last.mean) - ratio * float(first.mean)
        hw = w * math.hypot(float(last.half_width), ratio * float(first.half_width))
        comps.append(Component(f"last − {ratio:g}×first", v, hw, 0.0, "below"))
    listing = ", ".join(
        f"{xv:g}: {pm(float(e.mean), float(e.half_width), '.4g', '.2g', 'tight')}"
        for xv, e in zip(xs, est, strict=True)
    )
    return decide(
        comps,
        expected=f"{direction}: first → last by more than δ = {min_effect:.3g}, "
        "no step reversing by more than δ",
        tolerance=f"δ = {min_effect:.3g}; 95% CIs Bonferroni ×{w:.3f} over {count}",
        margin=float(min_effect),
        details=f"values {listing}",
        estimates=est,
    )


def exact(
    holds: bool,
    measured: float | str,
    expected: str,
    tolerance: str = "exact",
    details: str = "",
) -> Verdict:
    """A decided comparison of exact values (no noise: reproduced or not reproduced)."""
    return Verdict(REPRODUCED if holds else NOT_REPRODUCED, measured, expected, tolerance, details)


def close(expected: float, measured: float, tolerance: float, *, relative: bool = False) -> Verdict:
    """:func:`exact` for the commonest exact comparison: ``measured`` within ``tolerance`` of
    ``expected`` (|measured − expected| ≤ tolerance), decided outright.

    ``relative``: the tolerance is a fraction of ``|expected|``. For exact values only (closed
    forms, solvers): a noisy estimate is judged by :func:`agrees`. Re-exported by
    :mod:`lbrepro.core.claims` (``claims.close`` is this function).
    """
    scale = abs(expected) if relative else 1.0
    err = abs(measured - expected)
    return exact(
        err <= tolerance * scale,
        measured,
        f"{expected:g}",
        f"{tolerance:g}{' relative' if relative else ''}",
        f"|difference| = {err:.3g}" + (f" ({err / scale:.2%})" if relative and scale else ""),
    )


@dataclass(frozen=True)
class SlopeFit:
    """A least-squares line y = intercept + slope·x with the slope's standard error.

    ``known_errors``: the standard error comes from given y errors (normal quantiles), not from
    the residual scatter (Student t with ``dof`` degrees of freedom).
    """

    slope: float
    se: float
    intercept: float
    dof: int
    known_errors: bool = False

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        """The slope's two-sided confidence interval."""
        p = 0.5 + level / 2
        q = normal_quantile(p) if self.known_errors else t_quantile(p, max(self.dof, 1))
        return self.slope - q * self.se, self.slope + q * self.se


def fit_slope(
    x: Sequence[float], y: Sequence[float], sigma: Sequence[float] | None = None
) -> SlopeFit:
    """Weighted least squares of y on x; ``sigma`` are the y standard errors (absolute).

    With ``sigma`` the slope's standard error is the absolute one (known errors, normal
    quantiles); without it, the residual scatter estimates it (Student t, needs ≥ 3 points).
    Fewer than two distinct x raise :class:`EmptyComparisonError`.
    """
    xs = np.asarray(x, dtype=float)
    ys = np.asarray(y, dtype=float)
    keep = np.isfinite(xs) & np.isfinite(ys)
    if sigma is not None:
        s = np.asarray(sigma, dtype=float)
        keep &= np.isfinite(s) & (s > 0)
    xs, ys = xs[keep], ys[keep]
    if np.unique(xs).size < 2:
        raise EmptyComparisonError(f"fit_slope: needs two distinct x, got {xs.tolist()}")
    w = np.ones_like(xs) if sigma is None else 1.0 / s[keep] ** 2
    sw = w.sum()
    xm, ym = (w * xs).sum() / sw, (w * ys).sum() / sw
    sxx = (w * (xs - xm) ** 2).sum()
    slope = float((w * (xs - xm) * (ys - ym)).sum() / sxx)
    intercept = float(ym - slope * xm)
    dof = xs.size - 2
    if sigma is not None:
        return SlopeFit(slope, float(math.sqrt(1.0 / sxx)), intercept, dof, known_errors=True)
    if dof >= 1:
        resid = ys - intercept - slope * xs
        se = float(math.sqrt((w * resid**2).sum() / dof / sxx))
    else:
        se = math.inf
    return SlopeFit(slope, se, intercept, dof)


def slope_in(
    fit: SlopeFit,
    low: float = -math.inf,
    high: float = math.inf,
    *,
    what: str = "slope",
    widening: float = 1.0,
) -> Verdict:
    """The fitted slope lies in [low, high], judged with its (widened) 95% interval.

    Reproduced when the whole interval lies in [low, high], not reproduced when it lies wholly
    outside, undecided otherwise. A claim "slope > c" is ``slope_in(fit, low=c)``; the margin
    is the distance of the bounds from the claim's prediction, stated by the caller in them.
    A fit with no finite standard error (two points, no known errors) is unresolved.
    """
    lo, hi = fit.interval()
    half = widening * (hi - lo) / 2 if math.isfinite(hi - lo) else math.inf
    ok = math.isfinite(half)
    comps = []
    if math.isfinite(low):
        comps.append(Component(f"{what} > {low:g}", fit.slope, half, low, "above", resolved=ok))
    if math.isfinite(high):
        comps.append(Component(f"{what} < {high:g}", fit.slope, half, high, "below", resolved=ok))
    if not comps:
        raise ValueError("slope_in: give a finite low or high")
    return decide(
        comps,
        expected=f"{what} in [{low:g}, {high:g}] (whole 95% CI)",
        tolerance=f"95% CI [{fit.slope - half:.4g}, {fit.slope + half:.4g}] (se {fit.se:.2g})",
        details=f"least squares: {what} {fit.slope:.4g} ± {fit.se:.2g}, "
        f"intercept {fit.intercept:.4g}",
    )
