"""A non-editable install works on its own: the wheel carries what it needs (the config schema,
the license), and installed in a fresh venv its `lbrepro validate` runs from any directory, far
from the source checkout."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import lbrepro

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_wheel_in_a_fresh_venv_validates_from_another_directory(tmp_path: Path) -> None:
    """The wheel, installed in a fresh venv, validates configs far from the checkout."""
    # A copy of the sources: pip must not write build files into the checkout.
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
    # The wheel, as `python -m build` makes it for a release (.ci/release.sh), ...
    wheels = tmp_path / "wheels"
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(src)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, build.stderr[-2000:]
    (wheel,) = wheels.glob("lbrepro-*.whl")
    assert wheel.name.startswith(f"lbrepro-{lbrepro.__version__}-py3-none-any"), wheel.name
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
    assert "lbrepro/schemas/config.schema.yaml" in names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names), names
    shutil.rmtree(src)  # nothing may refer back to the sources

    # ... installed into a fresh venv. Its dependencies are this interpreter's (a .pth line: no
    # download; the editable lbrepro there is not activated, as .pth files of a directory added
    # that way are not read), so the lbrepro it imports is the wheel's.
    venv = tmp_path / "fresh"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    deps = [p for p in map(Path, sys.path) if p.name == "site-packages" and p.is_dir()]
    (site / "zz-test-deps.pth").write_text("".join(f"{p}\n" for p in deps))
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-deps", str(wheel)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert install.returncode == 0, install.stderr[-2000:]
    check = subprocess.run(
        [str(python), "-m", "pip", "check"], capture_output=True, text=True, timeout=120
    )
    assert check.returncode == 0, check.stdout + check.stderr  # the wheel's requirements are met
    assert (site / "lbrepro" / "schemas" / "config.schema.yaml").exists()

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    config = elsewhere / "my.yaml"
    config.write_text((ROOT / "config" / "config.yaml").read_text())
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    where = subprocess.run(
        [str(python), "-c", "import lbrepro; print(lbrepro.__file__)"],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert where.stdout.startswith(str(site)), where.stdout + where.stderr

    def lbrepro_cmd(*args: str) -> subprocess.CompletedProcess[str]:
        """The installed `lbrepro` command of the fresh venv, run far from the checkout."""
        return subprocess.run(
            [str(venv / "bin" / "lbrepro"), *args],
            cwd=elsewhere,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    version = lbrepro_cmd("--version")
    assert version.stdout.strip() == f"lbrepro {lbrepro.__version__}", version
    ok = lbrepro_cmd("validate", "my.yaml")
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["valid"] is True
    config.write_text("seed: 1\nsimulation: {}\nsupermarket-tail: {rho: [.nan]}\n")
    bad = lbrepro_cmd("validate", "my.yaml")
    assert bad.returncode == 2 and "supermarket-tail.rho[0]" in bad.stderr, bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1
