"""Universality of power-of-d(N) load balancing (docs/models.md §E).

This module is the single home of the model's equations.

N unit-rate exponential servers, Poisson arrivals at rate λ(N), each job joins the shortest of
d(N) servers sampled without replacement (d(N) = N is JSQ). Mukherjee, Borst, van Leeuwaarden
& Whiting (2016/2018) couple JSQ(d(N)) with JSQ and show that

- fluid scale (λ(N)/N → λ < 1): as soon as d(N) → ∞, the fluid limit and its fixed point are
  those of JSQ, ``q = (1, λ, 0, 0, …)`` (q_i = fraction of servers with ≥ i jobs), whatever
  the growth rate of d(N); a fixed d keeps the supermarket fixed point ``λ^{(d^i−1)/(d−1)}``;
- diffusion scale (Halfin–Whitt, (N − λ(N))/√N → β > 0): as soon as d(N)/(√N log N) → ∞,
  ``X1 = (Q_1 − N)/√N`` and ``X2 = Q_2/√N`` (Q_i = number of servers with ≥ i jobs) converge
  to the JSQ diffusion limit of Eschenfeldt & Gamarnik (2018),

  ``dX1 = √2 dW − β dt + (−X1 + X2) dt − dU1``,  ``dX2 = dU1 − X2 dt``,

  with X1 ≤ 0, X2 ≥ 0 and U1 nondecreasing, increasing only when X1 = 0 (Q_i/√N → 0, i ≥ 3).

This module holds the d(N) families, the fluid fixed points, the Halfin–Whitt arrival rate, the
N-server simulation (sampling without replacement) and the stationary time averages of the
reflected SDE, simulated by the Euler–Maruyama kernel of :mod:`lbrepro.sim.diffusion` and
extrapolated to dt → 0.

Two stationarity identities of the SDE serve as exact checks. Stationarity of X2 gives
``rate(U1) = E[X2]``; stationarity of X1 then gives ``0 = −β − E[X1] + E[X2] − rate(U1)``, so

    ``E[−X1] = E[(N − Q_1)/√N] = β``  (flow balance: the mean idle capacity equals the slack).

Both hold *exactly* for the discretized schemes below too (sum the update equations over the
steps: only boundary terms and ``√2 W(T)/T`` remain), so they check the bookkeeping of the
reflection, not the step size. Itô's formula for X1·X2 and X1² (with X1 dU1 = 0) adds
``E[X1 X2] = −β E[X2]/2`` and ``E[X1²] = 1 + β² − β E[X2]/2``, which hold only as dt → 0 and
so give an estimate of E[X2] that is independent of the reflection bookkeeping.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np
from scipy.optimize import brentq

from lbrepro.core.args import float_arg, run_length
from lbrepro.core.errors import ConfigError, UnstableError
from lbrepro.core.stats import batch_means_ci
from lbrepro.meanfield.closed_forms import doubly_exponential_exponent
from lbrepro.models import supermarket
from lbrepro.models.spec import RUN_PARAMS, Model, Param, Summary, occupancy_conservation
from lbrepro.sim.diffusion import QUANTITIES, SCHEMES, DiffusionResult, simulate_coupled
from lbrepro.sim.occupancy import OccupancySimResult, simulate_occupancy

__all__ = [
    "D_FAMILIES",
    "SCHEMES",
    "DiffusionResult",
    "d_of_N",
    "family_label",
    "fluid_fixed_point",
    "halfin_whitt_lam",
    "jsq_diffusion_means",
    "parse_family",
    "q2_fluid",
    "simulate",
    "simulate_jsq_diffusion",
    "simulate_summary",
    "solve",
]

#: Named d(N) families: two fixed d, then growing ones up to JSQ (d = N).
D_FAMILIES = ("2", "5", "logN", "sqrtN", "sqrtNlogN", "sqrtNlog2N", "N")

_GROWING = {
    "logN": "⌈log N⌉",
    "sqrtN": "⌈√N⌉",
    "sqrtNlogN": "⌈√N log N⌉",
    "sqrtNlog2N": "⌈√N (log N)²⌉ ∧ N",
    "N": "N",
}


# ------------------------------------------------------------------------------ d(N)
def _check_n(N: Any) -> int:
    """N as an integer ≥ 2 (ConfigError naming ``N``)."""
    if isinstance(N, bool | np.bool_) or not isinstance(N, numbers.Integral) or N < 2:
        raise ConfigError("N", f"number of servers must be an integer >= 2, got {N!r}")
    return int(N)


def _fixed_d(family: Any) -> int | None:
    """The d of a fixed-d family (an int, or a string of decimal digits), else None."""
    if isinstance(family, bool | np.bool_):
        raise ConfigError("d", f"d(N) family must be an int or a family name, got {family!r}")
    is_digits = isinstance(family, str) and family.isascii() and family.isdigit()
    if not (isinstance(family, numbers.Integral) or is_digits):
        return None
    d = int(family)
    if d < 1:
        raise ConfigError("d", f"a fixed d must be >= 1, got {family!r}")
    return d


def d_of_N(family: str | int, N: int) -> int:  # noqa: N802 (the paper's d(N))
    """Number of sampled servers d(N) for a d(N) family at N servers.

    ``family`` is a fixed d (an int, or a digit string such as ``"2"``) or one of
    ``"logN"`` = ⌈ln N⌉, ``"sqrtN"`` = ⌈√N⌉, ``"sqrtNlogN"`` = ⌈√N ln N⌉,
    ``"sqrtNlog2N"`` = min(⌈√N (ln N)²⌉, N), ``"N"`` = N (JSQ).
    d servers are sampled without replacement, so a fixed d > N is refused (ConfigError
    naming ``d``) rather than silently clipped; the growing families never exceed N (ln N <
    √N, so even ⌈√N ln N⌉ ≤ N) and are at least 1. ``sqrtNlog2N`` is the one family here
    with d(N)/(√N ln N) → ∞ (the diffusion-scale condition of the paper) other than JSQ; it
    is capped at N, which it exceeds for N below about 5500 (it is JSQ there; 8 484 at
    N = 10⁴, 41 916 at N = 10⁵).
    """
    N = _check_n(N)
    d = _fixed_d(family)
    if d is not None and d > N:
        raise ConfigError(
            "d", f"d = {d} servers cannot be sampled without replacement from N = {N}"
        )
    if d is None:
        if family == "logN":
            d = math.ceil(math.log(N))
        elif family == "sqrtN":
            d = math.isqrt(N - 1) + 1  # exact ⌈√N⌉ for integers N >= 1
        elif family == "sqrtNlogN":
            d = math.ceil(math.sqrt(N) * math.log(N))
        elif family == "sqrtNlog2N":
            d = min(math.ceil(math.sqrt(N) * math.log(N) ** 2), N)
        elif family == "N":
            d = N
        else:
            raise ConfigError(
                "d",
                f"unknown d(N) family {family!r}: use an int or one of {', '.join(_GROWING)}",
            )
    return min(max(d, 1), N)


def family_label(family: str | int) -> str:
    """Legend label of a d(N) family, e.g. ``"d = 2"`` or ``"d = ⌈√N log N⌉"``."""
    d = _fixed_d(family)
    if d is not None:
        return f"d = {d}"
    if isinstance(family, str) and family in _GROWING:
        return f"d = {_GROWING[family]}"
    raise ConfigError(
        "d", f"unknown d(N) family {family!r}: use an int or one of {', '.join(_GROWING)}"
    )


# ------------------------------------------------------------------------------ fluid
def _check_lam(lam: Any) -> float:
    """λ as a finite float in (0, 1); λ ≥ 1 raises UnstableError (unit-rate servers)."""
    if isinstance(lam, bool | np.bool_) or not isinstance(lam, numbers.Real):
        raise ConfigError("lam", f"arrival rate per server must be a number, got {lam!r}")
    lam = float(lam)
    if not math.isfinite(lam) or lam <= 0:
        raise ConfigError("lam", f"arrival rate per server must be finite and > 0, got {lam!r}")
    if lam >= 1.0:
        raise UnstableError(f"load lam = {lam:g} >= 1: unit-rate servers are unstable")
    return lam


def _fluid_d(d: Any) -> int | None:
    """A finite d >= 1, or None for d(N) → ∞ (None, "inf" or math.inf)."""
    if d is None or (isinstance(d, str) and d == "inf"):
        return None
    if isinstance(d, numbers.Real) and not isinstance(d, bool | np.bool_):
        if d == math.inf:
            return None
        if math.isfinite(d) and d == int(d) and d >= 1:
            return int(d)
    raise ConfigError("d", f"must be an integer >= 1, None or 'inf' (d(N) → ∞), got {d!r}")


def fluid_fixed_point(lam: float, d: int | str | None, *, kmax: int | None = None) -> np.ndarray:
    """Fluid fixed point ``(q_0, q_1, …, q_K)`` of JSQ(d) at per-server load λ.

    Finite d: the supermarket fixed point ``q_i = λ^{(d^i−1)/(d−1)}``
    (:func:`lbrepro.models.supermarket.fixed_point_closed_form`; sampling with or without
    replacement gives the same fluid limit for fixed d). ``d = None`` or ``"inf"``: the JSQ
    fluid fixed point ``(1, λ, 0, 0, …)``, the limit of every d(N) → ∞ (Mukherjee et al.).
    Without ``kmax``, K is the first level below 1e-16 (K = 2 for JSQ); with ``kmax``, every
    level 0..kmax is given (values below the smallest float are 0).
    """
    lam = _check_lam(lam)
    dd = _fluid_d(d)
    if kmax is not None and (
        isinstance(kmax, bool | np.bool_) or not isinstance(kmax, numbers.Integral) or kmax < 1
    ):
        raise ConfigError("kmax", f"must be an integer >= 1 or None, got {kmax!r}")
    if kmax is None:
        if dd is None:
            return np.array([1.0, lam, 0.0])
        return supermarket.fixed_point_closed_form(lam, dd)
    out = np.zeros(int(kmax) + 1)
    out[0] = 1.0
    if dd is None:
        out[1] = lam
        return out
    log_lam = math.log(lam)
    for k in range(1, out.size):
        e = doubly_exponential_exponent(dd, k)  # exact integer (d^k − 1)/(d − 1)
        if e * log_lam < -800.0:  # below the smallest float: this level and all later are 0
            break
        out[k] = math.exp(e * log_lam)
    return out


def q2_fluid(lam: float, d: int | str | None) -> float:
    """Fluid fraction of servers with ≥ 2 jobs: ``λ^{d+1}`` for finite d, 0 for d(N) → ∞."""
    return float(fluid_fixed_point(lam, d, kmax=2)[2])


# ------------------------------------------------------------------------ Halfin–Whitt
def _check_beta(beta: Any) -> float:
    """β as a finite float > 0 (ConfigError naming ``beta``)."""
    if isinstance(beta, bool | np.bool_) or not isinstance(beta, numbers.Real):
        raise ConfigError("beta", f"must be a number, got {beta!r}")
    beta = float(beta)
    if not math.isfinite(beta) or beta <= 0:
        raise ConfigError("beta", f"must be finite and > 0, got {beta!r}")
    return beta


def halfin_whitt_lam(N: int, beta: float) -> float:
    """Per-server arrival rate λ(N)/N = 1 − β/√N of the Halfin–Whitt regime.

    The total rate λ(N) = N − β√N leaves a slack of β√N servers. β ≥ √N would mean no
    arrivals at all, which is refused as a bad β.
    """
    N = _check_n(N)
    beta = _check_beta(beta)
    root = math.sqrt(N)
    if beta >= root:
        raise ConfigError("beta", f"must be < √N = {root:g} so that λ(N) > 0, got {beta!r}")
    return 1.0 - beta / root


# ------------------------------------------------------------------ N-server system
def simulate(
    *,
    lam: float,
    N: int,
    d: int,
    horizon: float,
    warmup: float,
    seed: np.random.SeedSequence | int,
    batches: int = 20,
    start: str = "jsq",
    progress: bool = False,
) -> OccupancySimResult:
    """Simulate JSQ(d) on N servers, d sampled *without* replacement (d = N is JSQ).

    A thin call into the exact occupancy-count kernel (:mod:`lbrepro.sim.occupancy`), whose
    work per event does not depend on d or N. ``lam`` is the arrival rate per server (e.g.
    :func:`halfin_whitt_lam`); ``d`` an integer (e.g. :func:`d_of_N`). ``start="jsq"`` starts
    from the JSQ fluid fixed point (round(λN) servers with one job, the rest idle), which is
    also the mean state at the diffusion scale; ``"fixed_point"`` starts from the fixed-d
    mean-field fixed point rounded to N servers (the right start at the fluid scale with fixed
    d); ``"empty"`` starts empty. Starting at the fixed-d fixed point would be badly off for
    d ≈ √N at Halfin–Whitt loads (q_2 = λ^{d+1} ≈ e^{−β} rather than O(1/√N)). The warm-up
    is discarded either way.
    """
    if start not in ("jsq", "fixed_point", "empty"):
        raise ConfigError("start", f"must be 'jsq', 'fixed_point' or 'empty', got {start!r}")
    initial = None
    if start == "fixed_point":
        initial = supermarket.initial_counts(
            _check_lam(lam), _check_n_d(N, d), _check_n(N), seed=seed
        )
    elif start == "jsq":
        lam_f = _check_lam(lam)
        N_i = _check_n(N)
        busy = min(N_i, round(lam_f * N_i))
        initial = np.array([[N_i - busy, busy]], dtype=np.int64)
    return simulate_occupancy(
        lam=lam,
        N=N,
        d=d,
        horizon=horizon,
        warmup=warmup,
        seed=seed,
        batches=batches,
        replace=False,
        progress=progress,
        initial=initial,
    )


# --------------------------------------------------------------------- validation
def _check_dt(name: str, value: Any) -> float:
    """A step size in (0, 1), ConfigError naming ``name`` otherwise."""
    dt = float_arg(name, value)
    if not 0.0 < dt < 1.0:
        # dt < 1 keeps X2 ≥ 0 under its explicit decay step X2 ← X2(1 − dt) + ΔU1.
        raise ConfigError(name, f"step size must lie in (0, 1), got {dt!r}")
    return dt


def _check_run(horizon: Any, warmup: Any, batches: Any, scheme: Any) -> tuple[float, float, int]:
    """The run length (:func:`lbrepro.core.args.run_length`) and a known reflection scheme."""
    horizon, warmup, batches = run_length(horizon, warmup, batches)
    if scheme not in SCHEMES:
        raise ConfigError("scheme", f"must be one of {', '.join(SCHEMES)}, got {scheme!r}")
    return horizon, warmup, batches


def simulate_jsq_diffusion(
    *,
    beta: float,
    dt: float,
    horizon: float,
    warmup: float,
    seed: np.random.SeedSequence | int,
    batches: int = 20,
    scheme: str = "projection",
) -> DiffusionResult:
    """Stationary means of the JSQ diffusion limit (Eschenfeldt & Gamarnik 2018) by Euler.

    Euler–Maruyama for ``dX1 = √2 dW + (−β − X1 + X2) dt − dU1``, ``dX2 = dU1 − X2 dt`` with
    reflection of X1 at 0 from above. ``scheme="projection"``: take the unconstrained X1 step;
    its overshoot above 0 is the increment of U1, moved into X2 (weak error O(√dt)).
    ``scheme="bridge"``: the increment of U1 is the maximum above 0 of the Brownian bridge
    of the step (the exact Skorokhod map with the drift frozen; Lépingle 1995), which
    removes the O(√dt) error of missed boundary hits. [0, warmup) is discarded and the rest
    cut into ``batches`` batches for 95% batch-means intervals (core.stats).

    ``seed`` is an int (``core.rng.stream(seed)``) or a SeedSequence dedicated to this run.
    The Brownian path depends only on the seed and the grid, not on ``scheme``.
    """
    beta = _check_beta(beta)
    dt = _check_dt("dt", dt)
    horizon, warmup, batches = _check_run(horizon, warmup, batches, scheme)
    return simulate_coupled(beta, (dt,), horizon, warmup, seed, batches, scheme).results[0]


def _observed_order(h: np.ndarray, m: np.ndarray) -> float:
    """Local order p of ``m(h) = m0 + c h^p`` through the three finest step sizes.

    Solves ``(m1 − m2)/(m2 − m3) = (h1^p − h2^p)/(h2^p − h3^p)`` for p in [0.05, 5]; nan when
    the differences are lost in the noise (no root there).
    """
    idx = np.argsort(h)[::-1][-3:]
    (h1, h2, h3), (m1, m2, m3) = h[idx], m[idx]
    if m2 == m3:
        return float("nan")
    target = (m1 - m2) / (m2 - m3)

    def f(p: float) -> float:
        """The ratio of successive differences at order p, minus the observed one."""
        return (h1**p - h2**p) / (h2**p - h3**p) - target

    lo, hi = 0.05, 5.0
    if f(lo) * f(hi) > 0:
        return float("nan")
    return float(brentq(f, lo, hi))


def _extrapolation_weights(h: np.ndarray, orders: tuple[float, ...]) -> np.ndarray:
    """Weights w with ``Σ_j w_j m(h_j) = m0`` for ``m(h) = m0 + Σ_k c_k h^{orders[k]}``.

    Exact interpolation when there are as many step sizes as unknowns, least squares when
    there are more.
    """
    A = np.column_stack([np.ones_like(h)] + [h**p for p in orders])
    return np.linalg.pinv(A)[0]


def _check_orders(orders: Any, n_dts: int) -> tuple[float, ...]:
    """Distinct error exponents > 0, fewer than the step sizes (one more unknown: m0)."""
    if isinstance(orders, str | bytes) or not hasattr(orders, "__iter__"):
        raise ConfigError("orders", f"must be a sequence of exponents, got {orders!r}")
    out = tuple(float_arg("orders", p) for p in orders)
    if not out or any(p <= 0 for p in out) or len(set(out)) != len(out):
        raise ConfigError("orders", f"must be distinct exponents > 0, got {list(out)}")
    if len(out) >= n_dts:
        raise ConfigError(
            "orders", f"{len(out)} error terms need at least {len(out) + 1} step sizes, got {n_dts}"
        )
    return out


def jsq_diffusion_means(
    beta: float,
    *,
    dts: tuple[float, ...] = (0.02, 0.01, 0.005),
    horizon: float = 20_000.0,
    warmup: float = 100.0,
    seed: np.random.SeedSequence | int,
    batches: int = 20,
    scheme: str = "projection",
    orders: tuple[float, ...] | None = None,
) -> dict[str, Any]:
    """Stationary means of the JSQ diffusion limit at several step sizes, extrapolated to 0.

    All step sizes run on one Brownian path (each dt must be an integer multiple of the
    smallest; the coarse increments are sums of the fine ones), so the differences between
    step sizes are nearly free of sampling noise. The extrapolation fits the error expansion
    ``m(dt) = m0 + Σ_k c_k dt^{orders[k]}`` through the step sizes (least squares if there
    are more than unknowns). Defaults, from measurement (β = 1, dt = 0.04 … 0.0025):

    - ``"projection"``: ``orders = (1/2, 1)``. The weak error of projected Euler is
      O(√dt) (missed boundary hits), but the dt term is as large over practical steps: the
      local order of E[X2] is only ≈ 0.3–0.4 there (c_1 < 0 < c_2). A √dt-only fit is
      ≈ 2.5% low at β = 1; the two-term fit agrees with the bridge scheme on the same path
      within ≈ 0.3% at β = 1 (10 seeds) and 1% at β = 0.5. With two dts only the √dt term
      is used.
    - ``"bridge"``: ``orders = (1,)``; its differences between step sizes are a few 1e-3 at
      dt ≤ 0.02 and shrink roughly like dt.

    The 95% interval applies the same weights batch by batch, so it includes the correlation
    between step sizes. The default horizon is chosen for honest intervals: X2 decorrelates
    slowly (more so as β → 0), and with ``horizon = 2000`` (batches of ≈ 100 time units) the
    95% batch-means intervals covered only 85–93% of 200 seeds at β ∈ {0.5, 1}, against
    ≈ 96% at 20 000 (≈ 0.2 s for three dts). ``observed_order[q]`` is the local order
    through the three finest dts (nan with two dts or when the differences are within noise).

    Returns a JSON-ready dict: ``beta``, ``scheme``, ``dts``, ``orders``, ``runs`` (one
    :meth:`DiffusionResult.to_dict` per dt), ``extrapolated[q] = {"mean", "ci"}`` and
    ``observed_order[q]`` for every time average q of :class:`DiffusionResult`,
    ``elapsed`` (wall time of the coupled run) and ``steps`` (all its Euler steps).
    """
    beta = _check_beta(beta)
    horizon, warmup, batches = _check_run(horizon, warmup, batches, scheme)
    if isinstance(dts, str | bytes) or not hasattr(dts, "__iter__"):
        raise ConfigError("dts", f"must be a sequence of step sizes, got {dts!r}")
    dts_t = tuple(_check_dt("dts", dt) for dt in dts)
    if len(dts_t) < 2 or len(set(dts_t)) != len(dts_t):
        raise ConfigError("dts", f"need at least two distinct step sizes, got {list(dts_t)}")
    if orders is None:
        orders = ((0.5, 1.0) if len(dts_t) > 2 else (0.5,)) if scheme == "projection" else (1.0,)
    orders_t = _check_orders(orders, len(dts_t))

    run = simulate_coupled(beta, dts_t, horizon, warmup, seed, batches, scheme)
    h = np.array(dts_t)
    w = _extrapolation_weights(h, orders_t)
    extrapolated = {}
    observed = {}
    for q in QUANTITIES:
        est = batch_means_ci(run.per_batch[q] @ w)
        extrapolated[q] = {"mean": float(est.mean), "ci": [float(est.low), float(est.high)]}
        means = run.per_batch[q].mean(axis=0)
        observed[q] = _observed_order(h, means) if h.size >= 3 else float("nan")
    return {
        "beta": beta,
        "scheme": scheme,
        "dts": list(dts_t),
        "orders": list(orders_t),
        "runs": [r.to_dict() for r in run.results],
        "extrapolated": extrapolated,
        "observed_order": observed,
        "elapsed": run.results[0].elapsed,
        "steps": int(sum(r.steps for r in run.results)),
    }


def _check_n_d(N: Any, d: Any) -> int:
    """d as an integer in 1..N (the kernel validates it again, naming ``d``)."""
    if isinstance(d, bool) or not isinstance(d, int | np.integer) or not 1 <= d <= _check_n(N):
        raise ConfigError("d", f"must be an integer in 1..N={N}, got {d!r}")
    return int(d)


def solve(lam: float, d: int | str) -> dict[str, Any]:
    """JSON-ready fluid fixed point for ``lbrepro solve universality``.

    ``d`` is a fixed integer (the supermarket fixed point λ^((d^i−1)/(d−1))) or ``"N"`` /
    ``"inf"`` for the JSQ fluid limit (1, λ, 0, …), the limit of every d(N) → ∞.
    """
    jsq = isinstance(d, str) and d in ("N", "inf")
    if isinstance(d, str) and not jsq:
        raise ConfigError("d", "the fluid limit is taken at a fixed integer d, or N/inf for JSQ")
    q = fluid_fixed_point(lam, None if jsq else d)
    lam = _check_lam(lam)
    return {
        "model": "universality",
        "params": {"lam": lam, "d": "inf" if jsq else int(d)},
        "method": "mf",
        "u": [float(v) for v in q],
        "mean_jobs": float(np.sum(q[1:])),
        "mean_sojourn": float(np.sum(q[1:])) / lam,
        "fixed_points": [{"u": [float(v) for v in q], "kind": "JSQ fluid" if jsq else "fixed d"}],
    }


def parse_family(text: str) -> int | str:
    """A fixed d (an integer) or a d(N) family name, as the config writes it."""
    return int(text) if text.lstrip("+-").isdigit() else text


def simulate_summary(
    *,
    lam: float,
    d: int | str,
    N: int,
    horizon: float,
    warmup: float | None = None,
    seed: np.random.SeedSequence | int = 1,
    batches: int = 20,
    progress: bool = False,
    start: str = "fixed_point",
) -> Summary:
    """``lbrepro simulate universality``: one run at d = d(N), echoing the family and its d.

    The d servers are always sampled without replacement (d = N is JSQ); the warm-up defaults
    to a tenth of the horizon.
    """
    d_value = d_of_N(d, N)
    if warmup is None:
        warmup = 0.1 * float_arg("horizon", horizon)
    result = simulate(
        lam=lam,
        N=N,
        d=d_value,
        horizon=horizon,
        warmup=warmup,
        seed=seed,
        batches=batches,
        progress=progress,
        start=start,
    )
    params = {"lam": lam, "d": d, "d_value": d_value, "start": start}
    return Summary({"params": params} | result.to_dict())


MODEL = Model(
    name="universality",
    help="JSQ(d(N)) with d(N) servers sampled without replacement (d(N) = N is JSQ)",
    params=(
        Param("lam", "real", "arrival rate per server (λ(N)/N)"),
        Param(
            "d",
            "text",
            "servers sampled (without replacement): an integer, or logN, "
            "sqrtN, sqrtNlogN, sqrtNlog2N, N (solve: an integer, or N for the JSQ limit)",
            parse=parse_family,
        ),
        *RUN_PARAMS,
        Param(
            "start",
            "choice",
            "initial state: the fixed-d mean-field fixed point rounded to N servers, or empty",
            choices=("fixed_point", "empty"),
            commands=("simulate",),
        ),
    ),
    solve=solve,
    simulate=simulate_summary,
    conservation=occupancy_conservation,
)
