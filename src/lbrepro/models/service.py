"""Service-time distributions for the supermarket model with general service (docs/models.md §C).

One small family of objects: each distribution knows its survival function Ḡ(x), its first
two moments, a NumPy sampler, a phase-type representation (α, S) where one exists, and a
numeric code plus a parameter vector that the numba kernel dispatches on (the encoding of
:mod:`lbrepro.sim.service_sampling`), so the simulation samples exactly the distribution the
formulas use.

Families (parameters, all > 0):

- ``exponential(rate)``; ``erlang(m, rate)`` (m phases of rate ``rate``);
- ``hyperexponential(probs, rates)``; ``coxian(rates, cont)`` (phase i continues to i + 1
  with probability ``cont[i]``);
- ``deterministic(value)``; ``weibull(shape, scale)`` (Ḡ = exp(−(x/scale)^shape));
- ``lomax(alpha, sigma)`` (Pareto II, Ḡ = (1 + x/σ)^−α, mean finite iff α > 1);
- ``lognormal(m, s)`` (log X ~ Normal(m, s²)).

:func:`parse` reads the CLI/config spelling ``"erlang:2"``, ``"lomax:1.5"``, ``"weibull:0.5"``,
``"hyperexp:0.5"`` …, scaled to a given mean (1 by default).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import special

from lbrepro.core.args import float_arg, int_arg
from lbrepro.core.errors import ConfigError
from lbrepro.sim.service_sampling import CODES, ServiceSampling, encode

__all__ = [
    "CODES",
    "ServiceDist",
    "coxian",
    "deterministic",
    "erlang",
    "exponential",
    "hyperexponential",
    "lognormal",
    "lomax",
    "parse",
    "weibull",
]


def _positive(name: str, value: Any) -> float:
    x = float_arg(name, value)
    if not x > 0:
        raise ConfigError(name, f"must be > 0, got {x:g}")
    return x


@dataclass(frozen=True, eq=False)
class ServiceDist:
    """A service-time distribution (see the module docstring for the families).

    ``kernel_params`` is the flat float vector the simulation kernel reads for ``code``
    (see :mod:`lbrepro.sim.service_sampling`).
    """

    family: str
    params: dict[str, Any]
    code: int
    kernel_params: np.ndarray = field(repr=False)
    mean: float
    second_moment: float
    label: str

    @property
    def mu(self) -> float:
        """Service rate 1/E[X]."""
        return 1.0 / self.mean

    @property
    def sampling(self) -> ServiceSampling:
        """What the general-service simulator needs: kernel encoding, mean and label."""
        return ServiceSampling(self.code, self.kernel_params, self.mean, self.label)

    @property
    def scv(self) -> float:
        """Squared coefficient of variation Var X / E[X]² (inf when E[X²] is)."""
        return self.second_moment / self.mean**2 - 1.0

    @property
    def residual_mean(self) -> float:
        """Mean residual service time seen by a Poisson arrival, E[X_R] = E[X²]/(2E[X])."""
        return self.second_moment / (2.0 * self.mean)

    # ---------------------------------------------------------------- survival function
    def survival(self, x: Any) -> np.ndarray:
        """Ḡ(x) = P(X > x), vectorised over x (x < 0 gives 1)."""
        x = np.asarray(x, dtype=float)
        xp = np.maximum(x, 0.0)
        p = self.params
        f = self.family
        if f == "exponential":
            out = np.exp(-p["rate"] * xp)
        elif f == "erlang":
            # P(Poisson(rate x) < m) = regularised upper incomplete gamma Q(m, rate x).
            out = special.gammaincc(p["m"], p["rate"] * xp)
        elif f in ("hyperexp", "coxian"):
            alpha, S = self.ph()
            out = _ph_survival(alpha, S, xp)
        elif f == "deterministic":
            out = (xp < p["value"]).astype(float)
        elif f == "weibull":
            out = np.exp(-((xp / p["scale"]) ** p["shape"]))
        elif f == "lomax":
            out = (1.0 + xp / p["sigma"]) ** (-p["alpha"])
        elif f == "lognormal":
            with np.errstate(divide="ignore"):
                z = (np.log(xp) - p["m"]) / p["s"]
            out = special.ndtr(-z)
        else:  # pragma: no cover - constructors only make the families above
            raise ConfigError("dist", f"unknown family {f!r}")
        return np.where(x < 0, 1.0, out)

    @property
    def support_end(self) -> float:
        """Right end of the support (inf except for deterministic)."""
        return self.params["value"] if self.family == "deterministic" else math.inf

    # ----------------------------------------------------------------------- phase type
    def ph(self) -> tuple[np.ndarray, np.ndarray] | None:
        """Phase-type representation (α, S): Ḡ(x) = α exp(Sx) 1; None if not phase type."""
        p = self.params
        f = self.family
        if f == "exponential":
            return np.ones(1), np.array([[-p["rate"]]])
        if f == "erlang":
            m, r = p["m"], p["rate"]
            S = -r * np.eye(m) + r * np.eye(m, k=1)
            alpha = np.zeros(m)
            alpha[0] = 1.0
            return alpha, S
        if f == "hyperexp":
            return np.array(p["probs"], dtype=float), -np.diag(np.array(p["rates"], dtype=float))
        if f == "coxian":
            rates = np.array(p["rates"], dtype=float)
            cont = np.array(p["cont"], dtype=float)
            n = rates.size
            S = -np.diag(rates)
            for i in range(n - 1):
                S[i, i + 1] = rates[i] * cont[i]
            alpha = np.zeros(n)
            alpha[0] = 1.0
            return alpha, S
        return None

    @property
    def is_phase_type(self) -> bool:
        return self.family in ("exponential", "erlang", "hyperexp", "coxian")

    # ------------------------------------------------------------------------- sampling
    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        """``size`` independent draws with NumPy (the kernel has its own numba sampler)."""
        p = self.params
        f = self.family
        if f == "exponential":
            return rng.exponential(1.0 / p["rate"], size)
        if f == "erlang":
            return rng.gamma(p["m"], 1.0 / p["rate"], size)
        if f == "hyperexp":
            branch = rng.choice(len(p["probs"]), size=size, p=np.array(p["probs"]))
            return rng.exponential(1.0, size) / np.array(p["rates"])[branch]
        if f == "coxian":
            rates, cont = np.array(p["rates"]), np.array(p["cont"])
            out = np.zeros(size)
            alive = np.ones(size, dtype=bool)
            for i in range(rates.size):
                out[alive] += rng.exponential(1.0 / rates[i], int(alive.sum()))
                if i < rates.size - 1:
                    alive &= rng.random(size) < cont[i]
            return out
        if f == "deterministic":
            return np.full(size, p["value"])
        if f == "weibull":
            return p["scale"] * rng.weibull(p["shape"], size)
        if f == "lomax":
            return p["sigma"] * rng.pareto(p["alpha"], size)
        if f == "lognormal":
            return rng.lognormal(p["m"], p["s"], size)
        raise ConfigError("dist", f"unknown family {f!r}")  # pragma: no cover

    def scaled(self, mean: float) -> ServiceDist:
        """The same shape rescaled to the given mean."""
        mean = _positive("mean", mean)
        c = mean / self.mean
        p = self.params
        f = self.family
        if f == "exponential":
            return exponential(p["rate"] / c)
        if f == "erlang":
            return erlang(p["m"], p["rate"] / c)
        if f == "hyperexp":
            return hyperexponential(p["probs"], [r / c for r in p["rates"]])
        if f == "coxian":
            return coxian([r / c for r in p["rates"]], p["cont"])
        if f == "deterministic":
            return deterministic(p["value"] * c)
        if f == "weibull":
            return weibull(p["shape"], p["scale"] * c)
        if f == "lomax":
            return lomax(p["alpha"], p["sigma"] * c)
        return lognormal(p["m"] + math.log(c), p["s"])

    def as_dict(self) -> dict[str, Any]:
        return {"family": self.family, **self.params, "mean": self.mean}


def _ph_survival(alpha: np.ndarray, S: np.ndarray, x: np.ndarray) -> np.ndarray:
    """α exp(Sx) 1 through the eigen-decomposition-free scipy expm on each x."""
    from scipy.linalg import expm

    flat = np.ravel(x)
    ones = np.ones(S.shape[0])
    vals = np.array([alpha @ expm(S * xi) @ ones for xi in flat])
    return vals.reshape(np.shape(x))


def _make(family: str, params: dict[str, Any], m1: float, m2: float, label: str) -> ServiceDist:
    """A ServiceDist of the family with its moments, label and kernel encoding."""
    code, kernel_params = encode(family, params)
    return ServiceDist(
        family=family,
        params=params,
        code=code,
        kernel_params=kernel_params,
        mean=float(m1),
        second_moment=float(m2),
        label=label,
    )


def exponential(rate: float = 1.0) -> ServiceDist:
    """Exponential with the given rate."""
    r = _positive("rate", rate)
    return _make("exponential", {"rate": r}, 1 / r, 2 / r**2, f"Exp(rate {r:g})")


def erlang(m: int, rate: float) -> ServiceDist:
    """Erlang: sum of m exponential phases of rate ``rate`` (mean m/rate)."""
    m = int_arg("m", m, 1)
    r = _positive("rate", rate)
    return _make(
        "erlang", {"m": m, "rate": r}, m / r, m * (m + 1) / r**2, f"Erlang-{m}(rate {r:g})"
    )


def hyperexponential(probs: Sequence[float], rates: Sequence[float]) -> ServiceDist:
    """Mixture: with probability probs[i] an exponential of rate rates[i]."""
    if len(probs) != len(rates) or len(probs) < 1:
        raise ConfigError("probs", "probs and rates must be non-empty and of equal length")
    pr = [float_arg("probs", p) for p in probs]
    if any(p <= 0 for p in pr) or abs(math.fsum(pr) - 1) > 1e-9:
        raise ConfigError("probs", f"must be > 0 and sum to 1, got {pr}")
    rt = [_positive("rates", r) for r in rates]
    m1 = math.fsum(p / r for p, r in zip(pr, rt, strict=True))
    m2 = math.fsum(2 * p / r**2 for p, r in zip(pr, rt, strict=True))
    label = "H" + str(len(pr)) + f"(scv {m2 / m1**2 - 1:.3g})"
    return _make("hyperexp", {"probs": pr, "rates": rt}, m1, m2, label)


def coxian(rates: Sequence[float], cont: Sequence[float]) -> ServiceDist:
    """Coxian: phases of rates[i]; after phase i the job continues with probability cont[i]."""
    rt = [_positive("rates", r) for r in rates]
    ct = [float_arg("cont", c) for c in cont]
    if len(ct) != len(rt) - 1:
        raise ConfigError("cont", f"needs {len(rt) - 1} continuation probabilities, got {len(ct)}")
    if any(not 0 < c <= 1 for c in ct):
        raise ConfigError("cont", f"continuation probabilities must lie in (0, 1], got {ct}")
    # Moments through the PH formulas E[X^k] = k! α (−S)^{−k} 1.
    d = _make("coxian", {"rates": rt, "cont": ct}, 1, 2, "")
    alpha, S = d.ph()
    inv = np.linalg.inv(-S)
    ones = np.ones(len(rt))
    m1 = float(alpha @ inv @ ones)
    m2 = float(2 * alpha @ inv @ inv @ ones)
    return _make("coxian", d.params, m1, m2, f"Coxian-{len(rt)}(scv {m2 / m1**2 - 1:.3g})")


def deterministic(value: float = 1.0) -> ServiceDist:
    """Constant service time."""
    v = _positive("value", value)
    return _make("deterministic", {"value": v}, v, v * v, f"D({v:g})")


def weibull(shape: float, scale: float) -> ServiceDist:
    """Weibull, Ḡ(x) = exp(−(x/scale)^shape)."""
    k = _positive("shape", shape)
    s = _positive("scale", scale)
    m1 = s * math.gamma(1 + 1 / k)
    m2 = s * s * math.gamma(1 + 2 / k)
    return _make("weibull", {"shape": k, "scale": s}, m1, m2, f"Weibull(shape {k:g})")


def lomax(alpha: float, sigma: float) -> ServiceDist:
    """Lomax (Pareto II), Ḡ(x) = (1 + x/σ)^−α; the mean is finite only for α > 1."""
    a = _positive("alpha", alpha)
    s = _positive("sigma", sigma)
    if a <= 1:
        raise ConfigError(
            "alpha", f"Lomax shape alpha = {a:g} <= 1 gives an infinite mean service time"
        )
    m1 = s / (a - 1)
    m2 = 2 * s * s / ((a - 1) * (a - 2)) if a > 2 else math.inf
    return _make("lomax", {"alpha": a, "sigma": s}, m1, m2, f"Lomax(α {a:g})")


def lognormal(m: float, s: float) -> ServiceDist:
    """Lognormal: log X ~ Normal(m, s²)."""
    m = float_arg("m", m)
    s = _positive("s", s)
    m1 = math.exp(m + s * s / 2)
    m2 = math.exp(2 * m + 2 * s * s)
    return _make("lognormal", {"m": m, "s": s}, m1, m2, f"lognormal(σ {s:g})")


#: Most phases of an Erlang or Coxian law: the exact mean field has phases × levels states and
#: the published formula's polynomials overflow a float near 100 phases (``erlang:1000000``
#: asked for 7 TiB, ``erlang:3000`` ran for minutes).
MAX_PHASES = 64
#: Smallest Lomax shape: nearer 1 the scale α − 1 of a mean-1 law and the tail formulas
#: underflow (``lomax:1.0000001`` was a math domain error).
MIN_LOMAX_ALPHA = 1.0001
#: Largest Lomax shape: beyond, the mean-1 law is exponential to within 1e-6 and its tail
#: integrals lose their precision against the scale α − 1 (``lomax:1e15`` gave θ = 0.508 for
#: 0.5, ``lomax:1e17`` an OverflowError traceback).
MAX_LOMAX_ALPHA = 1.0e6
#: Largest squared coefficient of variation of ``hyperexp:scv``: beyond, one phase's rate
#: underflows against the other's and the solvers cannot converge.
MAX_SCV = 1.0e4


def _within_model_range(spec: str, d: ServiceDist) -> ServiceDist:
    """Refuse laws outside the range where the model's numerics hold (config and CLI alike)."""
    f, p = d.family, d.params
    phases = p.get("m") if f == "erlang" else len(p["rates"]) if f == "coxian" else None
    if phases is not None and phases > MAX_PHASES:
        raise ConfigError(
            "dist", f"{spec!r}: {phases} phases, at most {MAX_PHASES} (memory and run time)"
        )
    if f == "lomax" and p["alpha"] < MIN_LOMAX_ALPHA:
        raise ConfigError(
            "dist",
            f"{spec!r}: Lomax shape alpha must be >= {MIN_LOMAX_ALPHA} (nearer 1 the mean-1 "
            "law's scale underflows)",
        )
    if f == "lomax" and p["alpha"] > MAX_LOMAX_ALPHA:
        raise ConfigError(
            "dist",
            f"{spec!r}: Lomax shape alpha must be <= {MAX_LOMAX_ALPHA:g} (beyond, the law is "
            "exponential to within 1e-6: use exp)",
        )
    return d


