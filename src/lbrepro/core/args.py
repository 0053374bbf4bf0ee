"""Checks of function arguments shared by the simulators: each failure is a ConfigError
naming the argument, so a bad value reaches the user as one clear line."""

from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

from lbrepro.core.errors import ConfigError

__all__ = ["float_arg", "float_seq", "int_arg"]


def int_arg(name: str, value: Any, minimum: int) -> int:
    """An integer ≥ ``minimum`` (bools refused)."""
    if isinstance(value, bool | np.bool_):
        raise ConfigError(name, f"must be an integer, got {value!r}")
    try:
        out = operator.index(value)
    except TypeError:
        raise ConfigError(name, f"must be an integer, got {value!r}") from None
    if out < minimum:
        raise ConfigError(name, f"must be >= {minimum}, got {out}")
    return out


def float_arg(name: str, value: Any) -> float:
    """A finite real number (bools refused)."""
    if isinstance(value, bool | np.bool_):
        raise ConfigError(name, f"must be a real number, got {value!r}")
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise ConfigError(name, f"must be a real number, got {value!r}") from None
    if not math.isfinite(out):
        raise ConfigError(name, f"must be finite, got {out}")
    return out


def float_seq(name: str, value: Any) -> tuple[float, ...]:
    """A non-empty sequence of finite real numbers."""
    if isinstance(value, str | bytes):
        raise ConfigError(name, f"must be a sequence of numbers, got {value!r}")
    try:
        items = list(value)
    except TypeError:
        raise ConfigError(name, f"must be a sequence of numbers, got {value!r}") from None
    if not items:
        raise ConfigError(name, "must not be empty")
    return tuple(float_arg(name, x) for x in items)
