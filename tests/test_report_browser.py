"""The report in a real headless Chromium: images load, the console is clean, it looks right.

Skipped locally when Chromium or chromedriver is missing; on CI (CI=true) a missing browser
is a failure, because CI installs both and a skip would hide a broken install (the ``browser``
fixture in conftest).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from lbrepro.core.claims import write_checks
from lbrepro.report.browser import check_page, open_page
from test_report import fake_artifact, make_fake_tree, ours_claims


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
  .filter(function (row) { return row.offsetParent !== null; })
  .map(function (row) { return row.querySelector('td.claim').firstChild.textContent.trim(); });
"""


def test_claim_filters_in_chromium(tmp_path: Path, browser: None) -> None:
    """A reader filters the summary's claims offline: typing a query leaves the rows that
    contain every word; the paper, status and source filters each hide the rows they exclude;
    the count says how many are shown."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    tree = make_fake_tree(tmp_path / "tree")
    # A second paper's artifact, so the paper filter has a choice to make.
    later = fake_artifact("later-ours", slug="later")
    write_checks(ours_claims(), tree.root / later.paths()["checks"])
    tree.artifacts.append(later)
    out = tree.render()

    with open_page(out, user_data_dir=tmp_path / "chrome-profile") as driver:
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
