"""docs/adding-a-paper.md, proved: a sixth paper is one model module, one artifacts package
and its config sections — nothing else edited.

The test copies the repository's tracked files to a temporary directory, drops in the worked
example from ``tests/example_paper/`` (model ``random_routing``, paper ``example`` with one
artifact) and appends its config section, then runs it through the registry, the CLI, the
workflow's dry run, one real Snakemake run of the artifact, and the report.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = Path(__file__).resolve().parent / "example_paper"
ARTIFACT = "example-mean-jobs"

pytestmark = pytest.mark.slow


def _tracked_files() -> list[str]:
    """The repository's tracked files (a clean checkout, without results or caches)."""
    out = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO, check=True, capture_output=True, text=True
    )
    return [f for f in out.stdout.split("\0") if f and not f.startswith("tests/")]


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the repository with the example paper added the documented way."""
    root = tmp_path_factory.mktemp("sixth-paper")
    for name in _tracked_files():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, target)
    before = {
        p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()
    }
    # The three steps of docs/adding-a-paper.md:
    shutil.copy2(EXAMPLE / "random_routing.py", root / "src/lbrepro/models/random_routing.py")
    shutil.copytree(EXAMPLE / "artifacts/example", root / "src/lbrepro/artifacts/example")
    section = (EXAMPLE / "config.yaml").read_text(encoding="utf-8")
    for config in ("config/config.yaml", "config/quick.yaml"):
        with open(root / config, "a", encoding="utf-8") as fh:
            fh.write(section)
    after = {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    changed = {n for n in before if before[n] != after.get(n)}
    added = set(after) - set(before)
    assert changed == {"config/config.yaml", "config/quick.yaml"}
    assert all(
        n == "src/lbrepro/models/random_routing.py"
        or n.startswith("src/lbrepro/artifacts/example/")
        for n in added
    )
    return root


def _run(root: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """Run a command in the copy, importing lbrepro from the copy's sources."""
    # One numba cache for every process of the copy: the kernels compile once, not per call.
    env = os.environ | {"PYTHONPATH": str(root / "src"), "NUMBA_CACHE_DIR": str(root / ".numba")}
    return subprocess.run(
        args, cwd=root, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def _python(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return _run(root, sys.executable, *args)


def _snakemake(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Snakemake on the quick profile, one core, in the copy (``--configfile`` last: it takes
    several values and would swallow a target)."""
    quick = ("--cores", "1", "--configfile", "config/quick.yaml")
    return _run(root, sys.executable, "-m", "snakemake", *args, *quick)


def test_registry_discovers_the_paper(checkout: Path) -> None:
    code = (
        "from lbrepro.artifacts import registry; "
        "print(list(registry.papers())[-1], [a.id for a in registry.all_artifacts()][-1])"
    )
    out = _python(checkout, "-c", code)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["example", ARTIFACT]


def test_cli_lists_validates_solves_and_simulates(checkout: Path) -> None:
    listed = _python(checkout, "-m", "lbrepro", "list")
    assert listed.returncode == 0 and ARTIFACT in listed.stdout
    valid = _python(
        checkout, "-m", "lbrepro", "validate", "config/config.yaml", "config/quick.yaml"
    )
    assert valid.returncode == 0, valid.stderr
    solved = _python(checkout, "-m", "lbrepro", "solve", "random_routing", "--lam", "0.5")
    assert solved.returncode == 0, solved.stderr
    out = json.loads(solved.stdout)
    assert out["model"] == "random_routing" and out["mean_jobs"] == pytest.approx(1.0)
    simulated = _python(
        checkout, "-m", "lbrepro", "simulate", "random_routing", "--lam", "0.5", "--N", "50",
        "--horizon", "400", "--seed", "3",
    )  # fmt: skip
    assert simulated.returncode == 0, simulated.stderr
    sim = json.loads(simulated.stdout)
    low, high = sim["ci"]["mean_jobs"]
    # Closed form ρ/(1 − ρ) = 1 inside a generously widened interval (a check, not a tautology).
    assert abs(sim["mean_jobs"] - 1.0) <= 3 * (high - low)
    bad = _python(checkout, "-m", "lbrepro", "solve", "random_routing", "--lam", "1.5")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--lam" in bad.stderr
    wrong = _run(checkout, sys.executable, "-m", "lbrepro", "validate", "bad.yaml")
    assert wrong.returncode == 2
    # An unstable load: the example's validator names the key inside its section ("rho"), the
    # pipeline prefixes the artifact id (one contract for every hook's errors).
    (checkout / "unstable.yaml").write_text(f"{ARTIFACT}:\n  rho: [0.3, 1.5]\n")
    unstable = _python(checkout, "-m", "lbrepro", "validate", "config/config.yaml", "unstable.yaml")
    assert unstable.returncode == 2, unstable.stderr
    assert f"{ARTIFACT}.rho[1]: must be < 1 (stable), got 1.5" in unstable.stderr, unstable.stderr


def test_workflow_dry_run_plans_its_jobs(checkout: Path) -> None:
    out = _snakemake(checkout, "-n", "--quiet", "rules")
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    planned = _snakemake(checkout, "-n", f"results/example/{ARTIFACT}.checks.json")
    assert planned.returncode == 0, planned.stdout[-2000:] + planned.stderr[-2000:]
    text = planned.stdout + planned.stderr
    assert "compute_points" in text and "rho0.3" in text and "rho0.6" in text


def test_artifact_runs_and_reaches_the_report(checkout: Path) -> None:
    targets = [f"results/example/{ARTIFACT}.checks.json", f"figures/example/{ARTIFACT}.png"]
    run = _snakemake(checkout, *targets)
    assert run.returncode == 0, run.stderr[-3000:]
    checks = json.loads((checkout / targets[0]).read_text(encoding="utf-8"))
    (claim,) = checks
    assert claim["status"] == "reproduced", claim
    assert claim["control"]["outcome"] == "not reproduced" and claim["control"]["distance"]
    code = (
        "from pathlib import Path; from lbrepro.artifacts import registry; "
        "from lbrepro.config import load_config; from lbrepro.report.render import render_report; "
        "cfg = load_config('config/config.yaml', 'config/quick.yaml'); "
        f"print(render_report(cfg, root=Path('.'), artifacts=[registry.get('{ARTIFACT}')]))"
    )
    rendered = _python(checkout, "-c", code)
    assert rendered.returncode == 0, rendered.stderr[-3000:]
    html = (checkout / "report/index.html").read_text(encoding="utf-8")
    assert "Random routing: M/M/1 servers (a worked example)" in html
    assert "E[jobs per server] = ρ/(1 − ρ)" in html and f"{ARTIFACT}.png" in html
