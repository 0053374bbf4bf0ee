"""The plugin route of docs/adding-a-paper.md, end to end: ``pip install examples/lbrepro-jiq``
(here into a directory of its own on PYTHONPATH, so the project's environment is untouched)
adds a paper with no file of lbrepro edited — ``lbrepro list`` shows it, the config schema
takes its section, ``snakemake -n`` plans its jobs, a real run decides its claim and draws its
figure — and its mean field is checked against its closed form."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "lbrepro-jiq"
ARTIFACT = "jiq-mean-jobs"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The example installed with pip into a target directory; the environment that sees it."""
    target = tmp_path_factory.mktemp("plugin-site")
    out = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target),
         str(EXAMPLE)],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    path = os.pathsep.join([str(target), str(REPO / "src")])
    return os.environ | {"PYTHONPATH": path, "NUMBA_CACHE_DIR": str(target / ".numba")}


def _run(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, cwd=cwd, env=env, capture_output=True, text=True, timeout=900, check=False
    )


def test_the_installed_paper_is_listed_and_validated(installed: dict[str, str]) -> None:
    listed = _run(installed, REPO, sys.executable, "-m", "lbrepro", "list")
    assert listed.returncode == 0, listed.stderr
    assert ARTIFACT in listed.stdout
    valid = _run(
        installed, REPO, sys.executable, "-m", "lbrepro", "validate", "config/config.yaml",
        "config/quick.yaml",
    )  # fmt: skip
    assert valid.returncode == 0, valid.stderr


def test_its_mean_field_is_its_closed_form(installed: dict[str, str]) -> None:
    """The transitions against the algebra: Σ x_k = λ/(1 − λ^d) at the fixed point."""
    code = (
        "from lbrepro_jiq import policy\n"
        "for lam, d in ((0.5, 2), (0.8, 2), (0.9, 3)):\n"
        "    mf, cf = policy.mean_field(lam, d, 80), policy.mean_jobs_closed_form(lam, d)\n"
        "    assert abs(mf - cf) < 1e-9 * cf, (lam, d, mf, cf)\n"
        "print('ok')\n"
    )
    out = _run(installed, REPO, sys.executable, "-c", code)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_the_workflow_plans_and_runs_it(installed: dict[str, str], tmp_path: Path) -> None:
    """In a copy of the checkout (nothing of lbrepro edited): the dry run plans the plugin's
    jobs with the default config, and a run of its targets decides its claim."""
    tracked = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO, check=True, capture_output=True, text=True
    ).stdout.split("\0")
    for name in (n for n in tracked if n and not n.startswith(("tests/", "examples/"))):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, tmp_path / name)
    quick = ("--cores", "1", "--configfile", "config/config.yaml", "config/quick.yaml")
    snakemake = (sys.executable, "-m", "snakemake")
    planned = _run(installed, tmp_path, *snakemake, "-n", *quick)
    assert planned.returncode == 0, planned.stderr[-3000:]
    assert f"results/jiq/{ARTIFACT}.checks.json" in planned.stdout + planned.stderr
    targets = [f"results/jiq/{ARTIFACT}.checks.json", f"figures/jiq/{ARTIFACT}.png"]
    ran = _run(installed, tmp_path, *snakemake, *targets, *quick)
    assert ran.returncode == 0, ran.stderr[-3000:]
    (claim,) = json.loads((tmp_path / targets[0]).read_text(encoding="utf-8"))
    assert claim["status"] == "reproduced", claim
    assert claim["control"]["outcome"] == "not reproduced", claim
    assert (tmp_path / targets[1]).stat().st_size > 0
