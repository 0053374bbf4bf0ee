"""Reading a ``<artifact>.checks.json`` file: bounded, regular files only, typed fields.

A checks file is read by the report and by ``lbrepro diff``, and either may be pointed at
something hostile: a FIFO (a plain read blocks forever), ``/dev/zero`` or a huge file (a plain
read exhausts memory), JSON nested 200,000 deep (a RecursionError), or entries whose fields have
the wrong type — the string ``"true"`` where a boolean belongs is truthy, and a nested list
where a number belongs is printed as text. :func:`read_checks` refuses each with a
:class:`ValueError` of one line saying what is wrong and where, so the reader can name the file.

:func:`load_run` reads every checks file of a finished run that way and gives its claims as
:class:`~lbrepro.core.claims.Claim` objects (docs/api.md, "Read a run's results").
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lbrepro.core.claims import CONSISTENCY, DIAGNOSTIC, VERDICT, Claim
from lbrepro.core.io import read_regular_bounded
from lbrepro.core.verdicts import NOT_REPRODUCED, REPRODUCED, UNDECIDED
from lbrepro.report.sanitize import MAX_JSON_BYTES

__all__ = ["CHECKS_DEPTH", "load_run", "read_checks"]

#: Deepest nesting a checks file may have: list → entry → control / extra → a value's list.
CHECKS_DEPTH = 8

_OUTCOMES = (REPRODUCED, NOT_REPRODUCED, UNDECIDED)
_KINDS = (VERDICT, CONSISTENCY, DIAGNOSTIC)
_TEXT = ("claim", "details", "source", "needs", "reason", "distance", "status", "invalid")


def _depth_exceeds(value: Any, limit: int) -> bool:
    """Whether a JSON value nests deeper than ``limit`` (iterative: no recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return False


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | bool | int | float)


def _check_fields(entry: Mapping[str, Any], where: str, *, control: bool = False) -> None:
    """Every known field of an entry (or of its control) has its type; ValueError if not."""

    def bad(field: str, wanted: str) -> ValueError:
        shown = json.dumps(entry[field])[:40]
        return ValueError(f"{where}: {field!r} must be {wanted}, got {shown}")

    for field in _TEXT:
        if field in entry and not isinstance(entry[field], str):
            raise bad(field, "text")
    if control and not isinstance(entry.get("claim"), str):
        raise ValueError(f"{where}: 'claim' must be text")
    if "finding" in entry and not (entry["finding"] is None or isinstance(entry["finding"], str)):
        raise bad("finding", "text or null")
    if "passed" in entry and not isinstance(entry["passed"], bool):
        raise bad("passed", "true or false")
    if "outcome" in entry and entry["outcome"] not in _OUTCOMES:
        raise bad("outcome", " or ".join(repr(o) for o in _OUTCOMES))
    if "kind" in entry and entry["kind"] not in _KINDS:
        raise bad("kind", " or ".join(repr(k) for k in _KINDS))
    if "looks" in entry and not (
        isinstance(entry["looks"], int) and not isinstance(entry["looks"], bool)
    ):
        raise bad("looks", "a whole number")
    if "margin" in entry and not (entry["margin"] is None or _is_number(entry["margin"])):
        raise bad("margin", "a number or null")
    if "interval" in entry:
        iv = entry["interval"]
        if not (iv is None or (isinstance(iv, list) and len(iv) == 2 and all(map(_scalar, iv)))):
            raise bad("interval", "two numbers or null")
    for field in ("expected", "measured", "tolerance"):
        value = entry.get(field)
        flat = (isinstance(value, list) and all(map(_scalar, value))) or (
            isinstance(value, dict) and all(map(_scalar, value.values()))
        )
        if not (_scalar(value) or flat):
            raise bad(field, "a number, a text or a flat list")
    if "runs" in entry and not (
        isinstance(entry["runs"], list) and all(isinstance(r, str) for r in entry["runs"])
    ):
        raise bad("runs", "a list of texts")
    if "extra" in entry and not isinstance(entry["extra"], dict):
        raise bad("extra", "an object")


