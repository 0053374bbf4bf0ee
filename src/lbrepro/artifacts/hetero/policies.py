"""The routing policies the figures compare: labels, one style each, and the model's arguments."""

from __future__ import annotations

from typing import Any

from lbrepro.models import hetero as model
from lbrepro.plotting.style import color

POLICY_LABELS = {
    "scheme1": "Scheme 1",
    "scheme2": "Scheme 2",
    "sqd": "SQ(d), whole system",
    "typed": "type-based SQ(d), p ∝ γC",
    "typed-tuned": "type-based SQ(d), tuned at λ̂",
    "random": "random ∝ capacity",
}


# One colour and line style per policy in every figure (Scheme 1 and 2 overlap at some loads).
POLICY_STYLE: dict[str, dict[str, Any]] = {
    "scheme1": {"color": color(0), "ls": "-"},
    "scheme2": {"color": color(1), "ls": "--"},
    "sqd": {"color": color(2), "ls": "-."},
    "typed": {"color": color(3), "ls": ":"},
    "typed-tuned": {"color": color(4), "ls": (0, (5, 1, 1, 1))},
    "random": {"color": color(6), "ls": (0, (1, 2))},
}


def policy_args(system: model.System, policy: str, lam_hat_fraction: float) -> dict[str, Any]:
    """Keyword arguments of the model for one policy label (typed-tuned → a tuned split)."""
    if policy == "sqd":
        return {"policy": "sqd", "d_pool": int(system.d[0])}
    if policy == "typed":
        return {"policy": "typed", "split": model.proportional_split(system)}
    if policy == "typed-tuned":
        lam_hat = lam_hat_fraction * system.total_capacity
        return {"policy": "typed", "split": model.typed_split(system, lam_hat, int(system.d[0]))}
    return {"policy": policy}
