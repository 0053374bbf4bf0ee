"""Coverage of the simulators' confidence intervals on known answers, at the levels in use.

Usage, from the repository root with the virtual environment active::

    nice python bench/bench_coverage.py               # 100 replications per case (fewer
                                                      # where a case caps them for cost)
    nice python bench/bench_coverage.py --reps 20     # a quick look (not a measurement)

Every case simulates a system whose stationary means are known, ``--reps`` times with
independent seeds (streams (SEED, case, replication) of ``lbrepro.core.rng.stream``), through
the path the pipeline uses (sampled fixed-point start, micro-batches, MSER-5 warm-up, von
Neumann batching, AR(1)-corrected Student-t interval, sequential doubling while the batch
means stay correlated, then the conservative interval of few large batches of
``lbrepro.core.stats.fallback_batching``, which decides — flagged converged — unless the run
fails the relaxation check of ``lbrepro.sim.runlength.slow_run_problem``). Each interval is
checked as the verdicts use it (``lbrepro.core.verdicts``): its half-width (the unclipped side)
times the Bonferroni widening ``bonferroni_factor(batches, m)`` for a family of m comparisons,
at three levels: nominal 95% (m = 1), ×1.3 (m = 4.6, per-interval level 98.9%) and ×2
(m = 564, per-interval level 99.991%; the widening is ×1.3 and ×2 for many batches, more for
few). Cases:

* ``mm1-rho0.5`` (with tail fractions u_k = ρ^k down to rarely observed levels),
  ``mm1-rho0.9``: d = 1, N = 1 is an M/M/1 queue, E[jobs] = ρ/(1 − ρ) exactly;
* ``mm1-rho0.99``: the same at heavy load, on a horizon of ~25 relaxation times: slow mixing;
* ``jsq2-N2-rho0.7``: JSQ on N = 2 servers against the exact CTMC (truncated at 80 jobs);
* ``sq2-N100-rho0.8``: SQ(2) at N = 100 against the refined mean field u + V/N (O(1/N²));
* ``sm-d1-rho0.9-N200-quick``: supermarket-tail's d = 1, ρ = 0.9 point of the quick profile
  (N = 200 independent M/M/1 queues, horizon 4000, 10 batches, one doubling): E[jobs] = 9,
  u_k = ρ^k; the issue's "converged: false" case (slow mixing);
* ``sm-d1-rho0.99-N20``: d = 1 at ρ = 0.99, N = 20, horizon 2·10⁴: slower still;
* ``sm-d1-rho0.95-N1000-short``: the supermarket mean field at large N (d = 1, N = 1000,
  ρ = 0.95) on ~2 relaxation times in time but N·T/τ ≈ 1900: the run the relaxation floor
  summed over servers alone would pass (30 replications: each is ~6·10⁶ events or more);
* ``lomax1.5-d2-rho0.7``: general service, Lomax α = 1.5 (infinite variance: long-range
  dependent queue lengths), d = 2, N = 100: u₁ = ρ exactly by work conservation, one run
  (no doubling) as general-tail makes it.

For each case and quantity the table gives the coverage at each level, over the runs flagged
converged (the only ones verdicts decide on: those whose batch means passed and the slowly
mixing ones that passed the relaxation check, with their conservative interval) and over all
runs (the not-converged ones with their fallback interval), with Wilson 95% intervals, the
mean half-width, warm-up, batches and horizon, how many runs were slowly mixing (took the
conservative interval) and how many ended not converged. The converged runs' nominal
coverage must be >= 93% (where there are >= 50 of them) and each level's misses
consistent with its nominal level (at most the binomial count's 99th percentile). The table
is printed and written to ``src/lbrepro/report/coverage.json`` with the commit, date and
command; ``--case`` runs a subset and ``--merge`` adds its cases to an existing record (two
processes, one record).
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from scipy.stats import binom

from lbrepro.core.rng import stream
from lbrepro.core.stats import bonferroni_factor
from lbrepro.models import service, supermarket
from lbrepro.report.records import interval_code
from lbrepro.sim import runlength
from lbrepro.sim.general_service import simulate_general
from lbrepro.sim.runlength import event_budget

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "src" / "lbrepro" / "report" / "coverage.json"
SEED = 20261201
REQUIRED = 0.93
#: What is known about a case that fails, shown beside it in the record (a failure stays one).
KNOWN = {
    "mm1-rho0.99": "runs of ~100 relaxation times (N·T/τ < MIN_RELAXATIONS = 500): every run "
    "is now reported not converged, whatever its batch means look like. Before that floor the "
    "third whose batch means passed the von Neumann test were those whose path happened to be "
    "calm, with an underestimated variance (49/69 covered, the record of dee4238). At 16x the "
    "horizon (~1500 relaxation times, the record of accff6c) 98.5% converged and 94.5% "
    "covered: such a point needs a run that long.",
    "mm1-rho0.5": "the mean, u_1 and u_4 cover at every level; tail fractions of a single "
    "queue seen through a few dozen excursions (u_8 = 0.0039, effective count ~6) cover 91.5% "
    "nominal with the effective-count interval (82% with the symmetric t) and miss 3-10 of "
    "43-200 at x2 (u_8 to u_14, widened symmetrically as the verdicts do): rare levels' "
    "widened intervals are too short; rarer levels are often not reported at all.",
}
#: The levels checked: name, family size m, per-interval nominal level 1 − 0.05/m.
LEVELS = (("nominal", 1.0), ("x1.3", 4.6), ("x2", 564.0))


def jsq_two_queues(lam: float, cap: int = 80) -> float:
    """Exact E[jobs per server] of JSQ on two unit-rate servers, total arrival rate 2λ.

    Labelled states (n1, n2) in [0, cap]²; an arrival joins the shorter queue (ties: each
    with probability 1/2) and is lost at the cap (mass there < 1e-11 at λ = 0.7).
    """
    L = cap + 1
    idx = np.arange(L * L).reshape(L, L)
    rows, cols, vals = [], [], []
    for a in range(L):
        for b in range(L):
            s = idx[a, b]
            targets: list[tuple[int, float]] = []
            if a < b and a < cap:
                targets.append((idx[a + 1, b], 2 * lam))
            elif b < a and b < cap:
                targets.append((idx[a, b + 1], 2 * lam))
            elif a == b and a < cap:
                targets += [(idx[a + 1, b], lam), (idx[a, b + 1], lam)]
            if a > 0:
                targets.append((idx[a - 1, b], 1.0))
            if b > 0:
                targets.append((idx[a, b - 1], 1.0))
            for t, r in targets:
                rows.append(s)
                cols.append(t)
                vals.append(r)
    n = L * L
    Q = sp.csr_matrix((vals, (rows, cols)), shape=(n, n))
    Q = Q - sp.diags(np.asarray(Q.sum(axis=1)).ravel())
    A = Q.T.tolil()
    A[0, :] = 1.0  # replace one balance equation by the normalisation
    rhs = np.zeros(n)
    rhs[0] = 1.0
    pi = spla.spsolve(A.tocsc(), rhs)
    grid = np.add.outer(np.arange(L), np.arange(L))
    edge = pi.reshape(L, L)[cap, :].sum() + pi.reshape(L, L)[:, cap].sum()
    assert edge < 1e-9, edge
    return float((pi.reshape(L, L) * grid).sum() / 2.0)


Quantity = tuple[str, float, Callable[[Any], tuple[float, float, float]]]


def _mean_jobs(sim: Any) -> tuple[float, float, float]:
    return sim.mean_jobs, *sim.mean_jobs_ci


def _u(k: int) -> Callable[[Any], tuple[float, float, float]]:
    """The tail fraction u_k (servers with >= k jobs) of a run; NaN when not reported."""

    def get(sim: Any) -> tuple[float, float, float]:
        u, lo, hi = (
            (sim.u_all, sim.u_all_ci_low, sim.u_all_ci_high)
            if hasattr(sim, "u_all")
            else (sim.u, sim.u_ci_low, sim.u_ci_high)
        )
        if k >= len(u):
            return math.nan, math.nan, math.nan
        return float(u[k]), float(lo[k]), float(hi[k])

    return get


def _supermarket(**kw: Any) -> Callable[[Any], Any]:
    return lambda seed: supermarket.simulate(seed=seed, **kw)


def _general(spec: str, **kw: Any) -> Callable[[Any], Any]:
    dist = service.parse(spec)
    return lambda seed: simulate_general(dist=dist, seed=seed, **kw)


def cases() -> list[dict[str, Any]]:
    """The coverage cases: systems with exactly known means, their runs and quantities."""
    rmf = supermarket.refined(0.8, 2)
    mm1 = lambda rho: [("mean_jobs", rho / (1 - rho), _mean_jobs)]  # noqa: E731
    tails = lambda rho, ks: [(f"u{k}", rho**k, _u(k)) for k in ks]  # noqa: E731
    return [
        # horizon: the configured run; the method may discard more warm-up and double it.
        {"case": "mm1-rho0.5", "reference": "rho/(1-rho), u_k = rho^k",
         "run": _supermarket(lam=0.5, d=1, N=1, horizon=2.0e4, warmup=100.0),
         "quantities": mm1(0.5) + tails(0.5, (1, 4, 8, 10, 12, 13, 14))},
        {"case": "mm1-rho0.9", "reference": "rho/(1-rho)",
         "run": _supermarket(lam=0.9, d=1, N=1, horizon=2.0e5, warmup=500.0),
         "quantities": mm1(0.9)},
        {"case": "mm1-rho0.99", "reference": "rho/(1-rho)", "slow": True, "reps": 50,
         "run": _supermarket(lam=0.99, d=1, N=1, horizon=1.0e6, warmup=5000.0),
         "quantities": mm1(0.99)},
        {"case": "jsq2-N2-rho0.7", "reference": "exact CTMC (truncated at 80 jobs per queue)",
         "run": _supermarket(lam=0.7, d=2, N=2, horizon=2.0e4, warmup=100.0, replace=False),
         "quantities": [("mean_jobs", jsq_two_queues(0.7), _mean_jobs)]},
        {"case": "sq2-N100-rho0.8", "reference": "refined mean field u + V/N",
         "run": _supermarket(lam=0.8, d=2, N=100, horizon=2.0e3, warmup=100.0),
         "quantities": [("mean_jobs", rmf.mean_jobs + rmf.mean_jobs_coefficient / 100,
                         _mean_jobs)]},
        {"case": "sm-d1-rho0.9-N200-quick", "reference": "rho/(1-rho), u_k = rho^k",
         "slow": True, "extend": 1,
         "run": _supermarket(lam=0.9, d=1, N=200, horizon=4000.0, warmup=400.0, batches=10),
         "quantities": mm1(0.9) + tails(0.9, (2, 6, 12))},
        {"case": "sm-d1-rho0.99-N20", "reference": "rho/(1-rho)", "slow": True, "reps": 50,
         "run": _supermarket(lam=0.99, d=1, N=20, horizon=2.0e4, warmup=1000.0),
         "quantities": mm1(0.99)},
        # The supermarket mean field at large N, d = 1 (N independent M/M/1 queues), on a run
        # that passes N·T/τ >= 500 (~1900) but spans ~2 relaxation times in time: the case
        # where summing over servers is lenient. Costlier per run: fewer replications.
        {"case": "sm-d1-rho0.95-N1000-short", "reference": "rho/(1-rho)", "slow": True,
         "reps": 30,
         "run": _supermarket(lam=0.95, d=1, N=1000, horizon=3000.0, warmup=300.0),
         "quantities": mm1(0.95)},
        {"case": "lomax1.5-d2-rho0.7", "reference": "u_1 = rho (work conservation)",
         "slow": True, "extend": 0,
         "run": _general("lomax:1.5", lam=0.7, d=2, N=100, horizon=2000.0, warmup=200.0),
         "quantities": [("u1", 0.7, _u(1))]},
    ]  # fmt: skip


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval of a proportion k/n (the coverage's own uncertainty)."""
    if n == 0:
        return math.nan, math.nan
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def allowed_misses(n: int, m: float) -> int:
    """The most misses of n intervals at per-interval level 1 − 0.05/m that are not evidence
    of under-coverage (the binomial's 99th percentile)."""
    return int(binom.ppf(0.99, n, 0.05 / m))


