"""Artifacts of the affinity paper (seed 003, artifacts.md §D, models.md §D).

Coupling tables (exact integers), the fluid limit with its fixed points and their stability,
bistability for large d1, finite-N simulation against the fluid limit, performance against
JSQ(d1) and random assignment, and finite-N tunneling between the two quasi-stable states.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from lbrepro.artifacts.registry import Artifact, Rows, register
from lbrepro.core.claims import Claim, close, make_claim
from lbrepro.core.errors import ConfigError
from lbrepro.core.ids import add_point, num
from lbrepro.core.io import select
from lbrepro.core.stats import Estimate, batch_means_ci
from lbrepro.core.verdicts import (
    EmptyComparisonError,
    Verdict,
    estimate,
    trend,
    within,
)
from lbrepro.models import affinity as model
from lbrepro.plotting.style import METHOD_STYLE, color, new_figure
from lbrepro.sim.affinity import residence_times, simulate_affinity

SLUG = "affinity"

ASSIGNMENT_NOTE = (
    "The assignment rule is inferred (the seed text omits it): an idle primary server takes "
    "the job as type I; else any idle server takes it as type II; else it joins the primary "
    "server with the fewest jobs (ties uniformly) as type I. Type I has preemptive priority "
    "over the (at most one) type-II job of a server. This rule reproduces every published "
    "number (the Fig. 5 fixed point and the immediate-switch fraction 1/4)."
)
FLUID_NOTE = (
    "The fluid limit is integrated with a hybrid fixed-step RK4: interior steps while u > 0; a "
    "step that would make u negative is cut at the crossing and u set to exactly 0 (the "
    "O(dt²) overshoot taken from x01); on the face u = 0 the immediate-switch field is used "
    "while λ ≥ R = μ2 x01 + μ1 x10 (Filippov sliding), instead of the paper's indicator "
    "1{u < 1e−15}. Type-I counts are truncated at K = 12 (the paper: 9)."
)
RANDOM_STATES_NOTE = (
    "The paper does not say how its random initial states were drawn: here they are uniform "
    "(Dirichlet(1)) over the cells x[i, j] with i ≤ 4 (Fig. 4), or over x00, x10, x01, x11 "
    "(Fig. 9), from the artifact's seed."
)
TUNNELING_NOTE = (
    "The paper shows no tunneling figure; the parameters (λ = 0.8, d1 = 25, N = 50–100), the "
    "observable (fraction of servers holding a type-II job) and the hysteresis thresholds "
    "(≤ 0.1 no-queueing, ≥ 0.7 queueing) are lbrepro's choices. Residences cut by the start or "
    "the end of a run are dropped. The paper's claim that residence times grow with N is about "
    "large N at fixed d1, so it is judged only where d1/N ≤ 0.2: for the no-queueing state on "
    "the first exit from empty, for the queueing state on the first exit from a type-II job "
    "everywhere (first snapshot with at most the low threshold); replicated, each the mean of "
    "the exit times capped at a cap, with a Student-t CI, and the censored count stated. "
    "Residences along one long path at N = 50–100 (d1/N = 0.5–0.25) are a separate finite-N "
    "finding."
)
EXTRAPOLATION_NOTE = (
    "The fluid limit and the fixed-point formulas are N = ∞ values. Each simulation is also run "
    "with N/2 servers (same horizon, independent stream); assuming an O(1/N) offset, "
    "2·x_N − x_{N/2} estimates the N = ∞ value (half-width √(4h_N² + h_{N/2}²)), and the claim "
    "is judged on it with no tolerance beyond the CI. The comparison of the N-server estimate "
    "itself with the N = ∞ value is reported as a separate finite-N finding."
)
PRIMARY_NOTE = (
    "Simulations draw the d1 primary servers without replacement (a set of d1 distinct "
    "servers); the fluid limit is the same as with replacement."
)


def _mu(cfg: Mapping[str, Any]) -> tuple[float, float]:
    return float(cfg.get("mu1", 1.0)), float(cfg.get("mu2", 0.5))


def _validate_params(cfg: Mapping[str, Any], name: str, lam_key: str = "lam") -> None:
    """Semantic checks: μ2 < μ1, every λ < μ1, 1 ≤ d1 ≤ N; errors name the config key.

    ``lam_key`` is the config key the loads in ``cfg["lam"]`` came from (``lam_sim[0]``, not
    the index into a concatenated list).
    """
    mu1, mu2 = _mu(cfg)
    lams = cfg.get("lam", [])
    is_list = isinstance(lams, list | tuple)
    lams = lams if is_list else [lams]
    for i, lam in enumerate(lams):
        key = f"{name}.{lam_key}[{i}]" if is_list else f"{name}.{lam_key}"
        try:
            model.check_params(lam, mu2, mu1)
        except ConfigError as err:
            key = key if err.key == "lam" else f"{name}.{err.key}"
            raise ConfigError(key, str(err).removeprefix(f"{err.key}: ")) from None
        except ValueError as err:
            raise ConfigError(key, str(err).removeprefix("lam: ")) from None
    ds = cfg.get("d1", [])
    ds = ds if isinstance(ds, list | tuple) else [ds]
    Ns = cfg.get("N", [])
    Ns = Ns if isinstance(Ns, list | tuple) else [Ns]
    for d in ds:
        if d < 1:
            raise ConfigError(f"{name}.d1", f"must be >= 1, got {d}")
        for N in Ns:
            if d > N:
                raise ConfigError(f"{name}.d1", f"d1 = {d} exceeds N = {N}")


def _finite(v: Any) -> bool:
    """A real number (tables read NaN back as None)."""
    return isinstance(v, int | float) and math.isfinite(v)


def _fmt(v: Any, spec: str) -> str:
    return format(v, spec) if _finite(v) else "n/a"


def _row(method: str, quantity: str, value: Any, **extra: Any) -> dict[str, Any]:
    return {"method": method, "quantity": quantity, "value": value} | extra


def _contract(rows: Rows, seed: np.random.SeedSequence, N: int) -> Rows:
    """Give every simulation row the data contract's ci_low, ci_high (None when the row is a
    single path value, not an estimate), N and seed columns."""
    for r in rows:
        if r["method"] == "sim":
            r.setdefault("ci_low", None)
            r.setdefault("ci_high", None)
            r.setdefault("N", N)
            r.setdefault("seed", seed.entropy)
    return rows


def _exact(passed: bool, measured: Any, expected: Any, details: str = "") -> Verdict:
    """The verdict of an exact (integer or rational) comparison: no tolerance."""
    return Verdict(bool(passed), measured, expected, "exact", details)


def _extrapolate(big: Estimate, small: Estimate) -> Estimate:
    """The N → ∞ value from estimates at N and N/2, assuming an O(1/N) offset (Richardson).

    x_N = x_∞ + c/N + o(1/N) gives x_∞ ≈ 2·x_N − x_{N/2}; the two runs are independent, so its
    half-width is √(4h_N² + h_{N/2}²).
    """
    mean = 2 * float(big.mean) - float(small.mean)
    half = math.hypot(2 * float(big.half_width), float(small.half_width))
    batches = min(b for b in (big.batches, small.batches) if b) if big.batches else 0
    return Estimate(mean, mean - half, mean + half, half, batches)


# ---------------------------------------------------------------------------------------
# affinity-table1


def _table1_points(cfg: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {"all": {"N": cfg["N"], "k_max": cfg["k_max"]}}


def _table1_compute(p: dict[str, Any], seed: np.random.SeedSequence) -> Rows:
    N = p["N"]
    rows: Rows = []
    for k in range(1, p["k_max"] + 1):
        d = model.table1_d(N, k)
        full = model.step_dominates(N, d, k)
        below = model.step_dominates(N, d - 1, k) if 2 * (d - 1) >= N else False
        rows.append(_row("cf", "d_min", d, N=N, k=k, dominates_everywhere=full, d_minus_1=below))
    return rows


PUBLISHED_TABLE1 = {2: 31, 3: 34, 4: 36, 5: 38}


def _table1_row(N: int, ks: list[int]) -> list[int]:
    """Table 1's smallest d at N for the given k (exact integers, the model's formula)."""
    return [model.table1_d(N, k) for k in ks]


def _shortcut_agrees(N: int, k: int, d: int) -> bool:
    """The single-position test picked d: f_aff ≥ f_ref everywhere at d and not at d − 1."""
    below = model.step_dominates(N, d - 1, k) if 2 * (d - 1) >= N else False
    return model.step_dominates(N, d, k) and not below


def _first_jump_d(N: int, k: int) -> int:
    """The control's wrong shortcut: the smallest d ≥ N/2 whose first jump beats f_ref(1)."""
    fr1 = model.f_ref(N, k)[1]
    return next(d for d in range((N + 1) // 2, N) if model.f_aff(N, d)[1] > fr1)


def _table1_check(rows: Rows, cfg: Mapping[str, Any]) -> list[Claim]:
    N = cfg["N"]
    got = {r["k"]: r["value"] for r in select(rows, quantity="d_min")}
    ks = list(PUBLISHED_TABLE1)
    pub = [PUBLISHED_TABLE1[k] for k in ks]

    def reproduces(row: list[Any], n: int) -> Verdict:
        miss = [k for k, a, b in zip(ks, row, pub, strict=True) if a != b]
        return _exact(
            not miss,
            str(row),
            str(pub),
            f"N = {n}: differs from the published row at k = {miss}" if miss else "",
        )

    # A computed row against the published one can fail: a verdict. Control: the same exact
    # computation at N ± 1 must not reproduce the published row (the table pins N = 50 down).
    ctrl = [reproduces(_table1_row(n, ks), n) for n in (N - 1, N + 1)]
    claims = [
        make_claim(
            f"Table 1 (N = {N}): the smallest degree d for k = 2, 3, 4, 5 equals the published "
            "31, 34, 36, 38",
            reproduces([got.get(k) for k in ks], N),
            control=(
                f"the same computation at N = {N - 1} and N = {N + 1} must not reproduce the row",
                Verdict(
                    any(c.passed for c in ctrl),
                    " / ".join(str(c.measured) for c in ctrl),
                    str(pub),
                    "exact",
                    "; ".join(c.details for c in ctrl),
                ),
            ),
            details="exact integer arithmetic: (d+1)·C(N,k) > N·(C(N,k) − C(d+1,k))",
        )
    ]
    # The paper's shortcut: f_ref is concave, so the test at the single position N − d − 1
    # decides dominance everywhere. Control: a naive test at the first jump (position 1) must
    # not agree with dominance everywhere for every k.
    rows_d = select(rows, quantity="d_min")
    agree = [r["k"] for r in rows_d if r["dominates_everywhere"] and not r["d_minus_1"]]
    naive = [r["k"] for r in rows_d if _shortcut_agrees(N, r["k"], _first_jump_d(N, r["k"]))]
    claims.append(
        make_claim(
            "Concavity shortcut: the single-position test f_aff(N−d−1) > f_ref(N−d−1) gives "
            "the smallest d with f_aff ≥ f_ref at every position, for every k",
            _exact(len(agree) == len(rows_d), f"{len(agree)}/{len(rows_d)} k", "every k"),
            control=(
                "a naive single-position test at the first jump (position 1) must not agree for "
                "every k",
                _exact(len(naive) == len(rows_d), f"{len(naive)}/{len(rows_d)} k", "every k"),
            ),
            details="checked with exact fractions at all N + 1 positions for d and d − 1",
            source="lbrepro",
        )
    )
    return claims


def _table1_summary(rows: Rows) -> Rows:
    return [{"k": r["k"], "smallest d (N = 50)": r["value"]} for r in rows]


register(
    Artifact(
        id="affinity-table1",
        slug=SLUG,
        kind="table",
        title="Table 1: smallest degree d for the JSQ(k) coupling",
        caption=(
            "Smallest degree d ≥ N/2 of a d-regular graph for which the worst-case step "
            "function f_aff lies above the JSQ(k) step function f_ref, N = 50; computed with "
            "exact integers."
        ),
        methods=("CF",),
        points=_table1_points,
        compute=_table1_compute,
        check=_table1_check,
        summary=_table1_summary,
    )
)

# ---------------------------------------------------------------------------------------
# affinity-stepfunctions


def _steps_points(cfg: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {"all": {"N": cfg["N"], "k": cfg["k"], "d": list(cfg["d"])}}


def _steps_compute(p: dict[str, Any], seed: np.random.SeedSequence) -> Rows:
    N, k = p["N"], p["k"]
    rows: Rows = []
    for n, v in enumerate(model.f_ref(N, k)):
        rows.append(_row("cf", "f_ref", float(v), N=N, k=k, n=n, exact=str(v)))
    # The controls' degrees: Table 1's d and d − 1 (on either side of the dominance boundary).
    need = model.table1_d(N, k)
    extra = [d for d in (need - 1, need) if 2 * d >= N and d not in p["d"]]
    for d in [*p["d"], *extra]:
        for n, v in enumerate(model.f_aff(N, d)):
            rows.append(_row("cf", "f_aff", float(v), N=N, d=d, n=n, exact=str(v)))
    return rows


def _steps_gap(rows: Rows, d: int) -> tuple[Any, int] | None:
    """min over positions of f_aff(d) − f_ref (exact) and where it is attained; None if absent."""
    from fractions import Fraction

    fr = {r["n"]: Fraction(r["exact"]) for r in select(rows, quantity="f_ref")}
    fa = {r["n"]: Fraction(r["exact"]) for r in select(rows, quantity="f_aff", d=d)}
    if not fa:
        return None
    worst = min(fr, key=lambda n: fa[n] - fr[n])
    return fa[worst] - fr[worst], worst


def _steps_check(rows: Rows, cfg: Mapping[str, Any]) -> list[Claim]:
    N, k = cfg["N"], cfg["k"]
    need = model.table1_d(N, k)

    def verdict(d: int, above: bool) -> Verdict:
        got = _steps_gap(rows, d)
        if got is None:  # d − 1 < N/2: no worst-case step function exists, nothing dominates
            return _exact(False, f"d = {d} < N/2: no two-jump step function", "n/a")
        gap, n = got
        ok = gap >= 0 if above else gap < 0
        return _exact(
            ok,
            f"min (f_aff − f_ref) = {float(gap):+.4f} at n = {n}",
            "≥ 0 at every position" if above else "< 0 at some position",
        )

    claims = []
    for d in cfg["d"]:
        if d >= need:
            text = (
                f"N = {N}, k = {k}, d = {d} ≥ {need} (Table 1): f_aff ≥ f_ref at every position, "
                f"so the graph model is dominated by JSQ({k})"
            )
            ctrl_d = need - 1
        else:
            text = (
                f"N = {N}, k = {k}, d = {d} < {need} (Table 1): f_aff falls below f_ref at some "
                f"position (the graph must be denser for the JSQ({k}) bound)"
            )
            ctrl_d = need
        ctrl = (
            f"the same test at d = {ctrl_d}, on the other side of Table 1's boundary, must fail",
            verdict(ctrl_d, d >= need),
        )
        claims.append(make_claim(text, verdict(d, d >= need), control=ctrl))
    return claims


def _steps_plot(rows: Rows, cfg: Mapping[str, Any]):
    fig, axes = new_figure(1, 1, width=6.0, height=3.4)
    ax = axes[0][0]
    ref = select(rows, quantity="f_ref")
    ax.step(
        [r["n"] for r in ref],
        [r["value"] for r in ref],
        where="post",
        color="k",
        label=f"f_ref, JSQ({cfg['k']})",
    )
    for i, d in enumerate(cfg["d"]):
        aff = select(rows, quantity="f_aff", d=d)
        ax.step(
            [r["n"] for r in aff],
            [r["value"] for r in aff],
            where="post",
            color=color(i),
            ls="--",
            label=f"f_aff, d = {d}",
        )
    ax.set(
        xlabel="server position n (ordered by type-I jobs)",
        ylabel="fraction of selections",
        title=f"Coupling step functions, N = {cfg['N']}, k = {cfg['k']}",
    )
    ax.legend(loc="lower right")
    return fig


register(
    Artifact(
        id="affinity-stepfunctions",
        slug=SLUG,
        kind="figure",
        title="Fig. 2: coupling step functions",
        caption=(
            "Step function f_ref of JSQ(k) (each selection stacked as a block from its lowest "
            "position) against the worst-case d-regular step function f_aff, which jumps "
            "(d+1)/N at position 1 and to 1 at N − d. d = 34 (Table 1 for k = 3) lies above."
        ),
        methods=("CF",),
        points=_steps_points,
        compute=_steps_compute,
        check=_steps_check,
        plot=_steps_plot,
    )
)

# ---------------------------------------------------------------------------------------
# affinity-dstar


def _dstar_points(cfg: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {"all": {"lam": list(cfg["lam"]), "mu2": list(cfg["mu2"]), "mu1": cfg.get("mu1", 1.0)}}


def _dstar_validate(cfg: Mapping[str, Any]) -> None:
    for mu2 in cfg["mu2"]:
        _validate_params(
            {"lam": cfg["lam"], "mu2": mu2, "mu1": cfg.get("mu1", 1.0)}, "affinity-dstar"
        )


def _dstar_compute(p: dict[str, Any], seed: np.random.SeedSequence) -> Rows:
    rows: Rows = []
    u = np.linspace(0.0, 1.0, 100001)[1:]
    for mu2 in p["mu2"]:
        for lam in p["lam"]:
            d = model.dstar(lam, mu2, p["mu1"])
            dc = model.dstar_continuous(lam, mu2, p["mu1"])
            # Independent check of d1* on a dense u grid: a root at d1*, none at d1* − 1.
            has = (
                float(np.min(model.no_queueing_balance(u, lam, mu2, p["mu1"], d))) < 0 or lam < mu2
            )
            none_below = (
                d == 1 or float(np.min(model.no_queueing_balance(u, lam, mu2, p["mu1"], d - 1))) > 0
            )
            # The control: the same grid test with d1* − 1 as the candidate must not confirm it.
            shifted = None
            if d >= 2:
                bal = model.no_queueing_balance
                shifted = bool(
                    float(np.min(bal(u, lam, mu2, p["mu1"], d - 1))) < 0
                    and (d == 2 or float(np.min(bal(u, lam, mu2, p["mu1"], d - 2))) > 0)
                )
            rows.append(
                _row(
                    "cf",
                    "dstar",
                    d,
                    lam=lam,
                    mu2=mu2,
                    dstar_real=dc,
                    grid_confirms=bool(has and none_below),
                    grid_confirms_shifted=shifted,
                )
            )
    return rows


def _dstar_check(rows: Rows, cfg: Mapping[str, Any]) -> list[Claim]:
    claims = []
    mu1 = cfg.get("mu1", 1.0)

    def bracket(d: int, lam: float) -> Verdict:
        return _exact(3 < d <= 25, f"d1* = {d} at λ = {lam:g}", "3 < d1* ≤ 25")

    r = select(rows, lam=0.8, mu2=0.5)
    if r:
        # Control: below μ2 a no-queueing root exists for every d1 (d1* = 1), so d1 = 3 is
        # not below d1* there: the same bracket must fail.
        lam_c = min([lam for lam in cfg["lam"] if lam < 0.5] or [0.45])
        claims.append(
            make_claim(
                "λ = 0.8, μ2 = 0.5: d1 = 3 lies below d1* (the fixed point is unique) and d1 = 25 "
                "at or above it (two more fixed points)",
                bracket(r[0]["value"], 0.8),
                control=(
                    f"the same bracket at λ = {lam_c:g} < μ2 (a root for every d1) must fail",
                    bracket(model.dstar(lam_c, 0.5, mu1), lam_c),
                ),
            )
        )
    ok = [r for r in rows if r["grid_confirms"]]
    shifted = [r for r in rows if r.get("grid_confirms_shifted") is not None]
    claims.append(
        make_claim(
            "d1* from the convexity of F agrees with a dense grid search (a root at d1*, none at "
            "d1* − 1) for every (λ, μ2)",
            _exact(len(ok) == len(rows), f"{len(ok)}/{len(rows)}", "every (λ, μ2)"),
            control=(
                "the same grid test with d1* − 1 as the candidate must not confirm it "
                f"({len(shifted)} rows with d1* ≥ 2)",
                _exact(
                    bool(shifted) and all(r["grid_confirms_shifted"] for r in shifted),
                    f"{sum(bool(r['grid_confirms_shifted']) for r in shifted)}/{len(shifted)}",
                    "every (λ, μ2)",
                ),
            ),
            source="lbrepro",
        )
    )

    def monotone(vals: list[int]) -> Verdict:
        if len(vals) < 2:
            raise EmptyComparisonError(f"affinity-dstar: a trend needs two λ, got {vals}")
        ok = all(a <= b for a, b in itertools.pairwise(vals)) and vals[-1] > vals[0]
        return _exact(ok, str(vals), "non-decreasing, last > first")

    for mu2 in cfg["mu2"]:
        vals = [r["value"] for r in sorted(select(rows, mu2=mu2), key=lambda r: r["lam"])]
        claims.append(
            make_claim(
                f"μ2 = {mu2:.4g}: d1* increases with λ (non-decreasing, larger at the largest λ)",
                monotone(vals),
                control=("the same test on the λ axis reversed must fail", monotone(vals[::-1])),
                source="lbrepro",
            )
        )
    return claims


def _dstar_summary(rows: Rows) -> Rows:
    out: Rows = []
    for lam in sorted({r["lam"] for r in rows}):
        row: dict[str, Any] = {"λ": lam}
        for r in select(rows, lam=lam):
            dc = r["dstar_real"]
            row[f"d1* (μ2 = {r['mu2']:.3g})"] = f"{r['value']}" + (
                f"  (real {dc:.2f})" if _finite(dc) else ""
            )
        out.append(row)
    return out


register(
    Artifact(
        id="affinity-dstar",
        slug=SLUG,
        kind="table",
        title="d1*: the smallest primary selection with no-queueing fixed points",
        caption=(
            "d1* = smallest d1 for which F(u) = u + (λ/μ1)(1 − (1−u)^d1) + (λ/μ2)(1−u)^d1 − 1 "
            "has a root (μ1 = 1); for λ < μ2 there is always exactly one (d1* = 1). F is convex, "
            "so its minimum decides; 'real' is the non-integer d at which the roots are born."
        ),
        methods=("CF",),
        points=_dstar_points,
        compute=_dstar_compute,
        check=_dstar_check,
        summary=_dstar_summary,
        validate=_dstar_validate,
    )
)

# ---------------------------------------------------------------------------------------
# Fluid trajectories from random initial states (Figs. 4 and 9)


def _random_states(seed: np.random.SeedSequence, n: int, levels: int, K: int) -> list[np.ndarray]:
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


#: The controls' neighbouring load: the fixed points at λ − LAM_SHIFT must lie farther than the
#: convergence tolerance from where the trajectories end.
LAM_SHIFT = 0.02
#: Extra random initial states (final states only) behind the "most trajectories" statistic of
#: Fig. 9: the figure's 20 give a binomial test too little power to call a 3:1 majority.
MAJORITY_STATES = 100


def _traj_rows(p: Mapping[str, Any], seed: np.random.SeedSequence, levels: int) -> Rows:
    mu1, mu2 = p["mu1"], p["mu2"]
    lam, d1, K = p["lam"], p["d1"], p["K"]
    pts = model.fixed_points(lam, mu2, mu1, d1, K)
    pts_c = model.fixed_points(lam - LAM_SHIFT, mu2, mu1, d1, K)
    rows: Rows = []
    for f, fp in enumerate(pts):
        for i in range(4):
            for j in range(2):
                rows.append(
                    _row(
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
    for n, x0 in enumerate(_random_states(seed, p["n_traj"], levels, K)):
        times, tr = model.fluid_trajectory(
            x0, lam, mu2, mu1, d1, t_end=p["t_end"], dt=p["dt"], n_record=p["n_record"], K=K
        )
        f, dist = model.nearest_fixed_point(tr[-1], pts)
        _, dist_c = model.nearest_fixed_point(tr[-1], pts_c)
        for t_idx, t in enumerate(times):
            for i in range(4):
                for j in range(2):
                    rows.append(
                        _row("mf", "x", float(tr[t_idx, i, j]), traj=n, t=float(t), i=i, j=j)
                    )
        rows.append(
            _row(
                "mf",
                "limit",
                f,
                traj=n,
                kind=pts[f].kind,
                distance=dist,
                stable=pts[f].stable,
                distance_control=dist_c,
                lam_control=lam - LAM_SHIFT,
            )
        )
    if len(pts) > 1:  # bistable: more initial states (final states only) for the majority test
        more = _random_states(seed.spawn(1)[0], MAJORITY_STATES, levels, K)
        for n, x0 in enumerate(more):
            xf = model.fluid_final(x0, lam, mu2, mu1, d1, p["t_end"], p["dt"])
            f, dist = model.nearest_fixed_point(xf, pts)
            rows.append(
                _row(
                    "mf",
                    "limit_extra",
                    f,
                    traj=n,
                    kind=pts[f].kind,
                    distance=dist,
                    stable=pts[f].stable,
                )
            )
    return rows


def _traj_points(cfg: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    mu1, mu2 = _mu(cfg)
    keep = ("lam", "d1", "n_traj", "t_end", "dt", "n_record", "K")
    return {"all": {k: cfg[k] for k in keep} | {"mu1": mu1, "mu2": mu2}}


def _traj_plot_generic(rows: Rows, cfg: Mapping[str, Any], title: str):
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
        ax.legend(loc="upper right")
    return fig


def _converged(limits: Rows, key: str, tol: float, kinds: tuple[str, ...]) -> Verdict:
    """Every final state lies within ``tol`` (L1) of a stable fixed point of an allowed kind."""
    if not limits:
        raise EmptyComparisonError("affinity trajectories: no limit rows")
    bad = [r for r in limits if r[key] > tol or not r["stable"] or r["kind"] not in kinds]
    worst = max(r[key] for r in limits)
    return Verdict(
        passed=not bad,
        measured=f"max L1 distance {worst:.2e}",
        expected=f"≤ {tol:g} from a stable {' or '.join(kinds)} fixed point",
        tolerance=tol,
        details=f"{len(limits) - len(bad)}/{len(limits)} trajectories converged",
    )


def _majority(k: int, n: int, what: str) -> Verdict:
    """A one-sided binomial test that more than half of n random initial states go to ``what``,
    and not all of them (the other fixed point is reached too)."""
    from scipy.stats import binomtest

    if n == 0:
        raise EmptyComparisonError("affinity-bistability: no trajectories to count")
    pval = float(binomtest(k, n, 0.5, alternative="greater").pvalue)
    return Verdict(
        passed=pval < 0.05 and k < n,
        measured=f"{k}/{n} to the {what} point",
        expected="a majority (binomial p < 0.05 against one half), not all",
        tolerance="one-sided binomial test at 5%",
        details=f"p = {pval:.2g}",
    )


def _traj_check(rows: Rows, cfg: Mapping[str, Any], want_unique: bool) -> list[Claim]:
    limits = select(rows, quantity="limit")
    tol = cfg["tol"]
    lam_c = limits[0]["lam_control"] if limits else cfg["lam"] - LAM_SHIFT
    kinds = ("queueing",) if want_unique else ("queueing", "no-queueing")
    control = (
        f"the same distance to the fixed points at the neighbouring load λ = {lam_c:g} must "
        f"exceed {tol:g}",
        _converged(
            [r | {"stable": True, "kind": kinds[0]} for r in limits], "distance_control", tol, kinds
        ),
    )
    if want_unique:
        return [
            make_claim(
                f"d1 = {cfg['d1']} < d1*, λ = {cfg['lam']}: the fluid trajectories from all "
                f"{len(limits)} random initial states converge to the queueing fixed point (the "
                "paper: numerical experiments suggest it is a global attractor)",
                _converged(limits, "distance", tol, kinds),
                control=control,
            )
        ]
    claims = [
        make_claim(
            f"λ = {cfg['lam']}, d1 = {cfg['d1']}: all {len(limits)} fluid trajectories from "
            "random initial states converge to one of the two locally stable fixed points",
            _converged(limits, "distance", tol, kinds),
            control=control,
        )
    ]
    pool = limits + select(rows, quantity="limit_extra")
    n = len(pool)
    k_q = sum(r["kind"] == "queueing" for r in pool)
    claims.append(
        make_claim(
            f"d1 = {cfg['d1']}: most trajectories converge to the queueing (type-II) fixed point "
            "and some to the no-queueing one",
            _majority(k_q, n, "queueing"),
            control=(
                "the same majority test for the no-queueing fixed point must fail",
                _majority(n - k_q, n, "no-queueing"),
            ),
            details=f"the figure's {len(limits)} plus {n - len(limits)} further random initial "
            "states (final states only)",
        )
    )
    return claims


def _traj_validate(name: str):
    def validate(cfg: Mapping[str, Any]) -> None:
        _validate_params(cfg, name)
        if "low" in cfg and cfg["low"] >= cfg["high"]:
            # Equal or crossed thresholds collapse the hysteresis: noise would count as switches.
            raise ConfigError(
                f"{name}.low", f"{cfg['low']} must be below high = {cfg['high']} (hysteresis)"
            )

    return validate


def _perf_validate(name: str):
    def validate(cfg: Mapping[str, Any]) -> None:
        _validate_params({**cfg, "lam": list(cfg["lam_grid"])}, name, "lam_grid")
        _validate_params({**cfg, "lam": list(cfg["lam_sim"])}, name, "lam_sim")

    return validate


register(
    Artifact(
        id="affinity-trajectories",
        slug=SLUG,
        kind="figure",
        title="Fig. 4: fluid trajectories for d1 = 3",
        caption=(
            "Fluid limit from 10 random initial states (Dirichlet over x[i, j], i ≤ 4), λ = 0.8, "
            "μ1 = 1, μ2 = 0.5, d1 = 3; dotted lines: the queueing fixed point. Left: servers "
            "without a type-II job; right: with one."
        ),
        methods=("MF",),
        points=_traj_points,
        compute=lambda p, seed: _traj_rows(p, seed, levels=10),
        check=lambda rows, cfg: _traj_check(rows, cfg, want_unique=True),
        plot=lambda rows, cfg: _traj_plot_generic(rows, cfg, "d1 = 3"),
        validate=_traj_validate("affinity-trajectories"),
        reconstructions=(FLUID_NOTE, RANDOM_STATES_NOTE),
    )
)

register(
    Artifact(
        id="affinity-bistability",
        slug=SLUG,
        kind="figure",
        title="Fig. 9: bistability for d1 = 25",
        caption=(
            "20 fluid trajectories from random initial states with x00 + x01 + x10 + x11 = 1, "
            "λ = 0.8, μ2 = 0.5, d1 = 25; dotted lines: the two stable fixed points (queueing: "
            "a type-II job everywhere; no-queueing: at most one job per server)."
        ),
        methods=("MF",),
        points=_traj_points,
        compute=lambda p, seed: _traj_rows(p, seed, levels=4),
        check=lambda rows, cfg: _traj_check(rows, cfg, want_unique=False),
        plot=lambda rows, cfg: _traj_plot_generic(rows, cfg, "d1 = 25"),
        validate=_traj_validate("affinity-bistability"),
        reconstructions=(FLUID_NOTE, RANDOM_STATES_NOTE),
    )
)

# ---------------------------------------------------------------------------------------
# affinity-sim-vs-fluid


def _svf_validate(cfg: Mapping[str, Any]) -> None:
    _validate_params(cfg, "affinity-sim-vs-fluid")
    for i, (d1, _start) in enumerate(cfg["cases"]):
        if not 1 <= d1 <= cfg["N"]:
            raise ConfigError(
                f"affinity-sim-vs-fluid.cases[{i}][0]", f"d1 = {d1} must lie in [1, N = {cfg['N']}]"
            )


def _svf_points(cfg: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    mu1, mu2 = _mu(cfg)
    keep = ("lam", "N", "horizon", "warmup", "t_plot", "dt_snap", "batches")
    points: dict[str, dict[str, Any]] = {}
    for d1, start in cfg["cases"]:
        params = {k: cfg[k] for k in keep} | {"d1": d1, "start": start, "mu1": mu1, "mu2": mu2}
        add_point(points, f"d{d1}-{start}", params, "cases")
    return points


def _start_state(start: str, K: int) -> np.ndarray:
    x = np.zeros((K + 1, 2))
    x[0, 0 if start == "empty" else 1] = 1.0
    return x


def _svf_stationary_rows(sim: Any, N: int, seed: Any, batches: int, case: dict) -> Rows:
    """The stationary estimates of one run: x[i, j] for i ≤ 3 and the immediate-switch fraction."""
    rows: Rows = []
    for i in range(4):
        for j in range(2):
            rows.append(
                _row(
                    "sim",
                    "x_mean",
                    float(sim.x[i, j]),
                    ci_low=float(sim.x_ci_low[i, j]),
                    ci_high=float(sim.x_ci_high[i, j]),
                    i=i,
                    j=j,
                    N=N,
                    seed=seed,
                    batches=batches,
                )
                | case
            )
    arr = sim.arrivals_type1 + sim.arrivals_type2
    est = batch_means_ci(sim.arrivals_type2 / arr) if len(arr) > 1 else None
    rows.append(
        _row(
            "sim",
            "switch_fraction",
            float(sim.arrivals_type2.sum() / arr.sum()),
            ci_low=est.low if est else None,
            ci_high=est.high if est else None,
            N=N,
            seed=seed,
            batches=batches,
        )
        | case
    )
    return rows


def _svf_compute(p: dict[str, Any], seed: np.random.SeedSequence) -> Rows:
    lam, mu1, mu2, d1, N = p["lam"], p["mu1"], p["mu2"], p["d1"], p["N"]
    case = {"d1": d1, "start": p["start"]}
    snap = np.arange(0.0, p["t_plot"] + 1e-9, p["dt_snap"])
    sim = simulate_affinity(
        lam,
        mu2,
        mu1,
        d1,
        N,
        horizon=p["horizon"],
        warmup=p["warmup"],
        batches=p["batches"],
        start=p["start"],
        seed=seed,
        snap_times=snap,
    )
    K = model.K_DEFAULT
    times, tr = model.fluid_trajectory(
        _start_state(p["start"], K), lam, mu2, mu1, d1, t_end=p["t_plot"], n_record=201, K=K
    )
    rows: Rows = []
    for i in range(4):
        for j in range(2):
            for t, v in zip(times, tr[:, i, j], strict=True):
                rows.append(_row("mf", "x_t", float(v), t=float(t), i=i, j=j) | case)
            for t, v in zip(snap, sim.snaps[:, i, j], strict=True):
                rows.append(_row("path", "x_t", float(v), t=float(t), i=i, j=j, N=N) | case)
    rows += _svf_stationary_rows(sim, N, seed.entropy, p["batches"], case)
    # The same run with N/2 servers (stationary estimates only): with x_N = x_∞ + c/N the pair
    # gives the N → ∞ value the fluid limit claims (see _extrapolate).
    half_seed = seed.spawn(1)[0]
    sim_h = simulate_affinity(
        lam,
        mu2,
        mu1,
        d1,
        N // 2,
        horizon=p["horizon"],
        warmup=p["warmup"],
        batches=p["batches"],
        start=p["start"],
        seed=half_seed,
    )
    rows += _svf_stationary_rows(sim_h, N // 2, seed.entropy, p["batches"], case)
    pts = model.fixed_points(lam, mu2, mu1, d1)
    f, _ = model.nearest_fixed_point(tr[-1], pts)
    # The control: the fixed point of the same kind at the neighbouring load λ − LAM_SHIFT.
    pts_c = [q for q in model.fixed_points(lam - LAM_SHIFT, mu2, mu1, d1) if q.stable]
    fc = next(q for q in pts_c if q.kind == pts[f].kind)
    for i in range(4):
        for j in range(2):
            rows.append(
                _row("mf", "fixed_point", float(pts[f].x[i, j]), i=i, j=j, kind=pts[f].kind) | case
            )
            rows.append(
                _row(
                    "mf",
                    "fixed_point_control",
                    float(fc.x[i, j]),
                    i=i,
                    j=j,
                    kind=fc.kind,
                    lam=lam - LAM_SHIFT,
                )
                | case
            )
    sw_c = mu2 * float(fc.x[0, 1]) / (lam - LAM_SHIFT) if fc.kind == "queueing" else 0.0
    rows.append(
        _row("mf", "switch_fraction_control", sw_c, lam=lam - LAM_SHIFT, kind=fc.kind) | case
    )
    return _contract(rows, seed, N)


def _fixed_cells(kind: str) -> list[tuple[int, int]]:
    """The cells that carry a fixed point: its three largest fractions."""
    return [(0, 1), (1, 1), (2, 1)] if kind == "queueing" else [(0, 0), (1, 0), (0, 1)]


PUBLISHED_FIG5 = {(0, 1): 0.40, (1, 1): 0.4704, (2, 1): 0.1283}


def _fig5_verdict(lam: float) -> Verdict:
    """The closed-form queueing fixed point at λ (μ2 = 0.5, d1 = 3) against the published one,
    which is rounded at four decimals: every cell within 5e-5."""
    xq = model.queueing_fixed_point(lam, 0.5, 1.0, 3)
    diffs = {c: abs(float(xq[c]) - v) for c, v in PUBLISHED_FIG5.items()}
    worst = max(diffs, key=diffs.get)
    return Verdict(
        passed=diffs[worst] <= 5e-5,
        measured=", ".join(f"x{c} = {float(xq[c]):.5f}" for c in PUBLISHED_FIG5),
        expected=", ".join(f"x{c} = {v}" for c, v in PUBLISHED_FIG5.items()),
        tolerance="5e-05 (the published rounding)",
        details=f"λ = {lam:g}: largest difference {diffs[worst]:.2g} at x{worst}",
    )


def _svf_check(rows: Rows, cfg: Mapping[str, Any]) -> list[Claim]:
    lam = cfg["lam"]
    claims: list[Claim] = [
        make_claim(
            "Fig. 5: the closed-form queueing fixed point at λ = 0.8, μ2 = 0.5, d1 = 3 is the "
            "published (x01, x11, x21) = (0.40, 0.4704, 0.1283)",
            _fig5_verdict(0.8),
            control=(
                f"the closed form at the neighbouring load λ = {0.8 - LAM_SHIFT / 2:g} must not "
                "match the published numbers",
                _fig5_verdict(0.8 - LAM_SHIFT / 2),
            ),
        ),
    ]
    perf = model.performance(0.8, 0.5, 1.0, 3)["cm_switch_fraction"]
    perf_c = model.performance(0.8 - LAM_SHIFT / 2, 0.5, 1.0, 3)["cm_switch_fraction"]
    claims.append(
        make_claim(
            "At λ = 0.8, μ2 = 0.5 the fixed point sends a fraction μ2·x01/λ = 1/4 of the arrivals "
            "through an immediate switch",
            close(0.25, perf, 1e-9, relative=True),
            control=(
                f"the closed form at λ = {0.8 - LAM_SHIFT / 2:g} must not give 1/4",
                close(0.25, perf_c, 1e-9, relative=True),
            ),
        )
    )
    for d1, start in cfg["cases"]:
        claims += _svf_case_claims(rows, cfg, d1, start, lam)
    return claims


def _svf_case_claims(
    rows: Rows, cfg: Mapping[str, Any], d1: int, start: str, lam: float
) -> list[Claim]:
    fp = {(r["i"], r["j"]): r for r in select(rows, quantity="fixed_point", d1=d1, start=start)}
    fpc = {
        (r["i"], r["j"]): r
        for r in select(rows, quantity="fixed_point_control", d1=d1, start=start)
    }
    sims = select(rows, quantity="x_mean", d1=d1, start=start)
    if not sims or not fp:
        raise EmptyComparisonError(f"affinity-sim-vs-fluid: no rows for d1 = {d1}, {start}")
    Ns = sorted({r["N"] for r in sims})
    N, Nh = Ns[-1], Ns[0]
    kind = next(iter(fp.values()))["kind"]
    cells = _fixed_cells(kind)
    by = {(r["N"], r["i"], r["j"]): estimate(r) for r in sims}
    labels = [f"x{c}" for c in cells]
    ref = [fp[c]["value"] for c in cells]
    ref_c = [fpc[c]["value"] for c in cells]
    lam_c = next(iter(fpc.values()))["lam"]
    ctrl_text = (
        f"the {kind} fixed point at the neighbouring load λ = {lam_c:g} must be rejected by the "
        "same statistic"
    )
    claims: list[Claim] = []
    if Nh < N:
        ext = [_extrapolate(by[(N, *c)], by[(Nh, *c)]) for c in cells]
        claims.append(
            make_claim(
                f"d1 = {d1}, start {start}: the simulated system settles at the {kind} fixed "
                f"point of the fluid limit — its stationary fractions, extrapolated to N → ∞ "
                f"from N = {Nh} and {N} (O(1/N) offset), lie within the CI of the fixed point",
                within(ext, ref, labels=labels),
                control=(ctrl_text, within(ext, ref_c, labels=labels)),
                details="finite-N offsets (sim − fluid): "
                + "; ".join(
                    f"x{c}: N={Nh} {by[(Nh, *c)].mean - fp[c]['value']:+.4f}, N={N} "
                    f"{by[(N, *c)].mean - fp[c]['value']:+.4f}"
                    for c in cells
                ),
            )
        )
    est = [by[(N, *c)] for c in cells]
    claims.append(
        make_claim(
            f"Finite-N (N = {N}), d1 = {d1}, start {start}: the simulated stationary fractions "
            f"lie within their CI of the {kind} fixed point, with no finite-N allowance",
            within(est, ref, labels=labels),
            control=(ctrl_text, within(est, ref_c, labels=labels)),
            source="lbrepro",
        )
    )
    if kind == "queueing":
        sw = {
            r["N"]: estimate(r)
            for r in select(rows, quantity="switch_fraction", d1=d1, start=start)
        }
        sw_c = select(rows, quantity="switch_fraction_control", d1=d1, start=start)[0]["value"]
        ctrl = f"the closed form {sw_c:.4f} at λ = {lam_c:g} must be rejected"
        target = model.performance(lam, cfg.get("mu2", 0.5), cfg.get("mu1", 1.0), d1)[
            "cm_switch_fraction"
        ]
        if Nh < N:
            e = [_extrapolate(sw[N], sw[Nh])]
            claims.append(
                make_claim(
                    f"d1 = {d1}: the simulated immediate-switch fraction of arrivals, "
                    f"extrapolated to N → ∞ from N = {Nh} and {N}, is the fixed point's "
                    f"μ2·x01/λ = {target:.4g}",
                    within(e, [target], labels=["switch fraction"]),
                    control=(ctrl, within(e, [sw_c], labels=["switch fraction"])),
                    source="lbrepro",
                    details=f"N = {Nh}: {sw[Nh].mean:.4f}, N = {N}: {sw[N].mean:.4f}",
                )
            )
        claims.append(
            make_claim(
                f"Finite-N (N = {N}), d1 = {d1}: the simulated immediate-switch fraction lies "
                f"within its CI of μ2·x01/λ = {target:.4g}, with no finite-N allowance",
                within([sw[N]], [target], labels=["switch fraction"]),
                control=(ctrl, within([sw[N]], [sw_c], labels=["switch fraction"])),
                source="lbrepro",
            )
        )
    return claims


def _svf_plot(rows: Rows, cfg: Mapping[str, Any]):
    cases = cfg["cases"]
    fig, axes = new_figure(1, len(cases), width=3.3 * len(cases), height=3.4)
    for a, (d1, start) in enumerate(cases):
        ax = axes[0][a]
        cells = [(0, 0), (1, 0), (0, 1), (1, 1), (2, 1)]
        for c, (i, j) in enumerate(cells):
            mf = select(rows, method="mf", quantity="x_t", d1=d1, start=start, i=i, j=j)
            sim = select(rows, method="path", quantity="x_t", d1=d1, start=start, i=i, j=j)
            ax.plot(
                [r["t"] for r in sim], [r["value"] for r in sim], color=color(c), lw=0.6, alpha=0.7
            )
            ax.plot(
                [r["t"] for r in mf],
                [r["value"] for r in mf],
                color=color(c),
                **METHOD_STYLE["mf"] | {"label": f"x[{i},{j}]"},
            )
        ax.set(
            xlabel="time (mean type-I service times)",
            ylabel="fraction of servers",
            title=f"d1 = {d1}, start: {start}",
        )
        if a == 0:
            ax.legend(loc="upper right", title="dashed: fluid, solid: sim")
    return fig


def _svf_summary(rows: Rows) -> Rows:
    out = []
    for r in select(rows, quantity="x_mean"):
        if r["N"] != max(q["N"] for q in rows if q["quantity"] == "x_mean"):
            continue  # the N/2 run only feeds the N → ∞ extrapolation
        if (r["i"], r["j"]) in ((0, 0), (1, 0), (0, 1), (1, 1), (2, 1)):
            fp = select(
                rows, quantity="fixed_point", d1=r["d1"], start=r["start"], i=r["i"], j=r["j"]
            )[0]
            out.append(
                {
                    "d1": r["d1"],
                    "start": r["start"],
                    "cell": f"x[{r['i']},{r['j']}]",
                    "simulation (95% CI)": f"{r['value']:.4f} [{r['ci_low']:.4f}, "
                    f"{r['ci_high']:.4f}]",
                    "fluid fixed point": f"{fp['value']:.4f}",
                    "fixed point": fp["kind"],
                }
            )
    return out


register(
    Artifact(
        id="affinity-sim-vs-fluid",
        slug=SLUG,
        kind="figure",
        title="Figs. 3/5: simulation (N = 2000) against the fluid limit",
        caption=(
            "Fractions x[i, j] along one simulated path with N = 2000 servers (solid) and the "
            "fluid limit (dashed), λ = 0.8, μ2 = 0.5: d1 = 3 from empty (unique, queueing fixed "
            "point), d1 = 25 from empty (no-queueing point) and from one type-II job everywhere "
            "(queueing point)."
        ),
        methods=("MF", "SIM"),
        points=_svf_points,
        compute=_svf_compute,
        check=_svf_check,
        plot=_svf_plot,
        summary=_svf_summary,
        validate=_svf_validate,
        reconstructions=(ASSIGNMENT_NOTE, FLUID_NOTE, PRIMARY_NOTE, EXTRAPOLATION_NOTE),
    )
)

# ---------------------------------------------------------------------------------------
# affinity-basin


def _basin_points(cfg: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    mu1, mu2 = _mu(cfg)
    keep = ("lam", "d1", "grid", "t_end", "dt", "K")
    return {"all": {k: cfg[k] for k in keep} | {"mu1": mu1, "mu2": mu2}}


def _basin_compute(p: dict[str, Any], seed: np.random.SeedSequence) -> Rows:
    lam, mu1, mu2, d1, K, n = p["lam"], p["mu1"], p["mu2"], p["d1"], p["K"], p["grid"]
    pts = model.fixed_points(lam, mu2, mu1, d1, K)
    model.check_params(lam, mu2, mu1, d1)
    rows: Rows = []
    for a in range(n + 1):
        for b in range(n + 1 - a):
            x0 = np.zeros((K + 1, 2))
            x0[0, 0], x0[0, 1], x0[1, 0] = a / n, b / n, (n - a - b) / n
            xf = model.fluid_final(x0, lam, mu2, mu1, d1, p["t_end"], p["dt"])
            f, dist = model.nearest_fixed_point(xf, pts)
            rows.append(
                _row(
                    "mf",
                    "limit",
                    float(f),  # index of the fixed point reached (see the fixed_point rows)
                    kind=pts[f].kind,
                    x00=a / n,
                    x01=b / n,
                    x10=(n - a - b) / n,
                    distance=dist,
                )
            )
    # The control: the same grid (coarser) just below the saddle-node, d1 = d1* − 1, where the
    # queueing fixed point is the only one.
    d1_c = model.dstar(lam, mu2, mu1) - 1
    if d1_c >= 1:
        pts_c = model.fixed_points(lam, mu2, mu1, d1_c, K)
        n_c = min(n, 10)
        for a in range(n_c + 1):
            for b in range(n_c + 1 - a):
                x0 = np.zeros((K + 1, 2))
                x0[0, 0], x0[0, 1], x0[1, 0] = a / n_c, b / n_c, (n_c - a - b) / n_c
                xf = model.fluid_final(x0, lam, mu2, mu1, d1_c, p["t_end"], p["dt"])
                f, dist = model.nearest_fixed_point(xf, pts_c)
                rows.append(
                    _row(
                        "mf",
                        "limit_control",
                        float(f),
                        kind=pts_c[f].kind,
                        x00=a / n_c,
                        x01=b / n_c,
                        x10=(n_c - a - b) / n_c,
                        distance=dist,
                        d1=d1_c,
                    )
                )
    for f, fp in enumerate(pts):
        rows.append(
            _row(
                "mf",
                "fixed_point",
                float(f),
                kind=fp.kind,
                x00=float(fp.x[0, 0]),
                x01=float(fp.x[0, 1]),
                x10=float(fp.x[1, 0]),
                stable=fp.stable,
            )
        )
    return rows


def _two_basins(lim: Rows, tol: float) -> Verdict:
    """Every initial state converges (L1 ≤ tol) and both basins are non-empty."""
    if not lim:
        raise EmptyComparisonError("affinity-basin: no initial states")
    nq = sum(r["kind"] == "no-queueing" for r in lim)
    q = sum(r["kind"] == "queueing" for r in lim)
    far = sum(r["distance"] > tol for r in lim)
    return Verdict(
        passed=bool(nq and q and not far),
        measured=f"no-queueing {nq}, queueing {q}, unconverged {far}",
        expected="both basins non-empty, every state converged",
        tolerance=tol,
        details=f"max L1 distance {max(r['distance'] for r in lim):.1e}",
    )


def _basin_sides(q: Rows, nq: Rows) -> Verdict:
    """The queueing basin has the higher mean x01 and the lower mean x00."""
    if not q or not nq:
        return _exact(False, "one basin is empty", "two basins")
    mq = (np.mean([r["x01"] for r in q]), np.mean([r["x00"] for r in q]))
    mn = (np.mean([r["x01"] for r in nq]), np.mean([r["x00"] for r in nq]))
    return Verdict(
        passed=bool(mq[0] > mn[0] and mq[1] < mn[1]),
        measured=f"mean x01 {mq[0]:.3f} vs {mn[0]:.3f}; mean x00 {mq[1]:.3f} vs {mn[1]:.3f}",
        expected="higher mean x01 and lower mean x00 in the first basin",
        tolerance="exact (a deterministic grid)",
    )


def _basin_check(rows: Rows, cfg: Mapping[str, Any]) -> list[Claim]:
    lim = select(rows, quantity="limit")
    ctrl = select(rows, quantity="limit_control")
    tol = cfg["tol"]
    d1_c = ctrl[0]["d1"] if ctrl else None
    claims = [
        make_claim(
            f"{len(lim)} initial states on x00 + x01 + x10 = 1 (λ = {cfg['lam']}, d1 = "
            f"{cfg['d1']}): each converges to a fixed point; both basins are non-empty",
            _two_basins(lim, tol),
            control=(
                f"the same grid at d1 = d1* − 1 = {d1_c} (one fixed point) must not show two "
                "basins",
                _two_basins(ctrl, tol)
                if ctrl
                else _exact(False, "d1* = 1: no d1 below it", "two basins"),
            ),
        )
    ]
    q = [r for r in lim if r["kind"] == "queueing"]
    nq = [r for r in lim if r["kind"] == "no-queueing"]
    claims.append(
        make_claim(
            "Initial states not converging to the no-queueing point have many type-II jobs and "
            "few idle servers (higher mean x01, lower mean x00 than the no-queueing basin)",
            _basin_sides(q, nq),
            control=("the same comparison with the basins swapped must fail", _basin_sides(nq, q)),
        )
    )
    return claims


def _basin_plot(rows: Rows, cfg: Mapping[str, Any]):
    fig, axes = new_figure(1, 1, width=5.0, height=4.0)
    ax = axes[0][0]
    for c, kind in enumerate(("no-queueing", "queueing")):
        pts = select(rows, quantity="limit", kind=kind)
        ax.scatter(
            [r["x00"] for r in pts],
            [r["x01"] for r in pts],
            s=8,
            color=color(c),
            label=f"→ {kind} fixed point",
        )
    for r in select(rows, quantity="fixed_point"):
        if r["kind"] == "no-queueing":
            ax.plot(
                r["x00"],
                r["x01"],
                marker="*" if r["stable"] else "x",
                color="k",
                ms=10,
                ls="none",
                label=f"no-queueing ({'stable' if r['stable'] else 'saddle'})",
            )
    ax.set(
        xlabel="initial idle fraction x00",
        ylabel="initial fraction x01 (one type-II job)",
        title=f"Basins, λ = {cfg['lam']}, d1 = {cfg['d1']} (x10 = 1 − x00 − x01)",
    )
    ax.legend(loc="upper right")
    return fig


register(
    Artifact(
        id="affinity-basin",
        slug=SLUG,
        kind="figure",
        title="Fig. 8: basins of attraction on the simplex x00 + x01 + x10 = 1",
        caption=(
            "Initial states on a triangular grid of x00 + x01 + x10 = 1 coloured by the fixed "
            "point their fluid trajectory reaches, λ = 0.8, μ2 = 0.5, d1 = 25."
        ),
        methods=("MF",),
        points=_basin_points,
        compute=_basin_compute,
        check=_basin_check,
        plot=_basin_plot,
        validate=_traj_validate("affinity-basin"),
        reconstructions=(FLUID_NOTE,),
    )
)

# ---------------------------------------------------------------------------------------
# affinity-bifurcation


def _bif_points(cfg: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    mu1, mu2 = _mu(cfg)
    return {
        "d1": {
            "axis": "d1",
            "lam": cfg["lam"],
            "d1": list(range(1, cfg["d1_max"] + 1)),
            "mu1": mu1,
            "mu2": mu2,
        },
        "lam": {
            "axis": "lam",
            "lam": list(cfg["lam_grid"]),
            "d1": cfg["d1"],
            "mu1": mu1,
            "mu2": mu2,
        },
    }


def _bif_compute(p: dict[str, Any], seed: np.random.SeedSequence) -> Rows:
    rows: Rows = []
    combos = (
        [(p["lam"], d) for d in p["d1"]]
        if p["axis"] == "d1"
        else [(lam, p["d1"]) for lam in p["lam"]]
    )
    for lam, d1 in combos:
        for fp in model.fixed_points(lam, p["mu2"], p["mu1"], d1):
            rows.append(
                _row(
                    "mf",
                    "u",
                    fp.u,
                    axis=p["axis"],
                    lam=lam,
                    d1=d1,
                    kind=fp.kind,
                    stable=fp.stable,
                    max_real_eig=float(np.max(fp.eigenvalues.real)),
                )
            )
    if p["axis"] == "d1":
        rows.append(
            _row(
                "cf",
                "dstar",
                model.dstar(p["lam"], p["mu2"], p["mu1"]),
                axis="d1",
                lam=p["lam"],
                dstar_real=model.dstar_continuous(p["lam"], p["mu2"], p["mu1"]),
            )
        )
    else:
        rows.append(
            _row(
                "cf",
                "lambda_c",
                model.lambda_critical(p["d1"], p["mu2"], p["mu1"]),
                axis="lam",
                d1=p["d1"],
            )
        )
    return rows


def _bif_pattern(rows: Rows, d1_max: int, ds: int) -> Verdict:
    """One stable (queueing) fixed point below ``ds``; from ``ds`` on three, two of them stable
    (queueing and no-queueing) and one saddle — at every d1 = 1..d1_max."""
    bad = []
    for d1 in range(1, d1_max + 1):
        fps = select(rows, quantity="u", axis="d1", d1=d1)
        if not fps:
            raise EmptyComparisonError(f"affinity-bifurcation: no fixed points at d1 = {d1}")
        stable = sorted(r["kind"] for r in fps if r["stable"])
        want = ["no-queueing", "queueing"] if d1 >= ds else ["queueing"]
        if stable != want or len(fps) != (3 if d1 >= ds else 1):
            bad.append(d1)
    return _exact(
        not bad,
        f"{d1_max - len(bad)}/{d1_max} values of d1 agree",
        f"threshold at d1 = {ds}",
        f"disagreeing d1: {bad}" if bad else "",
    )


def _two_stable(rows: Rows, d1: int) -> Verdict:
    fps = select(rows, quantity="u", axis="d1", d1=d1)
    if not fps:
        raise EmptyComparisonError(f"affinity-bifurcation: no fixed points at d1 = {d1}")
    n = sum(bool(r["stable"]) for r in fps)
    return _exact(
        n == 2,
        f"d1 = {d1}: {n} stable of {len(fps)}",
        2,
        "; ".join(
            f"{r['kind']} u = {r['value']:.4f}, max Re λ {r['max_real_eig']:.3g}" for r in fps
        ),
    )


def _bif_check(rows: Rows, cfg: Mapping[str, Any]) -> list[Claim]:
    ds = select(rows, quantity="dstar")[0]["value"]
    d1_max = cfg["d1_max"]
    shifted = [_bif_pattern(rows, d1_max, s) for s in (ds - 1, ds + 1)]
    claims = [
        make_claim(
            f"λ = {cfg['lam']}: one fixed point (queueing, stable) for d1 < d1* = {ds}; three "
            "for d1 ≥ d1* — two locally stable (queueing and no-queueing) and one saddle",
            _bif_pattern(rows, d1_max, ds),
            control=(
                f"the same pattern with the threshold moved to {ds - 1} or {ds + 1} must fail",
                Verdict(
                    any(v.passed for v in shifted),
                    " / ".join(str(v.measured) for v in shifted),
                    f"threshold at {ds - 1} or {ds + 1}",
                    "exact",
                ),
            ),
        )
    ]
    d1 = cfg["d1"]
    claims.append(
        make_claim(
            f"λ = {cfg['lam']}, d1 = {d1}: two locally stable fixed points (Jacobian eigenvalues "
            "with negative real parts)",
            _two_stable(rows, d1),
            control=("the same count at d1 = 3 < d1* must fail", _two_stable(rows, 3)),
        )
    )
    return claims


def _bif_plot(rows: Rows, cfg: Mapping[str, Any]):
    fig, axes = new_figure(1, 2, width=8.5, height=3.4)
    for ax, axis, xkey, xlabel in (
        (axes[0][0], "d1", "d1", "primary selection size d1"),
        (axes[0][1], "lam", "lam", "arrival rate λ (per server)"),
    ):
        for c, kind in enumerate(("no-queueing", "queueing")):
            for stable, mfc in ((True, color(c)), (False, "white")):
                pts = [
                    r
                    for r in select(rows, quantity="u", axis=axis, kind=kind)
                    if r["stable"] == stable
                ]
                ax.plot(
                    [r[xkey] for r in pts],
                    [r["value"] for r in pts],
                    marker="o",
                    ls="none",
                    color=color(c),
                    mfc=mfc,
                    ms=3,
                    label=f"{kind} ({'stable' if stable else 'unstable'})",
                )
        ax.set(xlabel=xlabel, ylabel="idle fraction u at the fixed point")
    axes[0][0].set_title(f"Fixed points vs d1, λ = {cfg['lam']}")
    axes[0][1].set_title(f"Fixed points vs λ, d1 = {cfg['d1']}")
    axes[0][0].legend(loc="upper left")
    return fig


register(
    Artifact(
        id="affinity-bifurcation",
        slug=SLUG,
        kind="figure",
        title="Bifurcation of the fixed points in d1 and λ",
        caption=(
            "Idle fraction u of every fixed point of the fluid limit (μ2 = 0.5): filled = "
            "locally stable, open = unstable (Jacobian; on the face u = 0 for the queueing "
            "point). Left: vs d1 at λ = 0.8 (saddle-node at d1*); right: vs λ at d1 = 25."
        ),
        methods=("MF",),
        points=_bif_points,
        compute=_bif_compute,
        check=_bif_check,
        plot=_bif_plot,
        validate=_traj_validate("affinity-bifurcation"),
    )
)

# ---------------------------------------------------------------------------------------
# affinity-queue-length and affinity-waiting (Figs. 6–7): one computation, two views

PERF_KEYS = (
    "cm_wait_jobs",
    "cm_wait_var",
    "cm_wait_time",
    "cm_wait_time_I",
    "cm_wait_time_II",
    "jsq_wait_jobs",
    "jsq_wait_var",
    "jsq_wait_time",
    "ra_wait_jobs",
    "ra_wait_var",
    "ra_wait_time",
)


def _perf_points(cfg: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    mu1, mu2 = _mu(cfg)
    base = {"mu1": mu1, "mu2": mu2, "d1": cfg["d1"]}
    pts = {"cf": base | {"kind": "cf", "lam": list(cfg["lam_grid"])}}
    for lam in cfg["lam_sim"]:
        params = base | {
            "kind": "sim",
            "lam": lam,
            "N": cfg["N"],
            "horizon": cfg["horizon"],
            "warmup": cfg["warmup"],
            "batches": cfg["batches"],
        }
        add_point(pts, f"sim-lam{num(lam)}", params, "lam_sim")
    return pts


def _cm_batch_measures(sim: Any) -> dict[str, np.ndarray]:
    """Per-batch waiting measures of a CM simulation (Little's law per type)."""
    L = sim.batch_x.shape[1]
    i = np.arange(L)[:, None]
    j = np.arange(2)[None, :]
    w = np.maximum(i + j - 1, 0)  # waiting jobs at a server with (i, j)
    bx = sim.batch_x
    mean = (bx * w).sum(axis=(1, 2))
    var = (bx * w**2).sum(axis=(1, 2)) - mean**2
    wait_i = (bx * np.maximum(i - 1, 0) * np.ones((1, 2))).sum(axis=(1, 2))
    wait_ii = bx[:, 1:, 1].sum(axis=1)
    scale = sim.N * sim.batch_length
    rate_i = sim.arrivals_type1 / scale
    rate_ii = sim.arrivals_type2 / scale
    return {
        "cm_wait_jobs": mean,
        "cm_wait_var": var,
        "cm_wait_time": mean / (rate_i + rate_ii),
        "cm_wait_time_I": wait_i / rate_i,
        "cm_wait_time_II": np.where(rate_ii > 0, wait_ii / np.maximum(rate_ii, 1e-300), 0.0),
    }


def _perf_compute(p: dict[str, Any], seed: np.random.SeedSequence) -> Rows:
    from lbrepro.models import supermarket

    mu1, mu2, d1 = p["mu1"], p["mu2"], p["d1"]
    rows: Rows = []
    if p["kind"] == "cf":
        for lam in p["lam"]:
            perf = model.performance(lam, mu2, mu1, d1)
            for key in PERF_KEYS:
                policy, quantity = key.split("_", 1)
                rows.append(_row("cf", quantity, perf[key], policy=policy, lam=lam, d1=d1))
        return rows
    lam, N = p["lam"], p["N"]
    cm_seed, jsq_seed = seed.spawn(2)
    # CM at N and, for the N → ∞ extrapolation of the O(1/N) offset, at N/2 (same horizon).
    half_seed = seed.spawn(1)[0]
    for n_srv, s in ((N, cm_seed), (N // 2, half_seed)):
        sim = simulate_affinity(
            lam,
            mu2,
            mu1,
            d1,
            n_srv,
            horizon=p["horizon"],
            warmup=p["warmup"],
            batches=p["batches"],
            start="empty",
            seed=s,
        )
        for key, vals in _cm_batch_measures(sim).items():
            est = batch_means_ci(vals)
            rows.append(
                _row(
                    "sim",
                    key.split("_", 1)[1],
                    est.mean,
                    ci_low=est.low,
                    ci_high=est.high,
                    policy="cm",
                    lam=lam,
                    d1=d1,
                    N=n_srv,
                    seed=seed.entropy,
                    batches=p["batches"],
                    events=sim.events,
                )
            )
    jsq = supermarket.simulate(
        lam=lam / mu1,
        d=d1,
        N=N,
        horizon=p["horizon"] * mu1,
        warmup=p["warmup"] * mu1,
        seed=jsq_seed,
        batches=p["batches"],
    )
    u = np.asarray(jsq.u_all)
    k = np.arange(u.size)
    w = u[2:]  # P(waiting ≥ m) = P(n ≥ m + 1)
    m = k[1:-1]
    mean = float(w.sum())
    var = float(((2 * m - 1) * w).sum()) - mean**2
    # mean waiting jobs = E[jobs] − P(busy): its CI from the mean-jobs CI (same batches).
    half = (jsq.mean_jobs_ci[1] - jsq.mean_jobs_ci[0]) / 2
    for quantity, value, ci in (
        ("wait_jobs", mean, (mean - half, mean + half)),
        ("wait_var", var, (None, None)),
        ("wait_time", mean / lam, ((mean - half) / lam, (mean + half) / lam)),
    ):
        rows.append(
            _row(
                "sim" if ci[0] is not None else "path",  # no batch-means CI for the variance
                quantity,
                value,
                ci_low=ci[0],
                ci_high=ci[1],
                policy="jsq",
                lam=lam,
                d1=d1,
                N=N,
                seed=seed.entropy,
                batches=p["batches"],
            )
        )
    return _contract(rows, seed, N)


def _cf(rows: Rows, policy: str, quantity: str) -> dict[float, float]:
    return {
        r["lam"]: r["value"] for r in select(rows, method="cf", policy=policy, quantity=quantity)
    }


def _sim_claims(rows: Rows, cfg: Mapping[str, Any], quantities: tuple[str, ...]) -> list[Claim]:
    """CM simulation against the fixed-point formulas (N = ∞ values), per quantity.

    Two claims per quantity, both judged with ``within`` on the simulations' CIs and no
    absolute tolerance: (1) the N → ∞ value extrapolated from N/2 and N (x_N = x_∞ + c/N) lies
    within its CI of the formula; (2) a labelled finite-N finding: the N-server estimate itself,
    with no allowance. Control of both: the formula at the neighbouring load λ − LAM_SHIFT.
    """
    mu1, mu2 = _mu(cfg)
    sims = select(rows, method="sim", policy="cm")
    if not sims:
        raise EmptyComparisonError("affinity: no CM simulation rows")
    Ns = sorted({r["N"] for r in sims})
    N, Nh = Ns[-1], Ns[0]
    lams = sorted({r["lam"] for r in sims})
    claims: list[Claim] = []
    for q in quantities:
        by = {(r["N"], r["lam"]): estimate(r) for r in sims if r["quantity"] == q}
        ref = [model.performance(lam, mu2, mu1, cfg["d1"])["cm_" + q] for lam in lams]
        ref_c = [model.performance(lam - LAM_SHIFT, mu2, mu1, cfg["d1"])["cm_" + q] for lam in lams]
        labels = [f"λ={lam:g}" for lam in lams]
        ctrl = f"the formula at the neighbouring loads λ − {LAM_SHIFT:g} must be rejected"
        offsets = "; ".join(
            f"λ={lam:g}: N={n} {by[(n, lam)].mean - r:+.4g} (±{by[(n, lam)].half_width:.2g})"
            for lam, r in zip(lams, ref, strict=True)
            for n in (Nh, N)
        )
        if Nh < N:
            ext = [_extrapolate(by[(N, lam)], by[(Nh, lam)]) for lam in lams]
            claims.append(
                make_claim(
                    f"CM({cfg['d1']}) {q}: the simulation extrapolated to N → ∞ from N = {Nh} "
                    f"and {N} (O(1/N) offset) lies within its CI of the fixed-point formula at "
                    "every simulated λ",
                    within(ext, ref, labels=labels),
                    control=(ctrl, within(ext, ref_c, labels=labels)),
                    source="lbrepro",
                    details=f"offsets sim − formula: {offsets}",
                )
            )
        est = [by[(N, lam)] for lam in lams]
        claims.append(
            make_claim(
                f"Finite-N (N = {N}): CM({cfg['d1']}) simulated {q} within its CI of the "
                "fixed-point formula (an N = ∞ value) at every simulated λ, no allowance",
                within(est, ref, labels=labels),
                control=(ctrl, within(est, ref_c, labels=labels)),
                source="lbrepro",
                details="at finite N some type-I jobs queue at servers without a type-II job: "
                "an O(1/N) offset the claim above extrapolates away",
            )
        )
    return claims


def _over_lams(rows: Rows, cfg: Mapping[str, Any]) -> list[float]:
    """The formula grid's loads in (μ2, μ1), where CM sits at its queueing fixed point."""
    mu1, mu2 = _mu(cfg)
    grid = {r["lam"] for r in select(rows, method="cf", policy="cm")}
    lams = [lam for lam in sorted(grid) if mu2 < lam < mu1]
    if not lams:
        raise EmptyComparisonError("affinity: no λ of the formula grid lies in (μ2, μ1)")
    return lams


def _slightly_above(a: dict, b: dict, ra: dict, lams: list[float], bound: float) -> Verdict:
    """A above B at every λ, by at most ``bound`` of RA's excess over B: (A − B)/(RA − B)."""
    above = [lam for lam in lams if a[lam] > b[lam]]
    rel = {lam: (a[lam] - b[lam]) / (ra[lam] - b[lam]) for lam in lams}
    return Verdict(
        passed=len(above) == len(lams) and max(rel.values()) <= bound,
        measured=f"{len(above)}/{len(lams)} above; relative excess "
        f"{min(rel.values()):.3f}–{max(rel.values()):.3f}",
        expected=f"above at every λ, (A − B)/(RA − B) ≤ {bound:g}",
        tolerance=bound,
        details="; ".join(
            f"λ={lam:g}: {a[lam]:.3f} vs {b[lam]:.3f} (RA {ra[lam]:.3f})"
            for lam in lams[:: max(1, len(lams) // 5)]
        ),
    )


def _ratio_in(ratio: dict, lo: float, hi: float, what: str) -> Verdict:
    """A ratio lies in [lo, hi] at every λ."""
    bad = [lam for lam, v in ratio.items() if not lo <= v <= hi]
    return Verdict(
        passed=not bad,
        measured=f"{what} {min(ratio.values()):.3f}–{max(ratio.values()):.3f}",
        expected=f"in [{lo:g}, {hi:g}] at every λ",
        tolerance=f"[{lo:g}, {hi:g}]",
        details=(f"outside at λ = {[round(v, 3) for v in bad]}; " if bad else "")
        + "; ".join(
            f"λ={lam:g}: {v:.3f}" for lam, v in list(ratio.items())[:: max(1, len(ratio) // 6)]
        ),
    )


def _ql_check(rows: Rows, cfg: Mapping[str, Any]) -> list[Claim]:
    cm, jsq, ra = (_cf(rows, p, "wait_jobs") for p in ("cm", "jsq", "ra"))
    cmv, jsqv = _cf(rows, "cm", "wait_var"), _cf(rows, "jsq", "wait_var")
    lams = _over_lams(rows, cfg)
    d = cfg["d1"]
    var_ratio = {lam: jsqv[lam] / cmv[lam] for lam in lams}
    mean_ratio = {lam: jsq[lam] / cm[lam] for lam in lams}
    in_band = [lam for lam, v in var_ratio.items() if 1.7 <= v <= 2.3]
    total = {lam: _total_jobs_var_ratio(lam, cfg) for lam in lams}
    total_band = [lam for lam, v in total.items() if 1.7 <= v <= 2.3]
    claims = [
        make_claim(
            f"CM({d}) has slightly more waiting jobs per server than JSQ({d}) (fixed-point "
            "formulas, every λ ∈ (μ2, 1) of the grid; our yardstick for 'slightly': the excess "
            "is at most a fifth of RA's excess over JSQ)",
            _slightly_above(cm, jsq, ra, lams, 0.2),
            control=(
                f"the same test with CM and JSQ({d}) swapped must fail",
                _slightly_above(jsq, cm, ra, lams, 0.2),
            ),
        ),
        make_claim(
            f"The variance of the waiting jobs per server under JSQ({d}) is almost twice that "
            f"under CM({d}) (every λ ∈ (μ2, 1) of the grid; our yardstick for 'almost twice': "
            "a ratio in [1.7, 2.3])",
            _ratio_in(var_ratio, 1.7, 2.3, "Var_JSQ / Var_CM"),
            control=(
                "the same yardstick on the ratio of the means JSQ/CM (the paper: close) must fail",
                _ratio_in(mean_ratio, 1.7, 2.3, "mean_JSQ / mean_CM"),
            ),
            details=f"ratio in the band at {len(in_band)}/{len(lams)} λ; counting the job in "
            f"service too (total jobs per server) it is {min(total.values()):.3f}–"
            f"{max(total.values()):.3f}, in the band at {len(total_band)}/{len(lams)} λ "
            f"({[round(v, 3) for v in total_band]})",
        ),
    ]
    return claims + _sim_claims(rows, cfg, ("wait_jobs", "wait_var"))


def _total_jobs_var_ratio(lam: float, cfg: Mapping[str, Any]) -> float:
    """Var(total jobs per server) under JSQ(d1) over CM(d1), at the fixed points.

    CM (λ > μ2): a type-II job everywhere plus i type-I jobs, so Var(total) = Var(i) = the
    waiting-jobs variance. JSQ: n with P(n ≥ k) = ρ^{(d^k−1)/(d−1)}.
    """
    mu1, mu2 = _mu(cfg)
    d = cfg["d1"]
    rho = lam / mu1
    k = np.arange(1, 200)
    tail = model.supermarket_tail(rho, d, 200)[1:]  # P(n ≥ k), k ≥ 1
    mean = tail.sum()
    var_jsq = float(((2 * k - 1) * tail).sum() - mean**2)
    return var_jsq / model.performance(lam, mu2, mu1, d)["cm_wait_var"]


def _between(w: dict, lo: dict, hi: dict, lams: list[float]) -> Verdict:
    """lo < w < hi at every λ."""
    ok = [lam for lam in lams if lo[lam] < w[lam] < hi[lam]]
    return Verdict(
        passed=len(ok) == len(lams),
        measured=f"{len(ok)}/{len(lams)} λ",
        expected="W_JSQ < W < W_RA at every λ",
        tolerance="strict (formulas)",
        details="; ".join(
            f"λ={lam:g}: W {w[lam]:.3f}, JSQ {lo[lam]:.3f}, RA {hi[lam]:.3f}"
            for lam in lams[:: max(1, len(lams) // 5)]
        ),
    )


def _wt_check(rows: Rows, cfg: Mapping[str, Any]) -> list[Claim]:
    wi, wii = _cf(rows, "cm", "wait_time_I"), _cf(rows, "cm", "wait_time_II")
    w_all = _cf(rows, "cm", "wait_time")
    wj, wr = _cf(rows, "jsq", "wait_time"), _cf(rows, "ra", "wait_time")
    lams = _over_lams(rows, cfg)
    d = cfg["d1"]
    ratio = {lam: wi[lam] / wj[lam] for lam in lams}
    ratio_all = {lam: w_all[lam] / wj[lam] for lam in lams}
    claims = [
        make_claim(
            f"Type-II jobs wait fairly long (longer than under JSQ({d})) but less than under RA, "
            "at every λ ∈ (μ2, 1) of the grid",
            _between(wii, wj, wr, lams),
            control=(
                "the same test on the type-I waiting time must fail",
                _between(wi, wj, wr, lams),
            ),
        ),
        make_claim(
            f"Type-I jobs wait significantly less than under JSQ({d}) at every λ ∈ (μ2, 1) of "
            "the grid (our yardstick for 'significantly': at most half, W_I / W_JSQ ≤ 0.5)",
            _ratio_in(ratio, 0.0, 0.5, "W_I / W_JSQ"),
            control=(
                "the same yardstick on CM's all-jobs waiting time must fail",
                _ratio_in(ratio_all, 0.0, 0.5, "W_CM / W_JSQ"),
            ),
            details=f"at most half at {sum(v <= 0.5 for v in ratio.values())}/{len(lams)} λ",
        ),
    ]
    return claims + _sim_claims(rows, cfg, ("wait_time_I", "wait_time_II", "wait_time"))


def _perf_plot(rows: Rows, cfg: Mapping[str, Any], groups: tuple, ymax: float):
    """One panel per (title, ylabel, curves); curves = (policy, quantity, label) with fixed-point
    lines and simulation markers (95% CI). Linear axes capped at ``ymax`` (RA diverges)."""
    d = cfg["d1"]
    fig, axes = new_figure(1, len(groups), width=4.4 * len(groups), height=3.6)
    for ax, (title, ylabel, curves) in zip(axes[0], groups, strict=True):
        for c, (policy, quantity, label) in enumerate(curves):
            cf = sorted(
                select(rows, method="cf", policy=policy, quantity=quantity), key=lambda r: r["lam"]
            )
            ax.plot(
                [r["lam"] for r in cf],
                [r["value"] for r in cf],
                color=color(c),
                label=label.format(d=d),
            )
            sim = [
                r
                for r in select(rows, method="sim", policy=policy, quantity=quantity)
                if r.get("ci_low") is not None and r["N"] == cfg["N"]
            ]
            if sim:
                ax.errorbar(
                    [r["lam"] for r in sim],
                    [r["value"] for r in sim],
                    yerr=[
                        [r["value"] - r["ci_low"] for r in sim],
                        [r["ci_high"] - r["value"] for r in sim],
                    ],
                    color=color(c),
                    capsize=2,
                    **METHOD_STYLE["sim"] | {"label": None},
                )
        ax.plot([], [], color="k", **METHOD_STYLE["sim"] | {"label": f"simulation, N = {cfg['N']}"})
        ax.set(
            xlabel="arrival rate λ per server (μ1 = 1)",
            ylabel=ylabel,
            title=title,
            ylim=(0, ymax),
        )
        ax.legend(loc="upper left")
    return fig


def _perf_summary(quantities: tuple[str, ...]):
    def summary(rows: Rows) -> Rows:
        out = []
        for r in sorted(select(rows, method="sim"), key=lambda r: (r["lam"], r["policy"])):
            if r["quantity"] not in quantities:
                continue
            if r["N"] != max(q["N"] for q in rows if q["method"] == "sim"):
                continue  # the N/2 run only feeds the N → ∞ extrapolation
            cf = select(rows, method="cf", policy=r["policy"], quantity=r["quantity"], lam=r["lam"])
            ci = f" [{r['ci_low']:.4f}, {r['ci_high']:.4f}]" if r.get("ci_low") is not None else ""
            out.append(
                {
                    "λ": r["lam"],
                    "policy": r["policy"],
                    "quantity": r["quantity"],
                    f"simulation N={r['N']} (95% CI)": f"{r['value']:.4f}{ci}",
                    "fixed point": f"{cf[0]['value']:.4f}" if cf else "—",
                }
            )
        return out

    return summary


PERF_NOTE = (
    "CM(d1) measures come from the queueing fixed point for λ > μ2 and the no-queueing point "
    "(nobody waits) for λ ≤ μ2. 'Waiting jobs' exclude the job in service; a preempted type-II "
    "job counts as waiting. The variance is that of the per-server number of waiting jobs in "
    "the fixed-point distribution (the paper does not define it)."
)

register(
    Artifact(
        id="affinity-queue-length",
        slug=SLUG,
        kind="figure",
        title="Fig. 6: waiting jobs per server, CM(3) vs JSQ(3) vs RA",
        caption=(
            "Mean number of waiting jobs per server (excluding the job in service) against λ, "
            "μ2 = 0.5, d1 = 3: CM(3) at its fixed point, JSQ(3) (supermarket) and RA (M/M/1); "
            "markers: simulation with N = 1000 servers (95% CI)."
        ),
        methods=("CF", "SIM"),
        points=_perf_points,
        compute=_perf_compute,
        check=_ql_check,
        plot=lambda rows, cfg: _perf_plot(
            rows,
            cfg,
            (
                (
                    "Mean waiting jobs",
                    "mean waiting jobs per server",
                    (
                        ("cm", "wait_jobs", "CM({d})"),
                        ("jsq", "wait_jobs", "JSQ({d})"),
                        ("ra", "wait_jobs", "RA"),
                    ),
                ),
                (
                    "Variance of waiting jobs",
                    "variance of waiting jobs per server",
                    (
                        ("cm", "wait_var", "CM({d})"),
                        ("jsq", "wait_var", "JSQ({d})"),
                        ("ra", "wait_var", "RA"),
                    ),
                ),
            ),
            3.0,
        ),
        summary=_perf_summary(("wait_jobs", "wait_var")),
        validate=_perf_validate("affinity-queue-length"),
        reconstructions=(ASSIGNMENT_NOTE, PERF_NOTE, EXTRAPOLATION_NOTE),
    )
)

register(
    Artifact(
        id="affinity-waiting",
        slug=SLUG,
        kind="figure",
        title="Fig. 7: mean waiting time by job type",
        caption=(
            "Mean waiting time of type-I, type-II and all jobs under CM(3) (Little's law at the "
            "fixed point: type I arrive at λ − μ2 x01, type II at μ2 x01) against JSQ(3) and RA, "
            "μ2 = 0.5; markers: simulation with N = 1000 (95% CI)."
        ),
        methods=("CF", "SIM"),
        points=_perf_points,
        compute=_perf_compute,
        check=_wt_check,
        plot=lambda rows, cfg: _perf_plot(
            rows,
            cfg,
            (
                (
                    "Waiting time by job type",
                    "mean waiting time (mean type-I service times)",
                    (
                        ("cm", "wait_time_I", "CM({d}) type I"),
                        ("cm", "wait_time_II", "CM({d}) type II"),
                        ("cm", "wait_time", "CM({d}) all jobs"),
                        ("jsq", "wait_time", "JSQ({d})"),
                        ("ra", "wait_time", "RA"),
                    ),
                ),
            ),
            10.0,
        ),
        summary=_perf_summary(("wait_time_I", "wait_time_II", "wait_time")),
        validate=_perf_validate("affinity-waiting"),
        reconstructions=(ASSIGNMENT_NOTE, PERF_NOTE, EXTRAPOLATION_NOTE),
    )
)

# ---------------------------------------------------------------------------------------
# affinity-tunneling


def _tun_points(cfg: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    mu1, mu2 = _mu(cfg)
    keep = ("lam", "d1", "horizon", "dt_snap", "low", "high", "t_trace")
    pts: dict[str, dict[str, Any]] = {}
    for N in cfg["N"]:
        add_point(pts, f"N{N}", {k: cfg[k] for k in keep} | {"N": N, "mu1": mu1, "mu2": mu2}, "N")
    for N in cfg.get("N_exit", []):
        params = {k: cfg[k] for k in keep} | {
            "N": N,
            "mu1": mu1,
            "mu2": mu2,
            "exit": True,
            "reps": cfg["exit_reps"],
            "exit_cap": cfg["exit_cap"],
        }
        add_point(pts, f"exit-N{N}", params, "N_exit")
    for N in cfg.get("N_exit_queueing", []):
        params = {k: cfg[k] for k in keep} | {
            "N": N,
            "mu1": mu1,
            "mu2": mu2,
            "qexit": True,
            "reps": cfg["exit_reps"],
            "exit_cap": cfg["exit_cap_queueing"],
        }
        add_point(pts, f"qexit-N{N}", params, "N_exit_queueing")
    return pts


def _exit_compute(p: dict[str, Any], seed: np.random.SeedSequence) -> Rows:
    """First exit times from the no-queueing state, starting empty (censored at the cap)."""
    N = p["N"]
    times = []
    for child in seed.spawn(p["reps"]):
        sim = simulate_affinity(
            p["lam"],
            p["mu2"],
            p["mu1"],
            p["d1"],
            N,
            horizon=p["exit_cap"],
            batches=1,
            start="empty",
            seed=child,
            stop_type2_fraction=p["high"],
        )
        times.append(sim.stopped_at if sim.stopped_at == sim.stopped_at else math.inf)
    return _capped_mean_row(times, p["exit_cap"], "exit_time", N, seed.entropy)


def _capped_mean_row(times: list[float], cap: float, quantity: str, N: int, seed: Any) -> Rows:
    """The mean of min(T, cap) over replications with its Student-t 95% CI: a lower bound of
    E[T] when runs are censored (the censored count is in the row)."""
    from scipy.stats import t as student

    capped = np.minimum(np.asarray(times, dtype=float), cap)
    n = len(capped)
    mean = float(capped.mean())
    half = (
        float(student.ppf(0.975, n - 1) * capped.std(ddof=1) / math.sqrt(n)) if n >= 2 else math.nan
    )
    return [
        _row(
            "sim",
            quantity,
            mean,
            ci_low=mean - half,
            ci_high=mean + half,
            N=N,
            seed=seed,
            batches=n,
            censored=int(sum(not math.isfinite(t) for t in times)),
            reps=n,
            cap=cap,
        )
    ]


def _qexit_compute(p: dict[str, Any], seed: np.random.SeedSequence) -> Rows:
    """First exit times from the queueing state, starting with a type-II job at every server:
    the first snapshot at which the fraction of servers with a type-II job is ≤ ``low``
    (censored at the cap; the simulator cannot stop on a downward crossing, so every run lasts
    the cap)."""
    snap = np.arange(0.0, p["exit_cap"], p["dt_snap"])
    times = []
    for child in seed.spawn(p["reps"]):
        sim = simulate_affinity(
            p["lam"],
            p["mu2"],
            p["mu1"],
            p["d1"],
            p["N"],
            horizon=p["exit_cap"],
            batches=1,
            start="type2",
            seed=child,
            snap_times=snap,
        )
        below = np.nonzero(sim.snap_type2 <= p["low"])[0]
        times.append(float(snap[below[0]]) if below.size else math.inf)
    return _capped_mean_row(times, p["exit_cap"], "queueing_exit_time", p["N"], seed.entropy)


def _tun_compute(p: dict[str, Any], seed: np.random.SeedSequence) -> Rows:
    if p.get("exit"):
        return _exit_compute(p, seed)
    if p.get("qexit"):
        return _qexit_compute(p, seed)
    N = p["N"]
    snap = np.arange(0.0, p["horizon"], p["dt_snap"])
    sim = simulate_affinity(
        p["lam"],
        p["mu2"],
        p["mu1"],
        p["d1"],
        N,
        horizon=p["horizon"],
        batches=1,
        start="empty",
        seed=seed,
        snap_times=snap,
    )
    h = sim.snap_type2
    low, high, switches = residence_times(snap, h, p["low"], p["high"])
    rows: Rows = []
    for name, res in (("no-queueing", low), ("queueing", high)):
        n = len(res)
        mean = float(np.mean(res)) if n else math.nan
        # residences are independent (strong Markov at the switch): normal CI of the mean
        half = 1.96 * float(np.std(res, ddof=1)) / math.sqrt(n) if n >= 2 else math.nan
        rows.append(
            _row(
                "sim" if n >= 2 else "path",  # one residence gives no CI
                "residence",
                mean,
                ci_low=mean - half,
                ci_high=mean + half,
                N=N,
                seed=seed.entropy,
                state=name,
                count=n,
                switches=switches,
                horizon=p["horizon"],
            )
        )
    rows.append(_row("path", "time_fraction_queueing", float(np.mean(h >= 0.5)), N=N))
    every = max(1, round(1.0 / p["dt_snap"]))
    for t, v in zip(snap[::every], h[::every], strict=True):
        if t <= p["t_trace"]:
            rows.append(_row("path", "type2_fraction", float(v), t=float(t), N=N))
    return _contract(rows, seed, N)


#: The paper's residence-time claim is about large N with d1 fixed: it is judged only where
#: d1/N ≤ SMALL_D1_RATIO (N ≥ 125 at d1 = 25).
SMALL_D1_RATIO = 0.2


def _grows(rows: Rows) -> tuple[Verdict, Verdict]:
    """trend(N, estimates, increasing) and its control, the same test on N in reversed order.

    Fewer than two usable N is a failed claim (and a failed control), stated, never a pass.
    """
    xs = [r["N"] for r in rows]
    est = [estimate(r) for r in rows]
    try:
        return trend(xs, est, "increasing"), trend([-x for x in xs], est, "increasing")
    except EmptyComparisonError as err:
        v = Verdict(False, f"{len(rows)} usable N", "≥ 2 N with a CI", "n/a", f"failed: {err}")
        return v, v


def _fluid_switches(cfg: Mapping[str, Any]) -> int:
    """Switches of the N = ∞ system (the fluid limit from empty): the tunneling control."""
    mu1, mu2 = _mu(cfg)
    K = model.K_DEFAULT
    t_end = min(float(cfg["horizon"]), 500.0)
    times, tr = model.fluid_trajectory(
        _start_state("empty", K), cfg["lam"], mu2, mu1, cfg["d1"], t_end=t_end, n_record=1001, K=K
    )
    _, _, switches = residence_times(times, tr[:, :, 1].sum(axis=1), cfg["low"], cfg["high"])
    return int(switches)


def _tun_check(rows: Rows, cfg: Mapping[str, Any]) -> list[Claim]:
    d1 = cfg["d1"]
    small = f"d1/N ≤ {SMALL_D1_RATIO:g}"
    hyst = (
        f"λ = {cfg['lam']}, d1 = {d1}; hysteresis on the fraction of servers with a type-II job: "
        f"≤ {cfg['low']} no-queueing, ≥ {cfg['high']} queueing"
    )
    claims = []
    # The same trend test for the first exits from each quasi-stable state.
    for quantity, state, start, show_cap in (
        ("exit_time", "no-queueing", "empty", False),
        ("queueing_exit_time", "queueing", "a type-II job everywhere", True),
    ):
        runs = sorted(
            (r for r in select(rows, quantity=quantity) if d1 / r["N"] <= SMALL_D1_RATIO),
            key=lambda r: r["N"],
        )
        v, c = _grows(runs)
        censored = ", ".join(
            f"N={r['N']}: {r['censored']}/{r['reps']}"
            + (f" (cap {r['cap']:g})" if show_cap else "")
            for r in runs
        )
        claims.append(
            make_claim(
                f"The residence time near the {state} state increases with N ({small}): the mean "
                f"first exit time from {start}, capped, increases with N",
                v,
                control=("the same trend test on N in reversed order must fail", c),
                details=hyst + "; censored at the cap: " + censored,
            )
        )
    for state in ("queueing", "no-queueing"):
        res = sorted(
            (r for r in select(rows, quantity="residence", state=state) if r["method"] == "sim"),
            key=lambda r: r["N"],
        )
        v, c = _grows(res)
        ratios = ", ".join(f"{d1 / r['N']:.2g}" for r in res)
        claims.append(
            make_claim(
                f"Finite-N (d1/N = {ratios}, not small): the mean residence near the {state} "
                "state, over the complete stays of one long path per N, increases with N",
                v,
                control=("the same trend test on N in reversed order must fail", c),
                source="lbrepro",
                details=hyst + "; stays: " + ", ".join(f"N={r['N']}: {r['count']}" for r in res),
            )
        )
    sw = select(rows, quantity="residence", state="queueing")
    if not sw:
        raise EmptyComparisonError("affinity-tunneling: no residence rows")
    smallest = min(sw, key=lambda r: r["N"])

    def switching(n: int, who: str) -> Verdict:
        return _exact(n >= 2, f"{n} switches ({who})", "≥ 2 switches")

    claims.append(
        make_claim(
            f"Finite-N tunneling: the smallest system (N = {smallest['N']}) switches between "
            "both quasi-stable states",
            switching(int(smallest["switches"]), f"N = {smallest['N']}"),
            control=(
                "the fluid limit (N = ∞) from empty must not switch",
                switching(_fluid_switches(cfg), "fluid limit"),
            ),
            source="lbrepro",
        )
    )
    return claims


def _tun_plot(rows: Rows, cfg: Mapping[str, Any]):
    fig, axes = new_figure(1, 2, width=9.0, height=3.4)
    ax_tr, ax_res = axes[0]
    for c, N in enumerate(cfg["N"]):
        tr = select(rows, quantity="type2_fraction", N=N)
        if N in cfg.get("trace_N", []) and tr:
            ax_tr.plot(
                [r["t"] for r in tr],
                [r["value"] for r in tr],
                color=color(c),
                lw=0.6,
                label=f"N = {N}",
            )
    ax_tr.set(
        xlabel="time (mean type-I service times)",
        ylabel="servers with a type-II job",
        title="Tunneling between the quasi-stable states",
    )
    ax_tr.legend(loc="lower right")
    for c, state in enumerate(("queueing", "no-queueing")):
        res = sorted(
            (r for r in select(rows, quantity="residence", state=state) if r["count"] >= 2),
            key=lambda r: r["N"],
        )
        ax_res.errorbar(
            [r["N"] for r in res],
            [r["value"] for r in res],
            yerr=[
                [r["value"] - r["ci_low"] for r in res],
                [r["ci_high"] - r["value"] for r in res],
            ],
            color=color(c),
            marker="o",
            capsize=2,
            label=state,
        )
    ex = sorted(select(rows, quantity="exit_time"), key=lambda r: r["N"])
    if ex:
        ax_res.errorbar(
            [r["N"] for r in ex],
            [r["value"] for r in ex],
            yerr=[[r["value"] - r["ci_low"] for r in ex], [r["ci_high"] - r["value"] for r in ex]],
            color=color(2),
            marker="s",
            capsize=2,
            label="no-queueing: first exit from empty",
        )
    ax_res.set(
        xlabel="N (servers)",
        ylabel="mean residence time",
        yscale="log",
        xscale="log",
        title=f"Residence times, λ = {cfg['lam']}, d1 = {cfg['d1']}",
    )
    ax_res.legend(loc="upper left")
    return fig


def _ci_text(r: Mapping[str, Any]) -> str:
    return f"{_fmt(r['value'], '.4g')} [{_fmt(r['ci_low'], '.4g')}, {_fmt(r['ci_high'], '.4g')}]"


def _tun_summary(rows: Rows) -> Rows:
    out: Rows = [
        {
            "N": r["N"],
            "state": r["state"],
            "complete stays": r["count"],
            "mean residence (95% CI)": _ci_text(r),
        }
        for r in sorted(select(rows, quantity="residence"), key=lambda r: (r["N"], r["state"]))
    ]
    out += [
        {
            "N": r["N"],
            "state": "no-queueing (first exit from empty)",
            "complete stays": f"{r['reps'] - r['censored']}/{r['reps']}",
            "mean residence (95% CI)": _ci_text(r),
        }
        for r in sorted(select(rows, quantity="exit_time"), key=lambda r: r["N"])
    ]
    out += [
        {
            "N": r["N"],
            "state": "queueing (first exit from a type-II job everywhere)",
            "complete stays": f"{r['reps'] - r['censored']}/{r['reps']} (cap {r['cap']:g})",
            "mean residence (95% CI)": _ci_text(r),
        }
        for r in sorted(select(rows, quantity="queueing_exit_time"), key=lambda r: r["N"])
    ]
    return out


register(
    Artifact(
        id="affinity-tunneling",
        slug=SLUG,
        kind="figure",
        title="Tunneling: finite-N switching between the two quasi-stable states",
        caption=(
            "Left: fraction of servers holding a type-II job along simulated paths (λ = 0.8, "
            "μ2 = 0.5, d1 = 25): near 1 in the queueing state, near 0 in the no-queueing state. "
            "Right: mean residence time in each state against N (hysteresis thresholds; "
            "95% CI over complete stays) and the mean first exit time from empty at larger N "
            "(95% CI over replications)."
        ),
        methods=("SIM",),
        points=_tun_points,
        compute=_tun_compute,
        check=_tun_check,
        plot=_tun_plot,
        summary=_tun_summary,
        validate=_traj_validate("affinity-tunneling"),
        reconstructions=(ASSIGNMENT_NOTE, PRIMARY_NOTE, TUNNELING_NOTE),
    )
)
