"""LPS-d servers and Whittle's index (docs/models.md §B, Ayesta et al. (2018)).

This module is the single home of the model's equations.

One server: discrete slots, LPS-d with capacity q ∈ (0, 1]. With n jobs present each of the
first min(d, n) jobs completes with probability q/min(d, n), so the departures are
D ~ Binomial(min(d, n), q/min(d, n)); departures are drawn from the jobs present at the start
of a slot and the slot's arrival (probability p, only if the server is *active*) joins at its
end [reconstruction of the event order]. d = ∞ (``math.inf``) is PS, d = 1 is FCFS.

Whittle relaxation: threshold policy φ_m is active iff n < m; with E^m[C] its average cost and
A^m its fraction of active slots,

    W(m) = (E^{m+1}[C] − E^m[C]) / (A^{m+1} − A^m).

Computed naively this difference of averages cancels catastrophically once π^m(m) is below
machine precision (p < q, m ≳ 15). We compute it stably instead: δ = π^{m+1} − π^m solves
δ(I − P_{m+1}) = π^m(m)·v, Σδ = 0, where v = P_act[m] − P_pas[m] (φ_m and φ_{m+1} differ
only in row m). With y = δ/π^m(m) and A^m = (q/p)(1 − π^m(0)) (throughput balance: the
arrivals p·A^m equal the departures q·P(n ≥ 1) for every d) this gives

    W(m) = −(p/q) · (y·C) / y_0,

independent of how small π^m(m) is. :func:`whittle_indices_naive` keeps the direct formula
for the cross-check.

FCFS (d = 1) closed form (derived here). Under φ_m the chain is birth–death on {0..m}; with
ρ = p/q, r = p(1−q)/(q(1−p)) and a = ρ/(1−p), an unnormalised stationary vector is

    x_0 = 1,  x_n = a r^{n−1} (1 ≤ n ≤ m−1),  x_m = ρ r^{m−1} (m ≥ 1),

(cut equations x_0 p = x_1 q(1−p), x_n p(1−q) = x_{n+1} q(1−p), x_{m−1} p(1−q) = x_m q).
With Z_m = Σx_n, S_m = Σx_n C(n), A^m = (1 − 1/Z_m)/ρ and Z_{m+1} − Z_m = ρ a r^{m−1} (m ≥ 1):

    W(0) = ρ (C(1) − C(0)),
    W(m) = ρ Σ_{n=0}^{m} x_n [q C(m) + (1 − q) C(m+1) − C(n)]   (m ≥ 1),

a sum of non-negative terms for increasing C (no cancellation). For C(n) = n the sums are
geometric: W(m) = ρ[(m + 1 − q) Z_m − S_m] with closed-form Z_m, S_m (:func:`fcfs_index_linear`).

Indexability is *checked* by solving the single-arm subsidy problem (cost C(n) − ν per active
slot) by relative value iteration just below and above every W(m): the optimal policy must be
φ_m, resp. φ_{m+1}. The RVI result is certified by one exact policy evaluation (the policy-
iteration optimality test) so the verdict does not depend on the RVI stopping tolerance.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.special import gammaln

from lbrepro.core.args import float_arg, int_arg
from lbrepro.core.errors import ConfigError, ConvergenceError

__all__ = [
    "COSTS",
    "IndexabilityResult",
    "arm_matrices",
    "check_indexability",
    "cost_values",
    "departure_matrix",
    "departure_moments",
    "departure_pmf",
    "fcfs_index",
    "fcfs_index_linear",
    "fcfs_stationary",
    "parse_d",
    "solve",
    "subsidy_policy",
    "threshold_stationary",
    "whittle_indices",
    "whittle_indices_and_ranks",
    "whittle_indices_naive",
]

COSTS = ("linear", "meanvar")

# Departure probabilities below this are dropped from the PS (large-d) transition bands:
# P(D = j | n) ≤ q^j/j!, so j ≤ 20 already carries everything above double precision.
PMF_FLOOR = 1e-18


# ------------------------------------------------------------------------------ arguments
def parse_d(value: Any, name: str = "d") -> float:
    """LPS parameter d: an integer ≥ 1 or ∞ (``math.inf``, "inf", "∞" for PS)."""
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("inf", "infinity", "∞", "ps"):
            return math.inf
        try:
            value = float(text)
        except ValueError:
            raise ConfigError(name, f"must be an integer >= 1 or inf, got {value!r}") from None
    if isinstance(value, bool | np.bool_):
        raise ConfigError(name, f"must be an integer >= 1 or inf, got {value!r}")
    try:
        d = float(value)
    except (TypeError, ValueError):
        raise ConfigError(name, f"must be an integer >= 1 or inf, got {value!r}") from None
    if math.isinf(d) and d > 0:
        return math.inf
    if not math.isfinite(d) or d != int(d) or d < 1:
        raise ConfigError(name, f"must be an integer >= 1 or inf, got {value!r}")
    return float(int(d))


def check_q(q: Any, name: str = "q") -> float:
    """Server capacity q ∈ (0, 1]."""
    q = float_arg(name, q)
    if not 0.0 < q <= 1.0:
        raise ConfigError(name, f"capacity must lie in (0, 1], got {q}")
    return q


def check_p(p: Any, name: str = "p") -> float:
    """Bernoulli arrival probability p ∈ (0, 1)."""
    p = float_arg(name, p)
    if not 0.0 < p < 1.0:
        raise ConfigError(name, f"arrival probability must lie in (0, 1), got {p}")
    return p


def check_cost(cost: str, beta: Any) -> tuple[str, float]:
    """A named cost (linear or meanvar) and its weight β ≥ 0."""
    if cost not in COSTS:
        raise ConfigError("cost", f"must be one of {', '.join(COSTS)}, got {cost!r}")
    beta = float_arg("beta", beta)
    if beta < 0:
        raise ConfigError("beta", f"must be >= 0, got {beta}")
    return cost, beta


def d_label(d: float) -> str:
    """ "∞" for PS, the integer otherwise."""
    return "∞" if math.isinf(d) else str(int(d))


# ------------------------------------------------------------------------------ server chain
def departure_pmf(n: int, q: float, d: float) -> np.ndarray:
    """P(D = j), j = 0..min(d, n): Binomial(min(d, n), q/min(d, n)) (D = 0 when n = 0)."""
    k = int(min(d, n))
    if k == 0:
        return np.ones(1)
    s = q / k
    j = np.arange(k + 1)
    if s >= 1.0:  # q = 1, k = 1: the one job surely completes
        out = np.zeros(k + 1)
        out[k] = 1.0
        return out
    logc = gammaln(k + 1) - gammaln(j + 1) - gammaln(k - j + 1)
    return np.exp(logc + j * math.log(s) + (k - j) * math.log1p(-s))


def departure_moments(n: int, q: float, d: float) -> tuple[float, float]:
    """E[D] = q·1{n≥1} and E[D²] = q + q²(1 − 1/min(d, n)) (docs/models.md §B)."""
    if n == 0:
        return 0.0, 0.0
    k = min(d, n)
    return q, q + q * q * (1.0 - 1.0 / k)


def departure_bands(nmax: int, q: float, d: float) -> np.ndarray:
    """Table P[j, n] = P(D = j | n jobs), n = 0..nmax, j = 0..J (J: last non-negligible j)."""
    jmax = int(min(d, nmax))
    table = np.zeros((jmax + 1, nmax + 1))
    for n in range(nmax + 1):
        pmf = departure_pmf(n, q, d)
        table[: len(pmf), n] = pmf
    keep = np.nonzero(table.max(axis=1) >= PMF_FLOOR)[0]
    return table[: int(keep[-1]) + 1]


def departure_matrix(nmax: int, q: float, d: float) -> np.ndarray:
    """Dense (nmax+1)² matrix M[n, n − j] = P(D = j | n) (entries below 1e-18 dropped)."""
    M = np.zeros((nmax + 1, nmax + 1))
    for n in range(nmax + 1):
        pmf = departure_pmf(n, q, d)
        # Probabilities below 1e-18 are invisible next to the row's 1 but would leave
        # subnormal numbers that slow LAPACK down a hundredfold: dropped.
        M[n, n - np.arange(len(pmf))] = np.where(pmf >= PMF_FLOOR, pmf, 0.0)
    return M


def cost_values(
    nmax: int, q: float, d: float, cost: str = "linear", beta: float = 0.0
) -> np.ndarray:
    """Per-slot cost C(n), n = 0..nmax [reconstruction]: linear n, or n + β E[D(n)²]."""
    cost, beta = check_cost(cost, beta)
    n = np.arange(nmax + 1, dtype=float)
    if cost == "linear":
        return n
    k = np.minimum(d, np.maximum(n, 1.0))
    ed2 = np.where(n >= 1, q + q * q * (1.0 - 1.0 / k), 0.0)
    return n + beta * ed2


def arm_matrices(nmax: int, p: float, q: float, d: float) -> tuple[np.ndarray, np.ndarray]:
    """Passive and active transition matrices of one server on {0..nmax}.

    Passive: n → n − D. Active: n → n − D + Bernoulli(p) (arrival joins after departures).
    At the truncation level nmax the active row equals the passive one (arrival blocked);
    callers that optimise forbid the active action there.
    """
    P_pas = departure_matrix(nmax, q, d)
    P_act = (1.0 - p) * P_pas
    P_act[:, 1:] += p * P_pas[:, :-1]
    P_act[nmax] = P_pas[nmax]
    return P_pas, P_act


def _validated(p: Any, q: Any, d: Any) -> tuple[float, float, float]:
    """(p, q, d) checked and parsed, each error naming its parameter."""
    return check_p(p), check_q(q), parse_d(d)


def _stationary(P: np.ndarray) -> np.ndarray:
    """Stationary distribution of a unichain stochastic matrix (one normalisation column)."""
    n = P.shape[0]
    A = np.eye(n) - P
    A[:, 0] = 1.0
    b = np.zeros(n)
    b[0] = 1.0
    return np.linalg.solve(A.T, b)


def threshold_stationary(m: int, p: float, q: float, d: float) -> np.ndarray:
    """Stationary distribution of φ_m (active iff n < m) on {0..m}."""
    p, q, d = _validated(p, q, d)
    m = int_arg("m", m, 0)
    P_pas, P_act = arm_matrices(m + 1, p, q, d)
    P = P_act[: m + 1, : m + 1].copy()
    P[m] = P_pas[m, : m + 1]
    return _stationary(P)


def _cost_array(
    nmax: int, q: float, d: float, cost: str | Callable[[np.ndarray], np.ndarray], beta: float
) -> np.ndarray:
    """C(0..nmax) of a named cost or of a user function of the array n (tests, controls)."""
    if callable(cost):
        return np.asarray(cost(np.arange(nmax + 1)), dtype=float)
    return cost_values(nmax, q, d, cost, beta)


def whittle_indices(
    p: float,
    q: float,
    d: float,
    nmax: int = 20,
    cost: str | Callable[[np.ndarray], np.ndarray] = "linear",
    beta: float = 0.0,
) -> np.ndarray:
    """Whittle indices W(0..nmax) from threshold-policy stationary distributions (stable form).

    ``cost`` is "linear", "meanvar" (with ``beta``) or any function of the array n = 0..N.
    A state that cannot be reached from below (q = 1, m ≥ 2: one job surely leaves per slot)
    has A^{m+1} = A^m; its index is undefined and returned as +∞. An index beyond the float
    range (p > q: W(m) grows like r^m, past 1.8e308 from m ≈ 156 at p = 0.99, q = 0.5, d = 1)
    is +∞ too; :func:`whittle_indices_and_ranks` keeps the order of such indices.
    """
    return _whittle_indices(p, q, d, nmax, cost, beta)[0]


def whittle_indices_and_ranks(
    p: float,
    q: float,
    d: float,
    nmax: int = 20,
    cost: str | Callable[[np.ndarray], np.ndarray] = "linear",
    beta: float = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    """(:func:`whittle_indices`, asinh W): the indices and their order, the latter finite also
    where W is beyond the float range.

    asinh is increasing, so a smallest-index rule routes the same on W and on asinh W; for
    W ≥ 1e8 it is log(2W) to double precision, which is how an index past 1.8e308 is given
    (from its logarithm). Undefined indices stay +∞.
    """
    W, logs = _whittle_indices(p, q, d, nmax, cost, beta)
    ranks = np.arcsinh(W)
    beyond = ~np.isnan(logs)
    ranks[beyond] = logs[beyond] + math.log(2.0)
    return W, ranks


_LOG_MAX = math.log(np.finfo(float).max)


def _whittle_indices(
    p: float,
    q: float,
    d: float,
    nmax: int,
    cost: str | Callable[[np.ndarray], np.ndarray],
    beta: float,
) -> tuple[np.ndarray, np.ndarray]:
    """W(0..nmax) (:func:`whittle_indices`) and log W where W is beyond the float range
    (there W = +∞; elsewhere NaN)."""
    p, q, d = _validated(p, q, d)
    nmax = int_arg("nmax", nmax, 0)
    C = _cost_array(nmax + 1, q, d, cost, beta)
    P_pas, P_act = arm_matrices(nmax + 2, p, q, d)
    down_act = np.cumsum(P_act, axis=1)  # P(i → ≤ k) under the active action
    topdown: dict[int, np.ndarray] = {}
    logdown: dict[int, np.ndarray] = {}
    out = np.empty(nmax + 1)
    logs = np.full(nmax + 1, np.nan)
    for m in range(nmax + 1):
        size = m + 2
        P = P_act[:size, :size].copy()  # φ_{m+1}: active on 0..m, passive at m+1
        P[m + 1] = P_pas[m + 1, :size]
        v = P_act[m, :size] - P_pas[m, :size]
        A = np.eye(size) - P
        A[:, 0] = 1.0  # replaces one (redundant) balance equation by Σy = 0
        rhs = v.copy()
        rhs[0] = 0.0
        y = np.linalg.solve(A.T, rhs)
        if q == 1.0 and m >= 2:
            out[m] = math.inf
        elif abs(y[0]) >= 1e-3 * np.abs(y).max():
            out[m] = -(p / q) * float(y @ C[:size]) / y[0]
        else:
            # p > q: the mass sits at the top and y_0 ~ r^(−m) is swamped by rounding. Here
            # π(0) itself is tiny and each π is accurate from the top-down cut recursion, and
            # π^m(0)/π^{m+1}(0) ≈ r ≠ 1, so the defining quotient no longer cancels.
            for k in (m, m + 1):
                if k not in topdown:
                    topdown[k] = _threshold_topdown(k, P_pas, P_act, down_act)
            lo, hi = topdown[m], topdown[m + 1]
            dE = float(hi @ C[: m + 2] - lo @ C[: m + 1])
            with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
                w = dE / ((q / p) * (lo[0] - hi[0]))
            if np.isfinite(w):
                out[m] = w
                continue
            # W is beyond the float range: π(0) ~ r^(−m) underflowed. Its logarithm, from
            # the same recursion in logarithms (was: a division by zero, an overflow, and
            # two bare RuntimeWarnings in the user's JSON).
            for k in (m, m + 1):
                if k not in logdown:
                    logdown[k] = _threshold_topdown_log(k, P_pas, P_act, down_act)
            llo, lhi = logdown[m][0], logdown[m + 1][0]
            if not (dE > 0 and llo > lhi):  # not an increasing cost: no order to keep
                out[m] = math.copysign(math.inf, dE) if dE != 0 else math.nan
                continue
            log_w = math.log(dE) - math.log(q / p) - (llo + math.log1p(-math.exp(lhi - llo)))
            out[m] = math.exp(log_w) if log_w < _LOG_MAX else math.inf
            if math.isinf(out[m]):
                logs[m] = log_w
    return out, logs


def _threshold_topdown_log(
    m: int, P_pas: np.ndarray, P_act: np.ndarray, down_act: np.ndarray
) -> np.ndarray:
    """log π of φ_m by the recursion of :func:`_threshold_topdown` in logarithms: exact where
    π(0) is below the smallest float."""
    with np.errstate(divide="ignore"):
        log_down = np.log(_cut_down(m, P_pas, down_act))
    lx = np.full(m + 1, -np.inf)
    lx[m] = 0.0
    for j in range(m, 0, -1):
        terms = lx[j:] + log_down[j:, j - 1]
        top = terms.max()
        lx[j - 1] = top + math.log(np.exp(terms - top).sum()) - math.log(P_act[j - 1, j])
    top = lx.max()
    return lx - (top + math.log(np.exp(lx - top).sum()))


def _threshold_topdown(
    m: int, P_pas: np.ndarray, P_act: np.ndarray, down_act: np.ndarray
) -> np.ndarray:
    """π of φ_m from the cut equations, top down (all terms positive: relative accuracy).

    The chain is skip-free upwards, so across the cut {0..j−1} | {j..m}
    π_{j−1} P(j−1 → j) = Σ_{i ≥ j} π_i P(i → ≤ j−1).
    """
    down = _cut_down(m, P_pas, down_act)
    x = np.zeros(m + 1)
    x[m] = 1.0
    for j in range(m, 0, -1):
        x[j - 1] = float(x[j:] @ down[j:, j - 1]) / P_act[j - 1, j]
    return x / x.sum()


def _cut_down(m: int, P_pas: np.ndarray, down_act: np.ndarray) -> np.ndarray:
    """down[i, k] = P(i → ≤ k) under φ_m (active on 0..m−1, passive at m), on 0..m."""
    down = down_act[: m + 1, : m + 1].copy()
    down[m] = np.cumsum(P_pas[m, : m + 1])
    return down


def whittle_indices_naive(
    p: float, q: float, d: float, nmax: int = 20, cost: str = "linear", beta: float = 0.0
) -> np.ndarray:
    """W(m) by the defining difference quotient of two stationary averages (loses digits)."""
    p, q, d = _validated(p, q, d)
    C = cost_values(nmax + 1, q, d, cost, beta)
    E, A = [], []
    for m in range(nmax + 2):
        pi = threshold_stationary(m, p, q, d)
        E.append(float(pi @ C[: m + 1]))
        A.append(float(pi[:m].sum()))
    E_arr, A_arr = np.array(E), np.array(A)
    return np.diff(E_arr) / np.diff(A_arr)


# ------------------------------------------------------------------------------ FCFS closed form
def fcfs_stationary(m: int, p: float, q: float) -> np.ndarray:
    """Closed-form stationary distribution of φ_m for d = 1 (module docstring)."""
    p, q = check_p(p), check_q(q)
    m = int_arg("m", m, 0)
    x = _fcfs_weights(m, p, q)
    return x / x.sum()


def _fcfs_weights(m: int, p: float, q: float) -> np.ndarray:
    """Unnormalised stationary vector x_0..x_m of φ_m for d = 1 (module docstring)."""
    rho = p / q
    r = p * (1 - q) / (q * (1 - p))
    a = rho / (1 - p)
    x = np.empty(m + 1)
    x[0] = 1.0
    if m >= 1:
        x[1:m] = a * r ** np.arange(m - 1)
        x[m] = rho * r ** (m - 1)
    return x


def fcfs_index(
    p: float,
    q: float,
    nmax: int = 20,
    cost: str | Callable[[np.ndarray], np.ndarray] = "linear",
    beta: float = 0.0,
) -> np.ndarray:
    """Closed-form W(0..nmax) for FCFS (d = 1) and any cost C(n) (module docstring).

    As in :func:`whittle_indices`, states unreachable from below (q = 1, m ≥ 2) get +∞.
    """
    p, q = check_p(p), check_q(q)
    C = _cost_array(nmax + 1, q, 1.0, cost, beta)
    rho = p / q
    out = np.empty(nmax + 1)
    out[0] = rho * (C[1] - C[0])
    for m in range(1, nmax + 1):
        if q == 1.0 and m >= 2:
            out[m] = math.inf
            continue
        x = _fcfs_weights(m, p, q)
        target = q * C[m] + (1 - q) * C[m + 1]
        out[m] = rho * float(x @ (target - C[: m + 1]))
    return out


def fcfs_index_linear(p: float, q: float, m: int) -> float:
    """Fully explicit W(m) for FCFS and C(n) = n: ρ[(m + 1 − q) Z_m − S_m], geometric sums."""
    p, q = check_p(p), check_q(q)
    m = int_arg("m", m, 0)
    rho = p / q
    if m == 0:
        return rho
    if q == 1.0 and m >= 2:
        return math.inf
    r = p * (1 - q) / (q * (1 - p))
    a = rho / (1 - p)
    k = m - 1
    if abs(1.0 - r) < 1e-6:  # r = 1 (p = q): the geometric sums become polynomial
        g0, g1 = float(k), k * (k + 1) / 2.0
    else:
        # Σ_{j<k} r^j and Σ_{n=1}^{k} n r^{n−1}
        g0 = (1 - r**k) / (1 - r)
        g1 = (1 - (k + 1) * r**k + k * r ** (k + 1)) / (1 - r) ** 2
    Z = 1.0 + a * g0 + rho * r**k
    S = a * g1 + m * rho * r**k
    return rho * ((m + 1 - q) * Z - S)


# ------------------------------------------------------------------------------ indexability
def _evaluate(P: np.ndarray, c: np.ndarray) -> tuple[float, np.ndarray]:
    """Average cost g and bias h (h(0) = 0) of a unichain policy: h + g = c + P h."""
    n = P.shape[0]
    A = np.eye(n) - P
    A[:, 0] = 1.0  # unknown 0 is g (h(0) = 0 fixes the constant)
    sol = np.linalg.solve(A, c)
    g = float(sol[0])
    h = sol.copy()
    h[0] = 0.0
    return g, h


def subsidy_policy(
    p: float,
    q: float,
    d: float,
    nu: float,
    nmax: int,
    cost: str | Callable[[np.ndarray], np.ndarray] = "linear",
    beta: float = 0.0,
    tol: float = 1e-11,
    max_iter: int = 200_000,
) -> tuple[np.ndarray, dict[str, Any]]:
    """Optimal single-arm policy for subsidy ν per active slot, states 0..nmax.

    Relative value iteration (vectorised) on h(n) = C(n) + min(P_pas h, −ν + P_act h) − g,
    stopped when span(Th − h) < tol·scale; its greedy policy is then certified by exact
    policy evaluation and the policy-iteration test (repeated until no state improves by more
    than a relative 1e-12). Active is forbidden at the truncation level nmax.
    Returns (active flags, info with g, RVI iterations, improvement steps and the relative
    margin |Q_act − Q_pas|/(|Q| + |ν| + 1) of each state's decision).
    """
    p, q, d = _validated(p, q, d)
    C = _cost_array(nmax, q, d, cost, beta)
    P_pas, P_act = arm_matrices(nmax, p, q, d)
    allowed = np.ones(nmax + 1, dtype=bool)
    allowed[nmax] = False
    scale = max(1.0, abs(nu), float(C.max()))
    h = np.zeros(nmax + 1)
    it = 0
    while True:
        it += 1
        q_pas = C + P_pas @ h
        q_act = np.where(allowed, C - nu + P_act @ h, np.inf)
        Th = np.minimum(q_pas, q_act)
        diff = Th - h
        h = Th - Th[0]
        if diff.max() - diff.min() < tol * scale:
            break
        if it >= max_iter:
            raise ConvergenceError(
                f"subsidy RVI: span {diff.max() - diff.min():.3g} after {it} iterations"
            )
    active = q_act < q_pas
    steps = 0
    while True:
        P = np.where(active[:, None], P_act, P_pas)
        c = C - nu * active
        g, h = _evaluate(P, c)
        q_pas = C + P_pas @ h
        q_act = np.where(allowed, C - nu + P_act @ h, np.inf)
        margin = 1e-12 * (np.abs(q_pas) + abs(nu) + 1.0)
        better = np.where(active, q_pas < q_act - margin, q_act < q_pas - margin)
        if not better.any():
            break
        steps += 1
        if steps > 100:
            raise ConvergenceError("subsidy policy iteration did not settle in 100 steps")
        active = np.where(better, ~active, active)
    rel_margin = np.abs(q_act - q_pas) / (np.abs(q_pas) + abs(nu) + 1.0)
    info = {"g": g, "rvi_iterations": it, "improvement_steps": steps, "rel_margin": rel_margin}
    return active, info


@dataclass(frozen=True)
class IndexabilityResult:
    """Outcome of the subsidy-RVI check for one (p, q, d, cost).

    ``checked`` subsidies were solved; ``failures`` lists those whose optimal policy is not the
    expected threshold policy by a resolvable margin; ``unresolved`` those where a mismatch
    sits on a state whose two actions differ by less than ``RESOLUTION`` relative to the
    values involved (double precision cannot decide: W(m) ≳ 1e12 when p ≫ q).
    """

    passed: bool
    checked: int
    indices: np.ndarray
    failures: list[dict[str, Any]] = field(default_factory=list)
    unresolved: list[dict[str, Any]] = field(default_factory=list)


RESOLUTION = 1e-10


def check_indexability(
    p: float,
    q: float,
    d: float,
    mmax: int = 20,
    cost: str | Callable[[np.ndarray], np.ndarray] = "linear",
    beta: float = 0.0,
    margin: int = 10,
    nmax: int | None = None,
    rel_eps: float = 1e-3,
    indices: np.ndarray | None = None,
) -> IndexabilityResult:
    """Check indexability at every W(m), m = 0..mmax, by the subsidy problem.

    For ν = W(m) ∓ ε the optimal policy on states 0..mmax+margin must be φ_m, resp.
    φ_{m+1}. ε = ``rel_eps``·|W(m)|, shrunk to a quarter of the gap to the neighbouring
    indices, so no other index lies between ν and W(m) ("just below/above"); a relative 1e-3
    keeps the decision at state m far above rounding even when W(m) ~ 1e9. The arm is
    truncated at ``nmax`` (default 2·(mmax + margin) + 10); only the states up to
    mmax + margin are compared so the truncation boundary cannot decide a verdict.
    Non-monotone indices (W(m+1) ≤ W(m)) are failures too: no subsidy then separates φ_m.
    ``indices`` replaces the computed W(0..mmax + margin) (a control: a misplaced index curve
    must be flagged by the same subsidy test).
    """
    p, q, d = _validated(p, q, d)
    if not callable(cost):
        cost, beta = check_cost(cost, beta)
    mmax = int_arg("mmax", mmax, 0)
    ncheck = mmax + margin
    nmax = 2 * ncheck + 10 if nmax is None else int_arg("nmax", nmax, ncheck + 2)
    W = whittle_indices(p, q, d, ncheck, cost, beta)
    if indices is not None:
        given = np.asarray(indices, dtype=float)
        if given.shape != W.shape:
            raise ValueError(f"indices: need {W.shape[0]} values W(0..{ncheck}), got {given.shape}")
        W = given
    failures: list[dict[str, Any]] = []
    unresolved: list[dict[str, Any]] = []
    checked = 0
    states = np.arange(ncheck + 1)
    for m in range(mmax + 1):
        if not math.isfinite(W[m]):
            continue
        gaps = [abs(W[m]) * rel_eps + 1e-12]
        if m > 0 and math.isfinite(W[m - 1]):
            gaps.append((W[m] - W[m - 1]) / 4)
        if math.isfinite(W[m + 1]):
            gaps.append((W[m + 1] - W[m]) / 4)
        eps = min(gaps)
        if eps <= 0:
            checked += 1
            failures.append(
                {"m": m, "reason": "indices not increasing", "W": W[max(m - 1, 0) : m + 2].tolist()}
            )
            continue
        for side, nu, thr in (("below", W[m] - eps, m), ("above", W[m] + eps, m + 1)):
            checked += 1
            active, info = subsidy_policy(p, q, d, nu, nmax, cost, beta)
            want = states < thr
            bad = np.nonzero(active[: ncheck + 1] != want)[0]
            if not bad.size:
                continue
            entry = {
                "m": m,
                "side": side,
                "nu": float(nu),
                "expected": f"phi_{thr}",
                "wrong_states": bad.tolist(),
                "rel_margin": float(info["rel_margin"][bad].max()),
            }
            (unresolved if entry["rel_margin"] < RESOLUTION else failures).append(entry)
    return IndexabilityResult(not failures, checked, W, failures, unresolved)


# ------------------------------------------------------------------------------ CLI
def solve(
    p: float, q: float, d: Any, cost: str = "linear", beta: float = 0.0, nmax: int = 20
) -> dict[str, Any]:
    """JSON-ready Whittle indices for ``lbrepro solve whittle`` (and the d = 1 closed form)."""
    p, q, dv = _validated(p, q, d)
    cost, beta = check_cost(cost, beta)
    W = whittle_indices(p, q, dv, nmax, cost, beta)
    out: dict[str, Any] = {
        "model": "whittle",
        "params": {"p": p, "q": q, "d": d_label(dv), "cost": cost, "beta": beta},
        "method": "mdp",
        "index": [float(w) if math.isfinite(w) else None for w in W],
    }
    if dv == 1.0:
        out["closed_form"] = {
            "index": [
                float(w) if math.isfinite(w) else None for w in fcfs_index(p, q, nmax, cost, beta)
            ]
        }
    return out
