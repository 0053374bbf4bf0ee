"""The claim-check type: a sentence from a paper turned into a decision with a margin.

A claim that fails is a finding, not a bug: it is written out with the numbers measured and
shown in the report as "not reproduced".

Kinds of check:

- a **verdict** can go either way. Its outcome is reproduced / not reproduced / undecided
  (:mod:`lbrepro.core.verdicts`), and it carries a **control**: the same test, in the same run,
  on a *near miss* — the closest plausible alternative the claim excludes, at a stated
  distance from the claim's prediction (a closed form at a slightly different load, a tail
  one notch slower, a policy a few per cent worse). A control that is reproduced too means
  the run cannot tell the claim from its near miss: the claim is then undecided.
- a **consistency** check cannot fail by construction (a formula compared with itself, a
  published number at its own parameters, a rule chosen to match the paper); it is shown, and
  counted apart.
- a **diagnostic** is a simulator's self-check (work conservation, equilibrium). A failed
  diagnostic invalidates every verdict built on the same run: those become undecided
  (invalid run), see :func:`gate`.

``source`` says whose claim it is: the paper's (``paper``), a published number
(``published``), or a stricter check of lbrepro's own (``lbrepro``), counted apart.
``finding`` names the root cause a failure shares with others (one cause, one finding; the
paper package describes it in ``Paper.findings`` as a :class:`Finding`).

``statement`` names the paper statement a claim is one parameter point of: the claims sharing
it are one verdict (:mod:`lbrepro.core.tally`). ``attribution`` says, for a verdict that rests
on something the paper's text leaves open, whether it holds under every plausible reading,
fails under every reading, or depends on the reconstruction (:func:`attribute`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from lbrepro.core.errors import LbreproError
from lbrepro.core.io import write_json
from lbrepro.core.verdicts import NOT_REPRODUCED, REPRODUCED, UNDECIDED, Verdict, close

__all__ = [
    "CONSISTENCY",
    "DIAGNOSTIC",
    "NOT_REPRODUCED",
    "REPRODUCED",
    "STATUSES",
    "UNDECIDED",
    "VERDICT",
    "Claim",
    "Finding",
    "Reading",
    "RunsError",
    "attribute",
    "check_runs",
    "claim_status",
    "close",
    "consistency",
    "diagnostic",
    "gate",
    "make_claim",
    "unknown_runs",
    "write_checks",
]

#: Claim kinds.
VERDICT, CONSISTENCY, DIAGNOSTIC = "verdict", "consistency", "diagnostic"
#: Every status a checks.json entry may have (the data contract).
STATUSES = (REPRODUCED, NOT_REPRODUCED, UNDECIDED, CONSISTENCY, DIAGNOSTIC)
#: Why a verdict is undecided.
STRADDLES = "the interval straddles the margin"
INVALID = "invalid run"
INDISTINCT = "the control (near miss) is reproduced too"
#: Sources of claims.
SOURCES = ("paper", "published", "lbrepro")
#: What a verdict's readings say (:func:`attribute`).
HOLDS_EVERY = "holds under every reading"
FAILS_EVERY = "fails under every reading"
DEPENDS = "depends on the reconstruction"
ATTRIBUTIONS = (HOLDS_EVERY, FAILS_EVERY, DEPENDS)


def _verdict_dict(v: Verdict) -> dict[str, Any]:
    return {
        "outcome": v.outcome,
        "expected": v.expected,
        "measured": v.measured,
        "interval": list(v.interval) if v.interval else None,
        "margin": v.margin,
        "tolerance": v.tolerance,
        "details": v.details,
        "needs": v.needs,
        "invalid": v.invalid,
    }


@dataclass(frozen=True)
class Claim:
    """One checked claim, serialised as the data contract's checks.json entry.

    ``outcome`` is the test's own outcome (reproduced / not reproduced / undecided; for a
    diagnostic or consistency check, reproduced means it held). ``status`` (derived) adds the
    control and the kind: see :func:`claim_status`. ``control`` holds the near miss's test
    and its ``distance`` from the claim (required for every verdict). ``runs`` name the
    simulation runs the claim reads, so a failed diagnostic on a run reaches its verdicts.
    """

    claim: str
    outcome: str
    expected: Any
    measured: Any
    tolerance: Any
    details: str = ""
    source: str = "paper"
    extra: dict[str, Any] = field(default_factory=dict)
    kind: str = VERDICT
    control: dict[str, Any] | None = None
    interval: list[float] | None = None
    margin: float | None = None
    needs: str = ""
    invalid: str = ""
    finding: str | None = None
    runs: tuple[str, ...] = ()
    #: Looks at the decision while its run doubled until decided (written only when > 1).
    looks: int = 1
    #: The paper statement this claim is one parameter point of (claims sharing it are one
    #: verdict, :mod:`lbrepro.core.tally`); None: the claim is a statement of its own.
    statement: str | None = None
    #: The readings of what the text leaves open and what each gives (:func:`attribute`).
    attribution: dict[str, Any] | None = None
    #: The run-length factor that would decide it (1: decided; inf: no length would), from
    #: :attr:`Verdict.length_needed`: what a workflow extension reads (:mod:`lbrepro.extension`);
    #: not written (``needs`` says it in words).
    length_needed: float = 1.0

    @property
    def passed(self) -> bool:
        """Whether the test itself held (reproduced, or a diagnostic that passed)."""
        return self.outcome == REPRODUCED

    @property
    def status(self) -> str:
        """The status the report shows (see :func:`claim_status`)."""
        return claim_status(self.to_dict())

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["runs"] = list(self.runs)
        if self.looks == 1:
            del data["looks"]  # one look: the single-decision rate (most claims)
        del data["length_needed"]
        data["passed"] = self.passed
        data["status"] = claim_status(data)
        data["reason"] = undecided_reason(data)
        return data

    @classmethod
    def from_dict(cls, entry: Mapping[str, Any]) -> Claim:
        """The claim a checks.json entry stands for: the inverse of :meth:`to_dict`.

        ``passed``, ``status`` and ``reason`` are derived, so they are recomputed (the
        properties), not read; a key that is no field of :class:`Claim` is ignored, and a field
        the entry lacks keeps its default. ``length_needed`` is not written, so a claim read
        back has 1. An entry without one of ``claim``, ``outcome``, ``expected``,
        ``measured``, ``tolerance`` (an old-format entry, say) is refused with a ValueError.
        """
        required = ("claim", "outcome", "expected", "measured", "tolerance")
        missing = [k for k in required if k not in entry]
        if missing:
            raise ValueError(f"not a claim entry: no {', '.join(map(repr, missing))}")
        names = {f.name for f in fields(cls)} - {"length_needed"}
        data = {k: v for k, v in entry.items() if k in names}
        if "runs" in data:
            data["runs"] = tuple(data["runs"])
        return cls(**data)


def claim_status(entry: dict[str, Any]) -> str:
    """The status a checks.json entry stands for.

    consistency and diagnostic checks keep their kind; a verdict is its outcome, except that a
    verdict on an invalid run, or whose control is reproduced too, is undecided.
    """
    kind = entry.get("kind")
    if kind in (CONSISTENCY, DIAGNOSTIC):
        return kind
    outcome = entry.get("outcome")
    if outcome not in (REPRODUCED, NOT_REPRODUCED, UNDECIDED):
        return UNDECIDED
    if entry.get("invalid"):
        return UNDECIDED
    control = entry.get("control")
    indistinct = isinstance(control, dict) and control.get("outcome") == REPRODUCED
    return UNDECIDED if outcome == REPRODUCED and indistinct else outcome


def undecided_reason(entry: dict[str, Any]) -> str:
    """Why an undecided verdict is undecided ("" for any other status)."""
    if claim_status(entry) != UNDECIDED:
        return ""
    if entry.get("invalid"):
        return f"{INVALID}: {entry['invalid']}"
    if entry.get("outcome") == REPRODUCED:
        return INDISTINCT
    return STRADDLES


def make_claim(
    claim: str,
    verdict: Verdict,
    *,
    control: tuple[str, Verdict] | None,
    distance: str = "",
    source: str = "paper",
    kind: str = VERDICT,
    details: str = "",
    finding: str | None = None,
    runs: Iterable[str] = (),
    statement: str | None = None,
    **extra: Any,
) -> Claim:
    """A claim from a :class:`Verdict` and its control ``(what the near miss is, its verdict)``.

    Every verdict needs a control and its ``distance`` from the claim (in words and numbers:
    "ρ = 0.89, 2.3 margins from the prediction"); only consistency checks and diagnostics go
    without one.
    """
    if source not in SOURCES:
        raise ValueError(f"claim {claim!r}: source must be one of {SOURCES}, got {source!r}")
    if kind == VERDICT and control is None:
        raise ValueError(f"claim {claim!r}: a verdict needs a control (or another kind)")
    if kind == VERDICT and not distance:
        raise ValueError(f"claim {claim!r}: a control must state its distance from the claim")
    ctrl = None
    if control is not None:
        what, v = control
        ctrl = {"claim": what, "distance": distance, **_verdict_dict(v)}
        ctrl["passed"] = v.outcome == REPRODUCED
    text = "; ".join(t for t in (verdict.details, details) if t)
    return Claim(
        claim=claim,
        outcome=verdict.outcome,
        expected=verdict.expected,
        measured=verdict.measured,
        tolerance=verdict.tolerance,
        details=text,
        source=source,
        extra=dict(extra),
        kind=kind,
        control=ctrl,
        interval=list(verdict.interval) if verdict.interval else None,
        margin=verdict.margin,
        needs=verdict.needs,
        invalid=verdict.invalid,
        finding=finding,
        runs=tuple(runs),
        looks=verdict.looks,
        length_needed=verdict.length_needed,
        statement=statement,
    )


@dataclass(frozen=True)
class Reading:
    """One plausible reading of what a paper's text leaves open, and the claim it gives.

    ``name`` is a short label ("waiting jobs"), ``text`` what the reading takes and why a
    careful reader of the paper would take it; ``claim`` is the verdict under that reading,
    with its own control.
    """

    name: str
    text: str
    claim: Claim


def _reading_dict(r: Reading) -> dict[str, Any]:
    c = r.claim
    return {
        "reading": r.name,
        "text": r.text,
        "status": c.status,
        "measured": c.measured,
        "expected": c.expected,
        "interval": c.interval,
        "margin": c.margin,
        "details": c.details,
        "control": c.control,
    }


def attribute(opens: str, readings: Sequence[Reading], *, finding: str | None = None) -> Claim:
    """One verdict over every plausible reading of what the text leaves open (``opens``).

    The claim of the first reading (the one the other artifacts build on) is returned with an
    ``attribution``: the readings tried, their statuses and numbers, and what they say —

    - *holds under every reading*: every reading reproduces the claim;
    - *fails under every reading*: every reading is not reproduced — a finding of the paper
      (``finding`` is kept);
    - *depends on the reconstruction*: one reading reproduces it and another does not — the
      verdict is ours, not the paper's: no finding is charged, and the tally counts it apart;
    - otherwise (some reading undecided) no verdict: the claim keeps its first reading's status.

    Readings must be those a careful reader of the paper would take, named before the data;
    a single reading is an error (there is nothing to attribute).
    """
    if len(readings) < 2:
        raise ValueError(f"attribute({opens!r}): needs at least two readings")
    first = readings[0].claim
    if any(r.claim.kind != VERDICT for r in readings):
        raise ValueError(f"attribute({opens!r}): every reading must be a verdict")
    statuses = [r.claim.status for r in readings]
    if all(s == REPRODUCED for s in statuses):
        verdict = HOLDS_EVERY
    elif all(s == NOT_REPRODUCED for s in statuses):
        verdict = FAILS_EVERY
    elif REPRODUCED in statuses and NOT_REPRODUCED in statuses:
        verdict = DEPENDS
    else:
        verdict = ""
    names = "; ".join(f"{r.name}: {s}" for r, s in zip(readings, statuses, strict=True))
    return replace(
        first,
        finding=None if verdict == DEPENDS else (finding if NOT_REPRODUCED in statuses else None),
        details="; ".join(t for t in (first.details, f"readings — {names}") if t),
        attribution={
            "open": opens,
            "verdict": verdict,
            "readings": [_reading_dict(r) for r in readings],
        },
    )


def attribution_of(entry: dict[str, Any]) -> str:
    """What a checks.json entry's readings say ("" for a claim with no readings)."""
    att = entry.get("attribution")
    return str(att.get("verdict") or "") if isinstance(att, dict) else ""


