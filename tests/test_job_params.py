"""Every config key that can change a number or a verdict reaches the params of the jobs it
affects (issue 21): Snakemake reruns a job when its params change, so a key missing from them
leaves a result that no longer matches the config it is shown with.

The test changes every key of the schema in turn (every key of every artifact section and of
``simulation``, present in config/config.yaml or not) to another valid value and compares the
params of every job of the plan before and after — the params functions of the rules, called
directly (what Snakemake compares with ``--rerun-triggers params``).
"""

from __future__ import annotations

import copy
import functools
import inspect
from collections.abc import Iterator
from typing import Any

import pytest

from lbrepro import pipeline
from lbrepro.artifacts import registry
from lbrepro.config import CONFIG_PATH, load_config
from lbrepro.core.errors import ConfigError
from lbrepro.pipeline import (
    COMPUTE_SIMULATION_KEYS,
    SCHEDULING_KEYS,
    artifact_params,
    config_schema,
    plan,
    validate_config,
)

QUICK = load_config(CONFIG_PATH, CONFIG_PATH.parent / "quick.yaml")
SCHEMA = config_schema()
Job = tuple[str, ...]


def snapshot(config: dict[str, Any]) -> dict[Job, Any]:
    """The params of every job of the plan, as the rules compute them (common.smk)."""
    jobs: dict[Job, Any] = {("report",): dict(config)}
    p = plan(config)
    for artifact in registry.enabled(config):
        for job in p.jobs(artifact.id):
            jobs[("compute_points", artifact.id, job)] = p.compute_params(artifact.id, job)
        if p.extendable(artifact.id):
            jobs[("extend_points", artifact.id)] = p.extension_params(artifact.id)
        jobs[("check_claims", artifact.id)] = artifact_params(config, artifact.id)
        if artifact.has_figure:
            jobs[("plot_figure", artifact.id)] = artifact_params(config, artifact.id)
    return jobs


def changed(before: dict[Job, Any], after: dict[Job, Any]) -> set[Job]:
    """Jobs that are new, gone or whose params differ: what Snakemake reruns."""
    return {j for j in before.keys() | after.keys() if before.get(j) != after.get(j)}


