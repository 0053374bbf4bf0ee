"""Fluid trajectories from random initial states, shared by Figs. 4 and 9
(affinity-trajectories and affinity-bistability): rows, plot and claims."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from lbrepro.artifacts.affinity.config_checks import service_rates
from lbrepro.artifacts.affinity.judging import neighbour_sign
from lbrepro.artifacts.affinity.rows import table_row
from lbrepro.artifacts.registry import Rows
from lbrepro.core.claims import Claim, make_claim
from lbrepro.core.io import select
from lbrepro.core.verdicts import Component, EmptyComparisonError, Verdict, decide, exact
from lbrepro.judging.neighbours import NEIGHBOUR, neighbour_load
from lbrepro.models import affinity as model
from lbrepro.plotting.intervals import legend
from lbrepro.plotting.style import color, new_figure

if TYPE_CHECKING:
    from matplotlib.figure import Figure


#: Cells x[i, j] (in the order x00, x01, x10, x11, x20, …) a random initial state spreads over:
#: Fig. 4's (x[i, j], i ≤ 4) and Fig. 9's (x00, x01, x10, x11).
FIG4_CELLS = 10
FIG9_CELLS = 4


def random_states(seed: np.random.SeedSequence, n: int, levels: int, K: int) -> list[np.ndarray]:
    """n initial states, Dirichlet(1) over the first ``levels`` cells (i, j) in order."""
    rng = np.random.default_rng(seed)
    cells = [(i, j) for i in range(K + 1) for j in range(2)][:levels]
    out = []
    for w in rng.dirichlet(np.ones(levels), size=n):
        x = np.zeros((K + 1, 2))
        for (i, j), v in zip(cells, w, strict=True):
            x[i, j] = v
        out.append(x / x.sum())
    return out


#: Extra random initial states (final states only) behind the "most trajectories" statistic of
#: Fig. 9: the figure's 20 give a binomial test too little power to call a 3:1 majority.
MAJORITY_STATES = 100


def fixed_point_reached(
    x0: np.ndarray, p: Mapping[str, Any], d1: int, pts: list[Any]
) -> tuple[int, float]:
    """Where the fluid limit from ``x0`` ends (the point's λ, μ1, μ2, t_end and dt; ``d1``):
    the index of the nearest fixed point of ``pts`` and its L1 distance."""
    xf = model.fluid_final(x0, p["lam"], p["mu2"], p["mu1"], d1, p["t_end"], p["dt"])
    return model.nearest_fixed_point(xf, pts)


def _limit_row(quantity: str, n: int, f: int, dist: float, pts: list[Any], **extra: Any) -> dict:
    """The fixed point trajectory ``n`` reached (its index f) and how close it came."""
    fp = pts[f]
    return table_row(
        "mf", quantity, f, traj=n, kind=fp.kind, distance=dist, stable=fp.stable, **extra
    )


def trajectory_rows(p: Mapping[str, Any], seed: np.random.SeedSequence, levels: int) -> Rows:
    """Fixed points, trajectories from random initial states and their limits (more if bistable)."""
    mu1, mu2 = p["mu1"], p["mu2"]
    lam, d1, K = p["lam"], p["d1"], p["K"]
    pts = model.fixed_points(lam, mu2, mu1, d1, K)
    lam_c = neighbour_load(lam)
    pts_c = model.fixed_points(lam_c, mu2, mu1, d1, K)
    rows: Rows = []
    for f, fp in enumerate(pts):
        for i in range(4):
            for j in range(2):
                rows.append(
                    table_row(
                        "mf",
                        "fixed_point",
                        float(fp.x[i, j]),
                        i=i,
                        j=j,
                        fp=f,
                        kind=fp.kind,
                        stable=fp.stable,
                    )
                )
    for n, x0 in enumerate(random_states(seed, p["n_traj"], levels, K)):
        times, tr = model.fluid_trajectory(
            x0, lam, mu2, mu1, d1, t_end=p["t_end"], dt=p["dt"], n_record=p["n_record"], K=K
        )
        f, dist = model.nearest_fixed_point(tr[-1], pts)
        _, dist_c = model.nearest_fixed_point(tr[-1], pts_c)
        for t_idx, t in enumerate(times):
            for i in range(4):
                for j in range(2):
                    rows.append(
                        table_row("mf", "x", float(tr[t_idx, i, j]), traj=n, t=float(t), i=i, j=j)
                    )
        rows.append(
            _limit_row("limit", n, f, dist, pts, distance_control=dist_c, lam_control=lam_c)
        )
    if len(pts) > 1:  # bistable: more initial states (final states only) for the majority test
        more = random_states(seed.spawn(1)[0], MAJORITY_STATES, levels, K)
        for n, x0 in enumerate(more):
            f, dist = fixed_point_reached(x0, p, d1, pts)
            rows.append(_limit_row("limit_extra", n, f, dist, pts))
    return rows


def trajectory_points(cfg: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """One job: the whole set of trajectories of a figure (deterministic given the seed)."""
    mu1, mu2 = service_rates(cfg)
    keep = ("lam", "d1", "n_traj", "t_end", "dt", "n_record", "K")
    return {"all": {k: cfg[k] for k in keep} | {"mu1": mu1, "mu2": mu2}}


def plot_trajectories(rows: Rows, cfg: Mapping[str, Any], title: str) -> Figure:
    """Two panels (j = 0, 1) of x[i, j](t) per trajectory, the stable fixed points dotted."""
    fig, axes = new_figure(1, 2, width=8.5, height=3.4)
    ntraj = cfg["n_traj"]
    for j, ax in enumerate(axes[0]):
        for n in range(ntraj):
            for i in range(3):
                tr = select(rows, quantity="x", traj=n, i=i, j=j)
                ax.plot(
                    [r["t"] for r in tr],
                    [r["value"] for r in tr],
                    color=color(i),
                    lw=0.7,
                    alpha=0.6,
                    label=f"x[{i},{j}]" if n == 0 else None,
                )
        for r in select(rows, quantity="fixed_point", j=j):
            if r["i"] < 3 and r["stable"]:
                ax.axhline(r["value"], color=color(r["i"]), ls=":", lw=1.0)
        ax.set(
            xlabel="time (mean type-I service times)",
            ylabel="fraction of servers",
            title=f"{title}: type-II count j = {j}",
        )
        legend(ax)
    return fig


def _converged_verdict(limits: Rows, key: str, tol: float, kinds: tuple[str, ...]) -> Verdict:
    """Every final state lies within ``tol`` (L1) of a stable fixed point of an allowed kind."""
    if not limits:
        raise EmptyComparisonError("affinity trajectories: no limit rows")
    bad = [r for r in limits if r[key] > tol or not r["stable"] or r["kind"] not in kinds]
    worst = max(r[key] for r in limits)
    return exact(
        not bad,
        float(f"{worst:.3e}"),
        f"max L1 distance ≤ {tol:g} from a stable {' or '.join(kinds)} fixed point",
        f"{tol:g} (L1)",
        f"{len(limits) - len(bad)}/{len(limits)} trajectories converged",
    )


#: The near miss of "most trajectories": an even split, the share within EVEN of one half.
EVEN = 0.05


def _share_interval(k: int, n: int) -> tuple[float, float]:
    """The two-sided 95% Clopper–Pearson interval of a binomial share k/n."""
    # Imported here: scipy.stats costs every compute job ~0.6 s, and only checks need it.
    from scipy.stats import beta

    lo = float(beta.ppf(0.025, k, n - k + 1)) if k > 0 else 0.0
    hi = float(beta.ppf(0.975, k + 1, n - k)) if k < n else 1.0
    return lo, hi


def _majority_verdicts(k: int, n: int, what: str) -> tuple[Verdict, Verdict]:
    """ "Most of n random initial states go to ``what``, and not all" (the share's 95% interval
    above 1/2, and k < n), and its near miss: an even split, |share − 1/2| < EVEN."""
    if n == 0:
        raise EmptyComparisonError("affinity-bistability: no trajectories to count")
    share = k / n
    lo, hi = _share_interval(k, n)
    hw = max(share - lo, hi - share)
    comps = [
        Component(f"share to the {what} point", share, hw, 0.5, "above"),
        Component("states reaching the other point", float(n - k), 0.0, 0.5, "above"),
    ]
    claim = decide(
        comps,
        expected=f"share to the {what} point > 1/2 (95% Clopper–Pearson), and not all",
        tolerance="the share's whole 95% interval above 1/2",
        margin=0.5,
        details=f"{k}/{n} to the {what} point, 95% interval [{lo:.3f}, {hi:.3f}]",
    )
    even = decide(
        [
            Component("even split (share > 1/2 − m)", share, hw, 0.5 - EVEN, "above"),
            Component("even split (share < 1/2 + m)", share, hw, 0.5 + EVEN, "below"),
        ],
        expected=f"|share − 1/2| < {EVEN:g}",
        tolerance=f"margin {EVEN:g}",
        margin=EVEN,
    )
    return claim, even


def check_trajectories(rows: Rows, cfg: Mapping[str, Any], want_unique: bool) -> list[Claim]:
    """Convergence to the expected fixed point(s), and for a bistable system a queueing majority."""
    limits = select(rows, quantity="limit")
    tol = cfg["tol"]
    lam_c = limits[0]["lam_control"] if limits else neighbour_load(cfg["lam"])
    kinds = ("queueing",) if want_unique else ("queueing", "no-queueing")
    control = (
        f"the trajectories end within {tol:g} of the fixed points at the neighbouring load "
        f"λ = {lam_c:g}",
        _converged_verdict(
            [r | {"stable": True, "kind": kinds[0]} for r in limits], "distance_control", tol, kinds
        ),
    )
    near = min((r["distance_control"] for r in limits), default=0.0)
    distance = (
        f"Δλ = {neighbour_sign([cfg['lam']])}{NEIGHBOUR:g}: the fixed points move by at least "
        f"{near:.3g} (L1), "
        f"{near / tol:.3g} convergence tolerances"
    )
    if want_unique:
        return [
            make_claim(
                f"d1 = {cfg['d1']} < d1*, λ = {cfg['lam']}: the fluid trajectories from all "
                f"{len(limits)} random initial states converge to the queueing fixed point (the "
                "paper: numerical experiments suggest it is a global attractor)",
                _converged_verdict(limits, "distance", tol, kinds),
                control=control,
                distance=distance,
            )
        ]
    claims = [
        make_claim(
            f"λ = {cfg['lam']}, d1 = {cfg['d1']}: all {len(limits)} fluid trajectories from "
            "random initial states converge to one of the two locally stable fixed points",
            _converged_verdict(limits, "distance", tol, kinds),
            control=control,
            distance=distance,
        )
    ]
    pool = limits + select(rows, quantity="limit_extra")
    n = len(pool)
    k_q = sum(r["kind"] == "queueing" for r in pool)
    most, even = _majority_verdicts(k_q, n, "queueing")
    claims.append(
        make_claim(
            f"d1 = {cfg['d1']}: most trajectories converge to the queueing (type-II) fixed point "
            "and some to the no-queueing one",
            most,
            control=("an even split between the two fixed points", even),
            distance=f"the share within {EVEN:g} of one half, the boundary of 'most'",
            details=f"the figure's {len(limits)} plus {n - len(limits)} further random initial "
            "states (final states only)",
        )
    )
    return claims
