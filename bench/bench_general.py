"""Benchmark the general-service FCFS kernel (lbrepro.sim.general_service) against C.

Usage, from the repository root with the virtual environment active::

    python bench/bench_general.py            # N = 10^4, λ = 0.9, d = 2, several distributions
    python bench/bench_general.py --quick    # shorter runs

The anchor is ``bench/refsim_general.c``, a plain C simulator of the same workload —
JSQ(d) with replacement over N per-server FCFS queues, general service, an event heap —
compiled here with ``gcc -O3 -march=native`` (into a temporary directory). For every
distribution our kernel runs first (after one call that excludes numba compilation); the C
code then simulates the same time span from the same xoshiro256** state, so it follows the
same path: the bench checks that both count the same events (``same_path``). The two
alternate ``--repeats`` times; the median events per second of each and their ratio ours/C
are reported per wall-clock second and per CPU second (C: the child's CPU time; ours: this
process's CPU time around the whole call, validation and estimates included), the latter
being meaningful on a loaded machine. Results go to ``bench/results_general.json``.
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
import tempfile
import time
from pathlib import Path
from typing import Any

import numba
import numpy as np

from lbrepro.core.rng import seed_sequence, xoshiro_state
from lbrepro.models import service
from lbrepro.sim.general_service import simulate_general

REPO = Path(__file__).resolve().parent.parent
SOURCE = REPO / "bench" / "refsim_general.c"
SEED = 12345
DISTS = ("exp", "erlang:2", "hyperexp:4", "det", "weibull:0.5", "lomax:1.5", "lognormal:1")


def compile_refsim(directory: Path) -> Path | None:
    """Compile the C anchor into ``directory``; None (with a message) if impossible."""
    if shutil.which("gcc") is None:
        print("gcc not found: running only our kernel.", file=sys.stderr)
        return None
    binary = directory / "refsim_general"
    cmd = ["gcc", "-O3", "-march=native", "-o", str(binary), str(SOURCE), "-lm"]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        print(
            f"compiling {SOURCE} failed: running only our kernel.\n{proc.stderr}", file=sys.stderr
        )
        return None
    return binary


def children_cpu() -> float:
    """CPU seconds (user + system) used so far by finished child processes."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_ours(spec: str, N: int, lam: float, d: int, horizon: float, warmup: float) -> dict:
    """Run our kernel; events/s counts warm-up events too, like the C code."""
    cpu = time.process_time()
    r = simulate_general(
        dist=service.parse(spec),
        lam=lam,
        d=d,
        N=N,
        horizon=horizon,
        warmup=warmup,
        seed=SEED,
        batches=10,
    )
    cpu = time.process_time() - cpu
    return {
        "events": r.events_total,
        "horizon": r.horizon,
        "events_per_second": r.events_per_second,
        "cpu_events_per_second": r.events_total / cpu if cpu > 0 else float("nan"),
        "mean_jobs": r.mean_jobs,
    }


def run_c(binary: Path, spec: str, N: int, lam: float, d: int, horizon: float) -> dict:
    """Run the C simulator over [0, horizon] from our kernel's initial generator state."""
    sampling = service.parse(spec).sampling
    state = xoshiro_state(seed_sequence(SEED))
    args = [str(binary), str(N), repr(lam), str(d), repr(horizon)]
    args += [str(int(x)) for x in state] + [str(sampling.code)]
    args += [repr(float(x)) for x in sampling.params]
    cpu = children_cpu()
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout.split()
    cpu = children_cpu() - cpu
    fields = dict(zip(out[0::2], out[1::2], strict=True))
    events = int(fields["events"])
    return {
        "events": events,
        "events_per_second": float(fields["events_per_s"]),
        "cpu_events_per_second": events / cpu if cpu > 0 else float("nan"),
        "mean_jobs": float(fields["mean_jobs"]),
    }


def median(runs: list[dict], key: str) -> float:
    """Median of one field over repeated runs (robust to a noisy shared machine)."""
    return statistics.median(x[key] for x in runs)


def main(argv: list[str] | None = None) -> int:
    """Run every distribution, ours and C alternately; print the table and write the JSON."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--N", type=int, default=10_000)
    ap.add_argument("--lam", type=float, default=0.9)
    ap.add_argument("--d", type=int, default=2)
    ap.add_argument("--horizon", type=float, default=2000.0)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--dists", default=",".join(DISTS), help="comma-separated specs")
    ap.add_argument("--quick", action="store_true", help="1/10 of the horizon")
    a = ap.parse_args(argv)
    horizon = a.horizon / 10 if a.quick else a.horizon
    warmup = horizon / 10
    run_ours("exp", 100, 0.5, 2, 10.0, 1.0)  # compile (or load the cache) outside the timing
    rows: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        binary = compile_refsim(Path(tmp))
        print(f"N = {a.N}, lam = {a.lam}, d = {a.d}, horizon {horizon:g}, seed {SEED}, ")
        print(f"median of {a.repeats} alternating runs; M events per wall / CPU second")
        print(f"{'service':12s}{'ours':>9s}{'C':>9s}{'ratio':>7s}{'ours cpu':>10s}{'C cpu':>9s}"
              f"{'ratio':>7s}  same path")  # fmt: skip
        for spec in a.dists.split(","):
            ours_runs, c_runs = [], []
            for _ in range(a.repeats):
                ours_runs.append(run_ours(spec, a.N, a.lam, a.d, horizon, warmup))
                if binary is not None:
                    span = ours_runs[-1]["horizon"]
                    c_runs.append(run_c(binary, spec, a.N, a.lam, a.d, span))
            row: dict[str, Any] = {
                "ours_events_per_second": median(ours_runs, "events_per_second"),
                "ours_cpu_events_per_second": median(ours_runs, "cpu_events_per_second"),
                "ours_runs": ours_runs,
            }
            if c_runs:
                row["c_events_per_second"] = median(c_runs, "events_per_second")
                row["c_cpu_events_per_second"] = median(c_runs, "cpu_events_per_second")
                row["ratio_ours_over_c"] = (
                    row["ours_events_per_second"] / row["c_events_per_second"]
                )
                row["ratio_ours_over_c_cpu"] = (
                    row["ours_cpu_events_per_second"] / row["c_cpu_events_per_second"]
                )
                row["same_path"] = all(
                    o["events"] == c["events"] for o, c in zip(ours_runs, c_runs, strict=True)
                )
                row["c_runs"] = c_runs
                print(
                    f"{spec:12s}{row['ours_events_per_second'] / 1e6:9.2f}"
                    f"{row['c_events_per_second'] / 1e6:9.2f}{row['ratio_ours_over_c']:7.2f}"
                    f"{row['ours_cpu_events_per_second'] / 1e6:10.2f}"
                    f"{row['c_cpu_events_per_second'] / 1e6:9.2f}"
                    f"{row['ratio_ours_over_c_cpu']:7.2f}  {row['same_path']}"
                )
            else:
                print(f"{spec:12s}{row['ours_events_per_second'] / 1e6:9.2f}")
            rows[spec] = row
    results = {
        "workload": {
            "N": a.N,
            "lam": a.lam,
            "d": a.d,
            "horizon": horizon,
            "warmup": warmup,
            "seed": SEED,
            "repeats": a.repeats,
        },
        "distributions": rows,
        "machine": {
            "platform": platform.platform(),
            "python": platform.python_version(),
            "numba": numba.__version__,
            "numpy": np.__version__,
            "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        },
    }
    out = REPO / "bench" / "results_general.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
