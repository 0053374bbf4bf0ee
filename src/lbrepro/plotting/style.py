"""One figure style for the whole project, and saving as PNG, SVG and PDF.

Every artifact's plot function builds its figure with :func:`new_figure` and marks methods
with :data:`METHOD_STYLE`, so that closed form, mean field, refined mean field and simulation
look the same in every figure of the report; simulated series and legends are drawn by
:mod:`lbrepro.plotting.intervals`.

The report shows a figure at most :data:`REPORT_WIDTH_PX` CSS pixels wide, scaled down from its
natural ``width · savefig.dpi`` pixels: :func:`new_figure` caps the width at
:data:`MAX_WIDTH_IN`, so that the smallest text (``legend.fontsize``) stays at least
:data:`MIN_TEXT_PX` pixels high at that width (tests/test_figures.py checks every figure).
"""

from __future__ import annotations

import functools
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

#: The widest a figure is shown in the report (CSS px): main's 78rem less its padding.
REPORT_WIDTH_PX = 1100
#: The smallest text height (px) a figure may show at the report's width (body text is 16).
MIN_TEXT_PX = 10.0
#: The widest figure (inches): 1500 px natural, shown at 1100 px, i.e. scaled by 0.73.
MAX_WIDTH_IN = 10.0


def text_px(size_pt: float, width_in: float) -> float:
    """Height in CSS px of text of ``size_pt`` points in a figure ``width_in`` wide, as shown."""
    natural = width_in * RC["savefig.dpi"]
    return size_pt / 72 * RC["savefig.dpi"] * min(1.0, REPORT_WIDTH_PX / natural)


