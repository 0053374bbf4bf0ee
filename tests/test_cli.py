"""The lbrepro command: JSON out, one clear line and exit code 2 on bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest

from lbrepro.cli import main


def test_list_names_every_registered_artifact(capsys):
    assert main(["list", "--json"]) == 0
    items = json.loads(capsys.readouterr().out)
    ids = {i["id"] for i in items}
    assert {"supermarket-tail", "supermarket-accuracy"} <= ids


def test_solve_supermarket_json(capsys):
    assert main(["solve", "supermarket", "--lam", "0.9", "--d", "2"]) == 0
    out = json.loads(capsys.readouterr().out)
    u = np.array(out["u"])
    k = np.arange(len(u))
    np.testing.assert_allclose(u, 0.9 ** (2.0**k - 1), rtol=1e-12, atol=1e-300)
    assert out["mean_sojourn"] == pytest.approx(out["mean_jobs"] / 0.9)
    assert "refined" in out and "method" in out and "fixed_points" in out


def test_simulate_supermarket_json_has_cis(run_cli, agrees, capsys):
    """`simulate supermarket` prints its keys, and its E[jobs] meets the refined mean field."""
    run_ = run_cli(
        "simulate",
        "supermarket",
        "--lam",
        "0.9",
        "--d",
        "2",
        "--N",
        "200",
        "--horizon",
        "2000",
        "--warmup",
        "200",
        "--seed",
        "3",
    )
    assert run_.returncode == 0, run_.stderr
    out = json.loads(run_.stdout)
    for key in ("u", "mean_jobs", "mean_sojourn", "ci", "N", "seed", "events", "events_per_second"):
        assert key in out, key
    # The reference: the refined mean field at N = 200, E[jobs] ≈ m + c/N (solve's output).
    assert main(["solve", "supermarket", "--lam", "0.9", "--d", "2"]) == 0
    solved = json.loads(capsys.readouterr().out)
    refined = solved["mean_jobs"] + solved["refined"]["mean_jobs_coefficient"] / 200
    assert agrees(out["mean_jobs"], out["ci"]["mean_jobs"], refined, batches=out["batches"])
    assert out["N"] == 200 and out["seed"] == 3


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["solve", "supermarket", "--lam", "1.2", "--d", "2"], "unstable"),
        (["solve", "supermarket", "--lam", "-0.5", "--d", "2"], "lam"),
        (["solve", "supermarket", "--lam", "0.5", "--d", "0"], "d"),
        (["solve", "supermarket", "--lam", "abc", "--d", "2"], "--lam"),
        (["solve", "supermarket", "--d", "2"], "--lam"),
        (["solve", "nosuchmodel", "--lam", "0.5"], "nosuchmodel"),
        (
            ["simulate", "supermarket", "--lam", "0.9", "--d", "2", "--N", "0", "--horizon", "10"],
            "N",
        ),
        (
            [
                "simulate",
                "supermarket",
                "--lam",
                "0.9",
                "--d",
                "2",
                "--N",
                "10",
                "--horizon",
                "10",
                "--warmup",
                "20",
            ],
            "warmup",
        ),
        (
            ["simulate", "supermarket", "--lam", "1.0", "--d", "2", "--N", "10", "--horizon", "10"],
            "unstable",
        ),
        (["solve", "nosuch"], "invalid choice"),
        (
            ["solve", "hetero", "--lam", "1", "--gamma", "0.5,0.6", "--C", "1,2", "--d", "2,2"],
            "gamma",
        ),
        (["solve", "hetero", "--lam", "1", "--gamma", "0.5,0.5", "--C", "0,2", "--d", "2,2"], "C:"),
        (["solve", "hetero", "--lam", "1", "--gamma", "0.5,0.5", "--C", "1,2", "--d", "2"], "d:"),
        (["solve", "hetero", "--lam", "1", "--gamma", "0.5,0.5", "--C", "1,2", "--d", "0,2"], "d:"),
        (
            ["solve", "hetero", "--lam", "1.5", "--gamma", "0.5,0.5", "--C", "1,2", "--d", "2,2"],
            "total capacity",
        ),
        (
            [
                "solve",
                "hetero",
                "--lam",
                "1.3",
                "--gamma",
                "0.8,0.2",
                "--C",
                "1,10",
                "--d",
                "2,2",
                "--policy",
                "sqd",
            ],
            "lambda*=1.25",
        ),
        (
            [
                "simulate",
                "hetero",
                "--lam",
                "1",
                "--gamma",
                "0.5,0.5",
                "--C",
                "1,2",
                "--d",
                "2,2",
                "--N",
                "10",
                "--horizon",
                "10",
                "--no-replace",
            ],
            "replace",
        ),
    ],
)
def test_bad_input_one_line_exit_2(cli_refuses, args, needle):
    """Bad supermarket and hetero input: exit code 2 and one line naming the flag."""
    assert needle in cli_refuses(*args)
