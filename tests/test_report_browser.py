"""The report in a real headless Chromium: images load, the console is clean, it looks right.

Skipped locally when Chromium or chromedriver is missing; on CI (CI=true) a missing browser
is a failure, because CI installs both and a skip would hide a broken install (the ``browser``
fixture in conftest).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from lbrepro.core.claims import make_claim, write_checks
from lbrepro.core.io import write_json
from lbrepro.report.browser import check_page, measure_layout, open_page
from lbrepro.report.mathml import has_raw_scripts
from test_report import (
    DISTANCE,
    fake_artifact,
    make_fake_tree,
    near_miss,
    ours_claims,
    toy_claims,
    verdict,
)


def test_report_in_chromium(tmp_path: Path, browser: None) -> None:
    """The report of a fake tree loads in Chromium: one image, a clean console."""
    tree = make_fake_tree(tmp_path / "tree")
    out = tree.render()
    shot = tmp_path / "report.png"

    result = check_page(out, shot, user_data_dir=tmp_path / "chrome-profile")

    assert result["title"] == "lbrepro — reproduction report"
    assert result["images_total"] == 1
    assert result["images_loaded"] == 1 and result["broken"] == []
    assert result["severe"] == [], result["severe"]
    # Nothing runs past the right edge: the page fits the window, and no table of the summary
    # or of Methods (the coverage and seed tables) hides columns in a scroll box.
    assert not result["page_overflows"]
    cut = [box for box in result["overflow"] if box[0] in ("summary", "methods")]
    assert cut == [], cut
    assert shot.is_file() and shot.stat().st_size > 20_000
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    if target := os.environ.get("LBREPRO_SCREENSHOT"):
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, target)


def test_check_page_sees_broken_images_and_errors(tmp_path: Path, browser: None) -> None:
    """check_page reports a broken image and a console error."""
    page = tmp_path / "bad.html"
    page.write_text(
        '<!DOCTYPE html><html><head><link rel="icon" href="data:,"><title>bad</title></head>'
        '<body><img src="nowhere.png" alt="x"><script>console.error("boom")</script></body></html>'
    )
    result = check_page(page, tmp_path / "bad.png", user_data_dir=tmp_path / "chrome-profile")
    assert result["images_total"] == 1 and result["broken"] == ["nowhere.png"]
    assert any("boom" in message for message in result["severe"])


_VISIBLE_JS = """
return Array.from(document.querySelectorAll('tr[data-claim-row]'))
  .filter(function (row) { return row.checkVisibility(); })
  .map(function (row) { return row.dataset.claim; });
"""


def test_claim_filters_in_chromium(tmp_path: Path, browser: None) -> None:
    """A reader filters the summary's claims offline: typing a query leaves the rows that
    contain every word; the paper, status and source filters each hide the rows they exclude;
    the count says how many are shown."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    tree = make_fake_tree(tmp_path / "tree")
    # A second paper's artifact, so the paper filter has a choice to make.
    later = fake_artifact("later-ours", slug="later")
    write_checks(ours_claims(), tree.root / later.paths()["checks"])
    tree.artifacts.append(later)
    out = tree.render()

    with open_page(out, user_data_dir=tmp_path / "chrome-profile") as driver:
        # A reader who asks for less motion (as this browser does) jumps, not glides.
        assert (
            driver.execute_script(
                "return getComputedStyle(document.documentElement).scrollBehavior"
            )
            == "auto"
        )
        # Every claim is folded under "All claims": closed, none is shown; a reader opens it.
        assert driver.execute_script(_VISIBLE_JS) == []
        # Following the contents' link to "All claims" opens the fold.
        driver.find_element(By.CSS_SELECTOR, 'nav.toc a[href="#all-claims"]').click()
        WebDriverWait(driver, 5).until(
            lambda d: d.find_element(By.ID, "all-claims-detail").get_attribute("open") is not None
        )
        everything = driver.execute_script(_VISIBLE_JS)
        count = driver.find_element(By.ID, "filter-count")
        # 6 paper claims; 5 own checks of lbrepro's and a failed diagnostic
        assert len(everything) == 12, everything
        assert count.text == "12 of 12 claims shown"

        query = driver.find_element(By.ID, "claim-search")
        query.send_keys("closed FORM u_3")
        assert driver.execute_script(_VISIBLE_JS) == ["u_3 matches the closed form"]
        assert count.text == "1 of 12 claims shown"
        query.clear()
        query.send_keys("cf-defect")  # a finding's id finds its instances, not the controls'
        assert sorted(driver.execute_script(_VISIBLE_JS)) == [
            "u_2 matches <script>alert(1)</script>",
            "u_3 matches the closed form",
        ]
        query.clear()
        query.send_keys("near miss")  # a control's text is not the claim's
        assert driver.execute_script(_VISIBLE_JS) == []
        query.clear()
        query.send_keys("no claim says this")
        assert driver.execute_script(_VISIBLE_JS) == []
        empty = driver.find_elements(By.CSS_SELECTOR, "tr.no-match")
        assert [row.is_displayed() for row in empty] == [True, True]
        query.clear()
        query.send_keys(" ")  # a change event after clear(): every row is back
        assert driver.execute_script(_VISIBLE_JS) == everything

        # Source: unticking "lbrepro" leaves the paper claims.
        driver.find_element(By.ID, "filter-source-lbrepro").click()
        paper_only = driver.execute_script(_VISIBLE_JS)
        assert len(paper_only) == 6 and not any("lbrepro" in text for text in paper_only)
        assert count.text == "6 of 12 claims shown"
        driver.find_element(By.ID, "filter-source-lbrepro").click()

        # Paper: the second paper's rows only.
        Select(driver.find_element(By.ID, "filter-paper")).select_by_value("later")
        later_rows = driver.execute_script(_VISIBLE_JS)
        assert sorted(later_rows) == sorted(
            ["lbrepro: the offset shrinks", "lbrepro: the tail is finite"]
        ), later_rows
        Select(driver.find_element(By.ID, "filter-paper")).select_by_value("")

        # Status: the failures, counted as the summary table counts them.
        Select(driver.find_element(By.ID, "filter-status")).select_by_value("not reproduced")
        failed = driver.execute_script(_VISIBLE_JS)
        assert len(failed) == 5, failed  # u_2, u_3, the V/N offset, two "offset shrinks"
        rows = driver.find_elements(By.CSS_SELECTOR, "tr[data-claim-row]")
        assert all(
            row.get_attribute("data-status") == "not reproduced"
            for row in rows
            if row.is_displayed()
        )
        # Read once: the driver hands each log entry out only once.
        severe = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
        assert severe == [], severe


