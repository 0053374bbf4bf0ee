"""Semantic config checks shared by the affinity artifacts (beyond the JSON schema): loads
below μ1, μ2 < μ1, 1 ≤ d1 ≤ N, hysteresis thresholds in order. Errors name the key inside
the artifact's section (``lam_sim[0]``); the pipeline prefixes the artifact id."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lbrepro.core.errors import ConfigError
from lbrepro.models import affinity as model

#: The paper's service rates, used where a section sets none: type I at μ1 = 1 (the time
#: unit), type II at μ2 = 0.5.
MU1 = 1.0
MU2 = 0.5


def service_rates(cfg: Mapping[str, Any]) -> tuple[float, float]:
    """(μ1, μ2) of a config section, with the paper's defaults MU1 and MU2."""
    return float(cfg.get("mu1", MU1)), float(cfg.get("mu2", MU2))


def check_loads_and_d1(cfg: Mapping[str, Any], lam_key: str = "lam") -> None:
    """Semantic checks: μ2 < μ1, every λ < μ1, 1 ≤ d1 ≤ N; errors name the key in the section.

    ``lam_key`` is the config key the loads in ``cfg["lam"]`` came from (``lam_sim[0]``, not
    the index into a concatenated list).
    """
    mu1, mu2 = service_rates(cfg)
    lams = cfg.get("lam", [])
    is_list = isinstance(lams, list | tuple)
    lams = lams if is_list else [lams]
    for i, lam in enumerate(lams):
        key = f"{lam_key}[{i}]" if is_list else lam_key
        try:
            model.check_params(lam, mu2, mu1)
        except ConfigError as err:
            raise ConfigError(key if err.key == "lam" else err.key, err.message) from None
        except ValueError as err:  # UnstableError: "lam: load lam = … >= mu1 = …"
            raise ConfigError(key, str(err).removeprefix("lam: ")) from None
    ds = cfg.get("d1", [])
    ds = ds if isinstance(ds, list | tuple) else [ds]
    Ns = cfg.get("N", [])
    Ns = Ns if isinstance(Ns, list | tuple) else [Ns]
    for d in ds:
        if d < 1:
            raise ConfigError("d1", f"must be >= 1, got {d}")
        for N in Ns:
            if d > N:
                raise ConfigError("d1", f"d1 = {d} exceeds N = {N}")


def validate_with_hysteresis(cfg: Mapping[str, Any]) -> None:
    """The validate function of a section with loads, d1 and, when present, hysteresis
    thresholds: the loads and d1 (``check_loads_and_d1``), and low < high."""
    check_loads_and_d1(cfg)
    if "low" in cfg and cfg["low"] >= cfg["high"]:
        # Equal or crossed thresholds collapse the hysteresis: noise would count as switches.
        raise ConfigError("low", f"{cfg['low']} must be below high = {cfg['high']} (hysteresis)")
