"""Semantic config checks shared by the affinity artifacts (beyond the JSON schema): loads
below μ1, μ2 < μ1, 1 ≤ d1 ≤ N, hysteresis thresholds in order; errors name the key."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from lbrepro.core.errors import ConfigError
from lbrepro.models import affinity as model


def service_rates(cfg: Mapping[str, Any]) -> tuple[float, float]:
    """(μ1, μ2) of a config section, with the paper's defaults 1 and 0.5."""
    return float(cfg.get("mu1", 1.0)), float(cfg.get("mu2", 0.5))


def check_loads_and_d1(cfg: Mapping[str, Any], name: str, lam_key: str = "lam") -> None:
    """Semantic checks: μ2 < μ1, every λ < μ1, 1 ≤ d1 ≤ N; errors name the config key.

    ``lam_key`` is the config key the loads in ``cfg["lam"]`` came from (``lam_sim[0]``, not
    the index into a concatenated list).
    """
    mu1, mu2 = service_rates(cfg)
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


def validator_with_hysteresis(name: str) -> Callable[[Mapping[str, Any]], None]:
    """The validate function of an artifact section: loads, d1 and, when present, low < high."""

    def validate(cfg: Mapping[str, Any]) -> None:
        """Check the section's loads and d1, and that the hysteresis thresholds are in order."""
        check_loads_and_d1(cfg, name)
        if "low" in cfg and cfg["low"] >= cfg["high"]:
            # Equal or crossed thresholds collapse the hysteresis: noise would count as switches.
            raise ConfigError(
                f"{name}.low", f"{cfg['low']} must be below high = {cfg['high']} (hysteresis)"
            )

    return validate
