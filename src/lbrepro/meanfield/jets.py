"""Exact first and second derivatives by forward-mode hyper-dual numbers ("jets").

Why: the refined mean field needs the Jacobian and second derivatives of the drift at the
fixed point. rmf_tool gets them from sympy, which is slow (n³ symbolic entries) and cannot
differentiate through NumPy code; finite differences lose half the digits. A hyper-dual
number gives both derivatives exactly (to rounding) by evaluating the *same* rate function.

Algebra. A jet is ``x = a + b·ε1 + c·ε2 + e·ε1ε2`` with ``ε1² = ε2² = 0`` and ``ε1ε2 ≠ 0``.
Seeding ``x = a + u·ε1 + v·ε2`` and evaluating a smooth ``g`` gives exactly

    g(x) = g(a) + (∇g·u)·ε1 + (∇g·v)·ε2 + (uᵀ ∇²g v)·ε1ε2.

Everything follows from two rules:

- product: ``(a1 + b1ε1 + c1ε2 + e1ε1ε2)(a2 + b2ε1 + c2ε2 + e2ε1ε2) = a1a2
  + (a1b2 + b1a2)ε1 + (a1c2 + c1a2)ε2 + (a1e2 + b1c2 + c1b2 + e1a2)ε1ε2``;
- scalar function: ``g(x) = g(a) + g'(a)b·ε1 + g'(a)c·ε2 + (g'(a)e + g''(a)bc)·ε1ε2``.

Vectorised over directions: ``a`` has the value's shape ``S``; ``b``, ``c``, ``e`` have shape
``(D,) + S``, one seed pair per leading row. Seeding ``b`` with the identity (``c = e = 0``)
gives a full Jacobian in one evaluation; seeding ``b = c = v_j`` gives a batch of second
directional derivatives ``v_jᵀ∇²g v_j``. A field that is identically zero is stored as
``None``, so a Jacobian-only evaluation never allocates or computes ``c`` and ``e``.

Rate functions are written in plain NumPy: jets implement ``+ - * /`` (with scalars, arrays
and jets on either side), unary ``-``, ``**`` with a real constant exponent, indexing and
slicing, ``sum``, ``reshape``, ``@`` with constant matrices, and the NumPy functions
``np.exp``, ``np.log``, ``np.sqrt``, ``np.square``, ``np.concatenate``, ``np.stack`` and
``np.sum``. Non-smooth functions (``min``, ``max``, ``abs``, comparisons) are deliberately
unsupported: the refined expansion needs twice-differentiable rates.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

__all__ = [
    "Jet",
    "asjet",
    "concatenate",
    "exp",
    "hessian",
    "jacobian",
    "log",
    "second_directional",
    "seed",
    "sqrt",
    "stack",
]

Field = np.ndarray | None


def _add(f: Field, g: Field) -> Field:
    if f is None:
        return g
    if g is None:
        return f
    return f + g


def _scale(coef: Any, f: Field) -> Field:
    return None if f is None else coef * f


def _prod(f: Field, g: Field) -> Field:
    return None if f is None or g is None else f * g


def _safe_scale(coef: np.ndarray, f: Field) -> Field:
    """``coef * f`` where an exactly-zero seed contributes 0 even if ``coef`` is infinite.

    Why: ``sqrt`` or ``x**0.5`` at 0 has an infinite derivative; a direction that does not
    move that coordinate must still get a zero (not NaN = inf·0) derivative.
    """
    if f is None:
        return None
    if np.all(np.isfinite(coef)):
        return coef * f
    with np.errstate(invalid="ignore"):
        out = coef * f
    return np.where(f == 0.0, 0.0, out)


def _lift(f: Field, ndim: int) -> Field:
    """Insert unit axes after the direction axis so ``f`` broadcasts like a value of ``ndim``."""
    if f is None:
        return None
    k = ndim - (f.ndim - 1)
    if k <= 0:
        return f
    return f.reshape(f.shape[:1] + (1,) * k + f.shape[1:])


def _ndir(*fields: Field) -> int | None:
    for f in fields:
        if f is not None:
            return f.shape[0]
    return None


def _canon(f: Field, shape: tuple[int, ...], ndir: int | None) -> Field:
    if f is None:
        return None
    full = (ndir, *shape)
    return f if f.shape == full else np.broadcast_to(f, full)


def _make(a: np.ndarray, b: Field, c: Field, e: Field) -> Jet:
    """Construct without validation (internal fast path; fields already canonical)."""
    out = object.__new__(Jet)
    out.a, out.b, out.c, out.e = a, b, c, e
    return out


class Jet:
    """A hyper-dual number ``a + b·ε1 + c·ε2 + e·ε1ε2`` with array-valued parts.

    Parameters
    ----------
    a : array_like, shape S
        The value.
    b, c, e : ndarray of shape (D,) + S, or None (identically zero)
        Coefficients of ε1, ε2 and ε1ε2, one row per seed direction.
    """

    __slots__ = ("a", "b", "c", "e")
    a: np.ndarray
    b: Field
    c: Field
    e: Field

    def __init__(self, a: Any, b: Any = None, c: Any = None, e: Any = None) -> None:
        self.a = np.asarray(a, dtype=float)
        fields = [None if f is None else np.asarray(f, dtype=float) for f in (b, c, e)]
        ndir = _ndir(*fields)
        for name, f in zip("bce", fields, strict=True):
            if f is not None and f.shape != (ndir, *self.a.shape):
                raise ValueError(
                    f"jet field {name} has shape {f.shape}, expected "
                    f"(directions,) + {self.a.shape} = {(ndir, *self.a.shape)}"
                )
        self.b, self.c, self.e = fields

    # ---------------------------------------------------------------- array-like protocol
    @property
    def shape(self) -> tuple[int, ...]:
        return self.a.shape

    @property
    def ndim(self) -> int:
        return self.a.ndim

    @property
    def ndir(self) -> int | None:
        """Number of seed directions (None for a constant)."""
        return _ndir(self.b, self.c, self.e)

    def __len__(self) -> int:
        return len(self.a)

    def __iter__(self) -> Iterator[Jet]:
        for i in range(len(self)):
            yield self[i]

    def __repr__(self) -> str:
        return f"Jet(a={self.a!r}, b={self.b!r}, c={self.c!r}, e={self.e!r})"

    def __array__(self, *args: Any, **kwargs: Any) -> np.ndarray:
        # Refuse silent conversion to an object/float array, which would drop derivatives.
        raise TypeError("a Jet cannot be converted to a plain array; use .a for its value")

    def __getitem__(self, idx: Any) -> Jet:
        fidx = (slice(None), *idx) if isinstance(idx, tuple) else (slice(None), idx)
        a = self.a[idx]
        return _make(
            np.asarray(a),
            None if self.b is None else self.b[fidx],
            None if self.c is None else self.c[fidx],
            None if self.e is None else self.e[fidx],
        )

    def reshape(self, *shape: Any) -> Jet:
        """Reshape the value axes (the direction axis is kept in front)."""
        new = self.a.reshape(*shape)
        d = self.ndir

        def r(f: Field) -> Field:
            return None if f is None else f.reshape((d, *new.shape))

        return _make(new, r(self.b), r(self.c), r(self.e))

    def sum(self, axis: int | tuple[int, ...] | None = None) -> Jet:
        """Sum over value axes (linear, so every part is summed the same way)."""
        if axis is None:
            axes = tuple(range(self.ndim))
        else:
            axes = tuple(np.atleast_1d(np.asarray(axis, dtype=int)) % max(self.ndim, 1))
        faxes = tuple(ax + 1 for ax in axes)

        def s(f: Field) -> Field:
            return None if f is None else f.sum(axis=faxes)

        return _make(np.asarray(self.a.sum(axis=axes)), s(self.b), s(self.c), s(self.e))

    # ------------------------------------------------------------------------ arithmetic
    def __neg__(self) -> Jet:
        return _make(-self.a, _scale(-1.0, self.b), _scale(-1.0, self.c), _scale(-1.0, self.e))

    def __pos__(self) -> Jet:
        return self

    def __add__(self, other: Any) -> Jet:
        return _binary(self, other, _add_parts)

    def __radd__(self, other: Any) -> Jet:
        return _binary(other, self, _add_parts)

    def __sub__(self, other: Any) -> Jet:
        return _binary(self, -asjet(other), _add_parts)

    def __rsub__(self, other: Any) -> Jet:
        return _binary(other, -self, _add_parts)

    def __mul__(self, other: Any) -> Jet:
        return _binary(self, other, _mul_parts)

    def __rmul__(self, other: Any) -> Jet:
        return _binary(other, self, _mul_parts)

    def __truediv__(self, other: Any) -> Jet:
        if isinstance(other, Jet):
            return _binary(self, _power(other, -1.0), _mul_parts)
        with np.errstate(divide="ignore"):
            inv = 1.0 / np.asarray(other, dtype=float)
        return _binary(self, inv, _mul_parts)

    def __rtruediv__(self, other: Any) -> Jet:
        return _binary(other, _power(self, -1.0), _mul_parts)

    def __pow__(self, p: Any) -> Jet:
        if isinstance(p, Jet):
            raise TypeError("Jet ** Jet is not supported: the exponent must be a real constant")
        return _power(self, p)

    def __rpow__(self, base: Any) -> Jet:
        base = np.asarray(base, dtype=float)
        if np.any(base <= 0):
            raise ValueError("constant ** Jet needs a positive base (it is exp(x·log(base)))")
        return exp(self * np.log(base))

    def __matmul__(self, m: Any) -> Jet:
        if isinstance(m, Jet):
            raise TypeError("Jet @ Jet is not supported: one side must be a constant matrix")
        m = np.asarray(m, dtype=float)
        a = self.a @ m

        def mm(f: Field) -> Field:
            return None if f is None else f @ m

        return _make(np.asarray(a), mm(self.b), mm(self.c), mm(self.e))

    def __rmatmul__(self, m: Any) -> Jet:
        m = np.asarray(m, dtype=float)
        if self.ndim != 1:
            raise TypeError("matrix @ Jet is supported for 1-D jets only")
        a = m @ self.a

        def mm(f: Field) -> Field:
            return None if f is None else f @ m.T

        return _make(np.asarray(a), mm(self.b), mm(self.c), mm(self.e))

    # -------------------------------------------------------------- NumPy interoperation
    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        if method != "__call__" or kwargs:
            return NotImplemented
        handler = _UFUNCS.get(ufunc)
        if handler is None:
            return NotImplemented
        return handler(*inputs)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        handler = _FUNCTIONS.get(func)
        if handler is None:
            return NotImplemented
        return handler(*args, **kwargs)


def asjet(x: Any) -> Jet:
    """Return ``x`` as a Jet: jets pass through, sequences are stacked, constants get no parts."""
    if isinstance(x, Jet):
        return x
    if isinstance(x, (list, tuple)) and any(isinstance(v, Jet) for v in x):
        return stack(x)
    return _make(np.asarray(x, dtype=float), None, None, None)


def _binary(x: Any, y: Any, parts: Callable[..., tuple]) -> Jet:
    x, y = asjet(x), asjet(y)
    shape = np.broadcast_shapes(x.a.shape, y.a.shape)
    nd = len(shape)
    xs = (x.a, _lift(x.b, nd), _lift(x.c, nd), _lift(x.e, nd))
    ys = (y.a, _lift(y.b, nd), _lift(y.c, nd), _lift(y.e, nd))
    a, b, c, e = parts(xs, ys)
    ndir = _ndir(b, c, e)
    return _make(
        np.asarray(np.broadcast_to(a, shape)),
        _canon(b, shape, ndir),
        _canon(c, shape, ndir),
        _canon(e, shape, ndir),
    )


def _add_parts(x: tuple, y: tuple) -> tuple:
    return x[0] + y[0], _add(x[1], y[1]), _add(x[2], y[2]), _add(x[3], y[3])


def _mul_parts(x: tuple, y: tuple) -> tuple:
    xa, xb, xc, xe = x
    ya, yb, yc, ye = y
    b = _add(_scale(ya, xb), _scale(xa, yb))
    c = _add(_scale(ya, xc), _scale(xa, yc))
    e = _add(_add(_scale(ya, xe), _scale(xa, ye)), _add(_prod(xb, yc), _prod(xc, yb)))
    return xa * ya, b, c, e


def _broadcast(x: Jet, shape: tuple[int, ...]) -> Jet:
    if x.a.shape == shape:
        return x
    nd, d = len(shape), x.ndir
    return _make(
        np.asarray(np.broadcast_to(x.a, shape)),
        _canon(_lift(x.b, nd), shape, d),
        _canon(_lift(x.c, nd), shape, d),
        _canon(_lift(x.e, nd), shape, d),
    )


def _chain(x: Jet, f: np.ndarray, f1: np.ndarray, f2: np.ndarray) -> Jet:
    """Apply a scalar function with value f, first derivative f1, second derivative f2 at x.a."""
    e = _add(_safe_scale(f1, x.e), _safe_scale(f2, _prod(x.b, x.c)))
    return _make(np.asarray(f), _safe_scale(f1, x.b), _safe_scale(f1, x.c), e)


def _zero_base_coeffs(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exact ``p·0^(p−1)`` and ``p(p−1)·0^(p−2)`` (limits from the right), never NaN.

    0**p with p ≥ 2 has a zero first derivative and, for p = 2, second derivative 2;
    p = 1 is the identity; p = 0 the constant 1; 0 < p < 2 (p ≠ 1) has a genuinely
    infinite derivative of the corresponding order.
    """
    with np.errstate(invalid="ignore"):
        inf1 = np.inf * np.sign(p)
        inf2 = np.inf * np.sign(p * (p - 1))
    f1 = np.where(p > 1, 0.0, np.where(p == 1, 1.0, np.where(p == 0, 0.0, inf1)))
    f2 = np.where((p == 0) | (p == 1) | (p > 2), 0.0, np.where(p == 2, 2.0, inf2))
    return f1, f2


