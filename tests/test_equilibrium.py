"""Integrate-to-equilibrium with a residual check, and truncation enlargement."""

from __future__ import annotations

import numpy as np
import pytest

from lbrepro.core.equilibrium import integrate_to_equilibrium, solve_truncated
from lbrepro.core.errors import ConfigError, ConvergenceError

A = np.array([[-1.0, 0.5], [0.2, -0.3]])
C = np.array([0.3, -0.7])


def linear_drift(x):
    return A @ (x - C)


@pytest.mark.parametrize("method", ["LSODA", "BDF"])
def test_reaches_residual_tolerance(method):
    res = integrate_to_equilibrium(
        linear_drift, [1.0, 1.0], jacobian=lambda x: A, tol=1e-12, method=method
    )
    assert res.success and res.method == method
    assert res.residual <= 1e-12
    assert np.max(np.abs(linear_drift(res.x))) == res.residual
    np.testing.assert_allclose(res.x, C, atol=1e-10)
    assert res.num_iter >= 2 and res.t > 0 and res.nfev > 0


def test_already_at_equilibrium_needs_no_window():
    res = integrate_to_equilibrium(linear_drift, C)
    assert res.num_iter == 0 and res.t == 0.0


def test_no_equilibrium_raises_with_residual():
    with pytest.raises(ConvergenceError, match=r"residual ‖drift‖∞ = 1\.000e\+00"):
        integrate_to_equilibrium(lambda x: np.ones_like(x), [0.0], t_max=100.0)


def test_centre_is_not_an_attracting_equilibrium():
    rot = np.array([[0.0, 1.0], [-1.0, 0.0]])
    with pytest.raises(ConvergenceError, match="residual"):
        integrate_to_equilibrium(lambda x: rot @ x, [1.0, 0.0], t_max=200.0)


def test_blow_up_is_reported():
    with pytest.raises(ConvergenceError, match="blew up"):
        integrate_to_equilibrium(lambda x: x**2, [1.0], t_max=10.0)


def test_bad_arguments_name_the_key():
    with pytest.raises(ConfigError, match="tol"):
        integrate_to_equilibrium(linear_drift, [1.0, 1.0], tol=0.0)
    with pytest.raises(ConfigError, match="x0"):
        integrate_to_equilibrium(linear_drift, [np.nan, 1.0])


def geometric(rho):
    calls = []

    def solve_at(K):
        calls.append(K)
        return rho ** np.arange(K + 1), {"K": K}

    return solve_at, calls


def test_truncation_is_enlarged_until_tail_passes():
    rho, tol = 0.5, 1e-15
    solve_at, calls = geometric(rho)
    res = solve_truncated(solve_at, lambda u: u[-1], 4, tol=tol)
    assert calls == [4, 8, 16, 32, 64]  # 0.5^32 ≈ 2.3e-10 > tol, 0.5^64 ≈ 5.4e-20
    assert res.K == 64 and res.tail == rho**64 and res.num_iter == 5
    assert [k for k, _ in res.history] == calls
    assert res.solution[1] == {"K": 64}  # extra items are passed through
    assert res.success and res.method == "doubling"


def test_no_enlargement_when_first_level_suffices():
    solve_at, calls = geometric(1e-3)
    res = solve_truncated(solve_at, lambda u: u[-1], 8, tol=1e-15)
    assert calls == [8] and res.K == 8


def test_k_max_reached_raises():
    solve_at, calls = geometric(0.99)
    with pytest.raises(ConvergenceError, match="K_max = 100"):
        solve_truncated(solve_at, lambda u: u[-1], 10, tol=1e-15, K_max=100)
    assert calls == [10, 20, 40, 80, 100]


def test_truncation_arguments_validated():
    solve_at, _ = geometric(0.5)
    with pytest.raises(ConfigError, match="K0"):
        solve_truncated(solve_at, lambda u: u[-1], 0)
    with pytest.raises(ConfigError, match="K_max"):
        solve_truncated(solve_at, lambda u: u[-1], 8, K_max=4)
