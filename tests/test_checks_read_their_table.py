"""A check reads only its table: every number it compares, a control's prediction included, is
written by the artifact's ``compute`` (issue 20). Found by reading the source: the names a
module binds to a model, a simulator or a mean-field solver (:data:`COMPUTING`) and whether
its ``check`` — or a function of the module it calls, transitively — uses one.

Not every artifact is there yet. ``CALLS_A_MODEL`` lists those whose checks still call a model;
the test fails when another artifact's check starts to, and when a listed one stops (then it
leaves the list), so the list only shrinks.
"""

from __future__ import annotations

import ast
import inspect

from lbrepro.artifacts import registry

#: The packages that compute what a table holds: a check calls none of them.
COMPUTING = ("lbrepro.models", "lbrepro.sim", "lbrepro.meanfield")

#: Checks that still call a model (to move into their compute): shrinks, never grows.
CALLS_A_MODEL = {
    "hetero-stability",
    "whittle-gaps",
    "affinity-table1",
    "affinity-stepfunctions",
    "affinity-dstar",
    "affinity-sim-vs-fluid",
    "affinity-queue-length",
    "affinity-tunneling",
}


def model_calls(check) -> list[tuple[str, str]]:
    """(function, name) pairs where ``check`` or a module function it reaches uses a name
    bound to an import from :data:`COMPUTING`."""
    return model_calls_in(inspect.getsource(inspect.getmodule(check)), check.__name__)


def model_calls_in(source: str, entry: str) -> list[tuple[str, str]]:
    """:func:`model_calls` on a module's source, from its function ``entry``."""
    tree = ast.parse(source)
    bound = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(COMPUTING):
            bound |= {alias.asname or alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module == "lbrepro":
            bound |= {a.asname or a.name for a in node.names if f"lbrepro.{a.name}" in COMPUTING}
        elif isinstance(node, ast.Import):
            bound |= {
                alias.asname or alias.name
                for alias in node.names
                if alias.name.startswith(COMPUTING)
            }
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    seen, todo, hits = set(), [entry], []
    while todo:
        name = todo.pop()
        if name in seen or name not in functions:
            continue
        seen.add(name)
        for node in ast.walk(functions[name]):
            if isinstance(node, ast.Name):
                if node.id in bound:
                    hits.append((name, node.id))
                elif node.id in functions:
                    todo.append(node.id)
    return hits


def test_checks_read_only_their_table():
    calling = {a.id: model_calls(a.check) for a in registry.all_artifacts()}
    new = sorted(a for a, hits in calling.items() if hits and a not in CALLS_A_MODEL)
    assert new == [], {a: calling[a] for a in new}
    fixed = sorted(a for a in CALLS_A_MODEL if not calling.get(a))
    assert fixed == [], f"no longer call a model, take them off CALLS_A_MODEL: {fixed}"


def test_the_finder_sees_a_model_call():
    """The finder itself: a model used through a helper is found; one only imported is not."""
    source = (
        "from lbrepro.models import supermarket as model\n"
        "def _helper(x):\n    return model.fixed_point_closed_form(x, 2)\n"
        "def check(rows, cfg):\n    return _helper(0.9)\n"
        "def plot(rows, cfg):\n    return model.fixed_point(0.9, 2)\n"
    )
    assert model_calls_in(source, "check") == [("_helper", "model")]
    clean = source.replace("return _helper(0.9)", "return rows")
    assert model_calls_in(clean, "check") == []
