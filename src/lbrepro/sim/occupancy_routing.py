"""Server types and routing policies of the occupancy simulator: validated parameters.

Turns the user's ``gamma``, ``capacity``, ``policy``, ``d`` and ``split`` into the exact
numbers the kernel (:mod:`lbrepro.sim.occupancy_kernel`) reads — type sizes N_j, per-type
sample sizes, the Schemes' priority order and integer capacity weights, the static split's
cumulative probabilities — and refuses loads no policy, or the chosen static split, can
carry. Every refusal is a ConfigError naming the argument (or an UnstableError).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from lbrepro.core.args import float_seq, int_arg
from lbrepro.core.errors import ConfigError, UnstableError
from lbrepro.sim.occupancy_kernel import POLICY_SCHEME1, POLICY_SCHEME2, POLICY_SQD, POLICY_TYPED

__all__ = [
    "POLICIES",
    "Routing",
    "check_stability",
    "cumulative_split",
    "per_type_d",
    "policy_code",
    "priority_order",
    "routing_parameters",
    "scheme2_weights",
    "server_counts",
    "server_types",
    "split_arg",
]

# "random" runs as POLICY_TYPED (d_j = 1, p ∝ γC).
_POLICY_CODES = {
    "sqd": POLICY_SQD,
    "scheme1": POLICY_SCHEME1,
    "scheme2": POLICY_SCHEME2,
    "typed": POLICY_TYPED,
    "random": POLICY_TYPED,
}
POLICIES = tuple(_POLICY_CODES)

# Scheme 2 compares C_j / m_j by cross-multiplying integers: each capacity is read as the
# nearest fraction with a denominator up to this bound (exact for decimal capacities such as
# 0.1 and 0.3, whose binary ratios are not exact), and refused if that moves it by more than
# _CAPACITY_RTOL relatively.
_CAPACITY_DENOMINATOR = 10**6
_CAPACITY_RTOL = 1e-9


def policy_code(policy: Any) -> int:
    """The kernel's code of a policy name (one of :data:`POLICIES`)."""
    if not isinstance(policy, str) or policy not in _POLICY_CODES:
        raise ConfigError("policy", f"must be one of {', '.join(POLICIES)}; got {policy!r}")
    return _POLICY_CODES[policy]


def server_types(
    gamma: Any, capacity: Any, N: int
) -> tuple[tuple[float, ...], tuple[float, ...], np.ndarray]:
    """Validated (γ, C) of the J server types and the type sizes N_j = γ_j N."""
    capacity_t = float_seq("capacity", capacity)
    if any(c <= 0 for c in capacity_t):
        raise ConfigError("capacity", f"capacities must be > 0, got {list(capacity_t)}")
    gamma_t = float_seq("gamma", gamma)
    if len(gamma_t) != len(capacity_t):
        raise ConfigError("capacity", f"has {len(capacity_t)} entries but gamma has {len(gamma_t)}")
    if any(g <= 0 for g in gamma_t):
        raise ConfigError("gamma", f"fractions must be > 0, got {list(gamma_t)}")
    if abs(math.fsum(gamma_t) - 1.0) > 1e-9:
        raise ConfigError("gamma", f"fractions must sum to 1, got {math.fsum(gamma_t)!r}")
    return gamma_t, capacity_t, server_counts(gamma_t, N)


def server_counts(gamma: tuple[float, ...], N: int) -> np.ndarray:
    """N_j = γ_j N, required to be integers (a fractional server has no meaning)."""
    counts = []
    for g in gamma:
        exact = g * N
        nearest = round(exact)
        if abs(exact - nearest) > 1e-9 * max(1.0, exact) or nearest < 1:
            raise ConfigError(
                "gamma",
                f"gamma_j * N must be a positive integer for every type; {g!r} * {N} = {exact!r}",
            )
        counts.append(nearest)
    if sum(counts) != N:
        raise ConfigError("gamma", f"type sizes {counts} do not add up to N = {N}")
    return np.array(counts, dtype=np.int64)