#: Longest integer literal of a checks file (Python refuses 4300 digits with advice about
#: ``sys.set_int_max_str_digits``; no statistic needs more than a float's range).
MAX_INT_DIGITS = 19


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object's members; ValueError for a key given twice (JSON keeps the last silently:
    ``"outcome": "reproduced", "outcome": "not reproduced"`` is both, and neither)."""
    data: dict[str, Any] = {}
    for key, value in pairs:
        if key in data:
            raise ValueError(f"duplicate key {key!r} in an object")
        data[key] = value
    return data


def _integer(text: str) -> int:
    """A JSON integer of at most :data:`MAX_INT_DIGITS` digits; ValueError beyond."""
    if len(text.lstrip("-")) <= MAX_INT_DIGITS:
        return int(text)
    raise ValueError(f"an integer of {len(text.lstrip('-'))} digits")


def read_checks(path: str | Path) -> list[dict[str, Any]]:
    """The entries of a checks file, each a dict whose known fields have their types.

    ValueError (one line) for a file that is not a regular file, too large, not UTF-8 JSON,
    nested deeper than :data:`CHECKS_DEPTH`, not a list of objects, or with a mistyped field
    (named with its entry's index). OSError as the file system raises it.
    """
    raw = read_regular_bounded(path, MAX_JSON_BYTES)
    try:
        data = json.loads(raw.decode("utf-8"), object_pairs_hook=_unique_keys, parse_int=_integer)
    except RecursionError:
        raise ValueError(f"nested more than {CHECKS_DEPTH} levels deep") from None
    except UnicodeDecodeError:
        raise ValueError("not UTF-8 text") from None
    except json.JSONDecodeError as err:
        raise ValueError(f"not JSON ({err.msg}, line {err.lineno})") from None
    except ValueError as err:  # a duplicate key, a giant integer
        raise ValueError(f"not a checks file: {err}") from None
    if _depth_exceeds(data, CHECKS_DEPTH):
        raise ValueError(f"nested more than {CHECKS_DEPTH} levels deep")
    if not isinstance(data, list) or not all(isinstance(e, dict) for e in data):
        raise ValueError("expected a list of claim objects")
    for i, entry in enumerate(data):
        if not isinstance(entry.get("claim"), str):
            raise ValueError(f"entry {i}: 'claim' must be text")
        _check_fields(entry, f"entry {i}")
        control = entry.get("control")
        if control is not None:
            if not isinstance(control, dict):
                raise ValueError(f"entry {i}: 'control' must be an object or null")
            _check_fields(control, f"entry {i}, control", control=True)
    return data


def load_run(path: str | Path) -> dict[str, dict[str, list[Claim]]]:
    """The claims of a finished run as objects: paper slug → artifact id → its claims.

    ``path`` is the run's folder (the one holding ``results/``) or its ``results/`` folder;
    every ``<slug>/<artifact>.checks.json`` in it is read bounded and typed
    (:func:`read_checks`) and each entry becomes a :class:`~lbrepro.core.claims.Claim`
    (:meth:`Claim.from_dict <lbrepro.core.claims.Claim.from_dict>`), in the file's order.
    Papers and artifacts come sorted by name. A claim's ``status`` (what the report shows),
    ``margin``, ``interval``, ``control`` and ``finding`` (the id of a root cause in the
    paper's ``Paper.findings``) are there to read; the papers' findings themselves live in
    the registry (:func:`lbrepro.artifacts.registry.papers`), and
    :func:`lbrepro.core.tally.tally` counts a run by paper statement.

    Raises FileNotFoundError when the folder has no checks file, and ValueError naming the
    file when one cannot be read as claims.
    """
    root = Path(path)
    folder = next(
        (f for f in (root / "results", root) if f.is_dir() and any(f.glob("*/*.checks.json"))),
        None,
    )
    if folder is None:
        raise FileNotFoundError(f"{path}: no results/<slug>/<artifact>.checks.json in it")
    run: dict[str, dict[str, list[Claim]]] = {}
    for file in sorted(folder.glob("*/*.checks.json")):
        artifact = file.name.removesuffix(".checks.json")
        try:
            claims = [Claim.from_dict(entry) for entry in read_checks(file)]
        except ValueError as err:
            raise ValueError(f"{file}: {err}") from None
        run.setdefault(file.parent.name, {})[artifact] = claims
    return run
