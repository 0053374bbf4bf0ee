"""Simulated series with their 95% intervals, and legends that stay off the data.

Every simulated series of every figure is drawn by :func:`simulated`: its points and, for each
point with a finite interval, that interval — error bars with caps wider than the (hollow)
markers, so that an interval shorter than a marker still shows, or a shaded band for a dense
series. A point without a finite interval (a run too short to give one) is drawn as an open
marker of its own and gets no invented bar; so is a point whose row says ``converged = False``
(its run ended with correlated batch means or too few relaxation times: the fallback interval
it carries is not a 95% CI, see docs/methods.md "Confidence intervals"), whatever that interval.
:func:`legend` then explains the open marker.

What is drawn is tagged with matplotlib group ids, which tests read from the figure object
(tests/test_figures.py) and which name the SVG groups:

* ``lbrepro-sim-<n>``: the points that have an interval (a ``Line2D``);
* ``lbrepro-ci-<n>-bars`` / ``lbrepro-ci-<n>-caps`` / ``lbrepro-ci-<n>-band``: their interval
  (a ``LineCollection`` of bars, the cap markers, or a ``PolyCollection``);
* ``lbrepro-bare-<n>``: the points without an interval (open markers): no finite interval, or
  a run not converged.

``<n>`` counts the simulated series of one figure, so the ids are the same run after run.

On a log axis an interval whose lower end is not positive (u₄₀ = 0.0061 ± 0.008) is drawn down
to the axis' clip (by default a tenth of its point) and ends in a downward caret there: it runs
off the scale, it does not vanish. The same holds for ends beyond an explicit ``clip``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lbrepro.core.rows import not_converged

SIM_GID = "lbrepro-sim"
CI_GID = "lbrepro-ci"
BARE_GID = "lbrepro-bare"

#: Drawing of the points and bars (points in pt): bars with caps wider than the marker.
MARKER_SIZE = 4.0
CAP_SIZE = 3.0
BAR_WIDTH = 1.0
BAND_ALPHA = 0.22
#: The label :func:`legend` adds when a figure has points without an interval: none finite,
#: from runs not converged, or both.
BARE_LABEL = "open marker: no 95% CI (run too short)"
UNCONVERGED_LABEL = "open: run not converged (no CI)"
BARE_BOTH_LABEL = "open: no CI (run too short or not converged)"


def zero_label(n: int) -> str:
    """The note :func:`legend` adds when :func:`simulated` left out ``n`` values of 0 (or
    below) on a log axis: they are not drawn at the axis' floor as if measured there."""
    return f"{n} simulated value{'s' if n != 1 else ''} of 0 not drawn (log scale)"


@dataclass(frozen=True)
class SimSeries:
    """What :func:`simulated` drew: the points with an interval, the interval, the rest."""

    index: int
    points: Any  # Line2D
    interval: tuple[Any, ...]  # LineCollection / cap Line2Ds / PolyCollection
    bare: Any | None  # Line2D of the points without an interval, or None


def _floats(values: Iterable[Any] | None, n: int) -> np.ndarray:
    """``values`` as floats, None → NaN; all NaN when ``values`` is None."""
    if values is None:
        return np.full(n, np.nan)
    return np.array([np.nan if v is None else float(v) for v in values], dtype=float)


def _next_index(fig: Any) -> int:
    index = getattr(fig, "_lbrepro_series", 0)
    fig._lbrepro_series = index + 1
    return index


