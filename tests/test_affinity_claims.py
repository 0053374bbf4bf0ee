"""Every claim check of the affinity artifacts passes on a synthetic table where its claim holds
(with its control failing) and fails on one where the claim is false. No simulation: the tables
are built here, from the model's closed forms where a check reads them."""

from __future__ import annotations

from fractions import Fraction

import pytest

from lbrepro.artifacts.affinity import (
    PAPER,
    basin,
    bifurcation,
    dstar,
    fluid_trajectories,
    judging,
    performance,
    queue_length,
    sim_vs_fluid,
    stepfunctions,
    table1,
    tunneling,
    waiting,
)
from lbrepro.core.claims import (
    CONSISTENCY,
    DEPENDS,
    DIAGNOSTIC,
    FAILS_EVERY,
    NOT_REPRODUCED,
    REPRODUCED,
    gate,
)
from lbrepro.core.claims import UNDECIDED as UNDECIDED_STATUS
from lbrepro.core.verdicts import EmptyComparisonError
from lbrepro.models import affinity as model


def assert_holds(claims):
    """All claims pass; each verdict has a near-miss control at a stated distance, and that
    control is not reproduced on the same table."""
    assert claims
    for c in gate(claims):
        d = c.to_dict()
        assert c.passed, (c.claim, c.measured, c.details, c.needs)
        if c.kind not in (CONSISTENCY, DIAGNOSTIC):
            assert c.control is not None and c.control["distance"], c.claim
            assert c.control["outcome"] != REPRODUCED, (c.claim, c.control)
            assert d["status"] == REPRODUCED
            assert isinstance(d["measured"], int | float), (c.claim, d["measured"])


def failed(claims, text):
    """The claims whose text contains ``text`` (at least one), all failed."""
    hits = [c for c in claims if text in c.claim]
    assert hits, [c.claim for c in claims]
    return all(not c.passed for c in hits)


def sim(value, half, N, batches=20, **extra):
    return {
        "method": "sim",
        "value": value,
        "ci_low": value - half,
        "ci_high": value + half,
        "N": N,
        "batches": batches,
        "converged": True,
        "seed": 1,
    } | extra


# ---------------------------------------------------------------------------------------
# affinity-table1


def table1_rows(N=50, k_max=5):
    """The table compute writes: d per k, the first-jump control's d and N ± 1's row."""
    return table1.compute({"N": N, "k_max": k_max}, None)


def test_table1_holds():
    assert_holds(table1.check(table1_rows(), {"N": 50}))


def test_table1_fails_on_a_wrong_row_and_a_wrong_shortcut():
    rows = table1_rows()
    rows[2]["value"] = 35  # k = 3: the published value is 34
    rows[3]["dominates_everywhere"] = False
    claims = table1.check(rows, {"N": 50})
    assert failed(claims, "Table 1")
    assert failed(claims, "Concavity shortcut")


def test_table1_control_reads_its_rows():
    # The N ± 1 rows of the table, not a computation in check: made equal to the published row,
    # the control reproduces it.
    rows = table1_rows()
    for r in rows:
        if r["quantity"] == "d_min_near":
            r["value"] = table1.PUBLISHED_TABLE1[r["k"]]
    claim = next(c for c in table1.check(rows, {"N": 50}) if c.claim.startswith("Table 1"))
    assert claim.passed and claim.control["passed"]


# ---------------------------------------------------------------------------------------
# affinity-stepfunctions


def steps_rows(N=50, k=3, ds=(25, 33, 34), relabel=None):
    rows = [
        {"method": "cf", "quantity": "f_ref", "value": float(v), "n": n, "exact": str(v)}
        for n, v in enumerate(model.f_ref(N, k))
    ]
    rows.append({"method": "cf", "quantity": "d_min", "value": model.table1_d(N, k), "N": N,
                 "k": k})  # fmt: skip
    for d in ds:
        src = (relabel or {}).get(d, d)
        rows += [
            {"method": "cf", "quantity": "f_aff", "value": float(v), "d": d, "n": n,
             "exact": str(v)}
            for n, v in enumerate(model.f_aff(N, src))
        ]  # fmt: skip
    return rows


