"""Papers as plugins: an installed distribution adds a paper through the entry-point group
``lbrepro.papers`` (lbrepro.artifacts.registry), with its default config sections
(lbrepro.config.paper_defaults); the naming rules are enforced with one line each.

The fake distributions here are written by hand (a package and a ``.dist-info`` with its
``entry_points.txt``, as pip would install them) on a path of their own, and every check runs
in a subprocess so that the discovered papers never leak into this test process.
tests/test_example_plugin.py installs the real example (``examples/lbrepro-jiq``) with pip.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

PAPER_INIT = """
from lbrepro.artifacts.registry import Artifact, Paper

def _points(cfg):
    return {{"p1": {{"x": cfg["x"]}}}}

ARTIFACT = Artifact(
    id="{artifact}", slug="{slug}", kind="table", title="A plugin's table",
    caption="A caption.", methods=("CF",), points=_points,
    compute=lambda params, seed: [], check=lambda rows, cfg: [],
    cost=lambda p: 0.0, memory=lambda p: {{"x": 8.0}},
)
PAPER = Paper(
    slug="{slug}", title="A plugin paper", authors="A. Researcher", citation="-",
    summary="-", artifacts=(ARTIFACT,),
)
"""

SCHEMA = """
{artifact}:
  type: object
  additionalProperties: false
  required: [x]
  properties:
    x: {{type: number}}
