"""Row building shared by the affinity artifacts: the paper slug, the tidy row and the data
contract's columns of simulation rows."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from lbrepro.artifacts.registry import Rows
from lbrepro.core.rows import estimate_row
from lbrepro.core.stats import Estimate

SLUG = "affinity"


def is_real_number(v: Any) -> bool:
    """A real number (tables read NaN back as None)."""
    return isinstance(v, int | float) and math.isfinite(v)


def format_or_na(v: Any, spec: str) -> str:
    """Format a number, or 'n/a' when it is missing or not finite."""
    return format(v, spec) if is_real_number(v) else "n/a"


def table_row(method: str, quantity: str, value: Any, **extra: Any) -> dict[str, Any]:
    """One tidy row: method, quantity, value and the row's own columns."""
    return {"method": method, "quantity": quantity, "value": value} | extra


def estimate_table_row(method: str, quantity: str, est: Estimate, **extra: Any) -> dict[str, Any]:
    """One tidy row of an estimate: its value, interval, N, seed, batches and converged
    columns written by the shared ``core.rows.estimate_row``, then the row's own columns."""
    return {"method": method, "quantity": quantity} | estimate_row(est) | extra


def with_contract_columns(rows: Rows, seed: np.random.SeedSequence, N: int) -> Rows:
    """Give every simulation row the data contract's ci_low, ci_high (None when the row is a
    single path value, not an estimate), N and seed columns."""
    for r in rows:
        if r["method"] == "sim":
            r.setdefault("ci_low", None)
            r.setdefault("ci_high", None)
            r.setdefault("N", N)
            r.setdefault("seed", seed.entropy)
    return rows
