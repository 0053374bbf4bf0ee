"""Wall-clock timings that used to be asserted in the tests (timings belong here, not there).

Usage, from the repository root with the virtual environment active::

    python bench/bench_timings.py

Prints the best of three runs of: the Whittle indices W(0..100) (target 50 ms), the PH cavity
fixed point for Erlang-4 at K = 80 (target 0.5 s), the JSQ diffusion Euler scheme (target
≥ 1e7 steps/s) and ``jsq_diffusion_means`` at its defaults (target 10 s).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from lbrepro.models import general as gen
from lbrepro.models import service as svc
from lbrepro.models import whittle as w
from lbrepro.models.universality import jsq_diffusion_means, simulate_jsq_diffusion


def best_of(fn: Callable[[], object], repeats: int = 3) -> float:
    """The shortest wall-clock time of ``repeats`` calls (after one warm-up call)."""
    fn()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    """Run every timing and print one line each."""
    t = best_of(lambda: w.whittle_indices(0.6, 0.5, math.inf, 100))
    print(f"whittle_indices(n=100):          {t * 1e3:8.1f} ms   (target 50 ms)")
    t = best_of(lambda: gen.cavity_fixed_point(svc.erlang(4, 4.0), 0.9, 2, K=80))
    print(f"cavity_fixed_point(erlang4, 80): {t:8.3f} s    (target 0.5 s)")
    r = simulate_jsq_diffusion(beta=1.0, dt=0.001, horizon=10_000, warmup=10, seed=0)
    print(f"JSQ diffusion Euler:             {r.steps_per_second:8.3g} steps/s (target 1e7)")
    t = best_of(lambda: jsq_diffusion_means(1.0, seed=0), repeats=1)
    print(f"jsq_diffusion_means(1.0):        {t:8.2f} s    (target 10 s)")


if __name__ == "__main__":
    main()
