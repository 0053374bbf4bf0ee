"""Cheap points share a job: the packing rule, and that it leaves every number as it was."""

from __future__ import annotations

import math

import pytest

from lbrepro import pipeline
from lbrepro.artifacts import registry
from lbrepro.config import CONFIG_PATH, load_config
from lbrepro.core.errors import ConfigError
from lbrepro.core.io import read_table
from lbrepro.core.packing import JOB_SEPARATOR, pack_points

QUICK = CONFIG_PATH.parent / "quick.yaml"


@pytest.fixture(scope="module")
def quick():
    return load_config(CONFIG_PATH, QUICK)


def test_cheap_neighbours_share_a_job_up_to_the_budget():
    costs = {"a": 4.0, "b": 4.0, "c": 2.0, "d": 9.0, "e": 1.0}
    assert pack_points(costs, 10.0) == {"a..c": ["a", "b", "c"], "d..e": ["d", "e"]}
    costs["c"] = 2.5  # a..c would take 10.5 > 10 s: c opens the next job
    assert pack_points(costs, 10.0) == {"a..b": ["a", "b"], "c": ["c"], "d..e": ["d", "e"]}


def test_expensive_and_unknown_points_are_jobs_of_their_own():
    costs = {"a": 1.0, "b": 30.0, "c": 1.0, "d": None, "e": math.inf, "f": 1.0, "g": 2.0}
    assert pack_points(costs, 10.0) == {
        "a": ["a"],
        "b": ["b"],
        "c": ["c"],
        "d": ["d"],
        "e": ["e"],
        "f..g": ["f", "g"],
    }


def test_budget_zero_is_one_job_per_point():
    costs = {"a": 0.0, "b": 0.1, "c": None}
    assert pack_points(costs, 0.0) == {"a": ["a"], "b": ["b"], "c": ["c"]}


def test_every_point_in_exactly_one_job_in_order():
    costs = {f"p{i}": (i % 7) * 1.5 for i in range(40)}
    packed = pack_points(costs, 6.0)
    flat = [p for members in packed.values() for p in members]
    assert flat == list(costs)
    for job, members in packed.items():
        assert sum(costs[p] for p in members) <= 6.0 or len(members) == 1
        assert job == (members[0] if len(members) == 1 else members[0] + ".." + members[-1])


@pytest.mark.parametrize(
    ("costs", "budget", "match"),
    [
        ({"a..b": 1.0}, 5.0, "separator"),
        ({"a": -1.0}, 5.0, ">= 0"),
        ({"a": math.nan}, 5.0, ">= 0"),
        ({"a": 1.0}, -1.0, "budget"),
        ({"a": 1.0}, math.inf, "budget"),
    ],
)
def test_bad_costs_and_ids_are_refused(costs, budget, match):
    with pytest.raises(ValueError, match=match):
        pack_points(costs, budget)


def test_jobs_cover_every_point_of_every_artifact(quick):
    """Every configured point is computed by exactly one job, in point order."""
    for artifact in registry.enabled(quick):
        point_ids = list(pipeline.points(quick, artifact.id))
        packed = pipeline.jobs(quick, artifact.id)
        assert [p for members in packed.values() for p in members] == point_ids, artifact.id
        assert all(JOB_SEPARATOR not in p for p in point_ids), artifact.id


def test_job_seconds_zero_restores_one_job_per_point(quick):
    config = {**quick, "simulation": {**quick["simulation"], "job_seconds": 0}}
    for artifact in registry.enabled(config):
        point_ids = list(pipeline.points(config, artifact.id))
        assert list(pipeline.jobs(config, artifact.id)) == point_ids


def test_quick_profile_packs_cheap_points(quick):
    """The quick profile's sweeps are cheap: far fewer jobs than points (the point of packing)."""
    n_points = sum(len(pipeline.points(quick, a.id)) for a in registry.enabled(quick))
    n_jobs = sum(len(pipeline.jobs(quick, a.id)) for a in registry.enabled(quick))
    assert n_jobs < 0.6 * n_points, (n_jobs, n_points)


def test_a_job_writes_the_rows_its_points_write_alone(tmp_path, quick):
    """Packing changes no number: a job of several points writes exactly the rows of those
    points computed one job each (every point keeps its own stream)."""
    artifact = "whittle-gaps"
    point_ids = list(pipeline.points(quick, artifact))[:3]
    together = tmp_path / "together.csv"
    pipeline.compute_points(quick, artifact, point_ids, together)
    alone = []
    for i, point in enumerate(point_ids):
        out = tmp_path / f"{i}.csv"
        pipeline.compute_points(quick, artifact, [point], out)
        alone += read_table(out)
    assert read_table(together) == alone
    assert {r["point"] for r in alone} == set(point_ids)


def test_unknown_job_and_point_are_named(quick):
    with pytest.raises(KeyError, match="nosuchjob"):
        pipeline.job_params(quick, "supermarket-tail", "nosuchjob")
    with pytest.raises(KeyError, match="nosuchpoint"):
        pipeline.compute_points(quick, "supermarket-tail", ["nosuchpoint"], "unused.csv")


def test_a_bad_job_seconds_is_refused_naming_the_key(quick, refused):
    from lbrepro.pipeline import validate_config

    config = {**quick, "simulation": {**quick["simulation"], "job_seconds": -1}}
    assert refused(validate_config, config).key.startswith("simulation")


def test_a_cost_estimate_that_is_not_a_number_is_a_config_error(quick, monkeypatch):
    from dataclasses import replace

    artifact = registry.get("whittle-gaps")
    broken = replace(artifact, cost=lambda p: math.nan)
    monkeypatch.setitem(registry.ARTIFACTS, "whittle-gaps", broken)
    monkeypatch.setattr(registry, "get", lambda artifact_id: broken)
    with pytest.raises(ConfigError, match=r"whittle-gaps\.points"):
        pipeline.jobs(quick, "whittle-gaps")
