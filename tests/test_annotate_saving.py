"""Answers that survive the connection, in Chromium against a real server on 127.0.0.1:
- the server is killed mid-item and comes back on the same port and database: the answers given meanwhile
  wait in the page (the header counts them), submit waits for them, and the export holds every answer,
  with no reload;
- answers the network never carried survive a reload (localStorage) and are sent afterwards;
- in a stale tab (the item submitted in another), a refused answer says so on its own row, and the
  message names the row as the page numbers it.
Answers arriving twice, late or after the submit, over HTTP, are in tests/test_annotate.py."""
from __future__ import annotations

import sqlite3

import pytest

from annotate_helpers import all_saved, chromium, export, free_port, new_page, serve, write_tasks

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]


def pending(page) -> int:
    return int(page.locator("#saved").get_attribute("data-pending"))


def test_a_server_outage_mid_item_loses_no_answer_and_submit_waits(tmp_path):
    tasks, db, port = write_tasks(tmp_path / "tasks.jsonl"), tmp_path / "labels.db", free_port()
    dialogs = []
    with chromium() as browser:
        page = new_page(browser, dialogs)
        with serve(tasks, db, "k=1", "annotators=[eve]", port=port) as (base, links, proc):
            page.goto(links["annotators"]["eve"])
            page.keyboard.press("y")                       # step 1 row 1, saved while the server runs
            all_saved(page)
            proc.kill()                                    # SIGKILL: the server is gone mid-item
            proc.wait()
            for key in "yny":                              # step 1 rows 2-4 (row 3 not covered)
                page.keyboard.press(key)
            page.wait_for_function("() => document.getElementById('saved').classList.contains('err')", timeout=10_000)
            assert pending(page) == 3 and "3 answers not saved yet" in page.locator("#saved").text_content()
            for key in "yn":                               # step 2: QA 1 supported, QA 4 not (QA 3 greyed)
                page.keyboard.press(key)
            page.keyboard.press("y")
            assert page.locator("#finish").is_visible() and pending(page) == 6
            page.keyboard.press("t")
            page.keyboard.type("written offline")
            page.keyboard.press("Escape")
            page.keyboard.press("Enter")                   # submit, while the server is still down
            page.wait_for_timeout(1500)
            assert page.locator("header b").text_content() == "Item 1 of 2"   # still here, waiting
        with serve(tasks, db, port=port) as (base, links, _):   # back on the same port and database
            page.wait_for_function("() => document.querySelector('header b') && "
                                   "document.querySelector('header b').textContent === 'Item 2 of 2'", timeout=20_000)
            assert page.evaluate("Object.keys(localStorage).length") == 0
    assert not dialogs, dialogs
    [row] = export(db, tmp_path / "export.jsonl")[:1]
    assert [s["annotations"] for s in row["spans"]] == [[1], [1], [0], [1]]
    assert [q["annotations"] for q in row["qas"]] == [[0], [1], [1], [0]]
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT note FROM assignments WHERE finished IS NOT NULL").fetchone()[0] == "written offline"
        assert con.execute("SELECT COUNT(*) FROM labels").fetchone()[0] == 7   # each answer stored once


def test_unsent_answers_survive_a_reload(tmp_path):
    tasks, db = write_tasks(tmp_path / "tasks.jsonl"), tmp_path / "labels.db"
    dialogs = []
    with serve(tasks, db, "annotators=[finn]") as (base, links, _), chromium() as browser:
        page = new_page(browser, dialogs)
        page.goto(links["annotators"]["finn"])
        page.route("**/api/*/label", lambda route: route.abort())  # the network drops every save
        for key in "yn":
            page.keyboard.press(key)
        page.wait_for_function("() => document.getElementById('saved').dataset.pending === '2'")
        page.reload()                                      # the page itself still loads
        # the two answers are back, drawn as given, and still counted as not saved
        assert "yes" in page.locator('#step1 li.row[data-target="0"]').get_attribute("class").split()
        assert "no" in page.locator('#step1 li.row[data-target="1"]').get_attribute("class").split()
        assert page.locator("#step1 li.row.cur").get_attribute("data-target") == "2"
        assert pending(page) == 2
        page.unroute("**/api/*/label")                     # the network is back: they go, in order
        all_saved(page)
    assert not dialogs, dialogs
    with sqlite3.connect(db) as con:
        assert sorted(con.execute("SELECT target, value FROM labels")) == [("0", 1), ("1", 0)]


def test_a_refused_answer_is_shown_refused_on_its_own_row(tmp_path):
    """Two tabs of one annotator: the item is submitted in the first; the second's answers are refused."""
    tasks, db = write_tasks(tmp_path / "tasks.jsonl"), tmp_path / "labels.db"
    dialogs = []
    with serve(tasks, db, "annotators=[gus]") as (base, links, _), chromium() as browser:
        stale, fresh = new_page(browser, dialogs), new_page(browser, dialogs)
        stale.goto(links["annotators"]["gus"])
        fresh.goto(links["annotators"]["gus"])
        for key in "yyyy" + "yyyy":
            fresh.keyboard.press(key)
        fresh.keyboard.press("Enter")
        fresh.wait_for_function("() => document.querySelector('header b').textContent === 'Item 2 of 2'")
        stale.keyboard.press("n")                          # step 1 row 1, on the submitted item
        row = stale.locator('#step1 li.row[data-target="0"]')
        stale.wait_for_function("() => document.querySelector('#step1 li.row[data-target=\"0\"]').classList.contains('refused')")
        assert "refused" in row.locator(".v").text_content() and "step 1 row 1" in row.text_content()
        assert "refused" in stale.locator("#saved").text_content() and "all saved" not in stale.locator("#saved").text_content()
        assert "step 1 row 1" in stale.locator("#msg").text_content()
        assert stale.locator("#msg").is_visible()          # outside the scrolling panes: never covered
        assert "yes" not in row.get_attribute("class").split()
    assert not dialogs, dialogs
    with sqlite3.connect(db) as con:  # the stale answer changed nothing
        assert ("span", "0", 1) in con.execute("SELECT kind, target, value FROM labels").fetchall()
