"""Figures that show what their axes say (issue 32, item 6), for every registered figure.

Each artifact's figure is drawn from its quick table (the fixtures of tests/test_figures.py:
the default config's structure with small workloads) and read back as matplotlib objects:

1. every data series (a line or marker set; intervals, carets and joins aside) plots the table
   column its y axis names: its y values are values of that column (a tidy table's column is
   the ``value`` of one ``quantity``; :data:`AXES` says which, by axis label, and through which
   of the helpers' maps — |·|, log(−log ·), log₁₀(−ln ·)). A series computed in the plot (an
   error, a gap, a guide ∝ 1/N) is marked with :func:`lbrepro.plotting.style.derived`;
2. every text drawn (axis labels, titles, tick labels, legends) lies inside the canvas;
3. each legend entry looks like what it stands for: the artists of its label, or, for a proxy
   handle, some drawn series (marker, fill, line style, and colour unless the proxy is grey);
4. on a log axis no point sits at the axis' floor: a value of 0 is left out and the legend
   says so, whether the table has one or a simulated value is set to 0 here.
"""

from __future__ import annotations

import io
import math
from typing import Any

import numpy as np
import pytest
from matplotlib.colors import to_rgba
from matplotlib.lines import Line2D
from matplotlib.text import Text

from lbrepro.artifacts import registry
from lbrepro.pipeline import artifact_config
from lbrepro.plotting import intervals
from lbrepro.plotting.style import RC
from test_figures import FIGURES, config, draw, figures, legends, tables  # noqa: F401

#: Map applied to a table value before it is compared with a plotted y.
TRANSFORMS = {
    "": lambda v: v,
    "abs": abs,
    "loglog": lambda v: math.log(-math.log(v)) if 0 < v < 1 else math.nan,
    "log10ln": lambda v: math.log10(-math.log(v)) if 0 < v < 1 else math.nan,
    "log10neg": lambda v: math.log10(-v) if v < 0 else math.nan,  # log₁₀(−ln u) from ln u
}

#: y-axis label (whitespace collapsed) → the table columns it names: a quantity (the ``value``
#: of its rows), ``map:quantity`` through a map of :data:`TRANSFORMS`, or ``col:name`` (a column
#: of its own). A data series on that axis plots one of them.
AXES: dict[str, set[str]] = {
    "u_k = fraction of servers with ≥ k jobs": {"u"},
    "log(−log u_k)": {"loglog:u"},
    "E[jobs per server]": {"mean_jobs"},
    "|error| in E[jobs per server]": set(),  # every series derived: |sim − mean field|, guides
    "E[T] (mean service times)": {"mean_sojourn"},
    "largest stable load / (μΣγC)": {"lambda_star_normalised"},
    "mean jobs per server over [warmup, H]": {"mean_jobs"},
    "u⁽ʲ⁾ₙ (log scale)": {"u"},
    "log₁₀(−ln u⁽ʲ⁾ₙ)": {"log10ln:u", "log10neg:log_u"},
    "|Cov(x_a, x_b)| of two tagged servers": {"abs:cov_same", "abs:cov_cross"},
    "W(n)": {"W"},
    "W_β(n)": {"W"},
    "gap to optimal (%)": {"gap_pct"},
    "θ (rate^(d−1))": {"theta"},
    "relative error of T_d (%)": set(),  # derived: (published − sim)/sim
    "u_k (log scale)": {"u"},
    "fraction of selections": {"f_ref", "f_aff"},
    "fraction of servers": {"x", "fixed_point", "limit", "x_t", "x_mean"},
    "initial fraction x01 (one type-II job)": {"col:x01"},
    "idle fraction u at the fixed point": {"u"},
    "mean waiting jobs per server": {"wait_jobs"},
    "variance of waiting jobs per server": {"wait_var"},
    "mean waiting time (mean type-I service times)": {"wait_time_I", "wait_time_II", "wait_time"},
    "servers with a type-II job": {"type2_fraction"},
    "mean residence time": {"residence", "exit_time"},
    "q₂ = fraction of servers with ≥ 2 jobs": {"q2"},
    "E[(N − Q₁)/√N]": {"idle"},
    "E[Q₂/√N]": {"q2"},
    "E[X₂] of the SDE": {"q2"},
    "P(wait > 0)": {"p_wait"},
}


def label_of(ax: Any) -> str:
    return " ".join(ax.get_ylabel().split())  # wrapped labels compared as one line


def panels(fig: Any) -> list[Any]:
    return [ax for ax in fig.axes if ax.get_visible() and ax.axison]