"""


def _distribution(
    root: Path,
    *,
    name: str = "plugpaper",
    slug: str = "plug",
    artifact: str = "plug-table",
    defaults: str | None = "{artifact}:\n  x: 1.5\n",
) -> Path:
    """A paper package ``name`` and its dist-info declaring it under ``slug``, in ``root``."""
    package = root / name
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(
        PAPER_INIT.format(slug=slug, artifact=artifact), encoding="utf-8"
    )
    (package / "schema.yaml").write_text(SCHEMA.format(artifact=artifact), encoding="utf-8")
    if defaults is not None:
        (package / "config.yaml").write_text(defaults.format(artifact=artifact), encoding="utf-8")
    info = root / f"{name}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(f"[lbrepro.papers]\n{slug} = {name}\n", encoding="utf-8")
    return root


def _run_with(
    path: Path, *args: str, cwd: Path | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """``python ARGS`` with the distributions in ``path`` installed (on its PYTHONPATH)."""
    env = os.environ | {"PYTHONPATH": os.pathsep.join([str(path), str(SRC)])}
    return subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _python(path: Path, code: str) -> subprocess.CompletedProcess[str]:
    return _run_with(path, "-c", textwrap.dedent(code))


def test_an_installed_paper_is_discovered_with_its_defaults(tmp_path: Path) -> None:
    path = _distribution(tmp_path)
    out = _python(
        path,
        """
        from lbrepro.artifacts import registry
        from lbrepro.config import CONFIG_PATH, load_config
        from lbrepro.pipeline import validate_config, plan
        assert registry.paper_packages()["plug"] == "plugpaper"
        assert "plug" in registry.papers() and registry.get("plug-table").slug == "plug"
        config = load_config(CONFIG_PATH)
        assert config["plug-table"] == {"x": 1.5}
        validate_config(config)
        assert "plug-table" in [a.id for a in registry.enabled(config)]
        print("ok", len(registry.all_artifacts()))
        """,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[0] == "ok" and int(out.stdout.split()[1]) >= 2


def test_a_config_file_overrides_a_plugins_defaults(tmp_path: Path) -> None:
    path = _distribution(tmp_path)
    (tmp_path / "mine.yaml").write_text("plug-table:\n  x: 7\n", encoding="utf-8")
    out = _python(
        path,
        f"""
        from lbrepro.config import CONFIG_PATH, load_config
        print(load_config(CONFIG_PATH, {str(tmp_path / "mine.yaml")!r})["plug-table"]["x"])
        """,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "7"


def test_the_plugins_schema_applies(tmp_path: Path) -> None:
    path = _distribution(tmp_path)
    (tmp_path / "bad.yaml").write_text("plug-table:\n  x: text\n", encoding="utf-8")
    out = _run_with(path, "-m", "lbrepro", "validate", str(tmp_path / "bad.yaml"))
    assert out.returncode == 2, out.stderr
    assert out.stderr.count("\n") == 1 and "plug-table.x" in out.stderr, out.stderr


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"slug": "Plug2", "artifact": "Plug2-table"}, "must be lower-case letters only"),
        ({"artifact": "table-of-plug"}, "must be lower-case words joined by hyphens and start"),
        ({"slug": "general", "artifact": "general-extra"}, "paper slug 'general' is declared by"),
        ({"defaults": "seed: 1\n"}, "may only set its own artifacts"),
    ],
    ids=["slug-not-lower-case", "artifact-without-slug", "slug-clash", "defaults-set-seed"],
)
def test_a_paper_that_breaks_a_naming_rule_is_one_line(
    tmp_path: Path, kwargs: dict[str, str], message: str
) -> None:
    """Every naming rule of docs/adding-a-paper.md, enforced where papers are discovered:
    ``lbrepro list`` (and the workflow) stop with one line and exit code 2."""
    path = _distribution(tmp_path, **kwargs)
    command = "validate" if "defaults" in kwargs else "list"
    args = ["-m", "lbrepro", command]
    if command == "validate":
        args.append(str(Path(SRC).parent / "config" / "config.yaml"))
    out = _run_with(path, *args)
    assert out.returncode == 2, (out.stdout[-500:], out.stderr[-2000:])
    assert out.stderr.count("\n") == 1 and message in out.stderr, out.stderr


#: A paper whose own code fails while it is imported: (its ``__init__.py``, the line's start).
BROKEN_IMPORTS = [
    ("x = 1\n1 / 0\n", "ZeroDivisionError: division by zero"),
    ("def f(:\n", "SyntaxError: invalid syntax"),
    ("raise SystemExit(3)\n", "SystemExit: 3"),
    ("def deep():\n    return deep()\ndeep()\n", "RecursionError: maximum recursion depth"),
]


@pytest.mark.parametrize(
    ("source", "message"),
    BROKEN_IMPORTS,
    ids=["exception", "syntax-error", "system-exit", "recursion"],
)
def test_a_paper_whose_import_fails_is_one_line_saying_where(
    tmp_path: Path, source: str, message: str
) -> None:
    """A bug in a plugin's (or an in-tree paper's) module stops ``lbrepro list`` with one line
    naming the paper, the error and the file and line it was raised at, exit code 2 (was: a
    35-line traceback through the registry, exit code 1; SystemExit: no line at all)."""
    path = _distribution(tmp_path)
    init = path / "plugpaper" / "__init__.py"
    init.write_text(source, encoding="utf-8")
    out = _run_with(path, "-m", "lbrepro", "list")
    assert out.returncode == 2, (out.stdout[-500:], out.stderr[-2000:])
    assert out.stderr.count("\n") == 1, out.stderr
    assert "paper 'plug': importing plugpaper failed: " + message in out.stderr, out.stderr
    assert f"({init}, line " in out.stderr, out.stderr


def test_the_workflow_names_a_paper_whose_import_fails(tmp_path: Path) -> None:
    """The same line from ``snakemake -n``, exit code 2, before any job is planned."""
    path = _distribution(tmp_path / "site")
    (path / "plugpaper" / "__init__.py").write_text("1 / 0\n", encoding="utf-8")
    checkout = Path(SRC).parent
    config = str(checkout / "config" / "config.yaml")
    out = _run_with(
        path, "-m", "snakemake", "-n", "--configfile", config, "--directory",
        str(tmp_path / "run"), cwd=checkout, timeout=300,
    )  # fmt: skip
    assert out.returncode == 2, (out.stdout[-2000:], out.stderr[-2000:])
    text = out.stdout + out.stderr
    assert "importing plugpaper failed: ZeroDivisionError" in text, text[-2000:]
    assert "Traceback" not in text and 'File "' not in text, text[-2000:]
