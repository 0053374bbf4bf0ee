"""The HTML report: rendered from a tiny fake results tree, then read back as HTML."""

from __future__ import annotations

import json
import re
import socket
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import matplotlib
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from lbrepro.artifacts import registry
from lbrepro.artifacts.registry import Artifact, Paper
from lbrepro.config import config_hash, read_config_file
from lbrepro.core.claims import (
    NOT_REPRODUCED,
    REPRODUCED,
    UNDECIDED,
    Claim,
    close,
    consistency,
    diagnostic,
    make_claim,
    write_checks,
)
from lbrepro.core.io import write_json, write_table
from lbrepro.core.verdicts import Verdict
from lbrepro.report import provenance as prov
from lbrepro.report.mathml import math_markup
from lbrepro.report.records import COVERAGE_FILE, interval_code
from lbrepro.report.render import (
    build_context,
    conclusion,
    duration,
    fmt,
    readable,
    regenerate_command,
    render_report,
)
from lbrepro.report.runtimes import OTHER, aggregate, read_benchmarks

TEMPLATES = Path(__file__).resolve().parents[1] / "report" / "templates"
XSS = "<script>alert(1)</script>"
BENCH_HEADER = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"


def _no_points(cfg: Any) -> dict[str, dict[str, Any]]:
    return {}


def _no_rows(params: Any, seed: Any) -> list[dict[str, Any]]:
    return []


def _no_claims(rows: Any, cfg: Any) -> list[Claim]:
    return []


def _summary(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"k": r["k"], "method": r["method"], "u_k": r["value"]} for r in rows]


def fake_artifact(artifact_id: str, slug: str = "toy", **kw: Any) -> Artifact:
    """A registry.Artifact built directly (never registered globally)."""
    base: dict[str, Any] = {
        "id": artifact_id,
        "slug": slug,
        "kind": "figure",
        "title": f"Title of {artifact_id}",
        "caption": f"Caption of {artifact_id}.",
        "methods": ("CF", "SIM"),
        "points": _no_points,
        "compute": _no_rows,
        "check": _no_claims,
        "plot": lambda rows, cfg: None,
    }
    base.update(kw)
    return Artifact(**base)


@dataclass
class FakeTree:
    root: Path
    config: dict[str, Any]
    artifacts: list[Artifact]
    papers: dict[str, Paper]

    def render(self, **kw: Any) -> Path:
        kw.setdefault("templates", TEMPLATES)
        return render_report(
            self.config, root=self.root, artifacts=self.artifacts, papers=self.papers, **kw
        )


FINDING = "cf-defect"
FINDING_TEXT = "The closed form is off beyond exponential service (u_2 = 0.70 against 0.81)."


def verdict(outcome: str, measured: float, lo: float, hi: float, **kw: Any) -> Verdict:
    """A verdict as the engine writes it: a statistic, its interval and a margin."""
    kw.setdefault("margin", 0.018)
    return Verdict(
        outcome, measured, kw.pop("expected", "0.9"), "2% relative", interval=(lo, hi), **kw
    )


def near_miss(outcome: str = NOT_REPRODUCED) -> tuple[str, Verdict]:
    return ("closed form at ρ = 0.85", verdict(outcome, 0.05, 0.045, 0.055))


DISTANCE = "ρ = 0.85, 2.8 margins from the prediction"


def toy_claims() -> list[Claim]:
    """One of each: reproduced, a finding with two instances, undecided (straddles, and a near
    miss reproduced too), a verdict on an invalid run, diagnostics, consistency, lbrepro's own."""
    return [
        make_claim(
            "u_1 matches the closed form",
            verdict(REPRODUCED, 0.900123456, 0.8951, 0.9052),
            control=near_miss(),
            distance=DISTANCE,
            runs=["rho0.8"],
        ),
        make_claim(
            f"u_2 matches {XSS}",
            verdict(NOT_REPRODUCED, 0.7012345678, 0.69, 0.71, expected="0.81"),
            control=near_miss(),
            distance=DISTANCE,
            details="off by 0.11",
            finding=FINDING,
        ),
        make_claim(
            "u_3 matches the closed form",
            verdict(NOT_REPRODUCED, 0.41, 0.40, 0.42, expected="0.729"),
            control=near_miss(),
            distance=DISTANCE,
            finding=FINDING,
        ),
        make_claim(
            "u_4 is small",
            verdict(REPRODUCED, 0.01, 0.0, 0.02),
            control=("u_4 at a lighter load", verdict(REPRODUCED, 0.011, 0.001, 0.021)),
            distance="ρ = 0.88: 1 margin away",
        ),
        make_claim(
            "u_5 agrees with the limit",
            verdict(UNDECIDED, 0.03, 0.01, 0.05, needs="a half-width of 0.004 (4x the events)"),
            control=near_miss(),
            distance=DISTANCE,
        ),
        make_claim(
            "mean sojourn agrees",
            verdict(REPRODUCED, 2.5, 2.4, 2.6),
            control=near_miss(),
            distance=DISTANCE,
            runs=["rho0.9"],
        ),
        diagnostic("work conservation at ρ = 0.9", close(0.9, 0.85, 0.01), runs=["rho0.9"]),
        diagnostic("work conservation at ρ = 0.8", close(0.8, 0.8001, 0.01), runs=["rho0.8"]),
        consistency("u_0 is one", close(1.0, 1.0, 1e-12)),
        make_claim(
            "finite-N offset agrees with V/N",
            verdict(NOT_REPRODUCED, 0.004, 0.0035, 0.0045, expected="0.002"),
            control=near_miss(),
            distance=DISTANCE,
            source="lbrepro",
        ),
    ]