def per_type_d(value: Any, J: int) -> tuple[int, ...]:
    """Per-type sample sizes: an int (the same for every type) or a sequence of J ints."""
    if isinstance(value, str | bytes):
        raise ConfigError("d", f"must be an integer or a sequence of integers, got {value!r}")
    try:
        items = list(value)
    except TypeError:
        return (int_arg("d", value, 1),) * J
    if len(items) != J:
        raise ConfigError("d", f"has {len(items)} entries but gamma has {J}")
    return tuple(int_arg("d", x, 1) for x in items)


def split_arg(value: Any, J: int) -> tuple[float, ...]:
    """Static routing probabilities: J numbers ≥ 0 summing to 1 (within 1e-9).

    A zero leaves a type idle (an optimised split may do that to slow servers at low load).
    """
    split = float_seq("split", value)
    if len(split) != J:
        raise ConfigError("split", f"has {len(split)} entries but gamma has {J}")
    if any(p < 0 for p in split):
        raise ConfigError("split", f"probabilities must be >= 0, got {list(split)}")
    if abs(math.fsum(split) - 1.0) > 1e-9:
        raise ConfigError("split", f"probabilities must sum to 1, got {math.fsum(split)!r}")
    return split


def cumulative_split(split: tuple[float, ...]) -> np.ndarray:
    """Cumulative probabilities with the last set to exactly 1 (no type lost to rounding)."""
    cum = np.cumsum(np.asarray(split, dtype=np.float64))
    cum[-1] = 1.0
    return cum


def priority_order(capacity: tuple[float, ...]) -> np.ndarray:
    """Types by decreasing capacity; equal capacities by increasing index.

    Schemes 1 and 2 break ties across types towards the higher capacity (Mukhopadhyay et al.). For
    equal capacities the paper assumes none (spec §A: merge such types); the lower type
    index is this simulator's own deterministic rule, not the paper's.
    """
    return np.array(sorted(range(len(capacity)), key=lambda j: (-capacity[j], j)), dtype=np.int64)


