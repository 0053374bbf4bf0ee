"""Numba compilation kept out of timed regions: a kernel is warmed up once per process.

A simulator reports events per second of the simulation proper, so before its clock starts
it calls :func:`ensure_compiled` with a *warm-up* — a function that calls its numba kernels on
tiny inputs, compiling them (or loading them from numba's on-disk cache). The warm-up runs
the first time only; later calls return at once.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["ensure_compiled"]

_warmed_up: set[Callable[[], object]] = set()


def ensure_compiled(warm_up: Callable[[], object]) -> None:
    """Run ``warm_up`` (tiny calls of a kernel) once per process, so timing excludes the JIT."""
    if warm_up in _warmed_up:
        return
    warm_up()
    _warmed_up.add(warm_up)
