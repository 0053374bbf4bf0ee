"""The extension round: which points run longer for an undecided claim, and how their rows
replace the first (lbrepro.extension), and the pipeline step that runs it end to end."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lbrepro.core.claims import Claim, make_claim
from lbrepro.core.verdicts import Component, Verdict, decide, estimate
from lbrepro.extension import (
    doublings_of,
    extended_params,
    lengthen,
    merge_extension,
    plan_extension,
)
from lbrepro.sim.runlength import recording_runs, run_micro_batches

CONTROL = (
    "a near miss",
    Verdict(outcome="not reproduced", measured=1.0, expected="", tolerance=""),
)


def claim(value: float, half: float, runs: tuple[str, ...], **kw: Any) -> Claim:
    """A verdict that ``value`` ± ``half`` lies above 0 (undecided when it straddles 0)."""
    verdict = decide([Component("x", value, half, 0.0, "above")], expected="x > 0", tolerance="95%")
    return make_claim("x > 0", verdict, control=CONTROL, distance="1 margin", runs=runs, **kw)


def test_a_straddling_claim_asks_for_the_length_that_decides_it():
    c = claim(0.05, 0.1, ("a", "b"))  # needs (0.1/0.05)^2 = 4x: two doublings
    assert c.status == "undecided" and c.length_needed == pytest.approx(4.0)
    assert plan_extension([c], {"a", "b"}, {}, extend=2) == {"a": 2, "b": 2}
    # beyond reach: fewer doublings allowed, or the run already doubled once
    assert plan_extension([c], {"a", "b"}, {}, extend=1) == {}
    assert plan_extension([c], {"a", "b"}, {"a": 1}, extend=2) == {}
    # allowed further: counted in configured lengths, a point that doubled once needs 2^3
    assert plan_extension([c], {"a", "b"}, {"a": 1}, extend=3) == {"a": 3, "b": 3}


def test_decided_invalid_unresolved_and_partial_claims_are_not_extended():
    decided = claim(0.5, 0.1, ("a",))
    unresolved = make_claim(
        "x > 0",
        decide([Component("x", 0.0, 0.0, 0.0, resolved=False)], expected="", tolerance=""),
        control=CONTROL,
        distance="1 margin",
        runs=("a",),
    )
    assert unresolved.status == "undecided" and unresolved.length_needed == math.inf
    from dataclasses import replace

    invalid = replace(claim(0.05, 0.1, ("a",)), invalid="1 of 1 estimates not converged")
    partial = claim(0.05, 0.1, ("a", "not-extendable"))
    no_runs = claim(0.05, 0.1, ())
    claims = [decided, unresolved, invalid, partial, no_runs]
    assert plan_extension(claims, {"a"}, {}, extend=4) == {}


def test_a_point_several_claims_ask_for_runs_at_the_longest_length_they_need():
    near = claim(0.05, 0.07, ("a",))  # ~2x: one doubling
    far = claim(0.05, 0.1, ("a", "b"))  # 4x: two
    assert plan_extension([near, far], {"a", "b"}, {}, extend=2) == {"a": 2, "b": 2}
    assert plan_extension([near], {"a", "b"}, {}, extend=2) == {"a": 1}


def test_extended_params_keep_integer_lengths_integer():
    assert extended_params({"slots": 1000, "p": 0.5}, "slots", 2) == {"slots": 4000, "p": 0.5}
    assert extended_params({"horizon": 250.0}, "horizon", 1) == {"horizon": 500.0}


def test_rows_of_a_longer_run_count_its_doublings_and_one_more_look():
    rows = [
        {"point": "a", "method": "sim", "quantity": "u", "value": 0.5, "doublings": 1},
        {"point": "a", "method": "mf", "quantity": "u", "value": 0.5},
    ]
    out = lengthen(rows, 2)
    assert out[0]["doublings"] == 3 and out[0]["looks"] == 2
    assert "doublings" not in out[1] and "looks" not in out[1]
    assert doublings_of(out) == {"a": 3}


def test_merge_replaces_the_extended_points_rows_in_place():
    rows = [{"point": p, "quantity": q} for p in "abc" for q in ("u", "v")]
    longer = [{"point": "b", "quantity": "u", "long": True}]
    merged = merge_extension(rows, longer)
    assert [r["point"] for r in merged] == ["a", "a", "b", "c", "c"]
    assert merged[2]["long"] is True
    with pytest.raises(ValueError, match="not in the job tables: z"):
        merge_extension(rows, [{"point": "z"}])


def test_recording_runs_sees_how_often_each_run_doubled():
    def run(needed: Any = None) -> None:
        rng = np.random.default_rng(1)
        series: list[float] = []

        def step(t_end: float) -> int:
            series.append(float(rng.normal()))
            return 100

        run_micro_batches(
            step,
            lambda: np.array(series),
            horizon=100.0,
            warmup=0.0,
            min_batches=5,
            events_per_time=1.0,
            extend=2,
            needed=needed,
        )

    with recording_runs() as runs:
        run(needed=lambda so_far: 3.0 / 2**so_far.doublings)  # 3x the first: two doublings
    assert [r.doublings for r in runs] == [2]
    # nested recorders: each sees the runs made while it is open, and only those
    with recording_runs() as outer:
        with recording_runs() as inner:
            pass
        run()
    assert len(outer) == 1 and inner == []


# ------------------------------------------------------------------ the pipeline step, end to end
def _toy(
    monkeypatch: pytest.MonkeyPatch, value: Any = None, spread: float = 0.1, run_suffix: str = ""
) -> tuple[dict[str, Any], str]:
    """A registered artifact without a simulator: point ``a`` gives x = 0.06 ± 0.1/√horizon
    (undecided at horizon 1, decided from horizon 4 on), point ``b`` x = 0.5 (decided);
    ``value(x, horizon)`` and ``spread`` change that; ``run_suffix`` makes its claims name
    runs its table does not hold."""
    from dataclasses import replace

    from lbrepro.artifacts import registry
    from lbrepro.core.rows import estimate_row
    from lbrepro.core.stats import Estimate

    def points(cfg: Any) -> dict[str, dict[str, Any]]:
        return {"a": {"x": 0.06, "horizon": 1.0}, "b": {"x": 0.5, "horizon": 1.0}}

    def compute(p: dict[str, Any], seed: np.random.SeedSequence) -> list[dict[str, Any]]:
        x = p["x"] if value is None else value(p["x"], p["horizon"])
        h = spread / math.sqrt(p["horizon"])
        est = Estimate.from_interval(x, x - h, x + h, batches=20, N=1, seed=0)
        return [{"method": "sim", "quantity": "x", "horizon": p["horizon"], **estimate_row(est)}]

    def check(rows: list[dict[str, Any]], cfg: Any) -> list[Claim]:
        out = []
        for r in rows:
            est = estimate(r)  # the row's estimate: its interval and looks
            verdict = decide(
                [Component("x", est.mean, est.half_width, 0.0)],
                expected="x > 0",
                tolerance="95%",
                estimates=[est],
            )
            out.append(
                make_claim(
                    f"{r['point']}: x > 0",
                    verdict,
                    control=CONTROL,
                    distance="1",
                    runs=[r["point"] + run_suffix],
                )
            )
        return out

    base = registry.get("whittle-gaps")
    toy = replace(
        base,
        id="toy-extend",
        points=points,
        compute=compute,
        check=check,
        cost=None,
        memory=lambda p: {},
        run_length="horizon",
    )
    monkeypatch.setitem(registry.ARTIFACTS, "toy-extend", toy)
    real_get = registry.get
    monkeypatch.setattr(registry, "get", lambda aid: toy if aid == "toy-extend" else real_get(aid))
    config = {"seed": 3, "simulation": {"extend": 2}, "toy-extend": {}}
    return config, "toy-extend"


def _compute_and_extend(
    config: dict[str, Any], aid: str, where: Path
) -> tuple[list[str], str, str, str]:
    """The toy's compute jobs and its extension, as the workflow runs them: the job tables,
    and the paths of the extension (written), the table and the checks (not yet)."""
    from lbrepro import pipeline

    jobs = []
    for job, pts in pipeline.jobs(config, aid).items():
        jobs.append(str(where / "jobs" / f"{job}.csv"))
        pipeline.compute_points(config, aid, pts, jobs[-1])
    extension, table, checks = (str(where / f) for f in ("ext.csv", "t.csv", "c.json"))
    pipeline.extend_points(config, aid, jobs, extension)
    return jobs, extension, table, checks


def test_the_pipeline_runs_an_undecided_point_longer_and_the_table_decides(tmp_path, monkeypatch):
    import json

    from lbrepro import pipeline
    from lbrepro.core.io import read_table

    config, aid = _toy(monkeypatch)
    assert pipeline.plan(config).extendable(aid)
    jobs, extension, table, checks = _compute_and_extend(config, aid, tmp_path)
    longer = read_table(extension)
    assert [(r["point"], r["horizon"], r["doublings"], r["looks"]) for r in longer] == [
        ("a", 4.0, 2, 2)
    ]
    pipeline.collect_table(jobs, table, config, aid, extension)
    pipeline.check_artifact(config, aid, table, checks)
    status = {
        c["claim"]: (c["status"], c.get("looks", 1))
        for c in json.loads(Path(checks).read_text(encoding="utf-8"))
    }
    assert status == {"a: x > 0": ("reproduced", 2), "b: x > 0": ("reproduced", 1)}

    # an extension that is not what its job wrote is run again, never collected as it is
    with open(extension, "a", encoding="utf-8") as fh:
        fh.write("toy-extend,a,sim,x,99\n")
    pipeline.collect_table(jobs, table, config, aid, extension)
    assert [r["value"] for r in read_table(table) if r["point"] == "a"] == [0.06]

    # with no doublings allowed nothing is extended, and the claim stays undecided
    config["simulation"]["extend"] = 0
    pipeline.extend_points(config, aid, jobs, extension)
    assert read_table(extension) == []
    pipeline.collect_table(jobs, table, config, aid, extension)
    pipeline.check_artifact(config, aid, table, checks)
    assert [c["status"] for c in json.loads(Path(checks).read_text(encoding="utf-8"))] == [
        "undecided",
        "reproduced",
    ]


def test_the_extension_looks_again_until_no_claim_is_within_reach(tmp_path, monkeypatch):
    """Sequential doubling a round at a time: a = 0.1 ± 0.12 at horizon 1 asks for 2x; at 2x it
    reads 0.06 ± 0.085 and asks for 2x more; at 4x 0.07 ± 0.06 is decided, after two rounds."""
    import json

    from lbrepro import pipeline
    from lbrepro.core.io import read_table

    drift = {1.0: 0.1, 2.0: 0.06, 4.0: 0.07}
    config, aid = _toy(monkeypatch, value=lambda x, h: drift[h] if x < 0.5 else x, spread=0.12)
    jobs, extension, table, checks = _compute_and_extend(config, aid, tmp_path)
    longer = read_table(extension)
    # the run of the second round: 4x, and two looks before it (the first table's, round 1's)
    assert [(r["point"], r["horizon"], r["doublings"], r["looks"]) for r in longer] == [
        ("a", 4.0, 2, 3)
    ]
    pipeline.collect_table(jobs, table, config, aid, extension)
    pipeline.check_artifact(config, aid, table, checks)
    entries = json.loads(Path(checks).read_text(encoding="utf-8"))
    assert [(c["status"], c.get("looks", 1)) for c in entries] == [
        ("reproduced", 3),
        ("reproduced", 1),
    ]


def test_a_claim_naming_a_run_its_table_lacks_fails_the_check_step(tmp_path, monkeypatch):
    """The step that checks an artifact verifies every claim's ``runs`` id names a point of
    its table, and fails in one line naming the artifact and the id (a gate by that id would
    reach nothing); nothing is written."""
    from lbrepro import pipeline
    from lbrepro.core.claims import RunsError

    config, aid = _toy(monkeypatch, run_suffix="-typo")
    config["simulation"]["extend"] = 0
    jobs, extension, table, checks = _compute_and_extend(config, aid, tmp_path)
    pipeline.collect_table(jobs, table, config, aid, extension)
    with pytest.raises(RunsError) as err:
        pipeline.check_artifact(config, aid, table, checks)
    assert str(err.value) == (
        "toy-extend: claim 'a: x > 0' reads run 'a-typo', which names no point of its table "
        "(and 1 more)"
    )
    assert not Path(checks).exists()


def test_unknown_runs_reads_the_point_and_run_columns():
    """A synthetic table: ids are read from ``point`` and, where a table has one, ``run``."""
    from lbrepro.core.claims import check_runs, unknown_runs
    from lbrepro.core.verdicts import exact

    rows = [
        {"artifact": "t", "point": "p1", "method": "sim", "quantity": "x"},
        {"artifact": "t", "point": "p2", "run": "p2-long", "method": "sim", "quantity": "x"},
    ]
    claims = [
        make_claim("one", exact(True, 1.0, "1"), control=CONTROL, distance="1", runs=["p1"]),
        make_claim("two", exact(True, 1.0, "1"), control=CONTROL, distance="1", runs=["p2-long"]),
        make_claim("three", exact(True, 1.0, "1"), control=CONTROL, distance="1", runs=["p3"]),
    ]
    assert unknown_runs(claims, rows) == [("three", "p3")]
    check_runs(claims[:2], rows, "t")
    with pytest.raises(ValueError, match=r"^t: claim 'three' reads run 'p3', which names no "):
        check_runs(claims, rows, "t")
