"""environment.yml and pyproject.toml pin the same versions of the same packages."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def _pyproject_pins() -> dict[str, str]:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    pins = {}
    for spec in data["project"]["dependencies"] + data["project"]["optional-dependencies"]["test"]:
        name, version = re.fullmatch(r"([A-Za-z0-9_.-]+)==([^;\s]+)", spec).groups()
        pins[name.lower()] = version
    return pins


def _conda_pins() -> dict[str, str]:
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pins = {}
    for dep in env["dependencies"]:
        if isinstance(dep, str) and "=" in dep:
            name, version = dep.split("=", 1)
            pins[name.lower()] = version
    return pins


def test_every_runtime_dependency_is_pinned_in_pyproject():
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    for spec in data["project"]["dependencies"]:
        assert "==" in spec, f"pyproject dependency not pinned: {spec}"


def test_conda_and_pip_pins_agree():
    conda, pip = _conda_pins(), _pyproject_pins()
    shared = set(conda) - {"python"}
    missing = sorted(shared - set(pip))
    assert not missing, f"pinned in environment.yml but not in pyproject.toml: {missing}"
    differ = {n: (conda[n], pip[n]) for n in shared if conda[n] != pip[n]}
    assert not differ, f"environment.yml vs pyproject.toml disagree: {differ}"
    runtime = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    for spec in runtime:
        name = spec.split("==")[0].lower()
        assert name in conda, f"{name} is a runtime dependency but missing from environment.yml"


def test_conda_env_uses_conda_forge_and_python_311():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    assert env["channels"][0] == "conda-forge"
    assert "python=3.11" in env["dependencies"]


def test_generated_outputs_are_ignored():
    ignored = (ROOT / ".gitignore").read_text().splitlines()
    for entry in ("results/", "figures/*", "report/index.html", ".snakemake/", "__pycache__/"):
        assert entry in ignored, f"{entry} must be git-ignored"
