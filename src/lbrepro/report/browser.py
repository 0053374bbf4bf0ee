"""Open a rendered report in headless Chromium and check what a reader would see.

Used by the report's browser test and the end-to-end pipeline test: every image must load,
the console must stay free of errors, and a full-page screenshot is kept as evidence.
Selenium is a test extra, so it is imported inside the functions. The driver path is always
given explicitly, so Selenium Manager never tries to download anything.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")

#: ``--force-prefers-reduced-motion``: the page's jumps are instant, as its readers who ask for
#: less motion get them; a smooth scroll still under way makes WebDriver's clicks miss.
CHROME_ARGS = (
    "--headless=new",
    "--force-prefers-reduced-motion",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
)

#: Scroll boxes whose content is wider than the box (a table cut off unless scrolled), and
#: whether the page itself is wider than the window: (section id, box class, overflow px).
_OVERFLOW_JS = """
var boxes = Array.from(document.querySelectorAll('.scroll')).filter(function (el) {
  return el.scrollWidth > el.clientWidth + 1;
}).map(function (el) {
  var section = el.closest('section');
  return [section ? section.id : '', el.firstElementChild ? el.firstElementChild.className : '',
          el.scrollWidth - el.clientWidth];
});
return {boxes: boxes,
        page: document.documentElement.scrollWidth > document.documentElement.clientWidth + 1};
"""

#: With every fold opened: tables that run past their box (a table in a ``.scroll`` box may
#: scroll inside it, but the box itself must fit), tables that scroll inside their box, and the
#: page's width against the window's. (section id, table class, pixels) per table.
_LAYOUT_JS = """
var summary = document.getElementById('summary');
var summaryBottom = summary ? summary.getBoundingClientRect().bottom + window.scrollY : 0;
document.querySelectorAll('details').forEach(function (d) { d.open = true; });
var over = [], scrolled = [];
document.querySelectorAll('table').forEach(function (t) {
  var box = t.parentElement;
  var section = t.closest('section');
  var name = [section ? section.id : '', t.className];
  var width = t.getBoundingClientRect().width;
  if (box.classList.contains('scroll')) {
    var outer = box.parentElement.clientWidth;
    var own = box.getBoundingClientRect().width;
    if (own > outer + 1) { over.push(name.concat([Math.round(own - outer)])); }
    if (box.scrollWidth > box.clientWidth + 1) {
      scrolled.push(name.concat([box.scrollWidth - box.clientWidth]));
    }
  } else if (width > box.clientWidth + 1) {
    over.push(name.concat([Math.round(width - box.clientWidth)]));
  }
});
return {over: over, scrolled: scrolled, summary_bottom: Math.round(summaryBottom),
        page_width: document.documentElement.scrollWidth, window_width: window.innerWidth,
        height: document.documentElement.scrollHeight};