def _power(x: Any, p: Any) -> Jet:
    x = asjet(x)
    p = np.asarray(p, dtype=float)
    shape = np.broadcast_shapes(x.a.shape, p.shape)
    x = _broadcast(x, shape)
    a = x.a
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        f = np.power(a, p)
        f1 = p * np.power(a, p - 1.0)
        f2 = p * (p - 1.0) * np.power(a, p - 2.0)
    zero = a == 0.0
    if np.any(zero):
        z1, z2 = _zero_base_coeffs(np.broadcast_to(p, shape))
        f1 = np.where(zero, z1, f1)
        f2 = np.where(zero, z2, f2)
    return _chain(x, f, f1, f2)


def exp(x: Any) -> Any:
    """Exponential of a jet (or of a plain number/array)."""
    if not isinstance(x, Jet):
        return np.exp(x)
    f = np.exp(x.a)
    return _chain(x, f, f, f)


def log(x: Any) -> Any:
    """Natural logarithm of a jet (or of a plain number/array)."""
    if not isinstance(x, Jet):
        return np.log(x)
    with np.errstate(divide="ignore", invalid="ignore"):
        return _chain(x, np.log(x.a), 1.0 / x.a, -1.0 / x.a**2)


def sqrt(x: Any) -> Any:
    """Square root of a jet (or of a plain number/array); at 0 see :func:`_zero_base_coeffs`."""
    return _power(x, 0.5) if isinstance(x, Jet) else np.sqrt(x)


