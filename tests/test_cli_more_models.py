"""`lbrepro solve/simulate whittle|general|affinity`: JSON out, one-line errors."""

from __future__ import annotations

import json

import pytest

from lbrepro.cli import main


def test_solve_whittle_one_server_matches_the_closed_form(run_cli):
    """`solve whittle` at d = 1 agrees with the closed-form index."""
    res = run_cli("solve", "whittle", "--p", "0.3", "--q", "0.5", "--d", "1", "--nmax", "10")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["index"] == pytest.approx(out["closed_form"]["index"], rel=1e-9)


def test_simulate_whittle_policy_cost_has_a_ci(run_cli, agrees, capsys):
    """`simulate whittle` JSQ's cost meets the exact cost of the truncated chain."""
    res = run_cli(
        "simulate",
        "whittle",
        "--p",
        "0.6",
        "--q",
        "0.3,0.6",
        "--d",
        "1,inf",
        "--policy",
        "jsq",
        "--horizon",
        "200000",
        "--seed",
        "3",
    )
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    # The reference: JSQ's exact long-run cost on the truncated chain (solve's policy_cost).
    assert main(["solve", "whittle", "--p", "0.6", "--q", "0.3,0.6", "--d", "1,inf"]) == 0
    exact = json.loads(capsys.readouterr().out)["policy_cost"]["jsq"]
    assert agrees(out["mean_cost"], out["ci"]["mean_cost"], exact)


def test_solve_and_simulate_general(run_cli):
    """`solve general` puts the exact mean field on top, the published form beside it."""
    solved = json.loads(
        run_cli("solve", "general", "--dist", "exp", "--lam", "0.7", "--d", "2").stdout
    )
    # The published closed form Π_2 = ρ^{d+1}/d (models.md §C), under "published"; for
    # exponential service the exact mean field at the top level is u_2 = ρ^{d+1} = 0.343.
    assert solved["published"]["u"][2] == pytest.approx(0.7**3 / 2)
    assert solved["u"][2] == pytest.approx(0.7**3, rel=1e-9)
    # Erlang-2, λ = 0.8, d = 2: .mean_sojourn is the exact mean field, not the published 1.585.
    erl = json.loads(
        run_cli("solve", "general", "--dist", "erlang:2", "--lam", "0.8", "--d", "2").stdout
    )
    assert erl["method"].startswith("exact mean field")
    assert erl["published"]["mean_sojourn"] == pytest.approx(1.585, abs=1e-3)
    assert abs(erl["mean_sojourn"] - erl["published"]["mean_sojourn"]) > 0.05
    # No exact mean field for Lomax service at d = 2: null at the top level, never the CF.
    lomax = json.loads(
        run_cli("solve", "general", "--dist", "lomax:3", "--lam", "0.5", "--d", "2").stdout
    )
    assert lomax["mean_sojourn"] is None and lomax["published"]["u"][0] == 1.0
    res = run_cli(
        "simulate",
        "general",
        "--dist",
        "erlang:2",
        "--lam",
        "0.7",
        "--d",
        "2",
        "--N",
        "300",
        "--horizon",
        "500",
        "--seed",
        "2",
    )
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["N"] == 300 and out["mean_sojourn"] > 1.0


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["solve", "whittle", "--p", "0.95", "--q", "0.5,0.4", "--d", "1,inf"], "p:"),
        (["solve", "whittle", "--p", "0.3", "--q", "1.5", "--d", "1"], "q"),
        (["solve", "whittle", "--p", "0.3", "--q", "0.5", "--d", "0"], "d"),
        (["solve", "general", "--dist", "lomax:0.9", "--lam", "0.5", "--d", "2"], "alpha"),
        (["solve", "general", "--dist", "exp", "--lam", "1.0", "--d", "2"], "lam"),
        (["solve", "general", "--dist", "erlang:0", "--lam", "0.5", "--d", "2"], "m"),
        (
            [
                "simulate",
                "general",
                "--dist",
                "exp",
                "--lam",
                "0.5",
                "--d",
                "2",
                "--N",
                "10",
                "--horizon",
                "10",
                "--start",
                "fixed_point",
            ],
            "start",
        ),
    ],
)
def test_bad_input_one_line_exit_2(cli_refuses, args, needle):
    """Bad whittle and general input: exit code 2 and one line naming the flag."""
    assert needle in cli_refuses(*args)


def test_solve_and_simulate_affinity(run_cli):
    """`solve affinity` finds d1* = 18; `simulate affinity` starts from type II."""
    solved = run_cli("solve", "affinity", "--lam", "0.8", "--d1", "25")
    assert solved.returncode == 0, solved.stderr
    assert json.loads(solved.stdout)["dstar"] == 18
    res = run_cli(
        "simulate",
        "affinity",
        "--lam",
        "0.8",
        "--d1",
        "3",
        "--N",
        "500",
        "--horizon",
        "200",
        "--warmup",
        "50",
        "--start",
        "type2",
        "--seed",
        "3",
    )
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["params"]["start"] == "type2"
    bad = run_cli("solve", "affinity", "--lam", "0.8", "--mu2", "1.2", "--d1", "3")
    assert bad.returncode == 2 and "mu2" in bad.stderr and "Traceback" not in bad.stderr
