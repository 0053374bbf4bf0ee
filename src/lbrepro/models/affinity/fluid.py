"""The fluid limit of the affinity model (docs/models.md §D): its vector field, with the u = 0 face
and its immediate switch, and a robust hybrid RK4 integrator."""

from __future__ import annotations

from typing import Any

import numpy as np

from lbrepro.core.args import float_arg
from lbrepro.core.errors import ConfigError
from lbrepro.sim.affinity import check_params, check_state
from lbrepro.sim.compilation import njit

#: Default truncation of the type-I count in the fluid limit (the paper used i ≤ 9).
K_DEFAULT = 12


@njit(cache=True)
def _field(x, lam, mu1, mu2, d, face, out):
    """Vector field of the fluid limit at x (shape (K+1, 2)) into ``out``.

    ``face`` False: u > 0 — every arrival finds an idle server; w.p. 1 − (1 − u)^d an idle
    primary (type I, → (1,0)), else another idle server (type II, → (0,1)).
    ``face`` True: u = 0 — the servers emptied at rate R = μ2 x01 + μ1 x10 are refilled at once
    by type-II arrivals (immediate switch), and the remaining λ − R joins JSQ(d) by total jobs
    i + j; the joined server is proportional to mass among the servers of that total. An
    arrival that would create i = K + 1 is lost (truncation).
    """
    K1 = x.shape[0]
    for i in range(K1):
        out[i, 0] = 0.0
        out[i, 1] = 0.0
    # services: type I first (preemptive priority), type II only when i = 0
    for i in range(1, K1):
        for j in range(2):
            f = mu1 * x[i, j]
            out[i, j] -= f
            out[i - 1, j] += f
    f2 = mu2 * x[0, 1]
    out[0, 1] -= f2
    out[0, 0] += f2
    if not face:
        u = x[0, 0]
        p1 = 1.0 - (1.0 - u) ** d
        out[0, 0] -= lam
        out[1, 0] += lam * p1
        out[0, 1] += lam * (1.0 - p1)
        return
    R = mu2 * x[0, 1] + mu1 * x[1, 0]
    # immediate switch: the inflow R into (0,0) goes on to (0,1)
    out[0, 0] -= R
    out[0, 1] += R
    lam_q = lam - R
    if lam_q <= 0.0:
        return
    # T_m = fraction with total i + j ≥ m, m = 1..K+1 (T_{K+2} = 0); T_1 = 1 − u = 1.
    tail_next = 0.0  # T_{m+1}
    for m in range(K1, 0, -1):
        a = x[m, 0] if m < K1 else 0.0
        b = x[m - 1, 1]
        tail = tail_next + a + b
        mass = a + b
        if mass > 0.0:
            flow = lam_q * (tail**d - tail_next**d)
            if a > 0.0 and m + 1 < K1:
                fa = flow * a / mass
                out[m, 0] -= fa
                out[m + 1, 0] += fa
            if b > 0.0 and m < K1:
                fb = flow * b / mass
                out[m - 1, 1] -= fb
                out[m, 1] += fb
        tail_next = tail


@njit(cache=True)
def _rk4(x, dt, lam, mu1, mu2, d, face, k1, k2, k3, k4, tmp, out):
    """One classical RK4 step of the interior (face False) or face field, into ``out``."""
    _field(x, lam, mu1, mu2, d, face, k1)
    for i in range(x.shape[0]):
        for j in range(2):
            tmp[i, j] = x[i, j] + 0.5 * dt * k1[i, j]
    _field(tmp, lam, mu1, mu2, d, face, k2)
    for i in range(x.shape[0]):
        for j in range(2):
            tmp[i, j] = x[i, j] + 0.5 * dt * k2[i, j]
    _field(tmp, lam, mu1, mu2, d, face, k3)
    for i in range(x.shape[0]):
        for j in range(2):
            tmp[i, j] = x[i, j] + dt * k3[i, j]
    _field(tmp, lam, mu1, mu2, d, face, k4)
    for i in range(x.shape[0]):
        for j in range(2):
            out[i, j] = x[i, j] + dt / 6.0 * (k1[i, j] + 2 * k2[i, j] + 2 * k3[i, j] + k4[i, j])


