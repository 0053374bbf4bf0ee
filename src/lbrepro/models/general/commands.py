"""What ``lbrepro solve|simulate general`` runs: the simulation wrapper, the JSON summaries
(the exact mean field first, the published form beneath) and the model's CLI declaration."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from lbrepro.core.errors import ConfigError
from lbrepro.models.general.arguments import validated
from lbrepro.models.general.phase_type import TruncationError, cavity_fixed_point
from lbrepro.models.general.published import (
    mg1_mean_sojourn,
    published_sojourn,
    published_tail,
    theta,
    theta_closed_form,
)
from lbrepro.models.spec import RUN_PARAMS, Conserved, Model, Param
from lbrepro.sim.general_service import GeneralSimResult, simulate_general

__all__ = ["MODEL", "simulate", "simulate_summary", "solve"]


def simulate(
    dist: Any,
    lam: float,
    d: int,
    *,
    N: int,
    horizon: float,
    warmup: float,
    seed: np.random.SeedSequence | int,
    batches: int = 20,
) -> GeneralSimResult:
    """Simulate N FCFS servers with general service under JSQ(d) (thin call into the kernel)."""
    dist, lam, d = validated(dist, lam, d)
    return simulate_general(
        dist=dist, lam=lam, d=d, N=N, horizon=horizon, warmup=warmup, seed=seed, batches=batches
    )


def solve(dist: Any = "exp", *, lam: Any, d: Any) -> dict[str, Any]:
    """JSON-ready summary for ``lbrepro solve general``: the truth first.

    The top level holds the exact mean field (the cavity queue, for phase-type service; the
    M/G/1 mean sojourn at d = 1 for any service), so a script reading ``.mean_sojourn`` gets
    the right number; where no exact value exists it is ``null``. The paper's closed form,
    known to be wrong beyond exponential service, sits under ``published``.
    """
    dist, lam, d = validated(dist, lam, d)
    pi = published_tail(dist, lam, d, tol=1e-16)
    out: dict[str, Any] = {
        "model": "general",
        "params": {"dist": dist.as_dict(), "lam": lam, "d": d, "rho": lam * dist.mean},
        "method": "none",
        "u": None,
        "mean_jobs": None,
        "mean_sojourn": None,
    }
    if dist.is_phase_type:
        try:
            mf = cavity_fixed_point(dist, lam, d)
        except TruncationError as err:
            # The command line has no K to raise (was: "…; increase K", a step no flag takes).
            raise ConfigError(
                "lam",
                f"the exact mean field's queue-length tail is too heavy here (mass "
                f"{err.mass:.2e} beyond {err.K} levels at load {lam * dist.mean:g}): lower "
                "--lam, or give --dist a law of smaller variance",
            ) from None
        out |= {
            "method": "exact mean field (cavity queue)",
            "u": [float(v) for v in mf.u if v > 1e-16] or [1.0],
            "mean_jobs": mf.mean_jobs,
            "mean_sojourn": mf.mean_sojourn(lam),
            "K": mf.K,
            "residual": mf.residual,
        }
    elif d == 1:
        out |= {
            "method": "M/G/1 (Pollaczek–Khinchine)",
            "mean_sojourn": mg1_mean_sojourn(dist, lam),
        }
    if d == 1:
        out["mg1_mean_sojourn"] = mg1_mean_sojourn(dist, lam)
    out["published"] = {
        "method": "published closed form (Li & Lui); exact for exponential service only",
        "theta": theta(dist, d),
        "theta_closed_form": theta_closed_form(dist, d),
        "u": [float(v) for v in pi],
        "mean_jobs": float(np.sum(pi[1:])),
        "mean_sojourn": published_sojourn(dist, lam, d),
    }
    return out


def simulate_summary(
    dist: str = "exp",
    *,
    lam: float,
    d: int,
    N: int,
    horizon: float,
    warmup: float | None = None,
    seed: int = 1,
    batches: int = 20,
    replace: bool = True,
    start: str = "empty",
) -> dict[str, Any]:
    """JSON-ready result for ``lbrepro simulate general`` (warm-up default: 10% of horizon).

    The kernel samples the d servers with replacement and starts empty, so ``replace=False``
    and any other start are refused by name rather than ignored.
    """
    if not replace:
        raise ConfigError("replace", "the general-service kernel samples with replacement only")
    if start != "empty":
        raise ConfigError("start", "the general-service simulation starts empty")
    w = 0.1 * horizon if warmup is None else warmup
    r = simulate(dist, lam, d, N=N, horizon=horizon, warmup=w, seed=seed, batches=batches)
    return {
        "model": "general",
        "params": {"dist": dist, "lam": lam, "d": d},
        "u": r.u.tolist(),
        "mean_jobs": r.mean_jobs,
        "mean_sojourn": r.mean_sojourn,
        "ci": {
            "u": [[float(a), float(b)] for a, b in zip(r.u_ci_low, r.u_ci_high, strict=True)],
            "mean_jobs": list(r.mean_jobs_ci),
            "mean_sojourn": list(r.mean_sojourn_ci),
        },
        "N": r.N,
        "seed": seed,
        "horizon": r.horizon,
        "warmup_used": r.warmup_used,
        "batches": r.batches,
        # False: no interval of the run is honest (an infinite-variance service, or too few
        # relaxation times); the command line then shows none.
        "converged": r.converged,
        "events": r.events_total,
        "events_per_second": r.events_per_second,
    }


def conservation(result: Mapping[str, Any]) -> Conserved | None:
    """u₁ = ρ = λ (every service law has mean 1): the busy fraction of a stationary run."""
    try:
        lam = float(result["params"]["lam"])
        low, high = result["ci"]["u"][1]
        return Conserved("u_1 = ρ", float(result["u"][1]), float(low), float(high), lam)
    except (KeyError, TypeError, IndexError, ValueError):
        return None


MODEL = Model(
    name="general",
    help="JSQ(d) with FCFS servers and a general service-time law (Li & Lui)",
    params=(
        Param(
            "dist",
            "text",
            "service distribution, scaled to mean 1: exp, erlang:m, hyperexp:scv, "
            "coxian:r1,..,c1,.., det, weibull:k, lomax:alpha, lognormal:sigma",
        ),
        Param("lam", "real", "arrival rate per server (= ρ)"),
        Param("d", "integer", "servers sampled per job", minimum=1, maximum="servers"),
        *RUN_PARAMS,
        Param(
            "start",
            "choice",
            "initial state: empty (the only start of the general-service kernel)",
            choices=("empty",),
            commands=("simulate",),
        ),
    ),
    solve=solve,
    simulate=simulate_summary,
    conservation=conservation,
)
