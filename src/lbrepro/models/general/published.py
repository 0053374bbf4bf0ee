"""The paper's closed form as published (docs/models.md §C): θ = ∫_0^∞ [μḠ(x)]^d dx, the fixed
point Π_k = ρ^{(d^k−1)/(d−1)} θ^{(d^{k−1}−1)/(d−1)} and the sojourn time T_d built on it; and
the M/G/1 mean sojourn time (Pollaczek–Khinchine), the exact answer at d = 1."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import integrate

from lbrepro.core.args import sampled_servers
from lbrepro.meanfield.closed_forms import doubly_exponential_exponent
from lbrepro.models.general.arguments import service_dist, validated

__all__ = ["mg1_mean_sojourn", "published_sojourn", "published_tail", "theta", "theta_closed_form"]


def theta(dist: Any, d: Any) -> float:
    """θ = ∫_0^∞ [μ Ḡ(x)]^d dx by adaptive quadrature (any Ḡ, heavy tails included).

    The range is split at a few multiples of the mean so QUADPACK sees the bulk of the mass on
    a finite interval; the remaining tail goes to the infinite-range rule (a substitution that
    handles power-law integrands). Deterministic service integrates its support [0, value].
    """
    dist = service_dist(dist)
    d = sampled_servers(d)
    mu = dist.mu

    def integrand(x: float) -> float:
        """(μḠ(x))^d, the integrand of θ."""
        return float((mu * dist.survival(x)) ** d)

    end = dist.support_end
    if math.isfinite(end):
        val, _ = integrate.quad(integrand, 0.0, end, limit=200, epsabs=0, epsrel=1e-12)
        return val
    cut = 20.0 * dist.mean
    a, _ = integrate.quad(integrand, 0.0, cut, limit=400, epsabs=0, epsrel=1e-12)
    b, _ = integrate.quad(integrand, cut, math.inf, limit=400, epsabs=0, epsrel=1e-11)
    return a + b


def theta_closed_form(dist: Any, d: Any) -> float | None:
    """θ in closed form (docs/models.md §C) where one is known, else None.

    Exponential μ^{d−1}/d; Weibull μ^{d−1} d^{−1/k}; Lomax μ^{d−1}(α−1)/(dα−1);
    deterministic μ^{d−1}; Erlang-m of rate r (exact, by expanding (Σ_{j<m}(rx)^j/j!)^d as a
    polynomial and integrating term by term against e^{−drx}).
    """
    dist = service_dist(dist)
    d = sampled_servers(d)
    mu = dist.mu
    p = dist.params
    f = dist.family
    if f == "exponential":
        return mu ** (d - 1) / d
    if f == "weibull":
        return mu ** (d - 1) * d ** (-1.0 / p["shape"])
    if f == "lomax":
        a = p["alpha"]
        return mu ** (d - 1) * (a - 1) / (d * a - 1)
    if f == "deterministic":
        return mu ** (d - 1)
    if f == "erlang":
        m, r = p["m"], p["rate"]
        return mu**d * _erlang_power_integral(m, d) / r
    return None


def _erlang_power_integral(m: int, d: int) -> float:
    """∫_0^∞ (e^{−y} Σ_{j<m} y^j/j!)^d dy, exactly term by term, in log space.

    The d-th power of the polynomial has coefficients c_n (n ≤ (m−1)d) and each term
    integrates to c_n n!/d^{n+1}. In floating point c_n underflows and n! overflows once
    (m−1)d ≥ 171 (Erlang-50 at d = 20 raised OverflowError), although their product is of
    order one: so the convolutions run on log c_n (log-sum-exp) and every term is formed as
    exp(log c_n + log n! − (n+1) log d). All terms are positive, so nothing cancels.
    """
    log_poly = -np.array([math.lgamma(j + 1) for j in range(m)])  # log(1/j!)
    log_power = np.array([0.0])
    for _ in range(d):
        n_out = len(log_power) + m - 1
        # pairs[i, j] = log_power[i] + log_poly[j] contributes to the coefficient i + j
        pairs = log_power[:, None] + log_poly[None, :]
        out = np.full(n_out, -np.inf)
        for j in range(m):
            seg = out[j : j + len(log_power)]
            out[j : j + len(log_power)] = np.logaddexp(seg, pairs[:, j])
        log_power = out
    n = np.arange(len(log_power))
    lgam = np.array([math.lgamma(k + 1.0) for k in n])
    return math.fsum(np.exp(log_power + lgam - (n + 1) * math.log(d)).tolist())


def published_tail(
    dist: Any, lam: Any, d: Any, *, kmax: int = 1_000_000, tol: float = 1e-16
) -> np.ndarray:
    """The published fixed point Π_k = ρ^{(d^k−1)/(d−1)} θ^{(d^{k−1}−1)/(d−1)}, k = 0..K.

    (Π_0 = 1, Π_1 = ρ, Π_2 = θρ^{d+1}; d = 1 gives ρ^k θ^{k−1} with θ = 1.) Not the
    doubly exponential tail of :mod:`lbrepro.meanfield.closed_forms`: the paper's extra factor
    θ^{…} makes it differ beyond exponential service (and even there, by θ = 1/d at d ≥ 2). The
    exponents are the exact integers of :func:`doubly_exponential_exponent` at k and k − 1; the
    vector stops at kmax or at the first value below tol.
    """
    dist, lam, d = validated(dist, lam, d)
    rho = lam * dist.mean
    th = theta(dist, d)
    out = [1.0]
    for k in range(1, kmax + 1):
        e_rho = doubly_exponential_exponent(d, k)  # (d^k − 1)/(d − 1)
        e_th = doubly_exponential_exponent(d, k - 1)  # (d^{k−1} − 1)/(d − 1)
        log_v = e_rho * math.log(rho) + e_th * math.log(th)
        v = math.exp(log_v) if log_v > -745 else 0.0
        out.append(v)
        if v < tol:
            break
    return np.array(out)


def published_sojourn(dist: Any, lam: Any, d: Any) -> float:
    """T_d as the paper builds it [reconstruction, docs/models.md §C].

    T_d = Σ_{k≥1} (Π_{k−1}^d − Π_k^d)·[1/μ + 1{k≥2}(E[X_R] + (k−2)/μ)], E[X_R] = μE[X²]/2:
    an arrival that joins a queue of k − 1 jobs waits for the residual service of the job in
    progress and k − 2 full services. Infinite when E[X²] is (e.g. Lomax α ≤ 2).
    """
    dist, lam, d = validated(dist, lam, d)
    pi = np.append(published_tail(dist, lam, d, tol=1e-22), 0.0)
    mean = dist.mean
    xr = dist.residual_mean
    total = 0.0
    for k in range(1, pi.size):
        w = pi[k - 1] ** d - pi[k] ** d
        if w <= 0:
            continue
        extra = 0.0 if k == 1 else xr + (k - 2) * mean
        total += w * (mean + extra)
    return float(total)


def mg1_mean_sojourn(dist: Any, lam: Any) -> float:
    """Pollaczek–Khinchine: E[T] = E[X] + λE[X²]/(2(1 − ρ)) for the M/G/1 queue (d = 1)."""
    dist, lam, _ = validated(dist, lam, 1)
    rho = lam * dist.mean
    return dist.mean + lam * dist.second_moment / (2 * (1 - rho))
