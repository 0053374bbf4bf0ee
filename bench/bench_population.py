"""Benchmark the transition-declared simulator against the dedicated kernel and rmf_tool.

Usage, from the repository root with the virtual environment active::

    python bench/bench_population.py                      # N = 1000, λ = 0.9, d = 2, K = 10
    python bench/bench_population.py --quick              # horizon 200, for a smoke test
    python bench/bench_population.py --rmf-path /tmp/rmf  # where rmftool was installed

rmf_tool is not a dependency of lbrepro: install it beside the project for the benchmark
only (``pip install --target /tmp/rmf rmftool`` and ``--rmf-path /tmp/rmf``, or into a
throwaway virtual environment); without it that leg is skipped, saying so.

One workload, JSQ(d) sampled with replacement (the mean-field convention), three simulators
of the same chain on the same horizon, side by side in one run:

* **transitions**: :meth:`lbrepro.meanfield.population.PopulationModel.simulate` on the
  model declared by its 2K transitions (arrival to a server with k − 1 jobs, departure from
  one with k), truncated at K levels (K = 10 at ρ = 0.9, d = 2: the mean field puts
  ρ^(2^10 − 1) ≈ 10⁻⁴⁷ of the servers there, so the truncation never binds);
* **dedicated**: :func:`lbrepro.sim.occupancy.simulate_occupancy`, the hand-written
  occupancy kernel (unbounded levels) — its speed is the machine's kernel speed that
  ``bench_kernel.py --quick`` prints;
* **rmf_tool**: ``rmftool.population_processes.DDPP.simulate`` on the same transitions
  (pure Python, one lambda per transition), its events counted.

The first two alternate ``--repeats`` times after one call each to compile; each reports the
events per second of its own simulation proper (compilation excluded) and per CPU second of
the whole call (``time.process_time``: meaningful on a loaded machine, where wall time is
shared). Both run with ``extend = 0`` so their lengths match. rmf_tool runs once (minutes at
the default horizon). The ratios of the medians are printed and written to
``bench/population_results.json``.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numba
import numpy as np

from lbrepro.meanfield.population import PopulationModel
from lbrepro.sim.occupancy import simulate_occupancy

BENCH = Path(__file__).resolve().parent
SEED = 12345


@numba.njit
def jsq_rate(i: int, x: np.ndarray, p: np.ndarray) -> float:
    """JSQ(d) with replacement, K levels, x_k = fraction of servers with ≥ k jobs:
    transitions 0..K−1 are arrivals to level i + 1 (rate λ(x_i^d − x_{i+1}^d), x_0 = 1),
    K..2K−1 departures from level i − K + 1 (rate x_k − x_{k+1})."""
    K = x.shape[0]
    lam = p[0]
    d = p[1]
    if i < K:
        before = 1.0 if i == 0 else x[i - 1]
        if d == 2.0:
            return lam * (before * before - x[i] * x[i])
        return lam * (before**d - x[i] ** d)
    k = i - K
    after = 0.0 if k == K - 1 else x[k + 1]
    return x[k] - after


def jsq_model(lam: float, d: int, K: int) -> PopulationModel:
    """The JSQ(d) model as transitions."""
    eye = np.eye(K, dtype=int)
    return PopulationModel.from_rate(
        np.vstack([eye, -eye]), jsq_rate, params=(lam, float(d)),
        names=[f"x{k}" for k in range(1, K + 1)],
    )  # fmt: skip


def rmftool_model(lam: float, d: int, K: int) -> Any:
    """The same transitions for rmf_tool (per-transition Python functions)."""
    from rmftool.population_processes import DDPP

    ddpp = DDPP()
    for k in range(1, K + 1):
        e = np.zeros(K)
        e[k - 1] = 1.0

        def arrival(x: np.ndarray, k: int = k) -> float:
            before = 1.0 if k == 1 else x[k - 2]
            return lam * (before**d - x[k - 1] ** d)

        def departure(x: np.ndarray, k: int = k) -> float:
            after = 0.0 if k == K else x[k]
            return x[k - 1] - after

        ddpp.add_transition(e, arrival)
        ddpp.add_transition(-e, departure)
    ddpp.set_initial_state(np.zeros(K))
    return ddpp


def timed(fn: Any) -> tuple[Any, float, float]:
    """(result, wall seconds, CPU seconds) of fn()."""
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w, time.process_time() - c


def run_rmftool(a: argparse.Namespace, horizon: float) -> dict[str, float] | None:
    """rmf_tool's simulator on the same model and horizon; None when it is not installed."""
    if a.rmf_path:
        sys.path.insert(0, a.rmf_path)
    try:
        ddpp = rmftool_model(a.lam, a.d, a.K)
    except ImportError as err:
        print(f"rmf_tool not importable ({err}): its leg is skipped", file=sys.stderr)
        return None
    random.seed(SEED)  # DDPP.simulate draws from Python's random module
    (T, X), wall, cpu = timed(lambda: ddpp.simulate(a.N, horizon))
    events = len(T) - 1
    mean_jobs = float(np.sum(np.diff(T)[:, None] * X[:-1], axis=0).sum() / T[-1])
    return {
        "horizon": horizon,
        "events": events,
        "wall": wall,
        "events_per_second": events / wall,
        "events_per_cpu_second": events / cpu,
        "mean_jobs_whole_run": mean_jobs,
    }


