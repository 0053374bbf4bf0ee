"""The reconstructions the whittle artifacts state: choices the paper's text leaves open."""

from __future__ import annotations

from lbrepro.models.whittle_policies import TRUNCATION_TOL

RECON_EVENTS = (
    "Event order [reconstruction]: in a slot the departures are drawn from the jobs present at "
    "its start, then the slot's arrival joins the server chosen from the start-of-slot state; "
    "the cost of a slot is charged on its start-of-slot state."
)
RECON_COSTS = (
    "Cost formulas [reconstruction; the seed names them only]: linear C(n) = n; mean–variance "
    "C_β(n) = n + β·E[D(n)²] with E[D(n)²] = q + q²(1 − 1/min(d, n)) for n ≥ 1."
)
RECON_TIES = (
    "Tie rules [reconstruction]: Whittle (smallest W_k(n_k)), JSQ (fewest jobs) and JSEW all "
    "break ties toward the larger q_k, then toward the server listed first; RSA is uniform."
)
RECON_JSEW = (
    "JSEW [reconstruction]: join the shortest expected workload, argmin_k (n_k + 1)/q_k — the "
    "expected slots to clear the queue including the new job at capacity q_k."
)
RECON_TRUNC = (
    "Truncation: each server holds at most B jobs; a policy may only pick a server with room "
    "(the arrival is lost only if all are full). B grows (×1.5) until every policy's stationary "
    f"mass on the boundary is below {TRUNCATION_TOL:g}; RSA is computed per server without "
    "truncation (each "
    "server alone sees Bernoulli(p/K) arrivals). The simulation has no buffer."
)
RECON_RELAX = (
    "Whittle indices use the system's p for every server, so a server with q < p is overloaded "
    "in the relaxation; its index then grows geometrically (ratio p(1−q)/(q(1−p)) for d = 1)."
)
