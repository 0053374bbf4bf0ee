"""The generic kernel of a density-dependent population process, declared by its transitions.

One Gillespie loop serves every model: with N objects the count vector ``n`` (state
``x = n/N``) jumps by the integer vector ``ℓ`` at rate ``N·β_ℓ(x)``. The model enters only
through ``rate(l, x, params)``, a numba-compiled function passed as a first-class argument
(numba compiles one specialisation of this kernel per rate function), and through two sparse
tables built once by :mod:`lbrepro.sim.population`:

- the jumps, in CSR form (``jump_ptr``, ``jump_idx``, ``jump_val``): transition ``l`` adds
  ``jump_val[e]`` to ``n[jump_idx[e]]`` for ``e`` in ``jump_ptr[l]:jump_ptr[l + 1]``;
- the dependencies, in CSR form (``dep_ptr``, ``dep_idx``): the transitions whose rate reads
  coordinate ``i``. After a jump only those rates are evaluated again, so an event costs
  O(jump size × dependants) rate calls, not O(T) — what keeps a truncated queueing model
  with hundreds of transitions near the speed of a dedicated kernel.

The next transition is found in two steps: a scan of block sums (blocks of ``block``
consecutive transitions, kept up to date with each rate change), then a scan inside the
chosen block — O(√T) comparisons for ``block`` ≈ √T, where a plain scan would walk past every
arrival transition to reach a departure. The event that would cross ``t_end`` is discarded, which
is exact for a Markov chain (memorylessness), so a micro-batch ends exactly at ``t_end``.
Time integrals of every coordinate are kept lazily: a coordinate's area is brought up to date
only when it changes, and all of them at the end of the call.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from lbrepro.sim.xoshiro import uniform

__all__ = ["STATUS_BAD_STATE", "STATUS_NEGATIVE_RATE", "STATUS_OK", "population_run"]

#: The micro-batch ran to its end.
STATUS_OK = 0
#: A rate came out negative or not finite: the declared rates are wrong at this state.
STATUS_NEGATIVE_RATE = 1
#: A jump left the counts outside [0, N]: a transition has a positive rate where it must not.
STATUS_BAD_STATE = 2


# error_model="numpy": no Python-style zero-division checks in the event loop.
@njit(cache=False, error_model="numpy")
def population_run(
    rate,
    params,
    counts,
    x,
    N,
    rates,
    jump_ptr,
    jump_idx,
    jump_val,
    dep_ptr,
    dep_idx,
    area,
    last,
    t,
    t_end,
    state,
    block,
):
    """Advance the process from time ``t`` to ``t_end``; returns (status, t, events, bad).

    ``counts`` (int64) and ``x`` (float64, ``counts / N``) are the state, ``rates`` the
    current rate of every transition (kept up to date in place), ``area``/``last`` the time
    integral of each coordinate of ``x`` and when it was last brought up to date. ``bad`` is
    the transition (bad state) or transition index (bad rate) that stopped the run, else -1.
    """
    T = rates.shape[0]
    nb = (T + block - 1) // block
    blocks = np.zeros(nb)
    total = 0.0
    for tr in range(T):
        blocks[tr // block] += rates[tr]
        total += rates[tr]
    events = 0
    scale = float(N)
    while True:
        if total <= 0.0:
            t = t_end  # absorbed: nothing more happens
            break
        dt = -math.log(uniform(state)) / (scale * total)
        if t + dt >= t_end:
            t = t_end
            break
        t += dt
        # The transition: the first l whose cumulative rate exceeds u · total.
        target = uniform(state) * total
        acc = 0.0
        b = nb - 1
        for c in range(nb):
            if target <= acc + blocks[c]:
                b = c
                break
            acc += blocks[c]
        chosen = min(T, (b + 1) * block) - 1
        for tr in range(b * block, min(T, (b + 1) * block)):
            acc += rates[tr]
            if target <= acc and rates[tr] > 0.0:
                chosen = tr
                break
        for e in range(jump_ptr[chosen], jump_ptr[chosen + 1]):
            i = jump_idx[e]
            area[i] += x[i] * (t - last[i])
            last[i] = t
            counts[i] += jump_val[e]
            if counts[i] < 0 or counts[i] > N:
                for j in range(x.shape[0]):
                    area[j] += x[j] * (t - last[j])
                    last[j] = t
                return STATUS_BAD_STATE, t, events, chosen
            x[i] = counts[i] / scale
        for e in range(jump_ptr[chosen], jump_ptr[chosen + 1]):
            i = jump_idx[e]
            for f in range(dep_ptr[i], dep_ptr[i + 1]):
                tr = dep_idx[f]
                r = rate(tr, x, params)
                if not (r >= 0.0) or math.isinf(r):
                    return STATUS_NEGATIVE_RATE, t, events, tr
                total += r - rates[tr]
                blocks[tr // block] += r - rates[tr]
                rates[tr] = r
        events += 1
    for j in range(x.shape[0]):
        area[j] += x[j] * (t - last[j])
        last[j] = t
    return STATUS_OK, t, events, -1