def ours_claims() -> list[Claim]:
    """An artifact with lbrepro's own checks only: one fails, and it must not turn red."""
    return [
        make_claim(
            "lbrepro: the offset shrinks",
            verdict(NOT_REPRODUCED, 0.2, 0.1, 0.3),
            control=near_miss(),
            distance=DISTANCE,
            source="lbrepro",
        ),
        make_claim(
            "lbrepro: the tail is finite",
            verdict(REPRODUCED, 0.9, 0.89, 0.91),
            control=near_miss(),
            distance=DISTANCE,
            source="lbrepro",
        ),
    ]


def make_fake_tree(root: Path) -> FakeTree:
    """Results of three fake artifacts: one complete, one with lbrepro checks only, one absent."""
    papers = {
        "toy": Paper(
            "toy",
            "A toy paper",
            "A. Author",
            "Author, A toy paper, 2024.",
            "Toys.",
            findings={FINDING: FINDING_TEXT},
        ),
        "later": Paper("later", "A paper not covered yet", "B. Author", "Later, 2025.", "Soon."),
    }
    full = fake_artifact(
        "toy-tail",
        summary=_summary,
        reconstructions=("N = 1000 servers is our choice",),
    )
    ours = fake_artifact("toy-ours")
    absent = fake_artifact("toy-absent")
    config = {
        "seed": 424242,
        "simulation": {"batches": 20},
        "toy-tail": {"rho": [0.9, 0.99], "N": 1000, "ks": list(range(20))},
        "toy-absent": {"d": 2},
    }
    paths = {k: root / v for k, v in full.paths().items()}

    rows = [
        {"artifact": "toy-tail", "method": m, "quantity": "u", "value": 0.9**k, "k": k}
        for k in range(4)
        for m in ("cf", "sim")
    ]
    write_table(rows, paths["table"])
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.semilogy(range(4), [0.9**k for k in range(4)], marker="o")
    paths["png"].parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(paths["png"], dpi=60)
    fig.savefig(paths["svg"])
    fig.savefig(paths["pdf"])
    plt.close(fig)
    write_checks(toy_claims(), paths["checks"])
    write_checks(ours_claims(), root / ours.paths()["checks"])

    bench = root / "benchmarks"
    (bench / "toy" / "toy-tail").mkdir(parents=True)
    (bench / "toy" / "toy-tail" / "p0.tsv").write_text(
        BENCH_HEADER + "12.5\t0:00:12\t150.5\t300\t-\t-\t-\t-\t-\t11.0\n"
    )
    (bench / "toy" / "toy-tail" / "p1.tsv").write_text(
        BENCH_HEADER + "7.25\t0:00:07\tNA\tNA\tNA\tNA\tNA\tNA\tNA\tNA\n"
    )
    (bench / "report").mkdir()
    (bench / "report" / "report.tsv").write_text(
        BENCH_HEADER + "1.5\t0:00:01\t80\t-\t-\t-\t-\t-\t-\t1\n"
    )
    (bench / "garbled.tsv").write_text("this is not a benchmark\n")
    return FakeTree(root, config, [full, ours, absent], papers)


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.images: list[str] = []
        self.hrefs: list[str] = []
        self.ids: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "img" and a.get("src"):
            self.images.append(a["src"])
        if tag == "a" and a.get("href"):
            self.hrefs.append(a["href"])
        if a.get("id"):
            self.ids.append(a["id"])


def parse(html: str) -> _Links:
    parser = _Links()
    parser.feed(html)
    return parser


def article(html: str, artifact_id: str) -> str:
    """The HTML of one artifact's <article>."""
    match = re.search(rf'<article class="artifact" id="{artifact_id}">(.*?)</article>', html, re.S)
    assert match, f"no article for {artifact_id}"
    return match.group(1)


@pytest.fixture
def tree(tmp_path: Path) -> FakeTree:
    return make_fake_tree(tmp_path)


@pytest.fixture
def html(tree: FakeTree) -> str:
    return tree.render().read_text(encoding="utf-8")


def test_report_written_at_default_path(tree: FakeTree) -> None:
    out = tree.render()
    assert out == tree.root / "report" / "index.html"
    assert out.is_file()
    assert not list(out.parent.glob(".*.tmp"))


def block(html: str, pattern: str) -> str:
    match = re.search(pattern, html, re.S)
    assert match, pattern
    return match.group(1)


