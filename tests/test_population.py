"""Generic population processes: derivatives, fixed points and the refined 1/N term."""

from __future__ import annotations

import numpy as np
import pytest

from lbrepro.core.errors import ConfigError, ConvergenceError, UnstableError
from lbrepro.meanfield.population import PopulationModel


def nonlinear_model() -> PopulationModel:
    """Three coordinates, nonlinear rates using powers, exp and products (not conserved)."""

    def rates(x):
        return np.stack(
            [
                1.0 + 0.0 * x[0],
                x[0] ** 2 * (1.0 + x[1]),
                np.exp(-x[2]) * x[1],
                0.5 * x[2] ** 3 + x[0] * x[2],
            ]
        )

    jumps = [[1, 0, 0], [-1, 1, 0], [0, -1, 1], [0, 0, -1]]
    return PopulationModel(jumps, rates, names=["a", "b", "c"])


def sir_model(a=0.3) -> PopulationModel:
    """S→I at x0(a + 2 x1), I→R at x1, R→S at 0.5 x2: the fractions sum to 1."""
    jumps = [[-1, 1, 0], [0, -1, 1], [1, 0, -1]]
    return PopulationModel(
        jumps, lambda x: [x[0] * (a + 2 * x[1]), 1.0 * x[1], 0.5 * x[2]], names=["S", "I", "R"]
    )


def test_drift_jacobian_hessian_diffusion_vs_finite_differences(fd_jacobian):
    """The model's exact derivatives match central differences."""
    m = nonlinear_model()
    x = np.array([0.7, 0.4, 0.9])
    beta = m.rate_values(x)
    np.testing.assert_allclose(m.drift(x), m.jumps.T @ beta)
    J = m.jacobian(x)
    np.testing.assert_allclose(J, fd_jacobian(m.drift, x), rtol=1e-8, atol=1e-9)
    H = m.hessian(x)
    fdH = np.stack([fd_jacobian(lambda z, k=k: m.jacobian(z)[:, k], x) for k in range(3)], axis=1)
    np.testing.assert_allclose(H, fdH, rtol=1e-7, atol=1e-8)
    Q = sum(b * np.outer(lv, lv) for b, lv in zip(beta, m.jumps, strict=True))
    np.testing.assert_allclose(m.diffusion(x), Q)


def test_hessian_contract_equals_full_contraction():
    m = nonlinear_model()
    x = np.array([0.7, 0.4, 0.9])
    rng = np.random.default_rng(3)
    G = rng.normal(size=(3, 3))
    W = G @ G.T - np.eye(3)  # symmetric, indefinite
    expected = np.einsum("ikm,km->i", m.hessian(x), W)
    np.testing.assert_allclose(m.hessian_contract(x, W), expected, rtol=1e-12, atol=1e-13)
    # Only the symmetric part matters.
    np.testing.assert_allclose(m.hessian_contract(x, W + (G - G.T)), expected, atol=1e-12)


def test_linear_model_has_zero_v_and_poisson_w():
    """M/M/∞: arrivals λ, departures μx. Linear rates ⇒ V = 0; stationary Poisson ⇒ W = λ/μ."""
    lam, mu = 2.0, 0.5
    m = PopulationModel([[1.0], [-1.0]], lambda x: [lam, mu * x[0]])  # a constant rate
    fp = m.fixed_point([0.0])
    assert fp.success and fp.method == "newton" and fp.residual <= 1e-13
    np.testing.assert_allclose(fp.x, [lam / mu])
    rr = m.refined(fp.x)
    np.testing.assert_allclose(rr.V, [0.0], atol=1e-15)
    np.testing.assert_allclose(rr.W, [[lam / mu]])
    assert rr.rank == 1 and rr.residual < 1e-12


def test_quadratic_annihilation_has_v_minus_quarter():
    """Births a, pair annihilation x²: π = √a, W = √a/2, and V = −1/4 for every a (by hand:
    A = −2√a, Q = 2a, f'' = −2, V = −A⁻¹·½·f''·W)."""
    for a in (0.25, 1.0, 3.0):
        m = PopulationModel([[1.0], [-1.0]], lambda x, a=a: [a + 0.0 * x[0], x[0] ** 2])
        fp = m.fixed_point([1.0])
        rr = m.refined(fp.x)
        np.testing.assert_allclose(rr.x, [np.sqrt(a)], rtol=1e-14)
        np.testing.assert_allclose(rr.W, [[np.sqrt(a) / 2]], rtol=1e-13)
        np.testing.assert_allclose(rr.V, [-0.25], rtol=1e-13)


def test_newton_fallback_to_ode_when_jacobian_singular():
    # At x0 = 0 the Jacobian −2x vanishes: Newton cannot start, the ODE route must work.
    m = PopulationModel([[1.0], [-1.0]], lambda x: [1.0 + 0.0 * x[0], x[0] ** 2])
    fp = m.fixed_point([0.0])
    assert fp.method == "LSODA+newton"
    np.testing.assert_allclose(fp.x, [1.0], rtol=1e-14)
    assert fp.residual <= 1e-13