def simulated(
    ax: Any,
    x: Sequence[Any],
    y: Sequence[Any],
    low: Sequence[Any] | None,
    high: Sequence[Any] | None,
    *,
    label: str | None = None,
    color: Any = "k",
    marker: str = "o",
    ms: float = MARKER_SIZE,
    ls: Any = "none",
    lw: float = 1.0,
    band: bool = False,
    clip: tuple[float, float] | None = None,
    zorder: float = 3.0,
    converged: Sequence[Any] | None = None,
) -> SimSeries:
    """Draw a simulated series ``y`` against ``x`` with its interval [``low``, ``high``].

    ``band=True`` shades the interval (for dense ``x``, where bars would merge); isolated
    resolved points of a band still get bars. ``ls`` joins the points (default: none). Points
    with a non-finite ``x`` or ``y`` are not drawn, nor, on a log axis, a ``y`` ≤ 0 (never
    pinned to the axis' floor as if measured there): :func:`legend` notes how many it left out.
    Points whose interval is not finite are drawn as open markers without a bar. ``converged``
    holds the rows' flags, one a point (for a point derived from several rows, False where any
    of theirs is): where one is False (:func:`not_converged`) the point's interval is a run's
    untrusted fallback, and the point is drawn like one without an interval — an open marker,
    no bar, no caret; None entries (exact rows, no flag) and ``converged=None`` change nothing.
    Ends beyond ``clip = (bottom, top)`` (infinite ones included) are drawn to it and end in a
    caret, as are, on a log y axis (set the scale first), lower ends ≤ 0: down to ``bottom``,
    or without ``clip`` to a tenth of the point.
    """
    x_ = _floats(x, len(x))
    y_ = _floats(y, len(x))
    lo = _floats(low, len(x))
    hi = _floats(high, len(x))
    if converged is not None:
        flags = list(converged)
        if len(flags) != len(x_):
            raise ValueError(f"simulated: {len(flags)} converged flags for {len(x_)} points")
        untrusted = np.array([not_converged(f) for f in flags], dtype=bool)
    else:
        untrusted = np.zeros(len(x_), dtype=bool)
    lo[untrusted] = np.nan  # a fallback interval is not drawn as a 95% CI
    hi[untrusted] = np.nan
    log = ax.get_yscale() == "log"
    shown = np.isfinite(x_) & np.isfinite(y_) & ((y_ > 0) if log else True)
    if log:  # a 0 has no place on a log axis: left out, and counted for the legend's note
        zeros = int((np.isfinite(x_) & np.isfinite(y_) & (y_ <= 0)).sum())
        ax.figure._lbrepro_zeros = getattr(ax.figure, "_lbrepro_zeros", 0) + zeros
    x_, y_, lo, hi = x_[shown], y_[shown], lo[shown], hi[shown]
    untrusted = untrusted[shown]
    index = _next_index(ax.figure)
    # An interval holds its point; a derived series whose rounding breaks that by a hair is
    # widened to it rather than drawn with a negative bar.
    lo, hi = np.minimum(lo, y_), np.maximum(hi, y_)  # NaN stays NaN
    bottom, top = clip if clip is not None else (-np.inf, np.inf)
    if log:  # lower ends at or below 0 run to the clip, else a decade below the point
        floor = np.minimum(y_ / 10 if clip is None else np.full(len(x_), bottom), y_)
        low_out = lo <= 0
    else:
        floor = np.full(len(x_), bottom)
        low_out = np.zeros(len(x_), dtype=bool)
    low_out |= lo < bottom
    high_out = hi > top
    lo = np.where(low_out, floor, lo)
    hi = np.where(high_out, top, hi)
    has = np.isfinite(lo) & np.isfinite(hi)  # an unbounded end with no clip: no interval
    low_out &= has
    high_out &= has
    interval: list[Any] = []
    style = {"color": color, "zorder": zorder}
    if band:
        runs = _runs(has)
        alone = np.zeros(len(x_), dtype=bool)
        for start, stop in runs:
            if stop - start == 1:
                alone[start] = True
        fill = ax.fill_between(
            x_,
            np.where(has & ~alone, lo, np.nan),
            np.where(has & ~alone, hi, np.nan),
            color=color,
            alpha=BAND_ALPHA,
            lw=0,
            zorder=zorder - 1,
        )
        fill.set_gid(f"{CI_GID}-{index}-band")
        interval.append(fill)
        bars_at = alone
    else:
        bars_at = has
    if bars_at.any():
        container = ax.errorbar(
            x_[bars_at],
            y_[bars_at],
            yerr=[y_[bars_at] - lo[bars_at], hi[bars_at] - y_[bars_at]],
            fmt="none",
            ecolor=color,
            elinewidth=BAR_WIDTH,
            capsize=CAP_SIZE,
            capthick=BAR_WIDTH,
            zorder=zorder - 0.5,
        )
        _, caps, bars = container.lines
        for bar in bars:
            bar.set_gid(f"{CI_GID}-{index}-bars")
            interval.append(bar)
        for cap in caps:
            cap.set_gid(f"{CI_GID}-{index}-caps")
            interval.append(cap)
    for out, end, caret in ((low_out, lo, "v"), (high_out, hi, "^")):
        if out.any():
            (mark,) = ax.plot(
                x_[out], end[out], ls="none", marker=caret, ms=ms, mec=color, mfc=color, **style
            )
            mark.set_gid(f"{CI_GID}-{index}-offscale")
            interval.append(mark)
    if ls not in ("none", "", " ", None):  # a line through every point, under the markers
        (join,) = ax.plot(x_, y_, ls=ls, lw=lw, marker="", color=color, zorder=zorder - 1)
        join.set_gid(f"lbrepro-join-{index}")
    (points,) = ax.plot(
        x_[has],
        y_[has],
        ls="none",
        marker=marker,
        ms=ms,
        mfc=color if band else "none",
        mec=color,
        mew=1.0,
        label=label,
        **style,
    )
    points.set_gid(f"{SIM_GID}-{index}")
    bare = None
    if not has.all():
        kinds = getattr(ax.figure, "_lbrepro_bare_kinds", frozenset())
        kinds |= {"unconverged"} if (~has & untrusted).any() else set()
        kinds |= {"short"} if (~has & ~untrusted).any() else set()
        ax.figure._lbrepro_bare_kinds = frozenset(kinds)
        (bare,) = ax.plot(
            x_[~has],
            y_[~has],
            ls="none",
            marker=marker,
            ms=ms + 1.5,
            mfc="white",
            mec=color,
            mew=1.0,
            label="_nolegend_",
            **style,
        )
        bare.set_gid(f"{BARE_GID}-{index}")
    return SimSeries(index, points, tuple(interval), bare)


