"""The annotation app as annotators use it: a real `python -m annotate.serve` on 127.0.0.1 and headless
Chromium (Playwright), as the report-page tests use them (a missing Chromium or Playwright fails, never skips).

- Two annotators do one item end to end, one with the mouse, one only from the keyboard (going back to
  step 1 on the way); the export equals what they clicked, and a QA whose question is a <script> shows
  as text and never runs.
- The server is killed (SIGKILL) mid-item; after a restart on the same database nothing saved is lost
  and the annotator resumes at the first unanswered span.
The step-2 screenshot goes to docs/annotation_page.png when QASEM_UPDATE_DOCS=1."""
from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from annotate_helpers import SCRIPT_QUESTION, all_saved, chromium, export, new_page, serve, write_tasks

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.timeout(240)


def test_two_annotators_mouse_and_keyboard_export_what_they_clicked(tmp_path):
    tasks, db = write_tasks(tmp_path / "tasks.jsonl"), tmp_path / "labels.db"
    dialogs = []
    with serve(tasks, db, "k=2", "annotators=[alice,bob]") as (base, links, _), chromium() as browser:
        # alice, with the mouse: spans 0, 1, 3 covered, span 2 not (so QA 2 is unsupported without asking)
        alice = new_page(browser, dialogs)
        alice.goto(links["annotators"]["alice"])
        assert alice.locator("header b").text_content() == "Item 1 of 2"
        assert alice.locator("#gen .t.pred").text_content() == "approved"  # span 0's QA is about "approved"
        for span, yes in [(0, True), (1, True), (2, False), (3, True)]:
            alice.click(f'#step1 li.row[data-target="{span}"] button.{"yes" if yes else "no"}')
        assert alice.locator("#step2").is_visible()
        assert "span not covered" in alice.locator('#step2 li.row[data-target="2"]').text_content()
        # the predicate of the current QA is marked in the generated text, its answer highlighted
        assert alice.locator("#gen .t.pred").text_content() == "approved"
        assert alice.locator("#gen .t.hl").all_text_contents() == ["The", "council"]
        for qa, yes in [(0, True), (1, True), (3, False)]:
            alice.click(f'#step2 li.row[data-target="{qa}"] button.{"yes" if yes else "no"}')
        # the <script> question is text on the page and never ran
        assert SCRIPT_QUESTION in alice.locator('#step2 li.row[data-target="3"] .q').text_content()
        assert alice.evaluate("window.__pwned") is None
        alice.fill("#note", "alice: <b>not bold</b>")
        all_saved(alice)
        if os.environ.get("QASEM_UPDATE_DOCS"):
            alice.keyboard.press("Escape")
            alice.click('header .steps button[data-step="step2"]')
            alice.screenshot(path=str(ROOT / "docs" / "annotation_page.png"))
            alice.click('header .steps button[data-step="finish"]')
        alice.click("#submit")
        alice.wait_for_url(links["annotators"]["alice"])
        alice.wait_for_function("() => document.querySelector('header b').textContent === 'Item 2 of 2'")

        # bob, keyboard only: all spans covered; in step 2 back to step 1 and forward again, then a note
        bob = new_page(browser, dialogs)
        bob.goto(links["annotators"]["bob"])
        keys = bob.keyboard
        for _ in range(4):
            keys.press("y")
        assert bob.locator("#step2").is_visible()
        keys.press("y")                                    # QA 0 supported
        keys.press("b")
        assert bob.locator("#step1").is_visible() and not bob.locator("#step2").is_visible()
        keys.press("f")
        assert bob.locator('#step2 li.row.cur').get_attribute("data-target") == "1"
        for key in "nyy":                                  # QA 1 not supported, QA 2 and QA 3 supported
            keys.press(key)
        keys.press("t")
        keys.type("bob's note")
        keys.press("Escape")
        all_saved(bob)
        keys.press("Enter")
        bob.wait_for_function("() => document.querySelector('header b').textContent === 'Item 2 of 2'")
        assert bob.evaluate("window.__pwned") is None
    assert not dialogs, dialogs

    rows = export(db, tmp_path / "export.jsonl")  # min_votes = k = 2: the item both submitted
    assert len(rows) == 1 and rows[0]["source_id"] == 1
    assert [s["annotations"] for s in rows[0]["spans"]] == [[1, 1], [1, 1], [0, 1], [1, 1]]  # 1 = covered
    assert [q["annotations"] for q in rows[0]["qas"]] == [[0, 0], [0, 1], [1, 0], [1, 0]]    # 1 = not supported
    assert rows[0]["qas"][3]["question"] == SCRIPT_QUESTION
    with sqlite3.connect(db) as con:
        notes = dict(con.execute("SELECT n.name, a.note FROM assignments a JOIN annotators n USING (annotator_id)"
                                 " WHERE a.finished IS NOT NULL"))
    assert notes == {"alice": "alice: <b>not bold</b>", "bob": "bob's note"}


