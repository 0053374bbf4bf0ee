"""What the report prints is text a reader sees, never a control sequence.

A checks file, a table or a config value can hold any character: NUL, ESC (a terminal escape
when the HTML is viewed with ``cat``), or a bidirectional override such as U+202E, which makes
the text after it read backwards (``reproduced`` shown for ``decudorper``). Autoescaping stops
HTML injection but passes these through. :func:`finalize` — Jinja2's ``finalize`` hook, applied
to every value a template prints — writes each of them as a visible ``\\x1b`` or ``\\u202e``.

:func:`read_json_bounded` reads a results file with bounded size and nesting: one checks file
nested 5000 deep must give a note on its artifact, not a RecursionError that takes the whole
report down.
"""

from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path
from typing import Any

from markupsafe import Markup

from lbrepro.core.io import read_regular_bounded

__all__ = ["MAX_DEPTH", "MAX_JSON_BYTES", "finalize", "read_json_bounded", "visible"]

#: Deepest nesting a results file may have (the pipeline writes at most ~5 levels).
MAX_DEPTH = 64
#: Largest results JSON the report reads (the largest checks file of a full run: ~100 kB).
MAX_JSON_BYTES = 64 * 1024 * 1024

# C0 controls but tab and newline, DEL, C1 controls, and the invisible format characters
# (Unicode category Cf: bidi embeddings, overrides and isolates, zero-width joiners, BOM…).
_INVISIBLE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]|[^\x00-\x7f]")


def _show(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    if code < 0x80 or 0x80 <= code <= 0x9F:
        return f"\\x{code:02x}"
    if unicodedata.category(char) in ("Cf", "Cc", "Cs", "Co", "Cn") and code > 0x9F:
        return f"\\u{code:04x}"
    return char


def visible(text: str) -> str:
    """``text`` with every control and invisible format character written visibly."""
    return _INVISIBLE.sub(_show, text)


def finalize(value: Any) -> Any:
    """Jinja2's ``finalize``: strings made :func:`visible` (markup stays markup), other values
    unchanged."""
    if isinstance(value, Markup):
        return Markup(visible(str(value)))
    return visible(value) if isinstance(value, str) else value


def _depth(value: Any) -> int:
    """Nesting depth of a JSON value, without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if depth > MAX_DEPTH:
            return depth
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return deepest


def read_json_bounded(path: str | Path) -> Any:
    """Read a JSON file; ValueError (one line) if it is too large or nested too deeply."""
    # Regular files only, read boundedly: a FIFO has size 0 and blocked the read forever,
    # /dev/zero has size 0 and was read without end.
    raw = read_regular_bounded(path, MAX_JSON_BYTES)
    try:
        data = json.loads(raw.decode("utf-8"))
    except RecursionError:
        raise ValueError(f"nested more than {MAX_DEPTH} levels deep") from None
    if _depth(data) > MAX_DEPTH:
        raise ValueError(f"nested more than {MAX_DEPTH} levels deep")
    return data
