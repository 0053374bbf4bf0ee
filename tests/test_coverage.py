"""Confidence intervals that cover: warm-up, batching, run length and the event budget.

The full coverage measurement on known answers is ``bench/bench_coverage.py`` (its table is
``src/lbrepro/report/coverage.json``); here a cheap case checks the same statistics on
synthetic AR(1) series with a known mean, plus unit tests of each step.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy.signal import lfilter

from lbrepro import cli
from lbrepro.core.errors import ConfigError
from lbrepro.core.stats import (
    Batching,
    batch_means_ci,
    choose_batching,
    fallback_batching,
    merge_batches,
    mser5,
    rare_factor,
    rare_upper,
    unobserved_upper,
    von_neumann,
)
from lbrepro.sim import occupancy
from lbrepro.sim.runlength import (
    DEFAULT_MAX_EVENTS,
    check_budget,
    event_budget,
    max_events,
    run_micro_batches,
)


def ar1(rng: np.random.Generator, n: int, phi: float, x0: float = 0.0) -> np.ndarray:
    """x_t = φ x_{t−1} + e_t, e_t standard normal, stationary mean 0, started at x0."""
    return lfilter([1.0], [1.0, -phi], rng.normal(size=n), zi=[phi * x0])[0]


def test_ar1_intervals_cover_at_the_nominal_rate():
    """200 AR(1) series (φ = 0.8, integrated autocorrelation time 9) of 2560 micro-batches,
    started far from the mean: MSER-5 + von Neumann batching + AR(1)-corrected t cover 0."""
    rng = np.random.default_rng(20261201)
    hits, starts = 0, []
    for _ in range(200):
        x = ar1(rng, 2560, 0.8, x0=100.0)
        b = choose_batching(x)
        est = batch_means_ci(b.merge(x), ar1=True)
        hits += est.low <= 0.0 <= est.high
        starts.append(b.start)
    assert hits / 200 >= 0.92
    assert np.mean(starts) > 20  # the transient (100·φ^t, ~20 steps) is cut away


def _fallback_coverage(phi: float, reps: int, n: int = 1280) -> tuple[float, float, int]:
    """Coverage of 0 by the plain and the fallback 95% intervals of AR(1) runs that fail the
    test at every batching of >= 20 batches (the others are skipped), and their number."""
    rng = np.random.default_rng(20261202)
    plain, wide = [], []
    for _ in range(reps):
        x = ar1(rng, n, phi)
        b = choose_batching(x)
        if b.converged:
            continue
        f = fallback_batching(x, b)
        assert not f.converged  # never trusted: the verdicts treat the run as invalid
        for batching, hits in ((b, plain), (f, wide)):
            est = batching.ci(batching.merge(x), ar1=True)
            hits.append(abs(float(est.mean)) <= float(est.half_width))
    return float(np.mean(plain)), float(np.mean(wide)), len(wide)


def test_fallback_interval_of_a_slowly_mixing_run_is_wider_and_covers_better():
    """AR(1) with φ = 0.995 (6 correlation times in the run): the batch means stay correlated
    at every batching of >= 20; the fallback's 10 large batches cover more often."""
    plain, wide, n = _fallback_coverage(0.995, 150)
    assert n > 140
    assert wide >= plain + 0.02 and wide >= 0.85


def test_fallback_keeps_the_mean_and_takes_the_spread_from_the_groups():
    rng = np.random.default_rng(7)
    x = ar1(rng, 1280, 0.995)
    b = choose_batching(x)
    assert not b.converged
    f = fallback_batching(x, b)
    assert f.groups == 10 and f.effective_batches == 10 and f.batches == b.batches
    plain = batch_means_ci(b.merge(x))
    wide = f.ci(f.merge(x))
    assert wide.mean == pytest.approx(plain.mean) and wide.batches == 10
    assert not wide.converged and float(wide.half_width) > float(plain.half_width)
    # A floor of 10 batches (the quick profile) falls back to 5 groups; too few: no fallback.
    few = Batching(b.start, b.group * 2, 11, False, 0.0, b.mser_start)
    assert fallback_batching(x, few).groups == 5
    tiny = Batching(b.start, b.group * 4, 6, False, 0.0, b.mser_start)
    assert fallback_batching(x, tiny) == tiny