def stats(html: str) -> str:
    return block(html, r'<ul class="stats">(.*?)</ul>')


def summary(html: str) -> str:
    return block(html, r'<section id="summary">(.*?)</section>')


def context(tree: FakeTree, **kw: Any) -> dict[str, Any]:
    out = tree.root / "report" / "index.html"
    return build_context(
        tree.config,
        root=tree.root,
        out=out,
        bench_dir=tree.root / "benchmarks",
        artifacts=tree.artifacts,
        papers=tree.papers,
        **kw,
    )


def test_verdicts_with_readable_numbers(html: str) -> None:
    section = article(html, "toy-tail")
    assert "✓ reproduced" in section and "✗ not reproduced" in section
    for number in ("0.9001", "0.7012", "0.81", "[0.8951, 0.9052]", "± 0.018", "2% relative"):
        assert number in section, number
    assert "off by 0.11" in section
    assert "0.900123456" not in html  # 4 significant digits, not the raw float


def test_headline_counts_paper_claims_apart_from_ours(tree: FakeTree, html: str) -> None:
    counts = context(tree)["counts"]
    assert counts["paper"] | {} == counts["paper"]
    paper, ours = counts["paper"], counts["lbrepro"]
    assert (paper["reproduced"], paper["not_reproduced"], paper["undecided"]) == (1, 2, 3)
    assert paper["findings"] == 1 and paper["invalid"] == 1
    assert (ours["reproduced"], ours["not_reproduced"], ours["undecided"]) == (1, 2, 0)
    assert counts["diagnostics"] == 2 and counts["diagnostics_failed"] == 1
    assert counts["consistency"] == 1
    head = stats(html)
    assert re.search(r"<strong>1</strong> paper claim reproduced", head)
    assert re.search(r"<strong>2</strong> paper claims not reproduced.*from 1 finding<", head)
    assert re.search(r"<strong>3</strong> paper claims undecided.*1 on an invalid run", head)
    assert re.search(r"<strong>1 / 2 / 0</strong> lbrepro's own checks", head)
    assert re.search(r"<strong>1</strong> of 2 diagnostics failed", head)
    assert re.search(r"<strong>3</strong> artifacts from 1 paper<", head)


def test_expected_false_decisions_are_stated(tree: FakeTree, html: str) -> None:
    counts = context(tree)["counts"]
    assert counts["decided"] == 6  # 3 paper claims decided, 3 of lbrepro's
    assert counts["expected_false"] == pytest.approx(0.025 * 6)
    text = block(html, r'<p class="errors" id="error-rate">(.*?)</p>')
    assert "2.5%" in text and "6 decided verdicts" in text
    assert "at most 0.15 false decisions" in text
    assert "(0.075 among the 3 decided paper claims)" in text


def test_per_paper_conclusion_is_generated(html: str) -> None:
    """The summary's row names the paper and its findings; its section states the conclusion."""
    row = block(summary(html), r'<table class="paper-counts wide">(.*?)</table>')
    assert "1 finding" in row and "2 claims" in row
    assert "A toy paper" in row and f'<a href="#paper-toy-findings">{FINDING}</a>' in row
    assert "1 / 2 / 0" in row  # lbrepro's checks in their own column
    paper = block(html, r'<section class="paper" id="paper-toy">(.*?)<article')
    assert (
        "1 of 6 paper claims is reproduced; 2 not reproduced, from 1 finding (cf-defect); "
        "3 undecided (this run cannot tell, 1 of them on an invalid run)." in paper
    )


def test_conclusion_follows_the_counts() -> None:
    def counts(r: int, nr: int, u: int, findings: int, invalid: int = 0) -> dict[str, Any]:
        paper = {"verdicts": r + nr + u, "reproduced": r, "not_reproduced": nr}
        paper |= {"undecided": u, "findings": findings, "invalid": invalid}
        return {"paper": paper, "lbrepro": {"verdicts": 2}, "consistency": 0}

    assert conclusion(counts(4, 0, 0, 0), []) == "All 4 paper claims checked are reproduced."
    assert conclusion(counts(0, 0, 0, 0), []).startswith("No paper claim was decided")
    one = [{"id": "formula", "paper_failures": 3}, {"id": "other", "paper_failures": 0}]
    text = conclusion(counts(2, 3, 0, 1), one)
    assert text == "2 of 5 paper claims are reproduced; 3 not reproduced, from 1 finding (formula)."
    assert "1 undecided (this run cannot tell)" in conclusion(counts(1, 0, 1, 0), [])
    assert conclusion(counts(0, 1, 0, 1), []).startswith("0 of 1 paper claim is reproduced; 1 not")


def test_findings_group_claims_under_the_papers_text(html: str) -> None:
    paper = block(html, r'<section class="paper" id="paper-toy">(.*?)<article')
    found = block(paper, r'<ul class="findings">(.*?)</ul>\s*</li>\s*</ul>')
    assert FINDING in found and str(math_markup(FINDING_TEXT)) in found
    assert "2 instances, counted as one finding" in found
    for claim in ("u_2 matches", "u_3 matches the closed form"):
        assert str(math_markup(claim)) in found
    assert str(math_markup(FINDING_TEXT)) in paper and "Conclusion:" in paper


