"""Numba compilation: lazy, cached where it can be, and kept out of timed regions.

Every kernel is declared with :func:`njit` from here, not numba's: decorating compiles
nothing (a kernel compiles on its first call, never at import or when the command line is
built), and ``cache=True`` asks for numba's on-disk cache *if one can be written*. In a
read-only install with an unwritable home, numba refuses ``cache=True`` at decoration time
("cannot cache function …: no locator available"), which would end any import of the package;
here the kernel compiles in memory instead, with one warning line on stderr per process.

A simulator reports events per second of the simulation proper, so before its clock starts
it calls :func:`ensure_compiled` with a *warm-up* — a function that calls its numba kernels on
tiny inputs, compiling them (or loading them from numba's on-disk cache). The warm-up runs
the first time only; later calls return at once.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numba

__all__ = ["ensure_compiled", "njit"]

_warmed_up: set[Callable[[], object]] = set()
_warned = False

#: The warning line when numba's cache cannot be written.
NO_CACHE_WARNING = (
    "lbrepro: warning: no writable numba cache here (read-only install and home?): kernels are "
    "compiled in memory at each run (set NUMBA_CACHE_DIR to a writable folder to keep them)"
)


def _warn_once() -> None:
    global _warned
    if _warned:
        return
    _warned = True
    try:
        if sys.stderr is not None:
            print(NO_CACHE_WARNING, file=sys.stderr)
    except (OSError, ValueError):
        pass  # a closed stderr must not cost the import


def njit(*args: Any, **options: Any) -> Any:
    """numba's ``njit`` (same arguments), falling back to an in-memory kernel when
    ``cache=True`` has nowhere to write."""
    if args and callable(args[0]):  # bare ``@njit``
        return njit(**options)(args[0])
    if not options.get("cache"):
        return numba.njit(*args, **options)

    def decorate(function: Callable[..., Any]) -> Any:
        try:
            return numba.njit(*args, **options)(function)
        except RuntimeError as err:
            if "cannot cache" not in str(err):
                raise
            _warn_once()
            return numba.njit(*args, **{**options, "cache": False})(function)

    return decorate


def ensure_compiled(warm_up: Callable[[], object]) -> None:
    """Run ``warm_up`` (tiny calls of a kernel) once per process, so timing excludes the JIT."""
    if warm_up in _warmed_up:
        return
    warm_up()
    _warmed_up.add(warm_up)
