"""xoshiro256** random numbers for numba kernels (Blackman & Vigna 2018).

The state is a uint64[4] array (from ``lbrepro.core.rng.xoshiro_state``) mutated in place,
so a kernel called several times continues the same stream. A hot loop may instead hold the
four words in local variables (``s0, s1, s2, s3 = state``) and draw with the ``*_from``
functions, which return the new words, then store them back before returning: the same
numbers, without a store to memory at every draw. All arithmetic is explicitly
uint64: mixing uint64 with a signed integer makes numba promote to float64.

Numba's on-disk cache of a kernel does not notice edits to this file; after changing it,
delete the ``__pycache__`` of the calling module.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["bounded_from", "next_u64", "next_u64_from", "randint", "uniform", "uniform_from"]

_S7 = np.uint64(7)
_S11 = np.uint64(11)
_S17 = np.uint64(17)
_S32 = np.uint64(32)
_S45 = np.uint64(45)
_S64 = np.uint64(64)
_FIVE = np.uint64(5)
_NINE = np.uint64(9)
_ONE = np.uint64(1)
_LOW32 = np.uint64(0xFFFFFFFF)
_TWO32 = np.uint64(1 << 32)
_TWO_M53 = 1.0 / 9007199254740992.0


@njit(inline="always")
def _rotl(x, k):
    """Rotate the 64-bit word x left by k bits."""
    return (x << k) | (x >> (_S64 - k))


@njit(inline="always")
def next_u64(state):
    """Advance ``state`` and return the next uint64 (xoshiro256** output function)."""
    s0 = state[0]
    s1 = state[1]
    s2 = state[2]
    s3 = state[3]
    result = _rotl(s1 * _FIVE, _S7) * _NINE
    t = s1 << _S17
    s2 ^= s0
    s3 ^= s1
    s1 ^= s2
    s0 ^= s3
    s2 ^= t
    s3 = _rotl(s3, _S45)
    state[0] = s0
    state[1] = s1
    state[2] = s2
    state[3] = s3
    return result


@njit(inline="always")
def uniform(state):
    """Uniform float64 on (0, 1] with 53 random bits: never 0, so ``-log(u)`` is finite."""
    return ((next_u64(state) >> _S11) + _ONE) * _TWO_M53


@njit(inline="always")
def randint(state, n):
    """Exactly uniform integer in [0, n) for 1 <= n < 2**32 (Lemire's method with rejection).

    The multiply-shift maps 32 random bits to [0, n); rejecting the few low products below
    ``2**32 mod n`` removes its bias, so the result is exact, not merely close.
    """
    n64 = np.uint64(n)
    m = (next_u64(state) >> _S32) * n64
    low = m & _LOW32
    if low < n64:
        threshold = (_TWO32 - n64) % n64
        while low < threshold:
            m = (next_u64(state) >> _S32) * n64
            low = m & _LOW32
    return np.int64(m >> _S32)


@njit(inline="always")
def next_u64_from(s0, s1, s2, s3):
    """``next_u64`` on a state held in four local words: return (output, s0, s1, s2, s3)."""
    result = _rotl(s1 * _FIVE, _S7) * _NINE
    t = s1 << _S17
    s2 ^= s0
    s3 ^= s1
    s1 ^= s2
    s0 ^= s3
    s2 ^= t
    s3 = _rotl(s3, _S45)
    return result, s0, s1, s2, s3


@njit(inline="always")
def uniform_from(x):
    """The uniform on (0, 1] that ``uniform`` makes of the 64-bit output x."""
    return ((x >> _S11) + _ONE) * _TWO_M53


@njit(inline="always")
def bounded_from(s0, s1, s2, s3, n):
    """``randint(state, n)`` on a state held in four local words: (value, s0, s1, s2, s3)."""
    n64 = np.uint64(n)
    x, s0, s1, s2, s3 = next_u64_from(s0, s1, s2, s3)
    m = (x >> _S32) * n64
    low = m & _LOW32
    if low < n64:
        threshold = (_TWO32 - n64) % n64
        while low < threshold:
            x, s0, s1, s2, s3 = next_u64_from(s0, s1, s2, s3)
            m = (x >> _S32) * n64
            low = m & _LOW32
    return np.int64(m >> _S32), s0, s1, s2, s3