def test_paper_claims_first_and_ours_in_their_own_table(html: str) -> None:
    """Every claim is in "All claims" (folded): the paper's first, lbrepro's own apart."""
    text = block(html, r'<section id="all-claims">(.*?)</section>')
    paper = block(text, r'<table class="wide claims paper-claims">(.*?)</table>')
    ours = block(text, r'<table class="wide claims own-checks">(.*?)</table>')
    assert "finite-N offset" not in paper and "finite-N offset" in ours
    assert "lbrepro: the offset shrinks" in ours
    assert "work conservation at ρ = 0.9" in ours  # the failed diagnostic
    assert "work conservation at ρ = 0.8" not in text  # a diagnostic that held: with its artifact
    assert text.index("paper-claims") < text.index("own-checks")
    order = [paper.index(t) for t in ("u_2 matches", "mean sojourn", "u_5 agrees", "u_1 matches")]
    assert order == sorted(order)  # failures, invalid runs, undecided, reproduced
    assert '<tr class="failed" data-claim-row' in paper


def test_artifact_badges_and_marks_follow_paper_claims(tree: FakeTree, html: str) -> None:
    views = {v["id"]: v for s in context(tree)["sections"] for v in s["artifacts"]}
    assert views["toy-tail"]["status"] == NOT_REPRODUCED
    assert views["toy-ours"]["status"] == "no paper claims"  # red only by lbrepro: not red
    toc = block(html, r'<nav class="toc"(.*?)</nav>')
    assert '<span class="mark fail" aria-label="not reproduced">✗</span><a href="#toy-tail">' in toc
    assert (
        '<span class="mark none" aria-label="no paper claims">–</span><a href="#toy-ours">' in toc
    )
    header = block(article(html, "toy-ours"), r"<header>(.*?)</header>")
    assert "no paper claims" in header and "badge fail" not in header
    assert "lbrepro checks: 1 reproduced, 1 not, 0 undecided" in header


def test_controls_state_their_distance(html: str) -> None:
    section = article(html, "toy-tail")
    assert (
        f"control (near miss): closed form at ρ = 0.85 — distance: {DISTANCE} → not reproduced"
        in (section)
    )
    assert "<strong>reproduced too</strong>" in section  # u_4's near miss
    assert "undecided: the control (near miss) is reproduced too" in section


def test_undecided_shows_reason_and_needs_invalid_is_not_a_cross(html: str) -> None:
    """An invalid run decides nothing: its badge is undecided (?), never the ✗ of a failure;
    the reason, the diagnostic that failed, stays in red."""
    section = article(html, "toy-tail")
    assert (
        "undecided: the interval straddles the margin; needs: a half-width of 0.004 (4x the events)"
        in section
    )
    row = block(section, r'(<tr class="invalid"><td class="claim">mean sojourn agrees.*?</tr>)')
    assert "? undecided: invalid run" in row and "badge missing" in row
    assert "✗" not in row and "badge fail" not in row
    assert "invalid run: failed diagnostic: work conservation at ρ = 0.9" in row


def test_diagnostics_are_shown_as_diagnostics(html: str) -> None:
    section = article(html, "toy-tail")
    failed = block(
        section, r'(<tr class="failed"><td class="claim">work conservation at ρ = 0.9.*?</tr>)'
    )
    assert "✗ diagnostic failed" in failed
    held = block(section, r'(<tr><td class="claim">work conservation at ρ = 0.8.*?</tr>)')
    assert "✓ diagnostic" in held and "consistency" not in held
    assert "≡ consistency" in section  # u_0 is one


def test_measured_cells_are_readable(tree: FakeTree) -> None:
    assert readable({"x2": 1.70001e-06, "ratio": 1.5}) == "x2 = 1.7e-06; ratio = 1.5"
    assert readable([0.1234567, 2]) == "0.1235, 2"
    assert readable(list(range(9))) == "0, 1, 2, 3, 4, 5, … (9 values)"
    old = [
        {
            "claim": "an old entry",
            "outcome": "reproduced",
            "measured": {"a": 0.333333},
            "expected": [1, 2],
            "tolerance": 0.1,
            "control": None,
        }
    ]
    write_json(old, tree.root / "results/toy/toy-tail.checks.json")
    section = article(tree.render().read_text(encoding="utf-8"), "toy-tail")
    row = block(section, r"(<td class=\"claim\">an old entry.*?</tr>)")
    assert "a = 0.3333" in row and "1, 2" in row
    assert "{" not in row and "[1" not in row
    assert "no control" in row


def test_a_null_statistic_is_flagged(tree: FakeTree) -> None:
    entry = {
        "claim": "x never observed",
        "outcome": "not reproduced",
        "measured": None,
        "control": None,
        "kind": "verdict",
    }
    write_json([entry], tree.root / "results/toy/toy-tail.checks.json")
    html = tree.render().read_text(encoding="utf-8")
    assert "no statistic" in article(html, "toy-tail")
    assert re.search(r"<strong>1</strong> verdict without a statistic", stats(html))


