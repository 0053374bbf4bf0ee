"""The (p, q, d) grids of the single-server artifacts: validation and the table label of d."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from lbrepro.models import whittle as model


def table_d_label(d: Any) -> str:
    """A stable label for d in tables ("∞" for PS), so "1" read back from CSV matches 1."""
    return model.d_label(model.parse_d(d))


def table_d_labels(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The d labels of a table's index rows, in the order compute wrote them (the config's):
    what a check compares by, read from its table rather than parsed from the config again."""
    return list(dict.fromkeys(str(r["d"]) for r in rows if r.get("method") == "mdp"))


def check_grid(cfg: Mapping[str, Any]) -> None:
    """Refuse a p, q or d outside its range, naming the key inside the section (``p[0]``)."""
    for i, p in enumerate(cfg["p"]):
        model.check_p(p, f"p[{i}]")
    for i, q in enumerate(cfg["q"]):
        model.check_q(q, f"q[{i}]")
    for i, d in enumerate(cfg.get("d", [])):
        model.parse_d(d, f"d[{i}]")
