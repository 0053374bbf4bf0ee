"""The d(N) families of the universality artifacts: validating them and reading their rows."""

from __future__ import annotations

from typing import Any

from lbrepro.artifacts.registry import Rows
from lbrepro.core.errors import ConfigError
from lbrepro.core.io import select
from lbrepro.core.stats import Estimate
from lbrepro.core.verdicts import EmptyComparisonError, estimate
from lbrepro.models import universality as model

__all__ = ["is_fixed", "of_family", "series", "sim_series", "validate_families"]


def validate_families(key: str, families: list[Any], Ns: list[int]) -> None:
    """Every family gives a valid d at every N, else a ConfigError naming ``key[i]``."""
    for i, family in enumerate(families):
        try:
            for N in Ns:
                model.d_of_N(family, N)
        except ConfigError as err:
            raise ConfigError(f"{key}[{i}]", str(err)) from None


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