def test_stepfunctions_hold():
    assert_holds(stepfunctions.check(steps_rows(), {"N": 50, "k": 3, "d": [25, 34]}))


def test_stepfunctions_fail_when_the_functions_are_swapped():
    # d = 34 carries d = 33's step function (below f_ref somewhere), d = 25 carries d = 34's.
    rows = steps_rows(relabel={34: 33, 25: 34})
    claims = stepfunctions.check(rows, {"N": 50, "k": 3, "d": [25, 34]})
    assert failed(claims, "d = 34 ≥ 34")
    assert failed(claims, "d = 25 < 34")
    assert Fraction(rows[0]["exact"]) == 0


# ---------------------------------------------------------------------------------------
# affinity-dstar


def dstar_rows(values=(1, 18, 46), confirms=True):
    lam_c = dstar._nearest_failing_load(0.8, 0.5, 1.0)
    control = {"method": "cf", "quantity": "dstar_control", "value": model.dstar(lam_c, 0.5),
               "lam": lam_c, "mu2": 0.5}  # fmt: skip
    return [
        {"method": "cf", "quantity": "dstar", "value": v, "lam": lam, "mu2": 0.5,
         "grid_confirms": confirms, "grid_confirms_shifted": None if v == 1 else False}
        for lam, v in zip((0.4, 0.8, 0.9), values, strict=True)
    ] + [control]  # fmt: skip


DSTAR_CFG = {"lam": [0.4, 0.8, 0.9], "mu2": [0.5]}


def test_dstar_holds():
    assert_holds(dstar.check(dstar_rows(), DSTAR_CFG))


def test_dstar_fails():
    claims = dstar.check(dstar_rows(values=(30, 2, 1), confirms=False), DSTAR_CFG)
    assert failed(claims, "λ = 0.8, μ2 = 0.5")
    assert failed(claims, "dense grid search")
    assert failed(claims, "increases with λ")


# ---------------------------------------------------------------------------------------
# affinity-trajectories and affinity-bistability


def limit(kind, distance, n, quantity="limit"):
    return {"method": "mf", "quantity": quantity, "value": 0, "traj": n, "kind": kind,
            "distance": distance, "stable": True, "distance_control": 0.08,
            "lam_control": 0.78}  # fmt: skip


TRAJ_CFG = {"lam": 0.8, "d1": 3, "tol": 1e-3}
BI_CFG = {"lam": 0.8, "d1": 25, "tol": 1e-3}


def test_trajectories_hold_and_fail():
    good = [limit("queueing", 1e-6, n) for n in range(10)]
    assert_holds(fluid_trajectories.check_trajectories(good, TRAJ_CFG, want_unique=True))
    bad = [*good[:-1], limit("queueing", 0.05, 9)]  # one trajectory did not converge
    assert failed(
        fluid_trajectories.check_trajectories(bad, TRAJ_CFG, want_unique=True), "converge"
    )
    other = [*good[:-1], limit("no-queueing", 1e-6, 9)]  # not the unique attractor
    assert failed(
        fluid_trajectories.check_trajectories(other, TRAJ_CFG, want_unique=True), "converge"
    )


def bistable_rows(n_queueing, n_total=120, distance=1e-8):
    rows = []
    for n in range(n_total):
        kind = "queueing" if n < n_queueing else "no-queueing"
        rows.append(limit(kind, distance, n, "limit" if n % 6 == 0 else "limit_extra"))
    return rows


def test_bistability_holds():
    assert_holds(
        fluid_trajectories.check_trajectories(bistable_rows(85), BI_CFG, want_unique=False)
    )


