"""Pipeline steps: the registry agrees with config and schema; one seed gives the same numbers."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from lbrepro import pipeline
from lbrepro.artifacts import registry
from lbrepro.config import CONFIG_PATH, load_config
from lbrepro.core.io import read_table
from lbrepro.pipeline import config_schema

QUICK = CONFIG_PATH.parent / "quick.yaml"


@pytest.fixture(scope="module")
def quick():
    return load_config(CONFIG_PATH, QUICK)


def test_every_artifact_has_config_and_schema_entries():
    config, schema = load_config(CONFIG_PATH), config_schema()
    for artifact in registry.all_artifacts():
        assert artifact.id in config, f"{artifact.id} has no section in config.yaml"
        assert artifact.id in schema["properties"], f"{artifact.id} missing from the schema"
        assert artifact.slug in registry.PAPERS


def test_point_ids_are_unique_and_file_safe(quick):
    for artifact in registry.enabled(quick):
        ids = list(pipeline.points(quick, artifact.id))
        assert ids and len(ids) == len(set(ids))
        for point in ids:
            assert re.fullmatch(r"[A-Za-z0-9.=_-]+", point), point


def test_same_seed_same_numbers_other_seed_other_numbers(tmp_path, quick):
    point = next(iter(pipeline.points(quick, "supermarket-tail")))
    a, b, c = tmp_path / "a.csv", tmp_path / "b.csv", tmp_path / "c.csv"
    pipeline.compute_points(quick, "supermarket-tail", [point], a)
    pipeline.compute_points(quick, "supermarket-tail", [point], b)
    assert a.read_text() == b.read_text()
    pipeline.compute_points({**quick, "seed": quick["seed"] + 1}, "supermarket-tail", [point], c)
    sim = [r for r in read_table(c) if r["method"] == "sim"]
    sim_a = [r for r in read_table(a) if r["method"] == "sim"]
    assert [r["value"] for r in sim] != [r["value"] for r in sim_a]
    assert {r["seed"] for r in sim} == {quick["seed"] + 1}


def test_points_of_one_artifact_use_independent_streams(tmp_path, quick):
    points = list(pipeline.points(quick, "supermarket-accuracy"))[:2]
    outs = []
    for i, point in enumerate(points):
        out = tmp_path / f"{i}.csv"
        pipeline.compute_points(quick, "supermarket-accuracy", [point], out)
        outs.append(next(r for r in read_table(out) if r["method"] == "sim")["value"])
    assert outs[0] != outs[1]


# Imports a compute job does not need: each costs every one of the ~260 jobs of a full run
# (scipy.stats 0.6 s; matplotlib.pyplot 0.7 s, only the plot jobs draw).
HEAVY = ("scipy.stats", "matplotlib", "jsonschema", "jinja2")


def test_a_compute_job_imports_nothing_heavy():
    """What workflow/scripts/compute_points.py imports, with every paper registered, in a fresh
    interpreter: none of the heavy modules a compute job does not use."""
    code = (
        "import sys\n"
        "from lbrepro.pipeline import compute_points, logging_to\n"
        "from lbrepro.artifacts import registry\n"
        "registry.all_artifacts()\n"
        f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True
    )
    assert run.stdout.split() == [], f"a compute job imports {run.stdout.strip()}"
