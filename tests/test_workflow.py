"""The Snakemake workflow: formatting and lint, DAG (locally and with the SLURM profile), config
errors, and the quick profile end to end (run once per session, see ``quick_run`` in conftest):
its outputs, claims, rerun, Snakemake's own report, and our report in a real headless browser."""

from __future__ import annotations

import html
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from lbrepro.artifacts import registry
from lbrepro.config import load_config
from lbrepro.core.claims import STATUSES
from lbrepro.core.io import read_json as read_checks
from lbrepro.core.io import read_table

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ["--configfile", str(ROOT / "config" / "config.yaml")]
QUICK = ["--configfile", str(ROOT / "config" / "config.yaml"), str(ROOT / "config" / "quick.yaml")]


def test_snakefmt_is_clean():
    """The Snakefile and rules are formatted as snakefmt writes them (pyproject's line length)."""
    run = subprocess.run(
        [sys.executable, "-m", "snakefmt", "--check", "Snakefile", "workflow"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr


def test_lint_is_clean(run_snakemake):
    """`snakemake --lint` finds nothing to complain about."""
    run = run_snakemake("--lint")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Congratulations" in run.stdout + run.stderr


def test_dry_run_builds_the_full_dag(run_snakemake, tmp_path):
    """A dry run of the default config plans every enabled artifact and the report."""
    run = run_snakemake("-n", "--cores", "1", "--directory", str(tmp_path), *DEFAULT)
    assert run.returncode == 0, run.stderr
    out = run.stdout + run.stderr
    config = load_config(ROOT / "config" / "config.yaml")
    for artifact in registry.enabled(config):
        assert artifact.id in out
    assert "report" in out


def test_dry_run_with_slurm_profile(run_snakemake, tmp_path):
    """A dry run through the SLURM profile plans the compute jobs."""
    pytest.importorskip("snakemake_executor_plugin_slurm")
    profile = ROOT / "workflow" / "profiles" / "slurm"
    run = run_snakemake(
        "-n", "--workflow-profile", str(profile), "--directory", str(tmp_path), *DEFAULT
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "compute_points" in run.stdout + run.stderr


@pytest.mark.parametrize(
    ("override", "key"),
    [
        ("supermarket-tail:\n  rho: [0.9, 1.5]\n", "supermarket-tail.rho[1]"),
        ("supermarket-accuracy:\n  cases: [[0.9, 0]]\n", "supermarket-accuracy.cases[0][1]"),
        ("seed: -3\n", "seed"),
        ("supermarket-tail:\n  colour: red\n", "supermarket-tail.colour"),
        # issue 21: a memory estimate beyond simulation.mem_mb, refused while planning
        ("affinity-tunneling:\n  dt_snap: 1.0e-6\n", "affinity-tunneling.dt_snap"),
    ],
)
def test_bad_config_stops_before_any_job(run_snakemake, tmp_path, override, key):
    """A bad config stops Snakemake with one line naming the key, before any job."""
    bad = tmp_path / "bad.yaml"
    bad.write_text(override)
    run = run_snakemake(
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


# ------------------------------------------------- the quick profile, run once (conftest)
# The `method` values of the data contract (README, "Outputs").
METHODS = {"cf", "mf", "rmf", "sim", "sde", "mdp", "published", "path"}
QUICK_CONFIG = load_config(ROOT / "config" / "config.yaml", ROOT / "config" / "quick.yaml")


def test_quick_profile_writes_every_output(quick_run):
    """The quick run writes every table, figure, check file and the report."""
    for artifact in registry.enabled(QUICK_CONFIG):
        paths = {k: quick_run.directory / v for k, v in artifact.paths().items()}
        for path in paths.values():
            assert path.is_file() and path.stat().st_size > 0, path
        rows = read_table(paths["table"])
        assert {"method", "quantity", "value"} <= set(rows[0])
        for row in rows:
            assert row["method"] in METHODS, row
            if row["method"] == "sim" and not row.get("diverged"):
                assert row["ci_low"] <= row["ci_high"], row
                assert row["N"] is not None and row["seed"] is not None
            if row.get("ci_low") is not None:
                # Every simulated row carries its batch count and convergence flag (the
                # verdicts refuse a row without them, and a missing flag once read as True).
                assert row.get("batches") is not None, (artifact.id, row)
                assert row.get("converged") in (True, False), (artifact.id, row)
    html = (quick_run.directory / "report" / "index.html").read_text()
    assert "supermarket-tail" in html and "supermarket-accuracy" in html
    assert any(quick_run.directory.glob("benchmarks/**/*.tsv"))


def test_quick_profile_simulation_meets_the_exact_answer(quick_run, agrees):
    """At d = 1 the supermarket model is N independent M/M/1 queues: u_k = ρ^k exactly at
    every N, and E[jobs per server] = ρ/(1 − ρ). The workflow's simulated values must agree
    (one interval per value, widened for the family)."""
    rows = read_table(quick_run.directory / "results/supermarket/supermarket-tail.csv")
    sim = [r for r in rows if r["method"] == "sim" and r["d"] == 1]
    assert len(sim) >= 10
    for row in sim:
        rho = row["rho"]
        exact = rho ** row["k"] if row["quantity"] == "u" else rho / (1 - rho)
        ci = (row["ci_low"], row["ci_high"])
        assert agrees(row["value"], ci, exact, batches=row["batches"], comparisons=len(sim)), row


def test_quick_profile_claims_follow_the_contract(quick_run):
    """Every verdict of the quick run has a status of the contract, a finite statistic and a
    near-miss control with its distance; a reproduced claim's control is not reproduced."""
    for artifact in registry.enabled(QUICK_CONFIG):
        checks = quick_run.directory / artifact.paths()["checks"]
        for claim in read_checks(checks):
            assert set(claim) >= {"claim", "expected", "measured", "tolerance", "status"}
            assert claim["status"] in STATUSES, (artifact.id, claim)
            assert claim["measured"] is not None, (artifact.id, claim["claim"])
            if claim["kind"] == "verdict":
                control = claim["control"]
                assert control and control["distance"], (artifact.id, claim["claim"])
                assert control["measured"] is not None, (artifact.id, claim["claim"])
                if claim["status"] == "reproduced":
                    assert control["outcome"] != "reproduced", (artifact.id, claim)


def test_quick_run_ends_with_its_answer(quick_run):
    """The run's last lines are its answer: papers by name with their statements, the
    baseline apart, and the report's path; Snakemake's per-job lines stay in its log file."""
    out = quick_run.result.stdout.rstrip().splitlines()
    report = (quick_run.directory / "report" / "index.html").resolve()
    assert out[-1] == f"Report: {report}"
    tail = "\n".join(out[-25:])
    assert "Paper statements: " in tail and "  baseline: Mitzenmacher (2001): " in tail
    for paper in registry.papers().values():
        if not paper.baseline:
            assert f"  {paper.name}: " in tail, paper.name
    terminal = quick_run.result.stdout + quick_run.result.stderr
    assert "jobid:" not in terminal and "Select jobs to execute" not in terminal
    logs = list((quick_run.directory / ".snakemake" / "log").glob("*.snakemake.log"))
    assert logs and "jobid:" in logs[-1].read_text()


def test_quick_profile_rerun_has_nothing_to_do(quick_run, run_snakemake):
    """Rerunning the quick profile unchanged has nothing to do."""
    again = run_snakemake("-n", "--cores", "1", "--directory", str(quick_run.directory), *QUICK)
    assert "Nothing to be done" in again.stdout + again.stderr


def test_snakemake_report_beside_ours(quick_run, run_snakemake):
    """`snakemake --report` builds Snakemake's own report (figures and tables by paper, with
    captions) beside ours, without touching report/index.html."""
    ours = (quick_run.directory / "report" / "index.html").read_bytes()
    run = run_snakemake(
        "--report",
        "report/snakemake.html",
        "--directory",
        str(quick_run.directory),
        *QUICK,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    page = quick_run.directory / "report" / "snakemake.html"
    assert page.stat().st_size > 100_000
    html = page.read_text(encoding="utf-8", errors="replace")
    for artifact in registry.enabled(QUICK_CONFIG):
        assert artifact.id in html, artifact.id
    assert (quick_run.directory / "report" / "index.html").read_bytes() == ours


def test_quick_profile_report_in_a_real_browser(quick_run, browser):
    """The quick run's report loads in Chromium with its images and a clean console."""
    from lbrepro.report.browser import check_page

    report = quick_run.directory / "report" / "index.html"
    shot = quick_run.directory / "report.png"
    result = check_page(report, shot)
    assert result["images_total"] >= 2 and not result["broken"], result
    assert not result["severe"], result
    assert shot.stat().st_size > 10_000


def test_regenerate_command_reruns_just_that_artifact_with_the_runs_config(
    quick_run, run_snakemake
):
    """Each artifact's command in the report, run as printed from the run's folder (here as a
    dry run): it plans every job of that artifact — its points, table, figure and checks — and
    nothing else, with the config the run had (report/config.yaml holds it whole)."""
    from lbrepro.config import read_config_file

    assert read_config_file(quick_run.directory / "report" / "config.yaml") == QUICK_CONFIG
    page = (quick_run.directory / "report" / "index.html").read_text(encoding="utf-8")
    commands = dict(
        re.findall(
            r'<article class="artifact" id="([^"]+)">'
            r'.*?<p class="command">[^<]*<code>([^<]+)</code>',
            page,
            re.S,
        )
    )
    assert set(commands) == {a.id for a in registry.enabled(QUICK_CONFIG)}
    artifact = registry.get("supermarket-tail")
    argv = shlex.split(html.unescape(commands[artifact.id]))
    assert argv[0] == "snakemake" and argv[-len(artifact.paths()) :] == list(
        artifact.paths().values()
    )
    run = run_snakemake("-n", *argv[1:], cwd=quick_run.directory)
    out = run.stdout + run.stderr
    assert run.returncode == 0, out[-3000:]
    planned = set(re.findall(r"artifact=([a-z0-9-]+)", out))
    assert planned == {artifact.id}, planned
    rules = set(re.findall(r"^(?:local)?rule (\w+):", out, re.M))
    assert rules == {
        "compute_points",
        "extend_points",
        "collect_plot_check",
    }, rules
