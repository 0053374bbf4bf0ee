"""End to end through Snakemake (issue 21): a config change reruns the jobs it affects, a
damaged job table is recomputed, and bad config files stop the workflow with one line and
exit code 2 — what the unit tests check of the params functions and loaders, seen from
``snakemake`` itself."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import ROOT

pytestmark = pytest.mark.slow

TARGET = "results/general/general-theta-examples.checks.json"  # closed forms: seconds
JOB_TABLES = "results/general/general-theta-examples/jobs"


def _args(tmp: Path, *extra: str) -> list[str]:
    return [
        "--cores",
        "1",
        "--directory",
        str(tmp),
        "--configfile",
        str(ROOT / "config" / "config.yaml"),
        str(ROOT / "config" / "quick.yaml"),
        *extra,
    ]


def _planned(run) -> str:
    assert run.returncode == 0, run.stderr[-3000:]
    return run.stdout + run.stderr


def test_changed_keys_rerun_their_jobs_and_damaged_tables_are_recomputed(
    run_snakemake: Callable[..., object], tmp_path: Path
) -> None:
    run = run_snakemake(TARGET, *_args(tmp_path))
    assert run.returncode == 0, run.stderr[-3000:]
    assert "Nothing to be done" in _planned(run_snakemake("-n", TARGET, *_args(tmp_path)))
    # a simulation key the compute jobs read (was: "Nothing to be done")
    extend = _planned(
        run_snakemake("-n", TARGET, *_args(tmp_path, "--config", "simulation={extend: 0}"))
    )
    assert "compute_points" in extend and "Params have changed" in extend, extend[-2000:]
    # a key only the claim check reads (merged into the section; the points do not hold it)
    batches = _planned(
        run_snakemake("-n", TARGET, *_args(tmp_path, "--config", "simulation={batches: 7}"))
    )
    assert "check_claims" in batches and "compute_points" not in batches, batches[-2000:]
    # a scheduling key reruns nothing of this target (packing aside)
    mem = _planned(
        run_snakemake("-n", TARGET, *_args(tmp_path, "--config", "simulation={mem_mb: 2000}"))
    )
    assert "check_claims" not in mem, mem[-2000:]
    # a job table truncated by hand: the workflow recomputes it
    table = next(Path(tmp_path, JOB_TABLES).glob("*.csv"))
    os.truncate(table, table.stat().st_size // 2)
    dry = _planned(run_snakemake("-n", TARGET, *_args(tmp_path)))
    assert f"{table.relative_to(tmp_path)}" in dry and "makes it again" in dry, dry[-2000:]
    assert "collect_table" in dry and table.stat().st_size > 0  # a dry run deletes nothing
    rerun = run_snakemake(TARGET, *_args(tmp_path))
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    from lbrepro.core.manifest import verify

    assert verify(table) is None  # recomputed, and recorded again
    assert "Nothing to be done" in _planned(run_snakemake("-n", TARGET, *_args(tmp_path)))


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (b"seed: 1\nseed: 2\n", "duplicate key 'seed'"),
        (b"supermarket-tail:\n  N: 0100\n", "0100 is read by YAML 1.1 as 64"),
        (b"__use_yte__: false\nseed: 1\n", "__use_yte__"),
    ],
    ids=["duplicate", "octal", "yte"],
)
def test_bad_config_file_stops_snakemake_with_one_line(
    run_snakemake: Callable[..., object], tmp_path: Path, content: bytes, needle: str
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_bytes(content)
    run = run_snakemake("-n", *_args(tmp_path), str(bad))
    assert run.returncode == 2, run.stderr[-2000:]
    lines = [ln for ln in run.stderr.splitlines() if "invalid configuration" in ln]
    assert len(lines) == 1 and needle in lines[0], run.stderr[-2000:]
    assert "Traceback" not in run.stderr


def test_nested_command_line_numbers_are_accepted(
    run_snakemake: Callable[..., object], tmp_path: Path
) -> None:
    run = run_snakemake("-n", TARGET, *_args(tmp_path, "--config", "simulation={batches: 5}"))
    assert run.returncode == 0, run.stderr[-2000:]
