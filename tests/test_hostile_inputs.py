"""Hostile but realistic inputs (issue 12): every bad config value and command-line argument
is refused before any job runs or anything is allocated, with one line naming the key or the
flag and exit code 2; good values keep working. Table-driven, so none regresses.

Tables: ``GENERATED`` (every numeric key of every artifact of config/config.yaml given NaN,
±inf and a negative value, an unknown key and a missing required key per artifact),
``CONFIG_CASES`` (the issue's cases and relations between keys), ``UNAFFORDABLE`` (for every
artifact, parameters within the schema whose memory or time estimate is refused),
``FILE_CASES`` (broken files), ``CLI_CASES`` (bad arguments) and ``ACCEPTED`` (values that
must keep working).

Issue 21 added classes, not instances: ``FILE_CASES`` grew by duplicates, YAML 1.1 surprises,
depth, alias bombs, giant integers, size (pipes), YTE templates; ``SHAPE_CASES`` (configs as
Snakemake hands them over), ``ACCEPTED_FILES``, memory and event estimates at validation in
``CONFIG_CASES``, laws outside the model's range in ``CLI_CASES``, ``SHORT_RUNS`` and
``STREAM_CASES`` (streams and environment). The other classes of issue 21 have their own
tables: tests/test_job_params.py (every key reaches its jobs), test_table_integrity.py (damaged
job tables), test_report_integrity.py (the manifest, hostile text, the report's temporary
file), test_runlock.py (locks across PID namespaces), test_workflow_integrity.py (end to end).
"""

from __future__ import annotations

import json
import math
import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from lbrepro import cli
from lbrepro.config import CONFIG_PATH, deep_merge, load_config
from lbrepro.core.errors import ConfigError
from lbrepro.core.ids import POINT_ID, num
from lbrepro.pipeline import config_schema, points, validate_config

BASE = load_config(CONFIG_PATH)
SCHEMA = config_schema()
COMMON = {"seed": BASE["seed"], "simulation": BASE["simulation"]}


def _one(artifact: str, override: dict[str, Any] | None = None) -> dict[str, Any]:
    """The config of one artifact (fast to validate), with ``override`` merged in."""
    return COMMON | {artifact: deep_merge(BASE[artifact], override or {})}


# ------------------------------------------------------------------- generated config cases
def _generated() -> list[Any]:
    cases = []
    for artifact, section in BASE.items():
        if not isinstance(section, dict) or artifact == "simulation":
            continue
        required = SCHEMA["properties"][artifact].get("required", [])
        cases.append(
            pytest.param(
                artifact, {"colour": "red"}, f"{artifact}.colour", id=f"{artifact}-unknown"
            )
        )
        if required:
            cases.append(
                pytest.param(artifact, None, f"{artifact}.{required[0]}", id=f"{artifact}-missing")
            )
        for key, value in section.items():
            scalar = isinstance(value, int | float) and not isinstance(value, bool)
            listed = (
                isinstance(value, list)
                and value
                and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
            )
            if not (scalar or listed):
                continue
            where = f"{artifact}.{key}" + ("[0]" if listed else "")
            for label, bad in (("nan", math.nan), ("inf", math.inf), ("neg", -1)):
                cases.append(
                    pytest.param(
                        artifact,
                        {key: [bad, *value[1:]] if listed else bad},
                        where,
                        id=f"{artifact}.{key}={label}",
                    )
                )
    return cases


GENERATED = _generated()


@pytest.mark.parametrize(("artifact", "override", "key"), GENERATED)
def test_generated_bad_value_names_its_key(
    refused: Callable[..., ConfigError], artifact: str, override: Any, key: str
) -> None:
    """NaN, ±inf, negative, unknown and missing values are refused by key."""
    if override is None:  # drop the first required key
        section = dict(BASE[artifact])
        section.pop(key.split(".", 1)[1])
        config = COMMON | {artifact: section}
    else:
        config = _one(artifact, override)
    err = refused(validate_config, config)
    assert err.key.startswith(key), (err.key, str(err))


# ---------------------------------------------------------------------- hand-written cases
CONFIG_CASES = [
    # Silent data loss: ids must be unique and faithful.
    ("supermarket-tail", {"rho": [0.9, 0.9]}, "supermarket-tail.rho"),
    ("supermarket-tail", {"d": [2, 2]}, "supermarket-tail.rho, d"),
    ("supermarket-accuracy", {"N": [100, 100]}, "supermarket-accuracy.cases, N"),
    ("supermarket-accuracy", {"cases": [[0.9, 2], [0.9, 2]]}, "supermarket-accuracy.cases"),
    ("general-sojourn", {"rho": [0.7, 0.7]}, "general-sojourn.dists, rho"),
    ("general-sojourn", {"dists": ["exp", "exp"]}, "general-sojourn.dists"),
    ("general-audit", {"rho": [0.5, 0.5]}, "general-audit.dists, rho"),
    ("general-tail", {"dists": ["exp", "exp"]}, "general-tail.dists"),
    ("hetero-accuracy", {"rho": [0.9, 0.9]}, "hetero-accuracy.rho, N"),
    ("hetero-stability", {"sim_sides": [0.9, 0.9, 1.1]}, "hetero-stability.sim_sides"),
    ("hetero-stability", {"gamma_slow": [0.5, 0.5]}, "hetero-stability.gamma_slow"),
    ("hetero-chaos", {"N": [10, 10]}, "hetero-chaos.N"),
    (
        "hetero-tail",
        {"systems": [{"name": "A", "gamma": [1], "C": [1], "d": [2]}] * 2},
        "hetero-tail.systems[1].name",
    ),
    ("whittle-index-linear", {"p": [0.3, 0.3]}, "whittle-index-linear.p"),
    ("whittle-fcfs", {"p": [0.3, 0.3]}, "whittle-fcfs.p"),
    ("whittle-indexability", {"beta": [1, 1]}, "whittle-indexability.p, beta"),
    ("universality-fluid", {"N": [100, 100]}, "universality-fluid.d, N"),
    ("universality-overhead", {"d": [2, 2]}, "universality-overhead.d"),
    ("affinity-queue-length", {"lam_sim": [0.5, 0.5]}, "affinity-queue-length.lam_sim"),
    ("affinity-tunneling", {"N": [50, 50]}, "affinity-tunneling.N"),
    (
        "affinity-sim-vs-fluid",
        {"cases": [[3, "empty"], [3, "empty"]]},
        "affinity-sim-vs-fluid.cases",
    ),
    # Validation gaps that used to fail at job time.
    ("supermarket-tail", {"rho": [math.nan]}, "supermarket-tail.rho[0]"),
    ("supermarket-tail", {"horizon": math.nan}, "supermarket-tail.horizon"),
    ("supermarket-tail", {"horizon": math.inf}, "supermarket-tail.horizon"),
    ("hetero-tail", {"warmup": 1e9}, "hetero-tail.warmup"),
    ("hetero-sojourn", {"warmup": 1e9}, "hetero-sojourn.warmup"),
    ("hetero-stability", {"warmup": 1e9}, "hetero-stability.warmup"),
    ("hetero-tail", {"N": 201}, "hetero-tail.N"),
    ("hetero-accuracy", {"N": [11, 100]}, "hetero-accuracy.N"),
    ("hetero-chaos", {"N": [11, 40]}, "hetero-chaos.N"),
    ("affinity-tunneling", {"low": 0.8, "high": 0.2}, "affinity-tunneling.low"),
    ("affinity-tunneling", {"low": 0.5, "high": 0.5}, "affinity-tunneling.low"),
    ("affinity-queue-length", {"lam_sim": [1.2]}, "affinity-queue-length.lam_sim[0]"),
    ("affinity-waiting", {"lam_sim": [0.5, 1.2]}, "affinity-waiting.lam_sim[1]"),
    ("affinity-queue-length", {"lam_grid": [0.5, 1.5]}, "affinity-queue-length.lam_grid[1]"),
    ("general-sojourn", {"dists": ["lognormal:50"]}, "general-sojourn.dists[0]"),
    ("general-theta-examples", {"dists": ["weibull:0.001"]}, "general-theta-examples.dists[0]"),
    # Allocation limits shared with the CLI.
    ("supermarket-tail", {"N": 1_000_000_000}, "supermarket-tail.N"),
    ("general-sojourn", {"N": 1_000_000_000}, "general-sojourn.N"),
    ("affinity-queue-length", {"N": 1_000_000_000}, "affinity-queue-length.N"),
    ("universality-fluid", {"N": [1_000_000_000]}, "universality-fluid.N[0]"),
    ("universality-overhead", {"N": 1_000_000_000}, "universality-overhead.N"),
    ("whittle-index-linear", {"nmax": 100_000_000}, "whittle-index-linear.nmax"),
    ("whittle-fcfs", {"nmax": 100_000_000}, "whittle-fcfs.nmax"),
    # issue 21 — memory and event estimates at validation, for every artifact: what the job
    # would have refused (or run out of memory on) after planning and scheduling
    ("supermarket-tail", {"rho": [0.99999999], "d": [1]}, "supermarket-tail.rho"),
    ("supermarket-accuracy", {"cases": [[0.99999999, 1]]}, "supermarket-accuracy.cases"),
    ("general-sojourn", {"dists": ["erlang:1000000"]}, "general-sojourn.dists[0]"),
    ("general-sojourn", {"dists": ["erlang:3000"]}, "general-sojourn.dists[0]"),
    (
        "general-audit",
        {"dists": ["coxian:" + ",".join(["1"] * 65 + ["0.5"] * 64)]},
        "general-audit.dists[0]",
    ),
    ("general-tail", {"dists": ["lomax:1.0000001"]}, "general-tail.dists[0]"),
    ("general-audit", {"dists": ["hyperexp:1e9"]}, "general-audit.dists[0]"),
    ("supermarket-tail", {"N": 10_000_000, "horizon": 1.0e6}, "supermarket-tail.points"),
    ("supermarket-accuracy", {"server_time": 1.0e15}, "supermarket-accuracy.points"),
    ("general-sojourn", {"N": 10_000_000, "horizon": 1.0e7}, "general-sojourn.points"),
    ("hetero-tail", {"horizon": 1.0e12}, "hetero-tail.points"),
    ("affinity-queue-length", {"horizon": 1.0e12}, "affinity-queue-length.points"),
    ("universality-overhead", {"horizon": 1.0e12}, "universality-overhead.points"),
    # Relations and types that already worked (keep them).
    ("supermarket-tail", {"rho": [0.9, 1.5]}, "supermarket-tail.rho[1]"),
    ("supermarket-tail", {"warmup": 1e9}, "supermarket-tail.warmup"),
    ("supermarket-tail", {"rho": "0.9"}, "supermarket-tail.rho"),
    ("supermarket-tail", {"N": "1e8"}, "supermarket-tail.N"),
    ("supermarket-tail", {"d": [0]}, "supermarket-tail.d[0]"),
    ("supermarket-tail", {"N": 10.5}, "supermarket-tail.N"),
    ("supermarket-accuracy", {"cases": [[0.9, 0]]}, "supermarket-accuracy.cases[0][1]"),
    ("hetero-tail", {"rho": 1.2}, "hetero-tail.rho"),
    ("hetero-sojourn", {"rho_sim": [0.123]}, "hetero-sojourn.rho_sim[0]"),
    ("hetero-sojourn", {"rho_sim": [1.0]}, "hetero-sojourn.rho_sim[0]"),
    ("whittle-index-linear", {"p": [1.5]}, "whittle-index-linear.p[0]"),
    ("whittle-index-linear", {"d": [0]}, "whittle-index-linear.d[0]"),
    ("general-sojourn", {"dists": ["nosuch:1"]}, "general-sojourn.dists[0]"),
    ("general-sojourn", {"rho": [1.0]}, "general-sojourn.rho[0]"),
    ("affinity-trajectories", {"lam": 1.5}, "affinity-trajectories.lam"),
    ("affinity-trajectories", {"mu2": 1.5}, "affinity-trajectories.mu2"),
]


@pytest.mark.parametrize(
    ("artifact", "override", "key"),
    CONFIG_CASES,
    ids=[f"{a}:{next(iter(o))}={o[next(iter(o))]!r}"[:80] for a, o, _ in CONFIG_CASES],
)
def test_bad_config_names_its_key(
    refused: Callable[..., ConfigError], artifact: str, override: dict[str, Any], key: str
) -> None:
    """The hand-written bad configs are refused, naming the key."""
    err = refused(validate_config, _one(artifact, override))
    assert err.key == key or err.key.startswith(key), (err.key, str(err))


def test_seed_must_be_finite_integer(refused: Callable[..., ConfigError]) -> None:
    """The seed is a finite non-negative integer."""
    for bad, key in ((math.inf, "seed"), (-3, "seed"), (math.nan, "seed"), ("7", "seed")):
        assert refused(validate_config, COMMON | {"seed": bad}).key == key


# ------------------------------------- issue 21: unaffordable within the schema, per artifact
#: Every artifact's class of unaffordable points (within the schema): beyond the job's memory
#: (``simulation.mem_mb``; ``Artifact.memory``) or beyond the event/time budget
#: (``simulation.max_events``; ``Artifact.cost``). One row per artifact, the key it names.
MANY_TYPES = {
    "name": "W",
    "gamma": [1 / 20000] * 20000,
    "C": [1.0 + i for i in range(20000)],
    "d": [2] * 20000,
}
WIDE = [{"name": "A", "d": [1, 1, 1, 1], "q": [0.9] * 4, "p": [0.5], "B": 400}]
UNAFFORDABLE = [
    ("supermarket-tail", {"rho": [0.99999999], "d": [1]}, "supermarket-tail.rho"),
    ("supermarket-accuracy", {"cases": [[0.99999999, 1]]}, "supermarket-accuracy.cases"),
    (
        "hetero-stability",
        {"sim_sides": [0.9, 1.1], "horizons": [1e9, 2e9, 3e9]},
        "hetero-stability.points",
    ),
    ("hetero-tail", {"systems": [MANY_TYPES], "N": 20000}, "hetero-tail.deep_levels"),
    (
        "hetero-sojourn",
        {"systems": [MANY_TYPES], "N": 20000, "rho_sim": [0.5]},
        "hetero-sojourn.systems",
    ),
    ("hetero-accuracy", {"systems": [MANY_TYPES], "N": [20000, 40000]}, "hetero-accuracy.systems"),
    ("hetero-chaos", {"systems": [MANY_TYPES], "N": [20000, 40000]}, "hetero-chaos.systems"),
    (
        "whittle-index-linear",
        {"q": [0.5 + i * 1e-6 for i in range(10_000)]},
        "whittle-index-linear.q",
    ),
    (
        "whittle-index-meanvar",
        {"nmax": 200, "q": [0.5 + i * 1e-4 for i in range(300)]},
        "whittle-index-meanvar.points",
    ),
    (
        "whittle-fcfs",
        {"nmax": 400, "q": [0.5 + i * 1e-4 for i in range(1000)]},
        "whittle-fcfs.points",
    ),
    (
        "whittle-indexability",
        {"mmax": 60, "q": [0.5 + i * 1e-4 for i in range(2000)]},
        "whittle-indexability.q",
    ),
    ("whittle-compare", {"scenarios": WIDE}, "whittle-compare.scenarios.A.B"),
    ("whittle-gaps", {"scenarios": WIDE}, "whittle-gaps.scenarios.A.B"),
    ("general-theta-table", {"d": [1, 100_000]}, "general-theta-table.points"),
    (
        "general-theta-exp",
        {"mu": [1.0 + i * 1e-6 for i in range(50_000)]},
        "general-theta-exp.mu",
    ),
    ("general-theta-examples", {"d": list(range(1, 20_000))}, "general-theta-examples.d"),
    ("general-sojourn", {"N": 10_000_000, "horizon": 1.0e7}, "general-sojourn.points"),
    ("general-tail", {"N": 10_000_000, "horizon": 1.0e7}, "general-tail.points"),
    ("general-audit", {"N": 10_000_000, "horizon": 1.0e7}, "general-audit.points"),
    ("affinity-table1", {"N": 1_000_000_000}, "affinity-table1.N"),
    ("affinity-stepfunctions", {"N": 100_000_000}, "affinity-stepfunctions.N"),
    ("affinity-dstar", {"lam": [0.5 + i * 1e-7 for i in range(30_000)]}, "affinity-dstar.points"),
    (
        "affinity-trajectories",
        {"n_traj": 100_000, "n_record": 10_000},
        "affinity-trajectories.n_record",
    ),
    ("affinity-bistability", {"t_end": 1.0e9}, "affinity-bistability.points"),
    ("affinity-sim-vs-fluid", {"dt_snap": 1e-6}, "affinity-sim-vs-fluid.dt_snap"),
    ("affinity-basin", {"t_end": 1.0e9}, "affinity-basin.points"),
    (
        "affinity-bifurcation",
        {"lam_grid": [0.5 + i * 1e-7 for i in range(20_000)]},
        "affinity-bifurcation.points",
    ),
    ("affinity-queue-length", {"horizon": 1.0e12}, "affinity-queue-length.points"),
    ("affinity-waiting", {"horizon": 1.0e12}, "affinity-waiting.points"),
    ("affinity-tunneling", {"dt_snap": 1e-6}, "affinity-tunneling.dt_snap"),
    ("universality-fluid", {"server_time": 1.0e15}, "universality-fluid.points"),
    ("universality-diffusion", {"replications": 10**12}, "universality-diffusion.replications"),
    ("universality-overhead", {"horizon": 1.0e12}, "universality-overhead.points"),
]


