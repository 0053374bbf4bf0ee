"""Every figure a referee can read: each simulated series shows its 95% interval (and only a
trusted one: a run that ended ``converged = False`` gets an open marker, no bar), legends stay
off the data, text is legible at the report's width, and figures save deterministically.

Each artifact with a figure is computed in-process on the default config with small workloads
(the structure — systems, cases, d — of config/config.yaml, far fewer events), once per module,
and its figure is read back as matplotlib objects: what :mod:`lbrepro.plotting.intervals`
tagged is what these tests count, so a simulated series drawn without the helper is missed.
"""

from __future__ import annotations

import fcntl
import math
import os
import pickle
import re
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")

from lbrepro.artifacts import registry
from lbrepro.config import deep_merge, load_config
from lbrepro.core.rng import stream
from lbrepro.pipeline import artifact_config
from lbrepro.plotting import intervals
from lbrepro.plotting.style import MAX_WIDTH_IN, MIN_TEXT_PX, RC, text_px

ROOT = Path(__file__).resolve().parents[1]

# Small workloads over the default config: same panels and series, a fraction of the events.
SMALL: dict[str, dict[str, Any]] = {
    "simulation": {"batches": 5, "extend": 0, "replace": True},
    "supermarket-tail": {"rho": [0.9], "d": [1, 2, 5], "N": 100, "horizon": 1500, "warmup": 100},
    "supermarket-accuracy": {"cases": [[0.9, 2]], "N": [10, 50], "server_time": 1.0e5,
                             "warmup": 100},
    "hetero-sojourn": {"systems": [{"name": "H2x", "gamma": [0.8, 0.2], "C": [1, 10],
                                    "d": [2, 2]}],
                       "rho_grid": [0.3, 0.6, 0.9], "rho_sim": [0.9], "N": 40, "horizon": 300,
                       "warmup": 30},
    "hetero-stability": {"ratios": [1.0, 2, 10], "ratios_bisect": [10], "gamma_slow": [0.8],
                         "d": [2], "N": 40, "horizons": [100, 150, 200], "warmup": 20},
    "hetero-tail": {"N": 50, "horizon": 400, "warmup": 40},
    "hetero-chaos": {"N": [10, 20], "server_time": 1.0e4, "warmup": 20},
    "whittle-compare": {"scenarios": [{"name": "A", "d": [1, "inf"], "q": [0.3, 0.6],
                                       "p": [0.3, 0.5], "B": 16}],
                        "slots": 100_000, "warmup": 1000},
    "general-sojourn": {"rho": [0.5, 0.9], "N": 100, "horizon": 300, "warmup": 30},
    "general-tail": {"N": 200, "horizon": 300, "warmup": 30, "kmax": 8},
    "affinity-trajectories": {"n_traj": 3, "t_end": 60, "n_record": 31},
    "affinity-bistability": {"n_traj": 10, "t_end": 60, "n_record": 31},
    "affinity-basin": {"grid": 6, "t_end": 60},
    "affinity-bifurcation": {"d1_max": 28, "lam_grid": [0.3, 0.6, 0.8]},
    "affinity-sim-vs-fluid": {"N": 600, "horizon": 200, "warmup": 20, "t_plot": 20},
    "affinity-queue-length": {"lam_grid": [0.3, 0.6, 0.8], "lam_sim": [0.6, 0.8], "N": 200,
                              "horizon": 300, "warmup": 30},
    "affinity-waiting": {"lam_grid": [0.3, 0.6, 0.8], "lam_sim": [0.6, 0.8], "N": 200,
                         "horizon": 300, "warmup": 30},
    "affinity-tunneling": {"N": [60, 70], "trace_N": [60], "horizon": 1000, "t_trace": 300,
                           "N_exit": [150, 250], "exit_reps": 3, "exit_cap": 2000,
                           "N_exit_queueing": [125, 200], "exit_cap_queueing": 1000},
    "universality-fluid": {"N": [100, 300], "d": [2, "sqrtN", "N"], "server_time": 3.0e4},
    "universality-diffusion": {"N": [100, 400], "d": ["sqrtNlog2N", "N"], "replications": 300,
                               "sde": {"dt": [0.05, 0.025], "scheme": "bridge",
                                       "replications": 1000}},
    "universality-overhead": {"N": 200, "d": [1, 2, "sqrtN", "N"], "horizon": 300,
                              "warmup": 30},
}  # fmt: skip

