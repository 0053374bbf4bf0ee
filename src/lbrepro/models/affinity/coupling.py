"""The coupling step functions f_ref, f_aff and Table 1 of the affinity model, in exact
integer and rational arithmetic (docs/models.md §D)."""

from __future__ import annotations

import math
from fractions import Fraction

from lbrepro.core.args import int_arg
from lbrepro.core.errors import ConfigError


def f_ref(N: int, k: int) -> list[Fraction]:
    """JSQ(k) step function f_ref(n) = 1 − C(N − n, k)/C(N, k), n = 0..N, as exact fractions."""
    N = int_arg("N", N, 1)
    k = int_arg("k", k, 1)
    if k > N:
        raise ConfigError("k", f"must be <= N = {N}, got {k}")
    total = math.comb(N, k)
    return [1 - Fraction(math.comb(N - n, k), total) for n in range(N + 1)]


def f_aff(N: int, d: int) -> list[Fraction]:
    """Worst-case d-regular step function (d ≥ N/2): jumps (d+1)/N at n = 1, to 1 at N − d."""
    N = int_arg("N", N, 2)
    d = int_arg("d", d, 1)
    if d > N - 1:
        raise ConfigError("d", f"a d-regular graph on N = {N} nodes has d <= N - 1, got {d}")
    if 2 * d < N:
        raise ConfigError("d", f"the two-jump step function needs d >= N/2 = {N / 2}, got {d}")
    out = []
    for n in range(N + 1):
        if n == 0:
            out.append(Fraction(0))
        elif n < N - d:
            out.append(Fraction(d + 1, N))
        else:
            out.append(Fraction(1))
    return out


def _table_condition(N: int, d: int, k: int) -> bool:
    # (d+1)/N > 1 − C(d+1, k)/C(N, k)  ⇔  (d+1)·C(N,k) > N·(C(N,k) − C(d+1,k)), in integers.
    """Table 1's condition (d+1)/N > 1 − C(d+1, k)/C(N, k), in exact integers."""
    c = math.comb(N, k)
    return (d + 1) * c > N * (c - math.comb(d + 1, k))


def table1_d(N: int, k: int) -> int:
    """Table 1: the smallest d ≥ N/2 with f_aff(N−d−1) > f_ref(N−d−1) (exact integers)."""
    N = int_arg("N", N, 2)
    k = int_arg("k", k, 1)
    if k > N:
        raise ConfigError("k", f"must be <= N = {N}, got {k}")
    for d in range((N + 1) // 2, N):
        if _table_condition(N, d, k):
            return d
    raise ConfigError("k", f"no d <= N - 1 satisfies the condition for N = {N}, k = {k}")


def step_dominates(N: int, d: int, k: int) -> bool:
    """Whether f_aff ≥ f_ref at every position n = 0..N (exact), the coupling's requirement."""
    fa = f_aff(N, d)
    fr = f_ref(N, k)
    return all(a >= r for a, r in zip(fa, fr, strict=True))
