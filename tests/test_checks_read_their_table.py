"""A check reads only its table: every number it compares, a control's prediction included, is
written by the artifact's ``compute`` (issue 20). Found by reading the source: from an
artifact's ``check``, every function it reaches — in its own module, and through functions it
imports from the paper packages or the shared judging layer, transitively — and whether any of
them uses a name bound to a model, a simulator or a mean-field solver (:data:`COMPUTING`).
"""

from __future__ import annotations

import ast
import importlib
import inspect
from collections.abc import Callable
from functools import cache

from lbrepro.artifacts import registry

#: The packages that compute what a table holds: a check calls none of them.
COMPUTING = ("lbrepro.models", "lbrepro.sim", "lbrepro.meanfield")
#: Packages whose functions a check may call, and which are followed in turn.
FOLLOWED = ("lbrepro.artifacts", "lbrepro.judging")

Module = tuple[set[str], dict[str, tuple[str, str]], dict[str, ast.FunctionDef]]


def parse_module(source: str) -> Module:
    """(names bound to :data:`COMPUTING`, imported followed functions → (module, name),
    top-level functions) of a module's source."""
    tree = ast.parse(source)
    bound: set[str] = set()
    imported: dict[str, tuple[str, str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            for alias in node.names:
                name = alias.asname or alias.name
                if module.startswith(COMPUTING) or f"{module}.{alias.name}".startswith(COMPUTING):
                    bound.add(name)
                elif module.startswith(FOLLOWED):
                    imported[name] = (module, alias.name)
        elif isinstance(node, ast.Import):
            bound |= {a.asname or a.name for a in node.names if a.name.startswith(COMPUTING)}
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    return bound, imported, functions


@cache
def _module(name: str) -> Module:
    return parse_module(inspect.getsource(importlib.import_module(name)))


def calls_from(entry: tuple[str, str], module: Callable[[str], Module]) -> list[tuple[str, str]]:
    """(module.function, name) pairs where ``entry`` (module, function) or a function it
    reaches uses a name bound to :data:`COMPUTING`."""
    seen, todo, hits = set(), [entry], []
    while todo:
        where = todo.pop()
        if where in seen:
            continue
        seen.add(where)
        bound, imported, functions = module(where[0])
        if where[1] not in functions:
            continue  # a class, a constant: not followed
        for node in ast.walk(functions[where[1]]):
            if not isinstance(node, ast.Name):
                continue
            if node.id in bound:
                hits.append((f"{where[0]}.{where[1]}", node.id))
            elif node.id in functions:
                todo.append((where[0], node.id))
            elif node.id in imported:
                todo.append(imported[node.id])
    return hits


def model_calls(check: Callable[..., object]) -> list[tuple[str, str]]:
    """Where ``check`` reaches a model, a simulator or a mean-field solver."""
    return calls_from((check.__module__, check.__name__), _module)


def test_checks_read_only_their_table():
    calling = {a.id: model_calls(a.check) for a in registry.all_artifacts()}
    assert {a: hits for a, hits in calling.items() if hits} == {}


def test_the_finder_sees_a_model_call_through_helpers_and_modules():
    """The finder itself: a model used through a helper, or through a function of another
    paper module, is found; one only imported, or used by plot alone, is not."""
    sources = {
        "lbrepro.artifacts.toy.shared": (
            "from lbrepro.sim.occupancy import simulate_occupancy\n"
            "def run(x):\n    return simulate_occupancy(x)\n"
        ),
        "lbrepro.artifacts.toy.fig": (
            "from lbrepro.models import supermarket as model\n"
            "from lbrepro.artifacts.toy.shared import run\n"
            "def _helper(x):\n    return model.fixed_point_closed_form(x, 2)\n"
            "def check(rows, cfg):\n    return _helper(0.9)\n"
            "def check_shared(rows, cfg):\n    return run(rows)\n"
            "def clean(rows, cfg):\n    return rows\n"
            "def plot(rows, cfg):\n    return model.fixed_point(0.9, 2)\n"
        ),
    }

    def module(name: str) -> Module:
        return parse_module(sources[name])

    fig = "lbrepro.artifacts.toy.fig"
    assert calls_from((fig, "check"), module) == [(f"{fig}._helper", "model")]
    assert calls_from((fig, "check_shared"), module) == [
        ("lbrepro.artifacts.toy.shared.run", "simulate_occupancy")
    ]
    assert calls_from((fig, "clean"), module) == []