def _runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """The [start, stop) index ranges where ``mask`` is True."""
    runs, start = [], None
    for i, m in enumerate(mask):
        if m and start is None:
            start = i
        elif not m and start is not None:
            runs.append((start, i))
            start = None
    if start is not None:
        runs.append((start, len(mask)))
    return runs


def loglog_interval(u: Any, low: Any, high: Any) -> tuple[float, float, float]:
    """log(−log u) and the image of [low, high] (decreasing map; ±inf where it leaves (0, 1))."""
    u_, lo, hi = (np.nan if a is None else float(a) for a in (u, low, high))

    def g(v: float) -> float:
        if np.isnan(v):
            return np.nan
        if v <= 0:
            return np.inf
        if v >= 1:
            return -np.inf
        return float(np.log(-np.log(v)))

    return g(u_), g(hi), g(lo)


def abs_interval(value: Any, low: Any, high: Any) -> tuple[float, float, float]:
    """|value| and the interval of |·| over [low, high] (0 below when it holds 0)."""
    v, lo, hi = (np.nan if a is None else float(a) for a in (value, low, high))
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return abs(v), np.nan, np.nan
    if lo <= 0 <= hi:
        return abs(v), 0.0, max(-lo, hi)
    return abs(v), min(abs(lo), abs(hi)), max(abs(lo), abs(hi))


# ------------------------------------------------------------------------ legends
def _has_bare(fig: Any) -> bool:
    return any(
        (line.get_gid() or "").startswith(BARE_GID) and len(line.get_xdata())
        for ax in fig.axes
        for line in ax.get_lines()
    )


