"""The layer order of docs/architecture.md, enforced on every module of lbrepro.

Imports go downward only:

    core < sim < meanfield < models < judging < artifacts
         < {config, pipeline, extension, report, cli}

``plotting`` imports only ``core`` and is imported by ``artifacts`` and the top layer. Within
``artifacts``, a paper's package imports ``artifacts.registry`` and its own modules, never
another paper's, and the registry imports no paper (it discovers them). The package root
``lbrepro`` imports nothing of lbrepro. Every import counts, wherever it stands: at the top of
a module, inside a function (a deferred import does not change what depends on what), or under
``TYPE_CHECKING``. A module may name its enclosing packages (importing it imports them anyway).
And no chain of imports between lbrepro modules comes back to where it started.
"""

from __future__ import annotations

import ast
import importlib.util
import pkgutil
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import lbrepro

# Rank of each layer: a module may import modules of a lower rank, or of its own layer.
RANK = {"core": 0, "sim": 1, "meanfield": 2, "models": 3, "judging": 4, "artifacts": 5, "top": 6}
TOP = {"config", "pipeline", "extension", "report", "cli", "__main__"}
# plotting sits beside the layers: it imports only core, and only these import it.
PLOTTING_IMPORTERS = {"artifacts", "top"}


@cache
def modules() -> dict[str, Path]:
    """Every module of the lbrepro package (subpackages' __init__ included) and its source."""
    found = {"lbrepro": Path(lbrepro.__file__)}
    for info in pkgutil.walk_packages(lbrepro.__path__, "lbrepro."):
        spec = importlib.util.find_spec(info.name)
        assert spec is not None and spec.origin is not None, info.name
        found[info.name] = Path(spec.origin)
    return found


def layer(module: str) -> str:
    """The layer a module belongs to: core, sim, …, plotting, top, or root (the package)."""
    parts = module.split(".")
    if len(parts) == 1:
        return "root"
    return "top" if parts[1] in TOP else parts[1]


def paper(module: str) -> str | None:
    """The paper package an artifacts module belongs to (None for the registry and __init__)."""
    parts = module.split(".")
    if len(parts) < 3 or parts[1] != "artifacts" or parts[2] == "registry":
        return None
    return parts[2]


def resolve(name: str) -> str:
    """The lbrepro module an imported name refers to: itself, or the module that defines it."""
    known = modules()
    while name not in known and "." in name:
        name = name.rsplit(".", 1)[0]
    return name


def imports(module: str) -> Iterator[tuple[str, int]]:
    """The lbrepro modules ``module`` imports, anywhere in its source, with the line number."""
    path = modules()[module]
    yield from imports_in(path.read_text(encoding="utf-8"), module, path.name == "__init__.py")


def imports_in(source: str, module: str, is_package: bool) -> Iterator[tuple[str, int]]:
    """The lbrepro modules a module's source imports: every Import node, at any depth."""
    package = module if is_package else module.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "lbrepro" or alias.name.startswith("lbrepro."):
                    yield resolve(alias.name), node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from . import x, from ..core import y
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target != "lbrepro" and not target.startswith("lbrepro."):
                continue
            for alias in node.names:  # `from lbrepro.models import supermarket` is a module
                yield resolve(f"{target}.{alias.name}"), node.lineno


def allowed(importer: str, imported: str) -> bool:
    """Whether the layer order lets ``importer`` import ``imported``."""
    src, dst = layer(importer), layer(imported)
    if importer == imported or (dst == "root" and src != "root"):
        return True
    if importer.startswith(imported + "."):
        return True  # an enclosing package: importing the module imports it anyway
    if src == "root":
        return False
    if src == "plotting":
        return dst in ("core", "plotting")
    if dst == "plotting":
        return src in PLOTTING_IMPORTERS
    if src == "artifacts" and dst == "artifacts":
        own = paper(importer)
        if imported == "lbrepro.artifacts.registry":
            return own is not None
        return own is not None and paper(imported) == own
    return RANK[dst] < RANK[src] or dst == src


def violations() -> list[str]:
    """Every import that breaks the layer order, as ``module:line imports module``."""
    found = []
    for module, path in sorted(modules().items()):
        for imported, line in sorted(set(imports(module)), key=lambda x: (x[1], x[0])):
            if not allowed(module, imported):
                rel = path.relative_to(Path(lbrepro.__file__).parents[1])
                found.append(f"src/{rel}:{line}: {module} imports {imported}")
    return found


