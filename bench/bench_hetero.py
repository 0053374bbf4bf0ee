"""Benchmark the heterogeneous policies of the occupancy kernel against its supermarket speed.

Usage, from the repository root with the virtual environment active::

    python bench/bench_hetero.py              # default: about 2e7 events per run, 3 repeats
    python bench/bench_hetero.py --quick      # 1/10 of the work, 1 repeat
    python bench/bench_hetero.py --stability  # CPU time of each hetero-stability bisection job

Workload H3 (spec §A): γ = (0.5, 0.3, 0.2), C = (1, 2, 4), d = (2, 2, 2), load
ρ = λ / (μ Σ γ_j C_j) = 0.9, N = 1000, under Scheme 1 and Scheme 2 (also with the
propagation-of-chaos statistics on). The reference is the supermarket kernel (one type,
d = 2, N = 1000, ρ = 0.9) measured in the same run: the runs alternate (reference, then each
heterogeneous policy) ``--repeats`` times, every run simulates about the same number of
events, and the report gives the median events per second (warm-up included, compilation
excluded) and the ratio to the reference — a ratio, because shared machines are noisy. The
issue's target is a ratio >= 0.7. Everything is printed and written to
``bench/results_hetero.json``.

``--stability`` instead times ``compute`` of every mean-field bisection point of
hetero-stability in ``config/config.yaml`` (one job each in the pipeline) and prints the CPU
and wall seconds per job with the boundaries found.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numba
import numpy as np

from lbrepro import pipeline
from lbrepro.artifacts import registry
from lbrepro.config import load_config
from lbrepro.core.rng import stream
from lbrepro.sim.occupancy import simulate_occupancy

BENCH = Path(__file__).resolve().parent
SEED = 12345
N = 1000
RHO = 0.9
H3 = {"gamma": (0.5, 0.3, 0.2), "capacity": (1.0, 2.0, 4.0), "d": (2, 2, 2)}
TARGET = 0.7


def horizon_for(lam: float, events: float) -> tuple[float, float]:
    """Horizon giving about ``events`` events (≈ 2λN per unit time), 10% of it warm-up."""
    horizon = events / (2.0 * lam * N)
    return horizon, 0.1 * horizon


def run(case: str, events: float) -> dict[str, Any]:
    """One timed run of ``case``: "supermarket", "scheme1", "scheme2" or "scheme1+chaos"."""
    if case == "supermarket":
        horizon, warmup = horizon_for(RHO, events)
        r = simulate_occupancy(lam=RHO, N=N, d=2, horizon=horizon, warmup=warmup, seed=SEED)
    else:
        policy, _, extra = case.partition("+")
        lam = RHO * sum(g * c for g, c in zip(H3["gamma"], H3["capacity"], strict=True))
        horizon, warmup = horizon_for(lam, events)
        r = simulate_occupancy(
            lam=lam,
            N=N,
            policy=policy,
            chaos=extra == "chaos",
            horizon=horizon,
            warmup=warmup,
            seed=SEED,
            **H3,
        )
    return {
        "events": r.events_total,
        "elapsed": r.elapsed,
        "events_per_second": r.events_per_second,
        "mean_jobs": r.mean_jobs,
        "route": r.route.tolist(),
    }


def stability_jobs() -> int:
    """CPU and wall time of each hetero-stability bisection job of the default config."""
    config = load_config(BENCH.parent / "config" / "config.yaml")
    artifact = registry.get("hetero-stability")
    for point, params in pipeline.points(config, artifact.id).items():
        if "ratios" not in params:
            continue  # a simulation job, not a bisection
        wall, cpu = time.perf_counter(), time.process_time()
        rows = artifact.compute(params, stream(int(config["seed"]), artifact.id, point))
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        found = [
            f"{r['policy']}@{r['ratio']:g}={r['value']:.6f}" for r in rows if r["method"] == "mf"
        ]
        print(f"{point}: cpu {cpu:.1f} s, wall {wall:.1f} s; {' '.join(found)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Time every case (repeats, median) and write bench/results_hetero.json."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=float, default=2.0e7, help="events per run")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="1/10 of the work, 1 repeat")
    parser.add_argument(
        "--stability", action="store_true", help="time the hetero-stability bisection jobs"
    )
    args = parser.parse_args(argv)
    if args.stability:
        return stability_jobs()
    if args.quick:
        args.events /= 10
        args.repeats = 1

    # Compilation (or cache loading) must not count: one tiny run of each code path.
    for case in ("supermarket", "scheme1", "scheme1+chaos"):
        run(case, 1.0e3)

    cases = ["supermarket", "scheme1", "scheme2", "scheme1+chaos"]
    runs: dict[str, list[dict[str, Any]]] = {c: [] for c in cases}
    for _ in range(args.repeats):
        for case in cases:
            runs[case].append(run(case, args.events))
    median = {c: statistics.median(x["events_per_second"] for x in runs[c]) for c in cases}
    ratio = {c: median[c] / median["supermarket"] for c in cases}

    print(f"\nH3: gamma={H3['gamma']} C={H3['capacity']} d={H3['d']} rho={RHO} N={N}")
    print(f"reference: supermarket d=2 N={N} rho={RHO}; seed {SEED}, median of {args.repeats}")
    print(f"{'':16s}{'events':>12s}{'events/s':>12s}{'ratio':>8s}{'mean jobs':>11s}")
    for c in cases:
        first = runs[c][0]
        print(
            f"{c:16s}{first['events']:>12d}{median[c]:>12.3e}{ratio[c]:>8.2f}"
            f"{first['mean_jobs']:>11.4f}"
        )
    worst = min(ratio["scheme1"], ratio["scheme2"])
    verdict = "meets" if worst >= TARGET else "MISSES"
    print(f"\nScheme 1/2 worst ratio {worst:.2f}: {verdict} the target {TARGET}")

    results = {
        "workload": {
            "H3": {k: list(v) for k, v in H3.items()},
            "rho": RHO,
            "N": N,
            "events_per_run": args.events,
            "seed": SEED,
            "repeats": args.repeats,
        },
        "events_per_second": median,
        "ratio_to_supermarket": ratio,
        "target_ratio": TARGET,
        "runs": runs,
        "machine": {
            "platform": platform.platform(),
            "processor": platform.processor(),
            "python": platform.python_version(),
            "numba": numba.__version__,
            "numpy": np.__version__,
            "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        },
    }
    out = BENCH / "results_hetero.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