FIGURES = [a.id for a in registry.all_artifacts() if a.has_figure]


@pytest.fixture(scope="module")
def config() -> dict[str, Any]:
    return deep_merge(load_config(ROOT / "config" / "config.yaml"), SMALL)


def _compute_tables(config: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Each figure artifact's rows, computed in this process."""
    out = {}
    for aid in FIGURES:
        art = registry.get(aid)
        cfg = artifact_config(config, aid)
        art.validate(cfg)
        rows = []
        for pid, params in art.points(cfg).items():
            rows += [r | {"point": pid} for r in art.compute(params, stream(7, aid, pid))]
        out[aid] = rows
    return out


@pytest.fixture(scope="module")
def tables(
    config: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, list[dict[str, Any]]]:
    """Each figure artifact's rows, computed once per test session: this file and
    tests/test_figure_faithful.py read the same tables, and on separate xdist workers the
    second waits for the first's pickle (a lock file in the session's shared temp directory)
    instead of computing them again."""
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # the session's directory, above each worker's own
    cache = shared / "figure_tables.pickle"
    with open(shared / "figure_tables.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not cache.exists():
            tmp = cache.with_suffix(".partial")
            tmp.write_bytes(pickle.dumps(_compute_tables(config)))
            tmp.replace(cache)
        return pickle.loads(cache.read_bytes())


def draw(aid: str, rows: list[dict[str, Any]], config: dict[str, Any]) -> Any:
    """``aid``'s figure of ``rows``, drawn (so that constrained layout has placed everything)."""
    fig = registry.get(aid).plot(rows, artifact_config(config, aid))
    fig.set_dpi(RC["savefig.dpi"])
    fig.canvas.draw()
    return fig


@pytest.fixture(scope="module")
def figures(tables: dict[str, list[dict[str, Any]]], config: dict[str, Any]):
    """Each artifact's figure, drawn once."""
    import matplotlib.pyplot as plt

    out = {}
    with matplotlib.rc_context({"figure.max_open_warning": 0}):  # all kept open on purpose
        for aid in FIGURES:
            out[aid] = draw(aid, tables[aid], config)
    yield out
    for fig in out.values():
        plt.close(fig)


def tagged(fig: Any) -> dict[int, dict[str, list[Any]]]:
    """The helper's artists by series number: ``{"sim": [...], "ci": [...], "bare": [...]}``."""
    series: dict[int, dict[str, list[Any]]] = {}
    for ax in fig.axes:
        for artist in ax.get_children():
            gid = artist.get_gid() or ""
            m = re.fullmatch(r"lbrepro-(sim|ci|bare)-(\d+)(?:-(\w+))?", gid)
            if m:
                kind, n = m.group(1), int(m.group(2))
                entry = series.setdefault(n, {"sim": [], "ci": [], "bare": []})
                entry[kind].append(artist)
    return series


def spans(ci: list[Any]) -> list[tuple[float, float, float]]:
    """(x, low, high) of every drawn interval: bar segments and band polygons, data coords."""
    from matplotlib.collections import LineCollection, PolyCollection

    out = []
    for artist in ci:
        if not artist.get_visible() or (artist.get_alpha() is not None and artist.get_alpha() == 0):
            continue
        if isinstance(artist, LineCollection):
            if max(artist.get_linewidths(), default=0) <= 0:
                continue
            for seg in artist.get_segments():
                (x0, y0), (x1, y1) = seg[0], seg[-1]
                assert x0 == x1
                out.append((x0, min(y0, y1), max(y0, y1)))
        elif isinstance(artist, PolyCollection):
            for path in artist.get_paths():
                xy = path.vertices
                for x in np.unique(xy[:, 0]):
                    ys = xy[xy[:, 0] == x, 1]
                    out.append((x, ys.min(), ys.max()))
    return out


def sim_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in rows if r.get("method") == "sim" or "ci_low" in r]


def finite(v: Any) -> bool:
    return v is not None and isinstance(v, (int, float)) and math.isfinite(v)


def trusted(r: dict[str, Any]) -> bool:
    """Whether a row's interval is drawn as a 95% CI: finite, and its run not flagged
    ``converged = False``."""
    return (
        finite(r.get("ci_low"))
        and finite(r.get("ci_high"))
        and not intervals.not_converged(r.get("converged"))
    )


@pytest.mark.parametrize("aid", FIGURES)
def test_every_simulated_series_shows_its_interval(aid, figures, tables) -> None:
    fig = figures[aid]
    unresolved_rows = sum(not trusted(r) for r in sim_rows(tables[aid]))
    bare: dict[Any, int] = {}  # by panel: a panel shows a row once, a figure maybe twice
    for n, parts in tagged(fig).items():
        assert len(parts["sim"]) == 1, (aid, n, parts)
        points = parts["sim"][0]
        xs, ys = (np.asarray(v, dtype=float) for v in points.get_data())
        drawn = spans(parts["ci"])
        if len(xs):
            assert drawn, f"{aid}: simulated series {n} ({points.get_label()}) has no interval"
        for x, y in zip(xs, ys, strict=True):
            hits = [(lo, hi) for sx, lo, hi in drawn if math.isclose(sx, x, rel_tol=1e-9)]
            assert any(
                math.isfinite(lo)
                and math.isfinite(hi)
                and lo <= y * (1 + 1e-9) + 1e-12
                and hi >= y * (1 - 1e-9) - 1e-12
                for lo, hi in hits
            ), f"{aid}: series {n} point ({x:g}, {y:g}) has no finite interval around it"
        bars = [a for a in parts["ci"] if (a.get_gid() or "").endswith("-bars")]
        caps = [a for a in parts["ci"] if (a.get_gid() or "").endswith("-caps")]
        assert not bars or caps, f"{aid}: series {n}'s bars have no caps"
        for b in parts["bare"]:
            bare[b.axes] = bare.get(b.axes, 0) + len(b.get_xdata())
            assert b.get_markerfacecolor() != b.get_markeredgecolor(), "bare points are open"
    # A point drawn without an interval is one whose row had none or an untrusted one (from a
    # run not converged), never a dropped interval.
    for ax, count in bare.items():
        assert count <= unresolved_rows, (
            f"{aid}: {count} points of panel '{ax.get_title()}' drawn without their interval"
        )


#: Which flagged rows a test declares converged: a fixed irregular pattern (an alternating one
#: cannot tell a series' flags from their reverse), and then its complement.
PATTERN = np.random.default_rng(20240611).integers(0, 2, 101).astype(bool)


def reflagged(rows: list[dict[str, Any]], flag: Any) -> list[dict[str, Any]]:
    """``rows`` with the i-th row that has a converged flag flagged ``flag(i)`` instead."""
    out, i = [], 0
    for r in rows:
        if isinstance(r.get("converged"), (bool, np.bool_)):
            r = r | {"converged": flag(i)}
            i += 1
        out.append(r)
    return out


def rows_at(rows: list[dict[str, Any]], x: float, y: float) -> list[dict[str, Any]]:
    """The flagged rows a drawn point (x, y) may be: value y and some cell x (a derived or
    clipped point is none of them)."""

    def near(a: Any, b: float) -> bool:
        return finite(a) and math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)

    return [
        r
        for r in rows
        if isinstance(r.get("converged"), bool)
        and near(r.get("value"), y)
        and any(near(v, x) for k, v in r.items() if k != "value" and not isinstance(v, bool))
    ]