def main() -> None:
    """Run the three legs and print the ratios."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--N", type=int, default=1000)
    ap.add_argument("--lam", type=float, default=0.9)
    ap.add_argument("--d", type=int, default=2)
    ap.add_argument("--K", type=int, default=10)
    ap.add_argument("--horizon", type=float, default=1000.0)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="horizon 200")
    ap.add_argument("--rmf-path", default=None, help="folder holding the rmftool package")
    a = ap.parse_args()
    horizon = 200.0 if a.quick else a.horizon
    model = jsq_model(a.lam, a.d, a.K)

    def ours(h: float, seed: int) -> Any:
        return model.simulate(N=a.N, horizon=h, warmup=h / 10, seed=seed, extend=0)

    def dedicated(h: float, seed: int) -> Any:
        return simulate_occupancy(
            lam=a.lam, N=a.N, d=a.d, horizon=h, warmup=h / 10, seed=seed, extend=0
        )

    ours(10.0, 0)  # compile both
    dedicated(10.0, 0)
    rows: dict[str, list[dict[str, float]]] = {"transitions": [], "dedicated": []}
    for r in range(a.repeats):
        for name, fn in (("transitions", ours), ("dedicated", dedicated)):
            res, wall, cpu = timed(lambda fn=fn, r=r: fn(horizon, SEED + r))
            rows[name].append(
                {
                    "events": res.events_total,
                    "events_per_second": res.events_per_second,
                    "events_per_cpu_second": res.events_total / cpu,
                    "wall": wall,
                    "mean_jobs": float(res.main if name == "transitions" else res.mean_jobs),
                }
            )
    rmf = run_rmftool(a, horizon)

    def med(name: str, key: str) -> float:
        return statistics.median(r[key] for r in rows[name])

    eps = {n: med(n, "events_per_second") for n in rows}
    cpu = {n: med(n, "events_per_cpu_second") for n in rows}
    if rmf is not None:
        eps["rmf_tool"] = rmf["events_per_second"]
        cpu["rmf_tool"] = rmf["events_per_cpu_second"]
    out: dict[str, Any] = {
        "workload": vars(a) | {"horizon": horizon},
        "machine": {
            "platform": platform.platform(),
            "numba": numba.__version__,
            "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        },
        "runs": rows,
        "rmf_tool": rmf,
        "median_events_per_second": eps,
        "median_events_per_cpu_second": cpu,
        "kernel_speed": eps["dedicated"],
        "ratio_to_dedicated": eps["transitions"] / eps["dedicated"],
        "ratio_to_dedicated_cpu": cpu["transitions"] / cpu["dedicated"],
    }
    if rmf is not None:
        out["ratio_to_rmf_tool"] = eps["transitions"] / eps["rmf_tool"]
        out["ratio_to_rmf_tool_cpu"] = cpu["transitions"] / cpu["rmf_tool"]
    print(
        f"JSQ({a.d}), λ = {a.lam}, N = {a.N}, K = {a.K}, horizon {horizon:g} "
        f"(median of {a.repeats}; rmf_tool once)"
    )
    for name in eps:
        print(
            f"{name:12s} {eps[name] / 1e6:9.3f} M events/s ({cpu[name] / 1e6:.3f} M per CPU second)"
        )
    for name in rows:
        print(f"{name:12s} mean jobs per server: " + ", ".join(
            f"{r['mean_jobs']:.4f}" for r in rows[name]))  # fmt: skip
    if rmf is not None:
        print(f"rmf_tool     mean jobs per server (whole run): {rmf['mean_jobs_whole_run']:.4f}")
    print(
        f"transitions / dedicated: {out['ratio_to_dedicated']:.2f}× "
        f"(CPU {out['ratio_to_dedicated_cpu']:.2f}×; target ≥ 0.5×)"
    )
    if rmf is not None:
        print(
            f"transitions / rmf_tool: {out['ratio_to_rmf_tool']:.0f}× "
            f"(CPU {out['ratio_to_rmf_tool_cpu']:.0f}×; target ≥ 100×)"
        )
    print(f"kernel speed (the dedicated occupancy kernel): {eps['dedicated'] / 1e6:.1f} M events/s")
    (BENCH / "population_results.json").write_text(json.dumps(out, indent=2))
    print(f"wrote {BENCH / 'population_results.json'}")


if __name__ == "__main__":
    main()