#: TeX-like text as the artifacts write it, in a claim, its details, a caption and a note.
TEX = "s_{k−1} against x_{N/2} and r^{n−1} with u^{(j)}_n"


def _wide_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A summary table of 24 columns: wider than any page, it must scroll in its own box."""
    return [{f"column_{i}_of_a_wide_table": r["value"] * i for i in range(24)} for r in rows]


def _crowded_tree(root: Path) -> Any:
    """The fake tree with what makes a page overflow: long unbreakable claim texts and ids,
    a very wide summary table, TeX-like scripts in claims, a caption and a note."""
    tree = make_fake_tree(root)
    full = tree.artifacts[0]
    tree.artifacts[0] = fake_artifact(
        full.id,
        summary=_wide_rows,
        caption=f"Caption with {TEX}.",
        reconstructions=(f"A note on {TEX}",),
    )
    long_word = "a_very_long_identifier_without_any_break_" * 4
    claims = [
        *toy_claims(),
        make_claim(
            f"{TEX} holds for {long_word}",
            verdict("reproduced", 0.5, 0.49, 0.51),
            control=near_miss(),
            distance=DISTANCE,
            details=f"details with {TEX}",
        ),
    ]
    write_checks(claims, tree.root / full.paths()["checks"])
    return tree


@pytest.mark.parametrize("width", [1024, 1400, 1600])
def test_nothing_overflows(tmp_path: Path, browser: None, width: int) -> None:
    """At 1024, 1400 and 1600 px, every fold open: no table is wider than its box (a wide data
    table scrolls inside its own box, which fits), the page never scrolls sideways, and the
    summary, the claims tables and Methods wrap instead of scrolling."""
    tree = _crowded_tree(tmp_path / "tree")
    out = tree.render()
    layout = measure_layout(out, (width,), user_data_dir=tmp_path / "chrome-profile")[width]
    assert layout["over"] == [], layout
    assert layout["page_width"] <= layout["window_width"], layout
    kept = [t for t in layout["scrolled"] if t[0] in ("summary", "all-claims", "methods")]
    assert kept == [], kept
    # The wide summary table does scroll in its box: the check sees a table wider than a page.
    assert any("summary" in t[1] and t[0] == "paper-toy" for t in layout["scrolled"]), layout


def test_summary_fits_three_screens(tmp_path: Path, browser: None) -> None:
    """At 1400 × 1000 the summary (headline and one row per paper) ends within three screens,
    with 6 papers of 4 findings each."""
    from lbrepro.artifacts.registry import Paper

    tree = make_fake_tree(tmp_path / "tree")
    text = "A root cause stated with numbers, long enough to wrap onto a second line. " * 3
    for n in range(6):
        slug = f"paper{n}"
        tree.papers[slug] = Paper(
            slug,
            "A title of a paper that is long enough to wrap in its cell " * 2,
            "A. Author",
            "Cited.",
            "Summary.",
            findings={f"finding-{i}": text for i in range(4)},
            name=f"Author & Other ({2010 + n})",
        )
        art = fake_artifact(f"{slug}-art", slug=slug)
        entries = [
            {
                "claim": f"claim {i}",
                "outcome": "not reproduced",
                "measured": 0.1,
                "interval": [0.09, 0.11],
                "control": None,
                "kind": "verdict",
                "finding": f"finding-{i}",
            }
            for i in range(4)
        ]
        write_json(entries, tree.root / art.paths()["checks"])
        tree.artifacts.append(art)
    out = tree.render()
    layout = measure_layout(out, (1400,), user_data_dir=tmp_path / "chrome-profile")[1400]
    assert 0 < layout["summary_bottom"] <= 3 * 1000, layout


def test_no_raw_tex_in_the_page(tmp_path: Path, browser: None) -> None:
    """What a reader sees (every fold open, code aside) holds no TeX-like source: s_{k−1},
    x_{N/2}, r^{n−1}, u_3 are rendered as MathML, which Chromium lays out as mathematics."""
    tree = _crowded_tree(tmp_path / "tree")
    out = tree.render()
    with open_page(out, user_data_dir=tmp_path / "chrome-profile") as driver:
        text = driver.execute_script(
            """
            document.querySelectorAll('details').forEach(function (d) { d.open = true; });
            var body = document.body.cloneNode(true);
            body.querySelectorAll('code, script, style').forEach(function (e) { e.remove(); });
            return body.textContent;
            """
        )
        maths = driver.execute_script(
            "return Array.from(document.querySelectorAll('math msub, math msup'))"
            ".map(function (e) { return e.getBoundingClientRect().height; });"
        )
    assert has_raw_scripts(text) == [], has_raw_scripts(text)
    assert "s_{" not in text and "r^{" not in text
    assert len(maths) >= 10 and all(h > 0 for h in maths)  # laid out, not hidden
