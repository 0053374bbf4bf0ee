"""The answer a run ends with (lbrepro.report.run_summary): per paper by name, statements
counted once over their points, findings one line each, the baseline and lbrepro's own checks
apart, files that are not what the run wrote named and not counted, and the report's path."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from lbrepro.artifacts.registry import Paper
from lbrepro.core.claims import Finding, make_claim, write_checks
from lbrepro.core.manifest import write_digest
from lbrepro.core.verdicts import exact
from lbrepro.report.run_summary import quiet_job_lines, summary_lines
from test_report import fake_artifact


def _claim(text: str, passed: bool, **kw):
    return make_claim(
        text,
        exact(passed, 1.0, "1"),
        control=("a near miss", exact(False, 1.1, "1")),
        distance="0.1 from the claim",
        **kw,
    )


def _write(root: Path, artifact, claims) -> Path:
    path = root / artifact.paths()["checks"]
    write_checks(claims, path)
    write_digest(path)
    return path


def _tree(root: Path):
    a = fake_artifact("toy-a", slug="toy")
    b = fake_artifact("base-b", slug="base")
    # One statement over three points (one fails: the statement is not reproduced, once),
    # one statement reproduced, and lbrepro's own check apart.
    _write(
        root,
        a,
        [
            _claim("Π₂ at ρ = 0.5", True, statement="pi2"),
            _claim("Π₂ at ρ = 0.7", False, statement="pi2", finding="theta"),
            _claim("Π₂ at ρ = 0.9", False, statement="pi2", finding="theta"),
            _claim("stable below 1", True),
            _claim("stricter", False, source="lbrepro"),
        ],
    )
    _write(root, b, [_claim("doubly exponential tail", True)])
    papers = {
        "toy": Paper(
            "toy", "A toy paper", "A", "A, 2024.", "Toys.", name="Doe & Roe (2024)",
            findings={"theta": Finding("θ is off by a factor d", "their θ = μ^{d−1}/d")},
        ),
        "base": Paper("base", "The baseline", "B", "B, 2001.", "Base.", name="Smith (2001)",
                      baseline=True),
    }  # fmt: skip
    return [a, b], papers


def test_summary_counts_statements_names_papers_and_the_report(tmp_path: Path) -> None:
    artifacts, papers = _tree(tmp_path)
    report = tmp_path / "report" / "index.html"
    report.parent.mkdir()
    report.write_text("<html></html>")
    lines = summary_lines(artifacts, papers, tmp_path, report)
    text = "\n".join(lines)
    assert "  Doe & Roe (2024): 1 reproduced, 1 not reproduced, 0 undecided" in lines
    assert "    finding theta: θ is off by a factor d" in lines
    assert "  baseline: Smith (2001): 1 reproduced, 0 not reproduced, 0 undecided" in lines
    assert "counted apart): 0 reproduced, 1 not reproduced, 0 undecided" in text
    # The baseline is not among the papers' statements.
    assert "Paper statements: 1 reproduced, 1 not reproduced, 0 undecided; 1 finding." in lines
    assert lines[-1] == f"Report: {report.resolve()}"
    assert "toy" not in text.replace("toy-", "")  # papers by name, never by slug


def test_a_changed_checks_file_is_named_not_counted(tmp_path: Path) -> None:
    artifacts, papers = _tree(tmp_path)
    path = tmp_path / artifacts[0].paths()["checks"]
    data = json.loads(path.read_text())
    for entry in data:
        entry["passed"] = True
    path.write_text(json.dumps(data))
    lines = summary_lines(artifacts, papers, tmp_path, tmp_path / "report" / "index.html")
    assert "Not counted (checks damaged or changed): toy-a." in lines
    assert not any(line.startswith("  Doe & Roe") for line in lines)
    assert lines[-1].startswith("Report not made: ")
    (tmp_path / artifacts[1].paths()["checks"]).unlink()
    lines = summary_lines(artifacts, papers, tmp_path, tmp_path / "report" / "index.html")
    assert "1 artifact of the config not made yet (no checks)." in lines


def test_job_lines_leave_the_terminal_but_not_errors() -> None:
    from snakemake_interface_logger_plugins.common import LogEvent

    logger = logging.getLogger("lbrepro-test-quiet")
    seen: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record.getMessage())

    handler = Keep()
    handler.name = "DefaultStreamHandler"
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    assert quiet_job_lines("lbrepro-test-quiet")
    logger.info("rule compute_points: jobid 3", extra={"event": LogEvent.JOB_INFO})
    logger.info("Finished jobid: 3", extra={"event": LogEvent.JOB_FINISHED})
    logger.info("Select jobs to execute...")
    logger.info("3 of 9 steps (33%) done", extra={"event": LogEvent.PROGRESS})
    logger.error("Error in rule compute_points", extra={"event": LogEvent.JOB_ERROR})
    assert seen == ["3 of 9 steps (33%) done", "Error in rule compute_points"]