def parse(spec: str, mean: float = 1.0) -> ServiceDist:
    """A distribution from ``"family[:p1[,p2…]]"``, rescaled to ``mean``.

    ``exp``, ``erlang:m``, ``hyperexp:scv`` (balanced-means H2 with that squared coefficient
    of variation), ``hyperexp:p1,p2,r1,r2``, ``coxian:r1,r2,…;c1,…``, ``det``,
    ``weibull:shape``, ``lomax:alpha``, ``lognormal:s``. Parameters whose moments overflow a
    float (``lognormal:50``) raise a ConfigError, not an OverflowError.
    """
    try:
        return _within_model_range(spec, _parse(spec, mean))
    except (OverflowError, ZeroDivisionError):
        raise ConfigError(
            "dist", f"{spec!r}: parameter out of range (the moments overflow a float)"
        ) from None


def _parse(spec: str, mean: float) -> ServiceDist:
    if not isinstance(spec, str) or not spec:
        raise ConfigError("dist", f"must be a string like 'erlang:2', got {spec!r}")
    name, _, rest = spec.partition(":")
    name = name.strip().lower()
    nums = [float_arg("dist", x) for x in rest.replace(";", ",").split(",") if x.strip()]

    def need(n: int) -> None:
        if len(nums) != n:
            raise ConfigError("dist", f"{name!r} takes {n} parameter(s), got {spec!r}")

    if name in ("exp", "exponential", "m"):
        need(0)
        d = exponential(1.0)
    elif name in ("erlang", "e"):
        need(1)
        if nums[0] != int(nums[0]):
            raise ConfigError("dist", f"Erlang phases must be an integer, got {nums[0]:g}")
        d = erlang(int(nums[0]), 1.0)
    elif name in ("hyperexp", "h2"):
        if len(nums) == 1:
            scv = nums[0]
            if not 1 < scv <= MAX_SCV:
                raise ConfigError("dist", f"hyperexp:scv needs 1 < scv <= {MAX_SCV:g}, got {scv:g}")
            # Balanced means (p1/r1 = p2/r2), mean 1.
            p1 = 0.5 * (1 + math.sqrt((scv - 1) / (scv + 1)))
            d = hyperexponential([p1, 1 - p1], [2 * p1, 2 * (1 - p1)])
        else:
            if len(nums) % 2 or not nums:
                raise ConfigError("dist", f"hyperexp takes p1..pn,r1..rn, got {spec!r}")
            n = len(nums) // 2
            d = hyperexponential(nums[:n], nums[n:])
    elif name == "coxian":
        if len(nums) % 2 == 0:
            raise ConfigError("dist", f"coxian takes r1..rn,c1..c(n-1), got {spec!r}")
        n = (len(nums) + 1) // 2
        d = coxian(nums[:n], nums[n:])
    elif name in ("det", "deterministic", "d"):
        need(0)
        d = deterministic(1.0)
    elif name == "weibull":
        need(1)
        d = weibull(nums[0], 1.0)
    elif name in ("lomax", "pareto"):
        need(1)
        d = lomax(nums[0], 1.0)
    elif name == "lognormal":
        need(1)
        d = lognormal(0.0, nums[0])
    else:
        raise ConfigError(
            "dist",
            f"unknown distribution {name!r}; known: exp, erlang:m, hyperexp:scv, coxian:…, det, "
            "weibull:shape, lomax:alpha, lognormal:s",
        )
    return d.scaled(mean)
