"""Supermarket model with general service times (docs/models.md §C, Li & Lui (2010)).

FCFS servers, Poisson arrivals at rate λ per server, JSQ(d) (d servers sampled with
replacement), service time X ~ :class:`~lbrepro.models.service.ServiceDist` with survival Ḡ,
mean 1/μ, load ρ = λ/μ. ``u_k`` = fraction of servers with at least k jobs (u_0 = 1).

Two things live here, side by side:

* **The paper's closed form, as published.** θ = ∫_0^∞ [μḠ(x)]^d dx (adaptive quadrature,
  :func:`theta`; closed forms in :func:`theta_closed_form`), the fixed point
  Π_k = ρ^{(d^k−1)/(d−1)} θ^{(d^{k−1}−1)/(d−1)} (:func:`published_tail`) and the sojourn time
  T_d (:func:`published_sojourn`, reconstruction of docs/models.md §C).
* **The truth for phase-type service.** Each server's state (queue length n, phase j of the
  job in service) is Markov, so the mean field is exact as N → ∞. Its fixed point is found two
  independent ways that must agree: the *cavity queue* (:func:`cavity_fixed_point`: one PH
  FCFS server whose Poisson arrival rate depends on its queue length,
  λ_n = λ(u_n^d − u_{n+1}^d)/(u_n − u_{n+1}), solved as a truncated CTMC and iterated until
  its own tail fractions reproduce the u it was built from) and the *mean-field ODE* on the
  (n, j) fractions integrated to equilibrium (:func:`ode_fixed_point`). For exponential
  service both reduce to ρ^{(d^k−1)/(d−1)}.

The package: :mod:`.published` (the closed form), :mod:`.phase_type` (the exact mean field),
:mod:`.commands` (simulation, the ``lbrepro solve|simulate general`` summaries and ``MODEL``)
and :mod:`.arguments` (argument checks). Everything public is re-exported here.
"""

from __future__ import annotations

from lbrepro.models.general.commands import MODEL, simulate, simulate_summary, solve
from lbrepro.models.general.phase_type import (
    MeanFieldPH,
    cavity_fixed_point,
    mean_field_drift,
    ode_fixed_point,
)
from lbrepro.models.general.published import (
    mg1_mean_sojourn,
    published_sojourn,
    published_tail,
    theta,
    theta_closed_form,
)

__all__ = [
    "MODEL",
    "MeanFieldPH",
    "cavity_fixed_point",
    "mean_field_drift",
    "mg1_mean_sojourn",
    "ode_fixed_point",
    "published_sojourn",
    "published_tail",
    "simulate",
    "simulate_summary",
    "solve",
    "theta",
    "theta_closed_form",
]
