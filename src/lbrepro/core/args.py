"""Checks of function arguments shared by the simulators: each failure is a ConfigError
naming the argument, so a bad value reaches the user as one clear line."""

from __future__ import annotations

import math
import numbers
import operator
from collections.abc import Mapping
from typing import Any

import numpy as np

from lbrepro.core.errors import ConfigError

__all__ = [
    "RUN_KEYS",
    "check_stable_load",
    "check_warmup",
    "float_arg",
    "float_seq",
    "int_arg",
    "positive_arg",
    "run_length",
    "run_options",
    "sampled_servers",
]


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


def positive_arg(name: str, value: Any) -> float:
    """A finite real number > 0 (a rate, a load, a time)."""
    out = float_arg(name, value)
    if out <= 0:
        raise ConfigError(name, f"must be > 0, got {out}")
    return out


def sampled_servers(value: Any, name: str = "d") -> int:
    """The number of servers an arrival samples: an integer ≥ 1, given as any real number
    that is one (2.0 is 2; bools, 2.5 and infinities refused)."""
    if (
        isinstance(value, bool | np.bool_)
        or not isinstance(value, numbers.Real)
        or not math.isfinite(value)
        or value != int(value)
        or value < 1
    ):
        raise ConfigError(name, f"number of sampled servers must be an integer ≥ 1, got {value!r}")
    return int(value)


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


def run_length(horizon: Any, warmup: Any, batches: Any) -> tuple[float, float, int]:
    """The one validation rule for a simulation's (horizon, warm-up, batches).

    The warm-up is ≥ 0 and shorter than the horizon, and a batch-means interval needs at least
    two batches (one batch has no spread). Every simulator calls this, so the rule and its
    messages are the same everywhere.
    """
    horizon = float_arg("horizon", horizon)
    warmup = float_arg("warmup", warmup)
    if warmup < 0:
        raise ConfigError("warmup", f"must be >= 0, got {warmup}")
    if horizon <= warmup:
        raise ConfigError("horizon", f"must exceed warmup = {warmup}, got {horizon}")
    return horizon, warmup, int_arg("batches", batches, 2)


#: The keys of one simulation run in a point's parameters: what every simulator takes besides
#: its model's own (the seed is the point's stream, not a parameter).
RUN_KEYS = ("N", "horizon", "warmup", "batches")


def run_options(p: Mapping[str, Any], seed: Any) -> dict[str, Any]:
    """The run options of point ``p`` as a simulator's keyword arguments: :data:`RUN_KEYS` and
    the point's ``seed``."""
    return {k: p[k] for k in RUN_KEYS} | {"seed": seed}


def check_stable_load(key: str, load: float, capacity: float = 1.0) -> None:
    """Refuse a load at or beyond the capacity under ``key``: such a system has no stationary
    regime, so it is never simulated (the one rule every paper's config uses)."""
    if not load < capacity:
        raise ConfigError(key, f"load {load:g} >= {capacity:g}: unstable (no stationary regime)")


def check_warmup(key: str, warmup: float, horizon: float) -> None:
    """Refuse a warm-up (named by ``key``) that is not shorter than the horizon: nothing would
    be measured. Simulators apply the full rule (:func:`run_length`); configs this one."""
    if not warmup < horizon:
        raise ConfigError(key, f"{warmup:g} must be shorter than the horizon {horizon:g}")
