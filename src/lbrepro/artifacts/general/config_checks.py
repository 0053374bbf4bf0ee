"""Config checks and point ids shared by the general-service artifacts.

Each check raises a :class:`ConfigError` naming the offending key inside the artifact's section
(``rho[1]``, ``warmup``): the pipeline prefixes the artifact id, so a bad config stops before
any job with one clear line (``general-sojourn.rho[1]: …``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lbrepro.core.args import check_warmup
from lbrepro.core.errors import ConfigError
from lbrepro.models import service


def point_id_fragment(spec: str) -> str:
    """A point-id fragment from a distribution spec ('lomax:1.5' → 'lomax1.5'), path-safe."""
    return spec.replace(":", "").replace(",", "-").replace(";", "-").replace("+", "")


def check_dists(key: str, specs: Any) -> list[service.ServiceDist]:
    """Parse every distribution spec, naming ``key[i]`` (``dists[i]``) of the first invalid one."""
    out = []
    for i, spec in enumerate(specs):
        try:
            out.append(service.parse(spec))
        except ConfigError as err:
            raise ConfigError(f"{key}[{i}]", str(err)) from None
    return out


def check_loads(key: str, rhos: Any) -> None:
    """Refuse a load outside (0, 1): the model is unstable at ρ ≥ 1."""
    for i, rho in enumerate(rhos):
        if not 0 < rho < 1:
            raise ConfigError(f"{key}[{i}]", f"load rho = {rho} must lie in (0, 1) (stability)")


def check_simulation(cfg: Mapping[str, Any]) -> None:
    """Refuse a warm-up as long as the horizon or an empty system, before any job starts."""
    check_warmup("warmup", cfg["warmup"], cfg["horizon"])
    if cfg["N"] < 1:
        raise ConfigError("N", "must be >= 1")


def check_load_sweep(cfg: Mapping[str, Any]) -> None:
    """Checks of a (distributions × loads) simulation sweep: loads, distributions, run length."""
    check_loads("rho", cfg["rho"])
    check_dists("dists", cfg["dists"])
    check_simulation(cfg)