@pytest.mark.parametrize(
    ("artifact", "override", "key"), UNAFFORDABLE, ids=[row[0] for row in UNAFFORDABLE]
)
def test_unaffordable_point_is_refused_at_validate(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    artifact: str,
    override: dict[str, Any],
    key: str,
) -> None:
    """``lbrepro validate`` refuses the point before any job: exit 2, one line, the key.

    A sweep too long to run is tested against a tenth of the default limits (the smallest
    ``simulation.mem_mb`` the schema allows, 100, and a tenth of ``max_events``): the list then
    needs a tenth of the entries, and reading a list of 10⁵ entries (pure-Python strict YAML,
    then the schema) took most of a minute."""
    config = _one(artifact, override)
    if any(isinstance(v, list) and len(v) > 1000 for v in override.values()):
        limits = {"mem_mb": 100, "max_events": config["simulation"]["max_events"] / 10}
        config["simulation"] = {**config["simulation"], **limits}
    path = tmp_path / "over.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    assert cli.main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{key}:" in err, err
    assert "needs about" in err or "simulation.max_events" in err, err


def test_every_artifact_has_estimates_and_an_unaffordable_case() -> None:
    """A new artifact cannot skip the estimates: every registered one, a plugin's too,
    declares ``memory`` (bytes by key) and ``cost`` (seconds); each of lbrepro's own has its
    row in ``UNAFFORDABLE`` (a paper installed as a plugin tests its own cases)."""
    from lbrepro.artifacts import registry

    artifacts = registry.all_artifacts()
    assert not [a.id for a in artifacts if a.memory is None or a.cost is None]
    own = {s for s, module in registry.paper_packages().items() if module.startswith("lbrepro.")}
    assert {row[0] for row in UNAFFORDABLE} == {a.id for a in artifacts if a.slug in own}


def test_default_points_are_affordable_and_estimates_are_plain_numbers() -> None:
    """Every point of the default and quick configs has finite, non-negative estimates within
    the default limits (the rule would otherwise refuse the shipped configs)."""
    from lbrepro.artifacts import registry
    from lbrepro.core.footprint import total
    from lbrepro.pipeline import DEFAULT_MEM_MB

    for config in (BASE, load_config(CONFIG_PATH, CONFIG_PATH.parent / "quick.yaml")):
        for artifact in registry.enabled(config):
            for point, params in points(config, artifact.id).items():
                nbytes, key = total(artifact.memory(params))
                assert 0 <= nbytes < DEFAULT_MEM_MB * 1e6, (artifact.id, point, key, nbytes)
                seconds = artifact.cost(params)
                assert 0 <= seconds < math.inf, (artifact.id, point, seconds)


def test_mem_mb_is_the_limit(refused: Callable[..., ConfigError]) -> None:
    """The limit is the job's ``simulation.mem_mb``: a point that fits in 1000 MB is refused
    at 100 MB, naming the key and the limit."""
    config = _one("affinity-tunneling", {"dt_snap": 0.2})
    validate_config(config)
    small = config | {"simulation": config["simulation"] | {"mem_mb": 100}}
    err = refused(validate_config, small)
    assert err.key == "affinity-tunneling.dt_snap", err.key
    assert "simulation.mem_mb = 100" in str(err) and "lower dt_snap" in str(err), str(err)


# A 400-byte "billion laughs": 9^10 values once the aliases are expanded.
BOMB = 'a0: &a0 ["x","x","x","x","x","x","x","x","x"]\n' + "".join(
    f"a{i}: &a{i} [{','.join([f'*a{i - 1}'] * 9)}]\n" for i in range(1, 10)
)

FILE_CASES = [
    ("tabs", b"seed: 1\nsimulation:\n\tbatches: 3\n", "tabs"),
    ("unclosed", b"seed: [1\n", "not valid YAML"),
    ("colon", b"seed: 1\n  simulation: : :\n", "not valid YAML"),
    ("binary", bytes(range(256)) * 4, "not a text file"),
    ("list", b"- 1\n- 2\n", "mapping"),
    # issue 21 — duplicates: YAML keeps the last silently, at any level
    ("duplicate-key", b"seed: 1\nseed: 2\n", "duplicate key 'seed'"),
    ("duplicate-section", b"simulation: {batches: 5}\nsimulation: {extend: 1}\n", "duplicate"),
    ("duplicate-nested", b"supermarket-tail:\n  N: 10\n  N: 20\n", "duplicate key 'N'"),
    ("duplicate-flow", b"simulation: {batches: 5, batches: 6}\n", "duplicate key"),
    # YAML 1.1 surprises: numbers and booleans read differently from how they look
    ("octal", b"supermarket-tail:\n  N: 0100\n", "0100 is read by YAML 1.1 as 64"),
    ("octal-in-list", b"supermarket-tail:\n  d: [2, 010]\n", "as 8"),
    ("hexadecimal", b"seed: 0x10\n", "as 16"),
    ("binary-int", b"seed: 0b11\n", "as 3"),
    ("base-60", b"seed: 1:30\n", "as 90"),
    ("underscore", b"seed: 1_000\n", "as 1000"),
    ("yes-boolean", b"simulation:\n  replace: yes\n", "read by YAML 1.1 as a boolean"),
    ("off-boolean", b"simulation:\n  replace: off\n", "as a boolean"),
    # size, depth, aliases, giant numbers
    ("deep-flow", b"seed: " + b"[" * 5000 + b"]" * 5000 + b"\n", "nested more than"),
    ("deep-flow-100000", b"[" * 100_000, "nested more than"),  # issue 34, round 4
    (
        "deep-block",
        "".join(f"{' ' * i}k{i}:\n" for i in range(200)).encode() + b" " * 200 + b"v: 1\n",
        "nested more than",
    ),
    ("alias-bomb", BOMB.encode(), "aliases are expanded"),
    ("giant-int", b"seed: " + b"9" * 5000 + b"\n", "an integer of 5000 digits"),
    ("giant-negative", b"seed: -" + b"9" * 30 + b"\n", "digits"),
    ("too-large", b"a: 1\n" * (2 * 1024 * 1024), "larger than"),
    ("nul-bytes", b"seed: 1\n\x00\n", "not a text file"),
    # Snakemake evaluates YTE templates: a config file is code to it
    ("yte", b"__use_yte__: true\nseed:\n  ?if True:\n    1\n  ?else:\n    2\n", "__use_yte__"),
    ("yte-false", b"__use_yte__: false\nseed: 1\n", "YTE"),
    ("yte-quoted", b"'__use_yte__': true\nseed: 1\n", "YTE"),
    ("yte-in-flow", b"{__use_yte__: true, seed: 1}\n", "YTE"),
    ("multi-document", b"seed: 1\n---\nseed: 2\n", "not valid YAML"),
]


@pytest.mark.parametrize(("name", "content", "needle"), FILE_CASES, ids=[c[0] for c in FILE_CASES])
def test_broken_file_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, content: bytes, needle: str
) -> None:
    path = tmp_path / f"{name}.yaml"
    path.write_bytes(content)
    assert cli.main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(path) in err and needle in err, err


# ----------------------------------------------------------------------------- the CLI
SIM = ["--N", "100", "--horizon", "50"]
CLI_CASES = [
    # Allocations refused before allocating.
    (
        ["simulate", "general", "--lam", "0.5", "--d", "2", "--N", "1000000000", "--horizon", "5"],
        "--N",
    ),
    (
        [
            "simulate",
            "affinity",
            "--lam",
            "0.5",
            "--d1",
            "2",
            "--N",
            "1000000000",
            "--horizon",
            "5",
        ],
        "--N",
    ),
    (
        [
            "simulate",
            "universality",
            "--lam",
            "0.5",
            "--d",
            "2",
            "--N",
            "1000000000",
            "--horizon",
            "5",
        ],
        "--N",
    ),
    (
        [
            "simulate",
            "supermarket",
            "--lam",
            "0.5",
            "--d",
            "2",
            "--N",
            "1000000000",
            "--horizon",
            "5",
        ],
        "--N",
    ),
    (["solve", "whittle", "--p", "0.3", "--q", "0.5", "--d", "1", "--nmax", "100000000"], "--nmax"),
    (["solve", "whittle", "--p", "0.3", "--q", "0.5", "--d", "1", "--nmax", "201"], "--nmax"),
    (["solve", "whittle", "--p", "0.3", "--q", "0.5", "--d", "1", "--B", "100000"], "--B"),
    (["solve", "supermarket", "--lam", "0.999999999", "--d", "1"], "--lam"),
    (["simulate", "supermarket", "--lam", "0.999999999", "--d", "1", *SIM], "--lam"),
    # Non-finite and overflowing numbers.
    (
        ["simulate", "supermarket", "--lam", "0.9", "--d", "2", "--N", "1e400", "--horizon", "5"],
        "--N",
    ),
    (["simulate", "supermarket", "--lam", "0.9", "--d", "2", *SIM, "--seed", "inf"], "--seed"),
    (["simulate", "supermarket", "--lam", "0.9", "--d", "2", *SIM, "--seed", "nan"], "--seed"),
    (["simulate", "supermarket", "--lam", "0.9", "--d", "2", *SIM, "--seed", "-3"], "--seed"),
    (
        ["simulate", "supermarket", "--lam", "0.9", "--d", "2", "--N", "100", "--horizon", "nan"],
        "--horizon",
    ),
    (
        ["simulate", "supermarket", "--lam", "0.9", "--d", "2", "--N", "100", "--horizon", "inf"],
        "--horizon",
    ),
    (
        ["simulate", "supermarket", "--lam", "0.9", "--d", "2", "--N", "100", "--horizon", "-5"],
        "--horizon",
    ),
    (
        ["simulate", "supermarket", "--lam", "0.9", "--d", "2", "--N", "100", "--horizon", "0"],
        "--horizon",
    ),
    (["simulate", "supermarket", "--lam", "0.9", "--d", "2", *SIM, "--warmup", "-1"], "--warmup"),
    (["simulate", "supermarket", "--lam", "0.9", "--d", "2", *SIM, "--warmup", "50"], "--horizon"),
    (["simulate", "supermarket", "--lam", "0.9", "--d", "2", *SIM, "--warmup", "nan"], "--warmup"),
    (["simulate", "supermarket", "--lam", "0.9", "--d", "2", *SIM, "--batches", "1"], "--batches"),
    # issue 34 (hB): the event budget named no flag (was: "max_events: must be > 0, got nan")
    (
        ["simulate", "supermarket", "--lam", "0.9", "--d", "2", *SIM, "--max-events", "nan"],
        "--max-events",
    ),
    (
        ["simulate", "supermarket", "--lam", "0.9", "--d", "2", *SIM, "--max-events", "-1"],
        "--max-events",
    ),
    (["simulate", "supermarket", "--lam", "0.9", "--d", "2", "--N", "0", "--horizon", "5"], "--N"),
    (
        ["simulate", "supermarket", "--lam", "0.9", "--d", "2", "--N", "10.5", "--horizon", "5"],
        "--N",
    ),
    (
        ["simulate", "supermarket", "--lam", "0.9", "--d", "2", "--N", "ten", "--horizon", "5"],
        "--N",
    ),
    (["solve", "supermarket", "--lam", "nan", "--d", "2"], "--lam"),
    (["solve", "supermarket", "--lam", "inf", "--d", "2"], "--lam"),
    (["solve", "supermarket", "--lam", "1e400", "--d", "2"], "--lam"),
    (["solve", "supermarket", "--lam", "1.5", "--d", "2"], "--lam"),
    (["solve", "supermarket", "--lam", "-0.5", "--d", "2"], "--lam"),
    (["solve", "supermarket", "--lam", "0.9", "--d", "0"], "--d"),
    (["solve", "supermarket", "--lam", "0.9", "--d", "1.5"], "--d"),
    (["solve", "supermarket", "--lam", "0.9", "--d", "2", "--mu", "nan"], "--mu"),
    (["solve", "general", "--dist", "lognormal:50", "--lam", "0.8", "--d", "2"], "--dist"),
    (["solve", "general", "--dist", "weibull:0.001", "--lam", "0.8", "--d", "2"], "--dist"),
    (["solve", "general", "--dist", "nosuch", "--lam", "0.8", "--d", "2"], "--dist"),
    (["solve", "general", "--dist", "erlang:2.5", "--lam", "0.8", "--d", "2"], "--dist"),
    # issue 21: laws outside the model's numerical range (memory, run time, underflow)
    (["solve", "general", "--dist", "erlang:1000000", "--lam", "0.8", "--d", "2"], "--dist"),
    (["solve", "general", "--dist", "erlang:3000", "--lam", "0.8", "--d", "2"], "--dist"),
    (["solve", "general", "--dist", "lomax:1.0000001", "--lam", "0.8", "--d", "2"], "--dist"),
    (["solve", "general", "--dist", "hyperexp:1e9", "--lam", "0.8", "--d", "2"], "--dist"),
    # issue 34 (hB): a Lomax shape so large the tail integrals fail (was: an OverflowError
    # traceback from lomax:1e17, theta 0.508 for 0.5 from lomax:1e15, both exit code 0 or 1)
    (["solve", "general", "--dist", "lomax:1e17", "--lam", "0.5", "--d", "2"], "--dist"),
    (["solve", "general", "--dist", "lomax:1e15", "--lam", "0.5", "--d", "2"], "--dist"),
    # issue 34 (hB): a tail heavier than the exact mean field's truncation (was: "…; increase
    # K", a step no flag takes)
    (["solve", "general", "--dist", "hyperexp:10000", "--lam", "0.999", "--d", "2"], "--lam"),
    (
        ["simulate", "general", "--dist", "erlang:100000", "--lam", "0.5", "--d", "2", *SIM],
        "--dist",
    ),
    (["solve", "general", "--dist", "exp", "--lam", "1.2", "--d", "2"], "--lam"),
    (["solve", "affinity", "--lam", "1.2", "--d1", "3"], "--lam"),
    (["solve", "affinity", "--lam", "0.5", "--d1", "3", "--mu2", "2"], "--mu2"),
    (["solve", "affinity", "--lam", "0.5", "--d1", "0"], "--d1"),
    (["solve", "universality", "--lam", "0.9", "--d", "0"], "--d"),
    (["solve", "universality", "--lam", "1.5", "--d", "2"], "--lam"),
    (["solve", "hetero", "--lam", "2", "--gamma", "0.5,0.5", "--C", "1,2", "--d", "2,2"], "--lam"),
    (
        ["solve", "hetero", "--lam", "1", "--gamma", "0.5,0.6", "--C", "1,2", "--d", "2,2"],
        "--gamma",
    ),
    (
        [
            "simulate",
            "hetero",
            "--lam",
            "1.2",
            "--gamma",
            "0.5,0.5",
            "--C",
            "1,2",
            "--d",
            "2,2",
            "--N",
            "201",
            "--horizon",
            "50",
        ],
        "--gamma",
    ),
    (["solve", "whittle", "--p", "1.5", "--q", "0.5", "--d", "1"], "--p"),
    (["solve", "whittle", "--p", "nan", "--q", "0.5", "--d", "1"], "--p"),
    (["solve", "whittle", "--p", "0.3", "--q", "0.5", "--d", "1", "--cost", "nosuch"], "cost"),
]


