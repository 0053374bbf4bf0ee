"""The artifact registry: the one list the Snakefile, the CLI and the report all read.

A paper is a Python package whose ``__init__`` declares ``PAPER`` (its text and its artifacts).
The registry finds papers two ways, merged into one list: the entry-point group
``lbrepro.papers`` of every installed distribution (name: the paper's slug; value: its
package — lbrepro declares its own papers there too, and a researcher's package of their own
adds a paper the same way, with no file of lbrepro edited), and the packages under
``lbrepro/artifacts/`` of the running source tree (a paper added inside a checkout, before any
install). Naming rules, checked here: a slug is lower-case letters (``[a-z]+``, the
workflow's wildcard), an artifact id starts with its paper's slug and a hyphen, and no two
papers or artifacts share an id.

Each artifact is declared once, in its own module, with the functions that make it:
``points(cfg)`` → parameter points, ``compute(params, seed)`` → tidy rows,
``plot(rows, cfg)`` → a matplotlib figure, ``check(rows, cfg)`` → claims, ``summary(rows)`` →
a small wide table for the report, ``memory(params)`` → the bytes one point allocates, by the
config key that drives them (refused at validation beyond ``simulation.mem_mb``), and
``cost(params)`` → the estimated seconds of one point, by which cheap points share a job and
beyond ``simulation.max_events`` a point is refused (lbrepro.pipeline). ``cfg`` is the
artifact's own config section over the shared ``simulation`` defaults — the same merged
section for ``validate``, ``points``, ``check`` and ``plot`` (``pipeline.artifact_config``).
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import numpy as np

from lbrepro.core.claims import Claim, Finding
from lbrepro.core.errors import ConfigError

Rows = list[dict[str, Any]]
#: Prose about an artifact: fixed, or formatted from its merged config section.
Text = str | Callable[[Mapping[str, Any]], str]


def _text(text: Text, cfg: Mapping[str, Any] | None) -> str:
    """``text`` itself, or what it says for ``cfg`` (nothing without a config section: the
    artifact is not part of the run)."""
    if not callable(text):
        return text
    return text(cfg) if cfg is not None else ""


# File layout of the data contract (README.md, "Outputs"); Snakemake rules use these too.
TABLE = "results/{slug}/{artifact}.csv"
CHECKS = "results/{slug}/{artifact}.checks.json"
# One job's table: the rows of the points it computed (lbrepro.core.packing names jobs).
JOB = "results/{slug}/{artifact}/jobs/{job}.csv"
# The rows of the points run longer for claims the job tables left undecided (lbrepro.extension).
EXTENSION = "results/{slug}/{artifact}/extended.csv"
FIGURE_PNG = "figures/{slug}/{artifact}.png"
FIGURE_SVG = "figures/{slug}/{artifact}.svg"
FIGURE_PDF = "figures/{slug}/{artifact}.pdf"
REPORT = "report/index.html"
#: The config of the run the report shows, written beside it (its regenerate commands use it).
REPORT_CONFIG = "report/config.yaml"


@dataclass(frozen=True)
class Paper:
    """A source text: what the report says about it."""

    slug: str
    title: str
    authors: str
    citation: str
    summary: str
    artifacts: tuple[Artifact, ...] = ()
    #: Root causes shared by several failing claims: finding id → a :class:`Finding` (root
    #: cause, evidence per artifact, whose defect; ``str()`` is its text) or plain text.
    #: A claim names its root cause in ``Claim.finding``; the report lists each once.
    findings: Mapping[str, str | Finding] = field(default_factory=dict)
    # Position in the report (smaller first); papers with equal order sort by slug.
    order: int = 100
    #: Where a reader finds the paper: its DOI as https://doi.org/…, else its arXiv page (the
    #: report links the citation to it; tests/test_release.py keeps it in step with CITATION.cff).
    url: str = ""
    #: How the report names the paper: its authors and year, e.g. "Li & Lui (2010)" (the
    #: slug if empty).
    name: str = ""
    #: The results every paper is set against (the supermarket model), not a paper's claims of
    #: its own: shown apart from the papers at the end of a run.
    baseline: bool = False


@dataclass(frozen=True)
class Artifact:
    """One figure or table of a paper and the functions that produce it."""

    id: str
    slug: str
    kind: str
    title: str
    #: The figure's caption: a string, or a function of the artifact's merged config section
    #: (the same ``cfg`` the hooks get) where it states a configured number.
    caption: Text
    methods: tuple[str, ...]
    points: Callable[[Mapping[str, Any]], dict[str, dict[str, Any]]]
    compute: Callable[[dict[str, Any], np.random.SeedSequence], Rows]
    check: Callable[[Rows, Mapping[str, Any]], list[Claim]]
    plot: Callable[[Rows, Mapping[str, Any]], Any] | None = None
    summary: Callable[[Rows], Rows] | None = None
    validate: Callable[[Mapping[str, Any]], None] = lambda cfg: None
    #: What we reconstructed or chose, one note each: strings, or functions of ``cfg`` like
    #: the caption.
    reconstructions: tuple[Text, ...] = ()
    # Estimated seconds of one point's compute on one core, from its parameters: points
    # cheaper than `simulation.job_seconds` share a job (lbrepro.core.packing). None: one
    # job per point.
    cost: Callable[[Mapping[str, Any]], float] | None = None
    # Estimated bytes one point's compute allocates, by the config key that drives them
    # (lbrepro.core.footprint): a point beyond `simulation.mem_mb` is refused at validation
    # (lbrepro.pipeline.check_memory_estimates). Every artifact declares one (a test checks).
    memory: Callable[[Mapping[str, Any]], Mapping[str, float]] | None = None
    #: The point key that sets a simulation's run length: a point that has it is run
    #: 2^k times longer when a claim it serves is undecided and that would decide it
    #: (lbrepro.extension). None: no point of this artifact is extended (its key means
    #: something else, e.g. a trace's length).
    run_length: str | None = "horizon"

    def extendable(self, points: Mapping[str, Mapping[str, Any]]) -> set[str]:
        """The ids of ``points`` that can be run longer (they have the :attr:`run_length` key;
        none when it is None)."""
        key = self.run_length
        return {p for p, params in points.items() if key is not None and key in params}

    def caption_text(self, cfg: Mapping[str, Any] | None) -> str:
        """The caption, its configured numbers filled in from ``cfg``."""
        return _text(self.caption, cfg)

    def reconstruction_texts(self, cfg: Mapping[str, Any] | None) -> list[str]:
        """The reconstruction notes, their configured numbers filled in from ``cfg``."""
        return [_text(note, cfg) for note in self.reconstructions]

    @property
    def has_figure(self) -> bool:
        return self.plot is not None

    def paths(self) -> dict[str, str]:
        """This artifact's output files (relative to the working directory)."""
        fmt = {"slug": self.slug, "artifact": self.id}
        paths = {"table": TABLE.format(**fmt), "checks": CHECKS.format(**fmt)}
        if self.has_figure:
            paths["png"] = FIGURE_PNG.format(**fmt)
            paths["svg"] = FIGURE_SVG.format(**fmt)
            paths["pdf"] = FIGURE_PDF.format(**fmt)
        return paths