def points_of(lines: list[Any]) -> list[tuple[float, float]]:
    return [(float(x), float(y)) for line in lines for x, y in zip(*line.get_data(), strict=True)]


def open_marker_labels(fig: Any) -> set[str]:
    return {t.get_text() for leg in legends(fig) for t in leg.get_texts()} & {
        intervals.UNCONVERGED_LABEL,
        intervals.BARE_BOTH_LABEL,
    }


@pytest.mark.parametrize("aid", FIGURES)
def test_bars_are_drawn_exactly_for_converged_rows_with_a_finite_interval(
    aid, tables, config
) -> None:
    """Half the flagged rows (by :data:`PATTERN`, then the other half) declared not converged:
    a point that is one of those rows is drawn open, one that is a trusted row has its bar."""
    import matplotlib.pyplot as plt

    if not any(isinstance(r.get("converged"), bool) for r in tables[aid]):
        pytest.skip(f"{aid} has no flagged rows")
    for half in (PATTERN, ~PATTERN):
        rows = reflagged(tables[aid], lambda i, half=half: bool(half[i % len(half)]))
        fig = draw(aid, rows, config)
        drawn_open = 0
        for n, parts in tagged(fig).items():
            for x, y in points_of(parts["sim"]):
                at = rows_at(rows, x, y)
                assert not at or any(trusted(r) for r in at), (
                    f"{aid}: series {n} draws a bar at ({x:g}, {y:g}), a run not converged"
                )
            for x, y in points_of(parts["bare"]):
                at = rows_at(rows, x, y)
                assert not at or any(not trusted(r) for r in at), (
                    f"{aid}: series {n} drops the interval of the trusted row at ({x:g}, {y:g})"
                )
                drawn_open += any(intervals.not_converged(r.get("converged")) for r in at)
        if drawn_open:
            assert open_marker_labels(fig), f"{aid}: no legend entry explains the open marker"
        plt.close(fig)