def test_fallback_does_not_change_the_run_length():
    """The extension decisions (and so events and streams) are those of the batch test alone:
    a run that stays correlated doubles ``extend`` times, then takes the fallback."""
    rng = np.random.default_rng(8)
    series = ar1(rng, 4 * 1280, 0.995)
    recorded: list[float] = []

    def step(t_end: float) -> int:
        recorded.append(series[len(recorded)])
        return 1

    run = run_micro_batches(
        step,
        lambda: np.array(recorded),
        horizon=1280.0,
        warmup=0.0,
        min_batches=20,
        events_per_time=1.0,
        extend=2,
    )
    assert run.doublings == 2 and run.micro == 4 * 1280
    # ~25 correlation times (1/(1 − φ) = 200 micro-batches): slow, yet its conservative
    # interval decides (the relaxation check passes).
    assert run.batching.groups == 10 and run.batches == 10 and run.slow
    assert run.converged and not run.unusable


def _slow_run(series: np.ndarray, **kw: object):
    """A run of ``series`` (one value per micro-batch) that takes no doubling."""
    recorded: list[float] = []

    def step(t_end: float) -> int:
        recorded.append(series[len(recorded)])
        return 1

    return run_micro_batches(
        step,
        lambda: np.array(recorded),
        horizon=float(series.size),
        warmup=0.0,
        min_batches=20,
        events_per_time=1.0,
        extend=0,
        **kw,
    )


def test_a_slow_run_decides_unless_it_fails_the_relaxation_check():
    """The rule for a run whose batch means stay correlated: its conservative interval decides
    (converged) unless it spans too few relaxation times — summed over servers (N·T/τ), or
    of its own measured correlation time — or its stated relaxation time is infinite."""
    rng = np.random.default_rng(9)
    long = _slow_run(ar1(rng, 1280, 0.99))  # ~11 correlation times of 100 micro-batches
    assert long.slow and long.converged
    for kw, why in (
        ({"relaxation": float("inf"), "servers": 10}, "infinite relaxation time"),
        ({"relaxation": 100.0, "servers": 10}, "N·T/τ = 128 relaxation times"),
        ({"relaxation": 1.0, "servers": 10}, ""),
    ):
        run = _slow_run(ar1(np.random.default_rng(9), 1280, 0.99), **kw)
        assert run.slow and run.converged is (not why) and why in run.unusable
    # Half a period of a slow oscillation: far less than one correlation time.
    wave = np.sin(np.linspace(0.0, np.pi, 1280)) + 0.01 * rng.normal(size=1280)
    short = _slow_run(wave)
    assert short.slow and not short.converged and "measured correlation times" in short.unusable
    # The rule reads the statistic, never the flag alone: at MIN_CORRELATION_TIMES = 0 the
    # same series decides.
    from lbrepro.sim import runlength

    floor = runlength.MIN_CORRELATION_TIMES
    try:
        runlength.MIN_CORRELATION_TIMES = 0.0
        assert _slow_run(wave).converged
    finally:
        runlength.MIN_CORRELATION_TIMES = floor


def test_a_fraction_never_or_rarely_observed_gets_an_interval_that_covers():
    """The issue's x(2, 1) ≈ 1.7·10⁻⁶, never seen: [0, 0] became [0, rule of three]."""
    never = np.zeros((20, 1))
    est = batch_means_ci(never, lower=0.0, upper=1.0, rare=True)
    assert est.low[0] == 0.0 and est.high[0] == pytest.approx(1 - 0.025 ** (1 / 20))
    assert float(est.half_width[0]) > 0
    # Without rare=True (a quantity exact by construction) the width stays zero.
    assert batch_means_ci(never, lower=0.0, upper=1.0).high[0] == 0.0
    assert est.high[0] == pytest.approx(float(rare_upper(0, 20))) == unobserved_upper(20)
    # Seen in 2 of 20 batches: one-sided, up to rare_factor(2) times the estimate.
    seen = never.copy()
    seen[[3, 11], 0] = [2e-4, 1e-4]
    est = batch_means_ci(seen, lower=0.0, upper=1.0, rare=True)
    assert est.low[0] == 0.0
    assert est.high[0] >= float(rare_factor(2)) * 1.5e-5 > batch_means_ci(seen).high[0]
    # Seen in every batch, effective count ~60: the t interval, its upper end moved up a
    # little for the skewness; at a count of ~5000 the t interval itself.
    rng = np.random.default_rng(9)
    often = rng.uniform(0, 1e-3, size=(20, 1))
    plain = batch_means_ci(often, lower=0.0, upper=1.0).high[0]
    skewed = batch_means_ci(often, lower=0.0, upper=1.0, rare=True).high[0]
    assert plain < skewed < 1.05 * plain
    common = rng.uniform(0.49, 0.51, size=(20, 1))
    assert batch_means_ci(common, lower=0.0, upper=1.0, rare=True).high[0] == pytest.approx(
        batch_means_ci(common, lower=0.0, upper=1.0).high[0], rel=1e-3
    )
    # Coverage: a state seen in a batch with probability q, with an exponential size when
    # seen; the rare intervals cover its mean in >= 95% of 400 runs at q = 0.02 to 0.25.
    rng = np.random.default_rng(10)
    for q in (0.02, 0.05, 0.15, 0.25):
        hits = 0
        for _ in range(400):
            y = rng.binomial(1, q, size=(20, 1)) * rng.exponential(1e-4, size=(20, 1))
            e = batch_means_ci(y, lower=0.0, upper=1.0, rare=True)
            hits += e.low[0] <= q * 1e-4 <= e.high[0]
        assert hits / 400 >= 0.95, q


