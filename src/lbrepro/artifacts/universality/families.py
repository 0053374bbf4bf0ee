"""The d(N) families of the universality artifacts: validating them, writing each point's
exact d(N) row and reading their rows.

Every point writes one exact row of its d(N) (``method="cf"``, ``quantity="d"``) carrying
the family's label and, for the family a sweep adds as its claim's control, ``role =
"control"``: the checks read a family's d, its label and the control family from the table.
"""

from __future__ import annotations

from typing import Any

from lbrepro.artifacts.registry import Rows
from lbrepro.core.errors import ConfigError
from lbrepro.core.io import select
from lbrepro.core.stats import Estimate
from lbrepro.core.verdicts import EmptyComparisonError, estimate
from lbrepro.models import universality as model

__all__ = [
    "CONTROL",
    "control_family",
    "d_of",
    "d_row",
    "is_fixed",
    "label",
    "of_family",
    "series",
    "sim_series",
    "validate_families",
    "with_control",
]

#: The ``role`` of the d(N) row of a family simulated as a claim's control.
CONTROL = "control"


def validate_families(key: str, families: list[Any], Ns: list[int]) -> None:
    """Every family gives a valid d at every N, else a ConfigError naming ``key[i]``."""
    for i, family in enumerate(families):
        try:
            for N in Ns:
                model.d_of_N(family, N)
        except ConfigError as err:
            raise ConfigError(f"{key}[{i}]", str(err)) from None


def d_row(family: str, d: int, *, control: bool = False) -> dict[str, Any]:
    """The exact row of a point's d(N): its value, the family's label and (for the family a
    sweep adds as a control) its role."""
    row = {
        "method": "cf",
        "quantity": "d",
        "value": d,
        "family_label": model.family_label(family),
    }
    return row | {"role": CONTROL} if control else row


def _d_rows(rows: Rows, family: str) -> list[dict[str, Any]]:
    """The d(N) rows of one family; none fails loudly."""
    found = of_family(rows, family, method="cf", quantity="d")
    if not found:
        raise EmptyComparisonError(f"no d(N) row of family {family!r}")
    return found


def d_of(rows: Rows, family: str, N: int) -> int:
    """d(N) of one family at N, from its d(N) row."""
    at = [r for r in _d_rows(rows, family) if r["N"] == N]
    if not at:
        raise EmptyComparisonError(f"no d(N) row of family {family!r} at N = {N}")
    return int(at[0]["value"])


def label(rows: Rows, family: str) -> str:
    """The legend label of one family (``"d = ⌈√N⌉"``), from its d(N) rows."""
    return str(_d_rows(rows, family)[0]["family_label"])


def control_family(rows: Rows) -> str:
    """The family whose d(N) rows carry the control's role; none fails loudly."""
    found = select(rows, method="cf", quantity="d", role=CONTROL)
    if not found:
        raise EmptyComparisonError("no d(N) row of a control family")
    return str(found[0]["family"])


def with_control(rows: Rows, families: list[Any]) -> tuple[list[str], str]:
    """The configured ``families`` plus the table's control family if absent, and the
    control family."""
    configured = [str(f) for f in families]
    control = control_family(rows)
    return (configured if control in configured else [*configured, control]), control


def is_fixed(family: str) -> bool:
    """Whether a family is a fixed d (digits only), not a growing d(N)."""
    return str(family).isdigit()


def of_family(rows: Rows, family: str, **where: Any) -> list[dict[str, Any]]:
    """Rows of one d(N) family (compared as text: a CSV reads the family "2" back as 2)."""
    return [r for r in select(rows, **where) if str(r["family"]) == str(family)]


def series(rows: Rows, method: str, quantity: str, family: str) -> list[dict[str, Any]]:
    """The rows of one method, quantity and family, ordered by N."""
    return sorted(of_family(rows, family, method=method, quantity=quantity), key=lambda r: r["N"])


def sim_series(rows: Rows, quantity: str, family: str) -> tuple[list[int], list[Estimate]]:
    """N and the simulated estimates of one family, ordered by N; empty fails loudly."""
    sim = series(rows, "sim", quantity, family)
    if not sim:
        raise EmptyComparisonError(f"no simulated {quantity} rows of d(N) family {family!r}")
    return [int(r["N"]) for r in sim], [estimate(r) for r in sim]
