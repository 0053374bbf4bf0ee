"""Argument checks of the general-service model: (service law, λ, d), each failure a
ConfigError naming the argument, and unstable loads refused before any computation."""

from __future__ import annotations

import math
import numbers
from typing import Any

from lbrepro.core.args import sampled_servers
from lbrepro.core.errors import ConfigError, UnstableError
from lbrepro.models import service
from lbrepro.models.service import ServiceDist

__all__ = ["sampled_servers", "service_dist", "validated"]


def service_dist(dist: Any) -> ServiceDist:
    """A ServiceDist from itself or a spec string; an infinite mean is refused."""
    if isinstance(dist, str):
        return service.parse(dist)
    if not isinstance(dist, ServiceDist):
        raise ConfigError("dist", f"must be a ServiceDist or a spec like 'erlang:2', got {dist!r}")
    if not math.isfinite(dist.mean):
        raise ConfigError("dist", "the service time has an infinite mean")
    return dist


def validated(dist: Any, lam: Any, d: Any) -> tuple[ServiceDist, float, int]:
    """Check (dist, λ, d); unstable loads ρ = λE[X] ≥ 1 are refused."""
    dist = service_dist(dist)
    if isinstance(lam, bool) or not isinstance(lam, numbers.Real) or not lam > 0:
        raise ConfigError("lam", f"arrival rate per server must be a number > 0, got {lam!r}")
    if not math.isfinite(lam):
        raise ConfigError("lam", f"must be finite, got {lam!r}")
    d = sampled_servers(d)
    rho = float(lam) * dist.mean
    if rho >= 1:
        raise UnstableError(f"load rho = lam * E[X] = {rho:g} >= 1: the model is unstable")
    return dist, float(lam), d
