"""`lbrepro solve/simulate hetero`: JSON out with the mean field beside the simulation."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

H2 = ["--gamma", "0.5,0.5", "--C", "1,2", "--d", "2,2"]


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "lbrepro", *args], capture_output=True, text=True, timeout=300
    )


def test_solve_scheme2_and_sqd_bound():
    res = run("solve", "hetero", "--lam", "1.2", *H2, "--scheme", "2")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["params"]["policy"] == "scheme2"
    assert out["fixed_point_spread"] < 1e-8
    assert out["stability"]["capacity"] == pytest.approx(1.5)
    sqd = json.loads(
        run(
            "solve",
            "hetero",
            "--lam",
            "1.0",
            "--gamma",
            "0.8,0.2",
            "--C",
            "1,10",
            "--d",
            "2,2",
            "--policy",
            "sqd",
        ).stdout
    )
    assert sqd["stability"]["sqd_lambda_star"] == pytest.approx(1.25)


def test_simulate_reports_simulation_and_mean_field():
    res = run(
        "simulate",
        "hetero",
        "--lam",
        "1.2",
        *H2,
        "--N",
        "200",
        "--horizon",
        "1000",
        "--warmup",
        "100",
        "--seed",
        "5",
    )
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    low, high = out["ci"]["mean_sojourn"]
    mf = out["mean_field"]
    # The refined mean field is the prediction at this N (O(1/N²) remainder): inside the CI.
    assert low <= mf["mean_sojourn_refined"] <= high
    assert abs(mf["mean_sojourn_refined"] - out["mean_sojourn"]) < 0.1 * out["mean_sojourn"]
    assert out["params"]["policy"] == "scheme1"
