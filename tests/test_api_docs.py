"""docs/api.md, the Python API for a notebook, runs as written: every ``>>>`` example of it is
executed with doctest (its outputs are computed values, seeded), and a file with no example
fails. And :func:`lbrepro.report.checks_file.load_run`, the one function the page added: a
run's checks files read back as :class:`~lbrepro.core.claims.Claim` objects."""

from __future__ import annotations

import doctest
import json
from pathlib import Path

import pytest

from lbrepro.core.claims import (
    Claim,
    Reading,
    attribute,
    close,
    consistency,
    diagnostic,
    make_claim,
    write_checks,
)
from lbrepro.core.verdicts import NOT_REPRODUCED, REPRODUCED, Verdict
from lbrepro.report.checks_file import load_run

API_DOC = Path(__file__).resolve().parents[1] / "docs" / "api.md"
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


class FencedParser(doctest.DocTestParser):
    """Markdown's code fences read as blank lines, so that a fence closing an example block
    ends its expected output instead of being part of it (line numbers are kept)."""

    def parse(self, string: str, name: str = "<string>") -> list:
        lines = string.split("\n")
        unfenced = ["" if line.lstrip().startswith("```") else line for line in lines]
        return super().parse("\n".join(unfenced), name)


def test_every_example_of_the_api_page_runs() -> None:
    failed, attempted = doctest.testfile(
        str(API_DOC), module_relative=False, optionflags=FLAGS, parser=FencedParser()
    )
    assert attempted > 0, f"{API_DOC} has no >>> example"
    assert failed == 0, f"{failed} of {attempted} examples of {API_DOC} failed (output above)"


def test_a_page_without_examples_is_refused(tmp_path: Path) -> None:
    """The check above cannot pass on a page whose examples were lost."""
    page = tmp_path / "api.md"
    page.write_text("# API\n\n```python\nprint(1)\n```\n", encoding="utf-8")
    _, attempted = doctest.testfile(
        str(page), module_relative=False, optionflags=FLAGS, parser=FencedParser()
    )
    assert attempted == 0


def test_a_fence_ends_the_expected_output(tmp_path: Path) -> None:
    page = tmp_path / "api.md"
    page.write_text("```pycon\n>>> 1 + 1\n2\n```\n", encoding="utf-8")
    assert doctest.testfile(
        str(page), module_relative=False, optionflags=FLAGS, parser=FencedParser()
    ) == (0, 1)


def test_the_readme_links_the_page() -> None:
    readme = (API_DOC.parents[1] / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Python API\n", 1)[1].split("\n## ", 1)[0]
    assert "(docs/api.md)" in section


# ---------------------------------------------------------------------------- load_run
def _verdict(outcome: str, measured: float = 1.0) -> Verdict:
    return Verdict(outcome, measured, "x < 2", "margin 0.1", interval=(0.5, 1.5), margin=0.1)


def _claims() -> list[Claim]:
    """One claim of every kind, with a control, a finding, runs, a statement and readings."""
    verdict = make_claim(
        "x is below 2",
        _verdict(REPRODUCED),
        control=("x below 1.5", _verdict(NOT_REPRODUCED)),
        distance="0.5 above",
        runs=["rho0.9"],
        statement="below-two",
        seed=3,
    )
    failed = make_claim(
        "y is below 2",
        _verdict(NOT_REPRODUCED, 2.5),
        control=("y below 1.5", _verdict(NOT_REPRODUCED, 2.5)),
        distance="0.5 above",
        finding="typo",
    )
    readings = attribute(
        "which y",
        [
            Reading("first", "the first reading", failed),
            Reading("second", "the second reading", verdict),
        ],
    )
    return [
        verdict,
        failed,
        readings,
        consistency("z equals itself", close(1.0, 1.0, 1e-12)),
        diagnostic("work is conserved", close(0.9, 0.9001, 0.01), runs=["rho0.9"]),
    ]


def test_load_run_gives_the_claims_written(tmp_path: Path) -> None:
    claims = _claims()
    write_checks(claims, tmp_path / "results" / "paper" / "paper-fig1.checks.json")
    write_checks(claims[:1], tmp_path / "results" / "other" / "other-table.checks.json")
    run = load_run(tmp_path)
    assert list(run) == ["other", "paper"]
    assert run["other"] == {"other-table": claims[:1]}
    assert run["paper"]["paper-fig1"] == claims
    loaded = run["paper"]["paper-fig1"]
    statuses = [REPRODUCED, NOT_REPRODUCED, NOT_REPRODUCED, "consistency", "diagnostic"]
    assert [c.status for c in loaded] == statuses
    assert loaded[0].runs == ("rho0.9",) and loaded[0].extra == {"seed": 3}
    assert loaded[1].finding == "typo" and loaded[1].control["outcome"] == NOT_REPRODUCED
    assert loaded[2].attribution["verdict"] == "depends on the reconstruction"
    # The results folder itself is a run's path too; a round trip writes the same file.
    assert load_run(tmp_path / "results") == run
    again = tmp_path / "again.checks.json"
    write_checks(loaded, again)
    original = tmp_path / "results" / "paper" / "paper-fig1.checks.json"
    assert json.loads(again.read_text()) == json.loads(original.read_text())


def test_load_run_refuses_a_folder_without_checks(tmp_path: Path) -> None:
    (tmp_path / "results" / "paper").mkdir(parents=True)
    (tmp_path / "results" / "paper" / "paper-fig1.csv").write_text("value\n1\n")
    with pytest.raises(FileNotFoundError, match=r"no results/<slug>/<artifact>\.checks\.json"):
        load_run(tmp_path)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{", "not JSON"),
        ('[{"claim": "x", "outcome": "maybe"}]', "'outcome' must be"),
        ('[{"claim": "x", "status": "inconclusive"}]', "not a claim entry: no 'outcome'"),
    ],
)
def test_load_run_names_an_unreadable_file(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "results" / "paper" / "paper-fig1.checks.json"
    path.parent.mkdir(parents=True)
    path.write_text(content)
    with pytest.raises(ValueError, match=message) as err:
        load_run(tmp_path)
    assert str(path) in str(err.value)