def test_methods_section_shows_coverage(tree: FakeTree, tmp_path: Path) -> None:
    cov = tmp_path / "coverage.json"
    cases = [{"case": "M/M/1 rho=0.5", "replications": 200, "coverage": 0.945}]
    cov.write_text(json.dumps({"date": "2026-12-01", "commit": "abc1234", "cases": cases}))
    html = tree.render(coverage_file=cov).read_text(encoding="utf-8")
    methods = block(html, r'<section id="methods">(.*?)</section>')
    for word in ("near miss", "margin", "undecided", "diagnostic", "consistency", "Bonferroni"):
        assert word in methods, word
    # The retired test is not named (claims may still say "agree within 10%").
    assert "<code>within</code>" not in methods and "within(" not in methods
    assert "M/M/1 rho=0.5" in methods and "0.945" in methods and "abc1234" in methods
    absent = tree.render(coverage_file=tmp_path / "none.json").read_text(encoding="utf-8")
    assert "coverage table has not been measured" in absent
    # The committed record (bench/bench_coverage.py) is shown by default.
    default = tree.render().read_text(encoding="utf-8")
    shipped = block(default, r'<section id="methods">(.*?)</section>')
    assert "mm1-rho0.99" in shipped and "Wilson" in shipped


def test_coverage_says_whether_it_was_measured_on_this_code(tree: FakeTree, tmp_path: Path) -> None:
    """The coverage shown is this run's only if the record's interval-code digest is today's."""
    cov = tmp_path / "coverage.json"
    cases = [{"case": "M/M/1 rho=0.5", "replications": 200, "coverage": 0.945}]
    for code, this in ((interval_code(), True), ("0123456789ab+ba9876543210", False)):
        cov.write_text(json.dumps({"commit": "abc1234", "interval_code": code, "cases": cases}))
        methods = block(
            tree.render(coverage_file=cov).read_text(encoding="utf-8"),
            r'<section id="methods">(.*?)</section>',
        )
        assert ("Measured on this run's interval code" in methods) is this
        assert ("Measured on other code" in methods) is not this


def test_the_shipped_coverage_was_measured_on_this_code() -> None:
    """bench/bench_coverage.py was run on the interval code of this tree (lbrepro.core and
    lbrepro.sim): a change there needs the coverage measured again before it lands."""
    record = json.loads(COVERAGE_FILE.read_text(encoding="utf-8"))
    assert record.get("interval_code") == interval_code(), (
        "lbrepro.core or lbrepro.sim changed since src/lbrepro/report/coverage.json was "
        "measured: run `nice python bench/bench_coverage.py`"
    )


def test_methods_section_shows_seed_stability(tree: FakeTree, tmp_path: Path) -> None:
    rows = [
        {"artifact": "toy-tail", "claim": "u_1", "statuses": ["reproduced"] * 3, "stable": True},
        {
            "artifact": "toy-tail",
            "claim": "u_5",
            "stable": False,
            "flip": False,
            "statuses": ["reproduced", "undecided", "reproduced"],
        },
        {
            "artifact": "toy-tail",
            "claim": "u_9 flips",
            "stable": False,
            "flip": True,
            "statuses": ["reproduced", "not reproduced", "reproduced"],
        },
    ]
    per_seed = [
        {
            "seed": s,
            "verdicts": 2,
            "reproduced": 2 - (s == 1),
            "not_reproduced": 0,
            "undecided": int(s == 1),
            "null_statistics": 0,
        }
        for s in range(3)
    ]
    record = {
        "commit": "def5678abcdef",
        "date": "2026-12-02",
        "seeds": [0, 1, 2],
        "flips": 1,
        "flips_paper": 0,
        "verdicts": 6,
        "undecided_fraction": 1 / 6,
        "null_statistics": 0,
        "profile": "quick profile",
        "rows": rows,
        "per_seed": per_seed,
        "produced_by": "python bench/bench_seeds.py",
    }
    path = tmp_path / "seeds.json"
    write_json(record, path)
    methods = block(
        tree.render(seed_file=path).read_text(encoding="utf-8"),
        r'<section id="methods">(.*?)</section>',
    )
    assert "def5678abc" in methods and "seeds 0, 1, 2" in methods
    assert (
        "<strong>1</strong> claim moved between reproduced and not reproduced (0 of them paper"
        in methods
    )
    assert "undecided fraction <strong>16.7%</strong> of 6 verdicts" in methods
    moved = block(methods, r'<table class="wide seed-moved">(.*?)</table>')
    flips, u5, u1 = (str(math_markup(t)) for t in ("u_9 flips", "u_5", "u_1"))
    assert flips in moved and u5 in moved and u1 not in moved
    assert moved.index(flips) < moved.index(u5)  # flips first
    per = block(methods, r'<table class="summary seed-table">(.*?)</table>')
    assert per.count("<tr>") == 1 + 3
    none = tree.render(seed_file=tmp_path / "none.json").read_text(encoding="utf-8")
    assert "seed stability has not been measured" in none