PAPERS: dict[str, Paper] = {}
ARTIFACTS: dict[str, Artifact] = {}
_loaded = False


def _add_paper(paper: Paper) -> None:
    """Record a discovered paper and its artifacts, refusing duplicate ids."""
    if paper.slug in PAPERS and paper is not PAPERS[paper.slug]:
        raise ValueError(f"paper {paper.slug!r} declared twice")
    PAPERS[paper.slug] = paper
    for artifact in paper.artifacts:
        if artifact.slug != paper.slug:
            raise ValueError(
                f"artifact {artifact.id!r} declares paper {artifact.slug!r}, "
                f"but sits in paper {paper.slug!r}"
            )
        if artifact.id in ARTIFACTS and ARTIFACTS[artifact.id] is not artifact:
            raise ValueError(f"artifact {artifact.id!r} registered twice")
        ARTIFACTS[artifact.id] = artifact


#: The entry-point group through which installed distributions add papers.
ENTRY_POINT_GROUP = "lbrepro.papers"
#: A paper's slug: the workflow's ``{slug}`` wildcard and the first word of its artifact ids.
SLUG = re.compile(r"[a-z]+")
#: An artifact id: the workflow's ``{artifact}`` wildcard (lower-case words joined by hyphens).
ARTIFACT_ID = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")


