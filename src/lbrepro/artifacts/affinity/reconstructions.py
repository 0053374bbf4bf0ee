"""The reconstruction notes of the affinity paper: what the seed text leaves open and
which choice lbrepro made, shown beside every artifact that depends on it."""

ASSIGNMENT_NOTE = (
    "The assignment rule is inferred (the seed text omits it): an idle primary server takes "
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
    "1{u < 1e−15}. Type-I counts are truncated at K = 12 (the paper: 9)."
)
RANDOM_STATES_NOTE = (
    "The paper does not say how its random initial states were drawn: here they are uniform "
    "(Dirichlet(1)) over the cells x[i, j] with i ≤ 4 (Fig. 4), or over x00, x10, x01, x11 "
    "(Fig. 9), from the artifact's seed."
)
TUNNELING_NOTE = (
    "The paper shows no tunneling figure; the parameters (λ = 0.8, d1 = 25, N = 50–100), the "
    "observable (fraction of servers holding a type-II job) and the hysteresis thresholds "
    "(≤ 0.1 no-queueing, ≥ 0.7 queueing) are lbrepro's choices. Residences cut by the start or "
    "the end of a run are dropped. The paper's claim that residence times grow with N is about "
    "large N at fixed d1, so it is judged only where d1/N ≤ 0.2: for the no-queueing state on "
    "the first exit from empty, for the queueing state on the first exit from a type-II job "
    "everywhere (first snapshot with at most the low threshold); replicated, each the mean of "
    "the exit times capped at a cap, with a Student-t CI, and the censored count stated. A "
    "point with censored runs is only a lower bound of E[T] (all n censored: cap × 0.025^(1/n), "
    "the Clopper–Pearson bound of P(T ≥ cap)): it can confirm an increase, never refute one, and "
    "a censored smaller N decides nothing. 'Increases' needs a first → last rise of more than 2% "
    "of the first value (the default agreement margin); the control is the flat alternative. "
    "Residences along one long path at N = 50–100 (d1/N = 0.5–0.25) are a separate finite-N "
    "finding."
)
EXTRAPOLATION_NOTE = (
    "The fluid limit and the fixed-point formulas are N = ∞ values; the paper compares them "
    "with a simulation at N = 2000 (Fig. 5). The claim is an equivalence test of the N-server "
    "estimate against the formula. Margins: fractions (of servers, of arrivals) 0.01, a "
    "hundredth of Figs. 3/5's 0–1 axis; performance measures 2% relative, at least 0.002 (the "
    "default agreement margin). The margin must exceed the O(1/N) remainder: each simulation "
    "is also run with N/2 servers (same horizon, independent stream), and with x_N = x_∞ + "
    "c/N the remainder at N is x_{N/2} − x_N, stated beside the margin. (An N → ∞ "
    "extrapolation 2·x_N − x_{N/2} was tried: it multiplies the half-width by ≈ 2.4 and left "
    "most claims undecided at the affordable run lengths.) A cell with fewer than one server "
    "expected at N/2 (d1 = 25: x21 ≈ 1.7e-6) is left out of the family: the run cannot "
    "observe it. A run is valid only if its batch means of the type-II fraction pass a von "
    "Neumann test at 0.1% and, for Figs. 3/5, every batch stays within 0.15 of the fixed "
    "point's type-II fraction (a run at N/2 can tunnel to the other state): else its verdicts "
    "are undecided (invalid run)."
)
WORDS_NOTE = (
    "The paper's qualitative words get one stated yardstick, a relative difference of a "
    "quarter (lbrepro's reading; the paper gives no number): 'slightly larger' = ratio in "
    "(1, 1.25]; 'almost twice' = ratio in (1.5, 2] (short of 2 by at most a quarter); 'fairly "
    "high' = more than 1.25 times JSQ's; 'significantly smaller' = at most 0.75 times JSQ's. "
    "Each control is the adjacent quarter of the same ratio. 'Type II waits less than under "
    "RA' is the identity W_II = W_RA − 1/μ1 of the fixed point: a consistency check."
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