def data_series(ax: Any) -> list[Any]:
    """The lines and marker sets of ``ax`` that plot data: not an interval, a caret or a join
    (lbrepro.plotting.intervals' own), not an empty legend proxy."""
    from matplotlib.collections import PathCollection

    out = []
    for artist in [*ax.get_lines(), *(c for c in ax.collections if isinstance(c, PathCollection))]:
        gid = artist.get_gid() or ""
        if gid.startswith((intervals.CI_GID, "lbrepro-join")) or not artist.get_visible():
            continue
        if len(ys_of(artist)):
            out.append(artist)
    return out


def ys_of(artist: Any) -> np.ndarray:
    if isinstance(artist, Line2D):
        y = np.asarray(artist.get_ydata(), dtype=float)
    else:
        offsets = np.asarray(artist.get_offsets(), dtype=float)
        y = offsets[:, 1] if offsets.size else np.array([])
    return y[np.isfinite(y)]


def column(rows: list[dict[str, Any]], source: str) -> np.ndarray:
    """The table values ``source`` (an :data:`AXES` entry) names, through its map."""
    how, _, name = source.rpartition(":")
    if how == "col":
        values = [r.get(name) for r in rows]
        how = ""
    else:
        values = [r.get("value") for r in rows if r.get("quantity") == name]
    f = TRANSFORMS[how]
    out = [f(float(v)) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return np.array([v for v in out if math.isfinite(v)])


def plots(ys: np.ndarray, values: np.ndarray) -> bool:
    """Whether every plotted y is one of ``values``."""
    if not len(values):
        return False
    values = np.sort(values)
    return all(np.isclose(values, y, rtol=1e-9, atol=1e-12).any() for y in ys)


def describe(artist: Any) -> str:
    return f"{type(artist).__name__} {artist.get_label()!r} (gid {artist.get_gid()})"


@pytest.mark.parametrize("aid", FIGURES)
def test_every_series_plots_the_column_its_axis_names(aid, figures, tables) -> None:  # noqa: F811
    fig, rows = figures[aid], tables[aid]
    for ax in panels(fig):
        series = data_series(ax)
        plotted = [a for a in series if not getattr(a, "lbrepro_derived", None)]
        if not plotted:
            continue
        name = label_of(ax)
        assert name in AXES, f"{aid}: axis label {name!r} names no table column (see AXES)"
        columns = {source: column(rows, source) for source in AXES[name]}
        for artist in plotted:
            ys = ys_of(artist)
            assert any(plots(ys, values) for values in columns.values()), (
                f"{aid}: panel '{ax.get_title()}': {describe(artist)} plots y = "
                f"{ys[:4].tolist()}…, not the column its axis '{name}' names "
                f"({sorted(AXES[name])}); a series computed in the plot is marked "
                "with lbrepro.plotting.style.derived"
            )


def drawn_texts(fig: Any) -> list[Any]:
    """The visible, non-empty texts of ``fig`` that a draw renders: tick labels only of the
    ticks inside the view (matplotlib keeps, but does not draw, the others)."""
    tick_labels, drawn = set(), set()
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                tick_labels |= {id(tick.label1), id(tick.label2)}
            for tick in axis._update_ticks():  # the ticks Axis.draw draws
                drawn |= {id(tick.label1), id(tick.label2)}
    return [
        t
        for t in fig.findobj(Text)
        if t.get_visible()
        and t.get_text().strip()
        and (id(t) not in tick_labels or id(t) in drawn)
        and (t.axes is None or t.axes.get_visible())
    ]


def texts_outside(fig: Any, renderer: Any = None) -> list[tuple[str, list[int]]]:
    renderer = renderer or fig.canvas.get_renderer()
    canvas = fig.bbox.padded(0.5)  # half a pixel of rounding
    outside = []
    for text in drawn_texts(fig):
        box = text.get_window_extent(renderer)
        if not (canvas.contains(box.x0, box.y0) and canvas.contains(box.x1, box.y1)):
            outside.append((text.get_text(), [round(v) for v in box.extents]))
    return outside


@pytest.mark.parametrize("aid", FIGURES)
def test_every_text_lies_inside_the_canvas(aid, figures, tables, config) -> None:  # noqa: F811
    """As drawn on the canvas, and as saved (a figure at ``figure.dpi`` saved once at
    ``savefig.dpi``, as lbrepro.plotting.style.save_figure does: the layout and the wrapping
    of long text happen within that one draw)."""
    import matplotlib.pyplot as plt

    fig = figures[aid]
    assert not texts_outside(fig), f"{aid}: text outside the canvas: {texts_outside(fig)}"
    saved = registry.get(aid).plot(tables[aid], artifact_config(config, aid))
    found: list[Any] = []  # measured as the save draws, at its dpi (a later draw lays out anew)
    saved.canvas.mpl_connect("draw_event", lambda e: found.append(texts_outside(saved, e.renderer)))
    try:
        with plt.rc_context(RC):
            saved.savefig(io.BytesIO(), format="png")
        assert found, f"{aid}: saving drew nothing"
        assert not any(found), f"{aid}: saved, text outside the canvas: {found}"
    finally:
        plt.close(saved)


# ------------------------------------------------------------------------ legends
def _none(v: Any) -> bool:
    return v is None or (isinstance(v, str) and v.strip().lower() in ("", "none"))


def look(artist: Any) -> dict[str, Any]:
    """How a Line2D (or a scatter) looks: its marker, whether that is open, the marker's
    colour, its line style and the line's colour ('' and None where it has none)."""
    if isinstance(artist, Line2D):
        marker = "" if _none(artist.get_marker()) else str(artist.get_marker())
        ls = "" if _none(artist.get_linestyle()) else str(artist.get_linestyle())
        face = artist.get_markerfacecolor()
        return {
            "marker": marker,
            "open": bool(marker) and (_none(face) or to_rgba(face) == to_rgba("white")),
            "mcolour": to_rgba(artist.get_markeredgecolor())[:3] if marker else None,
            "ls": ls,
            "lcolour": to_rgba(artist.get_color())[:3] if ls else None,
        }
    faces = artist.get_facecolor()
    return {"marker": "scatter", "open": False, "ls": "", "lcolour": None,
            "mcolour": tuple(faces[0][:3]) if len(faces) else None}  # fmt: skip


def grey(colour: Any) -> bool:
    return colour is not None and max(colour) - min(colour) < 1e-6


def same_colour(want: Any, got: Any, *, any_grey: bool) -> bool:
    """Equal colours; a grey proxy (``any_grey``) stands for a series of any colour."""
    if any_grey and grey(want):
        return True
    return want is not None and got is not None and np.allclose(want, got)


def marker_like(want: dict[str, Any], got: dict[str, Any], *, any_grey: bool) -> bool:
    return (
        want["marker"] == got["marker"]
        and want["open"] == got["open"]
        and same_colour(want["mcolour"], got["mcolour"], any_grey=any_grey)
    )


def line_like(want: dict[str, Any], got: dict[str, Any], *, any_grey: bool) -> bool:
    return want["ls"] == got["ls"] and same_colour(
        want["lcolour"], got["lcolour"], any_grey=any_grey
    )


def looks_alike(want: dict[str, Any], got: dict[str, Any]) -> bool:
    """A handle and the artist of its label: same marker (open or filled, colour), same line."""
    return (
        want["marker"] == got["marker"]
        and want["ls"] == got["ls"]
        and (not want["marker"] or marker_like(want, got, any_grey=False))
        and (not want["ls"] or line_like(want, got, any_grey=False))
    )


@pytest.mark.parametrize("aid", FIGURES)
def test_legend_entries_look_like_what_they_stand_for(aid, figures) -> None:  # noqa: F811
    """An entry whose label a drawn series carries looks like that series; a proxy entry's
    marker looks like some drawn series' markers and its line like some drawn line (a grey
    proxy stands for every colour); an entry that draws nothing is a note."""
    fig = figures[aid]
    drawn = [a for ax in panels(fig) for a in data_series(ax)]
    drawn += [
        a  # the joins and the carets (an interval off the scale) of simulated series
        for ax in panels(fig)
        for a in ax.get_lines()
        if (a.get_gid() or "").startswith("lbrepro-join")
        or (a.get_gid() or "").endswith("-offscale")
    ]
    for leg in legends(fig):
        for handle, text in zip(leg.legend_handles, leg.get_texts(), strict=True):
            label, want = text.get_text(), look(handle)
            if not want["marker"] and not want["ls"]:
                continue  # draws nothing: a note (intervals.note_handle)
            same_label = [a for a in drawn if a.get_label() == label]
            if same_label:
                wrong = [describe(a) for a in same_label if not looks_alike(want, look(a))]
                assert not wrong, f"{aid}: legend entry {label!r} {want} differs from {wrong}"
                continue
            if want["marker"]:
                assert any(marker_like(want, look(a), any_grey=True) for a in drawn), (
                    f"{aid}: legend entry {label!r}: its marker {want} is no drawn series' "
                    f"(drawn: {sorted({str(look(a)) for a in drawn if look(a)['marker']})[:6]})"
                )
            if want["ls"]:
                assert any(line_like(want, look(a), any_grey=True) for a in drawn), (
                    f"{aid}: legend entry {label!r}: its line {want} is no drawn line"
                )


# ------------------------------------------------------------------------ log axes
def log_panels(fig: Any) -> list[Any]:
    return [ax for ax in panels(fig) if ax.get_yscale() == "log"]


def at_floor(fig: Any) -> list[str]:
    """The data points of log axes that sit at the axis' lower limit."""
    found = []
    for ax in log_panels(fig):
        floor = min(ax.get_ylim())
        for artist in data_series(ax):
            ys = ys_of(artist)
            hits = np.isclose(ys, floor, rtol=1e-6, atol=0)  # below it: runs off, not pinned
            if hits.any():
                found.append(f"{describe(artist)} on '{ax.get_title()}': {ys[hits][:3].tolist()}")
    return found


def legend_texts(fig: Any) -> list[str]:
    return [t.get_text() for leg in legends(fig) for t in leg.get_texts()]


@pytest.mark.parametrize("aid", FIGURES)
def test_no_point_sits_at_a_log_axis_floor(aid, figures) -> None:  # noqa: F811
    fig = figures[aid]
    assert not at_floor(fig), f"{aid}: points at a log axis' floor: {at_floor(fig)}"
    zeros = getattr(fig, "_lbrepro_zeros", 0)
    if zeros:
        assert intervals.zero_label(zeros) in legend_texts(fig), (
            f"{aid}: {zeros} values of 0 left out of a log axis without a note"
        )


def sim_points_on_log_axes(fig: Any) -> int:
    return sum(
        len(ys_of(a))
        for ax in log_panels(fig)
        for a in data_series(ax)
        if (a.get_gid() or "").startswith((intervals.SIM_GID, intervals.BARE_GID))
    )


@pytest.mark.parametrize("aid", FIGURES)
def test_a_simulated_zero_on_a_log_axis_is_left_out_and_noted(aid, figures, tables, config):  # noqa: F811
    """Every third simulated row set to 0 (as a run that never saw the event): no point is
    drawn at the floor, and each point that leaves a log axis is counted in the legend."""
    import matplotlib.pyplot as plt

    if not log_panels(figures[aid]) or not any(r.get("method") == "sim" for r in tables[aid]):
        pytest.skip(f"{aid} has no simulated rows on a log axis")
    i = 0
    rows = []
    for r in tables[aid]:
        if r.get("method") == "sim" and isinstance(r.get("value"), (int, float)):
            i += 1
            if i % 3 == 0:
                r = r | {"value": 0.0, "ci_low": 0.0}
        rows.append(r)
    fig = draw(aid, rows, config)
    try:
        assert not at_floor(fig), f"{aid}: a value of 0 drawn at the floor: {at_floor(fig)}"
        left_out = sim_points_on_log_axes(figures[aid]) - sim_points_on_log_axes(fig)
        zeros = getattr(fig, "_lbrepro_zeros", 0)
        assert left_out <= zeros, (
            f"{aid}: {left_out} simulated points left the log axes, {zeros} of them noted"
        )
        if zeros:
            assert intervals.zero_label(zeros) in legend_texts(fig), (
                f"{aid}: {zeros} values of 0 left out of a log axis without a note"
            )
    finally:
        plt.close(fig)


# ------------------------------------------------------------------------ the helpers
def test_a_label_longer_than_its_panel_is_wrapped_onto_the_canvas() -> None:
    import matplotlib.pyplot as plt

    from lbrepro.plotting.style import new_figure

    fig, axes = new_figure(1, 2, width=6.0, height=2.5)
    long = "a y label naming a quantity and its unit at some length (mean service times)"
    axes[0][0].set(ylabel=long, title="a title " * 8, xlabel="x (jobs)")
    axes[0][1].set(ylabel="$\\mathdefault{u_k}$ (log scale)")
    fig.canvas.draw()
    assert not [t.get_text() for t in drawn_texts(fig) if not fits(fig, t)]
    assert "\n" in axes[0][0].get_ylabel() and " ".join(axes[0][0].get_ylabel().split()) == long
    assert axes[0][1].get_ylabel() == "$\\mathdefault{u_k}$ (log scale)"  # fits: unchanged
    plt.close(fig)


def fits(fig: Any, text: Any) -> bool:
    box = text.get_window_extent(fig.canvas.get_renderer())
    canvas = fig.bbox.padded(0.5)
    return canvas.contains(box.x0, box.y0) and canvas.contains(box.x1, box.y1)


def test_a_zero_on_a_log_axis_is_left_out_and_counted_in_the_legend() -> None:
    import matplotlib.pyplot as plt

    from lbrepro.plotting.style import new_figure

    fig, axes = new_figure()
    ax = axes[0][0]
    ax.set_yscale("log")
    s = intervals.simulated(ax, [1, 2, 3, 4], [0.5, 0.0, 0.01, 0.0], [0.4, 0.0, 0.005, 0.0],
                            [0.6, 0.003, 0.02, 0.001], label="sim")  # fmt: skip
    leg = intervals.legend(ax)
    assert list(s.points.get_xdata()) == [1, 3] and s.bare is None
    assert [t.get_text() for t in leg.get_texts()] == ["sim", intervals.zero_label(2)]
    assert intervals.zero_label(1) == "1 simulated value of 0 not drawn (log scale)"
    plt.close(fig)
