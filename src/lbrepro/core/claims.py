"""The claim-check type: a sentence from a paper turned into a machine check.

A claim that fails is a finding, not a bug: it is written out with the numbers measured and
shown in the report as "not reproduced".

A verdict is worth something only if it could have gone the other way. So every claim carries a
*control*: the same statistic and tolerance applied, in the same run, to a counterfactual where
the claim is false (a geometric tail for a doubly exponential one, a fixed d for d(N) → ∞, the
closed form at a neighbouring load, random routing for "close to optimal"). The control must
fail; if it passes too, the check cannot tell the claim from its negation and the report says
"inconclusive". A check that cannot fail by construction (a conservation law, a formula compared
with itself, a published number at its own parameters) has ``kind="consistency"`` and is kept
out of the reproduced / not-reproduced counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from lbrepro.core.io import read_json, write_json
from lbrepro.core.verdicts import Verdict

#: Claim kinds: a verdict that can go either way, or a consistency check that cannot fail.
VERDICT, CONSISTENCY = "verdict", "consistency"
#: What the report calls each outcome.
REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE = "reproduced", "not reproduced", "inconclusive"


@dataclass(frozen=True)
class Claim:
    """One checked claim, serialised as the data contract's checks.json entry.

    ``expected``, ``measured`` and ``tolerance`` are numbers or short strings (whatever makes
    the check readable); ``passed`` is the verdict. ``source`` says whose claim it is: the
    paper's, a published number, or a check added by lbrepro beyond the paper. ``kind`` is
    ``verdict`` or ``consistency``; ``control`` is the same test on a counterfactual where
    the claim is false (a dict with ``claim``, ``measured``, ``expected``, ``tolerance``,
    ``passed``, ``details``), required for every verdict.
    """

    claim: str
    expected: Any
    measured: Any
    tolerance: Any
    passed: bool
    details: str = ""
    source: str = "paper"
    extra: dict[str, Any] = field(default_factory=dict)
    kind: str = VERDICT
    control: dict[str, Any] | None = None

    @property
    def status(self) -> str:
        """reproduced / not reproduced / inconclusive (the control passed too) / consistency."""
        return claim_status(self.to_dict())

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["passed"] = bool(self.passed)
        data["status"] = claim_status(data)
        return data


def claim_status(entry: dict[str, Any]) -> str:
    """The outcome a checks.json entry stands for (see the module docstring)."""
    if entry.get("kind") == CONSISTENCY:
        return CONSISTENCY
    control = entry.get("control")
    if not entry.get("passed"):
        return NOT_REPRODUCED
    if isinstance(control, dict) and control.get("passed"):
        return INCONCLUSIVE
    return REPRODUCED


def make_claim(
    claim: str,
    verdict: Verdict,
    *,
    control: tuple[str, Verdict] | None,
    source: str = "paper",
    kind: str = VERDICT,
    details: str = "",
    **extra: Any,
) -> Claim:
    """A claim from a :class:`Verdict` and its control ``(what the control is, its verdict)``.

    Every verdict needs a control; only ``kind="consistency"`` may go without one.
    """
    if kind == VERDICT and control is None:
        raise ValueError(f"claim {claim!r}: a verdict needs a control (or kind='consistency')")
    ctrl = None
    if control is not None:
        what, v = control
        ctrl = {
            "claim": what,
            "expected": v.expected,
            "measured": v.measured,
            "tolerance": v.tolerance,
            "passed": bool(v.passed),
            "details": v.details,
        }
    text = "; ".join(t for t in (verdict.details, details) if t)
    return Claim(
        claim=claim,
        expected=verdict.expected,
        measured=verdict.measured,
        tolerance=verdict.tolerance,
        passed=bool(verdict.passed),
        details=text,
        source=source,
        extra=dict(extra),
        kind=kind,
        control=ctrl,
    )


def consistency(
    claim: str, verdict: Verdict, *, source: str = "lbrepro", details: str = ""
) -> Claim:
    """A check that cannot fail by construction, labelled so and kept out of the counts."""
    return make_claim(
        claim, verdict, control=None, source=source, kind=CONSISTENCY, details=details
    )


def check_close(
    claim: str,
    expected: float,
    measured: float,
    tolerance: float,
    *,
    details: str = "",
    source: str = "paper",
) -> Claim:
    """A claim that ``measured`` lies within ``tolerance`` (absolute) of ``expected``."""
    passed = abs(measured - expected) <= tolerance
    return Claim(claim, expected, measured, tolerance, bool(passed), details, source)


def close(expected: float, measured: float, tolerance: float, *, relative: bool = False) -> Verdict:
    """A :class:`Verdict` that ``measured`` is within ``tolerance`` of ``expected``.

    ``relative``: the tolerance is a fraction of ``|expected|``.
    """
    scale = abs(expected) if relative else 1.0
    err = abs(measured - expected)
    return Verdict(
        passed=bool(err <= tolerance * scale),
        measured=measured,
        expected=expected,
        tolerance=f"{tolerance:g}{' relative' if relative else ''}",
        details=f"|difference| = {err:.3g}"
        + (f" ({err / scale:.2%})" if relative and scale else ""),
    )


def write_checks(claims: Sequence[Claim], path: str | Path) -> None:
    """Write claims as the list of objects the data contract names."""
    write_json([c.to_dict() for c in claims], path)


def read_checks(path: str | Path) -> list[dict[str, Any]]:
    """Read a checks.json file."""
    return read_json(path)
