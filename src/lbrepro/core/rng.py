"""One seed → many independent, reproducible random streams.

Every random quantity in the project comes from ``stream(seed, *keys)``: the configured seed
is the entropy and the keys (figure name, parameter index, replication number, ...) become
the SeedSequence *spawn key*. NumPy's SeedSequence mixes entropy and spawn key through a
hash designed so that distinct spawn keys give streams that are statistically independent
(this is exactly how ``SeedSequence.spawn`` builds its children), and the mixing is pure
integer arithmetic, so the same ``(seed, keys)`` gives the same stream on every machine, in
every process, whatever order the jobs run in.
"""

from __future__ import annotations

import hashlib
import operator

import numpy as np

from lbrepro.core.errors import ConfigError

__all__ = ["key_to_int", "stream", "xoshiro_state"]

_KEY_LIMIT = 2**32


def key_to_int(key: str | int) -> int:
    """Map one stream key to a 32-bit spawn-key word.

    Strings are hashed with BLAKE2b (4-byte digest, little-endian), not Python's ``hash``,
    which is salted per process. Integers are used as they are, so ``stream(s, "fig3", 7)``
    is readable; they must lie in [0, 2**32). A string and an integer can collide only if the
    integer equals the string's 32-bit hash, a 2**-32 coincidence per pair.
    """
    if isinstance(key, str):
        digest = hashlib.blake2b(key.encode("utf-8"), digest_size=4).digest()
        return int.from_bytes(digest, "little")
    if isinstance(key, bool | np.bool_):
        raise ConfigError("keys", f"stream key {key!r} is a bool; use a str or an int")
    try:
        value = operator.index(key)
    except TypeError:
        raise ConfigError(
            "keys", f"stream key {key!r} has type {type(key).__name__}; use a str or an int"
        ) from None
    if not 0 <= value < _KEY_LIMIT:
        raise ConfigError("keys", f"integer stream key {value} is outside [0, 2**32)")
    return value


def stream(seed: int, *keys: str | int) -> np.random.SeedSequence:
    """Return the SeedSequence for ``seed`` and the ordered ``keys``.

    Parameters
    ----------
    seed
        Non-negative integer: the project-wide entropy.
    *keys
        Labels of the stream; order matters (``("a", "b")`` and ``("b", "a")`` differ).

    Returns
    -------
    numpy.random.SeedSequence
        ``SeedSequence(entropy=seed, spawn_key=...)``. With no keys it equals
        ``SeedSequence(seed)``.
    """
    if isinstance(seed, bool | np.bool_):
        raise ConfigError("seed", f"seed must be a non-negative integer, got {seed!r}")
    try:
        entropy = operator.index(seed)
    except TypeError:
        raise ConfigError("seed", f"seed must be a non-negative integer, got {seed!r}") from None
    if entropy < 0:
        raise ConfigError("seed", f"seed must be a non-negative integer, got {entropy}")
    return np.random.SeedSequence(entropy=entropy, spawn_key=tuple(key_to_int(k) for k in keys))


def xoshiro_state(seq: np.random.SeedSequence) -> np.ndarray:
    """Return a fresh uint64[4] xoshiro256 state drawn from ``seq`` (never all zero).

    The all-zero state is the one fixed point of xoshiro; it has probability 2**-256 but is
    replaced deterministically anyway so the generator can never get stuck.
    """
    state = seq.generate_state(4, dtype=np.uint64)
    if not state.any():
        state[0] = np.uint64(0x9E3779B97F4A7C15)
    return state


def seed_sequence(seed: np.random.SeedSequence | int) -> np.random.SeedSequence:
    """A SeedSequence given one, or the stream of an integer seed (``stream(seed)``)."""
    if isinstance(seed, np.random.SeedSequence):
        return seed
    return stream(seed)
