"""Artifacts of the general-service paper (seed 002, Li & Lui; docs/models.md §C).

The paper's closed form is reproduced as published — θ, Π_k, T_d — and set beside the truth:
the exact mean field for phase-type service (cavity queue; it agrees with the (n, phase) ODE
to 1e-8, see tests) and simulation of N FCFS servers for any service distribution.

- ``general-theta-table`` (:mod:`.theta_table`): Table 1, θ for Erlang service, m, d = 1..5,
  under the two readings of the seed's example (A: m phases of rate 1, μ = 1/m; B: the
  printed formula, μ = 1).
- ``general-theta-exp`` (:mod:`.theta_exp`): θ against μ for exponential service, d = 2 and 3.
- ``general-theta-examples`` (:mod:`.theta_examples`): θ by quadrature against the closed
  forms of docs/models.md §C.
- ``general-sojourn`` (:mod:`.sojourn`): E[T] against ρ for Erlang-2, d = 2 — published T_d,
  exact mean field, simulation; exponential for reference.
- ``general-tail`` (:mod:`.tail`): log10 u_k against k at ρ = 0.7, d = 2 for light and heavy
  tails; the Bramson–Lu–Prabhakar threshold β = d/(d − 1) decides doubly exponential against
  power law.
- ``general-audit`` (:mod:`.audit`): u_2, u_3, E[T] per distribution and ρ from the closed
  form, the exact mean field (PH only) and simulation, with relative errors and a verdict.

Shared by several of them: :mod:`.config_checks` (config checks, point ids),
:mod:`.point_runs` (one distribution at one load: closed form, mean field, simulation rows)
and :mod:`.comparisons` (simulation against a reference, the N → ∞ extrapolation, and the
published / mean-field / finite-N claims of general-sojourn and general-audit).
"""

from __future__ import annotations

from lbrepro.artifacts.general import (
    audit,
    sojourn,
    tail,
    theta_examples,
    theta_exp,
    theta_table,
)
from lbrepro.artifacts.registry import Paper

PAPER = Paper(
    "general",
    "Doubly Exponential Solution for Randomized Load Balancing Models with General Service Times",
    "Q.-L. Li & J. C. S. Lui",
    "Li & Lui, Doubly Exponential Solution for Randomized Load Balancing Models with General "
    "Service Times (seed text 002).",
    (
        "JSQ(d) with a general service-time law. The paper publishes a doubly exponential "
        "fixed point Π_k built from θ = ∫(μḠ)^d and a sojourn time from it, and claims θ "
        "decreases in the Erlang order and in d, and that the tail is doubly exponential "
        "even for heavy-tailed service. The pipeline reproduces the closed form as "
        "published and sets it beside the exact mean field for phase-type service and "
        "simulation, to measure by how much it is off."
    ),
    artifacts=(
        theta_table.ARTIFACT,
        theta_exp.ARTIFACT,
        theta_examples.ARTIFACT,
        sojourn.ARTIFACT,
        tail.ARTIFACT,
        audit.ARTIFACT,
    ),
    order=40,
)
