"""Equilibria every model needs: ODE integration with a residual check, and truncation control.

Two failure modes this module exists to prevent:

- a "fixed point" that is merely the state after integrating for a long time (rmf_tool's
  ``fixed_point``): here integration continues in growing windows until the drift itself is
  below a tolerance, and otherwise raises :class:`ConvergenceError` with the residual reached;
- a truncated infinite system (queue lengths cut at K) whose truncation silently biases the
  answer: :func:`solve_truncated` doubles K until the mass at the truncation level is negligible.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.integrate import solve_ivp

from lbrepro.core.errors import ConfigError, ConvergenceError

__all__ = [
    "EquilibriumResult",
    "IntegrationTimeoutError",
    "TruncatedResult",
    "integrate_to_equilibrium",
    "solve_truncated",
    "time_budget",
]

#: The wall-clock time (time.monotonic) past which integrations inside :func:`time_budget`
#: stop; None: no limit (the pipeline's jobs have their own runtime limits).
_DEADLINE: contextvars.ContextVar[tuple[float, float] | None] = contextvars.ContextVar(
    "integration_deadline", default=None
)


class IntegrationTimeoutError(ConvergenceError):
    """An integration stopped by :func:`time_budget`: the system relaxes too slowly to settle
    in the time given (a load near capacity, server classes of very unequal speed)."""


@contextlib.contextmanager
def time_budget(seconds: float) -> Iterator[None]:
    """Integrations by :func:`integrate_to_equilibrium` inside the block raise
    :class:`IntegrationTimeoutError` once ``seconds`` of wall time have passed (an enclosing,
    earlier deadline still holds). The command line's solves run inside one: a mean-field
    ODE near capacity crept on for hours in tiny steps, with no answer and no line."""
    now = time.monotonic()
    outer = _DEADLINE.get()
    deadline = (now + seconds, seconds)
    if outer is not None and outer[0] < deadline[0]:
        deadline = outer
    token = _DEADLINE.set(deadline)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


class _OutOfTimeError(Exception):
    """Raised inside the integrator's right-hand side to stop it at the deadline."""


@dataclass(frozen=True, eq=False)
class EquilibriumResult:
    """Outcome of :func:`integrate_to_equilibrium` (modelled on SciPy's ``OdeResult``).

    Attributes
    ----------
    x : ndarray
        The state at which ``‖drift(x)‖∞ ≤ tol``.
    success : bool
        Always True on return (failure raises).
    residual : float
        ``‖drift(x)‖∞``.
    t : float
        Total integration time.
    num_iter : int
        Number of integration windows used.
    nfev : int
        Drift evaluations by the integrator.
    method : str
        The ``solve_ivp`` method.
    message : str
        Human-readable summary.
    """

    x: np.ndarray
    success: bool
    residual: float
    t: float
    num_iter: int
    nfev: int
    method: str
    message: str


@dataclass(frozen=True, eq=False)
class TruncatedResult:
    """Outcome of :func:`solve_truncated`.

    Attributes
    ----------
    K : int
        The truncation level whose solution passed the tail check.
    solution : tuple
        What ``solve_at(K)`` returned at that level.
    tail : float
        ``tail_mass(solution[0])``, at most ``tol``.
    history : tuple of (int, float)
        Every (K, tail mass) tried, in order.
    success : bool
        Always True on return (failure raises).
    num_iter : int
        Number of truncation levels solved.
    method : str
        ``"doubling"``.
    message : str
        Human-readable summary.
    """

    K: int
    solution: tuple[Any, ...]
    tail: float
    history: tuple[tuple[int, float], ...]
    success: bool
    num_iter: int
    method: str
    message: str


