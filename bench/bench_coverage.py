"""Coverage of the simulators' 95% confidence intervals on known answers.

Usage, from the repository root with the virtual environment active::

    nice python bench/bench_coverage.py               # >= 200 replications per case
    nice python bench/bench_coverage.py --reps 20     # a quick look (not a measurement)

Every case simulates a system whose stationary mean number of jobs per server is known,
``--reps`` times with independent seeds (streams (SEED, case, replication) of
``lbrepro.core.rng.stream``), through the same path the pipeline uses (``models.supermarket
.simulate``: sampled fixed-point start, micro-batches, MSER-5 warm-up, von Neumann batching,
AR(1)-corrected Student-t interval, sequential doubling while the batch means stay
correlated). Cases:

* ``mm1-rho0.5``, ``mm1-rho0.9``, ``mm1-rho0.99``: d = 1 is N independent M/M/1 queues,
  E[jobs per server] = ρ/(1 − ρ) exactly (N = 1);
* ``jsq2-N2-rho0.7``: JSQ on N = 2 servers (d = 2 without replacement), against the
  stationary law of the labelled two-queue CTMC truncated at 80 jobs per queue, solved
  exactly with scipy (truncated mass < 1e-11);
* ``sq2-N100-rho0.8``: SQ(2) at N = 100 against the refined mean field u + V/N (error
  O(1/N²), ~1e-4, well inside the intervals' ~1e-2 half-widths).

For each case the table gives the coverage (fraction of intervals containing the exact
value) with its Wilson 95% interval, the mean half-width, the mean warm-up used, the mean
number of batches, the fraction of runs whose batching converged and the mean horizon run.
The nominal 95% intervals must cover in >= 92% of replications. The table is printed and
written to ``src/lbrepro/report/coverage.json`` with the commit, date and command.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from lbrepro.core.rng import stream
from lbrepro.models import supermarket

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "src" / "lbrepro" / "report" / "coverage.json"
SEED = 20261201
REQUIRED = 0.92


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


def cases() -> list[dict[str, Any]]:
    """The coverage cases: systems with exactly known means and their run lengths."""
    rmf = supermarket.refined(0.8, 2)
    return [
        # horizon: the configured run; the method may discard more warm-up and double it.
        {"case": "mm1-rho0.5", "lam": 0.5, "d": 1, "N": 1, "horizon": 2.0e4, "warmup": 100.0,
         "exact": 0.5 / 0.5, "reference": "rho/(1-rho)"},
        {"case": "mm1-rho0.9", "lam": 0.9, "d": 1, "N": 1, "horizon": 2.0e5, "warmup": 500.0,
         "exact": 0.9 / 0.1, "reference": "rho/(1-rho)"},
        {"case": "mm1-rho0.99", "lam": 0.99, "d": 1, "N": 1, "horizon": 1.6e7, "warmup": 5000.0,
         "exact": 0.99 / 0.01, "reference": "rho/(1-rho)"},
        {"case": "jsq2-N2-rho0.7", "lam": 0.7, "d": 2, "N": 2, "replace": False,
         "horizon": 2.0e4, "warmup": 100.0, "exact": jsq_two_queues(0.7),
         "reference": "exact CTMC (truncated at 80 jobs per queue)"},
        {"case": "sq2-N100-rho0.8", "lam": 0.8, "d": 2, "N": 100, "horizon": 2.0e3,
         "warmup": 100.0, "exact": rmf.mean_jobs + rmf.mean_jobs_coefficient / 100,
         "reference": "refined mean field u + V/N"},
    ]  # fmt: skip


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval of a proportion k/n (the coverage's own uncertainty)."""
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def run_case(c: dict[str, Any], reps: int) -> dict[str, Any]:
    """Replicate one case and measure how often its interval covers the exact value."""
    hits, half, warm, batches, conv, horizon, values = [], [], [], [], [], [], []
    start = time.process_time()
    for r in range(reps):
        sim = supermarket.simulate(
            lam=c["lam"],
            d=c["d"],
            N=c["N"],
            horizon=c["horizon"],
            warmup=c["warmup"],
            seed=stream(SEED, c["case"], r),
            replace=c.get("replace", True),
        )
        lo, hi = sim.mean_jobs_ci
        hits.append(lo <= c["exact"] <= hi)
        half.append((hi - lo) / 2)
        warm.append(sim.warmup_used)
        batches.append(sim.batches)
        conv.append(sim.converged)
        horizon.append(sim.horizon)
        values.append(sim.mean_jobs)
    k = int(np.sum(hits))
    lo, hi = wilson(k, reps)
    return {
        "case": c["case"],
        "reference": c["reference"],
        "exact": c["exact"],
        "lam": c["lam"],
        "d": c["d"],
        "N": c["N"],
        "horizon_configured": c["horizon"],
        "warmup_min": c["warmup"],
        "replications": reps,
        "coverage": k / reps,
        "coverage_wilson95": [lo, hi],
        "mean_estimate": float(np.mean(values)),
        "mean_half_width": float(np.mean(half)),
        "mean_warmup_used": float(np.mean(warm)),
        "mean_batches": float(np.mean(batches)),
        "converged_fraction": float(np.mean(conv)),
        "mean_horizon_run": float(np.mean(horizon)),
        "cpu_seconds": time.process_time() - start,
        "pass": k / reps >= REQUIRED,
    }


def main(argv: list[str] | None = None) -> int:
    """Run every case, print the coverage table and write the record."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=200, help="replications per case (>= 200)")
    ap.add_argument("--case", action="append", help="run only these cases")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    rows = []
    for c in cases():
        if args.case and c["case"] not in args.case:
            continue
        row = run_case(c, args.reps)
        rows.append(row)
        print(
            f"{row['case']:<18} reps {row['replications']:>4}  coverage {row['coverage']:.3f} "
            f"[{row['coverage_wilson95'][0]:.3f}, {row['coverage_wilson95'][1]:.3f}]  "
            f"half-width {row['mean_half_width']:.4g}  warm-up {row['mean_warmup_used']:.4g}  "
            f"batches {row['mean_batches']:.1f}  converged {row['converged_fraction']:.2f}  "
            f"horizon {row['mean_horizon_run']:.3g}  cpu {row['cpu_seconds']:.0f}s",
            flush=True,
        )
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    record = {
        "what": "coverage of nominal 95% simulation confidence intervals on known answers",
        "method": "micro-batches, MSER-5 warm-up (configured warm-up a minimum), von Neumann "
        "batching (>= 20 batches), AR(1)-corrected Student-t, doubling while correlated "
        "(lbrepro.core.stats, lbrepro.sim.runlength)",
        "required": REQUIRED,
        "commit": commit,
        "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "produced_by": "nice python bench/bench_coverage.py " + " ".join(argv or sys.argv[1:]),
        "seed": SEED,
        "cases": rows,
    }
    args.out.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print(f"written to {args.out}")
    return 0 if all(r["pass"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
