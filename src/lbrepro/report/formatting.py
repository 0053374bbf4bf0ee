"""How the report writes a number, an interval, a margin or a duration: one place for all.

A statistic the checks mark exact (an interval of zero width, or ``exact: true``) is a value,
not an interval: it is shown as the number alone.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

#: Values of a list-valued cell shown before eliding the rest.
MAX_LIST = 6


def fmt(value: Any, max_items: int = 6) -> str:
    """A short human-readable form: floats to 4 significant digits, long lists elided."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "∞" if value > 0 else "−∞"
        return f"{value:.4g}"
    if isinstance(value, Mapping):
        items = [f"{k}: {fmt(v, max_items)}" for k, v in value.items()]
        return "{" + ", ".join(items) + "}"
    if isinstance(value, (list, tuple)):
        shown = [fmt(v, max_items) for v in value]
        if len(shown) > max_items:
            head = shown[: max_items - 2]
            shown = [*head, "…", shown[-1]]
            return "[" + ", ".join(shown) + f"] ({len(value)} items)"
        return "[" + ", ".join(shown) + "]"
    if hasattr(value, "item"):  # NumPy scalars
        return fmt(value.item(), max_items)
    return str(value)


def duration(seconds: float | None) -> str:
    """Seconds as a short readable duration ("0.42 s", "3 min 07 s", "1 h 05 min")."""
    if seconds is None:
        return "—"
    if seconds < 10:
        return f"{seconds:.2f} s"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def readable(value: Any) -> str:
    """A measured cell as a reader wants it: numbers formatted, no brackets or braces.

    A statistic is one number by the data contract; an older or hand-written entry may hold a
    mapping or list, shown as ``key = value`` pairs or a comma-separated list.
    """
    if isinstance(value, Mapping):
        return "; ".join(f"{k} = {readable(v)}" for k, v in value.items()) or "—"
    if isinstance(value, (list, tuple)):
        shown = [readable(v) for v in value[:MAX_LIST]]
        more = f", … ({len(value)} values)" if len(value) > MAX_LIST else ""
        return ", ".join(shown) + more if shown else "—"
    return fmt(value)


def is_exact_interval(value: Any) -> bool:
    """Whether ``value`` is an interval of zero width ([x, x]): an exact statistic."""
    if not (isinstance(value, (list, tuple)) and len(value) == 2):
        return False
    lo, hi = value
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (lo, hi))
    return numbers and lo == hi


def interval_text(value: Any) -> str:
    """An interval [lo, hi] with formatted bounds ("" if there is none, or it is [x, x]).

    An interval of zero width is an exact value, already shown as the measured number.
    """
    if is_exact_interval(value):
        return ""
    if isinstance(value, (list, tuple)) and len(value) == 2:
        return f"[{fmt(value[0])}, {fmt(value[1])}]"
    return "" if value is None else readable(value)


def margin_text(value: Any) -> str:
    """A margin as "± m" in the claim's units ("" if the test states none)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return ""
    return f"± {fmt(value)}"


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def percent(value: Any) -> str:
    """A fraction as a percentage with one decimal ("—" if it is no number)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return fmt(value)
    return f"{value:.1%}"