@pytest.mark.parametrize(
    "argv", [c[0] for c in CLI_CASES], ids=[" ".join(c[0])[:70] for c in CLI_CASES]
)
def test_bad_argument_is_one_line_naming_the_flag(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    flag = dict((tuple(a), f) for a, f in CLI_CASES)[tuple(argv)]
    try:
        code = cli.main(argv)
    except SystemExit as stop:  # argparse usage errors
        code = stop.code
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith("lbrepro: error: ") and err.count("\n") == 1, err
    assert flag in err, err


@pytest.mark.slow
def test_list_into_a_closed_pipe_is_quiet() -> None:
    proc = subprocess.run(
        f"{sys.executable} -m lbrepro list | head -1",
        shell=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0 and proc.stdout.count("\n") == 1
    assert "Broken pipe" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert signal.SIGPIPE  # the reader closing early is normal use, not an error


def test_non_finite_results_are_json_null(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["solve", "affinity", "--lam", "1e-300", "--d1", "2"]) == 0
    out = capsys.readouterr().out
    assert "NaN" not in out and "Infinity" not in out
    yaml.safe_load(out)  # valid JSON is valid YAML


# Results holding NaN, as a table for a person (was: "nan" printed as a number, and a p_wait
# interval "[nan, nan]" beside a confident value; the JSON had null).
NON_FINITE_TABLES = [
    ["solve", "affinity", "--lam", "1e-300", "--d1", "2"],
    ["simulate", "supermarket", "--lam", "0.5", "--d", "2", "--N", "1", "--horizon", "100",
     "--seed", "2"],
]  # fmt: skip


@pytest.mark.parametrize("argv", NON_FINITE_TABLES, ids=["solve-affinity", "p_wait-interval"])
def test_non_finite_results_are_a_dash_in_tables(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    assert cli.main([*argv, "--format", "table"]) == 0
    out = capsys.readouterr().out
    words = out.replace("[", " ").replace("]", " ").replace(",", " ").split()
    assert not {"nan", "inf", "-inf"} & set(words), out
    assert "—" in out, out


# ------------------------------------------------------------------ what must keep working
ACCEPTED = [
    ("supermarket-tail", {"rho": [0.9, 0.9000001]}, {"rho0.9-d2", "rho0.9000001-d2"}),
    ("supermarket-tail", {"rho": [0.99999999], "d": [2]}, {"rho0.99999999-d2"}),
    ("supermarket-tail", {"rho": [0.5, 0.9]}, {"rho0.5-d2", "rho0.9-d2"}),
    ("supermarket-tail", {"rho": [1e-05]}, {"rho1e-05-d2"}),
    ("general-sojourn", {"rho": [0.7, 0.7000001]}, {"exp-rho0.7", "exp-rho0.7000001"}),
    ("hetero-accuracy", {"rho": [0.9, 0.9000001]}, {"H2-scheme1-rho0.9000001-N10"}),
    ("whittle-fcfs", {"p": [0.3, 0.30000001]}, {"p0.3", "p0.30000001"}),
    ("affinity-queue-length", {"lam_sim": [0.8, 0.8000001]}, {"sim-lam0.8", "sim-lam0.8000001"}),
    ("hetero-stability", {"sim_sides": [0.9, 0.90000001, 1.1]}, set()),
]


@pytest.mark.parametrize(("artifact", "override", "ids"), ACCEPTED)
def test_close_values_stay_distinct_points(artifact: str, override: dict, ids: set[str]) -> None:
    config = _one(artifact, override)
    validate_config(config)
    table = points(config, artifact)
    assert ids <= set(table), sorted(table)
    assert all(POINT_ID.fullmatch(p) for p in table)


@pytest.mark.parametrize(
    "x", [0.9, 0.1 + 0.2, 2.0, 7, 1e-05, 1e20, 123456789.0, 0.99999999, 1 / 3, 5e-324, -0.25]
)
def test_point_id_number_is_faithful_and_file_safe(x: float) -> None:
    text = num(x)
    assert float(text) == x and POINT_ID.fullmatch(text), text


def test_ordinary_values_keep_their_ids() -> None:
    assert [num(x) for x in (0.9, 2.0, 1, 0.95, 1e-05)] == ["0.9", "2", "1", "0.95", "1e-05"]


def test_default_and_quick_configs_still_validate() -> None:
    validate_config(BASE)
    validate_config(load_config(CONFIG_PATH, CONFIG_PATH.parent / "quick.yaml"))


def test_table_is_large_enough() -> None:
    total = len(GENERATED) + len(CONFIG_CASES) + len(FILE_CASES) + len(CLI_CASES) + len(ACCEPTED)
    total += (
        len(UNAFFORDABLE)
        + len(SHAPE_CASES)
        + len(ACCEPTED_FILES)
        + len(SHORT_RUNS)
        + len(STREAM_CASES)
        + len(CONFIG_STREAMS)
    )
    total += len(WORKFLOW_CONFIG_FILES) + len(STALE_COPIES) + len(HEALED) + len(UNKNOWN_TARGETS)
    assert total >= 150, total


# ------------------------------------------- issue 21: what Snakemake itself hands over
def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


def _shared_bomb(levels: int = 10) -> dict[str, Any]:
    """What a YAML alias bomb becomes once Snakemake has loaded it: shared lists."""
    value: Any = ["x"] * 9
    for _ in range(levels):
        value = [value] * 9
    return {"seed": 1, "bomb": value}


SHAPE_CASES = [
    ("deep", COMMON | {"seed": _nested(5000)}, "seed[0]"),
    ("alias-bomb", COMMON | _shared_bomb(), "bomb"),
    ("giant-int", COMMON | {"seed": 10**5000}, "seed"),
    ("giant-int-nested", _one("supermarket-tail", {"N": -(10**40)}), "supermarket-tail.N"),
]


@pytest.mark.parametrize(("name", "config", "key"), SHAPE_CASES, ids=[c[0] for c in SHAPE_CASES])
def test_hostile_shapes_are_refused_fast(
    refused: Callable[..., ConfigError], name: str, config: dict[str, Any], key: str
) -> None:
    """A config as Snakemake loads it (deep, shared, huge): one line, never a hang or a
    RecursionError; the key named."""
    err = refused(validate_config, config)
    assert err.key.startswith(key), (err.key, str(err))


ACCEPTED_FILES = [
    ("anchors", b"seed: 1\nx: &v [1, 2]\ny: *v\n", {"seed": 1, "x": [1, 2], "y": [1, 2]}),
    ("quoted-octal", b"name: '0100'\n", {"name": "0100"}),
    ("quoted-yes", b"name: 'yes'\n", {"name": "yes"}),
    ("booleans", b"a: true\nb: False\n", {"a": True, "b": False}),
    (
        "zero-and-signs",
        b"a: 0\nb: -7\nc: +3\nd: 0.5\ne: 1.0e+8\n",
        {"a": 0, "b": -7, "c": 3, "d": 0.5, "e": 1e8},
    ),
    ("nineteen-digits", b"a: 1000000000000000000\n", {"a": 10**18}),
    ("empty", b"", {}),
    ("comment-only", b"# nothing\n", {}),
    (
        "yte-word-in-a-value",
        b"note: __use_yte__ is not used here\n",
        {"note": "__use_yte__ is not used here"},
    ),
]


@pytest.mark.parametrize(
    ("name", "content", "want"), ACCEPTED_FILES, ids=[c[0] for c in ACCEPTED_FILES]
)
def test_plain_config_files_still_load(
    tmp_path: Path, name: str, content: bytes, want: Any
) -> None:
    path = tmp_path / f"{name}.yaml"
    path.write_bytes(content)
    assert load_config(path) == want


#: issue 34, round 4 — config files that are not files: refused for what they are before a
#: byte is read (a FIFO without a writer blocked the opening for ever; a pipe or /dev/zero
#: was read up to the size limit), as ``lbrepro validate FILE`` and ``--configfile FILE``.
CONFIG_STREAMS = ["fifo-no-writer", "fifo-endless-writer", "dev-zero", "link-to-dev-zero",
                  "directory"]  # fmt: skip


def _config_stream(tmp: Path, case: str) -> tuple[Path, Callable[[], None]]:
    """The path of a config stream of kind ``case`` and what releases it after the test."""
    import os
    import threading

    path = tmp / "config.yaml"
    if case.startswith("fifo"):
        os.mkfifo(path)
    if case == "fifo-endless-writer":

        def write_forever() -> None:
            try:
                with open(path, "wb") as fh:
                    while True:
                        fh.write(b"a: 1\n" * 4096)
            except OSError:
                pass

        writer = threading.Thread(target=write_forever, daemon=True)
        writer.start()

        def release() -> None:  # a reader that opens and leaves ends the writer
            for _ in range(100):
                if not writer.is_alive():
                    return
                os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK))
                writer.join(timeout=0.1)
            raise AssertionError("the writer never ended")

        return path, release
    if case == "dev-zero":
        return Path("/dev/zero"), lambda: None
    if case == "link-to-dev-zero":
        path.symlink_to("/dev/zero")
    if case == "directory":
        path.mkdir()
    return path, lambda: None


@pytest.mark.parametrize("flag", [[], ["--configfile"]], ids=["positional", "--configfile"])
@pytest.mark.parametrize("case", CONFIG_STREAMS)
def test_validate_reads_regular_files_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str, flag: list[str]
) -> None:
    """`lbrepro validate <(yes 'a: 1')`, a FIFO nobody writes, /dev/zero: one line naming the
    file, exit 2, within seconds — never a read (or an open) that does not end."""
    path, release = _config_stream(tmp_path, case)

    def hung(*_: Any) -> None:
        raise TimeoutError("lbrepro validate hung on a config stream")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(30)
    try:
        code = cli.main(["validate", *flag, str(path)])
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
        release()
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith("lbrepro: error: ") and err.count("\n") == 1, err
    assert str(path) in err and "not a regular file" in err, err


@pytest.mark.parametrize(
    ("given", "want"),
    [
        ({"simulation": {"batches": "5"}}, {"simulation": {"batches": 5}}),
        (
            {"simulation": {"max_events": "1.0e+9", "replace": "false"}},
            {"simulation": {"max_events": 1e9, "replace": False}},
        ),
        (
            {"hetero-tail": {"systems": [{"name": "H2", "gamma": ["0.5", "0.5"]}]}},
            {"hetero-tail": {"systems": [{"name": "H2", "gamma": [0.5, 0.5]}]}},
        ),
        ({"seed": 7}, {}),  # top-level scalars: typed by Snakemake already
    ],
)
def test_nested_command_line_numbers_are_numbers(
    given: dict[str, Any], want: dict[str, Any]
) -> None:
    """`--config "simulation={batches: 5}"`: Snakemake gives '5'; the workflow reads 5."""
    from lbrepro.config import retype_command_line

    assert retype_command_line(given) == want


def test_nested_command_line_surprises_are_refused(refused: Callable[..., ConfigError]) -> None:
    from lbrepro.config import retype_command_line

    err = refused(retype_command_line, {"simulation": {"batches": "0100"}})
    assert err.key == "simulation.batches", err.key


def test_slowest_kernel_rate_bounds_every_kernel() -> None:
    """The event lower bound of validation uses a rate no kernel is slower than."""
    import importlib

    from lbrepro.pipeline import SLOWEST_EVENTS_PER_SECOND

    for name in ("occupancy", "general_service", "affinity", "slotted_lps"):
        rate = importlib.import_module(f"lbrepro.sim.{name}").EVENTS_PER_SECOND
        assert rate >= SLOWEST_EVENTS_PER_SECOND, name


# ------------------------------------ issue 21: CLI answers that were wrong, or lost
SHORT_RUNS = [
    ["simulate", "supermarket", "--lam", "0.9", "--d", "2", "--N", "10", "--horizon", "1e-300"],
    ["simulate", "supermarket", "--lam", "1e-300", "--d", "2", "--N", "10", "--horizon", "50"],
    ["simulate", "supermarket", "--lam", "0.9", "--d", "2", "--N", "1", "--horizon", "1e-9"],
]