def test_mser5_cuts_an_obvious_transient():
    rng = np.random.default_rng(1)
    t = np.arange(2000)
    x = 10.0 * np.exp(-t / 50.0) + rng.normal(0.0, 0.5, size=t.size)
    d = mser5(x)
    assert d % 5 == 0
    assert 150 <= d <= 1000  # 10·e^{-3} = 0.5: the transient is gone by ~150
    assert mser5(rng.normal(size=2000)) < 200  # stationary: little or nothing cut
    assert mser5(np.arange(7.0)) == 0  # too short to judge


def test_reblocking_gives_correlated_series_larger_batches():
    rng = np.random.default_rng(2)
    iid = choose_batching(rng.normal(size=2560))
    corr = choose_batching(ar1(rng, 2560, 0.95))
    assert iid.converged and iid.group <= 2
    assert corr.group >= 8 * iid.group
    assert corr.batches >= 20
    # Single micro-batches fail the test; the chosen batching passed it (or is flagged).
    x = ar1(rng, 2560, 0.9)
    assert von_neumann(x)[1] < 1e-6
    b = choose_batching(x)
    assert b.p_value > 0.1 if b.converged else b.batches >= 20


def test_batching_not_converged_is_flagged_and_warmup_is_a_minimum():
    rng = np.random.default_rng(3)
    slow = ar1(rng, 1280, 0.999)
    b = choose_batching(slow, min_start=100)
    assert not b.converged and b.batches >= 20
    assert b.start >= 100
    with pytest.raises(ConfigError, match="horizon"):
        choose_batching(slow[:30])


def test_merge_batches_drops_the_leading_remainder():
    b = Batching(start=1, group=3, batches=3, converged=True, p_value=1.0, mser_start=0)
    x = np.arange(10.0)
    np.testing.assert_allclose(merge_batches(x, b), [2.0, 5.0, 8.0])
    w = np.ones(10)
    w[1] = 2.0
    np.testing.assert_allclose(b.merge(x, w)[0], (2 * 1 + 2 + 3) / 4)


def test_intervals_respect_the_range_of_the_quantity():
    rng = np.random.default_rng(4)
    rare = rng.binomial(1, 0.1, size=(20, 3)) * 1e-3  # fractions near 0
    est = batch_means_ci(rare, lower=0.0, upper=1.0)
    assert np.all(np.asarray(est.low) >= 0.0) and np.all(np.asarray(est.high) <= 1.0)
    near_one = 1.0 - rare
    est = batch_means_ci(near_one, lower=0.0, upper=1.0)
    assert np.all(np.asarray(est.high) <= 1.0)
    # Unclipped, the same data give negative lower bounds: the clipping is doing something.
    assert np.any(np.asarray(batch_means_ci(rare).low) < 0.0)


def test_simulated_tail_fractions_have_no_negative_bounds():
    """The issue's case, shortened: u_k at λ = 0.95, d = 1, N = 100."""
    r = occupancy.simulate_occupancy(lam=0.95, N=100, d=1, horizon=2000, warmup=200, seed=5)
    assert np.all(r.u_all_ci_low >= 0.0) and np.all(r.u_all_ci_high <= 1.0)
    assert r.warmup_used >= 200
    # 20 batches, or the 10 large ones of the conservative interval of a run that stayed
    # correlated (converged if it passed the relaxation check).
    run = r.to_dict()
    assert r.batches >= 20 or r.batches == 10
    assert r.converged or (r.batches == 10 and run["converged"] is False)
    assert r.to_dict()["converged"] in (True, False)


