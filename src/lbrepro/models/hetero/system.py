"""The heterogeneous cluster itself: server types, policies and the checks of their arguments.

Conventions: types keep the caller's order in every input and output; wherever the order by
capacity matters it is computed from the capacities, never from positions.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any

import numpy as np

from lbrepro.core.errors import ConfigError

#: Policies understood by :func:`~lbrepro.models.hetero.population_model` and everything
#: built on it.
POLICIES = ("scheme1", "scheme2", "sqd", "typed", "random")


def finite_real(value: Any, key: str) -> float:
    """A finite real number (bools refused); errors name ``key``, so a bad input is one line."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ConfigError(key, f"must be a real number, got {value!r}")
    v = float(value)
    if not math.isfinite(v):
        raise ConfigError(key, f"must be finite, got {value!r}")
    return v


def value_sequence(value: Any, key: str) -> tuple[Any, ...]:
    """A sequence as a tuple; a string is refused (``"0.5,0.5"`` is the command line's job)."""
    if isinstance(value, str):
        raise ConfigError(key, f"must be a sequence of numbers, got the string {value!r}")
    try:
        return tuple(value)
    except TypeError:
        raise ConfigError(key, f"must be a sequence of numbers, got {value!r}") from None


@dataclass(frozen=True)
class System:
    """A heterogeneous cluster: type fractions, capacities and per-type sample sizes.

    Parameters
    ----------
    gamma : sequence of float
        Fraction of servers of each type; positive, summing to 1 (within 1e-9).
    capacity : sequence of float
        Capacity C_j of each type (service rate μC_j); positive and pairwise distinct (types
        with equal capacity are one type: merge them).
    d : sequence of int, or int
        Servers sampled per type by Schemes 1/2 and inside a type by type-based SQ(d); an
        int is used for every type.
    mu : float
        Service rate per unit capacity.
    """

    gamma: tuple[float, ...]
    capacity: tuple[float, ...]
    d: tuple[int, ...]
    mu: float = 1.0

    def __post_init__(self) -> None:
        """Validate and normalise every field, so a System is always a valid cluster."""
        gamma = value_sequence(self.gamma, "gamma")
        capacity = value_sequence(self.capacity, "capacity")
        d_raw = self.d
        if isinstance(d_raw, numbers.Integral) and not isinstance(d_raw, bool):
            d_raw = (d_raw,) * len(capacity)
        d = value_sequence(d_raw, "d")
        lengths = {"gamma": len(gamma), "capacity": len(capacity), "d": len(d)}
        if min(lengths.values()) < 1:
            empty = min(lengths, key=lengths.__getitem__)
            raise ConfigError(empty, "must list at least one server type")
        if len(set(lengths.values())) > 1:
            short = min(lengths, key=lengths.__getitem__)
            raise ConfigError(
                short,
                f"has {lengths[short]} entries but the system has "
                f"{max(lengths.values())} server types (gamma, capacity and d must have "
                "one entry per type)",
            )
        g = tuple(finite_real(v, "gamma") for v in gamma)
        if any(v <= 0 for v in g):
            raise ConfigError("gamma", f"type fractions must be > 0, got {g}")
        if abs(math.fsum(g) - 1.0) > 1e-9:
            raise ConfigError("gamma", f"type fractions must sum to 1, got sum {math.fsum(g)!r}")
        c = tuple(finite_real(v, "capacity") for v in capacity)
        if any(v <= 0 for v in c):
            raise ConfigError("capacity", f"capacities must be > 0, got {c}")
        if len(set(c)) < len(c):
            raise ConfigError(
                "capacity",
                f"capacities must be distinct, got {c}: types with equal capacity are one "
                "type, merge the types (add their gamma)",
            )
        for v in d:
            if (
                isinstance(v, bool)
                or not isinstance(v, numbers.Real)
                or not math.isfinite(v)
                or v != int(v)
                or v < 1
            ):
                raise ConfigError("d", f"sample sizes must be integers ≥ 1, got {tuple(d)}")
        mu = finite_real(self.mu, "mu")
        if mu <= 0:
            raise ConfigError("mu", f"service rate must be > 0, got {self.mu!r}")
        object.__setattr__(self, "gamma", g)
        object.__setattr__(self, "capacity", c)
        object.__setattr__(self, "d", tuple(int(v) for v in d))
        object.__setattr__(self, "mu", mu)

    @property
    def num_types(self) -> int:
        """Number of server types."""
        return len(self.gamma)

    @property
    def total_capacity(self) -> float:
        """``μ Σ_j γ_j C_j``: the maximal stability region is ``λ < total_capacity``."""
        return self.mu * math.fsum(g * c for g, c in zip(self.gamma, self.capacity, strict=True))

    @property
    def order(self) -> np.ndarray:
        """Type indices sorted by increasing capacity."""
        return np.argsort(self.capacity, kind="stable")

    def params(self) -> dict[str, Any]:
        """JSON-ready parameters."""
        return {
            "gamma": list(self.gamma),
            "capacity": list(self.capacity),
            "d": list(self.d),
            "mu": self.mu,
        }


