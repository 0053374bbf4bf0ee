"""Deep equilibrium tails of Schemes 1/2 in log space, to measure their decay law.

The float equilibrium underflows within a few levels; in ``ℓ = log u`` the same equations hold
exactly and are solved with relative accuracy to any depth.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np
import scipy.optimize

from lbrepro.core.errors import ConfigError, ConvergenceError
from lbrepro.models.hetero.equations import scheme2_indices
from lbrepro.models.hetero.meanfield import fixed_point
from lbrepro.models.hetero.system import System, check_lam, check_system


@dataclass(frozen=True, eq=False)
class LogTail:
    """Scheme 1/2 equilibrium tails in log space, far below what floats can hold as u.

    Attributes
    ----------
    log_u : tuple of ndarray
        Per type, ``(log u^{(j)}_0 = 0, log u^{(j)}_1, …, log u^{(j)}_{K_j})``.
    increments : tuple of ndarray
        Per type, successive differences of ``log(−log u^{(j)}_n)`` over n ≥ 1: constant in
        the limit iff the tail decays doubly exponentially, u_n ≈ exp(−c·r^n) with slope log r.
    residual : float
        Largest relative residual of the log-space equilibrium equations.
    """

    log_u: tuple[np.ndarray, ...]
    increments: tuple[np.ndarray, ...]
    residual: float


def _log1mexp(z: float) -> float:
    """``log(1 − e^{−x})`` at ``x = e^z``, accurate at both ends (Mächler 2012).

    Taking log x rather than x keeps it finite where x underflows: log(1 − e^{−x}) = z − x/2
    + O(x²) for tiny x.
    """
    if z > 6.0:
        return 0.0  # x > 400: e^{−x} < 1e-173, below the precision of anything it is added to
    x = math.exp(z)
    if x < 1e-8:
        return z - x / 2
    return math.log(-math.expm1(-x)) if x < math.log(2.0) else math.log1p(-math.exp(-x))


def log_tail(system: System, lam: float, policy: str, *, levels: int = 10) -> LogTail:
    """Scheme 1/2 equilibrium solved in log coordinates, to measure the tail's decay law.

    The equilibrium equations ``u^{(j)}_{n+1} − u^{(j)}_{n+2} = Δ_j A^{(j)}_n`` (docs/models.md §A)
    are written in ``ℓ = log u``: ``ℓ_{n+1} + log(1 − e^{ℓ_{n+2}−ℓ_{n+1}}) = log Δ_j +
    d_j ℓ^{(j)}_n + log(1 − e^{d_j(ℓ_{n+1}−ℓ_n)}) + Σ_i d_i ℓ^{(i)}_{idx}``. Why: the tails fall
    below 1e-308 within a few levels, so the float equilibrium of :func:`fixed_point` shows
    only 3–5 levels per type — too few to see whether log(−log u_n) becomes linear. In log
    space the same equations hold exactly, and are solved with relative accuracy to any depth.
    The unknowns are parametrised as ``ℓ_n = −Σ_{m≤n} e^{z_m}`` (strictly decreasing, so every
    logarithm is defined). Type j keeps ``K_j = ⌈levels·C_j/C_min⌉`` levels: under Scheme 2 a
    type-j server at level n competes with faster types at level ≈ nC_i/C_j, which must exist.
    Truncation: ``u_{K_j+1} = 0``. Started from the float equilibrium, extrapolated below it.
    """
    system = check_system(system)
    lam = check_lam(lam)
    if policy not in ("scheme1", "scheme2"):
        raise ConfigError("policy", f"log_tail is for scheme1 and scheme2, not {policy!r}")
    if isinstance(levels, bool) or not isinstance(levels, numbers.Integral) or levels < 3:
        raise ConfigError("levels", f"must be an integer >= 3, got {levels!r}")
    mf = fixed_point(system, lam, policy)
    M = system.num_types
    C = np.array(system.capacity)
    d = np.array(system.d)
    log_d = np.log(d)
    log_delta = np.log(lam / (system.mu * np.array(system.gamma) * C))

    def truncation(lv: int) -> list[int]:
        """Levels per type for ``lv`` levels of the slowest type (Scheme 2 needs C_j/C_min more)."""
        if policy == "scheme1":
            return [lv] * M
        return [math.ceil(lv * c / C.min()) for c in C]

    def indices(Ks: list[int]) -> np.ndarray:
        """The competitor levels ``idx[j, i, n]`` a type-j server at level n is compared with."""
        K_all = max(Ks)
        if policy == "scheme1":
            n = np.arange(K_all)
            return np.array([[n + 1 if C[i] > C[j] else n for i in range(M)] for j in range(M)])
        return scheme2_indices(C, K_all)

    def solve(lv: int, z0: list[np.ndarray]) -> tuple[list[np.ndarray], float, str]:
        """Solve the log-space equations at ``lv`` levels from z0; per-type z, residual, message."""
        Ks = truncation(lv)
        idx = indices(Ks)
        offsets = np.concatenate([[0], np.cumsum(Ks)])

        def ells(z: np.ndarray) -> list[np.ndarray]:
            """Per type ℓ_0..ℓ_{K+1} from the log-steps z (decreasing by construction)."""
            # ℓ_0 = 0, ℓ_1..ℓ_K decreasing, ℓ_{K+1} = −∞ (the truncation).
            return [
                np.concatenate(
                    [[0.0], -np.cumsum(np.exp(z[offsets[j] : offsets[j + 1]])), [-np.inf]]
                )
                for j in range(M)
            ]

        def residual(z: np.ndarray) -> np.ndarray:
            """Relative residuals of the log-space equilibrium equations, every level and type."""
            ell = ells(z)
            out = []
            for j in range(M):
                e, zj = ell[j], z[offsets[j] : offsets[j + 1]]  # e^{z_n} = ℓ_{n−1} − ℓ_n
                for k in range(Ks[j]):
                    # k = n: the equation for level n + 1 (n = 0..K_j − 1).
                    lhs = e[k + 1] + (_log1mexp(zj[k + 1]) if k + 1 < Ks[j] else 0.0)
                    rhs = log_delta[j] + d[j] * e[k] + _log1mexp(log_d[j] + zj[k])
                    for i in range(M):
                        if i != j:
                            rhs += d[i] * ell[i][idx[j, i, k]]
                    out.append((lhs - rhs) / max(1.0, abs(e[k + 1])))
            return np.array(out)

        sol = scipy.optimize.root(
            residual, np.concatenate(z0), method="hybr", options={"xtol": 1e-14}
        )
        res = float(np.max(np.abs(residual(sol.x))))
        zs = [sol.x[offsets[j] : offsets[j + 1]] for j in range(M)]
        return zs, res, str(sol.message)

    # Continuation in depth: solve with 3 levels (started from the float equilibrium), then
    # add levels one at a time, each new log-step guessed by repeating the last period's
    # growth (Scheme 2 tails of faster types grow in periods of C_j/C_min levels).
    lv = 3
    Ks = truncation(lv)
    idx = indices(Ks)
    known = [np.asarray(mf.u[j][: K + 1]) > 1e-250 for j, K in enumerate(Ks)]
    guess = [np.zeros(K + 2) for K in Ks]
    for _ in range(4):
        # Levels the float equilibrium resolves are taken from it; deeper ones from the
        # dominant term of the equation, ℓ_{n+1} ≈ log Δ_j + d_j ℓ_n + Σ_i d_i ℓ^{(i)}_{idx},
        # swept a few times because types reference each other's levels.
        for j, K in enumerate(Ks):
            g = guess[j]
            for k in range(1, K + 1):
                if k < known[j].size and known[j][k]:
                    g[k] = math.log(mf.u[j][k])
                else:
                    dominant = log_delta[j] + d[j] * g[k - 1]
                    dominant += sum(d[i] * guess[i][idx[j, i, k - 1]] for i in range(M) if i != j)
                    g[k] = min(dominant, g[k - 1] - 1e-3)
    z0 = [np.log(-np.diff(g[: K + 1])) for g, K in zip(guess, Ks, strict=True)]
    zs, res, message = solve(lv, z0)
    while lv < levels and res <= 1e-9:
        lv += 1
        z0 = []
        for z, new_K in zip(zs, truncation(lv), strict=True):
            p = new_K - z.size
            growth = z[-p:] - z[-2 * p : -p] if z.size >= 2 * p else np.full(p, math.log(2.0))
            z0.append(np.concatenate([z, z[-p:] + growth]))
        zs, res, message = solve(lv, z0)
    if not np.isfinite(res) or res > 1e-9:
        raise ConvergenceError(f"log_tail: residual {res:.2e} > 1e-9 at {lv} levels ({message})")
    ell = [np.concatenate([[0.0], -np.cumsum(np.exp(z))]) for z in zs]
    inc = tuple(np.diff(np.log(-e[1:])) for e in ell)
    return LogTail(log_u=tuple(ell), increments=inc, residual=res)