def sim_handle(label: str = "simulation (95% CI)", color: Any = "k", marker: str = "o") -> Any:
    """A legend handle for simulated points (hollow marker, as :func:`simulated` draws)."""
    from matplotlib.lines import Line2D

    return Line2D([], [], ls="none", marker=marker, ms=MARKER_SIZE, mfc="none", mec=color,
                  color=color, label=label)  # fmt: skip


def bare_label(fig: Any) -> str:
    """What the open marker means in ``fig``: no finite interval, a run not converged, or both
    (as :func:`simulated` recorded)."""
    kinds = getattr(fig, "_lbrepro_bare_kinds", set())
    if "unconverged" not in kinds:
        return BARE_LABEL
    return BARE_BOTH_LABEL if "short" in kinds else UNCONVERGED_LABEL


def bare_handle() -> Any:
    """A legend handle for the open marker of a point without an interval."""
    from matplotlib.lines import Line2D

    return Line2D([], [], ls="none", marker="o", ms=MARKER_SIZE + 1.5, mfc="white", mec="k")


def note_handle() -> Any:
    """A legend handle that draws nothing: its entry is a note, standing for no artist."""
    from matplotlib.lines import Line2D

    handle = Line2D([], [], ls="none", marker="")
    handle.lbrepro_note = True
    return handle


def legend(
    target: Any,
    handles: Sequence[Any] | None = None,
    labels: Sequence[str] | None = None,
    *,
    where: str = "right",
    ncols: int = 1,
    fontsize: float | None = None,
    title: str | None = None,
) -> Any:
    """A legend outside the data: right of an axes, or under (or right of) a figure's panels.

    ``target`` is an Axes (the legend goes right of it) or a Figure (``where="below"``: under
    all panels, ``"right"``: right of them; in fewer than ``ncols`` columns when that is
    what fits the figure's width); constrained layout makes room. When
    the figure has points without an interval, an entry explaining the open marker (no finite
    interval, or a run not converged: :func:`bare_label`) is added, and when simulated values
    of 0 were left out of a log axis, a note saying how many (:func:`zero_label`).
    """
    from matplotlib.figure import FigureBase

    is_fig = isinstance(target, FigureBase)
    fig = target if is_fig else target.figure
    if handles is None:
        if is_fig:
            pairs = {}
            for ax in fig.axes:
                for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
                    pairs.setdefault(lab, h)
            labels, handles = list(pairs), list(pairs.values())
        else:
            handles, labels = target.get_legend_handles_labels()
    handles, labels = list(handles), list(labels if labels is not None else [])
    if not labels:
        labels = [h.get_label() for h in handles]
    if _has_bare(fig) and not getattr(fig, "_lbrepro_bare_explained", False):
        fig._lbrepro_bare_explained = True
        handles.append(bare_handle())
        labels.append(bare_label(fig))
    zeros = getattr(fig, "_lbrepro_zeros", 0)
    if zeros and not getattr(fig, "_lbrepro_zeros_noted", False):
        fig._lbrepro_zeros_noted = True
        handles.append(note_handle())
        labels.append(zero_label(zeros))
    kw: dict[str, Any] = {"ncols": ncols, "title": title}
    if fontsize is not None:
        kw["fontsize"] = fontsize
    if is_fig:
        loc = "outside lower center" if where == "below" else "outside right upper"
        # Fewer columns until the legend fits the figure's width (it would be cut off); a
        # margin, as constrained layout centres it under the panels, not the figure.
        width = 0.92 * fig.get_window_extent().width
        while True:
            leg = target.legend(handles, labels, loc=loc, **kw)
            if kw["ncols"] <= 1 or leg.get_window_extent().width <= width:
                return leg
            leg.remove()
            kw["ncols"] -= 1
    return target.legend(
        handles, labels, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0, **kw
    )
