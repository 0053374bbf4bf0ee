"""Hyper-dual jets: exact derivatives vs hand derivatives and finite differences."""

from __future__ import annotations

import numpy as np
import pytest

from lbrepro.meanfield import jets
from lbrepro.meanfield.jets import Jet

pytestmark = pytest.mark.filterwarnings("error")  # no silent inf/NaN warnings


def composite(x):
    """Uses every supported operation, written in plain NumPy."""
    u = np.concatenate([np.ones(1), x, np.zeros(1)])
    a = 2.0 * u[1:3] ** 3 - u[2:4] / (1.0 + u[1:3])
    b = np.exp(0.3 * x[0] * x[1]) + np.log(2.0 + x[2]) - np.sqrt(x[1] + 3.0)
    c = 1.5 / (x[0] + 2.0) - (x[2] - 0.5) ** 2 + 2.0 ** x[1]
    s = np.sum(x * x) + x[::-1][0] * 0.1
    return np.concatenate([a, np.stack([b, c, s]), -(x**2.5) + np.square(x)])


def test_hand_derivatives_of_product_and_quotient():
    x = np.array([1.5, -0.7])

    def g(z):
        return np.stack([z[0] * z[1], z[0] / z[1], 3.0 - z[0] ** 2])

    val, J = jets.jacobian(g, x)
    np.testing.assert_allclose(val, [x[0] * x[1], x[0] / x[1], 3 - x[0] ** 2])
    expected_J = [[x[1], x[0]], [1 / x[1], -x[0] / x[1] ** 2], [-2 * x[0], 0.0]]
    np.testing.assert_allclose(J, expected_J, rtol=1e-15)
    H = jets.hessian(g, x)
    expected_H = [
        [[0, 1], [1, 0]],
        [[0, -1 / x[1] ** 2], [-1 / x[1] ** 2, 2 * x[0] / x[1] ** 3]],
        [[-2, 0], [0, 0]],
    ]
    np.testing.assert_allclose(H, expected_H, rtol=1e-15, atol=1e-15)


def test_composite_matches_finite_differences(fd_jacobian, fd_hessian):
    """Jet derivatives of a composite function match central differences."""
    x = np.array([0.4, 0.9, 0.3])
    val, J = jets.jacobian(composite, x)
    np.testing.assert_allclose(val, composite(x), rtol=1e-15)
    np.testing.assert_allclose(J, fd_jacobian(composite, x), rtol=1e-8, atol=1e-9)
    H = jets.hessian(composite, x)
    np.testing.assert_allclose(H, fd_hessian(composite, x), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(H, np.swapaxes(H, -1, -2), atol=0)


def test_second_directional_equals_vhv():
    x = np.array([0.4, 0.9, 0.3])
    rng = np.random.default_rng(1)
    V = rng.normal(size=(5, 3))
    _, curv = jets.second_directional(composite, x, V)
    H = jets.hessian(composite, x)
    np.testing.assert_allclose(curv, np.einsum("jk,ikm,jm->ji", V, H, V), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    ("p", "d1", "d2"),
    [(0.0, 0.0, 0.0), (1.0, 1.0, 0.0), (2.0, 0.0, 2.0), (3.0, 0.0, 0.0), (5, 0.0, 0.0)],
)
def test_powers_at_zero_are_exact(p, d1, d2):
    y = Jet(np.array(0.0), np.ones(1), np.ones(1)) ** p
    assert y.a == (1.0 if p == 0 else 0.0)
    assert (0.0 if y.b is None else y.b[0]) == d1
    assert (0.0 if y.e is None else y.e[0]) == d2


def test_fractional_power_at_zero_only_where_the_seed_moves():
    x = Jet(np.array([0.0, 4.0]), np.array([[0.0, 1.0], [1.0, 0.0]]))
    y = x**0.5
    np.testing.assert_array_equal(y.b[0], [0.0, 0.25])  # no NaN from inf·0
    assert y.b[1, 0] == np.inf
    assert y.b[1, 1] == 0.0


def test_supermarket_like_power_with_constant_zero_has_no_nan():
    def rates(x):
        u = np.concatenate([np.ones(1), x, np.zeros(1)])
        return 0.9 * (u[:-2] ** 2 - u[1:-1] ** 2)

    x = np.zeros(3)
    _, J = jets.jacobian(rates, x)
    H = jets.hessian(rates, x)
    assert np.all(np.isfinite(J)) and np.all(np.isfinite(H))
    np.testing.assert_allclose(H[1], [[1.8, 0, 0], [0, -1.8, 0], [0, 0, 0]])


def test_scalars_and_arrays_on_both_sides():
    x = Jet(np.array([1.0, 2.0]), np.eye(2))
    for y, dy in [
        (np.float64(3.0) * x, 3 * np.eye(2)),
        (np.array([1.0, 2.0]) * x, np.diag([1.0, 2.0])),
        (2 - x, -np.eye(2)),
        (x - np.array([1.0, 1.0]), np.eye(2)),
        (1 / x, -np.diag([1.0, 0.25])),
        (np.array([1.0, 1.0]) / x, -np.diag([1.0, 0.25])),
        (-x + 1, -np.eye(2)),
    ]:
        np.testing.assert_allclose(y.b, dy)


def test_indexing_broadcasting_and_reshape():
    x = Jet(np.arange(6.0).reshape(2, 3), np.eye(6).reshape(6, 2, 3))
    row = x[0]
    assert row.shape == (3,) and row.b.shape == (6, 3)
    assert x[..., 1].shape == (2,)
    assert x[:, [0, 2]].shape == (2, 2)
    z = x * Jet(np.array([1.0, 2.0, 3.0]), np.ones((6, 3)))  # (2,3) * (3,)
    assert z.shape == (2, 3) and z.b.shape == (6, 2, 3)
    flat = x.reshape(-1)
    np.testing.assert_array_equal(flat.b, np.eye(6))
    tot = x.sum(axis=1)
    np.testing.assert_array_equal(tot.a, [3.0, 12.0])
    assert [j.shape for j in Jet(np.zeros(3), np.eye(3))] == [(), (), ()]


def test_matmul_with_constant_matrix():
    M = np.array([[1.0, 2.0], [3.0, 4.0], [0.5, 0.0]])
    _, J = jets.jacobian(lambda z: M @ z, np.array([0.3, 0.2]))
    np.testing.assert_allclose(J, M)
    _, J = jets.jacobian(lambda z: z @ M, np.array([0.3, 0.2, 0.1]))
    np.testing.assert_allclose(J, M.T)


def test_refuses_silent_conversion_and_nonsmooth_functions():
    x = Jet(np.array([1.0]), np.ones((1, 1)))
    with pytest.raises(TypeError):
        np.asarray(x)
    with pytest.raises(TypeError):
        np.maximum(x, 0.0)
    with pytest.raises(TypeError):
        x**x


def test_helpers_accept_plain_numbers():
    assert jets.exp(0.0) == 1.0
    assert jets.log(1.0) == 0.0
    assert jets.sqrt(4.0) == 2.0
    np.testing.assert_array_equal(jets.concatenate([[1.0], [2.0]]), [1.0, 2.0])