def test_claim_text_is_escaped(html: str) -> None:
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<script>alert(1)" not in html
    # The one script is the report's own claim filters.
    assert html.count("<script") == 1 and "The summary's claim filters" in html


def test_relative_paths_resolve(tree: FakeTree) -> None:
    out = tree.render()
    links = parse(out.read_text(encoding="utf-8"))
    assert links.images == ["../figures/toy/toy-tail.png"]
    files = [h for h in links.hrefs if not h.startswith("#")]
    assert "../figures/toy/toy-tail.svg" in files
    assert "../figures/toy/toy-tail.pdf" in files
    assert "../results/toy/toy-tail.csv" in files
    for href in links.images + files:
        assert not href.startswith(("/", "file:", "http")), href
        assert (out.parent / href).resolve().is_file(), href


def test_relative_paths_from_another_output_folder(tree: FakeTree) -> None:
    out = tree.render(out=tree.root / "a" / "b" / "report.html")
    links = parse(out.read_text(encoding="utf-8"))
    assert links.images == ["../../figures/toy/toy-tail.png"]
    assert (out.parent / links.images[0]).resolve().is_file()


def test_anchors_and_internal_links(html: str) -> None:
    links = parse(html)
    assert "toy-tail" in links.ids and "toy-absent" in links.ids
    for href in links.hrefs:
        if href.startswith("#"):
            assert href[1:] in links.ids, href


def test_missing_outputs_render_notes(html: str) -> None:
    section = article(html, "toy-absent")
    assert "Missing:" in section
    assert "figures/toy/toy-absent.png" in section
    assert "claim checks not produced" in section
    assert "? missing" in section
    assert "<img" not in section


def test_artifact_section_content(html: str) -> None:
    section = article(html, "toy-tail")
    assert "Title of toy-tail" in section and "Caption of toy-tail." in section
    assert "[reconstruction]" in section and "N = 1000 servers is our choice" in section
    assert "<code>rho</code>" in section and "[0.9, 0.99]" in section
    assert "(20 items)" in section  # long lists are shortened
    summary = re.search(r'<table class="summary">(.*?)</table>', section, re.S).group(1)
    assert f"<th>{math_markup('u_k')}</th>" in summary  # a column named u_k, as mathematics
    assert summary.count("<tr>") == 1 + 8  # header + one row per table row
    assert "0.729" in summary


def test_papers_and_not_covered(html: str) -> None:
    assert 'id="paper-toy"' in html
    assert "Author, A toy paper, 2024." in html
    covered = re.search(r'<section id="not-covered">(.*?)</section>', html, re.S).group(1)
    assert "A paper not covered yet" in covered
    assert 'id="paper-later"' not in html


def test_provenance_shows_seed_and_hash(tree: FakeTree, html: str) -> None:
    block = re.search(r'<section id="provenance">(.*?)</section>', html, re.S).group(1)
    assert "424242" in block
    assert config_hash(tree.config) in block
    assert "numpy" in block and "jinja2" in block
    assert "<code>batches</code>" in block  # shared config sections are listed


def test_runtime_table(html: str) -> None:
    block = re.search(r'<section id="runtimes">(.*?)</section>', html, re.S).group(1)
    row = re.search(r'<a href="#toy-tail">toy-tail</a></td>(.*?)</tr>', block, re.S).group(1)
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
    assert cells[0] == "2"  # jobs
    assert cells[1] == "19.8 s"  # total
    assert cells[2] == "12.5 s"  # slowest
    assert "toy/toy-tail/p0" in cells[3]
    assert cells[4] == "150.5"
    assert OTHER in block
    assert "garbled.tsv" in block  # the skipped file is named, not hidden


def test_summary_failure_is_a_note(tree: FakeTree) -> None:
    def broken(rows: Any) -> Any:
        raise KeyError("no such column")

    tree.artifacts[0] = fake_artifact("toy-tail", summary=broken)
    section = article(tree.render().read_text(encoding="utf-8"), "toy-tail")
    assert "summary table could not be computed" in section


def test_malformed_checks_is_a_note(tree: FakeTree) -> None:
    (tree.root / "results/toy/toy-tail.checks.json").write_text("{not json")
    section = article(tree.render().read_text(encoding="utf-8"), "toy-tail")
    assert "claim checks unreadable" in section


def test_empty_checks_is_no_claims(tree: FakeTree) -> None:
    (tree.root / "results/toy/toy-tail.checks.json").write_text("[]")
    section = article(tree.render().read_text(encoding="utf-8"), "toy-tail")
    assert "– no claims" in section and "states no claims" in section


def test_missing_templates_folder(tree: FakeTree) -> None:
    with pytest.raises(FileNotFoundError, match="templates"):
        tree.render(templates=tree.root / "nowhere")