def _square(x: Any) -> Jet:
    return _power(x, 2.0)


def _fill(f: Field, shape: tuple[int, ...], ndir: int) -> np.ndarray:
    return np.zeros((ndir, *shape)) if f is None else f


def concatenate(seq: Sequence[Any], axis: int = 0) -> Any:
    """``np.concatenate`` for any mix of jets and constants (plain result if no jet)."""
    if not any(isinstance(v, Jet) for v in seq):
        return np.concatenate([np.asarray(v, dtype=float) for v in seq], axis=axis)
    jets = [asjet(v) for v in seq]
    a = np.concatenate([j.a for j in jets], axis=axis)
    ax = axis % a.ndim + 1
    ndir = next((j.ndir for j in jets if j.ndir is not None), None)
    parts = []
    for name in "bce":
        fs = [getattr(j, name) for j in jets]
        if all(f is None for f in fs) or ndir is None:
            parts.append(None)
        else:
            parts.append(
                np.concatenate(
                    [_fill(f, j.a.shape, ndir) for f, j in zip(fs, jets, strict=True)], axis=ax
                )
            )
    return _make(a, *parts)


def stack(seq: Sequence[Any], axis: int = 0) -> Any:
    """``np.stack`` for any mix of jets and constants (plain result if no jet)."""
    if not any(isinstance(v, Jet) for v in seq):
        return np.stack([np.asarray(v, dtype=float) for v in seq], axis=axis)
    jets = [asjet(v) for v in seq]
    shape = np.broadcast_shapes(*(j.a.shape for j in jets))
    jets = [_broadcast(j, shape) for j in jets]
    a = np.stack([j.a for j in jets], axis=axis)
    ax = axis % a.ndim + 1
    ndir = next(j.ndir for j in jets if j.ndir is not None)
    parts = []
    for name in "bce":
        fs = [getattr(j, name) for j in jets]
        if all(f is None for f in fs):
            parts.append(None)
        else:
            parts.append(np.stack([_fill(f, shape, ndir) for f in fs], axis=ax))
    return _make(a, *parts)