def test_no_equilibrium_raises_convergence_error_naming_residual():
    m = PopulationModel([[1.0]], lambda x: [1.0 + 0.0 * x[0]])
    with pytest.raises(ConvergenceError, match="residual"):
        m.fixed_point([0.0], t_max=50.0)


def test_negative_rates_at_the_root_are_rejected():
    # f(x) = (x + 1) − (2x + 3) = −x − 2 has its only root at x = −2, where both rates are −1.
    m = PopulationModel([[1.0], [-1.0]], lambda x: [x[0] + 1.0, 2.0 * x[0] + 3.0])
    with pytest.raises(ConvergenceError, match="rate of transition"):
        m.fixed_point([0.0], t_max=100.0)


def test_refined_refuses_non_fixed_points_and_unstable_ones():
    m = PopulationModel([[1.0], [-1.0]], lambda x: [x[0] ** 2, 1.0 + 0.0 * x[0]])
    with pytest.raises(ConfigError, match="x_star"):
        m.refined([0.5])
    with pytest.raises(UnstableError, match="Hurwitz"):
        m.refined([1.0])  # f = x² − 1: root at 1 with A = 2 > 0


def test_conserved_model_stays_on_its_simplex_and_matches_hand_sis():
    """SIS (S→I at βSI, I→S at γI): V = (γ, −γ)/(β − γ), W = (γ/β)[[1, −1], [−1, 1]]."""
    beta, gamma = 2.0, 0.5
    m = PopulationModel([[-1, 1], [1, -1]], lambda x: [beta * x[0] * x[1], gamma * x[1]])
    np.testing.assert_allclose(np.abs(m.conserved), np.full((1, 2), np.sqrt(0.5)))
    fp = m.fixed_point([0.9, 0.1])
    # Newton from (0.9, 0.1) lands on the unstable disease-free root (1, 0); it must be
    # rejected and the ODE route must find the attracting endemic point.
    assert fp.stable is True and fp.method == "LSODA+newton"
    np.testing.assert_allclose(fp.x, [gamma / beta, 1 - gamma / beta], rtol=1e-14)
    assert abs(m.fixed_point([0.9, 0.1], stable=False).x[1]) < 1e-12
    rr = m.refined(fp.x)
    assert rr.rank == 1
    c = gamma / (beta - gamma)
    np.testing.assert_allclose(rr.V, [c, -c], rtol=1e-12)
    np.testing.assert_allclose(rr.W, gamma / beta * np.array([[1, -1], [-1, 1]]), rtol=1e-12)


def test_conserved_model_matches_rmftool():
    rmftool = pytest.importorskip("rmftool.population_processes")
    a = 0.3
    m = sir_model(a)
    x0 = np.array([0.8, 0.1, 0.1])
    fp = m.fixed_point(x0)
    assert abs(fp.x.sum() - 1.0) < 1e-15
    rr = m.refined(fp.x)
    assert rr.rank == 2

    ddpp = rmftool.DDPP()
    ddpp.add_transition(np.array([-1, 1, 0]), lambda x: x[0] * (a + 2 * x[1]))
    ddpp.add_transition(np.array([0, -1, 1]), lambda x: 1.0 * x[1])
    ddpp.add_transition(np.array([1, 0, -1]), lambda x: 0.5 * x[2])
    ddpp.set_initial_state(x0)
    pi, V, (_, W) = ddpp.meanFieldExpansionSteadyState(order=1)
    np.testing.assert_allclose(fp.x, pi, rtol=1e-8)
    np.testing.assert_allclose(rr.V, V, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(rr.W, W, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(rr.V.sum(), 0.0, atol=1e-14)  # the sum is exactly 1 for all N


def test_large_sparse_newton_path():
    # A linear birth–death chain with n = 300 coordinates uses the sparse LU branch.
    n = 300
    eye = np.eye(n)
    jumps = np.vstack([eye, -eye])

    def rates(x):
        prev = np.concatenate([np.ones(1), x[:-1]])
        return np.concatenate([0.5 * prev, 1.0 * x])

    fp = PopulationModel(jumps, rates).fixed_point(np.zeros(n))
    np.testing.assert_allclose(fp.x, 0.5 ** np.arange(1, n + 1), rtol=1e-12, atol=1e-300)


def test_input_validation_names_the_argument():
    with pytest.raises(ConfigError, match="jumps"):
        PopulationModel(np.zeros(3), lambda x: [x[0]])
    m = PopulationModel([[1.0], [-1.0]], lambda x: [x[0]])
    with pytest.raises(ConfigError, match="rates"):
        m.drift([0.1])
    with pytest.raises(ConfigError, match="x0"):
        m.fixed_point([0.1, 0.2])
    with pytest.raises(ConfigError, match="names"):
        PopulationModel([[1.0]], lambda x: [x[0]], names=["a", "b"])
