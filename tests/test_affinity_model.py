"""Affinity model (models.md §D): exact coupling tables, fixed points, stability, fluid limit."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from lbrepro.core.errors import ConfigError, UnstableError
from lbrepro.models import affinity as m
from lbrepro.models.affinity.fluid import _field
from lbrepro.models.affinity.jacobians import fluid_drift


def test_table1_published_and_exact():
    assert [m.table1_d(50, k) for k in (2, 3, 4, 5)] == [31, 34, 36, 38]
    for k in range(1, 12):
        d = m.table1_d(50, k)
        # The integer condition equals the rational one, and the concavity shortcut (check only
        # n = N − d − 1) agrees with checking every position exactly.
        fa, fr = m.f_aff(50, d), m.f_ref(50, k)
        assert fa[50 - d - 1] > fr[50 - d - 1]
        assert m.step_dominates(50, d, k)
        if d - 1 >= 25:
            assert not m.step_dominates(50, d - 1, k)


def test_step_functions_exact_values():
    fr = m.f_ref(50, 3)
    assert fr[0] == 0 and fr[-1] == 1
    assert fr[1] == Fraction(3, 50)  # a given server is in 3/50 of the selections
    assert fr[48] == 1  # positions beyond N − k + 1 add no selection
    fa = m.f_aff(50, 34)
    assert fa[1] == Fraction(35, 50) and fa[50 - 34] == 1 and fa[50 - 34 - 1] == Fraction(35, 50)
    with pytest.raises(ConfigError, match="d"):
        m.f_aff(50, 20)


def test_queueing_fixed_point_published():
    x = m.queueing_fixed_point(0.8, 0.5, 1.0, 3)
    assert x[0, 1] == pytest.approx(0.40, abs=1e-12)
    assert round(x[1, 1], 4) == 0.4704 and round(x[2, 1], 4) == 0.1283
    assert x[:, 0].sum() == 0 and x.sum() == pytest.approx(1)
    perf = m.performance(0.8, 0.5, 1.0, 3)
    assert perf["cm_switch_fraction"] == pytest.approx(0.25)
    # waiting jobs at the fixed point = Σ i x[i, 1]
    assert perf["cm_wait_jobs"] == pytest.approx(float((np.arange(x.shape[0]) * x[:, 1]).sum()))


@pytest.mark.parametrize(
    "lam,mu2,d1", [(0.8, 0.5, 25), (0.8, 0.5, 3), (0.4, 0.5, 2), (0.9, 1 / 3, 60)]
)
def test_fixed_points_are_zeros_of_the_field(lam, mu2, d1):
    for p in m.fixed_points(lam, mu2, 1.0, d1):
        f = m.fluid_field(p.x, lam, mu2, 1.0, d1)
        assert np.abs(f).max() < 1e-9, p.kind
        if p.kind == "no-queueing":
            assert m.no_queueing_balance(p.u, lam, mu2, 1.0, d1) == pytest.approx(0, abs=1e-12)
            # analytic 2x2 eigenvalues appear in the exact Jacobian of the full field
            num = np.linalg.eigvals(m.interior_jacobian(p.x, lam, mu2, 1.0, d1))
            for e in np.linalg.eigvals(m.face_jacobian_2x2(p.u, lam, mu2, 1.0, d1)):
                assert np.min(np.abs(num - e)) < 1e-10
            assert p.stable == (np.max(num.real) < 0)


@pytest.mark.parametrize("face", [False, True])
@pytest.mark.parametrize("d", [1, 2, 3, 25, 40])
def test_jet_drift_is_the_kernel_field(face, d):
    # The Jacobians differentiate fluid_drift; it must be the numba kernel's field.
    rng = np.random.default_rng(d)
    for _ in range(10):
        x = rng.dirichlet(np.ones(26)).reshape(13, 2)
        if face:
            x[0, 1] += x[0, 0]
            x[0, 0] = 0.0
        kernel = np.zeros_like(x)
        _field(x, 0.8, 1.0, 0.5, d, face, kernel)
        grid = fluid_drift(x.tolist(), 0.8, 1.0, 0.5, d, face)
        assert np.abs(np.array(grid, dtype=float) - kernel).max() < 1e-13


@pytest.mark.parametrize("lam,d1", [(0.8, 25), (0.9, 25), (0.8, 8)])
def test_queueing_point_decays_at_its_slowest_eigenvalue(lam, d1):
    # Reference: the fluid trajectory itself. A small push into x10 decays at the slowest rate
    # of the face Jacobian; a central difference across the empty x[i, 0] cells (the former
    # numerical Jacobian) put that rate 37% too fast at λ = 0.8, d1 = 25.
    q = next(p for p in m.fixed_points(lam, 0.5, 1.0, d1) if p.kind == "queueing")
    x0 = q.x.copy()
    x0[1, 0] += 1e-6
    x0[0, 1] -= 1e-6
    t, tr = m.fluid_trajectory(x0, lam, 0.5, 1.0, d1, t_end=30, dt=0.001, n_record=301)
    dist = np.abs(tr - q.x).sum(axis=(1, 2))
    late = t >= 15  # the faster modes have died out
    rate = np.polyfit(t[late], np.log(dist[late]), 1)[0]
    assert rate == pytest.approx(np.max(q.eigenvalues.real), rel=0.03)


def test_bistability_at_d25():
    pts = m.fixed_points(0.8, 0.5, 1.0, 25)
    assert [p.kind for p in pts] == ["no-queueing", "no-queueing", "queueing"]
    assert [p.stable for p in pts] == [False, True, True]
    # d1 = 3 < d1*: the queueing point is the only fixed point
    assert [p.kind for p in m.fixed_points(0.8, 0.5, 1.0, 3)] == ["queueing"]


def test_dstar_against_a_dense_grid():
    u = np.linspace(0, 1, 200001)[1:]
    for lam, mu2 in [(0.6, 0.5), (0.8, 0.5), (0.9, 0.5), (0.7, 1 / 3)]:
        d = m.dstar(lam, mu2)
        assert np.min(m.no_queueing_balance(u, lam, mu2, 1.0, d)) < 0
        assert np.min(m.no_queueing_balance(u, lam, mu2, 1.0, d - 1)) > 0
    assert m.dstar(0.4, 0.5) == 1
    assert m.dstar(0.8, 0.5) == 18
    # λ_c(d1) inverts d1*: the roots exist up to λ_c(18) > 0.8 but only up to λ_c(17) < 0.8
    assert m.lambda_critical(17, 0.5) < 0.8 < m.lambda_critical(18, 0.5)


def test_fluid_converges_to_the_right_fixed_point():
    empty = np.zeros((13, 2))
    empty[0, 0] = 1
    type2 = np.zeros((13, 2))
    type2[0, 1] = 1
    _, tr = m.fluid_trajectory(empty, 0.8, 0.5, 1.0, 3, t_end=150)
    xq = m.queueing_fixed_point(0.8, 0.5, 1.0, 3)
    assert np.abs(tr[-1] - xq).max() < 1e-6
    _, tr = m.fluid_trajectory(empty, 0.8, 0.5, 1.0, 25, t_end=150)
    nq = m.no_queueing_roots(0.8, 0.5, 1.0, 25)[1]
    assert np.abs(tr[-1] - nq.x).max() < 1e-6
    _, tr = m.fluid_trajectory(type2, 0.8, 0.5, 1.0, 25, t_end=150)
    assert np.abs(tr[-1] - m.queueing_fixed_point(0.8, 0.5, 1.0, 25)).max() < 1e-5
    # mass is conserved along the way
    assert np.allclose(tr.sum(axis=(1, 2)), 1.0, atol=1e-9)


def test_fluid_step_size_converges():
    x0 = np.zeros((13, 2))
    x0[0, 0], x0[0, 1], x0[1, 0] = 0.05, 0.7, 0.25
    _, a = m.fluid_trajectory(x0, 0.8, 0.5, 1.0, 25, t_end=20, dt=0.01, n_record=21)
    _, b = m.fluid_trajectory(x0, 0.8, 0.5, 1.0, 25, t_end=20, dt=0.0025, n_record=21)
    assert np.abs(a - b).max() < 1e-3


@pytest.mark.parametrize(
    "kwargs,key",
    [
        ({"lam": 0.4, "mu2": 1.0, "mu1": 1.0, "d1": 3}, "mu2"),
        ({"lam": 0.4, "mu2": 1.2, "mu1": 1.0, "d1": 3}, "mu2"),
        ({"lam": 0.0, "mu2": 0.5, "mu1": 1.0, "d1": 3}, "lam"),
        ({"lam": 0.4, "mu2": 0.5, "mu1": 1.0, "d1": 0}, "d1"),
        ({"lam": 0.4, "mu2": 0.5, "mu1": 1.0, "d1": 5, "N": 4}, "d1"),
    ],
)
def test_bad_parameters_name_the_key(kwargs, key):
    with pytest.raises(ConfigError, match=rf"^{key}"):
        m.check_params(**kwargs)


def test_unstable_load_refused():
    with pytest.raises(UnstableError, match="lam"):
        m.fixed_points(1.0, 0.5, 1.0, 3)


def test_initial_state_must_be_a_distribution():
    bad = np.zeros((5, 2))
    bad[0, 0] = 0.5
    with pytest.raises(ConfigError, match=r"^initial.*sum to 1"):
        m.fluid_trajectory(bad, 0.8, 0.5, 1.0, 3)
    bad[0, 0], bad[1, 0] = 1.5, -0.5
    with pytest.raises(ConfigError, match=r"^initial"):
        m.fluid_trajectory(bad, 0.8, 0.5, 1.0, 3)


def test_performance_jsq_and_ra_closed_forms():
    from lbrepro.models import supermarket

    p = m.performance(0.9, 0.5, 1.0, 3)
    u = supermarket.fixed_point(0.9, 3).u
    assert p["jsq_wait_jobs"] == pytest.approx(float(u[2:].sum()), rel=1e-10)
    assert p["ra_wait_jobs"] == pytest.approx(0.81 / 0.1)
    assert p["ra_wait_time"] == pytest.approx(p["ra_wait_jobs"] / 0.9)
    # Little: λ W = λ̃ W_I + (λ − λ̃) W_II = waiting jobs
    lam_ii = 0.9 * p["cm_switch_fraction"]
    assert lam_ii * p["cm_wait_time_II"] + (0.9 - lam_ii) * p["cm_wait_time_I"] == pytest.approx(
        p["cm_wait_jobs"]
    )
    assert math.isclose(p["cm_wait_time"] * 0.9, p["cm_wait_jobs"])