@pytest.mark.parametrize("aid", FIGURES)
def test_no_figure_draws_an_interval_for_a_run_not_converged(aid, tables, config) -> None:
    """Every flagged row declared not converged: no bar, band or caret is left anywhere."""
    import matplotlib.pyplot as plt

    if not any(isinstance(r.get("converged"), bool) for r in tables[aid]):
        pytest.skip(f"{aid} has no flagged rows")
    fig = draw(aid, reflagged(tables[aid], lambda i: False), config)
    series = tagged(fig)
    for n, parts in series.items():
        assert not points_of(parts["sim"]) and not parts["ci"], (
            f"{aid}: series {n} still draws an interval for a run not converged"
        )
    if any(points_of(parts["bare"]) for parts in series.values()):
        assert open_marker_labels(fig), f"{aid}: no legend entry explains the open marker"
    plt.close(fig)


@pytest.mark.parametrize("aid", FIGURES)
def test_a_table_with_simulated_rows_draws_them_through_the_helper(aid, figures, tables) -> None:
    if not sim_rows(tables[aid]):
        pytest.skip(f"{aid} has no simulated rows")
    series = tagged(figures[aid])
    assert any(points_of(p["sim"] + p["bare"]) for p in series.values()), (
        f"{aid}: simulated rows but no series drawn by lbrepro.plotting.intervals.simulated"
    )


def test_no_artifact_draws_an_interval_by_hand() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{i}"
        for path in sorted((ROOT / "src" / "lbrepro" / "artifacts").rglob("*.py"))
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"\.(errorbar|fill_between|fill_betweenx)\(", line)
    ]
    assert not found, f"draw simulated intervals with lbrepro.plotting.intervals: {found}"


def legends(fig: Any) -> list[Any]:
    return [*fig.legends, *(ax.get_legend() for ax in fig.axes if ax.get_legend())]


@pytest.mark.parametrize("aid", FIGURES)
def test_legends_stay_off_the_data(aid, figures) -> None:
    fig = figures[aid]
    renderer = fig.canvas.get_renderer()
    whole = fig.bbox.padded(1.0)
    for leg in legends(fig):
        box = leg.get_window_extent(renderer).shrunk(0.98, 0.98)
        assert whole.contains(box.x0, box.y0) and whole.contains(box.x1, box.y1), (
            f"{aid}: a legend is cut off by the figure's edge"
        )
        for ax in fig.axes:
            if not ax.get_visible() or not ax.axison:
                continue
            area = ax.get_window_extent(renderer)
            assert not box.overlaps(area), (
                f"{aid}: legend {[t.get_text() for t in leg.get_texts()][:3]} lies on the "
                f"panel '{ax.get_title()}'"
            )


