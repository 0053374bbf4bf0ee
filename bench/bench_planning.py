"""How long Snakemake takes to plan a sweep of 10³, 10⁴, 10⁵ points (``snakemake -n``).

Planning must scale linearly in the points (issue 21: a 10⁴-point sweep was still planning
after 90 s; 1000 points took 4 s, 3000 points 13 s). The sweep is ``whittle-index-linear``
with ``p`` given n values (closed forms: 0.5 estimated seconds a point, so 40 points share a
job at the default ``simulation.job_seconds`` of 20 — n/40 compute jobs), laid over
config/config.yaml; the target is that artifact's table, so the rest of the workflow is
validated but not planned.

    python bench/bench_planning.py                       # this checkout, 10^3 10^4 10^5
    python bench/bench_planning.py --source ../main --sizes 1000 10000 --timeout 300

``--source`` benchmarks another checkout of lbrepro (its Snakefile, config and package,
put first on PYTHONPATH), e.g. the commit before a change. Prints one line per size: points,
compute jobs, seconds, seconds per 1000 points.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
TARGET = "results/whittle/whittle-index-linear.csv"


def sweep(n: int) -> str:
    """A config override with n distinct arrival probabilities for whittle-index-linear."""
    values = ", ".join(repr(round(0.05 + 0.5 * i / n, 12)) for i in range(n))
    return f"whittle-index-linear:\n  p: [{values}]\n"


def plan(source: Path, n: int, timeout: float) -> tuple[float | None, int | None]:
    """Seconds of ``snakemake -n`` on an n-point sweep (None: timed out) and its job count."""
    with tempfile.TemporaryDirectory(prefix="lbrepro-plan-") as tmp:
        override = Path(tmp) / "sweep.yaml"
        override.write_text(sweep(n), encoding="utf-8")
        env = dict(os.environ, PYTHONPATH=str(source / "src"))
        cmd = [
            sys.executable,
            "-m",
            "snakemake",
            "-n",
            "--quiet",
            "rules",
            "--snakefile",
            str(source / "Snakefile"),
            "--directory",
            tmp,
            "--configfile",
            str(source / "config" / "config.yaml"),
            str(override),
            "--",
            TARGET,
        ]
        start = time.perf_counter()
        try:
            run = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
        except subprocess.TimeoutExpired:
            return None, None
        seconds = time.perf_counter() - start
        if run.returncode != 0:
            raise SystemExit(f"snakemake -n failed for n = {n}:\n{run.stderr[-2000:]}")
        match = re.search(r"compute_points\s+(\d+)", run.stdout + run.stderr)
        return seconds, int(match.group(1)) if match else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", type=Path, default=HERE, help="the checkout to benchmark")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000])
    parser.add_argument("--timeout", type=float, default=600, help="seconds per size")
    args = parser.parse_args()
    print(f"source: {args.source.resolve()}")
    print(f"{'points':>8}  {'jobs':>6}  {'seconds':>8}  {'s per 1000 points':>17}")
    for n in args.sizes:
        seconds, jobs = plan(args.source.resolve(), n, args.timeout)
        if seconds is None:
            print(f"{n:>8}  {'?':>6}  {'> ' + format(args.timeout, 'g'):>8}  (timed out)")
            continue
        print(f"{n:>8}  {jobs or '?':>6}  {seconds:>8.1f}  {1000 * seconds / n:>17.2f}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