def _np_sum(x: Any, axis: Any = None, **kwargs: Any) -> Jet:
    if kwargs:
        raise TypeError(f"np.sum on a Jet supports only 'axis', not {sorted(kwargs)}")
    return asjet(x).sum(axis=axis)


_UFUNCS: dict[np.ufunc, Callable[..., Any]] = {
    np.add: lambda x, y: _binary(x, y, _add_parts),
    np.subtract: lambda x, y: _binary(x, -asjet(y), _add_parts),
    np.multiply: lambda x, y: _binary(x, y, _mul_parts),
    np.true_divide: lambda x, y: (
        asjet(x) / y if isinstance(x, Jet) else _binary(x, _power(y, -1.0), _mul_parts)
    ),
    np.negative: lambda x: -x,
    np.positive: lambda x: x,
    np.power: lambda x, p: p.__rpow__(x) if isinstance(p, Jet) else _power(x, p),
    np.matmul: lambda x, y: x.__matmul__(y) if isinstance(x, Jet) else y.__rmatmul__(x),
    np.exp: exp,
    np.log: log,
    np.sqrt: sqrt,
    np.square: _square,
}

_FUNCTIONS: dict[Any, Callable[..., Any]] = {
    np.concatenate: concatenate,
    np.stack: stack,
    np.sum: _np_sum,
}