@njit(cache=True)
def _integrate(x0, lam, mu1, mu2, d, dt, n_steps, record_every, traj):
    """Hybrid RK4: interior steps while u > 0, face steps while u = 0 and λ ≥ R.

    An interior step that would make u negative is shortened to the crossing (linear
    interpolation of u, one re-step) and u is set to exactly 0, the O(dt²) residual taken
    from x01 — the mass the overshoot sent there. On the face, u stays exactly 0; when R
    exceeds λ the face is left (du/dt = R − λ > 0). Returns the final state; ``traj`` gets
    every ``record_every``-th state.
    """
    x = x0.copy()
    K1 = x.shape[0]
    k1 = np.empty_like(x)
    k2 = np.empty_like(x)
    k3 = np.empty_like(x)
    k4 = np.empty_like(x)
    tmp = np.empty_like(x)
    y = np.empty_like(x)
    rec = 0
    for step in range(n_steps + 1):
        if step % record_every == 0 and rec < traj.shape[0]:
            traj[rec] = x
            rec += 1
        if step == n_steps:
            break
        R = mu2 * x[0, 1] + mu1 * x[1, 0]
        face = x[0, 0] <= 0.0 and lam >= R
        _rk4(x, dt, lam, mu1, mu2, d, face, k1, k2, k3, k4, tmp, y)
        if not face and y[0, 0] < 0.0:
            theta = x[0, 0] / (x[0, 0] - y[0, 0])
            _rk4(x, theta * dt, lam, mu1, mu2, d, False, k1, k2, k3, k4, tmp, y)
            y[0, 1] += y[0, 0]
            y[0, 0] = 0.0
            # the rest of the step on the face (or back inside if R > λ)
            R = mu2 * y[0, 1] + mu1 * y[1, 0]
            if lam >= R:
                _rk4(y.copy(), (1.0 - theta) * dt, lam, mu1, mu2, d, True, k1, k2, k3, k4, tmp, y)
        for i in range(K1):
            for j in range(2):
                if y[i, j] < 0.0:
                    y[i, j] = 0.0
                x[i, j] = y[i, j]
    return x


def fluid_field(x: Any, lam: float, mu2: float, mu1: float = 1.0, d1: int = 1) -> np.ndarray:
    """The fluid vector field at x (Filippov: the face field when u = 0 and λ ≥ R)."""
    lam, mu2, mu1, d1, _ = check_params(lam, mu2, mu1, d1)
    arr = check_state(x, "x")
    out = np.zeros_like(arr)
    R = mu2 * arr[0, 1] + mu1 * arr[1, 0]
    face = bool(arr[0, 0] <= 0.0 and lam >= R)
    _field(arr, lam, mu1, mu2, d1, face, out)
    return out


def pad_state(x: Any, K: int) -> np.ndarray:
    """A state as shape (K+1, 2); mass above level K is lumped into level K."""
    arr = np.asarray(x, dtype=float)
    out = np.zeros((K + 1, 2))
    n = min(arr.shape[0], K + 1)
    out[:n] = arr[:n]
    if arr.shape[0] > K + 1:
        out[K] += arr[K + 1 :].sum(axis=0)
    return out


def fluid_trajectory(
    x0: Any,
    lam: float,
    mu2: float,
    mu1: float = 1.0,
    d1: int = 1,
    *,
    t_end: float = 100.0,
    dt: float = 0.01,
    n_record: int = 201,
    K: int = K_DEFAULT,
) -> tuple[np.ndarray, np.ndarray]:
    """Integrate the fluid limit from x0; return (times, states[n_record, K+1, 2])."""
    lam, mu2, mu1, d1, _ = check_params(lam, mu2, mu1, d1)
    x = pad_state(check_state(x0), K)
    t_end = float_arg("t_end", t_end)
    dt = float_arg("dt", dt)
    if t_end <= 0 or dt <= 0:
        raise ConfigError("t_end", f"t_end and dt must be > 0, got {t_end}, {dt}")
    n_steps = max(1, round(t_end / dt))
    every = max(1, n_steps // max(1, n_record - 1))
    n_rec = n_steps // every + 1
    traj = np.zeros((n_rec, K + 1, 2))
    _integrate(x, lam, mu1, mu2, d1, t_end / n_steps, n_steps, every, traj)
    times = np.arange(n_rec) * every * (t_end / n_steps)
    return times, traj


def start_state(start: str, K: int) -> np.ndarray:
    """The fluid state of a simulation start: every server empty, or ("type2") each holding one
    type-II job; the fluid trajectory set beside a simulated path starts here."""
    x = np.zeros((K + 1, 2))
    x[0, 0 if start == "empty" else 1] = 1.0
    return x


def fluid_final(
    x0: np.ndarray, lam: float, mu2: float, mu1: float, d1: int, t_end: float, dt: float
) -> np.ndarray:
    """Final state only (no validation; hot loop of the basin computation)."""
    n_steps = max(1, round(t_end / dt))
    traj = np.zeros((1, x0.shape[0], 2))
    return _integrate(x0, lam, mu1, mu2, d1, t_end / n_steps, n_steps, n_steps + 1, traj)