def integrate_to_equilibrium(
    drift: Callable[[np.ndarray], np.ndarray],
    x0: Any,
    *,
    jacobian: Callable[[np.ndarray], Any] | None = None,
    tol: float = 1e-12,
    t_max: float = 1e6,
    t_window: float = 1.0,
    method: str = "LSODA",
    rtol: float = 1e-10,
    atol: float = 1e-14,
    bound: float = 1e12,
) -> EquilibriumResult:
    """Integrate ``dx/dt = drift(x)`` until ``‖drift(x)‖∞ ≤ tol``.

    Integration runs in windows of length ``t_window, 2·t_window, 4·t_window, …`` (so slow
    relaxation costs only a logarithmic number of restarts); after each window the drift is
    evaluated and the loop stops as soon as the residual passes.

    Parameters
    ----------
    drift : callable
        ``drift(x) -> ndarray`` of the same shape as ``x``; autonomous.
    x0 : array_like, shape (n,)
        Initial state.
    jacobian : callable, optional
        ``jacobian(x) -> (n, n)`` array or sparse matrix, passed to stiff solvers.
    tol : float
        Residual tolerance on ``‖drift(x)‖∞``.
    t_max : float
        Give up after this much integration time.
    t_window : float
        Length of the first window.
    method : str
        A ``scipy.integrate.solve_ivp`` method (``"LSODA"``, ``"BDF"``, ``"Radau"``, …).
    rtol, atol : float
        Integrator tolerances.
    bound : float
        ``max|x| > bound`` is taken as blow-up and stops the integration (without it, a
        finite-time explosion makes LSODA creep towards the singularity indefinitely).

    Returns
    -------
    EquilibriumResult

    Raises
    ------
    ConfigError
        Bad tolerances or a non-finite initial state.
    ConvergenceError
        The integrator failed, or ``t_max`` passed without reaching ``tol``; the message
        names the residual reached.
    """
    if not tol > 0:
        raise ConfigError("tol", f"must be > 0, got {tol!r}")
    if not (t_max > 0 and t_window > 0):
        raise ConfigError("t_max", f"t_max and t_window must be > 0, got {t_max!r}, {t_window!r}")
    x = np.array(x0, dtype=float)
    if x.ndim != 1 or not np.all(np.isfinite(x)):
        raise ConfigError("x0", "must be a finite 1-D array")

    deadline = _DEADLINE.get()

    def fun(_t: float, y: np.ndarray) -> np.ndarray:
        if deadline is not None and time.monotonic() > deadline[0]:
            raise _OutOfTimeError  # solve_ivp has no time limit: stop it from inside
        return drift(y)

    jac = None if jacobian is None else (lambda _t, y: jacobian(y))

    def blow_up(_t: float, y: np.ndarray) -> float:
        return bound - float(np.max(np.abs(y)))

    blow_up.terminal = True  # type: ignore[attr-defined]
    residual = float(np.max(np.abs(drift(x)), initial=0.0))
    t, window, windows, nfev = 0.0, float(t_window), 0, 0
    while residual > tol:
        if t >= t_max:
            raise ConvergenceError(
                f"integrate_to_equilibrium: residual ‖drift‖∞ = {residual:.3e} > tol {tol:.1e} "
                f"after integrating to t = {t:.3g} (t_max = {t_max:.3g}); the drift may have "
                "no attracting equilibrium from this initial state"
            )
        span = min(window, t_max - t)
        kwargs: dict[str, Any] = {
            "method": method,
            "rtol": rtol,
            "atol": atol,
            "events": blow_up,
        }
        if jac is not None and method in ("LSODA", "BDF", "Radau"):
            kwargs["jac"] = jac
        try:
            with np.errstate(over="ignore", invalid="ignore"):
                sol = solve_ivp(fun, (t, t + span), x, **kwargs)
        except _OutOfTimeError:
            raise IntegrationTimeoutError(
                f"the mean-field ODE did not settle within {deadline[1] if deadline else 0:g} s "
                "of integration "
                f"(reached t = {t:.3g}, residual ‖drift‖∞ = {residual:.3e} > tol {tol:.1e}): it "
                "relaxes too slowly at these parameters (a load near capacity, server classes "
                "of very unequal speed)"
            ) from None
        nfev += int(sol.nfev)
        windows += 1
        if sol.status == 1:
            raise ConvergenceError(
                f"integrate_to_equilibrium: the solution blew up (max|x| > {bound:.1e}) at "
                f"t ≈ {sol.t[-1]:.3g}; last residual ‖drift‖∞ = {residual:.3e}"
            )
        if not sol.success or not np.all(np.isfinite(sol.y[:, -1])):
            raise ConvergenceError(
                f"integrate_to_equilibrium: {method} failed at t ≈ {sol.t[-1]:.3g} "
                f"({sol.message}); last residual ‖drift‖∞ = {residual:.3e}"
            )
        x = sol.y[:, -1]
        t += span
        window *= 2.0
        residual = float(np.max(np.abs(drift(x)), initial=0.0))
        if not np.isfinite(residual):
            raise ConvergenceError(
                f"integrate_to_equilibrium: the drift is not finite at t = {t:.3g}"
            )
    return EquilibriumResult(
        x=x,
        success=True,
        residual=residual,
        t=t,
        num_iter=windows,
        nfev=nfev,
        method=method,
        message=f"‖drift‖∞ = {residual:.2e} ≤ {tol:.1e} at t = {t:.3g} ({windows} windows)",
    )