@pytest.mark.parametrize("aid", FIGURES)
def test_text_is_legible_at_the_report_width(aid, figures) -> None:
    from matplotlib.text import Text

    fig = figures[aid]
    width = fig.get_size_inches()[0]
    assert width <= MAX_WIDTH_IN + 1e-9
    texts = [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
    small = {
        t.get_text(): t.get_fontsize()
        for t in texts
        if text_px(t.get_fontsize(), width) < MIN_TEXT_PX
    }
    assert not small, f"{aid}: text under {MIN_TEXT_PX} px at the report's width: {small}"


def test_new_figure_caps_the_width() -> None:
    from lbrepro.plotting.style import new_figure

    fig, _ = new_figure(1, 5, width=20.0)
    assert fig.get_size_inches()[0] == MAX_WIDTH_IN
    assert text_px(RC["legend.fontsize"], MAX_WIDTH_IN) >= MIN_TEXT_PX


def test_an_interval_reaching_zero_runs_off_a_log_axis_and_a_missing_one_is_not_invented():
    from lbrepro.plotting.style import new_figure

    _, axes = new_figure()
    ax = axes[0][0]
    ax.set_yscale("log")
    s = intervals.simulated(ax, [1, 2, 3], [0.5, 0.0061, 0.01], [0.4, -0.0019, None],
                            [0.6, 0.014, None])  # fmt: skip
    assert list(s.points.get_xdata()) == [1, 2] and list(s.bare.get_xdata()) == [3]
    low = {x: lo for x, lo, _ in spans(list(s.interval))}
    assert low[1] == 0.4 and 0 < low[2] < 0.0061  # drawn to a floor, not dropped
    offscale = [a for a in s.interval if a.get_gid().endswith("-offscale")]
    assert list(offscale[0].get_xdata()) == [2]


def test_saved_figures_are_the_same_bytes_every_time(tmp_path: Path) -> None:
    from lbrepro.plotting.style import new_figure, save_figure

    def draw(name: str) -> list[bytes]:
        fig, axes = new_figure()
        intervals.simulated(axes[0][0], [1, 2], [1.0, 2.0], [0.9, 1.8], [1.1, 2.2], label="s")
        intervals.legend(axes[0][0])
        paths = [tmp_path / f"{name}.{ext}" for ext in ("png", "svg", "pdf")]
        save_figure(fig, *paths)
        return [p.read_bytes() for p in paths]

    assert draw("a") == draw("b")


def test_a_band_covers_its_points_and_an_isolated_point_keeps_its_bar() -> None:
    from lbrepro.plotting.style import new_figure

    _, axes = new_figure()
    x = np.arange(10.0)
    low = x - 0.5
    low[[4, 6]] = np.nan  # point 5 is resolved but alone: a band cannot show it
    s = intervals.simulated(axes[0][0], x, x, low, x + 0.5, band=True)
    drawn = spans(list(s.interval))
    for px in s.points.get_xdata():
        assert any(sx == px and lo <= px <= hi for sx, lo, hi in drawn), px
    assert list(s.bare.get_xdata()) == [4.0, 6.0]
    assert any(a.get_gid().endswith("-bars") for a in s.interval)


@pytest.mark.parametrize("flag", [False, np.False_, "False"])
def test_a_point_whose_run_did_not_converge_gets_an_open_marker_and_no_bar(flag) -> None:
    from lbrepro.plotting.style import new_figure

    def draw(converged: list[Any] | None) -> tuple[Any, Any]:
        _, axes = new_figure()
        ax = axes[0][0]
        ax.set_yscale("log")
        # point 2's fallback interval reaches 0: converged, it would run off to a caret
        s = intervals.simulated(ax, [1, 2, 3], [0.5, 0.01, 0.2], [0.4, -0.002, 0.1],
                                [0.6, 0.02, 0.3], converged=converged)  # fmt: skip
        return intervals.legend(ax), s

    for trusted in (None, [True, True, None], [True, "True", True]):
        _, s = draw(trusted)
        assert list(s.points.get_xdata()) == [1, 2, 3] and s.bare is None
        assert sorted({x for x, _, _ in spans(list(s.interval))}) == [1, 2, 3]
        assert any(a.get_gid().endswith("-offscale") for a in s.interval)
    leg, s = draw([True, flag, None])
    assert list(s.points.get_xdata()) == [1, 3] and list(s.bare.get_xdata()) == [2]
    assert sorted({x for x, _, _ in spans(list(s.interval))}) == [1, 3]  # no bar at 2 …
    assert not any(a.get_gid().endswith("-offscale") for a in s.interval)  # … nor a caret
    assert s.bare.get_markerfacecolor() != s.bare.get_markeredgecolor()  # open
    assert [t.get_text() for t in leg.get_texts()] == [intervals.UNCONVERGED_LABEL]


def test_the_open_marker_says_which_points_it_stands_for() -> None:
    from lbrepro.plotting.style import new_figure

    def label(low: list[Any], converged: list[Any] | None) -> list[str]:
        _, axes = new_figure()
        intervals.simulated(axes[0][0], [1, 2], [1.0, 2.0], low, [1.1, 2.2], converged=converged)
        return [t.get_text() for t in intervals.legend(axes[0][0]).get_texts()]

    assert label([0.9, 1.8], [True, True]) == []
    assert label([0.9, None], None) == [intervals.BARE_LABEL]
    assert label([0.9, None], [True, True]) == [intervals.BARE_LABEL]
    assert label([0.9, 1.8], [True, False]) == [intervals.UNCONVERGED_LABEL]
    assert label([None, 1.8], [True, False]) == [intervals.BARE_BOTH_LABEL]
