"""The six whittle artifacts end to end on small configs: points → compute → check/plot/summary."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import pytest

from lbrepro.artifacts.whittle import PAPER
from lbrepro.core.errors import ConfigError
from lbrepro.core.io import read_table, write_table
from lbrepro.core.rng import stream

ARTIFACTS = {a.id: a for a in PAPER.artifacts}
SIM = {"batches": 10, "replace": True, "runtime_min": 5, "mem_mb": 1000}
CFG = {
    "whittle-index-linear": {
        "p": [0.3, 0.6],
        "q": [0.2, 0.5, 0.8],
        "d": [1, 2, "inf"],
        "nmax": 12,
    },
    "whittle-index-meanvar": {
        "p": [0.3],
        "q": [0.5, 0.8],
        "d": [1, 5, "inf"],
        "nmax": 10,
        "beta": [1, 5],
    },
    "whittle-fcfs": {"p": [0.3, 0.7], "q": [0.2, 0.5, 1.0], "nmax": 40, "beta": [1]},
    "whittle-indexability": {"p": [0.3], "q": [0.5], "d": [1, "inf"], "mmax": 6, "beta": [5]},
    "whittle-compare": {
        "scenarios": [{"name": "S1", "d": [1, "inf"], "q": [0.5, 0.5], "p": [0.3, 0.6], "B": 16}],
        "beta": 1.0,
        "slots": 400_000,
        "warmup": 2000,
        "batches": 10,
    },
    "whittle-gaps": {
        "scenarios": [{"name": "S1", "d": [1, "inf"], "q": [0.5, 0.5], "p": [0.3, 0.6], "B": 16}],
        "beta": 1.0,
    },
}


def _run(aid: str, tmp_path) -> tuple[list, list]:
    art = ARTIFACTS[aid]
    cfg = SIM | CFG[aid]
    art.validate(cfg)
    rows = []
    for pid, params in art.points(cfg).items():
        rows += [r | {"point": pid} for r in art.compute(params, stream(7, aid, pid))]
    # through the CSV round trip, as the workflow does
    path = tmp_path / f"{aid}.csv"
    write_table(rows, path)
    back = read_table(path)
    claims = art.check(back, cfg)
    assert claims and all(isinstance(c.passed, bool) for c in claims)
    if art.plot is not None:
        fig = art.plot(back, cfg)
        fig.savefig(tmp_path / f"{aid}.png")
        plt.close(fig)
    assert art.summary is not None and art.summary(back)
    assert art.reconstructions
    return back, claims


@pytest.mark.slow
@pytest.mark.parametrize("aid", list(CFG))
def test_artifact_runs(aid: str, tmp_path) -> None:
    rows, claims = _run(aid, tmp_path)
    verdicts = {c.claim: c.passed for c in claims}
    if aid == "whittle-fcfs":
        assert all(verdicts.values()), claims
    if aid == "whittle-indexability":
        assert all(verdicts.values()), claims
    if aid == "whittle-index-linear":
        cf = next(c for c in claims if "closed-form" in c.claim)
        assert cf.passed
        # q ≤ p: overloaded servers, d changes the index by a large factor (lbrepro finding)
        heavy = next(c for c in claims if "overloaded" in c.claim)
        assert heavy.passed and not heavy.control["passed"]
    if aid == "whittle-compare":
        sim = next(c for c in claims if "simulated cost of the slotted" in c.claim)
        assert sim.outcome != "not reproduced", sim
    if aid in ("whittle-compare", "whittle-gaps"):
        gaps = [r for r in rows if r["quantity"] == "gap_pct" and r["policy"] == "optimal"]
        assert all(abs(r["value"]) < 1e-9 for r in gaps)
        others = [
            r
            for r in rows
            if r["quantity"] == "gap_pct" and r["value"] is not None and math.isfinite(r["value"])
        ]
        assert all(r["value"] > -1e-6 for r in others)


def test_point_ids_are_unique_and_stable() -> None:
    for aid, cfg in CFG.items():
        a = ARTIFACTS[aid].points(SIM | cfg)
        assert a == ARTIFACTS[aid].points(SIM | cfg)
        assert len(a) == len(set(a))


@pytest.mark.parametrize(
    ("aid", "patch", "key"),
    [
        ("whittle-index-linear", {"p": [1.2]}, "p[0]"),
        ("whittle-index-linear", {"q": [0.0]}, "q[0]"),
        ("whittle-index-linear", {"d": [0]}, "d[0]"),
        (
            "whittle-compare",
            {"scenarios": [{"name": "X", "d": [1, 2], "q": [0.3, 0.3], "p": [0.7]}]},
            "scenarios.X.p[0]",
        ),
        (
            "whittle-gaps",
            {"scenarios": [{"name": "X", "d": [1], "q": [0.3, 0.3], "p": [0.2]}]},
            "scenarios.X.d",
        ),
    ],
)
def test_validate_names_the_key(aid, patch, key) -> None:
    """A validator names the key inside its section; the pipeline prefixes the artifact id."""
    with pytest.raises(ConfigError) as err:
        ARTIFACTS[aid].validate(SIM | CFG[aid] | patch)
    assert err.value.key == key
    assert str(err.value.under(aid)).startswith(f"{aid}.{key}: ")


def test_compare_rows_deterministic() -> None:
    art = ARTIFACTS["whittle-compare"]
    cfg = SIM | CFG["whittle-compare"]
    pid, params = next(iter(art.points(cfg).items()))
    a = art.compute(params, stream(3, "whittle-compare", pid))
    b = art.compute(params, stream(3, "whittle-compare", pid))
    assert [r["value"] for r in a] == [r["value"] for r in b]
    assert np.isfinite([r["value"] for r in a if r["method"] == "sim"]).all()
