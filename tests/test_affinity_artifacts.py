"""Affinity artifacts: points → compute → check → plot on small workloads."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pytest

from lbrepro.artifacts import registry
from lbrepro.core.errors import ConfigError, UnstableError
from lbrepro.core.rng import stream

SMALL = {
    "affinity-table1": {"N": 50, "k_max": 8},
    "affinity-stepfunctions": {"N": 50, "k": 3, "d": [25, 34]},
    "affinity-dstar": {"lam": [0.4, 0.5, 0.8], "mu2": [0.5, 0.3333333333333333]},
    "affinity-trajectories": {
        "lam": 0.8, "d1": 3, "n_traj": 3, "t_end": 60, "dt": 0.01, "n_record": 31, "K": 12,
        "tol": 1e-3,
    },
    "affinity-bistability": {
        "lam": 0.8, "d1": 25, "n_traj": 20, "t_end": 60, "dt": 0.01, "n_record": 31, "K": 12,
        "tol": 1e-3,
    },
    "affinity-basin": {"lam": 0.8, "d1": 25, "grid": 8, "t_end": 80, "dt": 0.01, "K": 12,
                       "tol": 1e-3},
    "affinity-bifurcation": {"lam": 0.8, "d1": 25, "d1_max": 30, "lam_grid": [0.3, 0.6, 0.8]},
    "affinity-sim-vs-fluid": {
        "lam": 0.8, "N": 2000, "cases": [[3, "empty"], [25, "type2"]], "horizon": 1500,
        "warmup": 50, "t_plot": 20, "dt_snap": 0.5,
    },
    "affinity-waiting": {
        "d1": 3, "lam_grid": [0.3, 0.6, 0.8], "lam_sim": [0.8], "N": 500, "horizon": 600,
        "warmup": 50,
    },
    "affinity-tunneling": {
        "lam": 0.8, "d1": 25, "N": [60, 70], "trace_N": [60], "horizon": 5000, "dt_snap": 0.5,
        "low": 0.1, "high": 0.7, "t_trace": 500, "N_exit": [150, 250], "exit_reps": 3,
        "exit_cap": 5000, "N_exit_queueing": [125, 200], "exit_cap_queueing": 2000,
    },
}  # fmt: skip

# Artifacts none of whose claims may come out "not reproduced" on these small workloads (a
# short simulation may leave a claim undecided, never wrongly decided).
MUST_PASS = {
    "affinity-table1",
    "affinity-stepfunctions",
    "affinity-dstar",
    "affinity-trajectories",
    "affinity-bistability",
    "affinity-basin",
    "affinity-bifurcation",
    "affinity-sim-vs-fluid",
}


def _run(aid: str):
    cfg = {"batches": 8, "replace": True} | SMALL[aid]
    art = registry.get(aid)
    art.validate(cfg)
    rows = []
    for pid, p in art.points(cfg).items():
        rows += [r | {"point": pid} for r in art.compute(p, stream(3, aid, pid))]
    claims = art.check(rows, cfg)
    if art.plot is not None:
        plt.close(art.plot(rows, cfg))
    if art.summary is not None:
        assert art.summary(rows)
    return rows, claims


@pytest.mark.slow
@pytest.mark.parametrize("aid", sorted(SMALL))
def test_artifact_runs(aid):
    rows, claims = _run(aid)
    assert rows and claims
    if aid in MUST_PASS:
        failed = [c.claim for c in claims if c.status == "not reproduced"]
        assert not failed, failed
    for c in claims:  # every verdict carries a control
        assert c.kind in ("consistency", "diagnostic") or c.control is not None, c.claim


@pytest.mark.slow
def test_published_numbers_are_checked_not_hard_coded():
    _, claims = _run("affinity-table1")
    table = next(c for c in claims if c.claim.startswith("Table 1"))
    assert table.measured == 4 and table.passed and "computed [31, 34, 36, 38]" in table.details


def test_validate_names_the_key():
    """Keys inside the section: the pipeline prefixes the artifact id (test_hostile_inputs)."""
    art = registry.get("affinity-basin")
    with pytest.raises(ConfigError, match=r"^mu2:"):
        art.validate(SMALL["affinity-basin"] | {"mu2": 1.5})
    with pytest.raises((ConfigError, UnstableError), match="lam"):
        art.validate(SMALL["affinity-basin"] | {"lam": 1.0})
    art = registry.get("affinity-tunneling")
    with pytest.raises(ConfigError, match=r"^d1:"):
        art.validate(SMALL["affinity-tunneling"] | {"N": [20]})


@pytest.mark.slow
def test_tables_round_trip_and_follow_the_contract(tmp_path):
    from lbrepro.core.io import read_table, write_table

    for aid in ("affinity-sim-vs-fluid", "affinity-tunneling"):
        rows, claims = _run(aid)
        for r in rows:
            if r["method"] == "sim":
                assert {"ci_low", "ci_high", "N", "seed"} <= set(r)
        path = tmp_path / f"{aid}.csv"
        write_table(rows, path)
        back = read_table(path)
        art = registry.get(aid)
        cfg = {"batches": 8, "replace": True} | SMALL[aid]
        again = art.check(back, cfg)
        assert [c.passed for c in again] == [c.passed for c in claims]
        plt.close(art.plot(back, cfg))
        assert art.summary(back)


def test_sim_vs_fluid_validate_checks_every_case():
    art = registry.get("affinity-sim-vs-fluid")
    with pytest.raises(ConfigError, match=r"^cases\[1\]\[0\]:"):
        art.validate(SMALL["affinity-sim-vs-fluid"] | {"N": 20})
