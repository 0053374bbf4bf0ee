"""Scaffolding shared by the test files: running the command line and Snakemake as a user does,
running one artifact as the workflow does, checking that bad input is refused, the headless
browser, and the quick end-to-end run that several tests read.

Fixtures: a test asks for ``run_cli``, ``cli_refuses``, ``run_snakemake``, ``run_artifact``,
``refused``, ``agrees``, ``widen``, ``half_width``, ``fd_jacobian``, ``fd_hessian``, ``browser``
or ``quick_run`` by naming it as an argument. A helper that is not a test can import the plain
functions (``from conftest import bonferroni_widening``): tests/ has no ``__init__.py``, so
pytest puts it on ``sys.path``.

Every test that starts a subprocess pipeline (the ``run_cli``, ``cli_refuses``,
``run_snakemake``, ``browser`` and ``quick_run`` fixtures) is marked ``slow`` here, so
``pytest -m "not slow"`` is the fast in-process loop. Under pytest-xdist (``pytest -n``, the
default) ``--dist loadfile`` keeps each test file on one worker, so a module-scoped fixture, or
the session-scoped quick run (used only by test_workflow.py), is built once. (``--dist
loadgroup`` would be finer, but with pytest 9.2 it does not group: xdist 3.8 renames
``item._nodeid``, which pytest no longer reads.) Nothing else needs keeping apart: every
Snakemake run that writes works in its own temporary directory (the lint only reads), signals
go to the test's own process or process group, no test listens on a fixed port, and numba
replaces its cache files atomically.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "config" / "config.yaml"
QUICK = ROOT / "config" / "quick.yaml"
#: The configfile arguments of the quick profile.
QUICK_CONFIG = ("--configfile", str(CONFIG), str(QUICK))

# Fixtures that start subprocesses: a test using one is end to end, hence slow.
SUBPROCESS_FIXTURES = frozenset({"run_cli", "cli_refuses", "run_snakemake", "browser", "quick_run"})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark subprocess tests ``slow``; in a parallel run put the quick run's tests first.

    The quick run is the longest stretch of the suite (minutes on one worker); its tests go
    first so that its file's worker starts it at once while the others share the rest.
    """
    for item in items:
        if set(getattr(item, "fixturenames", ())) & SUBPROCESS_FIXTURES:
            item.add_marker(pytest.mark.slow)
    if hasattr(config, "workerinput"):  # a pytest-xdist worker: the run is parallel
        items.sort(key=lambda item: "quick_run" not in getattr(item, "fixturenames", ()))


