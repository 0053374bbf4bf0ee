"""`lbrepro solve/simulate universality`: JSON out, d(N) families, one-line errors."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "lbrepro", *args], capture_output=True, text=True, timeout=300
    )


def test_solve_fixed_d_and_jsq():
    fixed = json.loads(run("solve", "universality", "--lam", "0.9", "--d", "2").stdout)
    assert fixed["u"][2] == pytest.approx(0.9**3)
    jsq = json.loads(run("solve", "universality", "--lam", "0.9", "--d", "N").stdout)
    assert jsq["u"][:3] == pytest.approx([1.0, 0.9, 0.0])
    assert jsq["mean_sojourn"] == pytest.approx(1.0)


def test_simulate_family_without_replacement(agrees):
    res = run(
        "simulate",
        "universality",
        "--lam",
        "0.9",
        "--d",
        "sqrtN",
        "--N",
        "400",
        "--horizon",
        "300",
        "--warmup",
        "30",
        "--seed",
        "4",
    )
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["params"]["d_value"] == math.ceil(math.sqrt(400))
    assert out["replace"] is False
    # Work conservation: the fraction of busy servers is λ = 0.9 exactly, at any N (a reference
    # the simulation can miss, unlike its own interval).
    low, high = out["ci"]["u"]
    assert agrees(out["u"][0][1], (low[0][1], high[0][1]), 0.9, batches=out["batches"])


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["solve", "universality", "--lam", "1.0", "--d", "2"], "lam"),
        (["solve", "universality", "--lam", "0.9", "--d", "sqrtN"], "d"),
        (
            [
                "simulate",
                "universality",
                "--lam",
                "0.9",
                "--d",
                "cbrtN",
                "--N",
                "100",
                "--horizon",
                "10",
            ],
            "d",
        ),
        (
            [
                "simulate",
                "universality",
                "--lam",
                "0.9",
                "--d",
                "200",
                "--N",
                "100",
                "--horizon",
                "10",
            ],
            "d",
        ),
        (
            ["simulate", "universality", "--lam", "0.9", "--d", "2", "--N", "1", "--horizon", "10"],
            "N",
        ),
    ],
)
def test_bad_input_one_line_exit_2(args, needle):
    res = run(*args)
    assert res.returncode == 2, res
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], res.stderr
