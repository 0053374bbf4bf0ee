"""One figure style for the whole project, and saving as PNG + SVG.

Every artifact's plot function builds its figure with :func:`new_figure` and marks methods
with :data:`METHOD_STYLE`, so that closed form, mean field, refined mean field and simulation
look the same in every figure of the report.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure

RC: dict[str, Any] = {
    "figure.dpi": 110,
    "savefig.dpi": 150,
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "legend.fontsize": 8,
    "legend.frameon": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "lines.linewidth": 1.4,
    "lines.markersize": 4,
    "svg.fonttype": "none",
    "svg.hashsalt": "lbrepro",  # deterministic SVG ids: same data, same file
}

# How each method tag (cf, mf, rmf, sim, published, mdp) is drawn.
METHOD_STYLE: dict[str, dict[str, Any]] = {
    "cf": {"linestyle": "-", "marker": "", "label": "closed form"},
    "mf": {"linestyle": "--", "marker": "", "label": "mean field"},
    "rmf": {"linestyle": ":", "marker": "", "label": "refined mean field"},
    "sim": {"linestyle": "none", "marker": "o", "label": "simulation (95% CI)"},
    "published": {"linestyle": "none", "marker": "x", "label": "published"},
    "mdp": {"linestyle": "-", "marker": "s", "label": "exact MDP"},
}

PALETTE = ["#1b6ca8", "#d1495b", "#2e933c", "#edae49", "#6a4c93", "#00798c", "#8d6a9f"]


def _pyplot() -> Any:
    """matplotlib.pyplot, headless, imported on first use: only plot jobs pay its ~0.7 s."""
    import matplotlib

    matplotlib.use("Agg")  # headless: figures are files, never windows
    import matplotlib.pyplot as plt

    return plt


def new_figure(nrows: int = 1, ncols: int = 1, *, width: float = 7.0, height: float = 3.0):
    """A figure and its axes array (always 2-D) in the project style."""
    plt = _pyplot()
    with plt.rc_context(RC):
        fig, axes = plt.subplots(
            nrows, ncols, figsize=(width, height), squeeze=False, layout="constrained"
        )
    fig.set_dpi(RC["figure.dpi"])
    return fig, axes


def color(i: int) -> str:
    """The i-th colour of the shared palette (cycled)."""
    return PALETTE[i % len(PALETTE)]


def save_figure(fig: Figure, png: str | Path, svg: str | Path) -> None:
    """Write ``fig`` as PNG and SVG (parents created) and close it."""
    plt = _pyplot()
    with plt.rc_context(RC):
        for path in (png, svg):
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            fig.savefig(path, metadata={"Date": None} if str(path).endswith(".svg") else None)
    plt.close(fig)
