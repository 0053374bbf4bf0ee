"""The artifact registry: the one list the Snakefile, the CLI and the report all read.

A paper is a package ``lbrepro.artifacts.<slug>`` whose ``__init__`` declares ``PAPER`` (its
text and its artifacts); the registry discovers every such package, so adding a paper edits no
list here. Each artifact is declared once, in its own module, with the functions that make it:
``points(cfg)`` → parameter points (one job each), ``compute(params, seed)`` → tidy rows,
``plot(rows, cfg)`` → a matplotlib figure, ``check(rows, cfg)`` → claims, ``summary(rows)`` →
a small wide table for the report. ``cfg`` is the artifact's own config section.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from lbrepro.core.claims import Claim

Rows = list[dict[str, Any]]

# File layout of the data contract (../shared/spec/README.md); Snakemake rules use these too.
TABLE = "results/{slug}/{artifact}.csv"
CHECKS = "results/{slug}/{artifact}.checks.json"
POINT = "results/{slug}/{artifact}/points/{point}.csv"
FIGURE_PNG = "figures/{slug}/{artifact}.png"
FIGURE_SVG = "figures/{slug}/{artifact}.svg"
REPORT = "report/index.html"


@dataclass(frozen=True)
class Paper:
    """A source text: what the report says about it."""

    slug: str
    title: str
    authors: str
    citation: str
    summary: str
    seed_file: str = ""
    artifacts: tuple[Artifact, ...] = ()
    # Position in the report (smaller first); papers with equal order sort by slug.
    order: int = 100


@dataclass(frozen=True)
class Artifact:
    """One figure or table of artifacts.md and the functions that produce it."""

    id: str
    slug: str
    kind: str
    title: str
    caption: str
    methods: tuple[str, ...]
    points: Callable[[Mapping[str, Any]], dict[str, dict[str, Any]]]
    compute: Callable[[dict[str, Any], np.random.SeedSequence], Rows]
    check: Callable[[Rows, Mapping[str, Any]], list[Claim]]
    plot: Callable[[Rows, Mapping[str, Any]], Any] | None = None
    summary: Callable[[Rows], Rows] | None = None
    validate: Callable[[Mapping[str, Any]], None] = lambda cfg: None
    reconstructions: tuple[str, ...] = ()

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
        return paths


# Papers not yet converted to a package (transitional: each entry goes when its package lands).
_LEGACY_PAPERS: dict[str, Paper] = {
    "supermarket": Paper(
        slug="supermarket",
        title="The supermarket model: JSQ(d), the power of d choices",
        authors="Mitzenmacher (1996/2001); Vvedenskaya, Dobrushin & Karpelevich (1996)",
        citation=(
            "M. Mitzenmacher, The power of two choices in randomized load balancing, IEEE TPDS "
            "12(10), 2001; N. D. Vvedenskaya, R. L. Dobrushin, F. I. Karpelevich, Queueing "
            "system with selection of the shortest of two queues, Probl. Inf. Transm. 32, 1996."
        ),
        summary=(
            "The baseline every paper builds on: with d ≥ 2 random choices the fraction of "
            "servers with at least k jobs decays doubly exponentially, and the mean field is "
            "exact as N → ∞ with an O(1/N) error that the refined mean field (Gast & Van Houdt "
            "2017) corrects."
        ),
    ),
    "hetero": Paper(
        "hetero",
        "Randomized Assignment of Jobs to Servers in Heterogeneous Clusters of Shared Servers "
        "for Low Delay",
        "A. Mukhopadhyay, A. Karthik & R. R. Mazumdar",
        "Mukhopadhyay, Karthik & Mazumdar, Randomized Assignment of Jobs to Servers in "
        "Heterogeneous Clusters of Shared Servers for Low Delay (seed text 000).",
        (
            "Processor-sharing servers of several types (fractions γ_j, capacities C_j). "
            "Schemes 1 and 2 sample d_j servers of every type and send the job to the least "
            "occupied one (Scheme 1) or the one offering the largest rate per job C_j/q "
            "(Scheme 2). The paper claims: both schemes are stable up to the full capacity "
            "μΣγ_jC_j, whereas SQ(d) over the whole system is not; the mean-field equilibrium "
            "is unique and every type's tail decays doubly exponentially; the schemes need no "
            "estimate of the arrival rate and can beat a type-based split tuned for the wrong "
            "load; the mean field becomes exact as N → ∞ (propagation of chaos)."
        ),
        "000_f403dd77859fed04.txt",
    ),
    "whittle": Paper(
        "whittle",
        "Load balancing with heterogeneous schedulers",
        "U. Ayesta, M. Gupta & I. M. Verloop",
        "Ayesta, Gupta & Verloop, Load balancing with heterogeneous schedulers (seed text 001).",
        (
            "A dispatcher sends each arriving job (probability p per slot) to one of K servers, "
            "each serving up to d jobs at a time (limited processor sharing, capacity q). "
            "Treating every server as a restless bandit gives Whittle's index, in closed form "
            "for FCFS (d = 1). The paper claims: with a linear cost q is the key parameter and "
            "d matters little, with a mean–variance cost the index depends strongly on d; the "
            "problem is indexable; the Whittle policy is close to optimal and beats JSQ, JSEW "
            "and random routing (RSA)."
        ),
        "001_3e39dc65d2748ae7.txt",
    ),
    "general": Paper(
        "general",
        "Doubly Exponential Solution for Randomized Load Balancing Models with General Service "
        "Times",
        "Q.-L. Li & J. C. S. Lui",
        "Li & Lui, Doubly Exponential Solution for Randomized Load Balancing Models with General "
        "Service Times (seed text 002).",
        (
            "JSQ(d) with a general service-time law. The paper publishes a doubly exponential "
            "fixed point Π_k built from θ = ∫(μḠ)^d and a sojourn time from it, and claims θ "
            "decreases in the Erlang order and in d, and that the tail is doubly exponential "
            "even for heavy-tailed service. The pipeline reproduces the closed form as "
            "published and sets it beside the exact mean field for phase-type service and "
            "simulation, to measure by how much it is off."
        ),
        "002_3a4bd09b05630962.txt",
    ),
    "affinity": Paper(
        "affinity",
        "Job Allocation in Large-Scale Service Systems with Affinity Relations",
        "E. Cardinaels, S. C. Borst & J. S. H. van Leeuwaarden",
        "Cardinaels, Borst & van Leeuwaarden, Job Allocation in Large-Scale Service Systems with "
        "Affinity Relations (seed text 003).",
        (
            "Type-I jobs can only run on d1 primary servers, type-II jobs on any idle server. "
            "The paper claims: Table 1's coupling thresholds d(k) for N = 50; a threshold d1* "
            "above which the fluid limit has two locally stable fixed points (no queueing and "
            "queueing), with the published Fig. 5 fixed point and an immediate-switch fraction "
            "1/4; CM's mean queue slightly above JSQ(d1)'s while JSQ(d1)'s variance is almost "
            "twice CM's; type-I waiting far below JSQ(d1)'s; and, at finite N, switching "
            "between the two quasi-stable states whose residence times grow with N."
        ),
        "003_3c8c8e448fde314c.txt",
    ),
    "universality": Paper(
        "universality",
        "Universality of Power-of-d Load Balancing Schemes",
        "D. Mukherjee, S. C. Borst, J. S. H. van Leeuwaarden & P. A. Whiting",
        "Mukherjee, Borst, van Leeuwaarden & Whiting, Universality of Power-of-d Load Balancing "
        "Schemes, 2016, doi:10.1145/3003977.3003990 (seed text 004).",
        "JSQ(d(N)) matches JSQ at fluid scale iff d(N) → ∞ and at diffusion scale if "
        "d(N)/(√N log N) → ∞.",
        "004_6c04174d50f55b0a.txt",
    ),
}

PAPERS: dict[str, Paper] = {}
ARTIFACTS: dict[str, Artifact] = {}
_loaded = False


def register(artifact: Artifact) -> Artifact:
    """Add an artifact of a not-yet-converted flat module (transitional)."""
    if artifact.id in ARTIFACTS:
        raise ValueError(f"artifact {artifact.id!r} registered twice")
    ARTIFACTS[artifact.id] = artifact
    return artifact


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
    for i, (slug, paper) in enumerate(_LEGACY_PAPERS.items()):
        found.setdefault(slug, dataclasses.replace(paper, order=10 * (i + 1)))
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
    """The artifact with this id; KeyError lists the known ids."""
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
