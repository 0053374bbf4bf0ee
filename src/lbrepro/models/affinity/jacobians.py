"""Jacobians of the affinity fluid field at a fixed point (stability of the fixed points)."""

from __future__ import annotations

import numpy as np

from lbrepro.models.affinity.fluid import _field


def face_jacobian(x: np.ndarray, lam: float, mu2: float, mu1: float, d1: int) -> np.ndarray:
    """Numerical Jacobian of the face field (u = 0) in the coordinates x[i, j] except x00, x01.

    x01 = 1 − Σ(others) eliminates the conservation law; central differences, step 1e-7.
    """
    K1 = x.shape[0]
    idx = [(i, j) for i in range(K1) for j in range(2) if (i, j) not in ((0, 0), (0, 1))]
    n = len(idx)
    J = np.zeros((n, n))
    out_p = np.zeros_like(x)
    out_m = np.zeros_like(x)
    h = 1e-7
    for c, (i, j) in enumerate(idx):
        xp = x.copy()
        xm = x.copy()
        xp[i, j] += h
        xp[0, 1] -= h
        xm[i, j] -= h
        xm[0, 1] += h
        _field(xp, lam, mu1, mu2, d1, True, out_p)
        _field(xm, lam, mu1, mu2, d1, True, out_m)
        for r, (a, b) in enumerate(idx):
            J[r, c] = (out_p[a, b] - out_m[a, b]) / (2 * h)
    return J


def interior_jacobian(x: np.ndarray, lam: float, mu2: float, mu1: float, d1: int) -> np.ndarray:
    """Numerical Jacobian of the interior field (u > 0) without the x00 coordinate."""
    K1 = x.shape[0]
    idx = [(i, j) for i in range(K1) for j in range(2) if (i, j) != (0, 0)]
    n = len(idx)
    J = np.zeros((n, n))
    out_p = np.zeros_like(x)
    out_m = np.zeros_like(x)
    h = 1e-7
    for c, (i, j) in enumerate(idx):
        xp = x.copy()
        xm = x.copy()
        xp[i, j] += h
        xp[0, 0] -= h
        xm[i, j] -= h
        xm[0, 0] += h
        _field(xp, lam, mu1, mu2, d1, False, out_p)
        _field(xm, lam, mu1, mu2, d1, False, out_m)
        for r, (a, b) in enumerate(idx):
            J[r, c] = (out_p[a, b] - out_m[a, b]) / (2 * h)
    return J
