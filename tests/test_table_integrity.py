"""A job table is collected only if it is what its job wrote (issue 21).

Every job records its table's digest, row count and points beside it
(``<table>.digest.json``, lbrepro.core.manifest); ``collect_table`` verifies each job table
against that record and its planned points and recomputes a job whose table is truncated (at a
row boundary: one point silently missing; inside a row: a traceback on every rerun), empty
(collected as header only, then ``KeyError`` in check_claims), edited, or unrecorded. The
workflow names such tables when it starts (a stat per table).
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from lbrepro.artifacts.registry import JOB
from lbrepro.config import CONFIG_PATH, load_config
from lbrepro.core.io import read_table
from lbrepro.core.manifest import digest_path, verify, write_digest
from lbrepro.pipeline import collect_table, compute_points, damaged_job_tables, plan

ARTIFACT = "whittle-index-linear"  # closed forms: milliseconds a point
QUICK = load_config(CONFIG_PATH, CONFIG_PATH.parent / "quick.yaml")
CONFIG = {"seed": QUICK["seed"], "simulation": dict(QUICK["simulation"], job_seconds=0)}
CONFIG[ARTIFACT] = copy.deepcopy(QUICK[ARTIFACT])


def _drop_last_row(p: Path) -> None:
    lines = p.read_text().splitlines(keepends=True)
    last_point = lines[-1].split(",")[1]
    keep = [ln for ln in lines if ln.split(",")[1] != last_point or ln is lines[0]]
    p.write_text("".join(keep[:-1]))


def _cut_mid_row(p: Path) -> None:
    p.write_bytes(p.read_bytes()[: p.stat().st_size // 2 + 3])


def _empty(p: Path) -> None:
    p.write_bytes(b"")


def _edit_a_value(p: Path) -> None:
    text = p.read_text()
    line = text.splitlines()[1].split(",")
    value = line[4]
    edited = ("9" if value[0] != "9" else "8") + value[1:]
    p.write_text(text.replace(",".join(line), ",".join([*line[:4], edited, *line[5:]]), 1))


def _no_record(p: Path) -> None:
    digest_path(p).unlink()


def _record_of_other_points(p: Path) -> None:
    record = json.loads(digest_path(p).read_text())
    record["points"] = ["nosuch"]
    digest_path(p).write_text(json.dumps(record))


DAMAGE: dict[str, Callable[[Path], None]] = {
    "truncated-at-row-boundary": _drop_last_row,
    "truncated-mid-row": _cut_mid_row,
    "zero-byte": _empty,
    "edited-same-size": _edit_a_value,
    "no-digest-record": _no_record,
    "record-of-other-points": _record_of_other_points,
}


@pytest.fixture
def computed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Every job table of the artifact, computed in tmp_path (the working directory)."""
    monkeypatch.chdir(tmp_path)
    the_plan = plan(CONFIG)
    paths = []
    for job, points in the_plan.jobs(ARTIFACT).items():
        path = Path(JOB.format(slug="whittle", artifact=ARTIFACT, job=job))
        compute_points(CONFIG, ARTIFACT, points, path)
        paths.append(path)
    assert len(paths) >= 2
    return paths


def test_intact_tables_are_collected_as_they_are(computed: list[Path]) -> None:
    before = [p.stat().st_mtime_ns for p in computed]
    collect_table(computed, "table.csv", CONFIG, ARTIFACT)
    assert [p.stat().st_mtime_ns for p in computed] == before  # nothing recomputed
    assert verify("table.csv") is None
    assert list(damaged_job_tables(plan(CONFIG))) == []


@pytest.mark.parametrize("damage", DAMAGE, ids=list(DAMAGE))
def test_damaged_job_table_is_recomputed(computed: list[Path], damage: str) -> None:
    collect_table(computed, "reference.csv", CONFIG, ARTIFACT)
    reference = read_table("reference.csv")
    victim = computed[-1]
    DAMAGE[damage](victim)
    assert verify(victim, points=plan(CONFIG).jobs(ARTIFACT)[victim.stem]) is not None
    collect_table(computed, "table.csv", CONFIG, ARTIFACT)
    assert read_table("table.csv") == reference
    assert verify(victim) is None  # recomputed, with a fresh record


@pytest.mark.parametrize("damage", ["truncated-at-row-boundary", "zero-byte", "no-digest-record"])
def test_workflow_finds_damaged_tables_before_planning(computed: list[Path], damage: str) -> None:
    """The cheap check of common.smk (sizes only) finds what changes a table's size."""
    DAMAGE[damage](computed[0])
    found = dict(damaged_job_tables(plan(CONFIG)))
    assert list(found) == [str(computed[0])], found


def test_digest_record_names_rows_and_points(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("a\n1\n")
    record = write_digest(path, rows=1, points=["p"])
    assert record["rows"] == 1 and record["points"] == ["p"]
    assert verify(path, points=["p"]) is None
    assert verify(path, points=["q"]) == "holds other points than the plan"
    os.truncate(path, 2)
    assert "truncated" in str(verify(path))
    assert verify(tmp_path / "absent.csv") == "missing"
