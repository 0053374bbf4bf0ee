"""Density-dependent population processes, defined as data, and their refined mean field.

A model is a list of transitions: jump vectors ``ℓ`` (rows of ``jumps``) and a rate function
``x ↦ (β_ℓ(x))_ℓ``. With N objects, the state ``x`` (a vector of fractions) jumps to
``x + ℓ/N`` at rate ``N·β_ℓ(x)``. Everything else is derived from that one description:

- drift ``f(x) = Σ_ℓ ℓ β_ℓ(x)`` (the mean-field ODE ``dx/dt = f(x)``);
- its exact Jacobian and second derivatives, by evaluating the same rate function on
  hyper-dual numbers (:mod:`lbrepro.meanfield.jets`);
- the diffusion matrix ``Q(x) = Σ_ℓ ℓℓᵀ β_ℓ(x)``;
- the fixed point (Newton with a residual check) and the steady-state refined mean field of
  Gast & Van Houdt (2017), "A refined mean field approximation", Proc. ACM Meas. Anal.
  Comput. Syst. 1(2): ``E[X^N] = π + V/N + O(1/N²)`` with

      A = Df(π),   A W + W Aᵀ + Q(π) = 0,   V = −A⁻¹ · ½ Σ_km ∂²f/∂x_k∂x_m (π) W_km,

  and ``Cov(X^N) ≈ W/N``.

Conserved quantities (e.g. fractions summing to 1) make ``A`` singular: every jump lies in
the span ``S`` of the jump vectors, so the process moves on ``x0 + S``. As in rmf_tool, the
linear algebra is done in an orthonormal basis of ``S`` and mapped back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.linalg
import scipy.sparse
import scipy.sparse.linalg

from lbrepro.core.equilibrium import integrate_to_equilibrium
from lbrepro.core.errors import ConfigError, ConvergenceError, UnstableError
from lbrepro.meanfield.jets import Jet, asjet

__all__ = ["FixedPointResult", "PopulationModel", "RefinedResult"]

# Largest number of floats in one jet field: Jacobians of big models are built in column
# chunks so memory stays ~16 MB per field whatever the dimension.
_CHUNK_ELEMS = 2**21
# From this dimension on, Newton solves with a sparse LU (Jacobians of queueing models are
# banded/sparse; a dense solve at n = 4096 costs seconds, the sparse one milliseconds).
_SPARSE_MIN = 200


def _readonly(a: np.ndarray) -> np.ndarray:
    a = np.array(a, dtype=float)
    a.setflags(write=False)
    return a


@dataclass(frozen=True, eq=False)
class FixedPointResult:
    """A fixed point of the drift (modelled on SciPy's ``OptimizeResult``).

    Attributes
    ----------
    x : ndarray, shape (n,)
        The fixed point, ``‖f(x)‖∞ ≤ tol`` and all rates ``≥ −tol``.
    success : bool
        Always True on return (failure raises :class:`ConvergenceError`).
    residual : float
        ``‖f(x)‖∞``.
    num_iter : int
        Newton steps (plus integration windows when the ODE fallback ran).
    method : str
        ``"newton"`` or ``"<ode method>+newton"`` (fallback).
    message : str
        Human-readable summary.
    stable : bool or None
        Whether ``Df(x)`` restricted to the span of the jumps is Hurwitz; None when not
        checked (``stable=False`` was passed, or n ≥ 200 where the dense eigenvalue
        computation would dominate the cost).
    """

    x: np.ndarray
    success: bool
    residual: float
    num_iter: int
    method: str
    message: str
    stable: bool | None = None


@dataclass(frozen=True, eq=False)
class RefinedResult:
    """Steady-state refined mean field ``E[X^N] = x + V/N + O(1/N²)``, ``Cov ≈ W/N``.

    Attributes
    ----------
    x : ndarray, shape (n,)
        The fixed point π.
    V : ndarray, shape (n,)
        The 1/N coefficient of the mean.
    W : ndarray, shape (n, n)
        The 1/N coefficient of the covariance (solution of ``A W + W Aᵀ + Q = 0``).
    jacobian : ndarray, shape (n, n)
        ``A = Df(π)``.
    rank : int
        Dimension of the span of the jump vectors (``n`` unless quantities are conserved).
    success : bool
        Always True on return.
    residual : float
        ``‖A W + W Aᵀ + Q‖∞`` on the span (Lyapunov residual).
    num_iter : int
        0: direct linear algebra (kept for a uniform result interface).
    method : str
        ``"lyapunov"``.
    message : str
        Human-readable summary.
    """

    x: np.ndarray
    V: np.ndarray
    W: np.ndarray
    jacobian: np.ndarray
    rank: int
    success: bool
    residual: float
    num_iter: int
    method: str
    message: str


class _NewtonError(Exception):
    """Internal: Newton did not converge (the caller falls back to the ODE)."""


class PopulationModel:
    """A density-dependent population process given as transitions.

    Parameters
    ----------
    jumps : array_like or scipy.sparse matrix, shape (T, n)
        Jump vectors ``ℓ``, one row per transition (sparse is stored as is: cheap for
        large truncated models).
    rates : callable
        ``rates(x)`` returns the ``T`` rates ``β_ℓ(x)`` (a sequence or array). It must work
        on float arrays and on :class:`~lbrepro.meanfield.jets.Jet` (write it with NumPy
        arithmetic, ``**``, indexing, ``np.concatenate``, ``np.exp``…; no ``min``/``max``).
    names : sequence of str, optional
        Coordinate names (default ``x0, x1, …``).
    """

    def __init__(
        self,
        jumps: Any,
        rates: Callable[[Any], Sequence[Any] | np.ndarray | Jet],
        names: Sequence[str] | None = None,
    ) -> None:
        if scipy.sparse.issparse(jumps):
            Ls = scipy.sparse.csr_matrix(jumps, dtype=float)
            data = Ls.data
        else:
            L = np.array(jumps, dtype=float)
            if L.ndim != 2:
                raise ConfigError("jumps", f"must be a (T, n) array, got shape {L.shape}")
            Ls = scipy.sparse.csr_matrix(L)
            data = L
        if Ls.shape[0] < 1 or Ls.shape[1] < 1:
            raise ConfigError("jumps", f"must be a non-empty (T, n) array, got shape {Ls.shape}")
        if not np.all(np.isfinite(data)):
            raise ConfigError("jumps", "must be finite")
        if not callable(rates):
            raise ConfigError("rates", "must be callable: rates(x) -> T rate values")
        Ls.eliminate_zeros()
        self.rates = rates
        n = Ls.shape[1]
        if names is None:
            names = [f"x{i}" for i in range(n)]
        if len(names) != n:
            raise ConfigError("names", f"has {len(names)} entries for {n} coordinates")
        self.names = tuple(str(s) for s in names)
        # Sparse storage: queueing models have one-hot jumps, and a dense (T, n) array at
        # n = 4096 levels would weigh 268 MB.
        self._L = Ls
        self._Lt = scipy.sparse.csr_matrix(Ls.T)
        self._basis_cache: tuple[np.ndarray | None, int] | None = None

    # ------------------------------------------------------------------------- basics
    @property
    def jumps(self) -> np.ndarray:
        """Jump vectors as a dense (T, n) array (a fresh copy)."""
        return self._L.toarray()

    @property
    def dim(self) -> int:
        """State dimension n."""
        return self._L.shape[1]

    @property
    def num_transitions(self) -> int:
        """Number of transitions T."""
        return self._L.shape[0]

    def __repr__(self) -> str:
        return f"PopulationModel(n={self.dim}, transitions={self.num_transitions})"

    # ------------------------------------------------------------ one rate, both uses
    @classmethod
    def from_rate(
        cls,
        jumps: Any,
        rate: Callable[..., Any],
        params: Sequence[float] = (),
        names: Sequence[str] | None = None,
    ) -> PopulationModel:
        """The model of one scalar rate function ``rate(l, x, params)``: mean field, refined
        mean field and exact simulation (:meth:`simulate`) from the same declaration.

        ``rate`` returns the rate ``β_l(x)`` of transition ``l``; write it with plain
        arithmetic on the entries of ``x`` (``x[k] ** d``, ``+``, ``*``; branches on ``l``
        only) so that it runs on hyper-dual numbers (the exact derivatives of the mean field)
        and compiles with numba (the simulator). An ``@numba.njit`` function works too (its
        Python source serves the mean field). ``jumps`` are integer vectors: with N objects,
        transition ``l`` moves ``x`` by ``jumps[l] / N`` at rate ``N·β_l(x)``.
        """
        python_rate = getattr(rate, "py_func", rate)
        if not callable(python_rate):
            raise ConfigError("rate", "must be a function rate(l, x, params) -> float")
        p = np.asarray(params, dtype=float).reshape(-1)
        T = (
            scipy.sparse.csr_matrix(jumps).shape[0]
            if scipy.sparse.issparse(jumps)
            else len(np.asarray(jumps))
        )

        def rates(x: Any) -> list[Any]:
            return [python_rate(tr, x, p) for tr in range(T)]

        model = cls(jumps, rates, names=names)
        model._rate = rate
        model._params = p
        return model

    def simulate(
        self,
        *,
        N: int,
        horizon: float,
        warmup: float,
        seed: Any,
        x0: Sequence[float] | None = None,
        batches: int = 20,
        extend: int | None = None,
        weights: Sequence[float] | None = None,
        depends: Sequence[Sequence[int]] | None = None,
    ) -> Any:
        """Exact simulation with N objects from ``x0`` (default: all zeros): the time
        averages of every coordinate with their 95% intervals
        (:class:`lbrepro.sim.population.PopulationSimResult`; ``result.estimate("x", k)``).
        Only for a model built with :meth:`from_rate`."""
        from lbrepro.sim.population import compiled_rate, simulate_population

        rate = getattr(self, "_rate", None)
        if rate is None:
            raise ConfigError(
                "rate", "simulation needs the model built with PopulationModel.from_rate"
            )
        if not hasattr(self, "_compiled"):
            self._compiled = compiled_rate(rate)  # one compilation per model and process
        return simulate_population(
            self._compiled, self._L, self._params, N=N, horizon=horizon, warmup=warmup,
            seed=seed, x0=x0, batches=batches, extend=extend, weights=weights, depends=depends,
        )  # fmt: skip

    def _state(self, x: Any, key: str = "x") -> np.ndarray:
        x = np.asarray(x, dtype=float)
        if x.shape != (self.dim,):
            raise ConfigError(key, f"must have shape ({self.dim},), got {x.shape}")
        return x

    def _rates_jet(self, x: Jet) -> Jet:
        r = asjet(self.rates(x))
        if r.shape != (self.num_transitions,):
            raise ConfigError(
                "rates", f"returned shape {r.shape}, expected ({self.num_transitions},)"
            )
        return r

    def rate_values(self, x: Any) -> np.ndarray:
        """The ``T`` transition rates ``β_ℓ(x)`` as a float array."""
        x = self._state(x)
        r = self.rates(x)
        if isinstance(r, Jet) or (
            isinstance(r, (list, tuple)) and any(isinstance(v, Jet) for v in r)
        ):
            r = asjet(r).a
        r = np.asarray(r, dtype=float).reshape(-1)
        if r.shape != (self.num_transitions,):
            raise ConfigError(
                "rates", f"returned {r.size} values for {self.num_transitions} transitions"
            )
        return r

    def drift(self, x: Any) -> np.ndarray:
        """Mean-field drift ``f(x) = Σ_ℓ ℓ β_ℓ(x)``, shape (n,)."""
        return self._Lt @ self.rate_values(x)

    def diffusion(self, x: Any) -> np.ndarray:
        """Diffusion matrix ``Q(x) = Σ_ℓ ℓℓᵀ β_ℓ(x)``, shape (n, n)."""
        beta = self.rate_values(x)
        return np.asarray((self._Lt @ scipy.sparse.diags(beta) @ self._L).toarray())

    # -------------------------------------------------------------------- derivatives
    def _jacobian_blocks(self, x: np.ndarray) -> Iterator[tuple[int, int, np.ndarray]]:
        """Column blocks ``(j0, j1, Df[:, j0:j1])``: ε1 seeded with identity columns."""
        n, T = self.dim, self.num_transitions
        chunk = max(1, min(n, _CHUNK_ELEMS // (n + T)))
        for j0 in range(0, n, chunk):
            j1 = min(n, j0 + chunk)
            seeds = np.zeros((j1 - j0, n))
            seeds[np.arange(j1 - j0), np.arange(j0, j1)] = 1.0
            r = self._rates_jet(Jet(x, seeds))
            dbeta = np.zeros((j1 - j0, T)) if r.b is None else r.b
            yield j0, j1, np.asarray(self._Lt @ dbeta.T)

    def jacobian(self, x: Any) -> np.ndarray:
        """Exact Jacobian ``A[i, j] = ∂f_i/∂x_j``, shape (n, n)."""
        x = self._state(x)
        J = np.empty((self.dim, self.dim))
        for j0, j1, block in self._jacobian_blocks(x):
            J[:, j0:j1] = block
        return J

    def _jacobian_sparse(self, x: np.ndarray) -> scipy.sparse.csc_matrix:
        blocks = [scipy.sparse.csc_matrix(b) for _, _, b in self._jacobian_blocks(x)]
        return scipy.sparse.hstack(blocks, format="csc")

    def hessian(self, x: Any) -> np.ndarray:
        """Exact second derivatives ``H[i, k, m] = ∂²f_i/∂x_k∂x_m``, shape (n, n, n).

        Costs n(n+1)/2 directions: meant for tests and small models; the refined mean field
        uses :meth:`hessian_contract` instead.
        """
        x = self._state(x)
        n, T = self.dim, self.num_transitions
        k, m = np.triu_indices(n)
        H = np.zeros((n, n, n))
        chunk = max(1, _CHUNK_ELEMS // (n + T))
        eye = np.eye(n)
        for p0 in range(0, len(k), chunk):
            kk, mm = k[p0 : p0 + chunk], m[p0 : p0 + chunk]
            r = self._rates_jet(Jet(x, eye[kk], eye[mm]))
            if r.e is None:
                continue
            block = np.asarray(self._Lt @ r.e.T)  # (n, pairs)
            H[:, kk, mm] = block
            H[:, mm, kk] = block
        return H

    def _curvature_sum(self, x: np.ndarray, dirs: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """``Σ_j w_j · v_jᵀ ∇²f v_j`` for directions ``v_j`` = rows of ``dirs``."""
        n, T = self.dim, self.num_transitions
        out = np.zeros(n)
        chunk = max(1, _CHUNK_ELEMS // (n + T))
        for j0 in range(0, len(dirs), chunk):
            v = dirs[j0 : j0 + chunk]
            r = self._rates_jet(Jet(x, v, v))
            if r.e is not None:
                out += self._Lt @ (r.e.T @ weights[j0 : j0 + chunk])
        return out

    def hessian_contract(self, x: Any, W: Any) -> np.ndarray:
        """``Σ_km ∂²f_i/∂x_k∂x_m · W_km`` for a symmetric W, shape (n,).

        With ``W = Σ_j λ_j v_j v_jᵀ`` (eigen-decomposition) the contraction equals
        ``Σ_j λ_j v_jᵀ ∇²f_i v_j``: one batch of at most n second directional derivatives
        instead of the n³ Hessian. Only the symmetric part of W matters (the Hessian is
        symmetric in k, m), so W is symmetrised first.
        """
        x = self._state(x)
        W = np.asarray(W, dtype=float)
        if W.shape != (self.dim, self.dim):
            raise ConfigError("W", f"must have shape ({self.dim}, {self.dim}), got {W.shape}")
        lam, U = np.linalg.eigh(0.5 * (W + W.T))
        return self._contract_eig(x, lam, U)

    def _contract_eig(self, x: np.ndarray, lam: np.ndarray, U: np.ndarray) -> np.ndarray:
        if lam.size == 0:
            return np.zeros(self.dim)
        # Eigenvalues at rounding level contribute at rounding level: skip their directions.
        keep = np.abs(lam) > 1e-15 * np.max(np.abs(lam), initial=0.0)
        return self._curvature_sum(x, np.ascontiguousarray(U[:, keep].T), lam[keep])

    # ---------------------------------------------------------- conserved quantities
    def _basis(self) -> tuple[np.ndarray | None, int]:
        """Orthonormal basis (n, r) of the span of the jumps; None when r = n."""
        if self._basis_cache is None:
            n = self.dim
            Ls = self._L
            single = np.flatnonzero(np.diff(Ls.indptr) == 1)
            covered = np.unique(Ls.indices[Ls.indptr[single]])
            if covered.size == n:
                # Every coordinate has its own unit-like jump: full rank without an SVD.
                self._basis_cache = (None, n)
            else:
                L = Ls.toarray()
                _, s, Vt = np.linalg.svd(L, full_matrices=True)
                tol = max(L.shape) * np.finfo(float).eps * (s[0] if s.size else 0.0)
                r = int(np.sum(s > tol))
                self._basis_cache = (None, n) if r == n else (Vt[:r].T.copy(), r)
        return self._basis_cache

    @property
    def conserved(self) -> np.ndarray:
        """Rows ``c`` with ``c·ℓ = 0`` for every jump: linear quantities the process conserves.

        Shape (n − r, n), orthonormal rows; empty when nothing is conserved.
        """
        B, r = self._basis()
        if B is None:
            return np.zeros((0, self.dim))
        _, _, Vt = np.linalg.svd(self.jumps, full_matrices=True)
        return Vt[r:].copy()

    # -------------------------------------------------------------------- fixed point
    def _newton_step(self, x: np.ndarray, f: np.ndarray, res: float) -> np.ndarray:
        B, _ = self._basis()
        try:
            if B is not None:
                Jr = B.T @ self.jacobian(x) @ B
                step = B @ np.linalg.solve(Jr, -(B.T @ f))
            elif self.dim >= _SPARSE_MIN:
                step = scipy.sparse.linalg.splu(self._jacobian_sparse(x)).solve(-f)
            else:
                step = np.linalg.solve(self.jacobian(x), -f)
        except (np.linalg.LinAlgError, RuntimeError) as exc:
            raise _NewtonError(f"singular Jacobian at residual {res:.3e} ({exc})") from exc
        if not np.all(np.isfinite(step)):
            raise _NewtonError(f"non-finite Newton step at residual {res:.3e}")
        return step

    def _newton(self, x0: np.ndarray, tol: float, max_iter: int) -> tuple[np.ndarray, int, float]:
        """Damped Newton on x0 + span(jumps); raises _NewtonError."""
        x = x0.copy()
        f = self.drift(x)
        if not np.all(np.isfinite(f)):
            raise _NewtonError("drift is not finite at the initial point")
        res, norm = float(np.max(np.abs(f))), float(np.linalg.norm(f))
        for it in range(max_iter):
            if res <= tol:
                # One polishing step: the residual test passes at |x − x*| ≈ ‖A⁻¹‖·tol; a
                # further (quadratically convergent) step brings x to rounding level.
                try:
                    xn = x + self._newton_step(x, f, res)
                except _NewtonError:
                    return x, it, res
                with np.errstate(all="ignore"):
                    resn = float(np.max(np.abs(self.drift(xn))))
                if resn < res:
                    return xn, it + 1, resn
                return x, it, res
            step = self._newton_step(x, f, res)
            # Backtracking (Armijo) line search on ‖f‖₂: keeps Newton from overshooting
            # into regions where the rates are meaningless (e.g. negative fractions).
            t = 1.0
            while True:
                xn = x + t * step
                with np.errstate(all="ignore"):
                    fn = self.drift(xn)
                normn = float(np.linalg.norm(fn))
                if np.isfinite(normn) and normn <= (1.0 - 1e-4 * t) * norm:
                    break
                t *= 0.5
                if t < 1e-10:
                    raise _NewtonError(f"line search failed at residual {res:.3e}")
            x, f, norm, res = xn, fn, normn, float(np.max(np.abs(fn)))
        if res <= tol:
            return x, max_iter, res
        raise _NewtonError(f"no convergence in {max_iter} Newton steps (residual {res:.3e})")

    def _reduced(self, M: np.ndarray) -> np.ndarray:
        B, _ = self._basis()
        return M if B is None else B.T @ M @ B

    @staticmethod
    def _max_real_eig(Ar: np.ndarray) -> tuple[float, float]:
        """Largest real part of the eigenvalues, and the threshold below which it counts as < 0."""
        scale = max(1.0, float(np.max(np.abs(Ar), initial=0.0)))
        return float(np.max(np.linalg.eigvals(Ar).real)), -1e-12 * scale

    def _is_stable(self, x: np.ndarray) -> bool | None:
        if self.dim >= _SPARSE_MIN:
            return None
        top, thr = self._max_real_eig(self._reduced(self.jacobian(x)))
        return top < thr

    def _negative_rate(self, x: np.ndarray, tol: float) -> str | None:
        beta = self.rate_values(x)
        i = int(np.argmin(beta))
        if beta[i] < -tol:
            return f"rate of transition {i} is {beta[i]:.3e} < 0 at the computed point"
        return None

    def fixed_point(
        self,
        x0: Any,
        *,
        tol: float = 1e-13,
        max_iter: int = 100,
        t_max: float = 1e6,
        ode_method: str = "LSODA",
        ode_tol: float = 1e-8,
        stable: bool = True,
    ) -> FixedPointResult:
        """Fixed point ``f(x) = 0`` on ``x0 + span(jumps)``, checked by its residual.

        Newton's method with the exact Jacobian and a backtracking line search, started at
        ``x0``. If it fails (singular Jacobian, no progress, a point with negative rates, or
        — with ``stable=True`` — an unstable root, e.g. the disease-free point of an SIS
        model) the ODE is integrated from ``x0`` until ``‖f‖∞ ≤ ode_tol`` and Newton
        polishes the result: the trajectory selects the attracting fixed point.

        Parameters
        ----------
        x0 : array_like, shape (n,)
            Initial guess; also fixes the value of any conserved linear quantity.
        tol : float
            Required residual ``‖f(x)‖∞``; rates below ``−tol`` are rejected.
        max_iter : int
            Newton steps per attempt.
        t_max : float
            Integration-time budget of the fallback.
        ode_method : str
            ``solve_ivp`` method of the fallback (``"LSODA"``; ``"BDF"`` is used with a
            sparse Jacobian for large models).
        ode_tol : float
            Residual at which the fallback hands over to Newton.
        stable : bool
            Reject a Newton root whose Jacobian (on the span of the jumps) is not Hurwitz.
            Checked for n < 200 only (dense eigenvalues); see :attr:`FixedPointResult.stable`.

        Returns
        -------
        FixedPointResult

        Raises
        ------
        ConvergenceError
            Neither route reached ``tol`` with non-negative rates; the message names the
            residual.
        """
        x0 = self._state(x0, "x0")
        if not np.all(np.isfinite(self.drift(x0))):
            raise ConfigError("x0", "the drift is not finite at x0")
        try:
            x, it, res = self._newton(x0, tol, max_iter)
            problem = self._negative_rate(x, tol)
            is_stable = self._is_stable(x) if stable and problem is None else None
            if problem is None and is_stable is not False:
                return FixedPointResult(
                    x=_readonly(x),
                    success=True,
                    residual=res,
                    num_iter=it,
                    method="newton",
                    message=f"Newton: ‖f‖∞ = {res:.2e} ≤ {tol:.1e} in {it} steps",
                    stable=is_stable,
                )
            if problem is None:
                first = "Newton converged to an unstable fixed point"
            else:
                first = f"Newton converged to an infeasible point ({problem})"
        except _NewtonError as exc:
            first = f"Newton failed ({exc})"

        B, _ = self._basis()
        if self.dim >= _SPARSE_MIN and B is None:
            method, jac = "BDF", self._jacobian_sparse
        else:
            method, jac = ode_method, self.jacobian
        eq = integrate_to_equilibrium(
            self.drift, x0, jacobian=jac, tol=max(ode_tol, tol), t_max=t_max, method=method
        )
        try:
            x, it, res = self._newton(eq.x, tol, max_iter)
        except _NewtonError as exc:
            raise ConvergenceError(
                f"fixed_point: {first}; after integrating to residual {eq.residual:.3e}, "
                f"Newton polishing failed too ({exc}); required ‖f‖∞ ≤ {tol:.1e}"
            ) from exc
        problem = self._negative_rate(x, tol)
        if problem is not None:
            raise ConvergenceError(f"fixed_point: {first}; ODE + Newton: {problem}")
        is_stable = self._is_stable(x) if stable else None
        return FixedPointResult(
            x=_readonly(x),
            success=True,
            residual=res,
            num_iter=eq.num_iter + it,
            method=f"{method}+newton",
            message=(
                f"{first}; {method} to ‖f‖∞ = {eq.residual:.1e} at t = {eq.t:.3g}, then "
                f"Newton to {res:.2e} in {it} steps"
            ),
            stable=is_stable,
        )

    # ------------------------------------------------------------------ refined mean field
    def refined(self, x_star: Any, *, fp_tol: float = 1e-8) -> RefinedResult:
        """Steady-state refined mean field ``E[X^N] = π + V/N`` (Gast & Van Houdt 2017).

        Parameters
        ----------
        x_star : array_like, shape (n,)
            The fixed point π (e.g. ``fixed_point(...).x``).
        fp_tol : float
            ``‖f(x_star)‖∞`` above this is refused: the expansion is around a fixed point.

        Returns
        -------
        RefinedResult
            ``E[X^N] = x + V/N + O(1/N²)`` and ``Cov(X^N) = W/N + O(1/N²)``.

        Raises
        ------
        ConfigError
            ``x_star`` is not a fixed point or has negative rates.
        UnstableError
            ``A = Df(π)`` restricted to the span of the jumps is not Hurwitz: the expansion
            needs an exponentially stable fixed point.
        """
        x = self._state(x_star, "x_star")
        fres = float(np.max(np.abs(self.drift(x))))
        if not fres <= fp_tol:
            raise ConfigError(
                "x_star", f"is not a fixed point: ‖f(x_star)‖∞ = {fres:.3e} > {fp_tol:.1e}"
            )
        problem = self._negative_rate(x, fp_tol)
        if problem is not None:
            raise ConfigError("x_star", problem)
        A = self.jacobian(x)
        Q = self.diffusion(x)
        B, rank = self._basis()
        Ar, Qr = self._reduced(A), self._reduced(Q)
        top, thr = self._max_real_eig(Ar)
        if top >= thr:
            raise UnstableError(
                f"the Jacobian at the fixed point is not Hurwitz (max Re eigenvalue "
                f"{top:.3e}): the refined mean field needs a stable fixed point"
            )
        # scipy solves A X + X Aᴴ = q, so q = −Q gives A W + W Aᵀ + Q = 0.
        Wr = scipy.linalg.solve_continuous_lyapunov(Ar, -Qr)
        Wr = 0.5 * (Wr + Wr.T)
        lyap = float(np.max(np.abs(Ar @ Wr + Wr @ Ar.T + Qr)))
        lam, U = np.linalg.eigh(Wr)
        h = self._contract_eig(x, lam, U if B is None else B @ U)
        hr = h if B is None else B.T @ h
        Vr = -np.linalg.solve(Ar, 0.5 * hr)
        V = Vr if B is None else B @ Vr
        W = Wr if B is None else B @ Wr @ B.T
        return RefinedResult(
            x=_readonly(x),
            V=_readonly(V),
            W=_readonly(W),
            jacobian=_readonly(A),
            rank=rank,
            success=True,
            residual=lyap,
            num_iter=0,
            method="lyapunov",
            message=(
                f"refined mean field on a {rank}-dimensional span; ‖f(π)‖∞ = {fres:.1e}, "
                f"Lyapunov residual {lyap:.1e}"
            ),
        )
