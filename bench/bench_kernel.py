"""Benchmark the occupancy kernel against the C reference simulator (the speed anchor).

Usage, from the repository root with the virtual environment active::

    python bench/bench_kernel.py                  # default workload + scaling tables
    python bench/bench_kernel.py --quick          # shorter runs, for a smoke test
    python bench/bench_kernel.py --refsim-source /path/to/refsim_supermarket.c \\
        --N 1000 --lam 0.9 --d 2 --horizon 20000 --warmup 1000 --repeats 3

It compiles ``refsim_supermarket.c`` with ``gcc -O3 -march=native`` into ``bench/refsim``
(source from ``--refsim-source``, default ``bench/refsim_supermarket.c``, the C reference
kept beside this script; without it only our kernel runs), calls
our kernel once to exclude numba compilation, then runs C and our kernel alternately
``--repeats`` times on the same JSQ(d) workload (samples with replacement, as the C code
does) and reports the median events per second of each and their ratio — a ratio, because
shared machines are noisy. Both count every event including warm-up. Events per second are
reported twice: per wall-clock second (what a user waits) and per CPU second (C: the child's
user + system time; ours: this process's CPU time around the whole call, validation and
estimates included), which stays meaningful when other processes load the machine. A
scaling table shows events/s for N = 100, 10^4, 10^6 (d = 2), and for d = 2 against d = N
without replacement (JSQ), which the C code cannot do in O(1) per event. Everything is
printed and written to ``bench/results.json``.
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numba
import numpy as np

from lbrepro.sim.occupancy import simulate_occupancy

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO / "bench"
DEFAULT_SOURCE = BENCH / "refsim_supermarket.c"
SEED = 12345
TAIL_LEVELS = 7


def compile_refsim(source: Path | None) -> Path | None:
    """Compile the C anchor into bench/refsim; None (with a message) if impossible."""
    candidates = [source] if source is not None else [DEFAULT_SOURCE]
    found = next((p for p in candidates if p is not None and p.is_file()), None)
    if found is None:
        print(
            "C reference not found (tried "
            + ", ".join(str(p) for p in candidates)
            + "): running only our kernel.",
            file=sys.stderr,
        )
        return None
    if shutil.which("gcc") is None:
        print("gcc not found: running only our kernel.", file=sys.stderr)
        return None
    binary = BENCH / "refsim"
    cmd = ["gcc", "-O3", "-march=native", "-o", str(binary), str(found), "-lm"]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        print(f"compiling {found} failed: running only our kernel.\n{proc.stderr}", file=sys.stderr)
        return None
    print(f"compiled {found} -> {binary}")
    return binary


def children_cpu() -> float:
    """CPU seconds (user + system) used so far by finished child processes."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_c(binary: Path, N: int, lam: float, d: int, horizon: float, warmup: float) -> dict:
    """Run the C simulator and parse its output (events, elapsed, events/s, s_1..s_7)."""
    args = [str(binary), str(N), repr(lam), str(d), repr(horizon), repr(warmup), str(SEED)]
    cpu = children_cpu()
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout.split()
    cpu = children_cpu() - cpu
    fields = dict(zip(out[0::2], out[1::2], strict=True))
    events = int(fields["events"])
    return {
        "events": events,
        "elapsed": float(fields["elapsed"]),
        "events_per_second": float(fields["events_per_s"]),
        "cpu": cpu,
        "cpu_events_per_second": events / cpu if cpu > 0 else float("nan"),
        "tail": [float(fields[f"s_{k}"]) for k in range(1, TAIL_LEVELS + 1)],
    }


def run_ours(
    N: int, lam: float, d: int, horizon: float, warmup: float, replace: bool = True
) -> dict:
    """Run our kernel; events/s counts warm-up events too, like the C code."""
    cpu = time.process_time()
    r = simulate_occupancy(
        lam=lam, N=N, d=d, horizon=horizon, warmup=warmup, seed=SEED, replace=replace
    )
    cpu = time.process_time() - cpu
    tail = [float(r.u_all[k]) if k < len(r.u_all) else 0.0 for k in range(1, TAIL_LEVELS + 1)]
    return {
        "events": r.events_total,
        "elapsed": r.elapsed,
        "events_per_second": r.events_per_second,
        "cpu": cpu,
        "cpu_events_per_second": r.events_total / cpu if cpu > 0 else float("nan"),
        "tail": tail,
        "tail_ci": [
            [float(r.u_all_ci_low[k]), float(r.u_all_ci_high[k])]
            if k < len(r.u_all)
            else [0.0, 0.0]
            for k in range(1, TAIL_LEVELS + 1)
        ],
    }


def median_eps(runs: list[dict], key: str = "events_per_second") -> float:
    """Median events per second over repeated runs (robust to a noisy shared machine);
    ``key`` "cpu_events_per_second" for events per CPU second."""
    return statistics.median(x[key] for x in runs)


def scaling_horizon(N: int, lam: float, events: float) -> tuple[float, float]:
    """Horizon giving about ``events`` events (≈ 2λN per unit time), 20% of it warm-up."""
    horizon = events / (2.0 * lam * N)
    return horizon, 0.2 * horizon