@dataclass(frozen=True)
class Finding:
    """A root cause that explains failed claims (``Paper.findings`` maps its id to it).

    ``source`` is whose defect it is: ``paper`` (a finding of the paper: its paper claims point
    to it) or ``lbrepro`` (a remainder or limit of lbrepro's own checks, listed apart).
    ``evidence`` ties each explained claim to the cause: artifact id → one sentence with the
    numbers (e.g. "T_d with θ = 1 equals Mitzenmacher's 2.614"). ``str()`` gives the text the
    report shows.
    """

    title: str
    root_cause: str
    evidence: Mapping[str, str] = field(default_factory=dict)
    source: str = "paper"

    def __post_init__(self) -> None:
        if self.source not in ("paper", "lbrepro"):
            raise ValueError(f"finding {self.title!r}: source must be paper or lbrepro")

    def __str__(self) -> str:
        ties = " ".join(f"{a}: {e}" for a, e in self.evidence.items())
        return f"{self.title}. {self.root_cause}" + (f" Evidence — {ties}" if ties else "")


def consistency(
    claim: str, verdict: Verdict, *, source: str = "lbrepro", details: str = ""
) -> Claim:
    """A check that cannot fail by construction, labelled so and kept out of the counts."""
    return make_claim(
        claim, verdict, control=None, source=source, kind=CONSISTENCY, details=details
    )