def test_a_killed_server_loses_nothing_saved(tmp_path):
    tasks, db = write_tasks(tmp_path / "tasks.jsonl"), tmp_path / "labels.db"
    dialogs = []
    with chromium() as browser:
        with serve(tasks, db, "annotators=[carol]") as (base, links, proc):
            page = new_page(browser, dialogs)
            page.goto(links["annotators"]["carol"])
            page.keyboard.press("y")
            page.keyboard.press("n")
            all_saved(page)
            proc.kill()  # SIGKILL mid-item: no shutdown code runs
            proc.wait()
        with serve(tasks, db) as (base, links, _):
            page.goto(links["annotators"]["carol"])  # the new port: the links file was rewritten
            assert page.locator("header b").text_content() == "Item 1 of 2"
            assert page.locator('#step1 li.row[data-target="0"]').get_attribute("class").split().count("yes") == 1
            assert "no" in page.locator('#step1 li.row[data-target="1"]').get_attribute("class").split()
            assert page.locator("#step1 li.row.cur").get_attribute("data-target") == "2"  # resumes here
            page.keyboard.press("y")
            all_saved(page)
    with sqlite3.connect(db) as con:
        saved = sorted(con.execute("SELECT kind, target, value FROM labels"))
    assert saved == [("span", "0", 1), ("span", "1", 0), ("span", "2", 1)]
    assert not dialogs, dialogs


def test_qa_check_and_the_suggestion_after_the_answer_on_a_reports_task(tmp_path):
    """A consistency report served with the QA check: the dropped QA's span is not asked, the model's
    P(supported) appears only once the QA is answered, and the export says what the protocol implies."""
    import json

    report = {"id": "p1", "sentences": [{"index": 0, "tokens": ["Ann", "sold", "the", "house", "."], "predicates": [
        {"predicate_index": 1, "predicate": "sold", "predicate_type": "verbal", "qas": [
            {"question": "who sold something?", "answer": "Ann", "answer_span": [0, 1], "score": 0.9},
            {"question": "what did someone sell?", "answer": "the house", "answer_span": [2, 4], "score": 0.2}]}]}]}
    tasks, pairs, db = tmp_path / "reports.jsonl", tmp_path / "pairs.jsonl", tmp_path / "labels.db"
    tasks.write_text(json.dumps(report) + "\n")
    pairs.write_text(json.dumps({"id": "p1", "reference": "Ann sold her house to Bob."}) + "\n")
    dialogs = []
    with serve(tasks, db, f"references={pairs}", "qa_check=true", "annotators=[dan]") as (base, links, _), \
            chromium() as browser:
        page = new_page(browser, dialogs)
        page.goto(links["annotators"]["dan"])
        assert page.locator("#check").is_visible()
        for key in "yn":          # keep QA 0, drop QA 1
            page.keyboard.press(key)
        assert page.locator("#step1").is_visible()
        assert not page.locator('#step1 li.row[data-target="1"]').is_visible()  # its only QA was dropped
        page.keyboard.press("y")  # span 0 covered
        sugg = page.locator('#step2 li.row[data-target="0"] .sugg')
        assert page.locator("#step2").is_visible() and not sugg.is_visible()
        page.keyboard.press("n")  # QA 0 not supported: the last question, so on to the note; the score is unhidden
        assert page.locator("#finish").is_visible()
        assert sugg.evaluate("e => e.hidden") is False and sugg.text_content() == "model: P(supported) 0.90"
        all_saved(page)
        page.keyboard.press("Enter")
        page.wait_for_function("() => document.getElementById('message') !== null")
    assert not dialogs, dialogs
    [row] = export(db, tmp_path / "export.jsonl", "min_votes=1")
    assert row["source_id"] == "p1" and row["summary"] == [["Ann", "sold", "the", "house", "."]]
    assert [q["annotations"] for q in row["qas"]] == [[1], [1]]      # answered not supported; dropped
    assert [s["annotations"] for s in row["spans"]] == [[1], [0]]    # covered; all its QAs dropped


def test_a_step_2_greyed_by_step_1_is_passed_over(tmp_path):
    """Every span not covered: every QA is unsupported without asking, so step 1 leads straight to the note."""
    tasks, db = write_tasks(tmp_path / "tasks.jsonl"), tmp_path / "labels.db"
    dialogs = []
    with serve(tasks, db, "k=1", "annotators=[fay]") as (base, links, _), chromium() as browser:
        page = new_page(browser, dialogs)
        page.goto(links["annotators"]["fay"])
        for _ in range(4):
            page.keyboard.press("n")
        assert page.locator("#finish").is_visible()
        all_saved(page)
        page.keyboard.press("Enter")
        page.wait_for_function("() => document.querySelector('header b').textContent === 'Item 2 of 2'")
    assert not dialogs, dialogs
    [row] = export(db, tmp_path / "export.jsonl", "min_votes=1")[:1]
    assert [q["annotations"] for q in row["qas"]] == [[1]] * 4 and [s["annotations"] for s in row["spans"]] == [[0]] * 4