class PaperDiscoveryError(ConfigError):
    """A paper that cannot be registered: one line naming it (slug or module) and why; the CLI
    and the workflow print it as they print a bad config value (exit code 2)."""

    def __init__(self, message: str) -> None:
        super().__init__(ENTRY_POINT_GROUP, message)


def _in_tree_papers() -> dict[str, str]:
    """slug → module of every paper package under ``lbrepro/artifacts`` (found, not listed)."""
    package = __name__.rpartition(".")[0]  # lbrepro.artifacts, whose directory holds this file
    return {
        info.name: f"{package}.{info.name}"
        for info in pkgutil.iter_modules([str(Path(__file__).parent)])
        if info.name != "registry" and not info.name.startswith("_")
    }


def _entry_point_papers() -> dict[str, str]:
    """slug → module of every paper an installed distribution declares in ``lbrepro.papers``."""
    found: dict[str, str] = {}
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        if entry.name in found and found[entry.name] != entry.value:
            raise PaperDiscoveryError(
                f"paper slug {entry.name!r} is declared by two installed packages "
                f"({found[entry.name]} and {entry.value})"
            )
        found[entry.name] = entry.value
    return found


def paper_packages() -> dict[str, str]:
    """slug → module name of every paper: installed entry points and the in-tree packages.

    The same slug from both routes must name the same module (lbrepro's own papers are
    declared as entry points and also lie in the tree); a slug that breaks the naming rule is
    refused with one line.
    """
    papers_found = _entry_point_papers()
    for slug, module in _in_tree_papers().items():
        other = papers_found.setdefault(slug, module)
        if other != module:
            raise PaperDiscoveryError(
                f"paper slug {slug!r} is declared by an installed package ({other}) and lies "
                f"in lbrepro's tree ({module}): rename one"
            )
    for slug, module in papers_found.items():
        if not SLUG.fullmatch(slug):
            raise PaperDiscoveryError(
                f"paper {module}: slug {slug!r} must be lower-case letters only ([a-z]+)"
            )
    return dict(sorted(papers_found.items()))


def _first_line(err: BaseException) -> str:
    """The first line of an exception's message (its repr when it has none; a syntax error's
    message without the place, which :func:`_where` gives)."""
    text = (err.msg if isinstance(err, SyntaxError) and err.msg else str(err)).strip()
    return text.splitlines()[0] if text else repr(err)


def _where(err: BaseException) -> str:
    """`` (file, line N)`` where ``err`` was raised: a syntax error's own place, else the
    innermost frame of its traceback; "" if neither is known."""
    import traceback

    if isinstance(err, SyntaxError) and err.filename:
        return f" ({err.filename}, line {err.lineno})"
    frames = traceback.extract_tb(err.__traceback__)
    return f" ({frames[-1].filename}, line {frames[-1].lineno})" if frames else ""