# ------------------------------------------------------------------------ subprocesses
def lbrepro_command(
    *args: str,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    timeout: int = 300,
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m lbrepro ARGS`` as a user would; the result with text stdout/stderr."""
    return subprocess.run(
        [sys.executable, "-m", "lbrepro", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def cli_refusal(*args: str) -> str:
    """Run the lbrepro command with bad ARGS; assert exit code 2 and one clean line on stderr.

    Returns that line, for the caller to check that it names the flag.
    """
    result = lbrepro_command(*args)
    assert result.returncode == 2, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
    return lines[0]


def snakemake_command(
    *args: str,
    cwd: Path = ROOT,
    timeout: int = 600,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run Snakemake on the project's Snakefile (``--snakefile`` given, so any ``cwd`` works)."""
    return subprocess.run(
        [sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile"), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture
def run_cli() -> Callable[..., subprocess.CompletedProcess[str]]:
    """``run_cli("solve", "supermarket", ...)``: the lbrepro command in a subprocess."""
    return lbrepro_command


@pytest.fixture
def cli_refuses() -> Callable[..., str]:
    """``assert "--lam" in cli_refuses("solve", ...)``: bad input, one line, exit code 2."""
    return cli_refusal


@pytest.fixture
def run_snakemake() -> Callable[..., subprocess.CompletedProcess[str]]:
    """``run_snakemake("-n", "--directory", tmp, ...)``: Snakemake on the project's Snakefile."""
    return snakemake_command


# ------------------------------------------------------------------------ bad input
def refused_with(call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call ``call(*args, **kwargs)``, expect a ConfigError of one line, and return it.

    One line naming the key is the project's contract for bad input (README); the caller
    then checks ``.key`` and the wording.
    """
    from lbrepro.core.errors import ConfigError

    with pytest.raises(ConfigError) as info:
        call(*args, **kwargs)
    assert "\n" not in str(info.value), str(info.value)
    return info.value


@pytest.fixture
def refused() -> Callable[..., Any]:
    """``refused(validate_config, config).key``: the ConfigError a bad input raises."""
    return refused_with


# ------------------------------------------------------------------------ estimates
def bonferroni_widening(n_compared: int, batches: int = 20, family_error: float = 1e-3) -> float:
    """Factor turning each 95% half-width into a Bonferroni interval for n comparisons.

    Two-sided Student t with ``batches - 1`` degrees of freedom at level
    ``1 - family_error / n_compared``, over the 95% quantile: for 4 comparisons with 20 batches
    it is t_19(1 − 1.25e-4) / t_19(0.975) ≈ 2.2.
    """
    from lbrepro.core.stats import t_quantile

    wide = t_quantile(1 - family_error / (2 * n_compared), batches - 1)
    return wide / t_quantile(0.975, batches - 1)


def half_width(low: Any, high: Any) -> Any:
    """Half the width of an interval (elementwise for arrays)."""
    import numpy as np

    return (np.asarray(high) - np.asarray(low)) / 2


def agrees_with_reference(
    value: float,
    ci: tuple[float, float] | list[float],
    reference: float,
    *,
    batches: int = 20,
    comparisons: int = 1,
    family_error: float = 1e-3,
) -> bool:
    """Whether an estimate lies within its interval's half-width, widened, of a known value.

    An estimate always lies inside its own interval; what can fail is the distance to an
    independent reference (closed form, exact chain, mean field). The 95% half-width is widened
    by :func:`bonferroni_widening` for the ``comparisons`` made at once.
    """
    widen = bonferroni_widening(comparisons, batches, family_error)
    return bool(abs(value - reference) <= widen * half_width(*ci))


@pytest.fixture
def widen() -> Callable[..., float]:
    """``widen(n_compared, batches=20)``: the Bonferroni factor on a 95% half-width."""
    return bonferroni_widening


@pytest.fixture(name="half_width")
def half_width_fixture() -> Callable[..., Any]:
    """``half_width(low, high)``: half an interval's width."""
    return half_width


@pytest.fixture
def agrees() -> Callable[..., bool]:
    """``assert agrees(value, ci, reference, batches=B)``: estimate vs. a known value."""
    return agrees_with_reference


# ------------------------------------------------------------------------ derivatives
def central_jacobian(func: Callable[[Any], Any], x: Any, h: float = 1e-6) -> Any:
    """Central finite-difference Jacobian of ``func`` at ``x``, the last axis over x's entries."""
    import numpy as np

    x = np.asarray(x, dtype=float)
    cols = []
    for j in range(x.size):
        e = np.zeros_like(x)
        e[j] = h
        cols.append((np.asarray(func(x + e)) - np.asarray(func(x - e))) / (2 * h))
    return np.stack(cols, axis=-1)


def central_hessian(func: Callable[[Any], Any], x: Any, h: float = 1e-4) -> Any:
    """Central finite-difference Hessian of ``func`` at ``x``, the last two axes over x's."""
    import numpy as np

    x = np.asarray(x, dtype=float)
    n = x.size
    out = np.zeros((*np.shape(func(x)), n, n))
    for k in range(n):
        for m in range(n):
            ek, em = np.zeros(n), np.zeros(n)
            ek[k], em[m] = h, h
            out[..., k, m] = (
                np.asarray(func(x + ek + em))
                - np.asarray(func(x + ek - em))
                - np.asarray(func(x - ek + em))
                + np.asarray(func(x - ek - em))
            ) / (4 * h * h)
    return out


@pytest.fixture
def fd_jacobian() -> Callable[..., Any]:
    """``fd_jacobian(func, x)``: the reference exact derivatives are checked against."""
    return central_jacobian


@pytest.fixture
def fd_hessian() -> Callable[..., Any]:
    """``fd_hessian(func, x)``: second derivatives by central differences."""
    return central_hessian


# ------------------------------------------------------------------------ one artifact
def run_one_artifact(
    artifact_id: str,
    config: dict[str, Any],
    *,
    seed: int = 7,
    out: Path | None = None,
) -> tuple[list[dict[str, Any]], list[Any]]:
    """Run one artifact as the workflow does and return its rows and claims.

    Validate the config, compute every point with the stream (seed, artifact, point) and tag
    its rows with the point id, write the table and read it back when ``out`` (a folder) is
    given (the workflow's CSV round trip), check the claims, draw the figure (saved to ``out``)
    and build the summary. Asserts what every artifact promises: rows, claims that are
    ``Claim``s with a boolean verdict, a figure with axes, a non-empty summary.
    """
    import matplotlib.pyplot as plt

    from lbrepro.artifacts import registry
    from lbrepro.core.claims import Claim
    from lbrepro.core.io import read_table, write_table
    from lbrepro.core.rng import stream

    artifact = registry.get(artifact_id)
    artifact.validate(config)
    rows: list[dict[str, Any]] = []
    for point, params in artifact.points(config).items():
        computed = artifact.compute(params, stream(seed, artifact_id, point))
        rows += [row | {"point": point} for row in computed]
    assert rows, artifact_id
    if out is not None:
        write_table(rows, out / f"{artifact_id}.csv")
        rows = read_table(out / f"{artifact_id}.csv")
    claims = artifact.check(rows, config)
    assert claims and all(isinstance(c, Claim) and isinstance(c.passed, bool) for c in claims)
    if artifact.plot is not None:
        figure = artifact.plot(rows, config)
        assert figure.axes, artifact_id
        if out is not None:
            figure.savefig(out / f"{artifact_id}.png")
        plt.close(figure)
    if artifact.summary is not None:
        assert artifact.summary(rows), artifact_id
    return rows, claims


@pytest.fixture
def run_artifact() -> Callable[..., tuple[list[dict[str, Any]], list[Any]]]:
    """``run_artifact(artifact_id, config, out=tmp_path)``: one artifact, start to claims."""
    return run_one_artifact


# ------------------------------------------------------------------------ the browser
@pytest.fixture(scope="session")
def browser() -> None:
    """Headless Chromium for ``lbrepro.report.browser.check_page``, or skip (fail on CI).

    On CI (CI=true) a missing browser is a failure: CI installs Chromium and chromedriver,
    and a skip would hide a broken install.
    """
    from lbrepro.report.browser import find_browser

    try:
        find_browser()
    except FileNotFoundError as missing:
        message = f"the headless browser test needs {missing}"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{message} (CI installs them; a skip would hide a broken install)")
        pytest.skip(message)
    pytest.importorskip("selenium")


# ------------------------------------------------------------------------ the quick run
@dataclass(frozen=True)
class QuickRun:
    """The quick profile run end to end once: its working directory and Snakemake's output."""

    directory: Path
    result: subprocess.CompletedProcess[str]


@pytest.fixture(scope="session")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[QuickRun]:
    """The quick profile, run once per session (the suite's slowest step) and read by many tests."""
    directory = tmp_path_factory.mktemp("quick-run")
    result = snakemake_command(
        "--cores", "2", "--directory", str(directory), *QUICK_CONFIG, timeout=1800
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    yield QuickRun(directory, result)