def cycles() -> list[list[str]]:
    """Chains of imports between lbrepro modules that lead back to their start."""
    graph = {
        m: sorted({i for i, _ in imports(m) if i != m and not m.startswith(i + ".")})
        for m in modules()
    }
    found, state = [], dict.fromkeys(graph, 0)  # 0 new, 1 on the current path, 2 done

    def visit(module: str, path: list[str]) -> None:
        """Depth-first search that records each back edge as a cycle."""
        state[module] = 1
        for nxt in graph[module]:
            if state.get(nxt) == 1:
                found.append([*path[path.index(nxt) :], nxt])
            elif state.get(nxt) == 0:
                visit(nxt, [*path, nxt])
        state[module] = 2

    for module in graph:
        if state[module] == 0:
            visit(module, [module])
    return found


def test_every_module_is_in_a_known_layer():
    """Every module of the package sits in one of the named layers."""
    known = {"root", "plotting", *RANK}
    unplaced = [m for m in modules() if layer(m) not in known]
    assert not unplaced, f"modules outside the layers of docs/architecture.md: {unplaced}"
    assert len(modules()) > 30  # the walk found the package, not an empty path


def test_imports_follow_the_layer_order():
    """No import goes up the layer order."""
    found = violations()
    assert not found, "imports against the layer order (docs/architecture.md):\n" + "\n".join(found)


def test_no_import_cycles():
    """No chain of imports comes back to where it started."""
    found = cycles()
    assert not found, "import cycles:\n" + "\n".join(" -> ".join(c) for c in found)


def test_the_rules_themselves():
    """The checker sees what it must: a deferred import, a relative one, a paper's neighbour."""
    assert not allowed("lbrepro.sim.affinity", "lbrepro.models.affinity")
    assert allowed("lbrepro.models.affinity", "lbrepro.sim.affinity")
    assert not allowed("lbrepro.core.stats", "lbrepro.sim.runlength")
    assert allowed("lbrepro.artifacts.whittle.fcfs", "lbrepro.artifacts.registry")
    assert allowed("lbrepro.artifacts.whittle.fcfs", "lbrepro.artifacts.whittle.shared")
    assert not allowed("lbrepro.artifacts.general.audit", "lbrepro.artifacts.supermarket.tail")
    assert not allowed("lbrepro.artifacts.registry", "lbrepro.artifacts.whittle")
    assert allowed("lbrepro.artifacts.whittle.fcfs", "lbrepro.plotting.style")
    assert not allowed("lbrepro.plotting.style", "lbrepro.artifacts.registry")
    assert not allowed("lbrepro.models.whittle", "lbrepro.plotting.style")
    assert not allowed("lbrepro.artifacts.registry", "lbrepro.config")
    assert allowed("lbrepro.cli", "lbrepro.config") and allowed("lbrepro.cli", "lbrepro")
    assert not allowed("lbrepro", "lbrepro.cli")
    assert allowed("lbrepro.artifacts.registry", "lbrepro.artifacts")  # its own package
    # Every import is seen: deferred into a function, relative, or only for type checking.
    source = """
from typing import TYPE_CHECKING
from . import occupancy
from ..core import stats
if TYPE_CHECKING:
    from lbrepro.models.hetero import System
def later():
    import lbrepro.models.supermarket
"""
    seen = {m for m, _ in imports_in(source, "lbrepro.sim.affinity", is_package=False)}
    assert seen == {
        "lbrepro.sim.occupancy",
        "lbrepro.core.stats",
        "lbrepro.models.hetero",
        "lbrepro.models.supermarket",
    }


PAPER_SLUGS = ("supermarket", "hetero", "whittle", "general", "affinity", "universality")


def test_core_names_no_paper():
    """Code several papers share lives in ``judging`` (or ``plotting``), never in ``core``:
    no core module is written for a paper (none says it is shared by, or of, a paper)."""
    import re

    offenders = []
    for module, path in modules().items():
        if layer(module) != "core":
            continue
        text = path.read_text(encoding="utf-8")
        for slug in PAPER_SLUGS:
            if re.search(rf"\b{slug}(-service)? paper", text, re.I) or f"artifacts.{slug}" in text:
                offenders.append(f"{module}: names the {slug} paper")
    assert offenders == [], offenders


# --------------------------------------------------------------- one estimate → row contract