# ---------------------------------------------------------------------------- seeding helpers
def seed(x: Any, b: Any = None, c: Any = None) -> Jet:
    """A jet at value ``x`` with ε1-seeds ``b`` and ε2-seeds ``c`` (rows = directions)."""
    return Jet(x, b, c)


def _output(y: Any) -> Jet:
    return asjet(y)


def jacobian(func: Callable[[Any], Any], x: Any) -> tuple[np.ndarray, np.ndarray]:
    """Value and exact Jacobian of ``func`` at the 1-D point ``x``.

    Returns
    -------
    value : ndarray, shape S (the output shape)
    jac : ndarray, shape S + (n,), ``jac[..., j] = ∂func/∂x_j``
    """
    x = np.asarray(x, dtype=float)
    n = x.size
    y = _output(func(Jet(x, np.eye(n).reshape((n, *x.shape)))))
    b = np.zeros((n, *y.shape)) if y.b is None else y.b
    return y.a.copy(), np.moveaxis(b, 0, -1)


def second_directional(
    func: Callable[[Any], Any], x: Any, directions: Any
) -> tuple[np.ndarray, np.ndarray]:
    """Value and ``vᵀ ∇²func(x) v`` for every row ``v`` of ``directions``.

    Returns
    -------
    value : ndarray, shape S
    curv : ndarray, shape (D,) + S
    """
    x = np.asarray(x, dtype=float)
    v = np.asarray(directions, dtype=float).reshape((-1, *x.shape))
    y = _output(func(Jet(x, v, v)))
    e = np.zeros((v.shape[0], *y.shape)) if y.e is None else y.e
    return y.a.copy(), np.array(e)


def hessian(func: Callable[[Any], Any], x: Any) -> np.ndarray:
    """Exact Hessian of ``func`` at the 1-D point ``x``: shape S + (n, n). For small n."""
    x = np.asarray(x, dtype=float)
    n = x.size
    k, m = np.triu_indices(n)
    eye = np.eye(n)
    y = _output(func(Jet(x, eye[k], eye[m])))
    e = np.zeros((len(k), *y.shape)) if y.e is None else y.e
    h = np.zeros((*y.shape, n, n))
    h[..., k, m] = np.moveaxis(e, 0, -1)
    h[..., m, k] = np.moveaxis(e, 0, -1)
    return h