def test_same_seed_same_numbers_and_extension_is_bounded():
    kw = {"lam": 0.95, "N": 1, "d": 1, "horizon": 3000.0, "warmup": 100.0, "seed": 6}
    a = occupancy.simulate_occupancy(**kw)
    b = occupancy.simulate_occupancy(**kw)
    assert a.to_dict() | {"elapsed": 0, "events_per_second": 0} == b.to_dict() | {
        "elapsed": 0,
        "events_per_second": 0,
    }
    # 3000 time units are ~4 relaxation times of an M/M/1 queue at ρ = 0.95: the run doubles.
    assert a.horizon in (3000.0, 6000.0, 12000.0)
    with event_budget(None, extend=0):
        c = occupancy.simulate_occupancy(**kw)
    assert c.horizon == 3000.0
    assert a.horizon > 3000.0 or a.converged


def test_event_budget_refuses_and_names_the_parameter():
    assert max_events() == DEFAULT_MAX_EVENTS
    with pytest.raises(ConfigError, match=r"max_events.*1e\+12 events"):
        check_budget(1e12, what="this run")
    with pytest.raises(ConfigError, match="max_events"):
        occupancy.simulate_occupancy(lam=0.9, N=1000, d=2, horizon=1e12, warmup=0, seed=1)
    with event_budget(1e13):
        check_budget(1e12, what="this run")
    with event_budget(10.0), pytest.raises(ConfigError, match="max_events"):
        occupancy.simulate_occupancy(lam=0.9, N=10, d=2, horizon=100, warmup=0, seed=1)
    with pytest.raises(ConfigError, match="max_events"), event_budget(-1.0):
        pass


def test_cli_refuses_a_huge_run_and_accepts_max_events(capsys):
    code = cli.main(
        ["simulate", "supermarket", "--lam", "0.9", "--d", "2", "--N", "1000", "--horizon", "1e12"]
    )
    err = capsys.readouterr().err
    assert code != 0 and "max_events" in err and "--max-events" in err and "1.8e+15" in err
    code = cli.main(
        ["simulate", "supermarket", "--lam", "0.9", "--d", "2", "--N", "10", "--horizon", "200",
         "--max-events", "1e3"]
    )  # fmt: skip
    assert code != 0 and "max_events" in capsys.readouterr().err


def test_ctrl_c_stops_lbrepro_simulate_with_exit_130(monkeypatch, capsys):
    """The kernels return after each micro-batch; KeyboardInterrupt then surfaces cleanly."""

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(occupancy, "_run", interrupted)
    code = cli.main(
        ["simulate", "supermarket", "--lam", "0.9", "--d", "2", "--N", "10", "--horizon", "100"]
    )
    err = capsys.readouterr().err
    assert code == 130
    assert err.strip() == "lbrepro: interrupted"