#: "±" between a value and its half-width, as a piece of an f-string ("v ± h", "v±h",
#: "v (±h)") or of a ``str.format``/``%`` template.
_PM_PIECE = r"^\s*\(?±\s*$"
_PM_TEMPLATE = r"(\}|%[-+ #0-9.]*[a-zA-Z])\s*\(?±\s*(\{|%)"
#: The interval columns only ``core.rows.estimate_row`` writes.
_INTERVAL_KEYS = {"ci_low", "ci_high"}


def hand_intervals(source: str) -> list[str]:
    """Where a module writes an interval by hand instead of through the shared layer
    (``core.rows``: ``pm``, ``pm_text``, ``interval_text``, ``estimate_row``): an f-string with
    "±" between two formatted values, a ``.format``/``%`` template with "±" between two
    fields, a dict literal with a ``ci_low``/``ci_high`` key, or a call (``dict(...)``, a
    paper's own row builder) given them as keywords. A "±" before a margin alone
    ("within ±2%") or in plain text is no interval and passes."""
    import re

    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.JoinedStr):
            parts = node.values
            for before, piece, after in zip(parts, parts[1:], parts[2:], strict=False):
                if (
                    isinstance(before, ast.FormattedValue)
                    and isinstance(piece, ast.Constant)
                    and isinstance(after, ast.FormattedValue)
                    and re.match(_PM_PIECE, str(piece.value))
                ):
                    found.append(f"line {node.lineno}: an f-string writes value ± half-width")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            template = node.func.value
            if (
                node.func.attr == "format"
                and isinstance(template, ast.Constant)
                and isinstance(template.value, str)
                and re.search(_PM_TEMPLATE, template.value)
            ):
                found.append(f"line {node.lineno}: a format template writes value ± half-width")
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            template = node.left
            if (
                isinstance(template, ast.Constant)
                and isinstance(template.value, str)
                and re.search(_PM_TEMPLATE, template.value)
            ):
                found.append(f"line {node.lineno}: a % template writes value ± half-width")
        elif isinstance(node, ast.Dict):
            keys = {k.value for k in node.keys if isinstance(k, ast.Constant)}
            if keys & _INTERVAL_KEYS:
                found.append(f"line {node.lineno}: a dict literal builds the interval columns")
        if isinstance(node, ast.Call) and {k.arg for k in node.keywords} & _INTERVAL_KEYS:
            found.append(f"line {node.lineno}: a call passes the interval columns by keyword")
    return found


def test_no_artifact_writes_an_interval_by_hand():
    """Every artifact writes an estimate's interval through the shared layer: its row by
    ``core.rows.estimate_row``, its text by ``core.rows.pm``/``pm_text``/``interval_text`` —
    one contract from estimate to row to verdict (issue 33)."""
    offenders = [
        f"{module}: {where}"
        for module, path in modules().items()
        if layer(module) == "artifacts"
        for where in hand_intervals(path.read_text(encoding="utf-8"))
    ]
    assert offenders == [], offenders


def test_the_interval_rule_itself():
    """The rule catches the hand-written intervals the artifacts had (these lines are theirs
    before the shared ``pm``) and passes a margin, plain text and the shared calls."""
    caught = [
        'f"N={N}: {e:+.2e}±{h:.1e}"',
        "f\"{s['value']:.5f} ± {half:.1e}\"",
        'f"λ={lam:g}: N={n} {x - r:+.4g} (±{e.half_width:.2g})"',
        'f"exponent {order} ± {ORDER_MARGIN}"',
        '"{} ± {:.2g}".format(v, h)',
        '"%.4f ± %.1g" % (v, h)',
        '{"value": v, "ci_low": lo, "ci_high": hi}',
        'table_row("sim", "x", v, ci_low=lo, ci_high=hi, N=N)',
    ]
    for source in caught:
        assert len(hand_intervals(source)) == 1, source
    passed = [
        'f"fails when the 95% CI lies outside ±{AGREEMENT:.0%} of ρ"',
        'f"sim − {method} (±95%): "',
        '"exponent 1 ± ½"',
        "pm(v, h, '+.2e', '.1e', 'tight')",
        'f"N={N}: {pm(e, h)}"',
        'estimate_row(est) | {"policy": p}',
        '"{} ± ".format(v)',
    ]
    for source in passed:
        assert hand_intervals(source) == [], source