def diagnostic(claim: str, verdict: Verdict, *, runs: Iterable[str], details: str = "") -> Claim:
    """A simulator's self-check on the named runs; if it fails, :func:`gate` invalidates the
    verdicts built on those runs."""
    return make_claim(
        claim,
        verdict,
        control=None,
        source="lbrepro",
        kind=DIAGNOSTIC,
        details=details,
        runs=runs,
    )


def diagnostic_failed(c: Claim) -> bool:
    """Whether a diagnostic failed on its statistic: its interval lies wholly on the failing
    side (not reproduced). One left undecided — its interval straddles the margin, or it rests
    on estimates with no honest interval, which invalidate their own verdicts already — has
    not shown the run wrong, so it gates nothing: a diagnostic never fails on a flag alone."""
    return c.kind == DIAGNOSTIC and c.outcome == NOT_REPRODUCED


def gate(claims: Sequence[Claim]) -> list[Claim]:
    """Invalidate every verdict that reads a run whose diagnostic failed on its statistic
    (:func:`diagnostic_failed`).

    Applied by the pipeline to each artifact's claims, so no artifact can forget it.
    """
    failed: dict[str, list[str]] = {}
    for c in claims:
        if diagnostic_failed(c):
            for run in c.runs:
                failed.setdefault(run, []).append(c.claim)
    if not failed:
        return list(claims)
    out = []
    for c in claims:
        hit = sorted({d for run in c.runs for d in failed.get(run, [])})
        if c.kind == VERDICT and hit:
            why = "failed diagnostic: " + "; ".join(hit)
            c = replace(c, invalid="; ".join(t for t in (c.invalid, why) if t))
        out.append(c)
    return out


