"""The reconstruction notes of the affinity paper: what the paper's text leaves open and
which choice lbrepro made, shown beside every artifact that depends on it. Their numbers are
formatted from the constants they describe (the claims' margins and rules in ``judging``,
the initial states' cells in ``fluid_trajectories``, the fluid limit's truncation)."""

from lbrepro.artifacts.affinity.fluid_trajectories import FIG4_CELLS, FIG9_CELLS
from lbrepro.artifacts.affinity.judging import (
    CENSORED_TAIL,
    CONVERGENCE_ALPHA,
    FRACTION_MARGIN,
    MIN_SERVERS,
    PERF_FLOOR,
    QUARTER,
    SMALL_D1_RATIO,
    STAY,
)
from lbrepro.core.verdicts import AGREEMENT
from lbrepro.models.affinity import K_DEFAULT


def _cells(n: int) -> str:
    """The first n cells x[i, j] of a random initial state, as the note states them."""
    return f"the first {n} cells x[i, j] (i ≤ {(n - 1) // 2}, j = 0, 1)"


ASSIGNMENT_NOTE = (
    "The assignment rule is inferred (the paper's text omits it): an idle primary server takes "
    "the job as type I; else any idle server takes it as type II; else it joins the primary "
    "server with the fewest jobs (ties uniformly) as type I. Type I has preemptive priority "
    "over the (at most one) type-II job of a server. This rule was chosen because it "
    "reproduces the published Fig. 5 fixed point and the immediate-switch fraction 1/4 (seed "
    "text §4), so those two are consistency checks, not evidence."
)
FLUID_NOTE = (
    "The fluid limit is integrated with a hybrid fixed-step RK4: interior steps while u > 0; a "
    "step that would make u negative is cut at the crossing and u set to exactly 0 (the "
    "O(dt²) overshoot taken from x01); on the face u = 0 the immediate-switch field is used "
    "while λ ≥ R = μ2 x01 + μ1 x10 (Filippov sliding), instead of the paper's indicator "
    "1{u < 1e−15}. Type-I counts are truncated at K levels: the section's K, else "
    f"K = {K_DEFAULT} (the paper: 9)."
)
RANDOM_STATES_NOTE = (
    "The paper does not say how its random initial states were drawn: here they are uniform "
    f"(Dirichlet(1)) over {_cells(FIG4_CELLS)} (Fig. 4), or over {_cells(FIG9_CELLS)} "
    "(Fig. 9), from the artifact's seed."
)
TUNNELING_NOTE = (
    "The paper shows no tunneling figure; the parameters (the section's λ, d1 and N), the "
    "observable (fraction of servers holding a type-II job) and the hysteresis thresholds "
    "(at most low: no-queueing, at least high: queueing) are lbrepro's choices. Residences "
    "cut by the start or the end of a run are dropped. The paper's claim that residence times "
    "grow with N is about large N at fixed d1, so it is judged only where d1/N ≤ "
    f"{SMALL_D1_RATIO:g}: for the no-queueing state on the first exit from empty, for the "
    "queueing state on the first exit from a type-II job everywhere (first snapshot with at "
    "most the low threshold); replicated, each the mean of the exit times capped at a cap, "
    "with a Student-t CI, and the censored count stated. A point with censored runs is only a "
    f"lower bound of E[T] (all n censored: cap × {CENSORED_TAIL:g}^(1/n), the Clopper–Pearson "
    "bound of P(T ≥ cap)): it can confirm an increase, never refute one, and a censored "
    "smaller N decides nothing. 'Increases' needs a first → last rise of more than "
    f"{AGREEMENT:.0%} of the first value (the default agreement margin); the control is the "
    "flat alternative. Residences along one long path per N of the section's N (where d1/N "
    f"exceeds {SMALL_D1_RATIO:g}) are a separate finite-N finding."
)
EXTRAPOLATION_NOTE = (
    "The fluid limit and the fixed-point formulas are N = ∞ values; the paper compares them "
    "with a simulation at N = 2000 (Fig. 5). The claim is an equivalence test of the N-server "
    f"estimate against the formula. Margins: fractions (of servers, of arrivals) "
    f"{FRACTION_MARGIN:g} of Figs. 3/5's 0–1 axis; performance measures {AGREEMENT:.0%} "
    f"relative, at least {PERF_FLOOR:g} (the default agreement margin). The margin must "
    "exceed the O(1/N) remainder: each simulation is also run with N/2 servers (same horizon, "
    "independent stream), and with x_N = x_∞ + c/N the remainder at N is x_{N/2} − x_N, "
    "stated beside the margin. (An N → ∞ extrapolation 2·x_N − x_{N/2} was tried: it "
    "multiplies the half-width by ≈ 2.4 and left most claims undecided at the affordable run "
    f"lengths.) A cell with fewer than {MIN_SERVERS:g} servers expected at N/2 (d1 = 25: x21 ≈ "
    "1.7e-6) is left out of the family: the run cannot resolve it; a margin is at most half "
    "its cell (docs/methods.md, Margins). A run is valid only if its "
    "batch means of the type-II fraction pass a von Neumann test at "
    f"{100 * CONVERGENCE_ALPHA:g}% and, for Figs. 3/5, every batch stays within {STAY:g} of "
    "the fixed point's type-II fraction (a run at N/2 can tunnel to the other state): else "
    "its verdicts are undecided (invalid run)."
)
WORDS_NOTE = (
    f"The paper's qualitative words get one stated yardstick, a relative difference of "
    f"{QUARTER:g} (lbrepro's reading; the paper gives no number): 'slightly larger' = ratio in "
    f"(1, {1 + QUARTER:g}]; 'almost twice' = ratio in ({2 * (1 - QUARTER):g}, 2] (short of 2 "
    f"by at most {QUARTER:g} of it); 'fairly high' = more than {1 + QUARTER:g} times JSQ's; "
    f"'significantly smaller' = at most {1 - QUARTER:g} times JSQ's. Each control is the "
    "adjacent band of the same ratio, as wide. 'Type II waits less than under RA' is the "
    "identity W_II = W_RA − 1/μ1 of the fixed point: a consistency check."
)
PRIMARY_NOTE = (
    "Simulations draw the d1 primary servers without replacement (a set of d1 distinct "
    "servers); the fluid limit is the same as with replacement."
)

PERF_NOTE = (
    "CM(d1) measures come from the queueing fixed point for λ > μ2 and the no-queueing point "
    "(nobody waits) for λ ≤ μ2. 'Waiting jobs' exclude the job in service; a preempted type-II "
    "job counts as waiting. The variance is that of the per-server number of waiting jobs in "
    "the fixed-point distribution (the paper does not define it)."
)
