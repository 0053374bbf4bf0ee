"""A release a researcher can cite: one version everywhere, the license pyproject names, and a
CITATION.cff that names every paper the project reproduces (its validity against the CFF
schema is checked by `cffconvert --validate` in .ci/release.sh)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml

import lbrepro
from lbrepro.artifacts.registry import papers

ROOT = Path(__file__).resolve().parents[1]


def _citation() -> dict:
    return yaml.safe_load((ROOT / "CITATION.cff").read_text())


def test_version_is_written_once_and_agrees_everywhere():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    attr = project["tool"]["setuptools"]["dynamic"]["version"]["attr"]
    assert attr == "lbrepro.__version__"
    version = lbrepro.__version__
    assert re.fullmatch(r"\d+\.\d+\.\d+", version), version
    assert str(_citation()["version"]) == version
    changelog = (ROOT / "CHANGELOG.md").read_text()
    # The latest released entry (an "Unreleased" section above it collects what comes next).
    first = re.search(r"^## (?!Unreleased)(\S+)", changelog, re.M).group(1)
    assert first == version, f"CHANGELOG.md's latest entry is {first}, the version {version}"
    snakefile = (ROOT / "workflow" / "Snakefile").read_text()
    image = re.search(r'^container: "([^"]+)"', snakefile, re.M).group(1)
    assert image.endswith(f"/lbrepro:{version}"), image


def test_license_file_is_the_license_pyproject_declares():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == {"text": "MIT"}
    assert (ROOT / "LICENSE").read_text().startswith("MIT License\n")
    assert _citation()["license"] == "MIT"


def test_citation_names_every_reproduced_paper():
    refs = _citation()["references"]
    # The five source texts; `supermarket` is the classic model they all build on (no text).
    reproduced = {slug: p for slug, p in papers().items() if slug != "supermarket"}
    assert len(reproduced) == 5, sorted(reproduced)
    for slug, paper in reproduced.items():
        title = paper.title.casefold()
        matches = [r for r in refs if title in (r["title"] + " " + r.get("notes", "")).casefold()]
        assert len(matches) == 1, f"{slug}: {paper.title!r} is not (once) in CITATION.cff"
    assert len(refs) == len(reproduced)
    for ref in refs:
        if "doi" in ref:
            assert re.fullmatch(r"10\.\d{4,9}/\S+", str(ref["doi"])), ref["doi"]
        else:  # a reference without a DOI says so
            assert "no DOI found" in ref.get("notes", ""), ref["title"]


def test_every_paper_links_to_the_reference_citation_cff_names():
    """The report links each paper's citation: to its DOI where CITATION.cff gives one, else to
    the preprint CITATION.cff names; the classic supermarket model links to its DOI."""
    refs = _citation()["references"]
    for slug, paper in papers().items():
        assert re.fullmatch(
            r"https://(doi\.org/10\.\d{4,9}/\S+|arxiv\.org/abs/\d{4}\.\d{4,5})", paper.url
        ), (
            slug,
            paper.url,
        )
        if slug == "supermarket":
            continue
        title = paper.title.casefold()
        (ref,) = [r for r in refs if title in (r["title"] + " " + r.get("notes", "")).casefold()]
        expected = f"https://doi.org/{ref['doi']}" if "doi" in ref else ref["url"]
        assert paper.url == expected, (slug, paper.url, expected)