class _Fallbacks:
    """Counts the runs that took the fallback interval and their batches' lag-1 correlation
    (a wrapper of runlength.fallback_batching: the results are unchanged)."""

    def __init__(self) -> None:
        self.real = runlength.fallback_batching
        self.lag1: list[float] = []

    def __call__(self, main: Any, batching: Any, **kw: Any) -> Any:
        b = self.real(main, batching, **kw)
        self.lag1.append(b.lag1)
        return b


def _coverage(hits: list[bool]) -> dict[str, Any]:
    k, n = int(np.sum(hits)), len(hits)
    return {"n": n, "covered": k, "coverage": k / n if n else None, "wilson95": wilson(k, n)}


def run_case(c: dict[str, Any], reps: int) -> dict[str, Any]:
    """Replicate one case and measure how often its intervals cover the exact values."""
    per_q: dict[str, dict[str, list]] = {
        q[0]: {"hit": [], "conv": [], "half": [], "value": [], "missing": []}
        for q in c["quantities"]
    }
    warm, batches, conv, horizon, fallback = [], [], [], [], []
    start = time.process_time()
    spy = _Fallbacks()
    runlength.fallback_batching = spy
    try:
        with event_budget(None, c.get("extend")):
            for r in range(reps):
                n_before = len(spy.lag1)
                sim = c["run"](stream(SEED, c["case"], r))
                fallback.append(len(spy.lag1) > n_before)
                warm.append(sim.warmup_used)
                batches.append(sim.batches)
                conv.append(bool(sim.converged))
                horizon.append(sim.horizon)
                for name, exact, get in c["quantities"]:
                    mean, lo, hi = get(sim)
                    rec = per_q[name]
                    if math.isnan(lo):
                        rec["missing"].append(True)
                        continue
                    half = max(hi - mean, mean - lo)
                    rec["hit"].append(
                        [
                            abs(mean - exact) <= bonferroni_factor(sim.batches, m) * half
                            for _, m in LEVELS
                        ]
                    )
                    rec["conv"].append(bool(sim.converged))
                    rec["half"].append(half)
                    rec["value"].append(mean)
    finally:
        runlength.fallback_batching = spy.real
    quantities = []
    ok = True
    for name, exact, _ in c["quantities"]:
        rec = per_q[name]
        hits = np.array(rec["hit"], dtype=bool).reshape(-1, len(LEVELS))
        cmask = np.array(rec["conv"], dtype=bool)
        levels = {}
        for i, (label, m) in enumerate(LEVELS):
            every = _coverage(list(hits[:, i]))
            trusted = _coverage(list(hits[cmask, i]))
            misses = trusted["n"] - trusted["covered"]
            # The >= 93% floor where the count can show it (50 runs); misses always.
            need = REQUIRED if m == 1 and trusted["n"] >= 50 else None
            passed = trusted["n"] == 0 or (
                (misses <= allowed_misses(trusted["n"], m))
                and (need is None or trusted["coverage"] >= need)
            )
            ok &= passed
            levels[label] = {
                "family_size": m,
                "per_interval_level": 1 - 0.05 / m,
                "all_runs": every,
                "converged_runs": trusted,
                "allowed_misses": allowed_misses(trusted["n"], m),
                "pass": passed,
            }
        quantities.append(
            {
                "quantity": name,
                "exact": exact,
                "reported": len(rec["hit"]),
                "not_reported": len(rec["missing"]),
                "mean_estimate": float(np.mean(rec["value"])) if rec["value"] else None,
                "mean_half_width": float(np.mean(rec["half"])) if rec["half"] else None,
                "levels": levels,
            }
        )
    main_q = quantities[0]["levels"]["nominal"]
    return {
        "case": c["case"],
        "reference": c["reference"],
        "slow_mixing": bool(c.get("slow", False)),
        "extend": c.get("extend", runlength.DEFAULT_EXTEND),
        "replications": reps,
        # The first quantity's figures in the old layout (render.coverage_table reads these).
        "coverage": main_q["converged_runs"]["coverage"],
        "coverage_wilson95": main_q["converged_runs"]["wilson95"],
        "coverage_all_runs": main_q["all_runs"]["coverage"],
        "coverage_x1.3": quantities[0]["levels"]["x1.3"]["converged_runs"]["coverage"],
        "coverage_x2": quantities[0]["levels"]["x2"]["converged_runs"]["coverage"],
        "exact": quantities[0]["exact"],
        "mean_estimate": quantities[0]["mean_estimate"],
        "mean_half_width": quantities[0]["mean_half_width"],
        "mean_warmup_used": float(np.mean(warm)),
        "mean_batches": float(np.mean(batches)),
        "fallback_fraction": float(np.mean(fallback)),
        "fallback_lag1_median": float(np.median(spy.lag1)) if spy.lag1 else None,
        "converged_fraction": float(np.mean(conv)),
        "mean_horizon_run": float(np.mean(horizon)),
        "cpu_seconds": time.process_time() - start,
        "quantities": quantities,
        "pass": ok,
        **({"note": KNOWN[c["case"]]} if not ok and c["case"] in KNOWN else {}),
    }


