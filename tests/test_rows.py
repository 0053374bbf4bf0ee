"""The tidy-row vocabulary (lbrepro.core.rows): estimates become rows and back exactly, and a
table that breaks the vocabulary fails the job that writes or collects it, naming the
artifact, the row and the column."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from lbrepro.core.io import write_table
from lbrepro.core.rows import COLUMNS, TableError, check_table, estimate_row, table_problems
from lbrepro.core.stats import Estimate
from lbrepro.core.verdicts import estimate
from lbrepro.pipeline import collect_table

SIM = {"artifact": "toy", "point": "p1", "method": "sim", "quantity": "u"}


def test_an_estimate_becomes_a_row_and_reads_back_the_same():
    est = Estimate(0.25, 0.2, 0.3, 0.05, 20, N=100, seed=12345, converged=False)
    row = SIM | estimate_row(est)
    assert set(row) >= {"value", "ci_low", "ci_high", "N", "seed", "batches", "converged"}
    assert dataclasses.astuple(estimate(row)) == pytest.approx(dataclasses.astuple(est))
    assert estimate(row).converged is False and estimate(row).batches == 20
    # Clipped at the quantity's range (a fraction near 0): the unclipped side keeps the width.
    clipped = Estimate(0.01, 0.0, 0.06, 0.05, 10, N=100, seed=1)
    assert estimate(SIM | estimate_row(clipped)).half_width == pytest.approx(0.05)
    assert table_problems([SIM | estimate_row(est)], "toy") == []


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"converged": None}, "no 'converged'"),
        ({"batches": None}, "no 'batches'"),
        ({"N": None}, "no 'N'"),
        ({"ci_high": None}, "needs both 'ci_low' and 'ci_high'"),
        ({"ci_low": None, "ci_high": None}, "'sim' value without its interval"),
        ({"converged": "yes"}, "'converged' = 'yes' is not a flag"),
        ({"batches": 2.5}, "'batches' = 2.5 is not an integer"),
        ({"ci_low": 0.4}, "'ci_low' 0.4 > 'ci_high' 0.3"),
        ({"method": "guess"}, "method 'guess' is none of"),
        ({"quantity": ""}, "no 'quantity'"),
        ({"artifact": "other"}, "artifact 'other', not 'toy'"),
    ],
)
def test_a_row_that_breaks_the_vocabulary_is_named(change, says):
    good = SIM | estimate_row(Estimate(0.25, 0.2, 0.3, 0.05, 20, N=100, seed=7))
    rows = [good, good | change]
    problems = table_problems(rows, "toy")
    assert len(problems) == 1 and problems[0].startswith("toy: row 2 (p1, "), problems
    assert says in problems[0], problems
    with pytest.raises(TableError, match=r"results/toy\.csv: toy: row 2"):
        check_table(rows, "toy", "results/toy.csv")


def test_exact_values_and_diffusion_limits_need_no_system_size():
    assert table_problems([SIM | {"method": "cf", "value": 0.25}], "toy") == []
    # An infinite value (a mean sojourn time at E[X²] = ∞) is written "inf".
    assert table_problems([SIM | {"method": "cf", "value": "inf"}], "toy") == []
    assert "'value' = 'many'" in table_problems([SIM | {"method": "cf", "value": "many"}], "toy")[0]
    sde = SIM | {"method": "sde"} | estimate_row(Estimate(1.0, 0.9, 1.1, 0.1, 40, seed=3))
    assert sde["N"] is None and table_problems([sde], "toy") == []
    # A diverged run has no value, so no interval either.
    assert table_problems([SIM | {"value": None, "diverged": True}], "toy") == []


def test_collect_fails_on_a_table_without_converged(tmp_path):
    """A job table whose simulated row has no `converged` (hetero-tail once wrote none, and
    it read as converged) is not collected: the job fails, naming artifact, row and column."""
    row = SIM | estimate_row(Estimate(0.25, 0.2, 0.3, 0.05, 20, N=100, seed=7))
    write_table([row | {"converged": None}], tmp_path / "j1.csv")
    with pytest.raises(TableError, match=r"toy: row 1 \(p1, sim, u\): .*no 'converged'"):
        collect_table([tmp_path / "j1.csv"], tmp_path / "toy.csv")
    assert not (tmp_path / "toy.csv").exists()


def test_every_column_is_declared_with_a_meaning_and_a_kind():
    for name, column in COLUMNS.items():
        assert column.meaning and column.kind in {"text", "number", "integer", "flag", "id"}, name


def test_an_infinite_value_survives_collection(tmp_path):
    """A job writes an infinite value as "inf"; collecting reads it back as a float inf and
    writes the table again: the cell still says "inf" (it used to come out empty)."""
    from lbrepro.core.io import read_table, write_table

    first, second = tmp_path / "job.csv", tmp_path / "table.csv"
    write_table([{"value": math.inf, "low": -math.inf, "nan": math.nan, "x": 1.5}], first)
    rows = read_table(first)
    assert {k: rows[0][k] for k in ("value", "low", "nan", "x")} == {
        "value": math.inf,
        "low": -math.inf,
        "nan": None,
        "x": 1.5,
    }
    write_table(rows, second)
    again = second.read_text().splitlines()
    cells = dict(zip(again[0].split(","), again[1].split(","), strict=True))
    assert (cells["value"], cells["low"], cells["nan"], cells["x"]) == ("inf", "-inf", "", "1.5")


def test_a_summary_shows_no_interval_for_a_run_not_converged():
    """Summary cells: value [low, high] (or ± half-width) for a converged run; the value alone,
    saying why, for one whose interval is the untrusted fallback."""
    from lbrepro.core.rows import NO_CI, interval_text, not_converged, pm_text

    row = {"value": 1.25, "ci_low": 1.0, "ci_high": 1.5, "converged": True}
    assert interval_text(row, ".2f") == "1.25 [1.00, 1.50]"
    assert pm_text(row, ".2f") == "1.25 ± 0.2"
    for flag in (False, "False", np.False_):
        bad = row | {"converged": flag}
        assert not_converged(flag)
        assert interval_text(bad, ".2f") == pm_text(bad, ".2f") == f"1.25 ({NO_CI})"
    assert not not_converged(None) and not not_converged(True) and not not_converged(0)


@pytest.mark.parametrize(
    "flag", [True, False, "False", "false", " FALSE ", np.False_, np.True_, 0, 1, None]
)
def test_a_verdict_reads_converged_by_the_one_rule(flag):
    """``verdicts.estimate`` reads the flag by ``rows.not_converged``, never a rule of its own
    (it once did: 0 read as not converged there and as converged here)."""
    from lbrepro.core.rows import not_converged

    row = {"value": 1.0, "ci_low": 0.9, "ci_high": 1.1, "batches": 20, "converged": flag}
    if flag is None:
        with pytest.raises(ValueError, match="converged"):
            estimate(row)
        return
    assert estimate(row).converged is (not not_converged(flag))


def test_pm_writes_value_and_half_width_as_the_hand_written_f_strings_did():
    """``pm`` is the one "±" formatter; its layouts give the bytes the artifacts' own
    f-strings gave (their checks and summaries are unchanged)."""
    from lbrepro.core.rows import pm

    v, h = -0.012345678, 0.00098765
    assert pm(v, h, "+.2e", ".1e") == f"{v:+.2e} ± {h:.1e}"
    assert pm(v, h, "+.2e", ".1e", "tight") == f"{v:+.2e}±{h:.1e}"
    assert pm(v, h, "+.4g", ".2g", "paren") == f"{v:+.4g} (±{h:.2g})"
    assert pm(2, 0.5, "", "") == f"{2} ± {0.5}"
    assert pm(np.float64(v), np.float64(h), ".4g", ".1g") == f"{v:.4g} ± {h:.1g}"
