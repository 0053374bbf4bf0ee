"""Exact Jacobians of the affinity fluid field at a fixed point: they decide its stability.

Why exact: the queueing fixed point has no type-I-only servers (x[i, 0] = 0 for i ≥ 1), so a
central difference there straddles the boundary of the state space, and the field's guards
(no flow out of an empty cell) halve the derivatives along those cells. The jets of
:mod:`lbrepro.meanfield.jets` differentiate the field's smooth formula itself, i.e. the
derivative from inside the state space, to rounding.

The field is written once more here, as plain arithmetic on numbers or jets (the numba kernel
:func:`lbrepro.models.affinity.fluid._field` cannot take jets); a test checks that both give
the same field at random states.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lbrepro.meanfield import jets

Grid = list[list[Any]]


def fluid_drift(x: Grid, lam: float, mu1: float, mu2: float, d: int, face: bool) -> Grid:
    """The fluid field at x (a (K+1)×2 grid of numbers or jets), as the same grid.

    The equations of :func:`lbrepro.models.affinity.fluid._field`, with every join flow in the
    divided-difference form flow/mass = λ_q·Σ_{k<d} T^k T'^{d−1−k}, which stays smooth where a
    level is empty (the kernel skips such levels: there the flow is zero, but not its
    derivative).
    """
    K1 = len(x)
    out: Grid = [[0.0, 0.0] for _ in range(K1)]
    # services: type I first (preemptive priority), type II only when i = 0
    for i in range(1, K1):
        for j in range(2):
            f = mu1 * x[i][j]
            out[i][j] = out[i][j] - f
            out[i - 1][j] = out[i - 1][j] + f
    f2 = mu2 * x[0][1]
    out[0][1] = out[0][1] - f2
    out[0][0] = out[0][0] + f2
    if not face:
        p1 = 1.0 - (1.0 - x[0][0]) ** d
        out[0][0] = out[0][0] - lam
        out[1][0] = out[1][0] + lam * p1
        out[0][1] = out[0][1] + lam * (1.0 - p1)
        return out
    R = mu2 * x[0][1] + mu1 * x[1][0]
    out[0][0] = out[0][0] - R
    out[0][1] = out[0][1] + R
    lam_q = lam - R
    if _value(lam_q) <= 0.0:
        return out
    tail_next: Any = 0.0  # T' = fraction with total jobs above the current level
    for m in range(K1, 0, -1):
        a = x[m][0] if m < K1 else 0.0
        b = x[m - 1][1]
        tail = tail_next + a + b
        # Σ_{k<d} T^k T'^{d−1−k} by Horner: s_n = T·s_{n−1} + T'^n, s_0 = 1
        s: Any = 1.0
        power: Any = 1.0
        for _ in range(d - 1):
            power = power * tail_next
            s = s * tail + power
        rate = lam_q * s
        if m + 1 < K1:  # an arrival that would create i = K + 1 is lost (truncation)
            fa = rate * a
            out[m][0] = out[m][0] - fa
            out[m + 1][0] = out[m + 1][0] + fa
        if m < K1:
            fb = rate * b
            out[m - 1][1] = out[m - 1][1] - fb
            out[m][1] = out[m][1] + fb
        tail_next = tail
    return out


def _value(v: Any) -> float:
    """The value of a number or jet (branches follow the value at the point)."""
    return float(v.a) if isinstance(v, jets.Jet) else float(v)


def _reduced_jacobian(
    x: np.ndarray, lam: float, mu2: float, mu1: float, d1: int, face: bool
) -> np.ndarray:
    """Jacobian of the field in the cells other than the one that closes Σ x = 1.

    On the face (u = 0) x00 stays 0 and x01 closes the sum; inside, x00 closes it.
    """
    K1 = x.shape[0]
    fixed = ((0, 0), (0, 1)) if face else ((0, 0),)
    closing = (0, 1) if face else (0, 0)
    idx = [(i, j) for i in range(K1) for j in range(2) if (i, j) not in fixed]
    base = np.array([x[c] for c in idx])

    def field(v: Any) -> Any:
        """The field's free cells as a function of the free cells (the closing one follows)."""
        grid: Grid = [[float(x[i, j]) for j in range(2)] for i in range(K1)]
        for k, (i, j) in enumerate(idx):
            grid[i][j] = v[k]
        grid[closing[0]][closing[1]] = float(x[closing]) - (v.sum() - float(base.sum()))
        out = fluid_drift(grid, lam, mu1, mu2, d1, face)
        return jets.stack([jets.asjet(out[i][j]) for i, j in idx])

    _, jac = jets.jacobian(field, base)
    return jac


def face_jacobian(x: np.ndarray, lam: float, mu2: float, mu1: float, d1: int) -> np.ndarray:
    """Exact Jacobian of the face field (u = 0) in the cells x[i, j] other than x00 and x01."""
    return _reduced_jacobian(x, lam, mu2, mu1, d1, face=True)


def interior_jacobian(x: np.ndarray, lam: float, mu2: float, mu1: float, d1: int) -> np.ndarray:
    """Exact Jacobian of the interior field (u > 0) in the cells x[i, j] other than x00."""
    return _reduced_jacobian(x, lam, mu2, mu1, d1, face=False)