#: Two types, equal fractions, capacity ratio 2.
H2 = System((0.5, 0.5), (1.0, 2.0), (2, 2))
#: Many slow servers and a few ten times faster ones (whole-system SQ(d) loses most capacity).
H2x = System((0.8, 0.2), (1.0, 10.0), (2, 2))
#: Three types, capacities 1, 2, 4.
H3 = System((0.5, 0.3, 0.2), (1.0, 2.0, 4.0), (2, 2, 2))


def check_system(system: Any) -> System:
    """The argument itself, refused unless it is a :class:`System` (functions take no dicts)."""
    if not isinstance(system, System):
        raise ConfigError("system", f"must be a hetero.System, got {type(system).__name__}")
    return system


def check_lam(lam: Any) -> float:
    """The arrival rate per server: a finite real > 0."""
    v = finite_real(lam, "lam")
    if v <= 0:
        raise ConfigError("lam", f"arrival rate per server must be > 0, got {lam!r}")
    return v


def check_policy(policy: Any) -> str:
    """One of :data:`POLICIES`; anything else is refused with the list."""
    if policy not in POLICIES:
        raise ConfigError("policy", f"must be one of {', '.join(POLICIES)}; got {policy!r}")
    return str(policy)


def _check_split(system: System, split: Any) -> np.ndarray:
    """Static routing probabilities: one per type, non-negative, summing to 1."""
    p = np.array([finite_real(v, "split") for v in value_sequence(split, "split")], dtype=float)
    if p.size != system.num_types:
        raise ConfigError("split", f"has {p.size} entries for {system.num_types} server types")
    if np.any(p < 0) or abs(math.fsum(p) - 1.0) > 1e-9:
        raise ConfigError("split", f"must be non-negative and sum to 1, got {tuple(p)}")
    return p


def check_d_pool(system: System, d_pool: Any) -> int:
    """Whole-system SQ(d) sample size: given, or the common per-type d when all agree."""
    if d_pool is None:
        if len(set(system.d)) != 1:
            raise ConfigError(
                "d_pool",
                f"whole-system SQ(d) samples one d from all servers; the per-type d = "
                f"{system.d} differ, so give d_pool explicitly",
            )
        return system.d[0]
    if (
        isinstance(d_pool, bool)
        or not isinstance(d_pool, numbers.Real)
        or not math.isfinite(d_pool)
        or d_pool != int(d_pool)
        or d_pool < 1
    ):
        raise ConfigError("d_pool", f"must be an integer ≥ 1, got {d_pool!r}")
    return int(d_pool)


def proportional_split(system: System) -> np.ndarray:
    """Static split ``p_j ∝ γ_j C_j``: every type at the same load, no load estimate needed."""
    system = check_system(system)
    w = np.array(system.gamma) * np.array(system.capacity)
    return w / w.sum()


def resolve_policy(
    system: System, policy: str, split: Any, d_pool: Any
) -> tuple[np.ndarray | None, int | None]:
    """The split (typed/random) and pool sample size (sqd) a policy uses; None where unused."""
    if policy == "random":
        if split is not None:
            raise ConfigError("split", "policy 'random' always splits ∝ γC; use 'typed'")
        return proportional_split(system), None
    if policy == "typed":
        return (proportional_split(system) if split is None else _check_split(system, split)), None
    if split is not None:
        raise ConfigError("split", f"only policy 'typed' takes a split, not {policy!r}")
    if policy == "sqd":
        return None, check_d_pool(system, d_pool)
    if d_pool is not None:
        raise ConfigError("d_pool", f"only policy 'sqd' samples from the pool, not {policy!r}")
    return None, None
