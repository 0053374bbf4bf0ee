"""A non-editable install works on its own: the package carries what it needs (the config
schema), so `lbrepro validate` runs from any directory, far from the source checkout."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_non_editable_install_validates_from_another_directory(
    tmp_path: Path, run_cli: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    # A copy of the sources (pip must not write build files into the checkout), installed
    # with `pip install .` into a target directory; dependencies come from this interpreter.
    """A `pip install .` validates configs far from the checkout."""
    src = tmp_path / "src-copy"
    shutil.copytree(
        ROOT,
        src,
        ignore=shutil.ignore_patterns(
            ".git",
            ".venv",
            "results",
            "figures",
            "logs",
            "benchmarks",
            ".snakemake",
            "*.egg-info",
            "__pycache__",
            "build",
        ),
    )
    site = tmp_path / "site"
    install = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--target",
            str(site),
            str(src),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert install.returncode == 0, install.stderr[-2000:]
    assert (site / "lbrepro" / "schemas" / "config.schema.yaml").exists()
    shutil.rmtree(src)  # nothing may refer back to the sources

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    config = elsewhere / "my.yaml"
    config.write_text((ROOT / "config" / "config.yaml").read_text())
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHONPATH": str(site)}
    where = subprocess.run(
        [sys.executable, "-c", "import lbrepro; print(lbrepro.__file__)"],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert where.stdout.startswith(str(site)), where.stdout + where.stderr
    ok = run_cli("validate", "my.yaml", cwd=elsewhere, env=env)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["valid"] is True
    config.write_text("seed: 1\nsimulation: {}\nsupermarket-tail: {rho: [.nan]}\n")
    bad = run_cli("validate", "my.yaml", cwd=elsewhere, env=env)
    assert bad.returncode == 2 and "supermarket-tail.rho[0]" in bad.stderr, bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1
