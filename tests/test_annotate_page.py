"""The annotator's page and the admin page as people meet them, in Chromium against one real server on
127.0.0.1 for the whole module, on a real benchmark item (the first FActScore response of dev: a long
reference, 26 spans, 39 QAs):
- at 1024x600, 1366x657, 1280x800, 1920x1080 and 390x844, after each of ten answers the current row
  (aria-current="true") is what lies under its own centre: no pane covers it; the header stays one line
  above the panels' titles;
- the reference's tint marks content words only, and next / previous reach every match;
- the texts read as written ("Trivisonno's", "1947)"), and a Back button works with the mouse;
- the admin adds an annotator by name, whose link opens an item, and revokes them."""
from __future__ import annotations

import json

import pytest
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

from annotate_helpers import chromium, new_page, serve

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]
SIZES = [(1024, 600), (1366, 657), (1280, 800), (1920, 1080), (390, 844)]


@pytest.fixture(scope="module")
def app(data_dir, tmp_path_factory):
    """(links, browser): the first FActScore response of dev, k=7, an annotator per window size, a reader and one the admin adds."""
    tmp = tmp_path_factory.mktemp("annotate_page")
    rows = [json.loads(line) for line in (data_dir / "qasem-consistency" / "dev.jsonl").read_text().splitlines()]
    row = next(r for r in rows if r["dataset"] == "factscore")
    tasks = tmp / "tasks.jsonl"
    tasks.write_text(json.dumps(row) + "\n")
    names = [f"w{w}x{h}" for w, h in SIZES] + ["reader"]
    with serve(tasks, tmp / "labels.db", "k=7", f"annotators=[{','.join(names)}]") as (base, links, _), \
            chromium() as browser:
        yield links, browser


def covered(page) -> str | None:
    """None when the element under the current row's centre is inside that row, else what lies there."""
    return page.evaluate("""() => {
        const row = document.querySelector('li.row[aria-current="true"]');
        if (!row) return 'no current row';
        const b = row.getBoundingClientRect(), x = b.left + b.width / 2, y = b.top + b.height / 2;
        const hit = document.elementFromPoint(x, y);
        return hit && row.contains(hit) ? null : (hit ? hit.tagName + '#' + hit.id + '.' + hit.className : 'nothing')
            + ' at ' + Math.round(x) + ',' + Math.round(y) + ' (window ' + innerWidth + 'x' + innerHeight + ')';
    }""")


@pytest.mark.parametrize("width,height", SIZES)
def test_the_current_row_is_never_covered(app, width, height):
    links, browser = app
    dialogs = []
    page = new_page(browser, dialogs, viewport={"width": width, "height": height})
    page.goto(links["annotators"][f"w{width}x{height}"])
    header = page.locator("header").bounding_box()
    assert header["height"] < 48, f"the header wraps at {width}x{height}: {header['height']} px"
    assert header["y"] + header["height"] <= page.locator("#ref h2").bounding_box()["y"]
    for n in range(10):
        assert page.locator('li.row[aria-current="true"]').count() == 1
        assert covered(page) is None, f"answer {n}: {covered(page)}"
        if n % 2:  # the mouse on odd answers, the keyboard on even ones
            page.locator('li.row[aria-current="true"] button.yes').click()
        else:
            page.keyboard.press("y")
    assert covered(page) is None
    assert not dialogs, dialogs
    page.close()


def test_the_reading_aid_tints_content_words_and_reaches_every_match(app):
    links, browser = app
    dialogs = []
    page = new_page(browser, dialogs)
    page.goto(links["annotators"]["reader"])
    seen = 0
    for _ in range(6):  # the first answer spans; some share words with the reference
        hits = page.locator("#ref .t.hit")
        words = hits.evaluate_all("ts => ts.map((t) => t.dataset.w)")
        assert not set(words) & ENGLISH_STOP_WORDS, words
        if words:
            seen += 1
            assert page.locator("#ref .hits").is_visible()
            order = []
            for _ in range(len(words)):  # next, through every match and back to the first
                on = page.locator("#ref .t.hit.on")
                assert on.count() == 1 and on.is_visible()
                order.append(on.evaluate("t => +t.dataset.i"))
                box = on.bounding_box()
                assert page.evaluate(f"document.elementFromPoint({box['x'] + box['width'] / 2}, "
                                     f"{box['y'] + box['height'] / 2}) === document.querySelector('#ref .t.hit.on')")
                page.click("#hit-next")
            assert sorted(order) == sorted(hits.evaluate_all("ts => ts.map((t) => +t.dataset.i)"))
            assert page.locator("#ref .t.hit.on").evaluate("t => +t.dataset.i") == order[0]
            page.click("#hit-prev")
            assert page.locator("#ref .t.hit.on").evaluate("t => +t.dataset.i") == order[-1]
        page.keyboard.press("y")
    assert seen > 0
    # text as written: no space before a clitic or closing punctuation, none after an opening bracket
    ref = page.locator("#ref").inner_text()
    assert "( September 20" not in ref and "(September 20, 1947 – October 28, 2021)" in ref
    assert " ." not in ref and " ," not in ref
    # tokens are still the unit of a span: the highlight is whole tokens
    assert all(t for t in page.locator("#gen .t.hl").all_text_contents())
    # Back, with the mouse: to the previous step
    page.click('header .steps button[data-step="step2"]')
    assert page.locator("#step2").is_visible()
    page.click("#back")
    assert page.locator("#step1").is_visible() and not page.locator("#step2").is_visible()
    assert not dialogs, dialogs
    page.close()


def test_the_admin_adds_an_annotator_whose_link_works_and_revokes_them(app):
    links, browser = app
    dialogs = []
    admin = new_page(browser, dialogs)
    admin.goto(links["admin"])
    headings = admin.locator("table th").all_text_contents()
    assert all(h.strip() for h in headings), headings            # a heading on every column
    assert admin.locator("#by-dataset").text_content().count("factscore") == 1
    admin.fill('#add-annotator input[name="name"]', "<i>zoe</i>")
    admin.click("#add-annotator button")
    row = admin.locator("#by-annotator tr", has_text="<i>zoe</i>")
    link = row.locator("td").nth(-1).text_content()
    assert link.startswith("http://127.0.0.1:") and "/a/" in link
    zoe = new_page(browser, dialogs)
    zoe.goto(link)
    assert zoe.locator("header b").text_content() == "Item 1 of 1"
    row.locator("button", has_text="revoke").click()
    assert admin.locator("#by-annotator tr", has_text="<i>zoe</i>").locator("td", has_text="revoked").count() == 1
    zoe.reload()
    assert "revoked" in zoe.locator("#message").text_content()
    assert not dialogs, dialogs