def _line(row: dict[str, Any]) -> str:
    """One case's summary, then one line per quantity (coverage of converged runs)."""
    out = [
        f"{row['case']:<24} reps {row['replications']:>4}  converged "
        f"{row['converged_fraction']:.2f}  fallback {row['fallback_fraction']:.2f}  batches "
        f"{row['mean_batches']:.1f}  horizon {row['mean_horizon_run']:.3g}  cpu "
        f"{row['cpu_seconds']:.0f}s  {'pass' if row['pass'] else 'FAIL'}"
    ]
    for q in row["quantities"]:
        cells = []
        for label, _ in LEVELS:
            lv = q["levels"][label]
            t, a = lv["converged_runs"], lv["all_runs"]
            cells.append(f"{label} {t['covered']}/{t['n']} (all {a['covered']}/{a['n']})")
        out.append(
            f"    {q['quantity']:<10} exact {q['exact']:<10.4g} "
            f"half {q['mean_half_width'] or 0:.3g}  "
            + "  ".join(cells)
            + (f"  not reported {q['not_reported']}" if q["not_reported"] else "")
        )
    return "\n".join(out)


def _commit() -> str:
    """HEAD's hash, with "+dirty" if tracked files under src/ or bench/ differ from it."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "diff", "--quiet", "HEAD", "--", "src/lbrepro", "bench"], cwd=ROOT
        ).returncode
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def main(argv: list[str] | None = None) -> int:
    """Run every case, print the coverage table and write the record."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=100, help="replications per case (>= 100)")
    ap.add_argument("--case", action="append", help="run only these cases")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--merge", action="store_true", help="add the cases to the --out record")
    args = ap.parse_args(argv)
    # The commit the code was measured at: taken before the cases run, so committing during a
    # long run does not mislabel it; a tree with uncommitted changes is marked "+dirty".
    commit = _commit()
    rows = []
    for c in cases():
        if args.case and c["case"] not in args.case:
            continue
        row = run_case(c, min(args.reps, c.get("reps", args.reps)))
        rows.append(row)
        print(_line(row), flush=True)
    record = {
        "what": "coverage of simulation confidence intervals on known answers, at the nominal "
        "95% level and Bonferroni-widened as the verdicts use them (x1.3: m = 4.6, x2: m = 564)",
        "method": "micro-batches, MSER-5 warm-up (configured warm-up a minimum), von Neumann "
        "batching (>= the batch floor), AR(1)-corrected Student-t, doubling while correlated, "
        "then the conservative interval of 10 large batches (t, 9 dof), which decides "
        "(converged = True) unless the run fails the relaxation check (N·T/τ >= 500 and >= 5 "
        "measured correlation times; converged = False) (lbrepro.core.stats, "
        "lbrepro.sim.runlength); 'coverage' is over the runs flagged converged, as the "
        "verdicts use them, 'coverage_all_runs' includes the not-converged ones; "
        "'fallback_fraction' is the share of slowly mixing runs (conservative interval)",
        "required": REQUIRED,
        "levels": [
            {"name": n, "family_size": m, "per_interval_level": 1 - 0.05 / m} for n, m in LEVELS
        ],
        "commit": commit,
        # the digest of lbrepro.core and lbrepro.sim: the report shows this record as the
        # coverage of a run's intervals only when the run's code has the same digest
        "interval_code": interval_code(),
        "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "produced_by": "nice python bench/bench_coverage.py " + " ".join(argv or sys.argv[1:]),
        "seed": SEED,
        "cpu_minutes": round(sum(r["cpu_seconds"] for r in rows) / 60, 1),
        "cases": rows,
    }
    if args.merge and args.out.is_file():
        before = json.loads(args.out.read_text(encoding="utf-8"))
        if before.get("commit") != commit or before.get("interval_code") != interval_code():
            raise SystemExit(f"{args.out} was measured at {before.get('commit')}, not {commit}")
        mine = {r["case"] for r in rows}
        record["cases"] = [c for c in before["cases"] if c["case"] not in mine] + rows
        order = [c["case"] for c in cases()]
        record["cases"].sort(key=lambda r: order.index(r["case"]) if r["case"] in order else 99)
        record["produced_by"] = before["produced_by"] + "; " + record["produced_by"]
        record["cpu_minutes"] = round(before.get("cpu_minutes", 0) + record["cpu_minutes"], 1)
    args.out.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print(f"written to {args.out}")
    return 0 if all(r["pass"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