def test_bistability_fails_without_a_queueing_majority_or_convergence():
    claims = fluid_trajectories.check_trajectories(bistable_rows(55), BI_CFG, want_unique=False)
    assert failed(claims, "most trajectories")
    claims = fluid_trajectories.check_trajectories(bistable_rows(120), BI_CFG, want_unique=False)
    assert failed(claims, "most trajectories")  # all of them: the other point is never reached
    claims = fluid_trajectories.check_trajectories(
        bistable_rows(85, distance=0.01), BI_CFG, want_unique=False
    )
    assert failed(claims, "converge to one of the two")


# ---------------------------------------------------------------------------------------
# affinity-sim-vs-fluid

SVF_CFG = {"lam": 0.8, "cases": [[3, "empty"]], "mu1": 1.0, "mu2": 0.5}


def svf_rows(offset_c=0.0, at_lam=0.8, half=5e-4, N=2000, tunnel=0.0):
    """Simulated x[i, j] = the fixed point at ``at_lam`` + offset_c/N (at N and N/2)."""
    case = {"d1": 3, "start": "empty"}
    fp = model.queueing_fixed_point(0.8, 0.5, 1.0, 3)
    fpc = model.queueing_fixed_point(0.78, 0.5, 1.0, 3)
    x = model.queueing_fixed_point(at_lam, 0.5, 1.0, 3)
    rows = []
    for i in range(4):
        for j in range(2):
            rows.append({"method": "mf", "quantity": "fixed_point", "value": float(fp[i, j]),
                         "i": i, "j": j, "kind": "queueing"} | case)  # fmt: skip
            rows.append({"method": "mf", "quantity": "fixed_point_control",
                         "value": float(fpc[i, j]), "i": i, "j": j, "kind": "queueing",
                         "lam": 0.78} | case)  # fmt: skip
            for n in (N, N // 2):
                rows.append(sim(float(x[i, j]) + offset_c / n, half, n, quantity="x_mean",
                                i=i, j=j) | case)  # fmt: skip
    t2 = float(x[:, 1].sum())
    for n in (N, N // 2):
        rows.append({"method": "path", "quantity": "type2_batches", "value": t2, "low": t2 - 0.01,
                     "high": t2 + 0.01 + tunnel * (n == N // 2), "N": n} | case)  # fmt: skip
    sw = 0.5 * float(x[0, 1]) / at_lam
    for n in (N, N // 2):
        rows.append(sim(sw + offset_c / n, 4 * half, n, quantity="switch_fraction") | case)
    rows.append({"method": "mf", "quantity": "switch_fraction_control",
                 "value": 0.5 * float(fpc[0, 1]) / 0.78, "kind": "queueing"} | case)  # fmt: skip
    rows.append({"method": "cf", "quantity": "switch_fraction_formula",
                 "value": 0.5 * float(fp[0, 1]) / 0.8, "kind": "queueing"} | case)  # fmt: skip
    return rows + sim_vs_fluid.compute({"published": True, **sim_vs_fluid.FIG5}, None)


def test_sim_vs_fluid_holds():
    assert_holds(sim_vs_fluid.check(svf_rows(), SVF_CFG))


def test_sim_vs_fluid_states_the_one_over_n_remainder_and_judges_it():
    claims = sim_vs_fluid.check(svf_rows(offset_c=4.0), SVF_CFG)  # 0.002 at N = 2000
    c = next(c for c in claims if "settles" in c.claim)
    assert c.passed and "remainder at N = 2000 (x_N/2 − x_N): 0.002" in c.details
    claims = sim_vs_fluid.check(svf_rows(offset_c=40.0), SVF_CFG)  # 0.02: twice the margin
    assert failed(claims, "settles at the queueing fixed point")


def test_sim_vs_fluid_fails_at_the_wrong_load():
    claims = sim_vs_fluid.check(svf_rows(at_lam=0.77), SVF_CFG)
    assert failed(claims, "settles at the queueing fixed point")
    assert failed(claims, "immediate-switch fraction of arrivals")


def test_sim_vs_fluid_straddling_is_undecided():
    claims = sim_vs_fluid.check(svf_rows(half=0.02), SVF_CFG)
    c = next(c for c in claims if "settles" in c.claim)
    assert c.status == UNDECIDED_STATUS and c.needs


def test_sim_vs_fluid_a_run_that_left_its_state_invalidates_its_verdicts():
    claims = gate(sim_vs_fluid.check(svf_rows(tunnel=0.4), SVF_CFG))
    assert any(c.kind == DIAGNOSTIC and not c.passed for c in claims)
    c = next(c for c in claims if "settles" in c.claim)
    assert c.status == UNDECIDED_STATUS and "failed diagnostic" in c.invalid


def test_sim_vs_fluid_leaves_out_a_cell_the_run_cannot_observe():
    # d1 = 25 from type II: x21 ≈ 1.7e-6 at the fixed point, never observed (0 ± 0).
    case = {"d1": 25, "start": "type2"}
    fp = next(q for q in model.fixed_points(0.8, 0.5, 1.0, 25) if q.kind == "queueing").x
    fpc = next(q for q in model.fixed_points(0.78, 0.5, 1.0, 25) if q.kind == "queueing").x
    rows = []
    for i in range(4):
        for j in range(2):
            for q, x, lam in (("fixed_point", fp, 0.8), ("fixed_point_control", fpc, 0.78)):
                rows.append({"method": "mf", "quantity": q, "value": float(x[i, j]), "i": i,
                             "j": j, "kind": "queueing", "lam": lam} | case)  # fmt: skip
            for n in (2000, 1000):
                v = 0.0 if i >= 2 else float(fp[i, j])
                h = 0.0 if i >= 2 else 5e-4
                rows.append(sim(v, h, n, quantity="x_mean", i=i, j=j) | case)
    for n in (2000, 1000):
        rows.append({"method": "path", "quantity": "type2_batches", "value": 1.0, "low": 0.99,
                     "high": 1.0, "N": n} | case)  # fmt: skip
        rows.append(sim(0.125, 1e-3, n, quantity="switch_fraction") | case)
    rows.append({"method": "mf", "quantity": "switch_fraction_control", "value": 0.16,
                 "kind": "queueing"} | case)  # fmt: skip
    rows.append({"method": "cf", "quantity": "switch_fraction_formula", "value": 0.125,
                 "kind": "queueing"} | case)  # fmt: skip
    rows += sim_vs_fluid.compute({"published": True, **sim_vs_fluid.FIG5}, None)
    cfg = {"lam": 0.8, "cases": [[25, "type2"]], "mu1": 1.0, "mu2": 0.5}
    c = next(c for c in sim_vs_fluid.check(rows, cfg) if "settles" in c.claim)
    assert c.passed and "x(2, 1)" not in c.details.split("left out")[0]
    assert "left out" in c.details


def test_fig5_and_switch_fraction_are_consistency_checks():
    claims = sim_vs_fluid.check(svf_rows(), SVF_CFG)
    fig5 = next(c for c in claims if c.claim.startswith("Fig. 5"))
    assert fig5.kind == CONSISTENCY and fig5.passed and "Cardinaels et al. (2019)" in fig5.claim
    cells = {
        (r["i"], r["j"]): r["value"] for r in svf_rows() if r["quantity"] == "fig5_fixed_point"
    }
    assert sim_vs_fluid._fig5_verdict(cells, 0.8).passed
    at_079 = model.queueing_fixed_point(0.79, 0.5, 1.0, 3)
    assert not sim_vs_fluid._fig5_verdict({c: at_079[c] for c in cells}, 0.79).passed


def test_sim_vs_fluid_reads_the_published_closed_forms_from_its_table():
    rows = [r for r in svf_rows() if r["quantity"] != "fig5_switch_fraction"]
    with pytest.raises(EmptyComparisonError, match="published point"):
        sim_vs_fluid.check(rows, SVF_CFG)
    rows = [
        r | {"value": 0.3} if r["quantity"] == "fig5_switch_fraction" else r for r in svf_rows()
    ]
    claims = sim_vs_fluid.check(rows, SVF_CFG)
    assert not next(c for c in claims if "immediate switch" in c.claim).passed


# ---------------------------------------------------------------------------------------
# affinity-queue-length and affinity-waiting

LAMS = (0.6, 0.7, 0.8, 0.9)
PERF_CFG = {"d1": 3, "mu1": 1.0, "mu2": 0.5, "N": 1000}


def cf(policy, quantity, lam, value):
    return {"method": "cf", "policy": policy, "quantity": quantity, "lam": lam, "d1": 3,
            "value": value}  # fmt: skip


def perf_sim_rows(quantities, at_shift=0.0):
    """CM simulations at N and N/2 on the fixed-point formula (at λ − at_shift), tight CIs,
    beside the formulas at λ and its neighbouring load that their point writes."""
    rows = []
    for lam in (0.8,):
        rows += performance.formula_rows(lam, 0.5, 1.0, 3)
        perf = model.performance(lam - at_shift, 0.5, 1.0, 3)
        for q in quantities:
            for n in (1000, 500):
                v = perf["cm_" + q]
                rows.append(sim(v, 0.002 * v, n, policy="cm", quantity=q, lam=lam, d1=3))
    return rows


def ql_rows(cm_factor=1.1, var_factor=1.9, at_shift=0.0):
    rows = []
    for lam in (0.3, *LAMS):  # 0.3 ≤ μ2 is outside the claims' range
        jsq = lam**2
        rows += [
            cf("jsq", "wait_jobs", lam, jsq),
            cf("cm", "wait_jobs", lam, cm_factor * jsq),
            cf("ra", "wait_jobs", lam, 5 * jsq),
            cf("cm", "wait_var", lam, jsq),
            cf("jsq", "wait_var", lam, var_factor * jsq),
            cf("jsq", "jobs_var", lam, var_factor * jsq),
        ]
    return rows + perf_sim_rows(("wait_jobs", "wait_var"), at_shift)


def test_queue_length_holds():
    assert_holds(queue_length.check(ql_rows(), PERF_CFG))


def test_queue_length_fails():
    claims = queue_length.check(ql_rows(cm_factor=0.9, var_factor=1.0, at_shift=0.02), PERF_CFG)
    assert failed(claims, "slightly more waiting jobs")
    assert failed(claims, "almost twice")
    assert failed(claims, "agrees with the fixed-point formula")


def test_queue_length_slightly_is_a_stated_band_not_plus_69_percent():
    # CM/JSQ = 1.69: "slightly larger" (at most a quarter more) is not reproduced.
    claims = queue_length.check(ql_rows(cm_factor=1.69), PERF_CFG)
    assert failed(claims, "slightly more waiting jobs")


def test_queue_length_real_formulas_keep_the_paper_words_not_reproduced():
    rows = []
    for lam in LAMS:
        perf = model.performance(lam, 0.5, 1.0, 3)
        for key in performance.PERF_KEYS:
            policy, quantity = key.split("_", 1)
            rows.append(cf(policy, quantity, lam, perf[key]))
        rows.append(cf("jsq", "jobs_var", lam, performance.jsq_jobs_var(lam, 1.0, 3)))
    claims = queue_length.check(rows + perf_sim_rows(("wait_jobs", "wait_var")), PERF_CFG)
    assert failed(claims, "slightly more")  # CM/JSQ 1.37–1.70 at λ = 0.6–0.9
    assert failed(claims, "almost twice")  # Var ratio 0.70–0.90
    # both measures tried: waiting jobs 0.70–0.90, all jobs in system 1.29–2.81 at these λ
    (var,) = [c for c in claims if "almost twice" in c.claim]
    assert var.attribution["verdict"] == FAILS_EVERY
    assert var.finding == queue_length.FINDING_FIG6 and var.finding in PAPER.findings
    assert PAPER.findings[var.finding].source == "paper"


def test_queue_length_variance_depends_on_the_measure_where_the_readings_disagree():
    rows = ql_rows(var_factor=0.78)  # waiting jobs: 0.78, as the formulas at λ = 0.8
    rows = [r | {"value": 1.53 * r["value"] / 0.78} if r["quantity"] == "jobs_var" else r
            for r in rows]  # fmt: skip
    (var,) = [c for c in queue_length.check(rows, PERF_CFG) if "almost twice" in c.claim]
    att = var.attribution
    assert att["verdict"] == DEPENDS and var.finding is None  # ours, not the paper's
    assert [r["reading"] for r in att["readings"]] == ["waiting jobs", "jobs in system"]
    assert [r["status"] for r in att["readings"]] == [NOT_REPRODUCED, REPRODUCED]
    assert att["readings"][1]["measured"] == pytest.approx(1.53)


def test_affinity_findings_list_the_papers_and_lbrepros_apart():
    sources = {k: f.source for k, f in PAPER.findings.items()}
    assert sources[queue_length.FINDING_FIG6] == "paper"
    assert sources["affinity-type-one-remainder"] == "lbrepro"


def wt_rows(wi_factor=0.3, wii_factor=2.0, at_shift=0.0):
    rows = []
    for lam in LAMS:
        wj = lam
        rows += [
            cf("jsq", "wait_time", lam, wj),
            cf("ra", "wait_time", lam, wii_factor * wj + 1.0),
            cf("cm", "wait_time_I", lam, wi_factor * wj),
            cf("cm", "wait_time_II", lam, wii_factor * wj),
            cf("cm", "wait_time", lam, 1.5 * wj),
        ]
    return rows + perf_sim_rows(("wait_time_I", "wait_time_II", "wait_time"), at_shift)


def test_waiting_holds():
    assert_holds(waiting.check(wt_rows(), PERF_CFG))


def test_waiting_fails():
    claims = waiting.check(wt_rows(wi_factor=0.9, wii_factor=1.1, at_shift=0.02), PERF_CFG)
    assert failed(claims, "Type-II jobs wait fairly long")
    assert failed(claims, "Type-I jobs wait significantly less")
    assert failed(claims, "wait_time_I: the simulation with N")


def test_waiting_type_ii_below_ra_is_an_identity():
    claims = waiting.check(wt_rows(), PERF_CFG)
    c = next(c for c in claims if "less than under RA" in c.claim)
    assert c.kind == CONSISTENCY and c.passed


def test_waiting_small_type_i_wait_needs_its_ci_not_an_absolute_tolerance():
    # W_I ≈ 0.008 at λ = 0.6: a simulation 100% off (0.016, CI ±1%) must fail.
    v = model.performance(0.6, 0.5, 1.0, 3)["cm_wait_time_I"]
    rows = [cf("cm", "wait_time_I", 0.6, v), cf("jsq", "wait_time", 0.6, 0.2)]
    rows += [cf("ra", "wait_time", 0.6, 1.5), cf("cm", "wait_time_II", 0.6, 0.5)]
    rows += [cf("cm", "wait_time", 0.6, 0.3)]
    rows += performance.formula_rows(0.6, 0.5, 1.0, 3)
    for q, val in (("wait_time_I", 2 * v), ("wait_time_II", 0.5), ("wait_time", 0.336)):
        for n in (1000, 500):
            rows.append(sim(val, 0.01 * val, n, policy="cm", quantity=q, lam=0.6, d1=3))
    claims = waiting.check(rows, PERF_CFG)
    assert failed(claims, "wait_time_I: the simulation with N")


# ---------------------------------------------------------------------------------------
# affinity-basin


def basin_rows(separated=True, two=True):
    rows = []
    for n in range(10):
        q = n < 4 and two
        hi, lo = (0.7, 0.1) if separated else (0.1, 0.7)
        x01, x00 = (hi, lo) if q else (lo, hi - 0.1)  # the queueing basin has less x10 too
        rows.append({"method": "mf", "quantity": "limit", "value": 0.0,
                     "kind": "queueing" if q else "no-queueing", "x00": x00, "x01": x01,
                     "x10": 1 - x00 - x01, "distance": 1e-9})  # fmt: skip
        rows.append({"method": "mf", "quantity": "limit_control", "value": 0.0,
                     "kind": "queueing", "x00": x00, "x01": x01, "x10": 1 - x00 - x01,
                     "distance": 1e-9, "d1": 17})  # fmt: skip
    return rows


BASIN_CFG = {"lam": 0.8, "d1": 25, "tol": 1e-3}


def test_basin_holds():
    assert_holds(basin.check(basin_rows(), BASIN_CFG))


def test_basin_fails():
    assert failed(basin.check(basin_rows(two=False), BASIN_CFG), "both basins")
    assert failed(basin.check(basin_rows(separated=False), BASIN_CFG), "not converging")


# ---------------------------------------------------------------------------------------
# affinity-bifurcation


def bif_rows(ds=18, d1_max=30, break_at=None):
    rows = [{"method": "cf", "quantity": "dstar", "value": ds, "axis": "d1"}]
    for d1 in range(1, d1_max + 1):
        pts = [("queueing", True)]
        if d1 >= ds:
            pts += [("no-queueing", d1 != break_at), ("no-queueing", False)]
        for kind, stable in pts:
            rows.append({"method": "mf", "quantity": "u", "value": 0.1, "axis": "d1", "d1": d1,
                         "kind": kind, "stable": stable, "max_real_eig": -0.1 if stable else 0.5,
                         })  # fmt: skip
    return rows


BIF_CFG = {"lam": 0.8, "d1": 25, "d1_max": 30}


def test_bifurcation_holds():
    assert_holds(bifurcation.check(bif_rows(), BIF_CFG))


def test_bifurcation_fails():
    claims = bifurcation.check(bif_rows(break_at=25), BIF_CFG)
    assert failed(claims, "three for d1 ≥ d1*")
    assert failed(claims, "d1 = 25: two locally stable")


# ---------------------------------------------------------------------------------------
# affinity-tunneling

TUN_CFG = {"lam": 0.8, "d1": 25, "low": 0.1, "high": 0.7, "horizon": 5000, "mu1": 1.0,
           "mu2": 0.5}  # fmt: skip


def tun_rows(grow=True, switches=40, censored=2, fluid_switches=0):
    sign = 1 if grow else -1
    rows = []
    for i, N in enumerate((150, 250, 400)):
        m = 1000 + sign * 800 * i
        rows.append(sim(m, 150, N, batches=12, quantity="exit_time", censored=0, reps=12,
                        cap=1e5))  # fmt: skip
    for i, N in enumerate((125, 150, 200)):
        m = 10000 + sign * 4000 * i
        c = censored if i and grow else 0  # censored later points are lower bounds
        rows.append(sim(m, 1500, N, batches=12, quantity="queueing_exit_time", censored=c,
                        reps=12, cap=5e4))  # fmt: skip
    for i, N in enumerate((60, 80)):
        for state in ("queueing", "no-queueing"):
            m = 100 + sign * 60 * i
            rows.append(sim(m, 15, N, batches=30, quantity="residence", state=state, count=30,
                            switches=switches if N == 60 else 20))  # fmt: skip
        rows.append({"method": "mf", "quantity": "fluid_switches", "value": fluid_switches,
                     "N": N, "t_end": 500.0})  # fmt: skip
    return rows


def test_tunneling_holds():
    assert_holds(tunneling.check(tun_rows(), TUN_CFG))


def test_tunneling_fails_when_residences_shrink_or_nothing_switches():
    claims = tunneling.check(tun_rows(grow=False, switches=1), TUN_CFG)
    assert failed(claims, "no-queueing state increases with N (d1/N")
    assert failed(claims, "queueing state increases with N (d1/N")
    assert failed(claims, "mean residence near the queueing")
    assert failed(claims, "switches between")


def test_tunneling_control_reads_the_fluid_limit_row():
    # A fluid limit that switched too (the control's row, not a computation in check): the
    # control is reproduced.
    claims = tunneling.check(tun_rows(fluid_switches=3), TUN_CFG)
    claim = next(c for c in claims if "switches between" in c.claim)
    assert claim.passed and claim.control["passed"]


def test_tunneling_judges_only_small_d1_over_n():
    rows = tun_rows()
    # An exit time at N = 100 (d1/N = 0.25 > 0.2) that breaks the trend is not part of the claim.
    rows.append(sim(9e4, 10, 100, batches=12, quantity="exit_time", censored=0, reps=12, cap=1e5))
    claim = next(c for c in tunneling.check(rows, TUN_CFG) if "no-queueing state" in c.claim)
    assert claim.passed and "100:" not in claim.details


def test_tunneling_without_two_usable_n_fails_not_passes():
    rows = [r for r in tun_rows() if r["quantity"] != "exit_time" or r["N"] == 150]
    claim = next(c for c in tunneling.check(rows, TUN_CFG) if "no-queueing state" in c.claim)
    assert not claim.passed


def test_tunneling_runs_censored_at_the_cap_decide_nothing():
    # Every run censored at N = 150 and 200 (the 12/12): lower bounds only. Above the
    # N = 125 interval they confirm an increase; below it they are unresolved, never ±0.
    rows = [r for r in tun_rows() if r["quantity"] != "queueing_exit_time"]
    for N, m in ((125, 40000), (150, 5e4), (200, 5e4)):
        c = 0 if N == 125 else 12
        rows.append(sim(m, 5000 if not c else 0.0, N, batches=12, quantity="queueing_exit_time",
                        censored=c, reps=12, cap=5e4))  # fmt: skip
    claim = next(c for c in tunneling.check(rows, TUN_CFG) if "near the queueing state" in c.claim)
    assert claim.status == UNDECIDED_STATUS
    low, high, censored = judging.exit_bounds(rows[-1])
    assert censored and high == float("inf") and 0 < low < 5e4


def test_grows_with_a_censored_last_point_above_confirms():
    rows = [sim(1000, 100, 100, batches=12, censored=0, reps=12, cap=5e4),
            sim(5e4, 0.0, 200, batches=12, censored=12, reps=12, cap=5e4)]  # fmt: skip
    claim, flat = judging.grows(rows)
    assert claim.outcome == REPRODUCED and flat.outcome == NOT_REPRODUCED


def test_band_verdict_holds_fails_and_names_the_worst_ratio():
    v = judging.band_verdict({0.6: 1.1, 0.8: 1.2}, 1.0, 1.25, "r", "slightly")
    assert v.passed and v.measured == 1.2
    v = judging.band_verdict({0.6: 1.1, 0.8: 1.6}, 1.0, 1.25, "r", "slightly")
    assert v.outcome == NOT_REPRODUCED and v.measured == 1.6


@pytest.mark.parametrize(
    ("module", "check"),
    [(table1, "check"), (stepfunctions, "check"), (dstar, "check"),
     (fluid_trajectories, "check_trajectories"), (sim_vs_fluid, "check"), (basin, "check"),
     (bifurcation, "check"), (queue_length, "check"), (waiting, "check"), (tunneling, "check")],
)  # fmt: skip
def test_every_check_function_is_covered(module, check):
    assert callable(getattr(module, check))