def bench_cases() -> list[dict]:
    """The cases of bench/bench_coverage.py (run nothing)."""
    import importlib.util

    path = Path(__file__).resolve().parent.parent / "bench" / "bench_coverage.py"
    spec = importlib.util.spec_from_file_location("bench_coverage", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.cases()


def test_coverage_record_is_committed_and_measures_the_levels_in_use():
    """bench_coverage's record: >= 100 replications per case (>= 30 for a case that caps
    them for cost: a loaded 2-core machine measures it in minutes), the nominal and the ×1.3
    and ×2 widened levels, slow-mixing cases among them; the main quantity of every case
    covers at >= 93% over its converged runs — the ones the verdicts decide on, slowly mixing
    runs' conservative intervals included — and a case whose runs end not converged has its
    fallback intervals (all runs) measured too."""
    path = Path(__file__).resolve().parent.parent / "src" / "lbrepro" / "report" / "coverage.json"
    record = json.loads(path.read_text(encoding="utf-8"))
    assert record["commit"] and record["date"] and record["produced_by"]
    assert [lv["name"] for lv in record["levels"]] == ["nominal", "x1.3", "x2"]
    names = {c["case"] for c in record["cases"]}
    assert {"mm1-rho0.5", "mm1-rho0.9", "mm1-rho0.99", "sm-d1-rho0.9-N200-quick"} <= names
    assert sum(c["slow_mixing"] for c in record["cases"]) >= 3
    capped = {c["case"]: c.get("reps") for c in bench_cases()}
    for c in record["cases"]:
        assert c["replications"] >= min(100, capped.get(c["case"]) or 100) >= 30
        main = c["quantities"][0]["levels"]
        assert set(main) == {"nominal", "x1.3", "x2"}
        trusted = main["nominal"]["converged_runs"]
        if trusted["n"] >= 50 and not c.get("note"):
            assert trusted["coverage"] >= record["required"] >= 0.93, c["case"]
        # A case that fails says what is known about it (the failure stays in the record).
        assert c["pass"] or c.get("note"), c["case"]
        if c["converged_fraction"] < 1:
            assert main["nominal"]["all_runs"]["n"] > trusted["n"]


def test_fixed_point_start_is_sampled_not_truncated():
    """ρ = 0.99, d = 1: the rounded fixed point held 90.6 jobs per server; the sampled start
    is the exact stationary law (independent geometric queues), mean 99."""
    from lbrepro.models import supermarket

    starts = [supermarket.initial_counts(0.99, 1, 1000, seed=s)[0] for s in range(20)]
    assert all(c.sum() == 1000 for c in starts)
    mean = np.mean([(c * np.arange(c.size)).sum() / 1000 for c in starts])
    assert abs(mean - 99.0) < 3.0  # sd of the mean of 20 000 geometric queues ≈ 0.7
    rounded = supermarket.initial_counts(0.99, 1, 1000)[0]
    assert (rounded * np.arange(rounded.size)).sum() / 1000 < 91.0
    again = supermarket.initial_counts(0.99, 1, 1000, seed=3)[0]
    np.testing.assert_array_equal(again, starts[3])  # the seed fixes the start


def test_sigint_stops_a_run_cleanly_at_the_next_micro_batch(monkeypatch):
    """A real SIGINT during a run: the handler only sets a flag, the loop raises
    KeyboardInterrupt after the current micro-batch (not inside numba), and the previous
    handler is restored."""
    import os
    import signal

    real = occupancy._run
    calls: list[int] = []

    def kernel(*args):
        calls.append(1)
        if len(calls) == 3:
            os.kill(os.getpid(), signal.SIGINT)
        return real(*args)

    monkeypatch.setattr(occupancy, "_run", kernel)
    # A process started in the background by a non-interactive shell (as CI may be) inherits
    # SIGINT ignored, and the simulator rightly leaves an ignored SIGINT alone: give this test
    # the handler an interactive Python has.
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        before = signal.getsignal(signal.SIGINT)
        with pytest.raises(KeyboardInterrupt):
            occupancy.simulate_occupancy(lam=0.5, N=10, d=2, horizon=100.0, warmup=0.0, seed=1)
        assert len(calls) == 3
        assert signal.getsignal(signal.SIGINT) is before
    finally:
        signal.signal(signal.SIGINT, inherited)


@pytest.mark.parametrize(
    "factors, doublings, looks",
    [
        ([1.0], 0, 1),  # decided at once: not extended, one look
        ([1.7, 1.0], 1, 2),  # within one doubling: doubled once, decided
        ([3.0, 1.5, 1.0], 2, 3),  # within two: doubled twice
        ([5.0], 0, 1),  # beyond the two doublings left: not extended at all
        ([float("inf")], 0, 1),  # no length decides it (an unobservable component)
        ([1.5, 1.5, 1.5], 2, 3),  # never decided: stops at extend, looked at each time
    ],
)
def test_a_run_doubles_until_its_claim_is_decided(factors, doublings, looks):
    """``needed`` (the run-length factor that would decide the run's claims) drives the
    doubling of a converged run: only while the factor is above 1 and within reach."""
    series = np.random.default_rng(5).normal(size=8 * 1280)
    recorded: list[float] = []
    asked: list[float] = []

    def step(t_end: float) -> int:
        recorded.append(series[len(recorded)])
        return 1

    def needed(so_far) -> float:
        assert so_far.converged and so_far.horizon == len(recorded)
        asked.append(so_far.horizon)
        return factors[min(len(asked), len(factors)) - 1]

    run = run_micro_batches(
        step,
        lambda: np.array(recorded),
        horizon=1280.0,
        warmup=0.0,
        min_batches=20,
        events_per_time=1.0,
        extend=2,
        needed=needed,
    )
    assert run.doublings == doublings and run.looks == looks and run.converged
    assert run.horizon == 1280.0 * 2**doublings
    assert asked == [1280.0 * 2**i for i in range(looks)]