def scheme2_weights(capacity: tuple[float, ...], max_levels: int) -> np.ndarray:
    """Integers w_j ∝ C_j, so that Scheme 2 compares C_i m_j with C_j m_i exactly.

    Each capacity is read as the nearest fraction with denominator ≤ 10^6 (0.1 and 0.3 as
    1/10 and 3/10, so 0.3/3 ties with 0.1/1 as intended, although their binary values do
    not); capacities that this moves by more than 1e-9 relatively, or whose common
    denominator makes w_j · max_levels overflow int64, are refused.
    """
    fracs = []
    for c in capacity:
        f = Fraction(c).limit_denominator(_CAPACITY_DENOMINATOR)
        if f <= 0 or abs(float(f) - c) > _CAPACITY_RTOL * c:
            raise ConfigError(
                "capacity",
                f"policy 'scheme2' compares capacity ratios exactly and needs capacities that are "
                f"fractions with denominators <= {_CAPACITY_DENOMINATOR}; {c!r} is not",
            )
        fracs.append(f)
    denominator = math.lcm(*(f.denominator for f in fracs))
    ints = [int(f * denominator) for f in fracs]
    divisor = math.gcd(*ints)
    weights = [w // divisor for w in ints]
    if max(weights) * (max_levels + 1) >= 2**62:
        raise ConfigError(
            "capacity",
            f"the exact integer ratios of {list(capacity)} are too large for policy 'scheme2' "
            f"with max_levels = {max_levels}",
        )
    return np.array(weights, dtype=np.int64)


@dataclass(frozen=True)
class Routing:
    """A policy's validated parameters, as reported in the result and read by the kernel.

    ``d_pool`` is the whole-pool sample size of ``"sqd"`` (1 otherwise), ``d`` the sample
    size as reported (an int for ``"sqd"``, the per-type tuple otherwise), ``split`` the
    static routing probabilities of ``"typed"`` and ``"random"`` (None otherwise). The arrays
    (length J) are the kernel's: per-type sample sizes, the Schemes' priority order, Scheme 2's
    integer capacity weights and the split's cumulative probabilities; every policy gets all
    of them.
    """

    code: int
    d_pool: int
    d: int | tuple[int, ...]
    split: tuple[float, ...] | None
    d_types: np.ndarray
    order: np.ndarray
    weights: np.ndarray
    cum_split: np.ndarray


def routing_parameters(
    policy: str,
    d: Any,
    split: Any,
    *,
    replace: bool,
    N: int,
    gamma: tuple[float, ...],
    capacity: tuple[float, ...],
    max_levels: int,
) -> Routing:
    """Validate a policy's ``d`` and ``split`` against the system and build its parameters."""
    code = policy_code(policy)
    J = len(gamma)
    d_out: int | tuple[int, ...]
    split_t: tuple[float, ...] | None = None
    weights = np.ones(J, dtype=np.int64)
    if policy == "sqd":
        d_pool = int_arg("d", d, 1)
        if not replace and d_pool > N:
            raise ConfigError(
                "d", f"cannot sample d = {d_pool} of N = {N} servers without replacement"
            )
        d_types = np.ones(J, dtype=np.int64)
        d_out = d_pool
    else:
        d_pool = 1
        d_tuple = per_type_d(d, J)
        if policy == "random" and any(x != 1 for x in d_tuple):
            raise ConfigError(
                "d", f"policy 'random' sends a job to one random server: d must be 1, got {d!r}"
            )
        if not replace:
            raise ConfigError(
                "replace",
                f"policy {policy!r} samples with replacement inside each type; "
                "replace=False is implemented only for 'sqd'",
            )
        d_types = np.array(d_tuple, dtype=np.int64)
        d_out = d_tuple
        if policy == "scheme2":
            weights = scheme2_weights(capacity, max_levels)
    if policy == "typed":
        split_t = _capacity_split(gamma, capacity) if split is None else split_arg(split, J)
    elif split is not None:
        raise ConfigError("split", f"is used only by policy 'typed', not {policy!r}")
    elif policy == "random":
        split_t = _capacity_split(gamma, capacity)
    cum_split = cumulative_split(split_t) if split_t is not None else np.ones(J)
    return Routing(
        code=code,
        d_pool=d_pool,
        d=d_out,
        split=split_t,
        d_types=d_types,
        order=priority_order(capacity),
        weights=weights,
        cum_split=cum_split,
    )


def _capacity_split(gamma: tuple[float, ...], capacity: tuple[float, ...]) -> tuple[float, ...]:
    """Routing probabilities p_j ∝ γ_j C_j (each type loaded in proportion to its capacity)."""
    total = math.fsum(g * c for g, c in zip(gamma, capacity, strict=True))
    return tuple(g * c / total for g, c in zip(gamma, capacity, strict=True))


def check_stability(
    lam: float,
    mu: float,
    gamma: tuple[float, ...],
    capacity: tuple[float, ...],
    policy: str,
    split: tuple[float, ...] | None,
) -> float:
    """Refuse a load beyond the capacity μ Σ γ_j C_j, or one that overloads a type of a static
    split; return the capacity."""
    if split is not None:
        # A static split is stable iff every type is: type j is an M/M/1 or SQ(d_j) system
        # at load λ p_j / (μ γ_j C_j), so an overloaded type would grow forever.
        for j, (p, g, c) in enumerate(zip(split, gamma, capacity, strict=True)):
            if lam * p >= mu * g * c:
                raise UnstableError(
                    f"type {j} (gamma = {g:g}, capacity C = {c:g}) is overloaded under policy "
                    f"{policy!r}: lam * p_j = {lam * p:g} >= mu * gamma_j * C_j = {mu * g * c:g}"
                    ": unstable, refusing to simulate"
                )
    capacity_total = mu * math.fsum(g * c for g, c in zip(gamma, capacity, strict=True))
    if lam >= capacity_total:
        raise UnstableError(
            f"load lam = {lam:g} >= capacity mu * sum(gamma_j * C_j) = {capacity_total:g}: "
            "unstable, refusing to simulate"
        )
    return capacity_total
