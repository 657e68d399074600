"""The consistency report page (evaluation.consistency_html) rendered by headless Chromium.

Hand-written reports (unsupported spans in two sentences, nested / equal / adjacent / crossing
spans, an unlocalisable span, a no-predicate report, an empty one, tokens with HTML special
characters) are written to a page that Chromium opens through Playwright; the DOM is then checked
against the reports and a full-page screenshot is taken (copied to docs/consistency_page.png for the
README when QASEM_UPDATE_DOCS=1). Chromium and Playwright are test requirements (scripts/setup.sh installs them): a missing
one fails the test, it never skips."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from browser import HighlightWalk, assert_visible, open_page
from evaluation.consistency_html import render_page, write_page

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.timeout(180)  # a hung browser fails the test instead of stalling CI
TITLE = 'Consistency <check> & "report"'


def _qa(q, a, span, score, sup):
    return {"question": q, "answer": a, "answer_span": span, "score": score, "supported": sup}


def _pred(idx, pred, form, qas, status="ok", ptype="verbal", generated=""):
    return {"predicate_index": idx, "predicate": pred, "predicate_type": ptype, "verb_form": form,
            "status": status, "generated": generated, "qas": qas}


def _finish(rep: dict) -> dict:
    """Counts, score and the unsupported list, derived from the QAs as models.consistency does."""
    qas = [(s, p, qa) for s in rep["sentences"] for p in s["predicates"] for qa in p["qas"]]
    rep["n_qas"] = len(qas)
    rep["n_supported"] = sum(bool(qa["supported"]) for _, _, qa in qas)
    rep["score"] = rep["n_supported"] / rep["n_qas"] if qas else None
    rep["unsupported"] = [{"sentence": s["index"], "predicate_index": p["predicate_index"],
                           "predicate": p["predicate"], "question": qa["question"], "answer": qa["answer"],
                           "answer_span": qa["answer_span"], "score": qa["score"]}
                          for s, p, qa in qas if qa["supported"] is False]
    return rep


def make_reports() -> list[dict]:
    # 0: one unsupported span in each of two sentences; tokens and questions with <, &, quotes;
    #    one unsupported QA without a span (shown as a note, not highlighted)
    s0 = ["The", "<b>fox</b>", "jumped", "over", "AT&T", "'s", '"fence"', "."]
    s1 = ["It", "landed", "in", "a", "<garden>", "&", "smiled", "."]
    r0 = _finish({
        "id": "pair-0", "status": "ok", "reference_words": 812, "reference_chunks": 3,
        "messages": ["reference of 812 words scored in 3 overlapping windows"],
        "sentences": [
            {"index": 0, "tokens": s0, "status": "ok", "predicates": [
                _pred(2, "jumped", "jump", [
                    _qa("who jumped?", "The <b>fox</b>", [0, 2], 0.91, True),
                    _qa('what did someone jump "over"?', 'over AT&T \'s "fence"', [3, 7], 0.12, False)])]},
            {"index": 1, "tokens": s1, "status": "ok", "predicates": [
                _pred(1, "landed", "land", [
                    _qa("what landed?", "It", [0, 1], 0.8, True),
                    _qa("where did something land?", "in a <garden> &", [2, 6], 0.3, False)]),
                _pred(6, "smiled", "smile", [
                    _qa("who smiled?", "It", [0, 1], 0.7, True),
                    _qa("why did someone smile?", "for no reason", None, 0.05, False)])]}]})
    # 1: nested, equal, adjacent and crossing spans; a no-predicate sentence; no_qas and
    #    undecodable predicates
    t0 = ["Smith", "sold", "the", "old", "house", "to", "Jones", "for", "cash", "yesterday", "."]
    r1 = _finish({
        "id": "pair-1", "status": "ok", "reference_words": 95, "reference_chunks": 1,
        "messages": ["sentence 1: no predicate found",
                     "sentence 2, predicate 'announcement' (token 4): parser output could not be decoded"],
        "sentences": [
            {"index": 0, "tokens": t0, "status": "ok", "predicates": [
                _pred(1, "sold", "sell", [
                    _qa("who sold something?", "Smith", [0, 1], 0.95, True),
                    _qa("what did someone sell?", "the old house", [2, 5], 0.2, False),
                    _qa("what was sold?", "the old house", [2, 5], 0.22, False),      # equal span
                    _qa("what kind of thing was sold?", "old house", [3, 5], 0.25, False),  # nested
                    _qa("what was sold, in part?", "the old", [2, 4], 0.3, False),  # same start; crosses [3, 5)
                    _qa("who did someone sell something to?", "to Jones", [5, 7], 0.1, False),  # adjacent
                    _qa("how did someone sell something?", "Jones for cash", [6, 9], 0.15, False),  # crosses
                    _qa("when did someone sell something?", "yesterday", [9, 10], 0.4, False)])]},
            {"index": 1, "tokens": ["Nothing", "here", "."], "status": "no_predicate", "predicates": []},
            {"index": 2, "tokens": ["Prices", "rose", "after", "the", "announcement", "."], "status": "ok",
             "predicates": [
                 _pred(1, "rose", "rise", [], status="no_qas"),
                 _pred(4, "announcement", "announce", [], status="undecodable", ptype="nominal",
                       generated="what was announced?<extra_id_2><oops> & more")]}]})
    # 2: no predicate anywhere; 3: empty generated text
    r2 = _finish({"id": "pair-2", "status": "no_predicates", "reference_words": 40, "reference_chunks": 0,
                  "messages": ["sentence 0: no predicate found", "no QA was extracted from the generated text: no score"],
                  "sentences": [{"index": 0, "tokens": ["Hello", "<world>", "!"], "status": "no_predicate",
                                 "predicates": []}]})
    r3 = _finish({"id": "pair-3", "status": "empty_generated", "reference_words": 40, "reference_chunks": 0,
                  "messages": ["the generated text is empty: nothing to check"], "sentences": []})
    return [r0, r1, r2, r3]


def _sentence(rep, idx):
    return next(s for s in rep["sentences"] if s["index"] == idx)


def _valid(u, rep):
    span = u["answer_span"]
    return span is not None and 0 <= span[0] < span[1] <= len(_sentence(rep, u["sentence"])["tokens"])


def _crosses(a, b):
    return a[0] < b[0] < a[1] < b[1] or b[0] < a[0] < b[1] < a[1]


# collect everything the checks need from the DOM in one call
_DOM = """() => {
  const box = el => { const r = el.getBoundingClientRect(); return [r.width, r.height]; };
  const out = {reports: []};
  for (const sec of document.querySelectorAll('section.report')) {
    const rep = {k: +sec.dataset.report, id: sec.dataset.id,
      score: sec.querySelector('.score').textContent, status: sec.querySelector('.status').textContent,
      counts: sec.querySelector('.counts').textContent,
      messages: [...sec.querySelectorAll('ul.messages li')].map(li => li.textContent),
      spans: [...sec.querySelectorAll('.unsupported')].map(el => ({
        id: el.dataset.span, sentence: +el.dataset.sentence, start: +el.dataset.start, end: +el.dataset.end,
        question: el.dataset.question, fragment: el.classList.contains('fragment'),
        frag: [el.dataset.fragStart, el.dataset.fragEnd], text: el.textContent, box: box(el),
        bg: getComputedStyle(el).backgroundColor})),
      tokens: [...sec.querySelectorAll('.tok')].map(el => {
        const ids = []; let a = el.parentElement;
        while (a && !a.classList.contains('sentence')) { if (a.dataset.span) ids.push(a.dataset.span); a = a.parentElement; }
        return {sentence: +el.dataset.sentence, index: +el.dataset.index, text: el.textContent,
                predicate: el.classList.contains('predicate'), spans: ids.sort(), box: box(el)}; }),
      predicates: [...sec.querySelectorAll('.predicate')].map(el => ({
        sentence: +el.dataset.sentence, index: +el.dataset.index, text: el.textContent, box: box(el)})),
      blocks: [...sec.querySelectorAll('.pred-block')].map(el => ({
        sentence: +el.dataset.sentence, index: +el.dataset.index, status: el.dataset.status,
        head: el.querySelector('.pred-head').textContent,
        note: (el.querySelector('.pred-note') || {}).textContent || null,
        generated: (el.querySelector('pre.generated') || {}).textContent || null,
        rows: [...el.querySelectorAll('tr.qa')].map(tr => ({
          cells: [...tr.querySelectorAll('td')].map(td => td.textContent), cls: tr.className,
          span: tr.dataset.span || null}))})),
      sentences: [...sec.querySelectorAll('.sentence')].map(el => ({
        index: +el.dataset.sentence, status: el.dataset.status,
        note: (el.querySelector('.sentence-note') || {}).textContent || null,
        unplaced: [...el.querySelectorAll('.unplaced')].map(n => n.textContent)})),
      empty: !!sec.querySelector('p.empty')};
    out.reports.push(rep);
  }
  out.injected = document.querySelectorAll('main b, main garden, main world, main oops, script').length;
  out.title = document.title;
  return out;
}"""


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    """The page written, opened in Chromium, screenshotted; yields (reports, dom, screenshot, requests)."""
    tmp = tmp_path_factory.mktemp("consistency_html")
    reports = make_reports()
    page_path = write_page(reports, tmp / "sub" / "report.html", title=TITLE)
    shot = tmp / "page.png"

    def check(page):
        for sel in (".unsupported[data-span]", ".tok.predicate"):  # Playwright's own visibility
            assert_visible(page, f"section.report {sel}")
        return page.evaluate(_DOM)

    dom, requests, _ = open_page(page_path, shot, check)
    yield reports, dom, shot, requests, page_path


def test_screenshot_and_self_contained(rendered):
    reports, dom, shot, requests, page_path = rendered
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    if os.environ.get("QASEM_UPDATE_DOCS"):  # refresh the README's picture on purpose, never as a side effect
        docs = ROOT / "docs"
        docs.mkdir(exist_ok=True)
        shutil.copyfile(shot, docs / "consistency_page.png")
    assert requests == [page_path.as_uri()], f"the page loaded more than itself: {requests}"
    text = page_path.read_text(encoding="utf-8")
    assert "<script" not in text and "<link" not in text and "http" not in text
    assert dom["title"] == TITLE
    assert dom["injected"] == 0, "escaped text became elements"


def test_headers(rendered):
    reports, dom, *_ = rendered
    assert [r["id"] for r in dom["reports"]] == [r["id"] for r in reports]
    assert [r["score"] for r in dom["reports"]] == ["50.0%", "12.5%", "n/a", "n/a"]
    for rep, got in zip(reports, dom["reports"]):
        assert got["status"] == rep["status"]
        assert got["messages"] == rep["messages"]
        assert got["counts"].startswith(f"{rep['n_supported']} of {rep['n_qas']} QAs supported")
        assert f"{rep['reference_words']} words" in got["counts"]
    assert dom["reports"][3]["empty"] and dom["reports"][3]["tokens"] == []


def test_unsupported_spans_highlighted(rendered):
    reports, dom, *_ = rendered
    n_split = 0
    for k, (rep, got) in enumerate(zip(reports, dom["reports"])):
        expected = {f"r{k}-u{j}": u for j, u in enumerate(rep["unsupported"]) if _valid(u, rep)}
        assert {s["id"] for s in got["spans"]} == set(expected)
        for sid, u in expected.items():
            toks = _sentence(rep, u["sentence"])["tokens"]
            start, end = u["answer_span"]
            els = [s for s in got["spans"] if s["id"] == sid]
            for el in els:
                assert (el["sentence"], el["start"], el["end"]) == (u["sentence"], start, end)
                assert el["question"] == u["question"]
                assert el["box"][0] > 0 and el["box"][1] > 0
                assert el["bg"] not in ("rgba(0, 0, 0, 0)", "transparent")
            # the documented rule: cut at the end of every span that starts before it and ends inside it
            others = [v["answer_span"] for w, v in expected.items() if w != sid and v["sentence"] == u["sentence"]]
            cuts = sorted({o[1] for o in others if o[0] < start < o[1] < end})
            assert not cuts or any(_crosses(u["answer_span"], o) for o in others)
            bounds = [start, *cuts, end]
            tiles = list(zip(bounds, bounds[1:]))
            if not cuts:  # disjoint, adjacent, equal, nested: one element, its text = the span's tokens
                assert len(els) == 1 and not els[0]["fragment"], sid
                assert els[0]["text"] == " ".join(toks[start:end])
            else:  # crossing: fragments tiling the span exactly at the cuts
                assert all(el["fragment"] for el in els), sid
                assert [(int(el["frag"][0]), int(el["frag"][1])) for el in els] == tiles
                assert [el["text"] for el in els] == [" ".join(toks[a:b]) for a, b in tiles]
                assert " ".join(el["text"] for el in els) == " ".join(toks[start:end])
                n_split += 1
        # token level: each token lies inside exactly the spans that cover it
        for t in got["tokens"]:
            covering = sorted(sid for sid, u in expected.items()
                              if u["sentence"] == t["sentence"] and u["answer_span"][0] <= t["index"] < u["answer_span"][1])
            assert sorted(set(t["spans"])) == covering, t
            assert t["text"] == _sentence(rep, t["sentence"])["tokens"][t["index"]]
    assert n_split == 2  # pair-1's crossing pairs [2,4)/[3,5) and [5,7)/[6,9): the later-opened one is fragmented
    # the span without a position is listed, not highlighted
    assert dom["reports"][0]["sentences"][1]["unplaced"] and "for no reason" in dom["reports"][0]["sentences"][1]["unplaced"][0]


def test_predicates_and_qa_rows(rendered):
    reports, dom, *_ = rendered
    for k, (rep, got) in enumerate(zip(reports, dom["reports"])):
        want = {(s["index"], p["predicate_index"]): (s, p) for s in rep["sentences"] for p in s["predicates"]}
        assert {(p["sentence"], p["index"]) for p in got["predicates"]} == set(want)
        assert len(got["predicates"]) == len(want)
        for p in got["predicates"]:
            s, pred = want[(p["sentence"], p["index"])]
            assert p["text"] == s["tokens"][p["index"]] and p["box"][0] > 0 and p["box"][1] > 0
        assert len(got["blocks"]) == len(want)
        for b in got["blocks"]:
            s, pred = want[(b["sentence"], b["index"])]
            assert b["head"].startswith(pred["predicate"]) and f"({pred['verb_form']})" in b["head"]
            assert len(b["rows"]) == len(pred["qas"])
            for row, qa in zip(b["rows"], pred["qas"]):
                assert row["cells"][0] == qa["question"]
                assert row["cells"][1].startswith(qa["answer"])
                assert row["cells"][2] == f"{qa['score']:.2f}"
                assert row["cells"][3] == ("supported" if qa["supported"] else "unsupported")
                assert ("is-unsupported" in row["cls"]) == (qa["supported"] is False)
                if qa["supported"] is False and qa["answer_span"] is not None:
                    assert row["span"] in {sp["id"] for sp in got["spans"]}
            if pred["status"] != "ok":
                assert b["status"] == pred["status"] and b["note"].startswith(pred["status"])
        for s in got["sentences"]:
            st = _sentence(rep, s["index"])["status"]
            assert s["status"] == st
            assert (s["note"] is not None) == (st != "ok")
            if st != "ok":
                assert s["note"].startswith(st)
    undecodable = next(b for b in dom["reports"][1]["blocks"] if b["status"] == "undecodable")
    assert undecodable["generated"] == "what was announced?<extra_id_2><oops> & more"


def test_special_characters_render_as_text(rendered):
    reports, dom, *_ = rendered
    toks = {(t["sentence"], t["index"]): t["text"] for t in dom["reports"][0]["tokens"]}
    assert toks[(0, 1)] == "<b>fox</b>" and toks[(0, 4)] == "AT&T" and toks[(0, 6)] == '"fence"'
    assert toks[(1, 4)] == "<garden>" and toks[(1, 5)] == "&"
    span = next(s for s in dom["reports"][0]["spans"] if s["start"] == 3)
    assert span["text"] == 'over AT&T \'s "fence"' and span["question"] == 'what did someone jump "over"?'
    assert [t["text"] for t in dom["reports"][2]["tokens"]] == ["Hello", "<world>", "!"]


def test_render_page_plain(tmp_path):
    """No browser: an empty list renders, write_page creates folders, text is escaped."""
    assert "no report" in render_page([])
    html_text = render_page(make_reports()[:1])
    assert "&lt;b&gt;fox&lt;/b&gt;" in html_text and "<b>" not in html_text
    assert 'data-question="what did someone jump &quot;over&quot;?"' in html_text
    out = write_page(make_reports()[2:], tmp_path / "a" / "b.html")
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_random_overlaps_follow_the_rule():
    """No browser: random span sets in one sentence, parsed back with html.parser: every span's
    elements tile it at the documented cuts and every token sits inside exactly its spans."""
    import random

    rng = random.Random(0)
    for _ in range(300):
        n = rng.randint(1, 9)
        toks = [f"t{i}&" for i in range(n)]
        spans = []
        for j in range(rng.randint(0, 5)):
            a = rng.randrange(n)
            spans.append([a, rng.randint(a + 1, n)])
        rep = {"id": "x", "sentences": [{"index": 0, "tokens": toks, "status": "ok", "predicates": []}],
               "unsupported": [{"sentence": 0, "predicate_index": 0, "question": f"q{j}", "answer": "",
                                "answer_span": sp, "score": 0.1} for j, sp in enumerate(spans)]}
        body = render_page([rep])
        w = HighlightWalk("unsupported", "data-span")
        w.feed(body[body.index('<div class="sentence"'):body.index('<div class="qas">')])
        for j, (s, e) in enumerate(spans):
            els = [x for x in w.elems if x["data-span"] == f"r0-u{j}"]
            cuts = sorted({o[1] for k, o in enumerate(spans) if k != j and o[0] < s < o[1] < e})
            bounds = [s, *cuts, e]
            if not cuts:
                assert len(els) == 1 and els[0]["class"] == "unsupported"
            else:
                assert [(int(x["data-frag-start"]), int(x["data-frag-end"])) for x in els] == list(zip(bounds, bounds[1:]))
            assert [x["text"] for x in els] == [" ".join(toks[a:b]) for a, b in zip(bounds, bounds[1:])], (spans, j)
        for i in range(n):
            assert w.tok_ids[i] == sorted(f"r0-u{j}" for j, (s, e) in enumerate(spans) if s <= i < e)
