"""Subscripts and powers become MathML built from escaped text; identifiers stay as written."""

from __future__ import annotations

import re

import jinja2
import pytest
from markupsafe import Markup

from lbrepro.report.mathml import has_raw_scripts, math_markup


def mathml(text: str) -> str:
    return str(math_markup(text))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("s_{k−1}", "<msub><mi>s</mi><mrow><mi>k</mi><mo>−</mo><mn>1</mn></mrow></msub>"),
        ("x_{N/2}", "<msub><mi>x</mi><mrow><mi>N</mi><mo>/</mo><mn>2</mn></mrow></msub>"),
        ("r^{n−1}", "<msup><mi>r</mi><mrow><mi>n</mi><mo>−</mo><mn>1</mn></mrow></msup>"),
        ("u_3", "<msub><mi>u</mi><mn>3</mn></msub>"),
        ("T_d", "<msub><mi>T</mi><mi>d</mi></msub>"),
        ("ρ^{d^{i}}", "<msup><mi>ρ</mi><msup><mi>d</mi><mi>i</mi></msup></msup>"),
        ("u^{(j)}_n", "<msubsup><mi>u</mi><mi>n</mi><mrow><mo>(</mo><mi>j</mi><mo>)</mo></mrow>"),
        ("N^(−s)", "<msup><mi>N</mi><mrow><mo>−</mo><mi>s</mi></mrow></msup>"),
        ("1.5^2", "<msup><mn>1.5</mn><mn>2</mn></msup>"),
        ("mean^(1−d)", "<msup><mi>mean</mi><mrow><mn>1</mn><mo>−</mo><mi>d</mi></mrow></msup>"),
    ],
)
def test_scripts_become_mathml(text: str, expected: str) -> None:
    out = mathml(f"before {text} after")
    assert out.startswith('before <math display="inline">') and out.endswith("</math> after")
    assert expected in out
    assert has_raw_scripts(re.sub(r"<[^>]+>", "", out)) == []


def test_products_and_lists_of_scripts() -> None:
    """γ_jC_j is two scripted factors; u_2..u_4 two scripts; Σγ_j scripts the γ."""
    assert mathml("γ_jC_j").count("<msub>") == 2
    assert mathml("u_2..u_4").count("<msub>") == 2
    assert mathml("μΣγ_j").startswith("μΣ<math")


@pytest.mark.parametrize(
    "text", ["busy_capacity", "ci_low", "k_max", "mean_sojourn_time", "a_{", "e^{}", "x^"]
)
def test_identifiers_and_broken_scripts_stay_text(text: str) -> None:
    assert mathml(text) == text


def test_everything_is_escaped() -> None:
    """Text around and inside a script is escaped: the output is markup only where it is
    MathML, and Markup passed in (already safe) is kept as it is."""
    out = mathml("<script>x_{<b>&}</script>")
    assert "<script>" not in out and "<b>" not in out
    assert "&lt;script&gt;" in out and "<mo>&lt;</mo>" in out and "<mo>&amp;</mo>" in out
    assert isinstance(math_markup("u_1"), Markup)
    assert math_markup(Markup("<em>u_1</em>")) == Markup("<em>u_1</em>")


def test_the_filter_under_autoescape() -> None:
    """In an autoescaping template the filter's output is not escaped twice, and a value
    without the filter is escaped as always."""
    env = jinja2.Environment(autoescape=True)
    env.filters["math"] = math_markup
    page = env.from_string("{{ t | math }}|{{ t }}").render(t="x_1 <i>")
    shown, plain = page.split("|")
    assert "<msub><mi>x</mi><mn>1</mn></msub>" in shown and "&lt;i&gt;" in shown
    assert plain == "x_1 &lt;i&gt;"


def test_raw_scripts_are_found() -> None:
    assert has_raw_scripts("s_{k−1} and r^{n} and u_3 and N^(2)") == ["_{", "^{", "u_3", "^("]
    assert has_raw_scripts("busy_capacity, ci_low, Π₂") == []
