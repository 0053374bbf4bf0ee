"""Benchmark the general-service FCFS kernel (lbrepro.sim.general_service).

Usage, from the repository root with the virtual environment active::

    python bench/bench_general.py            # N = 10^4, λ = 0.9, d = 2, several distributions
    python bench/bench_general.py --quick    # shorter runs

Runs our kernel (after one call that excludes numba compilation) for exponential, Erlang-2,
hyperexponential, deterministic, Weibull, Lomax and lognormal service, and, when
``bench/refsim`` (the C anchor, compiled by bench/bench_kernel.py) exists, the C reference
on the same exponential workload, alternating ``--repeats`` times; reports the median events
per second of each and the ratio ours/C. Our kernel keeps every queue, an event calendar
(binary heap) and general service times, so it does strictly more work per event than the C
code, which is exponential-only. Results go to ``bench/results_general.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
from pathlib import Path

from lbrepro.models import service
from lbrepro.sim.general_service import simulate_general

REPO = Path(__file__).resolve().parent.parent
REFSIM = REPO / "bench" / "refsim"
DISTS = ("exp", "erlang:2", "hyperexp:4", "det", "weibull:0.5", "lomax:1.5", "lognormal:1")


def run_ours(spec: str, N: int, lam: float, d: int, horizon: float, warmup: float) -> float:
    r = simulate_general(
        dist=service.parse(spec),
        lam=lam,
        d=d,
        N=N,
        horizon=horizon,
        warmup=warmup,
        seed=12345,
        batches=10,
    )
    return r.events_per_second


def run_c(N: int, lam: float, d: int, horizon: float, warmup: float) -> float | None:
    if not REFSIM.exists():
        return None
    out = subprocess.run(
        [str(REFSIM), str(N), str(lam), str(d), str(horizon), str(warmup), "12345"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return float(out.split()[5])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--N", type=int, default=10_000)
    ap.add_argument("--lam", type=float, default=0.9)
    ap.add_argument("--d", type=int, default=2)
    ap.add_argument("--horizon", type=float, default=2000.0)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    horizon = 200.0 if a.quick else a.horizon
    warmup = horizon / 10
    run_ours("exp", 100, 0.5, 2, 10.0, 1.0)  # compile
    results: dict[str, object] = {"workload": vars(a) | {"horizon": horizon}}
    ours_exp, c_exp = [], []
    for _ in range(a.repeats):
        ours_exp.append(run_ours("exp", a.N, a.lam, a.d, horizon, warmup))
        c = run_c(a.N, a.lam, a.d, horizon, warmup)
        if c is not None:
            c_exp.append(c)
    per_dist = {"exp": statistics.median(ours_exp)}
    for spec in DISTS[1:]:
        per_dist[spec] = statistics.median(
            run_ours(spec, a.N, a.lam, a.d, horizon, warmup) for _ in range(a.repeats)
        )
    results["ours_events_per_second"] = per_dist
    if c_exp:
        results["c_events_per_second_exponential"] = statistics.median(c_exp)
        results["ratio_ours_over_c_exponential"] = per_dist["exp"] / statistics.median(c_exp)
    for k, v in per_dist.items():
        print(f"ours  {k:12s} {v / 1e6:6.2f} M events/s")
    if c_exp:
        print(
            f"C     exp          {statistics.median(c_exp) / 1e6:6.2f} M events/s  "
            f"(ratio ours/C = {results['ratio_ours_over_c_exponential']:.2f})"
        )
    (REPO / "bench" / "results_general.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