def test_fmt() -> None:
    assert fmt(0.123456789) == "0.1235"
    assert fmt(123456.0) == "1.235e+05"
    assert fmt(3) == "3" and fmt(True) == "true" and fmt(None) == "—"
    assert fmt(float("nan")) == "NaN" and fmt(float("inf")) == "∞"
    assert fmt([1.0, 2.5]) == "[1, 2.5]"
    assert fmt(list(range(10))) == "[0, 1, 2, 3, …, 9] (10 items)"
    assert fmt({"a": 0.333333}) == "{a: 0.3333}"
    assert fmt("text") == "text"


def test_duration() -> None:
    assert duration(None) == "—"
    assert duration(0.4213) == "0.42 s"
    assert duration(42.04) == "42.0 s"
    assert duration(187) == "3 min 07 s"
    assert duration(3900) == "1 h 05 min"


def test_read_benchmarks_layouts_and_bad_files(tmp_path: Path) -> None:
    ids = ["sm-tail", "sm-acc"]
    (tmp_path / "sm" / "sm-tail").mkdir(parents=True)
    (tmp_path / "sm" / "sm-tail" / "rho0.9_d2.tsv").write_text(
        BENCH_HEADER
        + "2.0\t0:00:02\t10\t-\t-\t-\t-\t-\t-\t1.5\n4.0\t0:00:04\t30\t-\t-\t-\t-\t-\t-\t-\n"
    )
    (tmp_path / "plot" / "sm").mkdir(parents=True)
    (tmp_path / "plot" / "sm" / "sm-acc.tsv").write_text(BENCH_HEADER + "1\t0:00:01\t-" + "\t-" * 7)
    (tmp_path / "empty.tsv").write_text("")
    (tmp_path / "dashes.tsv").write_text(BENCH_HEADER + "-\t-\t-\t-\t-\t-\t-\t-\t-\t-\n")
    (tmp_path / "binary.tsv").write_bytes(b"\xff\xfe\x00garbage")
    (tmp_path / "notes.md").write_text("ignored: not a benchmark suffix")

    rows = {r["job"]: r for r in read_benchmarks(tmp_path, ids)}
    assert set(rows) == {"sm/sm-tail/rho0.9_d2", "plot/sm/sm-acc", "empty", "dashes", "binary"}
    tail = rows["sm/sm-tail/rho0.9_d2"]
    assert tail["artifact"] == "sm-tail" and tail["repeats"] == 2
    assert tail["seconds"] == pytest.approx(3.0)
    assert tail["max_rss_mb"] == 30 and tail["cpu_time"] == pytest.approx(1.5)
    assert rows["plot/sm/sm-acc"]["artifact"] == "sm-acc"
    assert rows["plot/sm/sm-acc"]["max_rss_mb"] is None
    for bad in ("empty", "dashes", "binary"):
        assert rows[bad]["seconds"] is None and rows[bad]["note"], bad
    assert read_benchmarks(tmp_path / "absent", ids) == []

    agg = aggregate(rows.values(), order=["sm-acc", "sm-tail"])
    assert [a["artifact"] for a in agg] == ["sm-acc", "sm-tail"]
    assert agg[1]["jobs"] == 1 and agg[1]["total_seconds"] == pytest.approx(3.0)


def test_read_benchmarks_extended_and_jsonl(tmp_path: Path) -> None:
    header = BENCH_HEADER.rstrip("\n") + "\tjobid\trule_name\twildcards\n"
    (tmp_path / "a.tsv").write_text(header + "3\t0:00:03" + "\t-" * 8 + "\t7\tsimulate\t{}\n")
    (tmp_path / "b.jsonl").write_text(json.dumps({"s": 2.5, "max_rss": 12.0}) + "\n")
    rows = {r["job"]: r for r in read_benchmarks(tmp_path, [])}
    assert rows["a"]["rule"] == "simulate" and rows["a"]["seconds"] == 3
    assert rows["b"]["seconds"] == 2.5 and rows["b"]["artifact"] is None
    assert aggregate(rows.values())[0]["artifact"] == OTHER


def test_provenance_outside_git(tmp_path: Path) -> None:
    info = prov.provenance({"seed": 7, "x": {"y": 1}}, tmp_path)
    assert info["commit"] == "unknown" and info["dirty"] is None
    assert info["seed"] == 7
    assert info["config_hash"] == config_hash({"x": {"y": 1}, "seed": 7})
    assert set(info["packages"]) == set(prov.PACKAGES)
    assert info["run_date"].endswith("+00:00")
    json.dumps(info)  # plain values only
    host = socket.gethostname()
    if len(host) >= 6:
        assert host not in json.dumps(info)


def test_provenance_in_git_repo(tmp_path: Path) -> None:
    info = prov.git_state(Path(__file__).resolve().parents[1])
    if info["commit"] == "unknown":
        pytest.skip("the repository is not a usable git checkout here")
    assert re.fullmatch(r"[0-9a-f]{4,40}", info["commit"])
    assert info["dirty"] in (True, False)


def test_package_version_missing() -> None:
    assert prov.package_version("surely-not-an-installed-distribution") == "not installed"


