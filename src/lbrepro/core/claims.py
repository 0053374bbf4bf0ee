"""The claim-check type: a sentence from a paper turned into a machine check.

A claim that fails is a finding, not a bug: it is written out with the numbers measured and
shown in the report as "not reproduced".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from lbrepro.core.io import read_json, write_json


@dataclass(frozen=True)
class Claim:
    """One checked claim, serialised as the data contract's checks.json entry.

    ``expected``, ``measured`` and ``tolerance`` are numbers or short strings (whatever makes
    the check readable); ``passed`` is the verdict. ``source`` says whose claim it is: the
    paper's, a published number, or a check added by lbrepro beyond the paper.
    """

    claim: str
    expected: Any
    measured: Any
    tolerance: Any
    passed: bool
    details: str = ""
    source: str = "paper"
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["passed"] = bool(self.passed)
        return data


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


def write_checks(claims: Sequence[Claim], path: str | Path) -> None:
    """Write claims as the list of objects the data contract names."""
    write_json([c.to_dict() for c in claims], path)


def read_checks(path: str | Path) -> list[dict[str, Any]]:
    """Read a checks.json file."""
    return read_json(path)
