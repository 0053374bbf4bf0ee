"""Service times inside a numba kernel: a distribution encoded as a code and a parameter vector.

A compiled kernel cannot call a Python distribution object, so a service distribution
reaches it as :class:`ServiceSampling` — an integer family code and a flat float vector —
and :func:`sample_service` draws from it with the kernel's xoshiro stream. The encoding
(which family gets which code, and the layout of its vector) lives here, next to the sampler
that reads it; :mod:`lbrepro.models.service` builds its distributions' encodings with
:func:`encode`, so the simulation samples exactly the distribution the formulas use.

Layouts (all parameters > 0): exponential ``[rate]``; Erlang ``[m, rate]``;
hyperexponential ``[n, p_1..p_n, r_1..r_n]``; Coxian ``[n, r_1..r_n, c_1..c_{n−1}, 0]``
(phase i continues with probability c_i); deterministic ``[value]``; Weibull
``[shape, scale]``; Lomax ``[alpha, sigma]``; lognormal ``[m, s]`` (log X ~ Normal(m, s²)).

:func:`sample_service` is inlined into the kernels that call it, and numba's on-disk cache of
a kernel does not notice edits to this file: after changing it, delete the ``__pycache__`` of
the calling module (as for :mod:`lbrepro.sim.xoshiro`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from numba import njit

from lbrepro.sim.xoshiro import uniform

__all__ = [
    "CODES",
    "ServiceSampling",
    "SupportsSampling",
    "encode",
    "sample_service",
]

CODE_EXPONENTIAL = 0
CODE_ERLANG = 1
CODE_HYPEREXP = 2
CODE_COXIAN = 3
CODE_DETERMINISTIC = 4
CODE_WEIBULL = 5
CODE_LOMAX = 6
CODE_LOGNORMAL = 7
CODES = {
    "exponential": CODE_EXPONENTIAL,
    "erlang": CODE_ERLANG,
    "hyperexp": CODE_HYPEREXP,
    "coxian": CODE_COXIAN,
    "deterministic": CODE_DETERMINISTIC,
    "weibull": CODE_WEIBULL,
    "lomax": CODE_LOMAX,
    "lognormal": CODE_LOGNORMAL,
}


@dataclass(frozen=True, eq=False)
class ServiceSampling:
    """What a simulator needs of a service distribution: its kernel encoding (``code``,
    ``params``), its mean (for the load check) and a label (for the result)."""

    code: int
    params: np.ndarray = field(repr=False)
    mean: float
    label: str


class SupportsSampling(Protocol):
    """A distribution object that can hand a simulator its :class:`ServiceSampling`."""

    @property
    def sampling(self) -> ServiceSampling:
        """The distribution's kernel encoding, mean and label."""
        ...


def encode(family: str, params: Mapping[str, Any]) -> tuple[int, np.ndarray]:
    """The kernel's (code, parameter vector) of a family with its named parameters (the
    names of :class:`lbrepro.models.service.ServiceDist`'s ``params``)."""
    if family == "hyperexp":
        vector = [len(params["probs"]), *params["probs"], *params["rates"]]
    elif family == "coxian":
        vector = [len(params["rates"]), *params["rates"], *params["cont"], 0.0]
    else:
        names = {
            "exponential": ("rate",),
            "erlang": ("m", "rate"),
            "deterministic": ("value",),
            "weibull": ("shape", "scale"),
            "lomax": ("alpha", "sigma"),
            "lognormal": ("m", "s"),
        }[family]
        vector = [params[name] for name in names]
    return CODES[family], np.asarray(vector, dtype=np.float64)


@njit(inline="always")
def sample_service(code, p, state):
    """One service time of the distribution (code, p), drawn with the kernel's stream
    (inlined into the calling kernel: a call per event costs more than most draws)."""
    if code == CODE_EXPONENTIAL:
        return -math.log(uniform(state)) / p[0]
    if code == CODE_ERLANG:  # sum of m exponentials
        m = int(p[0])
        s = 0.0
        for _ in range(m):
            s -= math.log(uniform(state))
        return s / p[1]
    if code == CODE_HYPEREXP:  # pick a branch, then an exponential of its rate
        n = int(p[0])
        x = uniform(state)
        i = 0
        acc = p[1]
        while i < n - 1 and x > acc:
            i += 1
            acc += p[1 + i]
        return -math.log(uniform(state)) / p[1 + n + i]
    if code == CODE_COXIAN:  # phases in sequence, stopping after phase i w.p. 1 − c_i
        n = int(p[0])
        s = 0.0
        for i in range(n):
            s -= math.log(uniform(state)) / p[1 + i]
            if i < n - 1 and uniform(state) > p[1 + n + i]:
                break
        return s
    if code == CODE_DETERMINISTIC:
        return p[0]
    if code == CODE_WEIBULL:  # inversion
        return p[1] * (-math.log(uniform(state))) ** (1.0 / p[0])
    if code == CODE_LOMAX:  # inversion: σ(U^{-1/α} − 1)
        return p[1] * (uniform(state) ** (-1.0 / p[0]) - 1.0)
    # CODE_LOGNORMAL: Box–Muller
    z = math.sqrt(-2.0 * math.log(uniform(state))) * math.cos(2.0 * math.pi * uniform(state))
    return math.exp(p[0] + p[1] * z)
