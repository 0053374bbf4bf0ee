"""Closed forms shared by several models: the one home of each formula.

The doubly exponential tail of JSQ(d) (docs/models.md §S): in the mean-field limit the fraction
of servers holding at least k jobs is u_k = ρ^((d^k − 1)/(d − 1)) for d ≥ 2 and ρ^k for d = 1
(M/M/1 servers under random routing).
"""

from __future__ import annotations

import math

import numpy as np


def doubly_exponential_exponent(d: int, k: int) -> int:
    """(d^k − 1)/(d − 1), the exponent of ρ in u_k (k for d = 1); an exact integer."""
    if d < 1 or k < 0:
        raise ValueError(f"need d >= 1 and k >= 0, got d = {d}, k = {k}")
    return k if d == 1 else (d**k - 1) // (d - 1)


def doubly_exponential_tail(rho: float, d: int, levels: int) -> np.ndarray:
    """u_0..u_levels of JSQ(d) at load ρ (u_0 = 1).

    The exponent is an exact integer that may exceed any float; ρ^e is set to 0 once
    e·log ρ < −800 (below the smallest float), and computed exactly otherwise, so ρ near 1
    keeps its slow decay.
    """
    out = np.empty(levels + 1, dtype=float)
    log_rho = math.log(rho) if rho > 0 else -math.inf
    for k in range(levels + 1):
        e = doubly_exponential_exponent(d, k)
        underflows = e > 10**300 or (e > 0 and e * log_rho < -800.0)
        out[k] = 0.0 if underflows else rho ** float(e)
    return out


def doubly_exponential_until(rho: float, d: int, tol: float) -> np.ndarray:
    """u_0..u_K of JSQ(d) at load ρ, K the first level with u_K < ``tol``.

    The exponent e_k = (d^k − 1)/(d − 1) obeys e_k = d·e_{k−1} + 1; it is kept as an exact
    integer and the loop stops as soon as e_k·log ρ < log tol, so d^k never overflows a float.
    """
    log_rho, log_tol = math.log(rho), math.log(tol)
    if d == 1:
        K = math.floor(log_tol / log_rho) + 1  # first k with k·log ρ < log tol
        return np.exp(np.arange(K + 1) * log_rho)
    exps = [0]
    while exps[-1] * log_rho >= log_tol:
        exps.append(d * exps[-1] + 1)
    return np.exp(np.array(exps, dtype=float) * log_rho)
