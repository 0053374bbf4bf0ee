"""The Snakemake workflow: lint, DAG (locally and with the SLURM profile), config errors, and
the quick profile end to end with the report checked in a real headless browser."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lbrepro.artifacts import registry
from lbrepro.config import load_config
from lbrepro.core.claims import read_checks
from lbrepro.core.io import read_table

ROOT = Path(__file__).resolve().parents[1]
SNAKEMAKE = [sys.executable, "-m", "snakemake"]
DEFAULT = ["--configfile", str(ROOT / "config" / "config.yaml")]
QUICK = ["--configfile", str(ROOT / "config" / "config.yaml"), str(ROOT / "config" / "quick.yaml")]


def snakemake(*args: str, cwd: Path = ROOT, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*SNAKEMAKE, "--snakefile", str(ROOT / "Snakefile"), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_lint_is_clean():
    run = snakemake("--lint")
    assert run.returncode == 0, run.stdout + run.stderr


def test_dry_run_builds_the_full_dag(tmp_path):
    run = snakemake("-n", "--cores", "1", "--directory", str(tmp_path), *DEFAULT)
    assert run.returncode == 0, run.stderr
    out = run.stdout + run.stderr
    config = load_config(ROOT / "config" / "config.yaml")
    for artifact in registry.enabled(config):
        assert artifact.id in out
    assert "report" in out


def test_dry_run_with_slurm_profile(tmp_path):
    pytest.importorskip("snakemake_executor_plugin_slurm")
    profile = ROOT / "workflow" / "profiles" / "slurm"
    run = snakemake(
        "-n", "--workflow-profile", str(profile), "--directory", str(tmp_path), *DEFAULT
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "compute_point" in run.stdout + run.stderr


@pytest.mark.parametrize(
    ("override", "key"),
    [
        ("supermarket-tail:\n  rho: [0.9, 1.5]\n", "supermarket-tail.rho[1]"),
        ("supermarket-accuracy:\n  cases: [[0.9, 0]]\n", "supermarket-accuracy.cases[0][1]"),
        ("seed: -3\n", "seed"),
        ("supermarket-tail:\n  colour: red\n", "supermarket-tail.colour"),
    ],
)
def test_bad_config_stops_before_any_job(tmp_path, override, key):
    bad = tmp_path / "bad.yaml"
    bad.write_text(override)
    run = snakemake(
        "-n",
        "--cores",
        "1",
        "--directory",
        str(tmp_path),
        "--configfile",
        str(ROOT / "config" / "config.yaml"),
        str(bad),
    )
    assert run.returncode != 0
    err = run.stdout + run.stderr
    assert f"invalid configuration: {key}:" in err, err
    assert "Traceback" not in err and "File " not in err, err
    assert not (tmp_path / "results").exists()


# The `method` values of the data contract (README, "Outputs").
METHODS = {"cf", "mf", "rmf", "sim", "sde", "mdp", "published", "path"}


@pytest.mark.slow
def test_quick_profile_end_to_end(tmp_path):
    run = snakemake("--cores", "2", "--directory", str(tmp_path), *QUICK, timeout=900)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    config = load_config(ROOT / "config" / "config.yaml", ROOT / "config" / "quick.yaml")
    for artifact in registry.enabled(config):
        paths = {k: tmp_path / v for k, v in artifact.paths().items()}
        for path in paths.values():
            assert path.is_file() and path.stat().st_size > 0, path
        rows = read_table(paths["table"])
        assert {"method", "quantity", "value"} <= set(rows[0])
        for row in rows:
            assert row["method"] in METHODS, row
            if row["method"] == "sim" and not row.get("diverged"):
                assert row["ci_low"] <= row["value"] <= row["ci_high"]
                assert row["N"] is not None and row["seed"] is not None
        for claim in read_checks(paths["checks"]):
            assert set(claim) >= {"claim", "expected", "measured", "tolerance", "passed"}
            # Every verdict can go the other way: its control, computed in the same run, fails.
            if claim.get("kind") != "consistency":
                assert claim.get("control"), (artifact.id, claim["claim"])
                assert claim["control"]["passed"] is False, (artifact.id, claim)
    report = tmp_path / "report" / "index.html"
    html = report.read_text()
    assert "supermarket-tail" in html and "supermarket-accuracy" in html
    assert any(tmp_path.glob("benchmarks/**/*.tsv"))

    # Rerunning with an unchanged config has nothing to do.
    again = snakemake("-n", "--cores", "1", "--directory", str(tmp_path), *QUICK)
    assert "Nothing to be done" in again.stdout + again.stderr

    # The report works opened from disk in a real browser.
    from lbrepro.report.browser import check_page

    if not (shutil.which("chromium") and shutil.which("chromedriver")):
        if os.environ.get("CI") == "true":
            pytest.fail("chromium/chromedriver missing in CI: .ci/run must install them")
        pytest.skip("chromium not installed")
    result = check_page(report, tmp_path / "report.png")
    assert result["images_total"] >= 2 and not result["broken"], result
    assert not result["severe"], result
    assert (tmp_path / "report.png").stat().st_size > 10_000
