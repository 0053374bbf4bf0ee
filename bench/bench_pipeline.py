"""Time the whole pipeline and say where the time goes (per paper, per artifact, longest jobs).

Usage, from the repository root with the virtual environment active::

    python bench/bench_pipeline.py --cores 2                 # full run in a fresh directory
    python bench/bench_pipeline.py --cores 2 --quick         # the quick profile (CI)
    python bench/bench_pipeline.py --summarise /path/to/run  # only read a finished run

A run happens in a fresh working directory (``--workdir``, default a temporary one) with the
repository's Snakefile and config, so nothing cached from an earlier run is reused. Wall time is
measured around ``snakemake``; job times come from the ``benchmark:`` file every rule writes
(wall seconds ``s`` and ``cpu_time``; Snakemake samples a job's CPU time once a second for
its first 30 s, then every 30 s, and misses the last stretch, so ``cpu_time`` is a lower
bound: a 35 s job can show 14 CPU-s; job-seconds are the measure). Printed and written to
``bench/pipeline_timings.json`` (``--out``): wall time, job count, job-seconds and CPU-seconds
in total, per paper and per artifact, and the longest jobs (the end of the critical path).

Run times differ between machines of the same nominal size (the same work took 34 minutes on one
2-core machine and 16 on another), so the summary also states the machine's speed: the
occupancy kernel's events per second on a fixed workload (N = 1000, λ = 0.9, d = 2), measured
for a second after the run. A run time scales roughly with its inverse.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from lbrepro.artifacts import registry  # noqa: E402
from lbrepro.report.runtimes import read_benchmark  # noqa: E402


def kernel_speed() -> float:
    """Events per second of the occupancy kernel on the fixed workload, after a warm-up call."""
    from lbrepro.sim.occupancy import simulate_occupancy

    simulate_occupancy(lam=0.9, N=10, d=2, horizon=2.0, warmup=1.0, seed=1)
    run = simulate_occupancy(lam=0.9, N=1000, d=2, horizon=20000, warmup=1000, seed=12345)
    return float(run.events_per_second)


def run_pipeline(workdir: Path, cores: int, quick: bool) -> float:
    """Run snakemake from scratch in ``workdir``; its wall time in seconds."""
    workdir.mkdir(parents=True, exist_ok=True)
    configs = [str(REPO / "config" / "config.yaml")]
    if quick:
        configs.append(str(REPO / "config" / "quick.yaml"))
    cmd = [
        sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"),
        "--directory", str(workdir), "--cores", str(cores), "--quiet", "progress",
        "--configfile", *configs,
    ]  # fmt: skip
    start = time.perf_counter()
    subprocess.run(cmd, cwd=REPO, check=True)
    return time.perf_counter() - start


def job_times(workdir: Path) -> list[dict[str, Any]]:
    """One record per benchmark file: paper, artifact, job name, wall and CPU seconds."""
    bench_dir = workdir / "benchmarks"
    ids = [a.id for a in registry.all_artifacts()]
    jobs = []
    for path in sorted(bench_dir.rglob("*.tsv")):
        row = read_benchmark(path, bench_dir, ids)
        parts = path.relative_to(bench_dir).parts
        jobs.append(
            {
                "paper": parts[0] if len(parts) > 1 else "(report)",
                "artifact": row["artifact"] or "",
                "job": row["job"],
                "s": row["seconds"] or 0.0,
                "cpu_time": row["cpu_time"] or 0.0,
            }
        )
    return jobs


def summarise(
    jobs: list[dict[str, Any]], wall: float | None, cores: int | None, speed: float | None = None
) -> dict[str, Any]:
    """Totals, per-paper and per-artifact sums, and the ten longest jobs."""
    by_paper: dict[str, dict[str, float]] = defaultdict(lambda: {"jobs": 0, "s": 0.0, "cpu": 0.0})
    by_artifact: dict[str, dict[str, float]] = defaultdict(
        lambda: {"jobs": 0, "s": 0.0, "cpu": 0.0, "longest": 0.0}
    )
    for j in jobs:
        for table, key in ((by_paper, j["paper"]), (by_artifact, j["artifact"] or j["paper"])):
            entry = table[key]
            entry["jobs"] += 1
            entry["s"] += j["s"]
            entry["cpu"] += j["cpu_time"]
        by_artifact[j["artifact"] or j["paper"]]["longest"] = max(
            by_artifact[j["artifact"] or j["paper"]]["longest"], j["s"]
        )
    return {
        "machine": {
            "cores": cores,
            "cpu_count": os.cpu_count(),
            "platform": platform.platform(),
            "processor": _processor(),
            "occupancy_events_per_second": speed,
        },
        "wall_s": wall,
        "jobs": len(jobs),
        "job_s": sum(j["s"] for j in jobs),
        "cpu_s": sum(j["cpu_time"] for j in jobs),
        "short_jobs": sum(1 for j in jobs if j["s"] < 5),
        "by_paper": dict(sorted(by_paper.items(), key=lambda kv: -kv[1]["s"])),
        "by_artifact": dict(sorted(by_artifact.items(), key=lambda kv: -kv[1]["s"])),
        "longest": sorted(jobs, key=lambda j: -j["s"])[:10],
    }


def _processor() -> str:
    """The processor's model name (Linux), else what ``platform`` says."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def show(summary: dict[str, Any]) -> None:
    """Print the summary as tables."""
    machine = summary["machine"]
    if machine.get("occupancy_events_per_second"):
        print(
            f"machine: {machine['processor']}, {machine['cpu_count']} cores; occupancy kernel "
            f"{machine['occupancy_events_per_second'] / 1e6:.1f} M events/s (N = 1000, d = 2)"
        )
    wall = summary["wall_s"]
    head = f"wall {wall / 60:.1f} min, " if wall else ""
    print(
        f"{head}{summary['jobs']} jobs, {summary['job_s'] / 60:.1f} job-min, "
        f"{summary['cpu_s'] / 60:.1f} CPU-min; {summary['short_jobs']} jobs under 5 s"
    )
    total = summary["job_s"] or 1.0
    print(f"\n{'paper':<14} {'jobs':>5} {'job-min':>8} {'share':>6}")
    for paper, e in summary["by_paper"].items():
        print(f"{paper:<14} {e['jobs']:>5} {e['s'] / 60:>8.1f} {e['s'] / total:>6.0%}")
    print(f"\n{'artifact':<28} {'jobs':>5} {'job-min':>8} {'longest s':>10}")
    for artifact, e in list(summary["by_artifact"].items())[:15]:
        print(f"{artifact:<28} {e['jobs']:>5} {e['s'] / 60:>8.1f} {e['longest']:>10.0f}")
    print("\nlongest jobs:")
    for j in summary["longest"]:
        print(f"  {j['s']:>7.0f} s  {j['job']}")


def main() -> None:
    """Run (or read) a pipeline run and report where the time goes."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="the quick profile (CI)")
    parser.add_argument("--workdir", type=Path, help="where to run (default: a fresh temp dir)")
    parser.add_argument("--summarise", type=Path, help="only read the run in this directory")
    parser.add_argument("--wall", type=float, help="with --summarise: the run's wall seconds")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "pipeline_timings.json")
    args = parser.parse_args()
    if args.summarise:
        workdir, wall, cores, speed = args.summarise, args.wall, None, None
    else:
        workdir = args.workdir or Path(tempfile.mkdtemp(prefix="lbrepro-bench-"))
        wall, cores = run_pipeline(workdir, args.cores, args.quick), args.cores
        speed = kernel_speed()  # after the run, which starts with numba's cache cold
    summary = summarise(job_times(workdir), wall, cores, speed)
    summary["profile"] = "quick" if args.quick else "default"
    summary["workdir"] = str(workdir)
    show(summary)
    args.out.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    print(f"\nwritten to {args.out}")


if __name__ == "__main__":
    main()
