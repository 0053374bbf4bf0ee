"""Closed forms shared by several models: the one home of each formula.

The doubly exponential tail of JSQ(d) (docs/models.md §S): in the mean-field limit the fraction
of servers holding at least k jobs is u_k = ρ^((d^k − 1)/(d − 1)) for d ≥ 2 and ρ^k for d = 1
(M/M/1 servers under random routing).
"""

from __future__ import annotations

import numpy as np


def doubly_exponential_exponent(d: int, k: int) -> int:
    """(d^k − 1)/(d − 1), the exponent of ρ in u_k (k for d = 1); an exact integer."""
    if d < 1 or k < 0:
        raise ValueError(f"need d >= 1 and k >= 0, got d = {d}, k = {k}")
    return k if d == 1 else (d**k - 1) // (d - 1)


def doubly_exponential_tail(rho: float, d: int, levels: int) -> np.ndarray:
    """u_0..u_levels of JSQ(d) at load ρ (u_0 = 1); exponents capped so ρ^e underflows to 0."""
    out = np.empty(levels + 1, dtype=float)
    for k in range(levels + 1):
        out[k] = rho ** float(min(doubly_exponential_exponent(d, k), 10**6))
    return out
