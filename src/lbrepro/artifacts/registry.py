"""The artifact registry: the one list the Snakefile, the CLI and the report all read.

A paper is a package ``lbrepro.artifacts.<slug>`` whose ``__init__`` declares ``PAPER`` (its
text and its artifacts); the registry discovers every such package, so adding a paper edits no
list here. Each artifact is declared once, in its own module, with the functions that make it:
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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from lbrepro.core.claims import Claim

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
    #: Root causes shared by several failing claims: finding id → what it is, with numbers.
    #: A claim names its root cause in ``Claim.finding``; the report lists each once.
    findings: Mapping[str, str] = field(default_factory=dict)
    # Position in the report (smaller first); papers with equal order sort by slug.
    order: int = 100
    #: Where a reader finds the paper: its DOI as https://doi.org/…, else its arXiv page (the
    #: report links the citation to it; tests/test_release.py keeps it in step with CITATION.cff).
    url: str = ""
    #: How a reader names the paper: its authors and year, e.g. "Li & Lui (2010)" (the end of
    #: a workflow run, lbrepro.run_summary). Empty: the title stands in.
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


def paper_packages() -> list[str]:
    """The module names of every paper under ``lbrepro.artifacts`` (found, not listed)."""
    package = __name__.rpartition(".")[0]  # lbrepro.artifacts, whose directory holds this file
    return [
        f"{package}.{info.name}"
        for info in pkgutil.iter_modules([str(Path(__file__).parent)])
        if info.name != "registry" and not info.name.startswith("_")
    ]


def _load() -> None:
    """Import every paper package once; each declares ``PAPER`` with its artifacts."""
    global _loaded
    if _loaded:
        return
    found: dict[str, Paper] = {}
    for name in paper_packages():
        module = importlib.import_module(name)
        paper = getattr(module, "PAPER", None)
        if isinstance(paper, Paper):
            found[paper.slug] = paper
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
        for name in paper_packages():
            if name.rpartition(".")[2] == prefix:
                paper = getattr(importlib.import_module(name), "PAPER", None)
                if isinstance(paper, Paper) and any(a.id == artifact_id for a in paper.artifacts):
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
    for name in paper_packages():
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