"""

WIDTH = 1400
MAX_HEIGHT = 12000
PAGE_TIMEOUT_S = 15

_IMAGES_JS = """
return Array.from(document.images).map(function (img) {
  return {src: img.getAttribute('src'), complete: img.complete, width: img.naturalWidth};
});
"""


def find_browser(
    chromium: str | Path = CHROMIUM, chromedriver: str | Path = CHROMEDRIVER
) -> tuple[Path, Path]:
    """The Chromium and chromedriver executables; FileNotFoundError naming what is missing."""
    found = []
    for path in (Path(chromium), Path(chromedriver)):
        if not path.is_file():
            resolved = shutil.which(path.name)
            if resolved is None:
                raise FileNotFoundError(f"{path} not found (install chromium and chromium-driver)")
            path = Path(resolved)
        found.append(path)
    return found[0], found[1]


@contextlib.contextmanager
def open_page(
    path: Path,
    *,
    chromium: str | Path = CHROMIUM,
    chromedriver: str | Path = CHROMEDRIVER,
    user_data_dir: Path | None = None,
) -> Iterator[Any]:
    """A headless Chromium WebDriver with ``path`` loaded via ``file://`` (quit on exit).

    The browser profile goes to ``user_data_dir`` (a fresh temporary folder if None).
    """
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.support.ui import WebDriverWait

    browser, driver_path = find_browser(chromium, chromedriver)
    with contextlib.ExitStack() as stack:
        if user_data_dir is None:
            profile = stack.enter_context(tempfile.TemporaryDirectory(prefix="lbrepro-chrome-"))
        else:
            profile = str(user_data_dir)
            Path(profile).mkdir(parents=True, exist_ok=True)
        options = webdriver.ChromeOptions()
        options.binary_location = str(browser)
        for arg in (*CHROME_ARGS, f"--user-data-dir={profile}", f"--window-size={WIDTH},900"):
            options.add_argument(arg)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        driver = webdriver.Chrome(service=Service(str(driver_path)), options=options)
        try:
            driver.set_page_load_timeout(PAGE_TIMEOUT_S)
            driver.get(Path(path).resolve().as_uri())
            WebDriverWait(driver, PAGE_TIMEOUT_S).until(
                lambda d: d.execute_script("return document.readyState") == "complete"
            )
            yield driver
        finally:
            driver.quit()


def check_page(
    path: Path,
    screenshot: Path,
    *,
    chromium: str | Path = CHROMIUM,
    chromedriver: str | Path = CHROMEDRIVER,
    user_data_dir: Path | None = None,
) -> dict[str, Any]:
    """Load ``path`` via ``file://`` in headless Chromium; report images, errors, screenshot.

    Returns ``images_total``, ``images_loaded``, ``broken`` (src of every image not complete
    or of natural width 0), ``severe`` (console messages at level SEVERE), ``console`` (all
    console entries), ``title``, ``screenshot`` (the full-page PNG written, as a str),
    ``overflow`` ((section id, table class, pixels hidden) of every scroll box whose content is
    wider than the box) and ``page_overflows`` (the page is wider than the window).
    The browser profile goes to ``user_data_dir`` (a fresh temporary folder if None).
    """
    screenshot = Path(screenshot)
    screenshot.parent.mkdir(parents=True, exist_ok=True)
    with open_page(
        path, chromium=chromium, chromedriver=chromedriver, user_data_dir=user_data_dir
    ) as driver:
        images = driver.execute_script(_IMAGES_JS)
        overflow = driver.execute_script(_OVERFLOW_JS)
        height = driver.execute_script(
            "return Math.max(document.body.scrollHeight, document.documentElement.scrollHeight)"
        )
        driver.set_window_size(WIDTH, min(max(int(height), 600), MAX_HEIGHT))
        driver.save_screenshot(str(screenshot))
        title = driver.title
        console = driver.get_log("browser")
    broken = [img["src"] for img in images if not img["complete"] or img["width"] <= 0]
    return {
        "title": title,
        "images_total": len(images),
        "images_loaded": len(images) - len(broken),
        "broken": broken,
        "severe": [entry.get("message", "") for entry in console if entry.get("level") == "SEVERE"],
        "console": console,
        "screenshot": str(screenshot),
        "overflow": [tuple(box) for box in overflow["boxes"]],
        "page_overflows": bool(overflow["page"]),
    }


def measure_layout(
    path: Path,
    widths: tuple[int, ...] = (1024, 1400, 1600),
    *,
    height: int = 1000,
    chromium: str | Path = CHROMIUM,
    chromedriver: str | Path = CHROMEDRIVER,
    user_data_dir: Path | None = None,
) -> dict[int, dict[str, Any]]:
    """The report's layout at each window width (``height`` px tall), every fold opened.

    Per width: ``over`` ((section id, table class, px) of each table wider than its box, or of
    its scroll box wider than the page's column), ``scrolled`` (tables that scroll inside
    their own box), ``page_width`` and ``window_width`` (the page scrolls sideways if the first
    exceeds the second), ``summary_bottom`` (how far down the summary ends, folds closed) and
    ``height`` (the whole page, folds open).
    """
    out: dict[int, dict[str, Any]] = {}
    with open_page(
        path, chromium=chromium, chromedriver=chromedriver, user_data_dir=user_data_dir
    ) as driver:
        for width in widths:
            driver.set_window_size(width, height)
            driver.refresh()  # folds closed again, laid out at this width
            layout = driver.execute_script(_LAYOUT_JS)
            layout["over"] = [tuple(row) for row in layout["over"]]
            layout["scrolled"] = [tuple(row) for row in layout["scrolled"]]
            out[width] = layout
    return out
