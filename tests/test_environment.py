"""One source of exact versions: requirements.lock. pyproject.toml gives compatible ranges that
admit every pin of the lock; environment.yml, the Containerfile and CI (.ci/run) install the lock
and pin nothing of their own."""

from __future__ import annotations

import os
import re
import tomllib
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements.lock"


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _declared() -> list[Requirement]:
    """The runtime and test dependencies pyproject.toml declares."""
    project = _project()
    specs = project["dependencies"] + project["optional-dependencies"]["test"]
    return [Requirement(spec) for spec in specs]


def _lock() -> dict[str, Requirement]:
    """Every requirement of the lock file, by canonical name (comments and hashes dropped)."""
    pins = {}
    for line in LOCK.read_text().splitlines():
        line = line.split("#", 1)[0].strip().rstrip("\\").strip()
        if not line:
            continue
        assert not line.startswith("-"), f"requirements.lock: option line {line!r}"
        req = Requirement(line.split(" --hash")[0])
        pins[canonicalize_name(req.name)] = req
    return pins


def test_pyproject_gives_ranges_not_pins():
    for req in _declared():
        ops = {spec.operator for spec in req.specifier}
        assert ops and "==" not in ops and "===" not in ops, f"not a range: {req}"
        assert any(op in ("<", "~=") for op in ops), f"no upper bound: {req}"


def test_lock_pins_every_package_exactly():
    for name, req in _lock().items():
        specs = list(req.specifier)
        assert len(specs) == 1 and specs[0].operator == "==", f"not an exact pin: {req}"
        assert name != "lbrepro", "the lock must not pin the project itself"


def test_lock_satisfies_the_pyproject_ranges():
    lock = _lock()
    for req in _declared():
        name = canonicalize_name(req.name)
        assert name in lock, f"{req.name} is declared in pyproject.toml but not in the lock"
        pinned = next(iter(lock[name].specifier)).version
        assert req.specifier.contains(pinned, prereleases=True), (
            f"requirements.lock pins {name}=={pinned}, outside pyproject's {req.specifier}"
        )


def _lock_python() -> str:
    """The Python version the lock was resolved for (its header's uv command)."""
    header = "\n".join(LOCK.read_text().splitlines()[:3])
    assert "uv pip compile pyproject.toml --extra test" in header, header
    return re.search(r"--python-version (\S+)", header).group(1)


def test_lock_is_resolved_for_the_supported_python():
    assert SpecifierSet(_project()["requires-python"]).contains(_lock_python())


def test_conda_env_installs_the_lock_and_pins_nothing_else():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    assert env["channels"][0] == "conda-forge"
    conda = [dep for dep in env["dependencies"] if isinstance(dep, str)]
    assert sorted(conda) == ["pip", f"python={_lock_python()}"], conda
    pip = next(dep["pip"] for dep in env["dependencies"] if isinstance(dep, dict))
    assert pip == ["-r requirements.lock", "-e ."], pip


def test_ci_installs_the_lock():
    ci = (ROOT / ".ci" / "run").read_text()
    assert re.search(r"^pip install .*-r requirements\.lock", ci, re.M), ".ci/run"
    assert re.search(r"^export LBREPRO_LOCKED=1", ci, re.M), ".ci/run"


def test_container_installs_the_lock():
    """The image's packages are pinned by the lock (as constraints: the runtime ones only)."""
    containerfile = (ROOT / "Containerfile").read_text()
    assert re.search(
        r"pip install .*-c /tmp/lbrepro/requirements\.lock /tmp/lbrepro", containerfile
    )
    assert re.search(r"^COPY requirements\.lock ", containerfile, re.M)


@pytest.mark.skipif(
    os.environ.get("LBREPRO_LOCKED") != "1",
    reason="not installed from requirements.lock (.ci/run sets LBREPRO_LOCKED=1)",
)
def test_installed_environment_is_the_lock():
    """In CI the interpreter running the tests has exactly the lock's versions."""
    wrong = {}
    for name, req in _lock().items():
        if req.marker is not None and not req.marker.evaluate():
            continue
        pinned = next(iter(req.specifier)).version
        try:
            have = version(name)
        except PackageNotFoundError:
            have = None
        if have != pinned:
            wrong[name] = (pinned, have)
    assert not wrong, f"installed vs requirements.lock (pinned, installed): {wrong}"


def test_generated_outputs_are_ignored():
    ignored = (ROOT / ".gitignore").read_text().splitlines()
    for entry in ("results/", "figures/*", "report/index.html", ".snakemake/", "__pycache__/"):
        assert entry in ignored, f"{entry} must be git-ignored"