def test_provenance_names_the_source_checkout_not_the_run_folder(tree: FakeTree) -> None:
    # A run with --directory elsewhere (tree.root is no git checkout) still names the commit
    # of the code it ran.
    repo = Path(__file__).resolve().parents[1]
    state = prov.git_state(repo)
    if state["commit"] == "unknown":
        pytest.skip("the repository is not a usable git checkout here")
    html = tree.render(source=repo).read_text(encoding="utf-8")
    block = re.search(r'<section id="provenance">(.*?)</section>', html, re.S).group(1)
    assert state["commit"] in block


def test_each_artifact_names_the_command_that_regenerates_it(tree: FakeTree) -> None:
    """Per artifact, the exact command: Snakemake with the config the report wrote beside
    itself (read back, it is the run's config) forcing that artifact's targets, nothing else."""
    import shlex
    from html import escape

    text = tree.render().read_text(encoding="utf-8")
    written = tree.root / "report" / "config.yaml"
    assert read_config_file(written) == tree.config
    assert 'href="config.yaml"' in text  # linked from the provenance section
    for artifact in tree.artifacts:
        command = regenerate_command(artifact, "report/config.yaml")
        assert text.count(f"<code>{escape(command, quote=False)}</code>") == 1, command
        argv = shlex.split(command)
        assert argv[:6] == [
            "snakemake",
            "--cores",
            "all",
            "--configfile",
            "report/config.yaml",
            "--forceall",
        ]
        assert argv[6:] == list(artifact.paths().values())
    # A path with a space is quoted, so the command still runs as printed.
    odd = regenerate_command(tree.artifacts[0], "my runs/config.yaml")
    assert shlex.split(odd)[4] == "my runs/config.yaml"


def test_paper_citations_link_to_the_paper(tree: FakeTree) -> None:
    """Each paper's citation links to it, in its section and in the provenance's list."""
    papers = dict(tree.papers)
    papers["toy"] = Paper(
        "toy", "A toy paper", "A. Author", "Author, 2024.", "Toys.", url="https://doi.org/10.1/toy"
    )
    text = render_report(
        tree.config, root=tree.root, artifacts=tree.artifacts, papers=papers, templates=TEMPLATES
    ).read_text(encoding="utf-8")
    section = block(text, r'<section class="paper" id="paper-toy">(.*?)</section>')
    assert '<p class="citation">Author, 2024. <a href="https://doi.org/10.1/toy">' in section
    cited = block(text, r'<table class="params papers-cited">(.*?)</table>')
    assert 'href="https://doi.org/10.1/toy"' in cited and "Author, 2024." in cited


def test_claim_filters_offer_what_the_summary_holds(html: str) -> None:
    """The filter form (shown by its script) offers every paper with a section and every
    status among the summary's claims; each summary row carries what the filters read."""
    form = block(html, r'<form class="filters" id="claim-filters"(.*?)</form>')
    assert re.findall(
        r'<option value="([^"]*)">', block(form, r'id="filter-paper">(.*?)</select>')
    ) == ["", "toy"]
    statuses = re.findall(
        r'<option value="([^"]*)">', block(form, r'id="filter-status">(.*?)</select>')
    )
    assert statuses == [
        "",
        "not reproduced",
        "invalid run",
        "diagnostic failed",
        "undecided",
        "reproduced",
    ]
    rows = re.findall(r"<tr[^>]*data-claim-row[^>]*>", html)
    assert rows and all('data-paper="toy"' in r and 'data-source="' in r for r in rows)


def test_expected_false_decisions_count_the_looks_of_doubled_runs() -> None:
    """A verdict taken after 3 looks (a run doubled until decided) can err 3 times: the
    expected false decisions count its looks, and the headline says how many were taken."""
    from lbrepro.report.claim_views import claim_view as _claim_view
    from lbrepro.report.claim_views import count_claims as _count

    def entry(status: str, source: str = "paper", **extra: Any) -> dict[str, Any]:
        return {
            "claim": "c", "outcome": status, "status": status, "kind": "verdict",
            "source": source, "control": {"claim": "near", "outcome": "not reproduced"},
            "measured": 1.0, **extra,
        }  # fmt: skip

    claims = [
        _claim_view(entry("reproduced", looks=3)),
        _claim_view(entry("not reproduced")),
        _claim_view(entry("undecided", looks=2)),  # undecided: decides nothing
        _claim_view(entry("reproduced", source="lbrepro", looks=True)),  # not a count: 1
    ]
    counts = _count(claims)
    assert counts["decided"] == 3 and counts["looks"] == 5
    assert counts["expected_false"] == pytest.approx(0.025 * 5)
    assert counts["expected_false_paper"] == pytest.approx(0.025 * 4)


def test_a_caption_states_the_configured_numbers():
    """A caption given as a function of the artifact's config shows the run's values, and the
    report renders it from the run's config."""
    artifact = registry.get("supermarket-tail")
    text = artifact.caption_text({"N": 123, "horizon": 4.5e4})
    assert "N = 123 servers over 45000 mean service times" in text
    assert artifact.caption_text(None) == ""  # not part of the run: nothing to state
