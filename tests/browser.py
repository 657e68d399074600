"""Open a report page in headless Chromium through Playwright, for the page tests. Chromium and
Playwright are test requirements (scripts/setup.sh installs them, Chromium where the user may): a missing
one fails the test, naming what is missing and how to install it; it never skips."""
from __future__ import annotations

import os
import shutil
from html.parser import HTMLParser
from pathlib import Path
from typing import Callable

import pytest

# where scripts/system_packages.sh looks: CHROMIUM_PATH, else chromium on PATH
CHROMIUM = os.environ.get("CHROMIUM_PATH") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def open_page(page_path: Path, screenshot: Path, check: Callable) -> tuple[object, list[str], list[str]]:
    """Load the page, run check(page) (its result comes back), take a full-page screenshot.
    Returns (check's result, the URLs requested, the messages of any dialog opened)."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("Python Playwright is missing: pip install -e '.[dev]' (or bash scripts/setup.sh); "
                    "the PyPI wheel carries its driver, no 'playwright install' is needed")
    if not (Path(CHROMIUM).is_file() and os.access(CHROMIUM, os.X_OK)):
        pytest.fail(f"Chromium not found at {CHROMIUM} (nor on PATH): the browser tests need it. bash "
                    "scripts/system_packages.sh installs Debian's chromium as root or with passwordless sudo "
                    "(sudo apt-get install -y chromium); or set CHROMIUM_PATH to a Chromium build")
    requests, dialogs = [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1100, "height": 900})
            page.on("request", lambda r: requests.append(r.url))
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.goto(page_path.as_uri(), wait_until="load")
            result = check(page)
            page.screenshot(path=str(screenshot), full_page=True)
        finally:
            browser.close()
    return result, requests, dialogs


def assert_visible(page, selector: str) -> None:
    """Every element the selector finds (at least one) is visible with a non-zero box."""
    loc = page.locator(selector)
    assert loc.count() > 0, f"nothing matches {selector}"
    for i in range(loc.count()):
        assert loc.nth(i).is_visible(), f"{selector} #{i} not visible"
        bb = loc.nth(i).bounding_box()
        assert bb and bb["width"] > 0 and bb["height"] > 0


class HighlightWalk(HTMLParser):
    """Parse a page back without a browser: the highlight elements of one CSS class (with their
    text) and, per token index, the ids (attribute `id_attr`, space-separated) of the highlights
    around it."""

    def __init__(self, css_class: str, id_attr: str):
        super().__init__()
        self.css_class, self.id_attr = css_class, id_attr
        self.stack, self.elems, self.tok_ids = [], [], {}

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if self.css_class in (a.get("class") or "").split():
            self.elems.append({**a, "text": ""})
            self.stack.append(self.elems[-1])
        else:
            self.stack.append(a)

    def handle_endtag(self, tag):
        self.stack.pop()

    def handle_data(self, data):
        for e in self.stack:
            if self.id_attr in e:
                e["text"] += data
        tok = self.stack[-1] if self.stack else {}
        if "data-index" in tok:
            self.tok_ids[int(tok["data-index"])] = sorted(
                i for e in self.stack if self.id_attr in e for i in e[self.id_attr].split(" "))