# How each method tag (cf, mf, rmf, sim, published, mdp) is drawn.
METHOD_STYLE: dict[str, dict[str, Any]] = {
    "cf": {"linestyle": "-", "marker": "", "label": "closed form"},
    "mf": {"linestyle": "--", "marker": "", "label": "mean field"},
    "rmf": {"linestyle": ":", "marker": "", "label": "refined mean field"},
    # hollow, as lbrepro.plotting.intervals.simulated draws every simulated point
    "sim": {
        "linestyle": "none",
        "marker": "o",
        "markerfacecolor": "none",
        "label": "simulation (95% CI)",
    },
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


@functools.cache
def _fitting_figure_class() -> type:
    """The Figure subclass :func:`new_figure` makes: before each draw it wraps any axis label or
    title longer than its panel (see :func:`fit_text`), so no text runs off the canvas."""
    from matplotlib.figure import Figure

    class FittingFigure(Figure):
        lbrepro_layout_frozen = False  # set by save_figure once the first format is drawn

        def draw(self, renderer: Any) -> None:
            if not self.lbrepro_layout_frozen:
                fit_text(self, renderer)
            super().draw(renderer)

    FittingFigure.__qualname__ = "FittingFigure"  # picklable, as a figure of this module
    globals()["FittingFigure"] = FittingFigure
    return FittingFigure


def _wrap(text: str, chars: int) -> str:
    """``text`` in lines of at most about ``chars`` characters, broken only at spaces outside
    $…$ (mathtext is never split)."""
    words, inside, cur = [], False, ""
    for ch in text:
        if ch == "$":
            inside = not inside
        if ch == " " and not inside:
            words.append(cur)
            cur = ""
        else:
            cur += ch
    words.append(cur)
    lines: list[str] = []
    for word in words:
        if lines and len(lines[-1]) + 1 + len(word) <= chars:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return "\n".join(lines)


def fit_text(fig: Any, renderer: Any = None) -> None:
    """Wrap each axis label and title of ``fig`` that is longer than its panel (a y label than
    the panel's height, an x label or title than its width) onto as many lines as it needs.

    Constrained layout makes room for text beside the panels but never shortens it: a label
    longer than its panel ran off the canvas. Called by the figure before every draw; the
    layout is run first so that panel sizes are final, and again by the draw with the wrapped
    text.
    """
    if renderer is None:
        renderer = fig.canvas.get_renderer()
    engine = fig.get_layout_engine()
    for _ in range(2):  # constrained layout settles in two passes from a fresh figure
        if engine is not None:
            engine.execute(fig)
        if not _wrap_long_text(fig, renderer):
            return
    if engine is not None:  # once more: the draw lays out the wrapped text from here
        engine.execute(fig)


def _wrap_long_text(fig: Any, renderer: Any) -> bool:
    """One pass of :func:`fit_text` at the panels' present size: whether it wrapped a text."""
    wrapped = False
    for ax in fig.axes:
        if not ax.get_visible() or not ax.axison:
            continue
        box = ax.get_position(original=False).transformed(fig.transFigure)
        for text, room in (
            (ax.yaxis.label, box.height),
            (ax.xaxis.label, box.width),
            (ax.title, box.width),
        ):
            if not text.get_text().strip() or not text.get_visible():
                continue
            if _length(text, renderer, ax) <= room:
                continue
            content = " ".join(text.get_text().split("\n"))
            for lines in range(2, 7):
                chars = -(-len(content) // lines)  # the shortest lines that make no more lines
                while _wrap(content, chars).count("\n") >= lines:
                    chars += 1
                if _wrap(content, chars) == text.get_text():
                    continue
                text.set_text(_wrap(content, chars))
                wrapped = True
                if _length(text, renderer, ax) <= room:
                    break
    return wrapped


def _length(text: Any, renderer: Any, ax: Any) -> float:
    """How long ``text`` runs along its direction (a y label upwards), in pixels."""
    extent = text.get_window_extent(renderer)
    return extent.height if text is ax.yaxis.label else extent.width


def derived(what: str, *artists: Any) -> None:
    """Mark ``artists`` as a series computed in the plot (``what``: from which table columns,
    e.g. "|sim − mean field| of mean_jobs", or "guide ∝ 1/N") rather than a table column
    plotted as is: tests/test_figure_faithful.py maps every other series to the table column
    its axis names. A :class:`~lbrepro.plotting.intervals.SimSeries` marks its points."""
    for artist in artists:
        parts = [artist.points, artist.bare] if hasattr(artist, "points") else [artist]
        for part in parts:
            if part is not None:
                part.lbrepro_derived = what


def new_figure(nrows: int = 1, ncols: int = 1, *, width: float = 7.0, height: float = 3.0):
    """A figure and its axes array (always 2-D) in the project style, at most MAX_WIDTH_IN wide.

    Its axis labels and titles are wrapped before each draw when longer than their panel
    (:func:`fit_text`).
    """
    width = min(width, MAX_WIDTH_IN)
    plt = _pyplot()
    with plt.rc_context(RC):
        fig, axes = plt.subplots(
            nrows,
            ncols,
            figsize=(width, height),
            squeeze=False,
            layout="constrained",
            FigureClass=_fitting_figure_class(),
        )
    fig.set_dpi(RC["figure.dpi"])
    return fig, axes


def color(i: int) -> str:
    """The i-th colour of the shared palette (cycled)."""
    return PALETTE[i % len(PALETTE)]


def save_figure(
    fig: Figure, png: str | Path, svg: str | Path, pdf: str | Path | None = None
) -> None:
    """Write ``fig`` as PNG, SVG and (when given) PDF, parents created, and close it.

    SVG and PDF carry no date, so the same figure gives the same bytes run after run.
    The layout (constrained, labels wrapped to fit) is computed by the first format's draw and
    then frozen: each later format draws the same positions instead of laying out again, which
    was most of a plot job's time.
    """
    plt = _pyplot()
    metadata = {".svg": {"Date": None}, ".pdf": {"CreationDate": None, "ModDate": None}}
    with plt.rc_context(RC):
        for path in (png, svg, pdf):
            if path is None:
                continue
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            fig.savefig(path, metadata=metadata.get(Path(path).suffix))
            fig.set_layout_engine("none")
            fig.lbrepro_layout_frozen = True
    plt.close(fig)
