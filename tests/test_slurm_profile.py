"""The SLURM profile without a cluster: it parses into valid Snakemake options, takes account and
partition from SBATCH_ACCOUNT / SBATCH_PARTITION without losing its other defaults, and a dry
run through it builds the DAG. The real cluster run is .ci/slurm.sh."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest.importorskip("snakemake_executor_plugin_slurm")

ROOT = Path(__file__).resolve().parents[1]
PROFILE = ROOT / "workflow" / "profiles" / "slurm"
TARGET = "results/supermarket/supermarket-tail.csv"


def parse_profile() -> dict:
    from snakemake.profiles import ProfileConfigFileParser

    with open(PROFILE / "config.yaml") as stream:
        return dict(ProfileConfigFileParser().parse(stream))


def test_profile_without_variables_leaves_account_and_partition_to_the_cluster(monkeypatch):
    monkeypatch.delenv("SBATCH_ACCOUNT", raising=False)
    monkeypatch.delenv("SBATCH_PARTITION", raising=False)
    profile = parse_profile()
    assert profile["executor"] == "slurm"
    # squeue: sacct hangs the run on a cluster without an accounting database.
    assert profile["slurm-status-command"] == "squeue"
    assert sorted(profile["default-resources"]) == ["cpus_per_task=1", "mem_mb=1000", "runtime=30"]


def test_profile_takes_account_and_partition_from_sbatch_variables(monkeypatch):
    monkeypatch.setenv("SBATCH_ACCOUNT", "proj-42")
    # A name that is also a Python builtin: it must stay a string.
    monkeypatch.setenv("SBATCH_PARTITION", "max")
    resources = parse_profile()["default-resources"]
    assert {"runtime=30", "mem_mb=1000", "cpus_per_task=1"} <= set(resources)
    assert "slurm_account='proj-42'" in resources
    assert "slurm_partition='max'" in resources


def test_every_profile_key_is_a_snakemake_option(monkeypatch):
    """Snakemake reads the profile with its own parser, which rejects unknown keys."""
    from snakemake.cli import get_argument_parser

    monkeypatch.setenv("SBATCH_PARTITION", "max")
    args = get_argument_parser(profiles=[str(PROFILE)]).parse_args([])
    assert args.executor == "slurm"
    assert args.slurm_status_command == "squeue"
    assert args.default_resources is not None


def test_dry_run_through_the_profile_builds_the_dag(run_snakemake, tmp_path):
    """A dry run through the profile plans the jobs with the partition."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SBATCH_")}
    env["SBATCH_PARTITION"] = "max"
    run = run_snakemake(
        *("-n", TARGET),
        *("--workflow-profile", str(PROFILE), "--directory", str(tmp_path)),
        *("--configfile", "config/config.yaml", "config/quick.yaml"),
        cwd=ROOT,
        env=env,
        timeout=300,
    )
    out = run.stdout + run.stderr
    assert run.returncode == 0, out
    from lbrepro import pipeline
    from lbrepro.config import load_config

    quick = load_config(ROOT / "config" / "config.yaml", ROOT / "config" / "quick.yaml")
    n_jobs = len(pipeline.jobs(quick, "supermarket-tail"))
    assert any(line.split() == ["compute_points", str(n_jobs)] for line in out.splitlines()), out
    # The partition reaches the jobs, and the profile's own defaults survive beside it.
    assert "runtime=5, cpus_per_task=1, slurm_partition=max" in out