def main(argv: list[str] | None = None) -> int:
    """Run the anchor comparison and the scaling tables; print them and write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--refsim-source", type=Path, default=None)
    parser.add_argument("--N", type=int, default=1000)
    parser.add_argument("--lam", type=float, default=0.9)
    parser.add_argument("--d", type=int, default=2)
    parser.add_argument("--horizon", type=float, default=20000.0)
    parser.add_argument("--warmup", type=float, default=1000.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--scaling-events", type=float, default=3.0e7)
    parser.add_argument(
        "--quick", action="store_true", help="1/10 of the work (the anchor runs still repeated)"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.horizon /= 10
        args.warmup /= 10
        args.scaling_events /= 10

    binary = compile_refsim(args.refsim_source)
    # Warm-up call: numba compilation (or cache loading) must not count.
    simulate_occupancy(lam=0.5, N=10, d=2, horizon=2.0, warmup=1.0, seed=1)
    simulate_occupancy(lam=0.5, N=10, d=2, horizon=2.0, warmup=1.0, seed=1, replace=False)

    N, lam, d, horizon, warmup = args.N, args.lam, args.d, args.horizon, args.warmup
    ours_runs, c_runs = [], []
    for _ in range(args.repeats):
        if binary is not None:
            c_runs.append(run_c(binary, N, lam, d, horizon, warmup))
        ours_runs.append(run_ours(N, lam, d, horizon, warmup))
    ours_eps = median_eps(ours_runs)
    c_eps = median_eps(c_runs) if c_runs else None
    ratio = ours_eps / c_eps if c_eps else None
    ours_cpu_eps = median_eps(ours_runs, "cpu_events_per_second")
    c_cpu_eps = median_eps(c_runs, "cpu_events_per_second") if c_runs else None
    ratio_cpu = ours_cpu_eps / c_cpu_eps if c_cpu_eps else None

    print(f"\nworkload: N={N} lam={lam} d={d} horizon={horizon:g} warmup={warmup:g}, with")
    print(f"replacement, seed {SEED}, median of {args.repeats} alternating runs")
    print(f"{'':10s}{'events':>14s}{'events/s':>14s}{'per CPU s':>14s}")
    print(f"{'ours':10s}{ours_runs[0]['events']:>14d}{ours_eps:>14.3e}{ours_cpu_eps:>14.3e}")
    if c_eps is not None:
        print(f"{'C':10s}{c_runs[0]['events']:>14d}{c_eps:>14.3e}{c_cpu_eps:>14.3e}")
        print(f"ratio ours/C = {ratio:.2f} (wall clock), {ratio_cpu:.2f} (CPU time)")
    closed = [lam ** ((d**k - 1) / (d - 1)) if d > 1 else lam**k for k in range(1, 8)]
    print(f"\n{'k':>3s}{'ours u_k':>14s}{'C s_k':>14s}{'mean field':>14s}")
    for k in range(TAIL_LEVELS):
        c_val = f"{c_runs[0]['tail'][k]:14.6g}" if c_runs else f"{'-':>14s}"
        print(f"{k + 1:>3d}{ours_runs[0]['tail'][k]:>14.6g}{c_val}{closed[k]:>14.6g}")

    scaling = []
    print("\nscaling, d = 2 with replacement (events/s; C stores every server)")
    print(f"{'N':>10s}{'horizon':>10s}{'ours':>12s}{'C':>12s}{'ours/C':>8s}")
    for n in (100, 10_000, 1_000_000):
        h, w = scaling_horizon(n, lam, args.scaling_events)
        ours = run_ours(n, lam, 2, h, w)
        c = run_c(binary, n, lam, 2, h, w) if binary is not None else None
        row = {
            "N": n,
            "d": 2,
            "replace": True,
            "horizon": h,
            "warmup": w,
            "ours_events_per_second": ours["events_per_second"],
            "c_events_per_second": c["events_per_second"] if c else None,
        }
        scaling.append(row)
        c_txt = f"{c['events_per_second']:12.3e}" if c else f"{'-':>12s}"
        r_txt = f"{ours['events_per_second'] / c['events_per_second']:8.2f}" if c else ""
        print(f"{n:>10d}{h:>10.4g}{ours['events_per_second']:>12.3e}{c_txt}{r_txt}")

    print("\nscaling, without replacement: d = 2 against d = N (JSQ), ours only (events/s)")
    print(f"{'N':>10s}{'d = 2':>12s}{'d = N':>12s}")
    for n in (100, 10_000, 1_000_000):
        h, w = scaling_horizon(n, lam, args.scaling_events)
        two = run_ours(n, lam, 2, h, w, replace=False)
        jsq = run_ours(n, lam, n, h, w, replace=False)
        for dd, res in ((2, two), (n, jsq)):
            scaling.append(
                {
                    "N": n,
                    "d": dd,
                    "replace": False,
                    "horizon": h,
                    "warmup": w,
                    "ours_events_per_second": res["events_per_second"],
                    "c_events_per_second": None,
                }
            )
        print(f"{n:>10d}{two['events_per_second']:>12.3e}{jsq['events_per_second']:>12.3e}")

    results: dict[str, Any] = {
        "workload": {
            "N": N,
            "lam": lam,
            "d": d,
            "replace": True,
            "horizon": horizon,
            "warmup": warmup,
            "seed": SEED,
            "repeats": args.repeats,
        },
        "ours": {
            "events_per_second": ours_eps,
            "cpu_events_per_second": ours_cpu_eps,
            "runs": ours_runs,
        },
        "c": {"events_per_second": c_eps, "cpu_events_per_second": c_cpu_eps, "runs": c_runs}
        if c_runs
        else None,
        "ratio_ours_over_c": ratio,
        "ratio_ours_over_c_cpu": ratio_cpu,
        "tails": {
            "k": list(range(1, TAIL_LEVELS + 1)),
            "ours": ours_runs[0]["tail"],
            "ours_ci": ours_runs[0]["tail_ci"],
            "c": c_runs[0]["tail"] if c_runs else None,
            "mean_field": closed,
        },
        "scaling": scaling,
        "machine": {
            "platform": platform.platform(),
            "processor": platform.processor(),
            "python": platform.python_version(),
            "numba": numba.__version__,
            "numpy": np.__version__,
            "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        },
    }
    out = BENCH / "results.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
