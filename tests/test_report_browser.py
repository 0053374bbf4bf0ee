"""The report in a real headless Chromium: images load, the console is clean, it looks right.

Skipped locally when Chromium or chromedriver is missing; on CI (CI=true) a missing browser
is a failure, because CI installs both and a skip would hide a broken install (the ``browser``
fixture in conftest).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from lbrepro.report.browser import check_page
from test_report import make_fake_tree


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