def solve_truncated(
    solve_at: Callable[[int], tuple[Any, ...]],
    tail_mass: Callable[[np.ndarray], float],
    K0: int,
    *,
    tol: float = 1e-15,
    K_max: int = 2**16,
) -> TruncatedResult:
    """Solve a truncated model, doubling the truncation level until its tail is negligible.

    Parameters
    ----------
    solve_at : callable
        ``solve_at(K)`` solves the model truncated at level ``K`` and returns a tuple whose
        first item is the state inspected by ``tail_mass``; further items (result objects,
        diagnostics) are passed through in :attr:`TruncatedResult.solution`.
    tail_mass : callable
        ``tail_mass(state) -> float``: the mass the truncation may have cut off, e.g. the
        occupancy of the last level.
    K0 : int
        First truncation level tried (≥ 1).
    tol : float
        Accept the first level whose tail mass is ``≤ tol``.
    K_max : int
        Largest level tried.

    Returns
    -------
    TruncatedResult

    Raises
    ------
    ConfigError
        ``K0``, ``K_max`` or ``tol`` invalid.
    ConvergenceError
        The tail is still above ``tol`` at ``K_max`` (the message names both).
    """
    if isinstance(K0, bool) or not isinstance(K0, (int, np.integer)) or K0 < 1:
        raise ConfigError("K0", f"must be an integer ≥ 1, got {K0!r}")
    if isinstance(K_max, bool) or not isinstance(K_max, (int, np.integer)) or K_max < K0:
        raise ConfigError("K_max", f"must be an integer ≥ K0 = {K0}, got {K_max!r}")
    if not tol > 0:
        raise ConfigError("tol", f"must be > 0, got {tol!r}")
    history: list[tuple[int, float]] = []
    K = int(K0)
    while True:
        solution = solve_at(K)
        if not isinstance(solution, tuple):
            solution = (solution,)
        tail = float(tail_mass(solution[0]))
        history.append((K, tail))
        if not np.isfinite(tail):
            raise ConvergenceError(f"solve_truncated: tail mass at K = {K} is {tail}")
        if tail <= tol:
            return TruncatedResult(
                K=K,
                solution=solution,
                tail=tail,
                history=tuple(history),
                success=True,
                num_iter=len(history),
                method="doubling",
                message=f"tail mass {tail:.2e} ≤ {tol:.1e} at truncation K = {K}",
            )
        if K_max <= K:
            raise ConvergenceError(
                f"solve_truncated: tail mass {tail:.3e} > tol {tol:.1e} at the largest "
                f"truncation K_max = {K_max}; raise K_max or relax tol"
            )
        K = min(2 * K, int(K_max))
