"""Heterogeneous clusters of processor-sharing servers (docs/models.md §A).

This package is the one home of the model's equations.

M server types; type j holds a fraction γ_j of the N servers and has capacity C_j (a busy
type-j server completes jobs at total rate μC_j, whatever its occupancy: processor sharing).
Poisson arrivals at rate λN. ``u^{(j)}_n`` = fraction of type-j servers with at least n jobs.

Policies (``policy=``):

- ``"scheme1"``: sample d_j servers of every type, send the job to the least occupied sampled
  server; ties go to the higher capacity (Mukhopadhyay et al. (2016), Scheme 1);
- ``"scheme2"``: same sample, send the job to the largest rate per job C_j/q (idle = ∞);
  ties go to the higher capacity (Scheme 2);
- ``"sqd"``: SQ(d) over the whole system, d = ``d_pool`` servers sampled from all N, ties
  uniform (loses stability region, see :func:`sqd_stability_closed_form`);
- ``"typed"``: route to type j with static probability p_j (``split``), then SQ(d_j) inside
  the type: each type is a homogeneous supermarket at load ρ_j = λp_j/(μγ_jC_j);
- ``"random"``: static random routing with p ∝ γC and d = 1 (independent M/M/1-PS queues).

The package, one module per seam: :mod:`.system` (the cluster and its argument checks),
:mod:`.equations` (the mean field as a population process: rates and exact Jacobian),
:mod:`.stability` (closed-form bounds, the numerical criterion and its bisection),
:mod:`.meanfield` (fixed point, refined 1/N term, uniqueness probe), :mod:`.tails` (deep
tails in log space), :mod:`.splits` (the tuned static split), :mod:`.simulation` (the call into
the occupancy kernel) and :mod:`.command_line` (``lbrepro solve|simulate hetero``, ``MODEL``).

Conventions: types keep the caller's order in every input and output; wherever the order by
capacity matters (the sets H_j/L_j of faster/slower types, the SQ(d) stability bound) it is
computed from the capacities, never from positions.
"""

from lbrepro.models.hetero.command_line import MODEL, simulate_summary, solve
from lbrepro.models.hetero.equations import population_model
from lbrepro.models.hetero.meanfield import (
    K0,
    K_MAX,
    RESIDUAL_TOL,
    HeteroMeanField,
    RefinedHetero,
    UniquenessProbe,
    fixed_point,
    refined,
    uniqueness_probe,
)
from lbrepro.models.hetero.simulation import simulate
from lbrepro.models.hetero.splits import typed_split
from lbrepro.models.hetero.stability import (
    K_BIG,
    STABILITY_EPS,
    StabilityVerdict,
    classify_stability,
    sqd_stability_closed_form,
    stability_boundary,
    stability_limit,
)
from lbrepro.models.hetero.system import H2, H3, POLICIES, H2x, System, proportional_split
from lbrepro.models.hetero.tails import LogTail, log_tail

__all__ = [
    "H2",
    "H3",
    "K0",
    "K_BIG",
    "K_MAX",
    "MODEL",
    "POLICIES",
    "RESIDUAL_TOL",
    "STABILITY_EPS",
    "H2x",
    "HeteroMeanField",
    "LogTail",
    "RefinedHetero",
    "StabilityVerdict",
    "System",
    "UniquenessProbe",
    "classify_stability",
    "fixed_point",
    "log_tail",
    "population_model",
    "proportional_split",
    "refined",
    "simulate",
    "simulate_summary",
    "solve",
    "sqd_stability_closed_form",
    "stability_boundary",
    "stability_limit",
    "typed_split",
    "uniqueness_probe",
]
