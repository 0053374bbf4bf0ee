"""Cross-check of the refined mean field against rmf_tool (Gast's reference implementation).

rmftool builds the same truncated supermarket model from per-transition lambdas written here
independently of ``lbrepro.models.supermarket``; it differentiates them symbolically (sympy)
and finds π by integrating the ODE, so agreement checks our jets, our Newton fixed point and
our Lyapunov/V algebra at once.
"""

from __future__ import annotations

import numpy as np
import pytest

from lbrepro.models import supermarket as sm

population_processes = pytest.importorskip("rmftool.population_processes")


def rmftool_supermarket(lam: float, d: int, mu: float, K: int):
    ddpp = population_processes.DDPP()
    for k in range(1, K + 1):
        e = np.zeros(K)
        e[k - 1] = 1.0

        def arrival(x, k=k):
            before = 1.0 if k == 1 else x[k - 2]
            return lam * (before**d - x[k - 1] ** d)

        def departure(x, k=k):
            after = 0.0 if k == K else x[k]
            return mu * (x[k - 1] - after)

        ddpp.add_transition(e, arrival)
        ddpp.add_transition(-e, departure)
    ddpp.set_initial_state(np.zeros(K))
    return ddpp


@pytest.mark.parametrize(("lam", "d"), [(0.7, 2), (0.9, 2), (0.9, 3)])
def test_pi_v_w_agree_with_rmftool(lam, d):
    ours = sm.refined(lam, d)
    ddpp = rmftool_supermarket(lam, d, 1.0, ours.K)
    pi, V, (_, W) = ddpp.meanFieldExpansionSteadyState(order=1)
    np.testing.assert_allclose(ours.u[1:], pi, rtol=1e-10, atol=1e-14)
    scale = np.max(np.abs(V))
    np.testing.assert_allclose(ours.V[1:], V, rtol=1e-10, atol=1e-12 * scale)
    np.testing.assert_allclose(ours.W, W, rtol=1e-10, atol=1e-12 * np.max(np.abs(W)))
    assert ours.mean_jobs_coefficient == pytest.approx(float(np.sum(V)), rel=1e-10)