def _import_paper(slug: str, module_name: str) -> Paper:
    """The ``PAPER`` a paper module declares, checked against its slug and naming rules."""
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise PaperDiscoveryError(f"paper {slug!r}: cannot import {module_name}: {err}") from err
    except (Exception, SystemExit) as err:
        # A bug in a paper's own code (a plugin's, most often) stops discovery with one line
        # saying where, not a traceback through the registry (or no line at all: SystemExit).
        raise PaperDiscoveryError(
            f"paper {slug!r}: importing {module_name} failed: {type(err).__name__}: "
            f"{_first_line(err)}{_where(err)}"
        ) from err
    paper = getattr(module, "PAPER", None)
    if not isinstance(paper, Paper):
        raise PaperDiscoveryError(f"paper {slug!r}: {module_name} declares no PAPER = Paper(...)")
    if paper.slug != slug:
        raise PaperDiscoveryError(
            f"paper {module_name}: declared as {slug!r} but its PAPER.slug is {paper.slug!r}"
        )
    for artifact in paper.artifacts:
        if not ARTIFACT_ID.fullmatch(artifact.id) or not artifact.id.startswith(f"{slug}-"):
            raise PaperDiscoveryError(
                f"paper {slug!r}: artifact id {artifact.id!r} must be lower-case words joined "
                f"by hyphens and start with {slug + '-'!r}"
            )
    return paper


def _load() -> None:
    """Import every paper package once; each declares ``PAPER`` with its artifacts."""
    global _loaded
    if _loaded:
        return
    found: dict[str, Paper] = {}
    for slug, name in paper_packages().items():
        found[slug] = _import_paper(slug, name)
    for paper in sorted(found.values(), key=lambda p: (p.order, p.slug)):
        _add_paper(paper)
    for artifact in ARTIFACTS.values():
        if artifact.slug not in PAPERS:
            raise ValueError(f"artifact {artifact.id!r}: unknown paper slug {artifact.slug!r}")
    _loaded = True


def papers() -> dict[str, Paper]:
    """Every discovered paper, in report order."""
    _load()
    return PAPERS


def all_artifacts() -> list[Artifact]:
    """Every registered artifact, in paper order then declaration order."""
    _load()
    order = list(PAPERS)
    return sorted(ARTIFACTS.values(), key=lambda a: order.index(a.slug))


def get(artifact_id: str) -> Artifact:
    """The artifact with this id; KeyError lists the known ids.

    A job needs one artifact: when the id starts with a paper package's name
    (``supermarket-tail`` → ``supermarket``), only that package is imported, so a job does not
    pay for importing every other paper (about a second per job over hundreds of jobs).
    """
    if artifact_id not in ARTIFACTS:
        prefix = artifact_id.split("-", 1)[0]
        name = paper_packages().get(prefix)
        if name is not None:
            paper = _import_paper(prefix, name)
            if any(a.id == artifact_id for a in paper.artifacts):
                return next(a for a in paper.artifacts if a.id == artifact_id)
    if artifact_id in ARTIFACTS:
        return ARTIFACTS[artifact_id]
    _load()
    try:
        return ARTIFACTS[artifact_id]
    except KeyError:
        known = ", ".join(sorted(ARTIFACTS))
        raise KeyError(f"unknown artifact {artifact_id!r}; known: {known}") from None


def enabled(config: Mapping[str, Any]) -> list[Artifact]:
    """The artifacts that have a config section, i.e. the ones this run produces."""
    return [a for a in all_artifacts() if a.id in config]


def config_schema_sections() -> tuple[dict[str, Any], dict[str, Any]]:
    """The config sections and extra ``$defs`` that the paper packages declare.

    Each paper package may ship ``schema.yaml``: top-level keys are its artifacts' config
    sections (JSON-schema), and an optional ``$defs`` adds definitions. They are merged into the
    base schema (``lbrepro/schemas/config.schema.yaml``), so a new paper edits no shared file.
    """
    import yaml

    _load()
    sections: dict[str, Any] = {}
    defs: dict[str, Any] = {}
    for name in paper_packages().values():
        module = importlib.import_module(name)
        if not hasattr(module, "__path__"):
            continue
        path = Path(module.__path__[0]) / "schema.yaml"
        if not path.is_file():
            continue
        fragment = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        for key, value in fragment.items():
            target = defs if key == "$defs" else sections
            items = value.items() if key == "$defs" else [(key, value)]
            for k, v in items:
                if k in target:
                    raise ValueError(f"{path}: {k!r} is declared by another paper too")
                target[k] = v
    return sections, defs
