"""How a model declares itself to the command line: its parameters and what it can compute.

Each model module ends with ``MODEL = Model(...)``; ``lbrepro.cli`` discovers every such
declaration and builds ``lbrepro solve|simulate <name>`` from it, with no per-model code.

- A parameter is declared once (:class:`Param`): name, kind, help and bounds. A bound may name
  an entry of the config schema's ``$defs`` (``maximum="servers"``), so the command line and the
  config share one limit.
- Defaults live in one place: the signature of the model's ``solve``/``simulate`` function. A
  parameter whose function argument has no default is required on the command line.
- ``solve``/``simulate`` return a result with ``to_json()`` (or ``to_dict()``), or a mapping.
  Where a model's own ``solve``/``simulate`` (what the artifacts call) return something else,
  the command's function is named ``solve_summary``/``simulate_summary``: one name everywhere.
  The command prints ``{"model": name, "params": {…}}`` followed by that result, where
  ``params`` holds the declared model parameters (every parameter except the run options
  :data:`RUN_OPTIONS`) as the function received them.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "MEMORY_LIMIT",
    "RUN_OPTIONS",
    "RUN_PARAMS",
    "Conserved",
    "Model",
    "Param",
    "Summary",
    "occupancy_conservation",
]

# A model refuses a computation whose arrays would exceed this (estimated before allocating).
MEMORY_LIMIT = 2 * 2**30

# Parameters that say how long or how to run, not which system: not echoed under "params".
RUN_OPTIONS = frozenset({"N", "horizon", "warmup", "seed", "batches", "replace", "progress"})


@dataclass(frozen=True)
class Param:
    """One model parameter on the command line.

    ``kind`` is one of ``real`` (finite), ``integer`` (``1e3`` accepted), ``text`` or
    ``choice`` (one of ``choices``). ``minimum``/``maximum`` bound reals and integers; a string
    ``maximum`` names a ``$defs`` entry of the config schema. ``exclusive_minimum`` makes the
    lower bound strict. ``commands`` says where the flag exists: ``solve``, ``simulate`` or both.
    ``parse`` turns a ``text`` value into what the model takes (e.g. a comma-separated list).
    """

    name: str
    kind: str
    help: str
    minimum: float | None = None
    maximum: float | str | None = None
    exclusive_minimum: bool = False
    choices: tuple[str, ...] = ()
    commands: tuple[str, ...] = ("solve", "simulate")
    parse: Callable[[str], Any] | None = None

    def __post_init__(self) -> None:
        if self.kind not in ("real", "integer", "text", "choice"):
            raise ValueError(f"param {self.name!r}: unknown kind {self.kind!r}")
        if (self.kind == "choice") != bool(self.choices):
            raise ValueError(f"param {self.name!r}: choices go with kind 'choice' only")


# The run options every simulator takes (their defaults are in each simulate function).
RUN_PARAMS = (
    Param(
        "N", "integer", "number of servers", minimum=1, maximum="servers", commands=("simulate",)
    ),
    Param(
        "horizon",
        "real",
        "simulated time (mean service times)",
        minimum=0,
        exclusive_minimum=True,
        commands=("simulate",),
    ),
    Param(
        "warmup",
        "real",
        "initial time discarded (default: a tenth of the horizon)",
        minimum=0,
        commands=("simulate",),
    ),
    Param(
        "seed",
        "integer",
        "seed of the random stream",
        minimum=0,
        maximum=2**63 - 1,
        commands=("simulate",),
    ),
    Param(
        "batches",
        "integer",
        "batches for the batch-means CI",
        minimum=2,
        maximum=10**6,
        commands=("simulate",),
    ),
)


@dataclass(frozen=True)
class Conserved:
    """A simulated quantity that work conservation makes exact, e.g. u₁ = ρ: the busy fraction
    of a stationary run equals the load whatever the policy (``what`` names it in words)."""

    what: str
    mean: float
    low: float
    high: float
    exact: float
    #: The smallest step of the quantity per slot or unit time (the resolution floor of its
    #: check is step/T); None: a fraction of the run's N servers, 1/N.
    step: float | None = None


def occupancy_conservation(result: Mapping[str, Any]) -> Conserved | None:
    """Busy capacity Σγ_jC_j·u⁽ʲ⁾₁ / ΣγC = λ/(μ·ΣγC) of an occupancy simulation's JSON
    (supermarket, universality, hetero): the per-type ``u`` and ``ci.u`` = [lows, highs]."""
    try:
        gamma, capacity = result["gamma"], result["capacity"]
        u, (low, high) = result["u"], result["ci"]["u"]
        total = sum(g * c for g, c in zip(gamma, capacity, strict=True))
        weights = [g * c / total for g, c in zip(gamma, capacity, strict=True)]
        rho = float(result["lam"]) / (float(result["mu"]) * total)
        parts = [(w * u[j][1], w * low[j][1], w * high[j][1]) for j, w in enumerate(weights)]
    except (KeyError, TypeError, IndexError, ValueError, ZeroDivisionError):
        return None
    mean, lo, hi = (sum(p[i] for p in parts) for i in range(3))
    what = "u_1 = ρ" if len(gamma) == 1 else "busy capacity Σγ_jC_j·u_1^(j)/ΣγC = ρ"
    return Conserved(what, mean, lo, hi, rho)


@dataclass(frozen=True)
class Model:
    """A model as the command line sees it.

    ``load`` names the parameter an instability refers to (``lam``; ``p`` for a slotted model),
    so an unstable run is reported against that flag. ``check`` (optional) is called with the
    command and the parsed arguments before anything runs, e.g. to refuse a run whose arrays
    would not fit in memory. ``conservation`` (optional) reads a simulation's JSON result and
    gives the busy fraction that work conservation makes exact, as :class:`Conserved`; the
    command line judges it as the pipeline does (a run failing it says so).
    """

    name: str
    help: str
    params: tuple[Param, ...]
    solve: Callable[..., Any] | None = None
    simulate: Callable[..., Any] | None = None
    load: str = "lam"
    check: Callable[[str, Mapping[str, Any]], None] | None = None
    conservation: Callable[[Mapping[str, Any]], Conserved | None] | None = None

    def function(self, command: str) -> Callable[..., Any]:
        """The function behind ``command`` (``solve`` or ``simulate``)."""
        fn = getattr(self, command)
        if fn is None:
            raise ValueError(f"model {self.name!r} has no {command}")
        return fn

    def params_for(self, command: str) -> tuple[Param, ...]:
        """The declared parameters that ``command`` takes, checked against its signature."""
        names = inspect.signature(self.function(command)).parameters
        chosen = tuple(p for p in self.params if command in p.commands)
        for p in chosen:
            if p.name not in names:
                raise ValueError(f"{self.name} {command}: function has no argument {p.name!r}")
        return chosen

    def defaults(self, command: str) -> dict[str, Any]:
        """Each argument's default, from the function's signature (the one home of defaults)."""
        sig = inspect.signature(self.function(command))
        return {
            n: p.default
            for n, p in sig.parameters.items()
            if p.default is not inspect.Parameter.empty
        }

    def takes(self, command: str, argument: str) -> bool:
        """Whether ``command``'s function has the argument (e.g. ``replace``, ``progress``)."""
        return argument in inspect.signature(self.function(command)).parameters


class Summary(dict):
    """A plain JSON-ready mapping that is also a result object (``to_json()``)."""

    def to_json(self) -> dict[str, Any]:
        """The mapping itself, as a plain dict."""
        return dict(self)
