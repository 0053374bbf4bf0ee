"""Work conservation, the simulator's self-check shared by every hetero artifact that simulates.

Processor-sharing servers of capacity C_j serve at rate C_j whenever busy, so in equilibrium
the busy capacity Σγ_jC_j·u⁽ʲ⁾₁ equals the arrival rate λ: normalised, it is ρ exactly, at
every N. It is a diagnostic, not a claim: a run that violates it is broken, and every verdict
that reads that run becomes undecided (invalid run) through ``core.claims.gate``.
"""

from __future__ import annotations

from lbrepro.artifacts.registry import Rows
from lbrepro.core.claims import Claim, diagnostic
from lbrepro.core.io import select
from lbrepro.core.verdicts import AGREEMENT, NOT_REPRODUCED, agrees, estimate, exact


def work_conservation(rows: Rows) -> list[Claim]:
    """One diagnostic per simulated run: its busy capacity agrees with ρ within 2% of ρ.

    The diagnostic fails only when the run *shows* a violation (the interval lies wholly
    outside ρ ± 2%): an imprecise run is no evidence that the simulator is broken.
    """
    claims = []
    for r in sorted(select(rows, quantity="busy_capacity"), key=lambda r: str(r.get("point"))):
        rho = float(r["rho"])
        test = agrees([estimate(r)], [rho], margin=AGREEMENT * rho, what="busy capacity − ρ")
        run = str(r.get("point", r.get("system", "")))
        claims.append(
            diagnostic(
                f"work conservation, run {run}: busy capacity Σγ_jC_j·u⁽ʲ⁾₁/ΣγC = ρ = {rho:g}",
                exact(
                    test.outcome != NOT_REPRODUCED,
                    round(float(r["value"]) - rho, 6),
                    "busy capacity − ρ = 0 (work conservation)",
                    f"fails when the 95% CI lies outside ±{AGREEMENT:.0%} of ρ",
                    test.details,
                ),
                runs=[run],
            )
        )
    return claims