class RunsError(LbreproError, ValueError):
    """A claim names a run its table does not hold (one line: the artifact and the id)."""


def unknown_runs(
    claims: Sequence[Claim], rows: Sequence[Mapping[str, Any]]
) -> list[tuple[str, str]]:
    """(claim, run id) for every ``runs`` id of a claim that names no point of the table: no
    row's ``point`` (or ``run``) column holds it. A diagnostic finds the verdicts it gates by
    these ids (:func:`gate`), so an id that names nothing would leave them ungated."""
    known = {str(r[c]) for r in rows for c in ("point", "run") if r.get(c) is not None}
    return [(c.claim, run) for c in claims for run in c.runs if run not in known]


def check_runs(
    claims: Sequence[Claim], rows: Sequence[Mapping[str, Any]], artifact_id: str
) -> None:
    """Raise :class:`RunsError` naming the artifact and the first id of a claim's ``runs``
    that names no point of its table (:func:`unknown_runs`)."""
    unknown = unknown_runs(claims, rows)
    if unknown:
        claim, run = unknown[0]
        more = f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else ""
        raise RunsError(
            f"{artifact_id}: claim {claim!r} reads run {run!r}, which names no point of its "
            f"table{more}"
        )


def write_checks(claims: Sequence[Claim], path: str | Path) -> None:
    """Write claims as the list of objects the data contract names (diagnostics applied)."""
    write_json([c.to_dict() for c in gate(claims)], path)