def _resolve(schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = SCHEMA["$defs"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


def _variants(value: Any, schema: dict[str, Any]) -> Iterator[Any]:
    """Other values for a key, most of them valid: the first that validates is used."""
    schema = _resolve(schema)
    if "enum" in schema:
        yield from (v for v in schema["enum"] if v != value)
    if value is None:
        for v in (1.0, 0.5, 1.5, 2, 0.1, 10):
            yield v
        return
    if isinstance(value, bool):
        yield not value
    elif isinstance(value, int):
        yield from (value + 1, value - 1, value * 2, value + 10)
    elif isinstance(value, float):
        yield from (value * 1.01, value * 0.99, value + 0.01, value - 0.01, value * 2)
    elif isinstance(value, str):
        yield from (v for v in ("exp", "erlang:2", "empty", "type2", "fixed_point") if v != value)
    elif isinstance(value, list) and value:
        items = schema.get("items", {})
        if len(value) > 1:
            yield value[:-1]
        for v in _variants(value[0], items if isinstance(items, dict) else {}):
            yield [v, *value[1:]]
    elif isinstance(value, dict):
        props = schema.get("properties", {})
        for key, sub in value.items():
            for v in _variants(sub, props.get(key, {})):
                yield {**value, key: v}


def schema_keys() -> list[tuple[str, str]]:
    """Every (section, key) of the schema whose section the quick config enables."""
    keys = []
    for section, sub in SCHEMA["properties"].items():
        if section != "simulation" and section not in QUICK:
            continue
        for key in _resolve(sub).get("properties", {}):
            keys.append((section, key))
    return keys


@functools.cache
def _perturbed(section: str, key: str) -> dict[str, Any] | None:
    """QUICK with ``section.key`` changed to another valid value (None: none found)."""
    props = _resolve(SCHEMA["properties"][section])["properties"]
    current = QUICK[section].get(key)
    if section != "simulation":
        # merged over the simulation defaults, as the artifact sees it
        current = current if key in QUICK[section] else QUICK["simulation"].get(key)
    for candidate in _variants(current, props[key]):
        config = copy.deepcopy(QUICK)
        config[section][key] = candidate
        check = config if section == "simulation" else _one(config, section)
        try:
            validate_config(check)
        except ConfigError:
            continue
        if section == "simulation":
            try:
                validate_config(config)
            except ConfigError:
                continue
        return config
    return None


def _one(config: dict[str, Any], section: str) -> dict[str, Any]:
    return {"seed": config["seed"], "simulation": config["simulation"], section: config[section]}


BEFORE = snapshot(QUICK)


@pytest.mark.parametrize(("section", "key"), schema_keys(), ids=lambda v: str(v))
def test_every_key_reruns_exactly_its_jobs(section: str, key: str) -> None:
    config = _perturbed(section, key)
    if config is None:
        pytest.skip("no other valid value generated")
    rerun = changed(BEFORE, snapshot(config))
    assert ("report",) in rerun  # the report shows the whole config
    if section == "simulation":
        computes = {j for j in BEFORE if j[0] == "compute_points"}
        judged = {j for j in BEFORE if j[0] in ("check_claims", "plot_figure")}
        if key in SCHEDULING_KEYS:
            # scheduling only: no number and no verdict changes; job ids may (packing)
            assert not (rerun & judged), sorted(rerun & judged)[:3]
            same = {j for j in rerun if j[0] == "compute_points" and j in BEFORE}
            assert all(snapshot(config).get(j) is None for j in same), (
                "a compute job kept its id but changed its params"
            )
        elif key in COMPUTE_SIMULATION_KEYS:
            assert computes <= rerun, sorted(computes - rerun)[:3]
            assert judged <= rerun
        else:  # batches, replace: every artifact sees them through its merged section
            # (unless its own section sets the key, which then wins)
            judged = {j for j in judged if key not in QUICK[j[1]]}
            assert judged <= rerun, sorted(judged - rerun)[:3]
        return
    # An artifact's key: its own figure and checks rerun (a tolerance changes a verdict),
    # nothing of any other artifact does.
    assert ("check_claims", section) in rerun
    if registry.get(section).has_figure:
        assert ("plot_figure", section) in rerun
    others = {j for j in rerun if j != ("report",) and j[1] != section}
    assert not others, sorted(others)[:3]


def test_most_schema_keys_are_exercised() -> None:
    """The perturbation finds a valid other value for almost every key (guards the test)."""
    keys = schema_keys()
    missing = [k for k in keys if _perturbed(*k) is None]
    assert len(missing) <= len(keys) // 20, missing


@pytest.mark.parametrize(
    ("section", "key", "value", "rule"),
    [
        # issue 21: the two cases found
        ("simulation", "extend", 0, "compute_points"),
        ("whittle-gaps", "near_optimal_pct", 50, "check_claims"),
    ],
)
def test_issue_cases_rerun(section: str, key: str, value: Any, rule: str) -> None:
    config = copy.deepcopy(QUICK)
    config[section][key] = value
    validate_config(config)
    rerun = changed(BEFORE, snapshot(config))
    assert any(j[0] == rule for j in rerun), sorted(rerun)[:5]


def test_compute_params_hold_what_compute_points_reads() -> None:
    """compute_points reads the simulation keys from the one list the params are made of."""
    p = plan(QUICK)
    artifact = registry.enabled(QUICK)[0].id
    job = next(iter(p.jobs(artifact)))
    params = p.compute_params(artifact, job)
    assert set(params) == {"seed", "simulation", "points"}
    assert set(params["simulation"]) == set(COMPUTE_SIMULATION_KEYS)
    source = inspect.getsource(pipeline._compute_point)  # what compute_points runs per point
    assert "compute_simulation(config)" in source and '"simulation"' not in source
    assert "_compute_point(" in inspect.getsource(pipeline.compute_points)
    # the extension reruns points the same way, with the params of rule extend_points
    assert "_compute_point(" in inspect.getsource(pipeline.extend_points)
    extendable = next(a.id for a in registry.enabled(QUICK) if p.extendable(a.id))
    assert set(p.extension_params(extendable)) == {"seed", "simulation", "points", "config"}


def test_seed_reruns_every_compute_job_and_no_check() -> None:
    config = copy.deepcopy(QUICK)
    config["seed"] += 1
    rerun = changed(BEFORE, snapshot(config))
    assert {j for j in BEFORE if j[0] == "compute_points"} <= rerun
    assert not {j for j in rerun if j[0] in ("check_claims", "plot_figure")}