@pytest.mark.parametrize("argv", SHORT_RUNS, ids=[" ".join(a[2:]) for a in SHORT_RUNS])
def test_run_too_short_to_measure_is_refused(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """No events: the start state with a zero-width interval is not a measurement."""
    assert cli.main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("lbrepro: error: --horizon: ") and captured.err.count("\n") == 1


def test_check_measured_refuses_the_classes() -> None:
    """The CLI-layer check, on any model's result: no events, fewer events than batch means,
    no arrival (sojourn times unmeasured)."""
    kwargs = {"horizon": 5.0, "lam": 0.5}
    for result in (
        {"events": 0},
        {"events_total": 0, "events": 3},
        {"events": 7, "batches": 20},
        {"events": 100, "batches": 20, "arrivals": 0},
    ):
        with pytest.raises(ConfigError) as info:
            cli._check_measured(result, kwargs, "lam")
        assert info.value.key == "horizon"
    cli._check_measured({"events": 100, "batches": 20, "arrivals": 40}, kwargs, "lam")


def test_solver_warnings_go_into_the_result_not_the_terminal(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import dataclasses
    import functools
    import warnings

    real = cli.models()["supermarket"]

    @functools.wraps(real.solve)  # the same flags
    def noisy(**kwargs: Any) -> dict[str, Any]:
        warnings.warn("The integral is probably divergent", RuntimeWarning, stacklevel=1)
        return {"u": [1.0]}

    @functools.wraps(real.solve)
    def failing(**kwargs: Any) -> dict[str, Any]:
        warnings.warn("The integral is probably divergent", RuntimeWarning, stacklevel=1)
        raise ConfigError("lam", "did not converge")

    for fn, code in ((noisy, 0), (failing, 2)):
        fake = dataclasses.replace(real, solve=fn)
        monkeypatch.setattr(cli, "models", lambda fake=fake: {"supermarket": fake})
        assert cli.main(["solve", "supermarket", "--lam", "0.9", "--d", "2"]) == code
        out, err = capsys.readouterr()
        assert "Warning" not in err and err.count("\n") == (code == 2), err
        if code == 0:
            assert yaml.safe_load(out)["warnings"] == [
                "RuntimeWarning: The integral is probably divergent"
            ]


PROGRESS = ["simulate", "supermarket", "--lam", "0.9", "--d", "2", "--N", "50", "--horizon", "100"]
# (shell redirection or environment, expected exit code, what stdout must hold, stderr needle)
STREAM_CASES = [
    ("2>&-", [*PROGRESS, "--progress", "on"], {}, 0, '"events"', ""),
    ("2>/dev/full", [*PROGRESS, "--progress", "on"], {}, 0, '"events"', ""),
    (">&-", ["list"], {}, 2, "", "stdout is closed"),
    (">/dev/full", ["list"], {}, 2, "", "No space left"),
    ("", ["list"], {"PYTHONIOENCODING": "ascii"}, 0, "supermarket-tail", ""),
    ("", ["list", "--json"], {"PYTHONIOENCODING": "ascii"}, 0, "supermarket-tail", ""),
    (
        "",
        ["solve", "supermarket", "--lam", "0.9", "--d", "2"],
        {"NUMBA_NUM_THREADS": "0"},
        2,
        "",
        "NUMBA_NUM_THREADS",
    ),
    ("", ["list"], {"NUMBA_NUM_THREADS": "-4"}, 2, "", "NUMBA_NUM_THREADS"),
    ("", ["list"], {"NUMBA_NUM_THREADS": "two"}, 2, "", "NUMBA_NUM_THREADS"),
    ("", ["list"], {"NUMBA_OPT": "max!"}, 2, "", "NUMBA_OPT"),
]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("redirect", "argv", "env", "code", "out", "needle"),
    STREAM_CASES,
    ids=[f"{c[0]}{next(iter(c[2].items()), '')}-{c[1][0]}" for c in STREAM_CASES],
)
def test_streams_and_environment(
    redirect: str, argv: list[str], env: dict[str, str], code: int, out: str, needle: str
) -> None:
    """Progress is best effort (the result always reaches stdout); a closed or full stdout,
    an ASCII terminal and a bad NUMBA_* variable are one line, never a traceback."""
    import os
    import shlex

    cmd = f"{shlex.quote(sys.executable)} -m lbrepro {shlex.join(argv)} {redirect}"
    proc = subprocess.run(
        ["bash", "-c", cmd if ">&-" not in redirect else f"{cmd}; exit $?"],
        capture_output=True,
        text=True,
        timeout=300,
        env=os.environ | env,
    )
    assert proc.returncode == code, proc.stderr[-2000:]
    assert out in proc.stdout and (not out or proc.stdout.strip())
    assert "Traceback" not in proc.stderr and "Warning" not in proc.stderr, proc.stderr[-2000:]
    if needle:
        assert needle in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr


# ==================================================================================================
# Issue 34, the command line: no silent wrong number, runs wherever it installs, Ctrl-C at once,
# lbrepro diff and the report's checks files bounded and typed, one line for every error, tables.
# ==================================================================================================
def _occupancy(u1: float, deep: float, lam: float = 0.7) -> dict[str, Any]:
    """A supermarket/universality/hetero result as the occupancy simulator writes it."""
    u = [1.0, u1, 0.1, deep]
    return {
        "u": [u],
        "u_all": u,
        "mean_jobs": 1.1,
        "ci": {
            "u": [[[1.0, u1 - 0.01, 0.09, 0.9 * deep]], [[1.0, u1 + 0.01, 0.11, 1.1 * deep]]],
            "u_all": [[1.0, u1 - 0.01, 0.09, 0.9 * deep], [1.0, u1 + 0.01, 0.11, 1.1 * deep]],
            "mean_jobs": [1.0, 1.2],
        },
        "N": 100,
        "lam": lam,
        "mu": 1.0,
        "gamma": [1.0],
        "capacity": [1.0],
        "horizon": 200.0,
        "warmup_used": 20.0,
        "batches": 20,
        "converged": True,
        "events": 28000,
    }


def _general(u1: float, deep: float) -> dict[str, Any]:
    return {
        "params": {"dist": "exp", "lam": 0.7, "d": 2},
        "u": [1.0, u1, 0.1, deep],
        "mean_jobs": 1.1,
        "ci": {
            "u": [[1.0, 1.0], [u1 - 0.01, u1 + 0.01], [0.09, 0.11], [0.9 * deep, 1.1 * deep]],
            "mean_jobs": [1.0, 1.2],
        },
        "N": 100,
        "seed": 1,
        "events": 28000,
    }


def _whittle(served: float, p: float = 0.7) -> dict[str, Any]:
    """A ``simulate whittle`` result (two servers, q = 0.5, 0.5): the served capacity
    Σ_k q_k·1{n_k > 0} in ``served``, ``ci.served``; work conservation makes it p."""
    return {
        "params": {"p": p, "q": [0.5, 0.5], "d": ["1", "1"], "cost": "linear", "beta": 0.0,
                   "policy": "whittle"},
        "mean_cost": 2.3,
        "mean_jobs": 2.3,
        "served": served,
        "ci": {"mean_cost": [2.2, 2.4], "mean_jobs": [2.2, 2.4],
               "served": [served - 0.01, served + 0.01]},
        "exact_cost": None,
        "N": 2,
        "seed": 1,
        "slots": 1000,
        "warmup_used": 10,
        "batches": 20,
        "converged": True,
        "events": 1010,
    }  # fmt: skip


def _pinned(result: dict[str, Any]) -> dict[str, Any]:
    """``result`` (of :func:`_occupancy` or :func:`_general`) whose deepest level is 1 in
    [1, 1]: the same in every batch, as a queue that never emptied."""
    result = json.loads(json.dumps(result))
    for name in ("u", "u_all"):
        if name not in result:
            continue
        ci = result["ci"][name]
        pairs = len(ci) == len(result[name]) != 2  # [low, high] per level, else [lows, highs]
        if pairs:
            result[name][-1], ci[-1] = 1.0, [1.0, 1.0]
            continue
        for values in (result[name], *ci):
            while isinstance(values[0], list) and len(values) == 1:  # one server type
                values = values[0]
            values[-1] = 1.0
    return result


def _affinity(x00: float, deep: float) -> dict[str, Any]:
    # μ1 = 1, μ2 = 0.5: throughput 1·(1 − x00 − 0.57) + 0.5·0.57 = λ = 0.7 at x00 ≈ 0.0150
    x_i0, x_i1 = [x00, 0.2, 0.1, deep], [0.57, 0.1, 0.03, deep]
    return {
        "params": {"lam": 0.7, "mu1": 1.0, "mu2": 0.5, "d1": 2, "N": 100, "start": "empty"},
        "x_i0": x_i0,
        "x_i1": x_i1,
        "ci": {
            "x_i0": [
                [v - 0.001 if v else 0.0 for v in x_i0],
                [v + 0.001 if v else 0.0 for v in x_i0],
            ],
            "x_i1": [
                [v - 0.001 if v else 0.0 for v in x_i1],
                [v + 0.001 if v else 0.0 for v in x_i1],
            ],
        },
        "events": 28000,
        "horizon": 200.0,
        "warmup": 20.0,
        "batches": 20,
    }


SIM_ARGS = ["--N", "100", "--horizon", "200"]
HETERO = ["--lam", "0.7", "--gamma", "0.5,0.5", "--C", "1,1", "--d", "2,2"]
# (model, arguments, a result failing work conservation, a result holding it)
CONSERVATION_CASES = [
    ("supermarket", ["--lam", "0.7", "--d", "2"], _occupancy(0.3, 0.01), _occupancy(0.7, 0.01)),
    ("universality", ["--lam", "0.7", "--d", "2"], _occupancy(0.9, 0.01), _occupancy(0.7, 0.01)),
    ("hetero", HETERO, _occupancy(0.001, 0.01), _occupancy(0.7, 0.01)),
    ("general", ["--dist", "lomax:1.0001", "--lam", "0.7", "--d", "2"], _general(7e-4, 1e-5),
     _general(0.7, 1e-5)),
    ("affinity", ["--lam", "0.7", "--d1", "2"], _affinity(0.3, 0.01), _affinity(0.015, 0.01)),
    ("whittle", ["--p", "0.7", "--q", "0.5,0.5", "--d", "1,1"], _whittle(0.9), _whittle(0.7)),
]  # fmt: skip
# (model, arguments, a result with a quantity zero throughout the run, its name)
UNRESOLVED_CASES = [
    ("supermarket", ["--lam", "0.7", "--d", "2"], _occupancy(0.7, 0.0), "u[0][3]"),
    ("universality", ["--lam", "0.7", "--d", "2"], _occupancy(0.7, 0.0), "u_all[3]"),
    ("hetero", HETERO, _occupancy(0.7, 0.0), "u[0][3]"),
    ("general", ["--lam", "0.7", "--d", "2"], _general(0.7, 0.0), "u[3]"),
    ("affinity", ["--lam", "0.7", "--d1", "2"], _affinity(0.015, 0.0), "x_i1[3]"),
    (
        "whittle",
        ["--p", "1e-7", "--q", "0.5", "--d", "1"],
        {"mean_cost": 0.0, "mean_jobs": 0.0, "ci": {"mean_cost": [0.0, 0.0],
         "mean_jobs": [0.0, 0.0]}, "N": 1, "seed": 1, "slots": 1000, "warmup_used": 10,
         "events": 1010},
        "mean_jobs",
    ),
]  # fmt: skip


# A quantity the same in every batch but not constant by definition (was: only 0 in [0, 0]
# was unresolved; a queue that never emptied read as u_k = 1 in [1, 1], certain). (model,
# arguments, a result with such a quantity, its name, a quantity exact by definition kept)
CONSTANT_CASES = [
    ("supermarket", ["--lam", "0.7", "--d", "2"], _pinned(_occupancy(0.7, 0.01)), "u[0][3]",
     "u[0][0]"),
    ("universality", ["--lam", "0.7", "--d", "2"], _pinned(_occupancy(0.7, 0.01)),
     "u_all[3]", "u_all[0]"),
    ("general", ["--lam", "0.7", "--d", "2"], _pinned(_general(0.7, 0.01)), "u[3]", "u[0]"),
]  # fmt: skip
# Real runs whose arrival fractions were the batch means' sums truncated to integers (was:
# N = 1, 182 arrivals: p_wait = int(0.7)/int(1.4) = 0 in [0, 0.2], truly ~0.5; routing
# fractions of two types summing to 0.83), or whose queue never emptied (u_k = 1 in [1, 1]).
REAL_RUNS = [
    ("supermarket-N1-p_wait", ["supermarket", "--lam", "0.5", "--d", "2", "--N", "1",
                               "--horizon", "100"]),
    # Long enough to converge (N·T/τ ≥ 500 relaxation times): its intervals are shown.
    ("supermarket-N1-p_wait-converged", ["supermarket", "--lam", "0.5", "--d", "2", "--N", "1",
                                         "--horizon", "2e4"]),
    ("hetero-route", ["hetero", "--lam", "0.01", "--gamma", "0.999,0.001", "--C", "1,100",
                      "--d", "2,2", "--N", "1000", "--horizon", "20"]),
    ("supermarket-N1-never-empties", ["supermarket", "--lam", "0.99", "--d", "1", "--N", "1",
                                      "--horizon", "50"]),
]  # fmt: skip


_MODELS = cli.models


def _run_args(name: str) -> list[str]:
    """The run-length flags of a canned ``simulate <name>``: whittle counts slots, no --N."""
    return ["--horizon", "1000"] if name == "whittle" else SIM_ARGS


def _canned(monkeypatch: pytest.MonkeyPatch, name: str, result: dict[str, Any]) -> None:
    """``lbrepro simulate <name>`` returning ``result`` (the model's own flags and checks)."""
    import dataclasses
    import functools

    real = _MODELS()[name]

    @functools.wraps(real.simulate)
    def simulate(**kwargs: Any) -> dict[str, Any]:
        return json.loads(json.dumps(result))

    fake = dataclasses.replace(real, simulate=simulate)
    monkeypatch.setattr(cli, "models", lambda: {**_MODELS(), name: fake})


@pytest.mark.parametrize(
    ("name", "argv", "broken", "sound"), CONSERVATION_CASES, ids=[c[0] for c in CONSERVATION_CASES]
)
def test_cli_run_failing_work_conservation_says_so(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    name: str,
    argv: list[str],
    broken: dict[str, Any],
    sound: dict[str, Any],
) -> None:
    """The pipeline's diagnostic on every simulate model: a run whose busy fraction is not the
    load warns in one stderr line and says ``held: false``; a sound run holds it, silently.
    The warning's advice names only flags the model has (was: "raise --N" for whittle)."""
    flags = {p.name for p in _MODELS()[name].params_for("simulate")}
    run = _run_args(name)
    for result, held in ((broken, False), (sound, True)):
        _canned(monkeypatch, name, result)
        assert cli.main(["simulate", name, *argv, *run, "--format", "json"]) == 0
        out, err = capsys.readouterr()
        assert json.loads(out)["work_conservation"]["held"] is held, out
        assert ("lbrepro: warning: work conservation fails" in err) is not held, err
        assert err.count("\n") == (0 if held else 1), err
        advised = set(re.findall(r"--([A-Za-z_]\w*)", err))
        assert advised <= flags, (advised - flags, err)


@pytest.mark.parametrize(
    ("name", "argv", "result", "quantity"), UNRESOLVED_CASES, ids=[c[0] for c in UNRESOLVED_CASES]
)
def test_cli_quantity_not_resolved_is_never_zero_in_zero_zero(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    name: str,
    argv: list[str],
    result: dict[str, Any],
    quantity: str,
) -> None:
    """Zero throughout the run, with a zero-width interval, reads as a certain 0: it is null,
    listed as unresolved with the events the run had, and said on stderr."""
    _canned(monkeypatch, name, result)
    horizon = _run_args(name)
    assert cli.main(["simulate", name, *argv, *horizon, "--format", "json"]) == 0
    out, err = capsys.readouterr()
    data = json.loads(out)
    assert quantity in data["unresolved"]["quantities"], data
    assert data["unresolved"]["events"] > 0
    assert "not resolved by this run" in err and quantity in err and err.count("\n") == 1
    assert "[0.0, 0.0]" not in json.dumps(data["ci"]) and "[0, 0]" not in out


@pytest.mark.parametrize(
    ("name", "argv", "result", "quantity", "exact"),
    CONSTANT_CASES,
    ids=[c[0] for c in CONSTANT_CASES],
)
def test_cli_quantity_constant_throughout_is_unresolved(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    name: str,
    argv: list[str],
    result: dict[str, Any],
    quantity: str,
    exact: str,
) -> None:
    """A zero-width interval away from 0 is unresolved too; u_0 = 1 keeps its exact value."""
    _canned(monkeypatch, name, result)
    assert cli.main(["simulate", name, *argv, *SIM_ARGS, "--format", "json"]) == 0
    out, err = capsys.readouterr()
    data = json.loads(out)
    assert quantity in data["unresolved"]["quantities"], data
    assert exact not in data["unresolved"]["quantities"], data
    assert "not resolved by this run" in err and err.count("\n") == 1, err


def _at(data: dict[str, Any], label: str) -> Any:
    """``data["u"][0][1]`` for the label ``u[0][1]``."""
    name, *indices = label.replace("]", "").split("[")
    value = data[name]
    for i in indices:
        value = value[int(i)]
    return value


@pytest.mark.parametrize("argv", [c[1] for c in REAL_RUNS], ids=[c[0] for c in REAL_RUNS])
def test_cli_real_runs_report_honest_fractions(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    """Arrival fractions are Σ counts / Σ arrivals of the run (p_wait·arrivals is a whole
    number, the routing fractions sum to 1); at N = 1 an arrival waits iff the server is busy
    (PASTA), so p_wait and u_1 agree within their intervals; u_0 = 1 stays exact."""
    assert cli.main(["simulate", *argv, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    unresolved = data.get("unresolved", {}).get("quantities", [])
    route = [r for r in data["route"] if r is not None]
    if len(route) == len(data["route"]):
        assert sum(route) == pytest.approx(1.0, abs=1e-9), data["route"]
    if data["p_wait"] is not None:
        waits = data["p_wait"] * data["arrivals"]
        assert waits == pytest.approx(round(waits), abs=1e-6), (data["p_wait"], data["arrivals"])
    assert data["u"][0][0] == 1.0 and "u[0][0]" not in unresolved
    if data["converged"] is False:  # no honest interval: none shown
        assert all(ci is None for ci in data["ci"].values()), data["ci"]
    elif data["N"] == 1 and data["p_wait"] is not None and "u[0][1]" not in unresolved:
        (p_low, p_high), u1 = data["ci"]["p_wait"], data["u"][0][1]
        u_low, u_high = data["ci"]["u"][0][0][1], data["ci"]["u"][1][0][1]
        slack = (p_high - p_low) / 2 + (u_high - u_low) / 2
        assert abs(data["p_wait"] - u1) <= slack, (data["p_wait"], u1)
    if data.get("work_conservation", {}).get("held") is False:  # never emptied: not certain
        assert "u[0][1]" in unresolved and _at(data, "u[0][1]") is None


# Solves whose mean-field ODE relaxes too slowly (was: no answer and no line for over ten
# minutes): (case, arguments, exit code, needle on stderr). SOLVE_SECONDS and PROBE_SECONDS
# are shortened here; the answers are the same at their defaults, later.
SLOW_SOLVES = [
    ("hetero-near-capacity", ["hetero", "--lam", "1.49999", "--gamma", "0.5,0.5", "--C", "1,2",
                              "--d", "2,2"], 2, "did not settle within 3 s"),
    # Value iteration, not an ODE (was: over ten minutes, no line): the whole solve's budget.
    ("whittle-near-capacity", ["whittle", "--p", "0.99", "--q", "0.5,0.5", "--d", "1,1"], 2,
     "did not finish within 3 s (--max-seconds)"),
    ("whittle-own-budget", ["whittle", "--p", "0.99", "--q", "0.5,0.5", "--d", "1,1",
                            "--max-seconds", "2"], 2, "did not finish within 2 s (--max-seconds)"),
    ("hetero-unequal-classes", ["hetero", "--lam", "0.5", "--gamma", "0.999999,0.000001",
                                "--C", "1,1000", "--d", "2,2"], 0, ""),
]  # fmt: skip


def test_cli_short_solve_budget_is_kept(capsys: pytest.CaptureFixture[str]) -> None:
    """``--max-seconds 1`` stops a slow solve after about 2 s (its grace is no longer than the
    budget), not 6 s (a fixed 5 s grace after any budget)."""
    import time

    argv = ["solve", "whittle", "--p", "0.99", "--q", "0.5,0.5", "--d", "1,1"]
    start = time.monotonic()
    assert cli.main([*argv, "--max-seconds", "1", "--format", "json"]) == 2
    took = time.monotonic() - start
    assert "did not finish within 1 s" in capsys.readouterr().err
    assert took < 4.5, took


@pytest.mark.parametrize(
    ("case", "argv", "code", "needle"), SLOW_SOLVES, ids=[c[0] for c in SLOW_SOLVES]
)
def test_cli_slow_solve_ends_with_one_line_or_says_what_it_skipped(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    case: str,
    argv: list[str],
    code: int,
    needle: str,
) -> None:
    """A solve stops after its time budget with one line (exit 2), or, when only the
    uniqueness probe is slow, answers and names the starts it left out."""
    from lbrepro.models.hetero import command_line

    monkeypatch.setattr(cli, "SOLVE_SECONDS", 3.0, raising=False)
    monkeypatch.setattr(cli, "SOLVE_GRACE", 1.0, raising=False)
    monkeypatch.setattr(command_line, "PROBE_SECONDS", 1.0, raising=False)

    def hung(*_: Any) -> None:
        raise TimeoutError("the solve ran on")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(90)
    try:
        assert cli.main(["solve", *argv, "--format", "json"]) == code
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    out, err = capsys.readouterr()
    if code:
        assert err.startswith("lbrepro: error: ") and err.count("\n") == 1, err
        assert needle in err, err
        return
    data = json.loads(out)
    assert data["unsettled_starts"], data
    assert any("uniqueness probe incomplete" in w for w in data["warnings"]), data


def test_cli_whittle_unresolved_names_the_events_it_needs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """p = 1e-7, horizon 1000: about 1e-4 arrivals; ten need ~1e8 slots (the arrivals over
    the 1000 slots measured; was: over --horizon less a tenth, a warm-up whittle never used)."""
    _canned(monkeypatch, "whittle", UNRESOLVED_CASES[-1][2])
    argv = ["simulate", "whittle", "--p", "1e-7", "--q", "0.5", "--d", "1", "--horizon", "1000"]
    assert cli.main([*argv, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["mean_jobs"] is None and data["mean_cost"] is None
    assert data["unresolved"]["needs_events"] == pytest.approx(1010 * 10 / (1e-7 * 1000))


# Real whittle runs too short near capacity, p/Σq = 0.99 (was: a mean cost and no line). The
# served capacity Σq_k·1{n_k>0} can miss p by at most Σq − p = 0.01 here, so the identity
# catches a run whose servers never idled (default seed: 1 in [1, 1], also unresolved) or
# whose interval is narrow for a deficit, not every short run. (case, arguments, lines)
WHITTLE_SHORT = ["--p", "0.99", "--q", "0.5,0.5", "--d", "1,1"]
WHITTLE_UNCONSERVED = [
    ("never-idle", [*WHITTLE_SHORT, "--horizon", "100"], 2),
    ("seed-6", [*WHITTLE_SHORT, "--horizon", "200", "--seed", "6"], 1),
]  # fmt: skip


@pytest.mark.parametrize(
    ("case", "argv", "lines"), WHITTLE_UNCONSERVED, ids=[c[0] for c in WHITTLE_UNCONSERVED]
)
def test_cli_whittle_short_run_near_capacity_fails_work_conservation(
    capsys: pytest.CaptureFixture[str], case: str, argv: list[str], lines: int
) -> None:
    """A real run: ``held: false`` and a warning line naming no --N (whittle has none); the
    resolution floor is over the slots measured, 1/(K·slots). A server never idle is also said
    (served unresolved), one more line."""
    assert cli.main(["simulate", "whittle", *argv, "--format", "json"]) == 0
    out, err = capsys.readouterr()
    data = json.loads(out)
    wc = data["work_conservation"]
    assert wc["held"] is False and wc["exact"] == 0.99, wc
    assert wc["identity"] == "served capacity Σ q_k·1{n_k>0} = p"
    first, *rest = err.splitlines()
    assert first.startswith("lbrepro: warning: work conservation fails (served capacity"), err
    assert "--N" not in err and "--horizon" in first, err
    assert len(rest) == lines - 1, err
    if rest:  # both servers busy in every measured slot: Σq = 1 in [1, 1]
        assert wc["measured"] == 1.0 and wc["interval"] == [1.0, 1.0], wc
        assert wc["statistic"] == pytest.approx(0.01 * 2 * data["slots"], rel=1e-3), data
        assert data["unresolved"]["quantities"] == ["served"], data
    assert data["events"] == data["slots"] + data["warmup_used"], data
    assert "warnings" not in data, data  # was: two bare RuntimeWarnings (indices past 1e308)


def _unconverged(result: dict[str, Any]) -> dict[str, Any]:
    """``result`` flagged as a run with no honest interval (the relaxation check)."""
    return json.loads(json.dumps(result)) | {"converged": False}


# A run flagged converged = False has no honest interval: the pipeline's figures and summaries
# leave its intervals out (was: the command line printed them, a warning at the very end).
# (model, arguments, a sound result of that model, an estimate to look at)
UNCONVERGED_CASES = [
    ("supermarket", ["--lam", "0.7", "--d", "2"], _occupancy(0.7, 0.01), "mean_jobs"),
    ("hetero", HETERO, _occupancy(0.7, 0.01), "mean_jobs"),
    ("general", ["--lam", "0.7", "--d", "2"], _general(0.7, 0.01), "mean_jobs"),
    ("whittle", ["--p", "0.7", "--q", "0.5,0.5", "--d", "1,1"], _whittle(0.7), "mean_cost"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "argv", "sound", "estimate"), UNCONVERGED_CASES, ids=[c[0] for c in UNCONVERGED_CASES]
)
def test_cli_run_not_converged_shows_no_interval(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    name: str,
    argv: list[str],
    sound: dict[str, Any],
    estimate: str,
) -> None:
    """Flagged not converged: every interval is null in the JSON, the table says why in its
    place, the values stay, and one stderr line says so; the same result converged keeps its
    intervals and says nothing of the kind."""
    run = _run_args(name)
    for result, converged in ((_unconverged(sound), False), (sound, True)):
        _canned(monkeypatch, name, result)
        assert cli.main(["simulate", name, *argv, *run, "--format", "json"]) == 0
        out, err = capsys.readouterr()
        data = json.loads(out)
        assert data[estimate] == sound[estimate]
        shown = [ci for ci in data["ci"].values() if ci is not None]
        assert (shown == []) is not converged, data["ci"]
        assert ("no interval is shown" in err) is not converged, err
        assert cli.main(["simulate", name, *argv, *run, "--format", "table"]) == 0
        table = capsys.readouterr().out
        row = next(line for line in table.splitlines() if line.startswith(estimate + " "))
        assert row.endswith("not converged: no CI") is not converged, row
        assert ("[" in row) is converged, row


@pytest.mark.parametrize(
    ("name", "argv", "broken", "sound"), CONSERVATION_CASES, ids=[c[0] for c in CONSERVATION_CASES]
)
def test_cli_work_conservation_of_a_run_not_converged(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    name: str,
    argv: list[str],
    broken: dict[str, Any],
    sound: dict[str, Any],
) -> None:
    """With no honest interval the identity cannot be shown to hold: ``held`` is null, not
    true; a busy fraction that even the run's own interval keeps from the load still fails,
    with its line (u₁ = 0.0007 where ρ = 0.7 says so whatever the interval)."""
    run = _run_args(name)
    for result, held in ((_unconverged(broken), False), (_unconverged(sound), None)):
        _canned(monkeypatch, name, result)
        assert cli.main(["simulate", name, *argv, *run, "--format", "json"]) == 0
        out, err = capsys.readouterr()
        assert json.loads(out)["work_conservation"]["held"] is held, out
        assert ("work conservation fails" in err) is (held is False), err


def test_cli_heavy_tailed_run_shows_no_interval(capsys: pytest.CaptureFixture[str]) -> None:
    """Infinite-variance service (Lomax α = 1.5): the queue lengths are long-range dependent,
    no batch-means interval covers, and the run says ``converged: false`` with none shown
    (was: no flag at all, and mean_jobs 2.75 [2.26, 3.23])."""
    argv = ["simulate", "general", "--dist", "lomax:1.5", "--lam", "0.7", "--d", "2"]
    assert cli.main([*argv, "--N", "10", "--horizon", "500", "--format", "json"]) == 0
    out, err = capsys.readouterr()
    data = json.loads(out)
    assert data["converged"] is False and data["mean_jobs"] > 0
    assert all(ci is None for ci in data["ci"].values()), data["ci"]
    assert "no interval is shown" in err


def test_cli_affinity_at_the_bifurcation_starts_where_both_branches_meet(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """λ = μ2 exactly with d1 below d*: neither fixed-point branch has a point of its own
    (was: an IndexError traceback for the default start); the run starts where both end, one
    type-II job at every server, and the fraction of servers with a type-II job is near 1."""
    argv = ["simulate", "affinity", "--lam", "0.5", "--d1", "2", "--N", "20", "--horizon", "200"]
    assert cli.main([*argv, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["params"]["start"] == "fixed_point" and data["events"] > 0
    assert sum(data["x_i0"]) + sum(data["x_i1"]) == pytest.approx(1.0, abs=1e-9)


@pytest.mark.parametrize(
    ("q", "off", "held"),
    [([0.9, 0.95], 0.6, True), ([0.2, 0.9], 0.3, False)],
    ids=["large-capacities", "one-small-capacity"],
)
def test_cli_whittle_conservation_floor_is_the_smallest_capacity(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    q: list[float],
    off: float,
    held: bool,
) -> None:
    """The served capacity moves in steps of min q_k per slot, so its resolution floor is
    min q_k/T (was 1/(K·T), as for a fraction of K servers: too fine for capacities near 1,
    a false failure; five times too coarse at q = 0.2, 0.9). A zero-width interval ``off``
    steps of 1/T from p holds within the floor, or not."""
    result = _whittle(0.0, p=0.5)
    result["params"]["q"] = q
    slots = result["slots"]
    served = 0.5 + off / slots
    result["served"], result["ci"]["served"] = served, [served, served]
    _canned(monkeypatch, "whittle", result)
    argv = ["simulate", "whittle", "--p", "0.5", "--q", ",".join(map(str, q)), "--d", "1,1"]
    assert cli.main([*argv, "--horizon", "1000", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["work_conservation"]["held"] is held


def test_cli_whittle_long_run_holds_work_conservation(capsys: pytest.CaptureFixture[str]) -> None:
    """p = 0.5, 10⁵ slots: the served capacity's interval covers p, with no line at all."""
    argv = ["simulate", "whittle", "--p", "0.5", "--q", "0.5,0.5", "--d", "1,1"]
    assert cli.main([*argv, "--horizon", "1e5", "--format", "json"]) == 0
    out, err = capsys.readouterr()
    wc = json.loads(out)["work_conservation"]
    assert wc["held"] is True and wc["interval"][0] <= 0.5 <= wc["interval"][1], wc
    assert err == "", err


@pytest.mark.slow
@pytest.mark.parametrize(
    ("argv", "field"),
    [
        (["general", "--dist", "lomax:1.0001", "--lam", "0.7", "--d", "2", "--N", "10",
          "--horizon", "2000"], "work_conservation"),
        (["whittle", "--p", "1e-7", "--q", "0.5", "--d", "1", "--horizon", "1000"], "unresolved"),
    ],
    ids=["general-lomax", "whittle-p1e-7"],
)  # fmt: skip
def test_cli_issue_cases_end_to_end(argv: list[str], field: str) -> None:
    """The two reported runs, as a user runs them."""
    proc = subprocess.run(
        [sys.executable, "-m", "lbrepro", "simulate", *argv],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert lines and all(line.startswith("lbrepro: warning: ") for line in lines), lines
    assert field in json.loads(proc.stdout)


READ_ONLY = """
import sys
from numba.core import caching
caching.CacheImpl._locator_classes = []  # what a read-only install with no writable home sees
from lbrepro import cli
sys.exit(cli.main(sys.argv[1:]))
"""


@pytest.mark.slow
@pytest.mark.parametrize(
    "argv", [["--help"], ["list"], ["solve", "affinity", "--lam", "0.5", "--d1", "2"]]
)
def test_no_writable_numba_cache_compiles_in_memory(argv: list[str]) -> None:
    """No locator for numba's cache (a read-only install, HOME unwritable): one warning line,
    the command works."""
    proc = subprocess.run(
        [sys.executable, "-c", READ_ONLY, *argv], capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip()
    assert proc.stderr.count("\n") == 1 and "numba cache" in proc.stderr, proc.stderr


NO_COMPILE = """
import sys
from numba.core.dispatcher import Dispatcher
from lbrepro import cli
cli.build_parser()
kernels = [
    (name, key)
    for name, module in list(sys.modules.items())
    if name.startswith("lbrepro")
    for key, value in vars(module).items()
    if isinstance(value, Dispatcher)
]
compiled = [k for k in kernels if getattr(sys.modules[k[0]], k[1]).signatures]
print(len(kernels), compiled)
"""


def test_no_kernel_compiles_at_import_or_parser_build() -> None:
    """Decorating is lazy; building every sub-command's flags compiles nothing.

    In a fresh interpreter: this test process has run other tests' kernels already."""
    proc = subprocess.run(
        [sys.executable, "-c", NO_COMPILE], capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    count, compiled = proc.stdout.split(" ", 1)
    assert int(count) > 20
    assert compiled.strip() == "[]", compiled


def test_unwritable_cache_falls_back_once(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    """The fallback itself: a kernel declared with cache=True and no cache locator still runs,
    and the warning is one line per process."""
    from numba.core import caching

    from lbrepro.sim import compilation

    monkeypatch.setattr(caching.CacheImpl, "_locator_classes", [])
    monkeypatch.setattr(compilation, "_warned", False)

    def twice(x: float) -> float:
        return 2.0 * x

    kernels = [compilation.njit(cache=True)(twice) for _ in range(3)]
    assert kernels[0](2.0) == 4.0
    assert capsys.readouterr().err.count("\n") == 1


INTERRUPTED = [
    ["simulate", "affinity", "--lam", "0.7", "--d1", "2", "--N", "1000", "--horizon", "1e6"],
    ["simulate", "supermarket", "--lam", "0.9", "--d", "2", "--N", "1000", "--horizon", "1e6",
     "--progress", "off"],
    ["simulate", "general", "--dist", "erlang:2", "--lam", "0.9", "--d", "2", "--N", "1000",
     "--horizon", "1e6"],
    ["simulate", "whittle", "--p", "0.5", "--q", "0.5,0.5", "--d", "1,1", "--horizon", "1e9"],
    ["simulate", "hetero", "--lam", "0.9", "--gamma", "0.5,0.5", "--C", "1,2", "--d", "2,2",
     "--N", "1000", "--horizon", "1e6", "--progress", "off"],
    ["simulate", "universality", "--lam", "0.9", "--d", "sqrtN", "--N", "1000", "--horizon",
     "1e6", "--progress", "off"],
    # Solves: the value iteration of a K-server chain near capacity (minutes), a mean-field ODE
    # within a hair of capacity (its budget's 120 s).
    ["solve", "whittle", "--p", "0.99", "--q", "0.5,0.5", "--d", "1,1"],
    ["solve", "hetero", "--lam", "1.49999", "--gamma", "0.5,0.5", "--C", "1,2", "--d", "2,2"],
]  # fmt: skip


def _sigint_default() -> None:
    """SIGINT's default disposition, in the child before it runs lbrepro."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.slow
@pytest.mark.parametrize("argv", INTERRUPTED, ids=[f"{a[0]}-{a[1]}" for a in INTERRUPTED])
def test_ctrl_c_stops_a_simulation_or_a_solve_within_a_second(argv: list[str]) -> None:
    """SIGINT while the kernel or the solver runs: exit 130 with one line, within 1 s (a
    kernel never returns to Python in that time; a solver's numerics may hold the GIL)."""
    import os
    import time

    proc = subprocess.Popen(
        [sys.executable, "-m", "lbrepro", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # As from a terminal: a test run started in the background of a shell without job
        # control inherits SIGINT ignored, and so would lbrepro (it then, rightly, ignores it).
        preexec_fn=_sigint_default,
    )
    # Wait for the computation's child process (the kernel running), at most 5 minutes.
    import psutil

    deadline = time.monotonic() + 300
    while not psutil.Process(proc.pid).children() and time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail("the computation ended before it was interrupted: " + proc.stderr.read())
        time.sleep(0.2)
    time.sleep(3.0)  # into the kernel
    assert proc.poll() is None, "the computation ended before it was interrupted"
    start = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    took = time.monotonic() - start
    assert proc.returncode == 130 and err == "lbrepro: interrupted\n", err[-2000:]
    assert took < 1.0, took
    assert os.getpid()  # the test process itself was not signalled


ENDING_SIGNALS = [signal.SIGTERM, signal.SIGHUP, signal.SIGKILL]


@pytest.mark.slow
@pytest.mark.parametrize("signum", ENDING_SIGNALS, ids=[s.name for s in ENDING_SIGNALS])
@pytest.mark.parametrize("argv", [INTERRUPTED[1], INTERRUPTED[6]], ids=["simulate", "solve"])
def test_a_killed_command_leaves_no_computation_running(
    argv: list[str], signum: signal.Signals
) -> None:
    """``kill`` (SIGTERM), a closed terminal (SIGHUP) or ``kill -9`` on a simulate or solve:
    the command ends at once by that signal, and so does the process computing for it (was:
    it ran on, orphaned, to the end of its kernel or of its 120 s budget)."""
    import time

    import psutil

    proc = subprocess.Popen(
        [sys.executable, "-m", "lbrepro", *argv],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=_sigint_default,
    )
    deadline = time.monotonic() + 300
    while not (children := psutil.Process(proc.pid).children()) and time.monotonic() < deadline:
        assert proc.poll() is None, "the computation ended before it was signalled"
        time.sleep(0.2)
    time.sleep(1.0)  # into the kernel
    assert proc.poll() is None, "the computation ended before it was signalled"
    proc.send_signal(signum)
    assert proc.wait(timeout=5) == -signum
    _, alive = psutil.wait_procs(children, timeout=5)
    for child in alive:
        child.kill()
    assert alive == [], f"{len(alive)} computing process(es) ran on after {signum.name}"


# --------------------------------------- lbrepro diff and the report's checks files
def _checks(entries: list[dict[str, Any]]) -> str:
    return json.dumps(entries)


def _entry(text: str, outcome: str = "reproduced", measured: Any = 0.5) -> dict[str, Any]:
    return {
        "claim": text,
        "outcome": outcome,
        "measured": measured,
        "interval": [0.49, 0.51] if isinstance(measured, float) and measured == measured else None,
    }


def _run_tree(root: Path, content: str | None, *, special: str = "") -> Path:
    """A run folder whose one checks file holds ``content`` (or is a FIFO, /dev/zero…)."""
    folder = root / "results" / "toy"
    folder.mkdir(parents=True)
    path = folder / "toy-tail.checks.json"
    if special == "fifo":
        import os

        os.mkfifo(path)
    elif special == "device":
        path.symlink_to("/dev/zero")
    elif special == "huge":
        with path.open("wb") as f:  # sparse: 1 GB on paper, nothing on disk
            f.truncate(2**30)
    else:
        path.write_text(content or "")
    if special == "twin":  # the same artifact's checks under a second paper's folder
        (root / "results" / "other").mkdir()
        (root / "results" / "other" / path.name).write_text(_checks([_entry("a")]))
    return root


DEEP = "[" * 200_000 + "]" * 200_000
DUPLICATE_OUTCOME = '[{"claim": "a", "outcome": "reproduced", "outcome": "not reproduced"}]'
GIANT_MEASURED = '[{"claim": "a", "outcome": "reproduced", "measured": ' + "9" * 5000 + "}]"
# (case, content of B's checks file or a special file, needle of the one error line)
DIFF_REFUSED = [
    ("fifo", None, "fifo", "not a regular file"),
    ("dev-zero", None, "device", "not a regular file"),
    ("1GB", None, "huge", "bytes"),
    ("nested-200000", DEEP, "", "nested"),
    ("passed-as-text", _checks([{**_entry("a"), "passed": "true"}]), "", "passed"),
    ("outcome-as-bool", _checks([{**_entry("a"), "outcome": True}]), "", "outcome"),
    ("measured-nested", _checks([_entry("a", measured=[[[[[0.5]]]]])]), "", "measured"),
    # was: the last of two "outcome" keys silently won (a flip shown from a file saying both)
    ("duplicate-key", DUPLICATE_OUTCOME, "", "duplicate key 'outcome'"),
    # was: Python's advice to call sys.set_int_max_str_digits()
    ("giant-integer", GIANT_MEASURED, "", "an integer of 5000 digits"),
    # was: the second file's claims silently replaced the first's (a flip hidden)
    ("twin-artifact", _checks([_entry("a", "not reproduced")]), "twin", "also in"),
]


@pytest.mark.parametrize(
    ("case", "content", "special", "needle"), DIFF_REFUSED, ids=[c[0] for c in DIFF_REFUSED]
)
def test_diff_of_a_hostile_checks_file_is_one_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    case: str,
    content: str | None,
    special: str,
    needle: str,
) -> None:
    """Bounded, regular files only, typed: one line naming the file, exit 2, never a hang."""
    good = _run_tree(tmp_path / "a", _checks([_entry("a")]))
    bad = _run_tree(tmp_path / "b", content, special=special)

    def hung(*_: Any) -> None:
        raise TimeoutError("lbrepro diff hung")

    previous = signal.signal(signal.SIGALRM, hung)  # a blocked read fails the test, not hangs
    signal.alarm(60)
    try:
        code = cli.main(["diff", str(good), str(bad)])
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith("lbrepro: error: ") and err.count("\n") == 1, err[:300]
    assert "toy-tail.checks.json" in err and needle in err, err


# (case, A's entries, B's entries, what the output must hold, what it must not)
DIFF_CASES = [
    (
        "escape-in-text",
        [_entry("tail \x1b[2J\x1b]0;owned\x07 ok")],
        [_entry("tail \x1b[2J\x1b]0;owned\x07 ok", "not reproduced")],
        "\\x1b[2J",
        "\x1b",
    ),
    (
        "newline-forges-a-line",
        [_entry("x\n0 claims in both: 0 changed status")],
        [_entry("x\n0 claims in both: 0 changed status", "not reproduced")],
        "x\\n0 claims",
        "\n0 claims in both: 0 changed",
    ),
    (
        "shared-text-flip",  # the first of two claims sharing a text flips (a dict by text
        [_entry("u_k ok"), _entry("u_k ok")],  # kept the second, and saw no change)
        [_entry("u_k ok", "not reproduced"), _entry("u_k ok")],
        "1 changed status",
        "0 changed status",
    ),
    (
        "nan-to-nan",
        [_entry("a", measured=float("nan"))],
        [_entry("a", measured=float("nan"))],
        "0 moved by more than their interval",
        "statistic  ",
    ),
]


@pytest.mark.parametrize(
    ("case", "a", "b", "present", "absent"), DIFF_CASES, ids=[c[0] for c in DIFF_CASES]
)
def test_diff_output_is_terminal_safe_and_matches_claims_by_identity(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    case: str,
    a: list[dict[str, Any]],
    b: list[dict[str, Any]],
    present: str,
    absent: str,
) -> None:
    run_a = _run_tree(tmp_path / "a", _checks(a))
    run_b = _run_tree(tmp_path / "b", _checks(b))
    assert cli.main(["diff", str(run_a), str(run_b)]) == 0
    out = capsys.readouterr().out
    assert present in out and absent not in out, out


# The run's last words (lbrepro.report.run_summary) name its folder: (case, folder name, how it
# must be shown). Was: the name reached the terminal as it was.
SUMMARY_FOLDERS = [
    ("escape", "run\x1b[2J\x1b]0;owned\x07", "run\\x1b[2J"),
    ("newline", "run\nReport: forged.html", "run\\nReport"),
    ("bidi", "run\u202egnp.html", "\\u202e"),
]


@pytest.mark.parametrize(
    ("case", "name", "shown"), SUMMARY_FOLDERS, ids=[c[0] for c in SUMMARY_FOLDERS]
)
def test_run_summary_is_terminal_safe(tmp_path: Path, case: str, name: str, shown: str) -> None:
    from lbrepro.report.run_summary import summary_lines

    root = tmp_path / name
    root.mkdir()
    lines = summary_lines([], {}, root, root / "report" / "index.html")
    text = "\n".join(lines)
    assert shown in text, text
    assert not any(c in text for c in "\x1b\x07\u202e\r"), text
    assert all("\n" not in line for line in lines), lines


REPORT_CHECKS_REFUSED = [
    ("passed-as-text", _checks([{**_entry("a"), "passed": "true"}]), "passed"),
    ("invalid-as-bool", _checks([{**_entry("a"), "invalid": False}]), "invalid"),
    ("looks-as-text", _checks([{**_entry("a"), "looks": "3"}]), "looks"),
    ("nested-40", _checks([_entry("a", measured=json.loads("[" * 40 + "]" * 40))]), "nested"),
    ("control-not-object", _checks([{**_entry("a"), "control": "reproduced"}]), "control"),
    ("duplicate-key", DUPLICATE_OUTCOME, "duplicate key"),  # was: the last one counted
]


@pytest.mark.parametrize(
    ("case", "content", "needle"), REPORT_CHECKS_REFUSED, ids=[c[0] for c in REPORT_CHECKS_REFUSED]
)
def test_report_names_a_mistyped_or_deep_checks_file(
    tmp_path: Path, case: str, content: str, needle: str
) -> None:
    """The report's reading: a field of the wrong type or a file nested too deep is a note on
    its artifact, never counted (the string "true" is not a boolean)."""
    from lbrepro.report import render

    path = tmp_path / "toy-tail.checks.json"
    path.write_text(content)
    claims, note = render._claims(path, "results/toy/toy-tail.checks.json")
    assert claims is None and needle in note and "toy-tail.checks.json" in note, note


def _sparse(path: Path, size: int) -> None:
    with path.open("wb") as f:  # a header, then a hole: large on paper, nothing on disk
        f.write(b"s\th:m:s\n")
        f.truncate(size)


# Files under the run's benchmarks/ (the report's runtime table) and results records read as
# JSON: (case, how to make it, the file's name, needle of the note or error). Was: a JSONL line
# nested 100000 deep crashed the report (RecursionError); an 8 MiB file was read whole (1 GB:
# 6 GB of memory, 40 s); read_json_bounded blocked forever on a FIFO.
REPORT_FILES_REFUSED = [
    ("deep-jsonl", lambda p: p.write_text("[" * 100_000 + "]" * 100_000 + "\n"), "b.jsonl",
     "nested too deep"),
    ("huge-tsv", lambda p: _sparse(p, 8 << 20), "b.tsv", "more than"),
    ("fifo-record", lambda p: os.mkfifo(p), "r.json", "not a regular file"),
    ("dev-zero-record", lambda p: p.symlink_to("/dev/zero"), "r.json", "not a regular file"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("case", "make", "name", "needle"),
    REPORT_FILES_REFUSED,
    ids=[c[0] for c in REPORT_FILES_REFUSED],
)
def test_report_reads_benchmarks_and_records_boundedly(
    tmp_path: Path, case: str, make: Callable[[Path], None], name: str, needle: str
) -> None:
    """A benchmark file is a note on the runtime table, a record a one-line ValueError: never
    a traceback, a hang or a whole huge file in memory."""
    from lbrepro.report.runtimes import read_benchmarks
    from lbrepro.report.sanitize import read_json_bounded

    path = tmp_path / name
    make(path)

    def hung(*_: Any) -> None:
        raise TimeoutError("the read hung")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(30)
    try:
        if name.startswith("b."):
            (row,) = read_benchmarks(tmp_path, [])
            note = row["note"]
        else:
            with pytest.raises(ValueError) as refused:
                read_json_bounded(path)
            note = str(refused.value)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert needle in note and "\n" not in note, note


# Tables read back (a check, the report's summary, collecting): (case, how to make it, needle).
# Was: read whole and unbounded — a FIFO blocked the report for ever, a 300 MB table planted
# or damaged in results/ was read into memory, /dev/zero was read until memory ran out.
TABLES_REFUSED = [
    ("huge", lambda p: _sparse(p, 300 << 20), "more than"),
    ("fifo", lambda p: os.mkfifo(p), "not a regular file"),
    ("dev-zero", lambda p: p.symlink_to("/dev/zero"), "not a regular file"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("case", "make", "needle"), TABLES_REFUSED, ids=[c[0] for c in TABLES_REFUSED]
)
def test_tables_are_read_boundedly(
    tmp_path: Path, case: str, make: Callable[[Path], None], needle: str
) -> None:
    """A table that is not a regular file of a sane size is a ValueError naming why, and a
    note in the report's summary: never a hang or a whole huge file in memory."""
    from lbrepro.artifacts import registry
    from lbrepro.core.io import read_table
    from lbrepro.report.artifact_parts import summary_table

    path = tmp_path / "toy-tail.csv"
    make(path)
    artifact = next(a for a in registry.all_artifacts() if a.summary is not None)

    def hung(*_: Any) -> None:
        raise TimeoutError("the read hung")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(30)
    try:
        with pytest.raises(ValueError, match=needle):
            read_table(path)
        table, note = summary_table(artifact, path)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert table is None and ("could not be computed" in note or "not produced" in note), note


# Records beside the outputs, in place of what was written: (case, how to make it). A digest
# record or the run's lock record swapped for a FIFO blocked the run for ever (its size, 0, was
# checked, then it was read); /dev/zero was read until memory ran out.
RECORDS_REFUSED = [
    ("fifo", lambda p: os.mkfifo(p)),
    ("dev-zero", lambda p: p.symlink_to("/dev/zero")),
    ("huge", lambda p: _sparse(p, 300 << 20)),
]  # fmt: skip


@pytest.mark.parametrize(("case", "make"), RECORDS_REFUSED, ids=[c[0] for c in RECORDS_REFUSED])
def test_records_are_read_boundedly(
    tmp_path: Path, case: str, make: Callable[[Path], None]
) -> None:
    """A damaged digest record is no record (its file is made again); a damaged run record
    is no holder: never a hang."""
    from lbrepro.core import runlock
    from lbrepro.core.io import write_table
    from lbrepro.core.manifest import digest_path, verify, write_digest

    table = tmp_path / "t.csv"
    write_table([{"point": "a", "x": 1}], table)
    write_digest(table, rows=1)
    digest_path(table).unlink()
    make(digest_path(table))
    (tmp_path / ".snakemake").mkdir()
    make(tmp_path / ".snakemake" / runlock.RUN_FILE)

    def hung(*_: Any) -> None:
        raise TimeoutError("the read hung")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(30)
    try:
        assert (verify(table) or "").startswith("no digest record"), verify(table)
        assert runlock.read_record(tmp_path / ".snakemake") is None
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


# --------------------------------------------- every error a user can cause: one line
ONE_LINE = [
    ["diff", "run\nlbrepro: forged line", "other"],
    ["diff", "run\x1b[2J", "other"],
    ["validate", "conf\nforged.yaml"],
]


@pytest.mark.parametrize("argv", ONE_LINE, ids=["diff-newline", "diff-escape", "validate-nl"])
def test_error_naming_a_hostile_path_is_one_safe_line(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("lbrepro: error: ") and err.count("\n") == 1, err
    assert "\x1b" not in err


# Targets no rule makes (was: Snakemake's MissingRuleException after its banner, exit code 1):
# (case, target, needle of the one line).
UNMADE_TARGETS = [
    ("a-folder", "results", "no rule makes 'results'"),
    ("outside", "/tmp/elsewhere/supermarket-tail.csv", "outside the run's folder"),
    ("job-id-with-space", "results/supermarket/supermarket-tail/jobs/rho0.9 d2.csv", "no rule"),
    ("no-suffix", "results/supermarket/supermarket-tail/jobs/rho0.9-d2", "no rule makes"),
    ("config-file", "small.yaml", "no rule makes 'small.yaml'"),
    ("escape", "results/x\x1b[2J.csv", "\\x1b[2J"),
]
SMALL_RUN = yaml.safe_dump(
    COMMON
    | {"supermarket-tail": {"rho": [0.9], "d": [2], "N": 100, "horizon": 400, "warmup": 20,
                            "kmax": 6}}
)  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize(
    ("case", "target", "needle"), UNMADE_TARGETS, ids=[c[0] for c in UNMADE_TARGETS]
)
def test_target_no_rule_makes_is_one_line(
    tmp_path: Path, case: str, target: str, needle: str
) -> None:
    from conftest import snakemake_command

    (tmp_path / "small.yaml").write_text(SMALL_RUN)
    run = snakemake_command(
        "--cores", "1", "--directory", str(tmp_path), "--configfile",
        str(tmp_path / "small.yaml"), "-n", "--", target, timeout=300,
    )  # fmt: skip
    assert run.returncode == 2, run.stderr[-2000:]
    lines = [ln for ln in run.stderr.splitlines() if ln.startswith("lbrepro: no such target: ")]
    assert len(lines) == 1 and needle in lines[0], run.stderr[-2000:]
    assert "Traceback" not in run.stderr + run.stdout and "\x1b" not in run.stderr


# Config files whose keys or values hold terminal controls, given to Snakemake: (case, the
# file's YAML, how the one line must show it). Was: "invalid configuration: " and the raw text.
WORKFLOW_UNSAFE_CONFIGS = [
    ("escape-in-key", '"ab\\e[2J": 1\n', "ab\\x1b[2J"),
    ("bidi-in-key", '"ab\\u202e": 1\n', "ab\\u202e"),
    ("escape-in-section-key", 'supermarket-tail: {"N\\e]0;x\\a": 1}\n', "N\\x1b]0;x\\x07"),
]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("case", "content", "shown"),
    WORKFLOW_UNSAFE_CONFIGS,
    ids=[c[0] for c in WORKFLOW_UNSAFE_CONFIGS],
)
def test_workflow_config_error_is_terminal_safe(
    tmp_path: Path, case: str, content: str, shown: str
) -> None:
    from conftest import snakemake_command

    (tmp_path / "small.yaml").write_text(SMALL_RUN)
    (tmp_path / "bad.yaml").write_text(content)
    run = snakemake_command(
        "--cores", "1", "--directory", str(tmp_path), "--configfile",
        str(tmp_path / "small.yaml"), str(tmp_path / "bad.yaml"), "-n", timeout=300,
    )  # fmt: skip
    assert run.returncode == 2, run.stderr[-2000:]
    lines = [ln for ln in run.stderr.splitlines() if ln.startswith("invalid configuration: ")]
    assert len(lines) == 1 and shown in lines[0], run.stderr[-2000:]
    assert not any(c in run.stderr for c in "\x1b\x07\u202e"), run.stderr[-2000:]


# ------------------------------------------------------------ a command line for people
def test_solve_prints_a_table_when_asked_and_json_by_default(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["solve", "supermarket", "--lam", "0.9", "--d", "2"]
    assert cli.main([*argv, "--format", "table"]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].startswith("lbrepro solve supermarket: lam = 0.9, d = 2")
    assert table[2].split() == ["quantity", "value", "95%", "interval"]
    assert any(line.split()[:2] == ["u[1]", "0.9"] for line in table)
    assert cli.main(argv) == 0  # not a terminal: JSON, as scripts expect
    assert json.loads(capsys.readouterr().out)["model"] == "supermarket"


def test_list_has_a_header_and_the_papers_names(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["list", "--format", "table"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:3] == ["artifact", "paper", "kind"]
    assert set(lines[1]) <= {"-", " "}
    tail = next(line for line in lines if line.startswith("supermarket-tail"))
    assert "baseline" in tail


# ------------------------------------- Snakemake's own errors, signals, the repository itself
def _shown_snakemake_commands() -> list[tuple[str, str]]:
    """Every `snakemake` command line a user is shown: the README's and docs' code blocks
    (continuation lines joined, after `&&`), the workflow's header and the report's config."""
    import re
    import shlex

    from lbrepro.report.render import write_run_config

    root = Path(__file__).resolve().parents[1]
    found: list[tuple[str, str]] = []
    for doc in [root / "README.md", root / "bench" / "README.md", *sorted(root.glob("docs/*.md"))]:
        for block in re.findall(r"```[a-z]*\n(.*?)```", doc.read_text(), flags=re.S):
            for line in block.replace("\\\n", " ").splitlines():
                for part in line.split("&&"):
                    if part.split()[:1] == ["snakemake"]:
                        found.append((doc.name, shlex.join(shlex.split(part, comments=True))))
    for line in (root / "workflow" / "Snakefile").read_text().splitlines()[:5]:
        if line.startswith("#   snakemake"):
            found.append(("workflow/Snakefile", line[1:].split("#")[0].strip()))
    config = root / "report-config-for-a-test.yaml"  # only its text is used, never written
    text = _written_text(lambda path: write_run_config({"seed": 1}, path), config)
    found += [("report/config.yaml", ln.split(": ", 1)[1]) for ln in text if "snakemake" in ln]
    return found


def _written_text(write: Callable[[Path], Any], path: Path) -> list[str]:
    """The lines ``write(path)`` would write, written to a temporary directory instead."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / path.name
        write(target)
        return target.read_text().replace(str(target), path.name).splitlines()


#: Was: the README's quick command ended in `--configfile config/config.yaml config/quick.yaml`;
#: a target typed after it was read as a third config file (a 27-line FileNotFoundError from
#: Snakemake's command line, before any line of the workflow runs).
@pytest.mark.parametrize("place_command", _shown_snakemake_commands(), ids=lambda c: c[1][:60])
def test_every_shown_command_takes_a_target_after_it(place_command: tuple[str, str]) -> None:
    import shlex

    from snakemake.cli import get_argument_parser

    place, command = place_command
    target = "results/supermarket/supermarket-tail.csv"
    args = get_argument_parser().parse_args([*shlex.split(command)[1:], target])
    assert target in args.targets, f"{place}: `{command} {target}` does not take the target"
    assert all(Path(f).suffix in {".yaml", ".yml"} for f in args.configfile or []), command


def test_unwritable_names_the_directory_and_why(tmp_path: Path) -> None:
    """The check itself: a writable directory passes; one where `.snakemake` cannot be made
    (here a file of that name) is named, with the system's reason, in one line."""
    from lbrepro.core.workdir import unwritable

    assert unwritable(tmp_path) is None and (tmp_path / ".snakemake").is_dir()
    blocked = tmp_path / "blocked\nline"
    blocked.mkdir()
    (blocked / ".snakemake").write_text("")
    problem = unwritable(blocked)
    assert problem is not None and "\n" not in problem and "File exists" in problem, problem
    assert repr(str(blocked)) in problem


@pytest.mark.slow
def test_unwritable_checkout_is_one_line(tmp_path: Path) -> None:
    """Snakemake in a working directory it cannot write (was: a traceback from inside
    Snakemake, `.snakemake`'s PermissionError or read-only file system): one line, exit 2.
    Root passes every mode check, so for root the directory is a read-only bind mount in a
    mount namespace of the test's own."""
    import os
    import shutil

    from conftest import ROOT

    tree = tmp_path / "checkout"
    tree.mkdir()
    shutil.copytree(ROOT / "config", tree / "config")
    command = [
        sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile"), "-n",
        "--cores", "1", "--directory", str(tree),
    ]  # fmt: skip
    if os.geteuid() != 0:
        tree.chmod(0o555)
    else:
        if shutil.which("unshare") is None:
            pytest.skip("root without unshare(1): no way to make a directory read-only to it")
        mount = f"mount --bind {tree} {tree} && mount -o remount,ro,bind {tree} {tree}"
        probe = subprocess.run(["unshare", "-m", "sh", "-c", mount], capture_output=True)
        if probe.returncode != 0:
            pytest.skip("no mount namespace here (unshare -m): " + probe.stderr.decode()[-200:])
        command = ["unshare", "-m", "sh", "-c", mount + ' && exec "$@"', "sh", *command]
    try:
        run = subprocess.run(command, capture_output=True, text=True, timeout=300)
    finally:
        tree.chmod(0o755)
    assert run.returncode == 2, run.stderr[-2000:]
    assert "Traceback" not in run.stderr, run.stderr[-2000:]
    lines = [ln for ln in run.stderr.splitlines() if ln.startswith("lbrepro: ")]
    assert len(lines) == 1 and "cannot write in the working directory" in lines[0], run.stderr
    assert str(tree) in lines[0], lines[0]


#: SIGHUP (the terminal closed) and SIGTERM (`kill <pid>`) to a running `snakemake`: was, for
#: SIGHUP, Snakemake died, its job ran on orphaned and a rerun started the same job beside it.
#: Now the run ends its jobs at once (lbrepro.core.run_signals) and the plain rerun resumes.
#: The machinery is tests/test_resume.py's, which keeps SIGINT and SIGKILL.
@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGTERM], ids=lambda s: s.name)
def test_hangup_or_terminate_ends_the_jobs_and_the_rerun_resumes(
    tmp_path: Path, sig: signal.Signals
) -> None:
    from test_resume import resumes_after

    resumes_after(tmp_path, sig)


#: Was: bench/bench_kernel.py, bench/README.md and README.md read or named the C reference in
#: ../shared/bench (and an absolute fallback path): the repository needs nothing outside itself.
def test_the_repository_names_no_path_outside_itself() -> None:
    import re

    root = Path(__file__).resolve().parents[1]
    outside = re.compile(r"(\.\./)+shared\b|/(work|root|home)/")
    files = [root / "README.md", *root.glob("docs/*.md"), *root.glob(".ci/*")]
    files += [p for d in ("bench", "src", "workflow", "config") for p in (root / d).rglob("*")]
    hits = [
        f"{p.relative_to(root)}: {m.group(0)}"
        for p in files
        if p.is_file() and p.suffix in {"", ".py", ".md", ".sh", ".c", ".smk", ".yaml", ".j2"}
        for m in [outside.search(p.read_text(errors="replace"))]
        if m
    ]
    assert not hits, hits
    assert (root / "bench" / "refsim_supermarket.c").is_file()


#: Was: core/runlock.py read /proc by hand (Linux only) to tell whether a run's process is gone;
#: psutil tells existence and start time portably. Here runlock itself cannot open /proc.
def test_whether_a_run_is_gone_needs_no_proc(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    from lbrepro.core import runlock

    def no_proc(path: Any, *args: Any, **kwargs: Any) -> Any:
        if str(path).startswith("/proc/"):
            raise PermissionError(13, "no /proc here", str(path))
        return builtins.open(path, *args, **kwargs)

    monkeypatch.setattr(runlock, "open", no_proc, raising=False)  # runlock's own reads only
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    here = runlock.identity()
    assert here["start_time"] is not None and here["boot_time"] is not None, here
    assert not runlock.holder_is_gone(runlock.identity(), here)  # this process: alive
    assert runlock.holder_is_gone({**here, "pid": dead.pid, "start_time": 1.0}, here)


# ==================================================================================================
# Issue 34, round 4: configs Snakemake would read first; results tied to what made them (a
# file's digest record says its seed, parameters and code: lbrepro.core.manifest); healing
# (damaged outputs rebuilt, one line each); unknown targets. End to end through Snakemake.
# ==================================================================================================
def _workflow(tree: Path, *args: str, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    """Snakemake on the project's Snakefile in ``tree``, one core, as a user runs it."""
    from conftest import snakemake_command

    return snakemake_command("--cores", "1", "--directory", str(tree), *args, timeout=timeout)


#: (case, the working directory's config/config.yaml, what the one line names). Snakemake's
#: `configfile:` read it unbounded (a FIFO blocked, /dev/zero was read for ever), ran the YTE
#: template in it (the marker file was written) and recursed on its depth (a traceback); the
#: workflow now reads it strictly first (workflow/Snakefile).
MARKER = "yte-ran-here"
WORKFLOW_CONFIG_FILES = [
    ("yte-runs-code", f'__use_yte__: true\nseed: ?open("{MARKER}", "w").close() or 1\n'.encode(),
     "__use_yte__"),
    ("nested-100000", b"seed: " + b"[" * 100_000 + b"\n", "nested more than"),
    ("fifo", None, "not a regular file"),
    ("link-to-dev-zero", None, "not a regular file"),
]  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize(
    ("case", "content", "needle"), WORKFLOW_CONFIG_FILES, ids=[c[0] for c in WORKFLOW_CONFIG_FILES]
)
def test_workflow_reads_its_config_file_strictly_first(
    tmp_path: Path, case: str, content: bytes | None, needle: str
) -> None:
    """`snakemake` in a directory whose config/config.yaml is hostile: one line naming the file
    and exit 2, within seconds; a YTE template's code never runs."""
    import os

    path = tmp_path / "config" / "config.yaml"
    path.parent.mkdir()
    if case == "fifo":
        os.mkfifo(path)
    elif case == "link-to-dev-zero":
        path.symlink_to("/dev/zero")
    else:
        path.write_bytes(content or b"")
    run = _workflow(tmp_path, "-n", timeout=120)
    assert run.returncode == 2, run.stderr[-2000:]
    lines = [ln for ln in run.stderr.splitlines() if ln.startswith("invalid configuration: ")]
    assert len(lines) == 1 and "config/config.yaml" in lines[0] and needle in lines[0], run.stderr
    assert "Traceback" not in run.stderr, run.stderr[-2000:]
    assert not (tmp_path / MARKER).exists(), "Snakemake ran the YTE template"


#: A 400-byte alias bomb given on the command line: 9^10 values once expanded (was: the
#: workflow expanded it while reading --config's numbers, and never ended).
COMMAND_LINE_BOMB = (
    "{a0: &a0 [x,x,x,x,x,x,x,x,x], "
    + ", ".join(f"a{i}: &a{i} [{','.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10))
    + "}"
)


@pytest.mark.slow
def test_alias_bomb_on_the_command_line_is_one_line(tmp_path: Path) -> None:
    assert len(COMMAND_LINE_BOMB) < 500
    run = _workflow(
        tmp_path,
        "-n",
        "--configfile",
        str(CONFIG_PATH),
        "--config",
        f"bomb={COMMAND_LINE_BOMB}",
        timeout=120,
    )
    assert run.returncode == 2, run.stderr[-2000:]
    lines = [ln for ln in run.stderr.splitlines() if ln.startswith("invalid configuration: ")]
    assert len(lines) == 1 and "bomb" in lines[0] and "alias bomb" in lines[0], run.stderr
    assert "Traceback" not in run.stderr, run.stderr[-2000:]


#: One artifact, one point, a short horizon: a whole run (job, extension, table, checks,
#: figure, report) in under a minute.
TINY_RUN = """\
seed: 20240501
simulation: {batches: 20, extend: 0, max_events: 1.0e+10, replace: true, job_seconds: 20,
             runtime_min: 30, mem_mb: 1000}
supermarket-tail: {rho: [0.9], d: [2], N: 100, horizon: 400, warmup: 20, kmax: 6}
"""
TINY_SEED = 20240501
TAIL_JOB = "results/supermarket/supermarket-tail/jobs/rho0.9-d2.csv"
TAIL_EXTENSION = "results/supermarket/supermarket-tail/extended.csv"
TAIL_TABLE = "results/supermarket/supermarket-tail.csv"
TAIL_CHECKS = "results/supermarket/supermarket-tail.checks.json"
TAIL_FIGURE = "figures/supermarket/supermarket-tail.png"
TAIL_SVG = "figures/supermarket/supermarket-tail.svg"


def _tiny(tree: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The tiny run in ``tree`` (its config is tree/tiny.yaml), the report its target."""
    (tree / "tiny.yaml").write_text(TINY_RUN)
    return _workflow(tree, "--configfile", str(tree / "tiny.yaml"), *args)


#: The tiny run with one parameter changed (not the seed): its horizon.
TINY_OTHER_PARAMETER = TINY_RUN.replace("horizon: 400", "horizon: 500")


def _tiny_other_parameter(tree: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The tiny run with TINY_OTHER_PARAMETER (tree/other.yaml) in ``tree``."""
    assert TINY_OTHER_PARAMETER != TINY_RUN
    (tree / "other.yaml").write_text(TINY_OTHER_PARAMETER)
    return _workflow(tree, "--configfile", str(tree / "other.yaml"), *args)


@pytest.fixture(scope="module")
def tiny_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The tiny run made three times, once per module: with its own seed, with `--config
    seed=5`, and with another parameter (a longer horizon: TINY_OTHER_PARAMETER)."""
    runs = {}
    for name, extra in (("default", ()), ("seed5", ("--config", "seed=5")), ("horizon", ())):
        tree = tmp_path_factory.mktemp(f"tiny-{name}")
        run = _tiny(tree, *extra) if name != "horizon" else _tiny_other_parameter(tree)
        assert run.returncode == 0, run.stderr[-3000:]
        runs[name] = tree
    return runs


def _copy_of(tiny_runs: dict[str, Path], tmp_path: Path, name: str = "default") -> Path:
    """A copy of a finished tiny run (mtimes and Snakemake's records kept)."""
    import shutil

    return Path(shutil.copytree(tiny_runs[name], tmp_path / "run", symlinks=True))


def _said_once(run: subprocess.CompletedProcess[str], rel: str, why: str) -> None:
    """The run ended well and said, in exactly one stderr line, that ``rel`` was not used."""
    assert run.returncode == 0, run.stderr[-3000:]
    lines = [ln for ln in run.stderr.splitlines() if ln.startswith(f"lbrepro: {rel}: ")]
    assert len(lines) == 1, run.stderr[-3000:]
    assert why in lines[0] and lines[0].endswith("this run makes it again"), lines[0]


def _seeds(path: Path) -> set[int]:
    """The seeds the simulated rows of a table were made with."""
    from lbrepro.core.io import read_table

    return {int(r["seed"]) for r in read_table(path) if r.get("seed") not in (None, "")}


#: Results tied to what made them: (case, the run it is copied from, the file, what the one
#: line says). A file (with its digest record) copied from a run with `--config seed=5`, or
#: with another parameter, into a run of the default config is not used, whatever its mtime —
#: it is removed with one line and made again (was: collected as it was, seed 5 in the table).
#: Every kind of output: job table, extension, table, checks, figure, report and its config.
OTHER_SEED = f"made with seed 5, not {TINY_SEED}"
OTHER_PARAMETERS = "made with other parameters than the config gives"
STALE_COPIES = [
    ("job-table", "seed5", TAIL_JOB, OTHER_SEED),
    ("extension", "seed5", TAIL_EXTENSION, OTHER_SEED),
    ("table", "seed5", TAIL_TABLE, OTHER_SEED),
    ("checks", "seed5", TAIL_CHECKS, OTHER_SEED),
    ("figure", "seed5", TAIL_FIGURE, OTHER_SEED),
    ("report", "seed5", "report/index.html", OTHER_SEED),
    ("report-config", "seed5", "report/config.yaml", OTHER_SEED),
    ("job-table-other-horizon", "horizon", TAIL_JOB, OTHER_PARAMETERS),
    ("table-other-horizon", "horizon", TAIL_TABLE, OTHER_PARAMETERS),
]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("case", "source", "rel", "why"), STALE_COPIES, ids=[c[0] for c in STALE_COPIES]
)
def test_output_of_another_config_is_not_used(
    tiny_runs: dict[str, Path], tmp_path: Path, case: str, source: str, rel: str, why: str
) -> None:
    import shutil

    from lbrepro.core.manifest import digest_path, read_digest

    tree = _copy_of(tiny_runs, tmp_path)
    other = tiny_runs[source] / rel
    assert read_digest(other)["made_by"] != read_digest(tree / rel)["made_by"]
    shutil.copy2(other, tree / rel)
    shutil.copy2(digest_path(other), digest_path(tree / rel))
    run = _tiny(tree)
    _said_once(run, rel, why)
    assert read_digest(tree / rel)["made_by"] == read_digest(tiny_runs["default"] / rel)["made_by"]
    if rel.endswith(".csv"):  # the same seed makes the same numbers
        assert (tree / rel).read_bytes() == (tiny_runs["default"] / rel).read_bytes()
    assert _seeds(tree / TAIL_TABLE) == {TINY_SEED}
    assert yaml.safe_load((tree / "report" / "config.yaml").read_text()) == yaml.safe_load(TINY_RUN)


@pytest.mark.slow
def test_edited_report_config_is_made_again(tiny_runs: dict[str, Path], tmp_path: Path) -> None:
    """report/config.yaml says which config made the report: an edit (mtime kept) is found."""
    import os

    tree = _copy_of(tiny_runs, tmp_path)
    path = tree / "report" / "config.yaml"
    before = os.stat(path)
    text = path.read_text()
    assert f"seed: {TINY_SEED}\n" in text
    path.write_text(text.replace(f"seed: {TINY_SEED}\n", f"seed: {TINY_SEED + 1}\n"))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    run = _tiny(tree)
    _said_once(run, "report/config.yaml", "changed after it was written")
    assert yaml.safe_load(path.read_text())["seed"] == TINY_SEED


@pytest.mark.slow
def test_mtime_triggers_and_another_seed_give_a_report_of_that_seed(
    tiny_runs: dict[str, Path], tmp_path: Path
) -> None:
    """`--rerun-triggers mtime --config seed=5` over a finished run: every output is older than
    nothing, so Snakemake alone reran nothing and the report named a seed its tables were not
    made with; now the tables, the report and its config all say seed 5."""
    from lbrepro.core.manifest import read_digest

    tree = _copy_of(tiny_runs, tmp_path)
    run = _tiny(tree, "--rerun-triggers", "mtime", "--config", "seed=5")
    assert run.returncode == 0, run.stderr[-3000:]
    said = [ln for ln in run.stderr.splitlines() if "made with seed" in ln]  # one, not per file
    assert len(said) == 1 and said[0].startswith("lbrepro: "), said
    assert f"made with seed {TINY_SEED}, not 5; removed" in said[0] and " outputs in " in said[0]
    assert yaml.safe_load((tree / "report" / "config.yaml").read_text())["seed"] == 5
    assert '<th scope="row">seed</th><td><code>5</code>' in (tree / "report/index.html").read_text()
    for rel in (TAIL_JOB, TAIL_TABLE):
        assert _seeds(tree / rel) == {5}, rel
    for rel in (TAIL_JOB, TAIL_EXTENSION, TAIL_TABLE, TAIL_FIGURE, "report/index.html"):
        assert read_digest(tree / rel)["made_by"]["seed"] == 5, rel


def _truncate_half(path: Path) -> None:
    import os

    os.truncate(path, path.stat().st_size // 2)


def _edit_one_value(path: Path) -> None:
    """One digit of one simulated value changed; the size and the mtime kept."""
    import os

    before = os.stat(path)
    lines = path.read_text().splitlines(keepends=True)
    i = next(i for i, ln in enumerate(lines) if ",sim,u,0." in ln)
    head, value = lines[i].split(",sim,u,0.", 1)
    digit = "1" if value[0] != "1" else "2"
    lines[i] = f"{head},sim,u,0.{digit}{value[1:]}"
    path.write_text("".join(lines))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def _cut_at_a_row(path: Path) -> None:
    """The table ends after its header and half its rows: every line whole."""
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[: 1 + (len(lines) - 1) // 2]))


def _empty(path: Path) -> None:
    path.write_bytes(b"")


def _header_only(path: Path) -> None:
    """The table keeps its header line, no row."""
    path.write_text(path.read_text().splitlines(keepends=True)[0])


def _edit_one_verdict(path: Path) -> None:
    """A claim's outcome turned to "reproduced" by hand, the size (JSON spaces) and the mtime
    kept: only its bytes' digest finds it."""
    import os

    before = os.stat(path)
    text = path.read_text()
    old, new = '"outcome": "not reproduced"', '"outcome": "reproduced"    '
    assert old in text and len(old) == len(new)
    path.write_text(text.replace(old, new, 1))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


#: Healing: (case, the file damaged, how, what the one line says). Each is rebuilt, and its
#: record verifies again (was: used as it was, or a traceback on every rerun). Every kind of
#: output: job table (cut, emptied, header only), extension, table, checks, figure, report.
HEALED = [
    ("table-truncated", TAIL_TABLE, _truncate_half, "truncated or changed"),
    ("table-one-value-edited", TAIL_TABLE, _edit_one_value, "changed after it was written"),
    ("job-table-cut-at-a-row", TAIL_JOB, _cut_at_a_row, "truncated or changed"),
    ("job-table-0-bytes", TAIL_JOB, _empty, "0 bytes"),
    ("job-table-header-only", TAIL_JOB, _header_only, "truncated or changed"),
    ("extension-truncated", TAIL_EXTENSION, _truncate_half, "truncated or changed"),
    ("checks-truncated", TAIL_CHECKS, _truncate_half, "truncated or changed"),
    ("checks-one-verdict-edited", TAIL_CHECKS, _edit_one_verdict, "changed after it was written"),
    ("figure-0-bytes", TAIL_FIGURE, _empty, "0 bytes"),
    ("figure-truncated", TAIL_FIGURE, _truncate_half, "truncated or changed"),
    ("report-0-bytes", "report/index.html", _empty, "0 bytes"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("case", "rel", "damage", "why"), HEALED, ids=[c[0] for c in HEALED])
def test_damaged_output_is_rebuilt_with_one_line(
    tiny_runs: dict[str, Path],
    tmp_path: Path,
    case: str,
    rel: str,
    damage: Callable[[Path], None],
    why: str,
) -> None:
    from lbrepro.core.manifest import verify

    tree = _copy_of(tiny_runs, tmp_path)
    original = (tree / rel).read_bytes()
    damage(tree / rel)
    assert (tree / rel).read_bytes() != original
    run = _tiny(tree)
    _said_once(run, rel, why)
    assert verify(tree / rel) is None
    if rel.endswith(".csv"):  # the same seed makes the same numbers
        assert (tree / rel).read_bytes() == original


@pytest.mark.slow
def test_a_run_of_one_target_does_not_promise_what_it_does_not_make(
    tiny_runs: dict[str, Path], tmp_path: Path
) -> None:
    """A damaged report, and a run whose one target is a table: the report is removed (it is
    stale) but this run does not make it, so its line must not say it does (was: "removed,
    this run makes it again", and the run ended without a report); the next full run does."""
    tree = _copy_of(tiny_runs, tmp_path)
    _empty(tree / "report" / "index.html")
    run = _tiny(tree, "--", TAIL_TABLE)
    assert run.returncode == 0, run.stderr[-3000:]
    lines = [ln for ln in run.stderr.splitlines() if ln.startswith("lbrepro: report/index.html: ")]
    assert len(lines) == 1, run.stderr[-3000:]
    assert lines[0].endswith(
        "made again by this run if its targets need it, else by the next full run"
    ), lines[0]
    assert not (tree / "report" / "index.html").exists()
    full = _tiny(tree)
    assert full.returncode == 0 and (tree / "report" / "index.html").stat().st_size > 0


def test_an_output_that_cannot_be_read_is_named_not_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An output the run may not read (its mode, an I/O error) is stale with its reason (was:
    the PermissionError of hashing it, a traceback before any job). Root reads every mode, so
    the refusal is simulated where the file is hashed."""
    from lbrepro.core import manifest

    path = tmp_path / "table.csv"
    path.write_text("point,value\n")
    manifest.write_digest(path)
    assert manifest.verify(path) is None

    def refused(_: Any) -> str:
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(manifest, "file_sha256", refused)
    assert manifest.verify(path) == "unreadable: Permission denied"


def _record_deleted(path: Path) -> None:
    from lbrepro.core.manifest import digest_path

    digest_path(path).unlink()


def _record_emptied(path: Path) -> None:
    from lbrepro.core.manifest import digest_path

    digest_path(path).write_bytes(b"")


def _record_says_seed_5(path: Path) -> None:
    """The record's seed edited by hand, its digest (and the file) kept."""
    from lbrepro.core.manifest import digest_path

    record = json.loads(digest_path(path).read_text())
    record["made_by"]["seed"] = 5
    digest_path(path).write_text(json.dumps(record, indent=1) + "\n")


def _record_of_the_png(path: Path) -> None:
    """The record of another file of the same job (the PNG's) copied over this one's."""
    import shutil

    from lbrepro.core.manifest import digest_path

    shutil.copy2(digest_path(path.with_suffix(".png")), digest_path(path))


#: Digest records damaged, the file itself intact: (case, the file, how its record is
#: damaged, what the one line says). Each file is made again and its record says what made
#: it. The seed edited in a record (its digest kept) was believed: the record went on naming
#: seed 5 for a table and a report of the run's own seed; only the digest was compared.
RECORD_DAMAGED = [
    ("table-record-deleted", TAIL_TABLE, _record_deleted, "no digest record"),
    ("job-table-record-emptied", TAIL_JOB, _record_emptied, "no digest record"),
    ("table-record-seed-edited", TAIL_TABLE, _record_says_seed_5, "record was changed"),
    ("report-record-seed-edited", "report/index.html", _record_says_seed_5, "record was changed"),
    ("svg-record-of-the-png", TAIL_SVG, _record_of_the_png, "truncated or changed"),
]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("case", "rel", "damage", "why"), RECORD_DAMAGED, ids=[c[0] for c in RECORD_DAMAGED]
)
def test_damaged_record_makes_its_file_again(
    tiny_runs: dict[str, Path],
    tmp_path: Path,
    case: str,
    rel: str,
    damage: Callable[[Path], None],
    why: str,
) -> None:
    from lbrepro.core.manifest import read_digest, verify

    tree = _copy_of(tiny_runs, tmp_path)
    original = (tree / rel).read_bytes()
    made_by = read_digest(tree / rel)["made_by"]
    damage(tree / rel)
    assert (tree / rel).read_bytes() == original  # the file itself intact
    run = _tiny(tree)
    _said_once(run, rel, why)
    assert verify(tree / rel, made_by=made_by) is None
    if rel.endswith(".csv"):
        assert (tree / rel).read_bytes() == original


#: Several outputs damaged at once (a job table emptied, the checks made from it truncated,
#: the report emptied): a dry run names each, removes nothing; the run then names each again
#: and makes it again. (Was: the run named only the job table — the checks and the report
#: went as what was made from it, made again without their line; the dry run named three.)
SEVERAL_DAMAGED = [(TAIL_JOB, _empty), (TAIL_CHECKS, _truncate_half), ("report/index.html", _empty)]


def _dry_run_profile(tree: Path, key: str) -> list[str]:
    """A profile (outside the tree) that asks for a dry run with ``key: true``."""
    profile = tree.parent / f"{tree.name}-profile"
    profile.mkdir()
    (profile / "config.yaml").write_text(f"{key}: true\n")
    return ["--profile", str(profile)]


#: How a dry run is asked for: a flag, or a profile's setting (was: a profile's `dryrun: true`
#: was taken for a run — the workflow asked only its command line — and removed the damaged
#: outputs it only had to name).
DRY_RUNS = [
    ("flag", lambda tree: ["-n"]),
    ("profile-dryrun", lambda tree: _dry_run_profile(tree, "dryrun")),
    ("profile-dry-run", lambda tree: _dry_run_profile(tree, "dry-run")),
]


@pytest.mark.slow
@pytest.mark.parametrize(("how", "dry_args"), DRY_RUNS, ids=[c[0] for c in DRY_RUNS])
def test_every_damaged_output_is_named_by_a_dry_run_and_by_the_run(
    tiny_runs: dict[str, Path],
    tmp_path: Path,
    how: str,
    dry_args: Callable[[Path], list[str]],
) -> None:
    from lbrepro.core.manifest import verify

    tree = _copy_of(tiny_runs, tmp_path)
    for rel, damage in SEVERAL_DAMAGED:
        damage(tree / rel)
    files = sorted(p for p in tree.rglob("*") if p.is_file() and ".snakemake" not in p.parts)
    before = {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in files if p.name != "tiny.yaml"}
    dry = _tiny(tree, *dry_args(tree))
    assert dry.returncode == 0 and "Traceback" not in dry.stderr, dry.stderr[-3000:]
    for rel, _ in SEVERAL_DAMAGED:
        lines = [ln for ln in dry.stderr.splitlines() if ln.startswith(f"lbrepro: {rel}: ")]
        assert len(lines) == 1 and lines[0].endswith("; a run makes it again"), dry.stderr
    assert {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in before} == before
    run = _tiny(tree)
    for rel, _ in SEVERAL_DAMAGED:
        _said_once(run, rel, "truncated or changed")
        assert verify(tree / rel) is None, rel
    assert (tree / TAIL_JOB).read_bytes() == (tiny_runs["default"] / TAIL_JOB).read_bytes()


@pytest.mark.slow
def test_mtime_triggers_and_another_parameter_give_results_of_that_parameter(
    tiny_runs: dict[str, Path], tmp_path: Path
) -> None:
    """`--rerun-triggers mtime` after a parameter (not the seed) changed: every table, the
    report and its config are those of the new parameter — the same bytes as a run made with
    it from scratch."""
    from lbrepro.core.manifest import read_digest

    tree = _copy_of(tiny_runs, tmp_path)
    run = _tiny_other_parameter(tree, "--rerun-triggers", "mtime")
    assert run.returncode == 0 and "Traceback" not in run.stderr, run.stderr[-3000:]
    other = tiny_runs["horizon"]
    assert yaml.safe_load((tree / "report" / "config.yaml").read_text()) == yaml.safe_load(
        TINY_OTHER_PARAMETER
    )
    for rel in (TAIL_JOB, TAIL_EXTENSION, TAIL_TABLE):
        assert (tree / rel).read_bytes() == (other / rel).read_bytes(), rel
    for rel in (
        TAIL_JOB,
        TAIL_EXTENSION,
        TAIL_TABLE,
        TAIL_CHECKS,
        TAIL_FIGURE,
        "report/index.html",
    ):
        assert read_digest(tree / rel)["made_by"] == read_digest(other / rel)["made_by"], rel


def _empty_folder(path: Path) -> None:
    path.unlink()
    path.mkdir()


def _fifo(path: Path) -> None:
    import os

    path.unlink()
    os.mkfifo(path)


def _folder_with_a_file(path: Path) -> None:
    path.unlink()
    path.mkdir()
    (path / "kept.txt").write_text("someone's notes\n")


#: Not a file where an output belongs: (case, the output, what is put there, what the one
#: line says, whether the run makes it again). An empty folder or a FIFO is removed and the
#: file made again; a folder with files in it is never removed: the run stops first, exit 2,
#: nothing removed. (Was: "missing; removed", then an IsADirectoryError from common.smk.)
NOT_A_FILE = [
    ("report-empty-folder", "report/index.html", _empty_folder, "not a regular file", True),
    ("svg-fifo", TAIL_SVG, _fifo, "not a regular file", True),
    ("table-folder-with-a-file", TAIL_TABLE, _folder_with_a_file, "a folder with files", False),
]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("case", "rel", "put", "why", "remade"), NOT_A_FILE, ids=[c[0] for c in NOT_A_FILE]
)
def test_not_a_file_where_an_output_belongs(
    tiny_runs: dict[str, Path],
    tmp_path: Path,
    case: str,
    rel: str,
    put: Callable[[Path], None],
    why: str,
    remade: bool,
) -> None:
    from lbrepro.core.manifest import verify

    tree = _copy_of(tiny_runs, tmp_path)
    put(tree / rel)
    run = _tiny(tree)
    assert "Traceback" not in run.stderr and "Error in" not in run.stderr, run.stderr[-3000:]
    if remade:
        _said_once(run, rel, why)
        assert verify(tree / rel) is None
        return
    assert run.returncode == 2, run.stderr[-3000:]
    lines = [ln for ln in run.stderr.splitlines() if ln.startswith(f"lbrepro: {rel}: ")]
    assert len(lines) == 1 and why in lines[0], run.stderr[-3000:]
    assert (tree / rel / "kept.txt").is_file()
    assert verify(tree / TAIL_CHECKS) is None  # nothing removed


#: The report's record names the code that rendered it — lbrepro.report and the templates —
#: so a report of other rendering code is made again, whatever the rerun triggers (was:
#: lbrepro's version only; Snakemake never sees the Python the report step imports, and a
#: template only by its mtime: after an update, `snakemake` said "Nothing to be done").
REPORT_CODE_EDITS = ["template-edited", "report-code-changed"]


@pytest.mark.slow
def test_report_record_names_its_rendering_code(tiny_runs: dict[str, Path]) -> None:
    from conftest import ROOT
    from lbrepro.core.manifest import read_digest
    from lbrepro.pipeline import report_made_by

    made_by = report_made_by(yaml.safe_load(TINY_RUN), ROOT / "report" / "templates")
    for rel in ("report/index.html", "report/config.yaml"):
        assert read_digest(tiny_runs["default"] / rel)["made_by"] == made_by, rel


@pytest.mark.slow
@pytest.mark.parametrize("edit", REPORT_CODE_EDITS)
def test_report_of_other_rendering_code_is_stale(
    tiny_runs: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, edit: str
) -> None:
    """The workflow's own check (lbrepro.pipeline.stale_outputs) over a finished run, its
    templates or its rendering code then changed: the report and its config, nothing else."""
    import shutil

    from conftest import ROOT
    from lbrepro import pipeline

    tree = _copy_of(tiny_runs, tmp_path)
    templates = Path(shutil.copytree(ROOT / "report" / "templates", tmp_path / "templates"))
    monkeypatch.chdir(tree)
    the_plan = pipeline.plan(yaml.safe_load(TINY_RUN), templates)
    assert list(pipeline.stale_outputs(the_plan)) == []
    if edit == "template-edited":
        with open(templates / "index.html.j2", "a", encoding="utf-8") as fh:
            fh.write("{# one more line #}\n")
    else:
        digest = pipeline.code_digest
        monkeypatch.setattr(
            pipeline, "code_digest", lambda p: "0" * 12 if p == "lbrepro.report" else digest(p)
        )
    stale = {path: why for path, why, _ in pipeline.stale_outputs(the_plan)}
    assert set(stale) == {"report/index.html", "report/config.yaml"}, stale
    assert all(why.startswith("made by other code") for why in stale.values()), stale


#: An artifact's code version covers every lbrepro module it runs, not only its paper's
#: package (was: a changed kernel, model or statistic left every result in place — `snakemake`
#: said "Nothing to be done" after the slotted kernel and the Whittle indices changed).
FAKE_PACKAGE = {
    "fakepkg/__init__.py": "",
    "fakepkg/artifacts/__init__.py": "",
    "fakepkg/artifacts/paper/__init__.py": "from fakepkg.models import model\n",
    "fakepkg/artifacts/paper/figure.py": "def draw():\n    from ...plotting import style\n",
    "fakepkg/artifacts/paper/data.yaml": "a: 1\n",
    "fakepkg/models/__init__.py": "",
    "fakepkg/models/model.py": "from . import kernel\n\ndef solve():\n    import fakepkg.stats\n",
    "fakepkg/models/kernel.py": "X = 1\n",
    "fakepkg/stats.py": "Y = 1\n",
    "fakepkg/plotting/__init__.py": "",
    "fakepkg/plotting/style.py": "Z = 1\n",
    "fakepkg/unrelated.py": "W = 1\n",
}  # fmt: skip
#: (file edited, whether the paper's code version changes)
CODE_EDITS = [
    ("fakepkg/models/kernel.py", True),  # imported by a module the paper imports
    ("fakepkg/stats.py", True),  # a lazy import, inside a function
    ("fakepkg/plotting/style.py", True),  # a relative import, two levels up
    ("fakepkg/artifacts/paper/data.yaml", True),  # the paper's own data
    ("fakepkg/artifacts/__init__.py", True),  # a parent package, run first
    ("fakepkg/unrelated.py", False),  # imported by nothing the paper runs
]


@pytest.mark.parametrize(("edited", "changes"), CODE_EDITS, ids=[c[0] for c in CODE_EDITS])
def test_code_version_covers_every_module_an_artifact_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, edited: str, changes: bool
) -> None:
    from lbrepro.core import manifest

    for rel, text in FAKE_PACKAGE.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [m for m in sys.modules if m.split(".")[0] == "fakepkg"]:
        monkeypatch.delitem(sys.modules, name)  # another case's tree

    def digest() -> str:
        manifest.import_closure.cache_clear()
        manifest.code_digest.cache_clear()
        return manifest.code_digest("fakepkg.artifacts.paper")

    try:
        before = digest()
        with open(tmp_path / edited, "a", encoding="utf-8") as fh:
            fh.write("# edited\n")
        assert (digest() != before) is changes, edited
    finally:
        manifest.import_closure.cache_clear()
        manifest.code_digest.cache_clear()


def test_code_version_holds_every_module_an_artifacts_import_loads() -> None:
    """What importing a paper's package loads (in a fresh interpreter) is in its code version's
    files: the source walk misses no import."""
    from lbrepro.artifacts import registry
    from lbrepro.core.manifest import import_closure

    packages = sorted(
        {".".join(a.compute.__module__.split(".")[:3]) for a in registry.all_artifacts()}
    )
    assert len(packages) >= 6, packages
    for package in packages:
        probe = (
            "import importlib, sys, json; importlib.import_module(sys.argv[1]); "
            "print(json.dumps(sorted(m.__file__ for n, m in list(sys.modules.items()) "
            "if n.split('.')[0] == 'lbrepro' and getattr(m, '__file__', None))))"
        )
        run = subprocess.run(
            [sys.executable, "-c", probe, package], capture_output=True, text=True, check=True
        )
        loaded = {Path(f).resolve() for f in json.loads(run.stdout)}
        closure = {f.resolve() for f in import_closure(package)}
        assert loaded <= closure, (package, sorted(map(str, loaded - closure)))
        if package.endswith(".whittle"):
            names = {f.as_posix().split("lbrepro/")[-1] for f in closure}
            assert {"models/whittle.py", "sim/slotted_lps.py", "core/stats.py"} <= names


@pytest.mark.slow
def test_results_of_other_shared_code_are_stale(
    tiny_runs: dict[str, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A finished run, then a change in code its artifact runs (its code version's digest):
    every output of that artifact is stale, "made by other code"; nothing is kept; the run
    says so in one line for the change, not one per file (was: 265 lines after an update)."""
    from conftest import ROOT
    from lbrepro import pipeline

    tree = _copy_of(tiny_runs, tmp_path)
    monkeypatch.chdir(tree)
    the_plan = pipeline.plan(yaml.safe_load(TINY_RUN), ROOT / "report" / "templates")
    assert list(pipeline.stale_outputs(the_plan)) == []
    digest = pipeline.code_digest
    monkeypatch.setattr(
        pipeline,
        "code_digest",
        lambda p: "0" * 12 if p == "lbrepro.artifacts.supermarket" else digest(p),
    )
    the_plan = pipeline.plan(yaml.safe_load(TINY_RUN), ROOT / "report" / "templates")
    stale = {path: why for path, why, _ in pipeline.stale_outputs(the_plan)}
    for rel in (TAIL_JOB, TAIL_TABLE, TAIL_CHECKS, TAIL_FIGURE):
        assert stale.get(rel, "").startswith("made by other code"), (rel, stale)
    capsys.readouterr()
    removed = pipeline.remove_stale_outputs(the_plan)
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and "made by other code" in lines[0], lines
    assert lines[0].startswith(f"lbrepro: {len(stale)} outputs in "), lines
    assert all(not os.path.lexists(tree / rel) for rel in stale) and set(stale) <= set(removed)


#: `lbrepro diff` is a consumer too: a checks file that is not what its run wrote (a verdict
#: turned by hand, its size and mtime kept) is refused with one line naming it, exit 2, as
#: the report withholds it (was: diffed as a result — a claim "changed status").
DIFF_OF_EDITED = [("checks-one-verdict-edited", _edit_one_verdict, "changed after it was written")]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("case", "damage", "why"), DIFF_OF_EDITED, ids=[c[0] for c in DIFF_OF_EDITED]
)
def test_diff_refuses_a_checks_file_its_run_did_not_write(
    tiny_runs: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    case: str,
    damage: Callable[[Path], None],
    why: str,
) -> None:
    tree = _copy_of(tiny_runs, tmp_path)
    assert cli.main(["diff", str(tiny_runs["default"]), str(tree)]) == 0
    capsys.readouterr()
    damage(tree / TAIL_CHECKS)
    code = cli.main(["diff", str(tiny_runs["default"]), str(tree)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith("lbrepro: error: ") and err.count("\n") == 1, err
    assert "supermarket-tail.checks.json" in err and why in err, err


#: Unknown targets: one line naming the target and exit 2, while the DAG is built (was: a
#: KeyError traceback from an input function).
UNKNOWN_TARGETS = [
    ("unknown-artifact", "results/supermarket/supermarket-nosuch.csv", "unknown artifact"),
    ("unknown-figure", "figures/supermarket/nosuch.png", "unknown artifact"),
    ("unknown-checks", "results/general/nosuch.checks.json", "unknown artifact"),
    ("other-paper", "results/general/supermarket-tail.csv", "is under supermarket/"),
    ("left-out", "results/general/general-tail.checks.json", "not in the config"),
    ("unplanned-job", "results/supermarket/supermarket-tail/jobs/rho0.5-d7.csv", "no job"),
]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("case", "target", "needle"), UNKNOWN_TARGETS, ids=[c[0] for c in UNKNOWN_TARGETS]
)
def test_unknown_target_is_one_line(tmp_path: Path, case: str, target: str, needle: str) -> None:
    run = _tiny(tmp_path, "-n", "--", target)
    assert run.returncode == 2, run.stderr[-2000:]
    lines = [ln for ln in run.stderr.splitlines() if ln.startswith("lbrepro: no such target: ")]
    assert len(lines) == 1 and needle in lines[0], run.stderr[-2000:]
    assert "Traceback" not in run.stderr, run.stderr[-2000:]
