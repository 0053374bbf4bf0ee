"""``lbrepro diff`` and the seed table, on synthetic result trees in the checks.json format."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from lbrepro.cli import main
from lbrepro.core.claims import (
    NOT_REPRODUCED,
    REPRODUCED,
    UNDECIDED,
    Claim,
    consistency,
    diagnostic,
    make_claim,
    write_checks,
)
from lbrepro.core.verdicts import Verdict
from lbrepro.report.diff import DiffError, diff_trees, load_tree, seed_table, statistic_moved
from lbrepro.report.render import seed_stability


def verdict(outcome: str, measured: float, half: float = 0.01) -> Verdict:
    return Verdict(
        outcome, measured, "0.5", "2% relative", interval=(measured - half, measured + half)
    )


def claim(text: str, outcome: str, measured: float, half: float = 0.01, **kw: object) -> Claim:
    return make_claim(
        text,
        verdict(outcome, measured, half),
        control=("near miss", verdict(NOT_REPRODUCED, 0.4)),
        distance="3 margins",
        **kw,
    )


def tree(root: Path, claims: dict[str, list[Claim]]) -> Path:
    """A run folder with results/<slug>/<artifact>.checks.json for each artifact."""
    for artifact, items in claims.items():
        write_checks(items, root / "results" / "toy" / f"{artifact}.checks.json")
    return root


def base_claims() -> list[Claim]:
    return [
        claim("stays", REPRODUCED, 0.50),
        claim("flips", REPRODUCED, 0.50),
        claim("drifts", REPRODUCED, 0.50),
        claim("wobbles", REPRODUCED, 0.50),
        claim("gone", REPRODUCED, 0.50),
        consistency("identity", verdict(REPRODUCED, 1.0)),
    ]


def other_claims() -> list[Claim]:
    return [
        claim("stays", REPRODUCED, 0.50),
        claim("flips", NOT_REPRODUCED, 0.30),
        claim("drifts", REPRODUCED, 0.53),  # outside both ±0.01 intervals
        claim("wobbles", REPRODUCED, 0.505),  # inside the other's interval
        claim("new", UNDECIDED, 0.50),
        consistency("identity", verdict(REPRODUCED, 1.0)),
    ]


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path]:
    a = tree(tmp_path / "a", {"toy-tail": base_claims()})
    b = tree(tmp_path / "b", {"toy-tail": other_claims()})
    return a, b


def test_diff_finds_moves_and_one_sided_claims(runs: tuple[Path, Path]) -> None:
    a, b = runs
    diff = diff_trees(load_tree(a), load_tree(b))
    assert diff["compared"] == 5
    flip = {"key": ("toy-tail", "flips", 0), "a": REPRODUCED, "b": NOT_REPRODUCED}
    assert diff["status"] == [flip]
    assert [s["key"] for s in diff["statistic"]] == [("toy-tail", "drifts", 0)]
    assert diff["only_a"] == [("toy-tail", "gone", 0)]
    assert diff["only_b"] == [("toy-tail", "new", 0)]


def test_identical_runs_do_not_differ(runs: tuple[Path, Path]) -> None:
    a, _ = runs
    diff = diff_trees(load_tree(a), load_tree(a / "results"))  # the results dir itself works
    assert not (diff["status"] or diff["statistic"] or diff["only_a"] or diff["only_b"])


def test_statistic_moved_rules() -> None:
    a = {"measured": 1.0, "interval": [0.9, 1.1]}
    assert not statistic_moved(a, {"measured": 1.05, "interval": [1.04, 1.06]})
    assert statistic_moved(a, {"measured": 1.2, "interval": [1.15, 1.25]})
    # Exact values (no interval): any change beyond rounding moves.
    assert statistic_moved({"measured": 1.0}, {"measured": 1.001})
    assert not statistic_moved({"measured": 1.0}, {"measured": 1.0 + 1e-13})
    # A statistic that became null has moved.
    assert statistic_moved({"measured": 1.0}, {"measured": None})


def test_cli_diff_prints_moves_and_a_summary(
    runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = runs
    assert main(["diff", str(a), str(b)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert "status     toy-tail: flips: reproduced -> not reproduced" in lines
    assert any(line.startswith("statistic  toy-tail: drifts: 0.5 -> 0.53") for line in lines)
    assert f"only in {a}  toy-tail: gone" in lines and f"only in {b}  toy-tail: new" in lines
    assert lines[-1] == (
        f"5 claims in both: 1 changed status, 1 moved by more than their interval; "
        f"1 only in {a}, 1 only in {b}"
    )


@pytest.mark.parametrize("bad", ["missing", "empty", "file", "garbled"])
def test_cli_diff_bad_paths_one_line_exit_2(
    runs: tuple[Path, Path], tmp_path: Path, bad: str, capsys: pytest.CaptureFixture[str]
) -> None:
    a, _ = runs
    path = tmp_path / bad
    if bad == "empty":
        path.mkdir()
    elif bad == "file":
        path.write_text("x")
    elif bad == "garbled":
        (path / "results" / "toy").mkdir(parents=True)
        (path / "results" / "toy" / "x.checks.json").write_text("{not json")
    assert main(["diff", str(a), str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("lbrepro: error: ") and err.count("\n") == 1, err
    assert str(path) in err
    with pytest.raises(DiffError):
        load_tree(path)


def test_seed_table_counts_flips_undecided_and_nulls(tmp_path: Path) -> None:
    seeds = {
        0: [claim("steady", REPRODUCED, 0.5), claim("edge", REPRODUCED, 0.5)],
        1: [claim("steady", REPRODUCED, 0.5), claim("edge", UNDECIDED, 0.5)],
        2: [claim("steady", REPRODUCED, 0.5), claim("edge", NOT_REPRODUCED, 0.3)],
    }
    runs = {s: load_tree(tree(tmp_path / f"s{s}", {"toy-tail": c})) for s, c in seeds.items()}
    # A verdict without a statistic (old or broken output) and a diagnostic, in seed 2 only.
    broken = {"claim": "null", "outcome": NOT_REPRODUCED, "status": NOT_REPRODUCED}
    runs[2][("toy-tail", "null")] = broken | {"measured": None, "kind": "verdict"}
    diag = diagnostic("work conservation", verdict(REPRODUCED, 0.9), runs=["p"]).to_dict()
    runs[2][("toy-tail", "diag")] = diag
    table = seed_table(runs)
    assert table["seeds"] == [0, 1, 2]
    assert (
        table["flips"] == 1 and table["flips_paper"] == 1 and table["moved"] == 3
    )  # edge; null and diag (seed 2 only)
    rows = {r["claim"]: r for r in table["rows"]}
    assert rows["edge"]["flip"] and not rows["steady"]["flip"] and rows["steady"]["stable"]
    assert rows["edge"]["statuses"] == [REPRODUCED, UNDECIDED, NOT_REPRODUCED]
    assert not rows["diag"]["verdict"]
    assert table["verdicts"] == 7 and table["null_statistics"] == 1
    assert table["undecided_fraction"] == pytest.approx(1 / 7)
    assert [p["undecided"] for p in table["per_seed"]] == [0, 1, 0]
    assert [p["verdicts"] for p in table["per_seed"]] == [2, 2, 3]


def test_bench_seeds_record_is_what_the_report_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """bench_seeds tabulates existing seed folders into the record the Methods section reads."""
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "bench"))
    bench = importlib.import_module("bench_seeds")
    for seed, outcome in ((0, REPRODUCED), (1, NOT_REPRODUCED)):
        tree(tmp_path / "work" / f"seed{seed}", {"toy-tail": [claim("edge", outcome, 0.5)]})
    out, md = tmp_path / "seeds.json", tmp_path / "seeds.md"
    argv = ["--tabulate-only", "--seeds", "0", "1", "--work", str(tmp_path / "work")]
    assert bench.main([*argv, "--out", str(out), "--markdown", str(md)]) == 1  # a flip
    shown = seed_stability(out)
    assert shown is not None and shown["flips"] == 1 and shown["seeds"] == ["0", "1"]
    assert shown["moved"][0]["statuses"] == [REPRODUCED, NOT_REPRODUCED]
    assert "| toy-tail | edge **(flip)** | reproduced | not reproduced |\n" in md.read_text()
