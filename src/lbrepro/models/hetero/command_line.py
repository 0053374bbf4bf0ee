"""The command line of the model: ``lbrepro solve|simulate hetero`` (declared as MODEL).

Server types are given as comma-separated lists (``--gamma 0.5,0.5 --C 1,2 --d 2,2``), split
by the parameters' ``parse``; errors of the system name the flag (``--C``, not ``capacity``).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from lbrepro.core.args import float_arg
from lbrepro.core.errors import ConfigError, LbreproError
from lbrepro.models.hetero.meanfield import refined, uniqueness_probe
from lbrepro.models.hetero.simulation import simulate
from lbrepro.models.hetero.splits import typed_split
from lbrepro.models.hetero.stability import sqd_stability_closed_form
from lbrepro.models.hetero.system import System, check_lam, check_policy
from lbrepro.models.spec import RUN_PARAMS, Model, Param, Summary, occupancy_conservation

#: Seconds of wall time each trajectory of ``lbrepro solve hetero``'s uniqueness probe may
#: take (a well-conditioned one takes well under a second).
PROBE_SECONDS = 20.0


def parse_numbers(text: str) -> tuple[float, ...]:
    """A comma-separated list of numbers (``"0.5,0.5"``), one per server type."""
    try:
        return tuple(float(v.strip()) for v in text.split(","))
    except ValueError:
        raise ValueError(f"must be comma-separated numbers, got {text!r}") from None


def parse_integers(text: str) -> tuple[int, ...]:
    """A comma-separated list of integers (``"2,2"``): the per-type sample sizes."""
    try:
        return tuple(int(v.strip()) for v in text.split(","))
    except ValueError:
        raise ValueError(f"must be comma-separated numbers, got {text!r}") from None


def _policy_from(policy: Any, scheme: Any) -> str:
    """The policy name from ``--policy`` and its shorthand ``--scheme 1|2`` (default Scheme 1)."""
    if scheme is None:
        return "scheme1" if policy is None else check_policy(policy)
    if str(scheme) not in ("1", "2"):
        raise ConfigError("scheme", f"must be 1 or 2, got {scheme!r}")
    named = f"scheme{scheme}"
    if policy is not None and policy != named:
        raise ConfigError("scheme", f"scheme={scheme} contradicts policy={policy!r}")
    return named


def _cli_system(gamma: Any, C: Any, d: Any, mu: float) -> System:
    """The system from the command-line arguments; errors name the flag (``C``)."""
    try:
        return System(gamma, C, d, mu)
    except ConfigError as err:
        if err.key != "capacity":
            raise
        raise ConfigError("C", err.message) from None


def _cli_policy(
    system: System,
    policy: Any,
    scheme: Any,
    d_pool: Any,
    split: Any,
    lam_hat: Any,
) -> tuple[str, Any, Any]:
    """Policy name, split and pool size from the command-line arguments."""
    policy = _policy_from(policy, scheme)
    if lam_hat is not None:
        if policy != "typed":
            raise ConfigError("lam_hat", "only policy 'typed' uses an assumed load")
        if split is not None:
            raise ConfigError("lam_hat", "give either split or lam_hat, not both")
        split = typed_split(system, lam_hat)
    return policy, split, d_pool


def simulate_summary(
    lam: float,
    gamma: Any,
    C: Any,
    d: Any,
    mu: float = 1.0,
    *,
    N: int,
    horizon: float,
    warmup: float | None = None,
    seed: int = 1,
    policy: str | None = None,
    scheme: Any = None,
    d_pool: int | None = None,
    split: Any = None,
    lam_hat: float | None = None,
    batches: int = 20,
    start: str = "fixed_point",
    replace: bool = True,
    progress: bool = False,
) -> Summary:
    """JSON-ready result of ``lbrepro simulate hetero``: the simulation beside the MF and RMF.

    The warm-up defaults to a tenth of the horizon; the kernel samples with replacement only
    (the mean-field convention), so ``replace=False`` is refused.
    """
    if not replace:
        raise LbreproError("replace: the heterogeneous kernel samples with replacement only")
    if warmup is None:
        warmup = 0.1 * float_arg("horizon", horizon)
    system = _cli_system(gamma, C, d, mu)
    lam = check_lam(lam)
    policy, split, d_pool = _cli_policy(system, policy, scheme, d_pool, split, lam_hat)
    sim = simulate(
        system,
        lam,
        policy,
        N=N,
        horizon=horizon,
        warmup=warmup,
        seed=seed,
        split=split,
        d_pool=d_pool,
        batches=batches,
        start=start,
        progress=progress,
    )
    rr = refined(system, lam, policy, split=split, d_pool=d_pool)
    params: dict[str, Any] = {"lam": lam, **system.params(), "policy": policy, "start": start}
    if split is not None:
        params["split"] = [float(v) for v in split]
    if rr.mean_field.d_pool is not None:
        params["d_pool"] = rr.mean_field.d_pool
    return Summary(
        {
            "model": "hetero",
            "params": params,
            "mean_field": {
                "mean_sojourn": rr.mean_field.mean_sojourn,
                "mean_sojourn_refined": rr.mean_sojourn_at(N),
                "mean_jobs_per_type": [float(v) for v in rr.mean_field.mean_jobs_per_type],
            },
        }
        | sim.to_dict()
    )


def solve(
    lam: float,
    gamma: Any,
    C: Any,
    d: Any,
    mu: float = 1.0,
    *,
    policy: str | None = None,
    scheme: Any = None,
    d_pool: int | None = None,
    split: Any = None,
    lam_hat: float | None = None,
) -> Summary:
    """JSON-ready summary for ``lbrepro solve hetero``: MF fixed point(s), RMF, stability.

    ``gamma``, ``C``, ``d`` (and ``split``) are sequences (the command line splits its
    comma-separated values with :func:`parse_numbers`/:func:`parse_integers`).
    ``scheme=1|2`` is shorthand for ``policy="scheme1"|"scheme2"`` (the default is Scheme 1).
    ``lam_hat`` selects, for ``policy="typed"``, the split optimised for that assumed load
    (:func:`typed_split`) instead of ``split``/the proportional one.
    """
    system = _cli_system(gamma, C, d, mu)
    lam = check_lam(lam)
    policy, split, d_pool = _cli_policy(system, policy, scheme, d_pool, split, lam_hat)
    rr = refined(system, lam, policy, split=split, d_pool=d_pool)
    mf = rr.mean_field
    probe = uniqueness_probe(system, lam, policy, split=split, d_pool=d_pool, budget=PROBE_SECONDS)
    if probe.unsettled:
        warnings.warn(
            f"uniqueness probe incomplete: the trajectories from {', '.join(probe.unsettled)} "
            f"did not settle within {PROBE_SECONDS:g} s each (a stiff system); "
            "fixed_point_spread compares the others only",
            RuntimeWarning,
            stacklevel=2,
        )
    cap = system.total_capacity
    stability: dict[str, Any] = {"capacity": cap, "load": lam / cap}
    if policy == "sqd":
        stability["sqd_lambda_star"] = sqd_stability_closed_form(system, mf.d_pool)
        stability["sqd_lambda_star_note"] = (
            "reconstruction (docs/models.md §A), see stability_boundary"
        )
    if mf.split is not None:
        rho = lam * mf.split / (system.mu * np.array(system.gamma) * np.array(system.capacity))
        stability["type_loads"] = [float(v) for v in rho]
    params: dict[str, Any] = {"lam": lam, **system.params(), "policy": policy}
    if mf.split is not None:
        params["split"] = [float(v) for v in mf.split]
    if mf.d_pool is not None:
        params["d_pool"] = mf.d_pool
    if lam_hat is not None:
        params["lam_hat"] = float(lam_hat)
    return Summary(
        {
            "model": "hetero",
            "params": params,
            "method": "mf+rmf",
            "u": [[float(v) for v in u] for u in mf.u],
            "mean_jobs": mf.mean_jobs,
            "mean_jobs_per_type": [float(v) for v in mf.mean_jobs_per_type],
            "mean_sojourn": mf.mean_sojourn,
            "fixed_points": [
                {
                    "start": name,
                    "u": [[float(v) for v in u] for u in eq],
                    "residual": res,
                }
                for name, eq, res in zip(
                    probe.starts, probe.equilibria, probe.residuals, strict=True
                )
            ],
            "fixed_point_spread": probe.max_distance,
            "unsettled_starts": list(probe.unsettled),
            "truncation": {"K": mf.K, "tail": mf.tail, "residual": mf.residual},
            "refined": {
                "V": [[float(v) for v in V] for V in rr.V],
                "u_coefficient_note": "E[u^(j)_n]_N ≈ u^(j)_n + V^(j)_n/N, N = total servers",
                "mean_jobs_coefficient": rr.mean_jobs_coefficient,
                "mean_sojourn_coefficient": rr.mean_sojourn_coefficient,
            },
            "stability": stability,
        }
    )


MODEL = Model(
    name="hetero",
    help="heterogeneous clusters of processor-sharing servers (Schemes 1/2, SQ(d), splits)",
    params=(
        Param("lam", "real", "arrival rate per server (capacity is mu*sum(gamma*C))"),
        Param(
            "gamma",
            "text",
            "fractions of servers per type, comma-separated (sum 1)",
            parse=parse_numbers,
        ),
        Param("C", "text", "capacity of each type, comma-separated, distinct", parse=parse_numbers),
        Param("d", "text", "servers sampled per type, comma-separated", parse=parse_integers),
        Param("mu", "real", "service rate per unit capacity"),
        Param(
            "policy",
            "text",
            "scheme1 (default), scheme2, sqd (whole system), typed (static split, then SQ(d_j)), "
            "random (proportional to capacity)",
        ),
        Param("scheme", "text", "1 or 2: shorthand for --policy scheme1|scheme2"),
        Param(
            "d_pool",
            "integer",
            "sqd: servers sampled from the whole pool",
            minimum=1,
            maximum="servers",
        ),
        Param(
            "split",
            "text",
            "typed: routing probabilities per type, comma-separated",
            parse=parse_numbers,
        ),
        Param("lam_hat", "real", "typed: use the split optimised for this assumed load"),
        *RUN_PARAMS,
        Param(
            "start",
            "choice",
            "initial state: the mean-field fixed point sampled for N servers, or empty",
            choices=("fixed_point", "empty"),
            commands=("simulate",),
        ),
    ),
    solve=solve,
    simulate=simulate_summary,
    conservation=occupancy_conservation,
)
