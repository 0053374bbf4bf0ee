"""The simulator against the exact Markov chain of a tiny system (N = 3), built independently.

Servers are labelled; a state is the tuple of (type-I, type-II) counts per server, truncated at
i ≤ L type-I jobs (arrivals that would exceed it are dropped; at λ = 0.5 the truncated mass is
< 1e-6). Every primary set of d1 distinct servers is enumerated with equal probability and the
assignment rule of models.md §D applied literally; the stationary law gives x[i, j].
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.linalg import spsolve

from lbrepro.core.stats import bonferroni_factor
from lbrepro.sim.affinity import simulate_affinity

L = 8


def _exact_x(lam: float, mu1: float, mu2: float, d1: int, N: int) -> np.ndarray:
    per_server = [(i, j) for i in range(L + 1) for j in range(2)]
    states = list(itertools.product(per_server, repeat=N))
    index = {s: k for k, s in enumerate(states)}
    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []
    subsets = list(itertools.combinations(range(N), d1))
    for s, state in enumerate(states):

        def add(target: dict[int, tuple[int, int]], rate: float, s=s, state=state) -> None:
            new = list(state)
            for srv, occ in target.items():
                new[srv] = occ
            rows.extend((s, s))
            cols.extend((index[tuple(new)], s))
            vals.extend((rate, -rate))

        for sub in subsets:
            p = lam * N / len(subsets)
            idle_primary = [k for k in sub if state[k] == (0, 0)]
            idle_any = [k for k in range(N) if state[k] == (0, 0)]
            if idle_primary:
                for k in idle_primary:
                    add({k: (1, 0)}, p / len(idle_primary))
            elif idle_any:
                for k in idle_any:
                    add({k: (0, 1)}, p / len(idle_any))
            else:
                tot = min(sum(state[k]) for k in sub)
                best = [k for k in sub if sum(state[k]) == tot]
                for k in best:
                    i, j = state[k]
                    if i < L:
                        add({k: (i + 1, j)}, p / len(best))
        for k, (i, j) in enumerate(state):
            if i > 0:
                add({k: (i - 1, j)}, mu1)
            elif j == 1:
                add({k: (0, 0)}, mu2)
    n = len(states)
    A = sp.csr_matrix((vals, (cols, rows)), shape=(n, n)).tolil()  # Q transposed
    A[0, :] = 1.0  # replace one balance equation by the normalisation
    b = np.zeros(n)
    b[0] = 1.0
    pi = spsolve(A.tocsc(), b)
    x = np.zeros((L + 1, 2))
    for state, w in zip(states, pi, strict=True):
        for i, j in state:
            x[i, j] += w / N
    return x


@pytest.mark.parametrize("d1", [1, 2])
def test_simulation_matches_the_exact_chain(d1):
    lam, mu1, mu2, N = 0.5, 1.0, 0.4, 3
    exact = _exact_x(lam, mu1, mu2, d1, N)
    r = simulate_affinity(lam, mu2, mu1, d1, N, horizon=200_000, warmup=100, batches=20,
                          seed=11 + d1)  # fmt: skip
    cells = [(0, 0), (1, 0), (0, 1), (1, 1), (2, 0), (2, 1)]
    widen = bonferroni_factor(20, len(cells))
    for i, j in cells:
        half = (r.x_ci_high[i, j] - r.x_ci_low[i, j]) / 2
        assert abs(r.x[i, j] - exact[i, j]) <= widen * half + 1e-4, (i, j, r.x[i, j], exact[i, j])
    # type II jobs exist only through rule 2 (no idle primary but an idle server)
    assert exact[:, 1].sum() > 0.01
