"""The self-contradiction page (evaluation.contradiction_html) rendered by headless Chromium.

Hand-written predictions, made by evaluation.contradiction.prediction() itself from analysed rows
(a names conflict with nested and identical answer spans, a number conflict with crossing and
adjacent spans, a no_predicate / non_english / empty_sentence pair without a score, a pair below
the threshold with differences, unicode, HTML injection, an answer without a valid span, a flagged
pair without conflicts) are written to a page that Chromium opens through Playwright; the DOM is
then checked against the predictions and a full-page screenshot is taken (copied to
docs/contradiction_page.png when QASEM_UPDATE_DOCS=1). Chromium and Playwright are test
requirements (scripts/setup.sh installs them): a missing one fails the test, it never skips."""
from __future__ import annotations

import os
import random
import shutil
from pathlib import Path

import pytest

from browser import HighlightWalk, assert_visible, open_page
from evaluation.contradiction import prediction
from evaluation.contradiction_html import render_page, write_page

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.timeout(180)  # a hung browser fails the test instead of stalling CI
TITLE = 'Contradictions <check> & "report"'
INJECT = "<script>alert(1)</script>"
IMG = '<img src=x onerror="alert(2)">'


def _c(pred, role, rel, qa, aa, sa, qb, ab, sb, sup_a, sup_b, numbers=False, names=False):
    """One conflict (or difference) as models.contradiction.conflicts() writes it."""
    return {"predicate": pred, "role": role, "relation": rel, "numbers_differ": numbers, "names_differ": names,
            "a": {"question": qa, "answer": aa, "span": sa, "support": sup_a},
            "b": {"question": qb, "answer": ab, "span": sb, "support": sup_b}}


def _row(pid, a, b, conflicts=(), status="ok", messages=()):
    return {"id": pid, "status": status, "a_tokens": a.split(" ") if a else [], "b_tokens": b.split(" ") if b else [],
            "conflicts": list(conflicts), "messages": list(messages)}


def make_predictions() -> list[dict]:
    rows = [
        # 0: names conflict; side a: c2 nested in c1; side b: c1 and c2 share the span "Chancellor"
        (_row("merkel-17", "She was succeeded by Armin Laschet as the leader of the CDU .",
              "She was succeeded as Chancellor by Annegret Kramp-Karrenbauer in 2018 .", [
                  _c("succeeded", "R0", "disjoint", "who succeeded someone?", "Armin Laschet", [4, 6],
                     "who succeeded someone?", "Annegret Kramp-Karrenbauer", [6, 8], 0.08, 0.11, names=True),
                  _c("succeeded", "R2", "disjoint", "as what was someone succeeded?", "the leader of the CDU", [7, 12],
                     "as what was someone succeeded?", "Chancellor", [4, 5], 0.21, 0.35),
                  _c("leader", "R1", "disjoint", "what did someone lead?", "the CDU", [10, 12],
                     "what did someone lead?", "Chancellor", [4, 5], 0.40, 0.30)]), 0.873),
        # 1: number conflict; c1 [5,7) and c0 [7,9) adjacent, c2 [6,9) crosses c1 and contains c0
        (_row("rome-1960", "He won the gold medal in Rome in 1960 .", "He won the gold medal in Tokyo in 1964 .", [
            _c("won", "AM-TMP", "overlap", "when did someone win something?", "in 1960", [7, 9],
               "when did someone win something?", "in 1964", [7, 9], 0.05, 0.07, numbers=True),
            _c("won", "AM-LOC", "overlap", "where did someone win something?", "in Rome", [5, 7],
               "where did someone win something?", "in Tokyo", [5, 7], 0.12, 0.10, names=True),
            _c("won", "AM-LOC", "disjoint", "where did someone win the gold medal?", "Rome in 1960", [6, 9],
               "where did someone win the gold medal?", "Tokyo in 1964", [6, 9], 0.09, 0.06, numbers=True,
               names=True)]), 0.912),
        # 2: no predicate: no score
        (_row("nopred-3", "What a year !", "He won the gold medal in 1964 .", status="no_predicate",
              messages=["sentence a has no QA (no predicate found or parsed)"]), None),
        # 3: below the threshold: differences listed, nothing highlighted
        (_row("film-8", "The film was released in 1994 and grossed $ 28 million .",
              "The film , released in 1994 , grossed over $ 28 million worldwide .", [
                  _c("grossed", "R1", "overlap", "what did something gross?", "$ 28 million", [7, 10],
                     "what did something gross?", "over $ 28 million", [8, 12], 0.81, 0.77),
                  _c("grossed", "AM-LOC", "disjoint", "where did something gross something?", "and", [6, 7],
                     "where did something gross something?", "worldwide", [12, 13], 0.66, 0.71)]), 0.21),
        # 4: unicode and HTML injection; conflict 1's answer B has no valid span (listed, not highlighted)
        (_row("søren-<b>5</b>", f"Søren Kierkegaard was born in København in 1813 {INJECT} 🎉 .",
              "Søren Kierkegaard was born in Aarhus in 1813 – “ naïve ” & <b>bold</b> .", [
                  _c("born", "AM-LOC", "overlap", f'where was "{IMG}" born?', f"in København {INJECT}", [4, 6],
                     "where was someone born?", "in Aarhus", [4, 6], 0.02, 0.04, names=True),
                  _c("born", "AM-TMP", "overlap", "when was someone born?", "in 1813", [6, 8],
                     "when was someone born?", "in 1813 –", [20, 22], 0.5, 0.5)],
              messages=[f"note {INJECT} & more"]), 0.64),
        (_row("beijing-6", "北京 是 中国 的 首都 。", "Beijing is the capital of China .", status="non_english",
              messages=["sentence a: mostly non-Latin letters"]), None),
        (_row("empty-7", "", "It rained all day .", status="empty_sentence", messages=["a sentence is empty"]), None),
        # 7: flagged from sentence-level features alone
        (_row("flag-8", "The bridge opened in 1932 .", "The bridge opened in 1933 ."), 0.55),
    ]
    return [prediction(r, p, 0.5) for r, p in rows]


# the expected highlights, computed from the predictions independently of the renderer
def _valid(span, n):
    return span is not None and 0 <= span[0] < span[1] <= n


def expected_highlights(k: int, pred: dict, side: str) -> dict:
    """{(start, end): [ids]} for the valid spans of side, identical spans merged in conflict order."""
    n = len(pred[side].split(" ")) if pred[side] else 0
    out: dict = {}
    for j, c in enumerate(pred["conflicts"]):
        if _valid(c[side]["span"], n):
            out.setdefault(tuple(c[side]["span"]), []).append(f"p{k}-c{j}")
    return out


def cuts_of(span, spans):
    """The documented rule: a span is cut at the end of every span that starts before it and ends inside it."""
    s, e = span
    return sorted({o[1] for o in spans if o != span and o[0] < s < o[1] < e})


_DOM = """() => {
  const box = el => { const r = el.getBoundingClientRect(); return [r.width, r.height]; };
  const sum = document.querySelector('.summary');
  const out = {title: document.title, pairs: [],
    summary: {pairs: +sum.dataset.pairs, flagged: +sum.dataset.flagged, consistent: +sum.dataset.consistent,
              noScore: +sum.dataset.noScore,
              statuses: Object.fromEntries([...sum.querySelectorAll('li.status-count')].map(
                li => [li.dataset.status, +li.dataset.count]))}};
  for (const sec of document.querySelectorAll('section.pair')) {
    out.pairs.push({k: +sec.dataset.pair, id: sec.dataset.id, decision: sec.dataset.decision, domId: sec.id,
      score: sec.querySelector('.score').textContent, status: sec.querySelector('.status').textContent,
      decisionText: sec.querySelector('.decision').textContent,
      messages: [...sec.querySelectorAll('ul.messages li')].map(li => li.textContent),
      conflicts: [...sec.querySelectorAll('span.conflict')].map(el => ({
        ids: el.dataset.conflict, side: el.dataset.side, start: +el.dataset.start, end: +el.dataset.end,
        fragment: el.classList.contains('fragment'), frag: [el.dataset.fragStart, el.dataset.fragEnd],
        label: el.dataset.label || null, text: el.textContent, box: box(el),
        bg: getComputedStyle(el).backgroundColor,
        inSentence: !!el.closest('.sentence[data-side="' + el.dataset.side + '"]')})),
      tokens: [...sec.querySelectorAll('.tok')].map(el => {
        const ids = []; let a = el.parentElement;
        while (a && !a.classList.contains('sentence')) {
          if (a.dataset.conflict) ids.push(...a.dataset.conflict.split(' ')); a = a.parentElement; }
        return {side: el.dataset.side, index: +el.dataset.index, text: el.textContent, ids: ids.sort(),
                inSide: el.closest('.sentence').dataset.side}; }),
      rows: [...sec.querySelectorAll('tr.conflict')].map(tr => ({id: tr.dataset.conflict,
        cells: Object.fromEntries([...tr.querySelectorAll('td')].map(td => [td.className, td.textContent])),
        qa: ['a', 'b'].map(s => ['.q', '.ans'].map(c => tr.querySelector('td.side-' + s + ' ' + c).textContent))})),
      unplaced: [...sec.querySelectorAll('.unplaced')].map(n => ({id: n.dataset.conflict, side: n.dataset.side,
                                                                 text: n.textContent})),
      details: [...sec.querySelectorAll('details.differences')].map(d => ({open: d.open, count: +d.dataset.count,
        items: [...d.querySelectorAll('li.difference')].map(li => ({id: li.dataset.difference, text: li.textContent}))})),
      empty: [...sec.querySelectorAll('.empty')].map(e => e.textContent)});
  }
  out.elements = document.querySelectorAll('script, main b, img, iframe').length;
  out.bodyText = document.body.textContent;
  return out;
}"""


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    """The page written, opened in Chromium, screenshotted; yields (preds, dom, shot, requests, dialogs, path, opened)."""
    tmp = tmp_path_factory.mktemp("contradiction_html")
    preds = make_predictions()
    page_path = write_page(preds, tmp / "sub" / "report.html", title=TITLE)
    shot = tmp / "page.png"

    def check(page):
        dom = page.evaluate(_DOM)
        assert_visible(page, "section.pair span.conflict")
        diff = page.locator("section.pair details.differences li.difference")
        hidden_before = not diff.first.is_visible()
        page.locator("section.pair details.differences summary").click()  # native toggle, no script
        return dom, (hidden_before, diff.first.is_visible())

    (dom, opened), requests, dialogs = open_page(page_path, shot, check)
    yield preds, dom, shot, requests, dialogs, page_path, opened


def test_screenshot_and_self_contained(rendered):
    preds, dom, shot, requests, dialogs, page_path, _ = rendered
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    if os.environ.get("QASEM_UPDATE_DOCS"):  # refresh the picture on purpose, never as a side effect
        docs = ROOT / "docs"
        docs.mkdir(exist_ok=True)
        shutil.copyfile(shot, docs / "contradiction_page.png")
    assert requests == [page_path.as_uri()], f"the page loaded more than itself: {requests}"
    text = page_path.read_text(encoding="utf-8")
    assert "<script" not in text and "<link" not in text and "<img" not in text and "http" not in text
    assert dom["title"] == TITLE
    assert dialogs == [], "injected script ran"
    assert dom["elements"] == 0, "escaped text became elements"
    assert INJECT in dom["bodyText"] and '"<img src=x onerror="alert(2)">" born?' not in text


def test_summary_and_headers(rendered):
    preds, dom, *_ = rendered
    assert dom["summary"] == {"pairs": 8, "flagged": 4, "consistent": 1, "noScore": 3,
                              "statuses": {"ok": 5, "no_predicate": 1, "non_english": 1, "empty_sentence": 1}}
    assert [p["id"] for p in dom["pairs"]] == [p["id"] for p in preds]
    assert [p["k"] for p in dom["pairs"]] == list(range(len(preds)))
    assert [p["domId"] for p in dom["pairs"]] == [f"pair-{k}" for k in range(len(preds))]
    assert [p["score"] for p in dom["pairs"]] == ["87.3%", "91.2%", "n/a", "21.0%", "64.0%", "n/a", "n/a", "55.0%"]
    assert [p["decision"] for p in dom["pairs"]] == ["contradiction", "contradiction", "no-score", "consistent",
                                                    "contradiction", "no-score", "no-score", "contradiction"]
    for pred, got in zip(preds, dom["pairs"]):
        assert got["status"] == pred["status"] and got["messages"] == pred["messages"]
        if pred["p_contradiction"] is None:
            assert pred["status"] in got["decisionText"]
    assert dom["pairs"][4]["messages"] == [f"note {INJECT} & more"]
    assert any("without a conflicting QA pair" in e for e in dom["pairs"][7]["empty"])
    assert dom["pairs"][6]["empty"] == ["(empty sentence)"]


def test_tokens(rendered):
    preds, dom, *_ = rendered
    for pred, got in zip(preds, dom["pairs"]):
        for side in "ab":
            toks = [t for t in got["tokens"] if t["side"] == side]
            assert all(t["inSide"] == side for t in toks)
            assert [t["index"] for t in toks] == list(range(len(toks)))
            assert " ".join(t["text"] for t in toks) == pred[side]
    a4 = [t["text"] for t in dom["pairs"][4]["tokens"] if t["side"] == "a"]
    assert a4[0] == "Søren" and a4[5] == "København" and a4[8] == INJECT and a4[9] == "🎉"
    b4 = [t["text"] for t in dom["pairs"][4]["tokens"] if t["side"] == "b"]
    assert "“" in b4 and "naïve" in b4 and "&" in b4 and "<b>bold</b>" in b4


def test_conflicts_highlighted(rendered):
    preds, dom, *_ = rendered
    n_split = n_shared = 0
    for k, (pred, got) in enumerate(zip(preds, dom["pairs"])):
        n_elements = 0
        for side in "ab":
            toks = pred[side].split(" ") if pred[side] else []
            want = expected_highlights(k, pred, side)
            els = [e for e in got["conflicts"] if e["side"] == side]
            assert all(e["inSentence"] for e in els)
            assert {e["ids"] for e in els} == {" ".join(ids) for ids in want.values()}
            n_shared += sum(len(ids) > 1 for ids in want.values())
            for span, ids in want.items():
                mine = [e for e in els if e["ids"] == " ".join(ids)]
                cuts = cuts_of(span, list(want))
                bounds = [span[0], *cuts, span[1]]
                tiles = list(zip(bounds, bounds[1:]))
                assert all((e["start"], e["end"]) == span for e in mine)
                assert all(e["box"][0] > 0 and e["box"][1] > 0 for e in mine)
                assert all(e["bg"] not in ("rgba(0, 0, 0, 0)", "transparent") for e in mine)
                assert [e["label"] is not None for e in mine] == [False] * (len(mine) - 1) + [True]
                assert mine[-1]["label"] == ",".join(str(int(i.rsplit("-c", 1)[1]) + 1) for i in ids)
                if not cuts:
                    assert len(mine) == 1 and not mine[0]["fragment"]
                    assert mine[0]["text"] == " ".join(toks[span[0]:span[1]])
                else:
                    assert all(e["fragment"] for e in mine)
                    assert [(int(e["frag"][0]), int(e["frag"][1])) for e in mine] == tiles
                    assert [e["text"] for e in mine] == [" ".join(toks[a:b]) for a, b in tiles]
                    n_split += 1
                # the rule's promise: the element(s) of a span read as its tokens
                assert " ".join(e["text"] for e in mine) == " ".join(toks[span[0]:span[1]])
                n_elements += len(mine)
            # every token lies inside exactly the conflicts whose span covers it
            for t in (t for t in got["tokens"] if t["side"] == side):
                covering = sorted(i for sp, ids in want.items() if sp[0] <= t["index"] < sp[1] for i in ids)
                assert t["ids"] == covering, (k, side, t)
        assert len(got["conflicts"]) == n_elements
        # the two answers of one conflict carry its id on both sides, in the same colour
        for j, c in enumerate(pred["conflicts"]):
            cid = f"p{k}-c{j}"
            sides = {e["side"]: e for e in got["conflicts"] if cid in e["ids"].split(" ")}
            valid = {s for s in "ab" if _valid(c[s]["span"], len(pred[s].split(" ")))}
            assert set(sides) == valid
            first_in_both = all(e["ids"].split(" ")[0] == cid for e in sides.values())
            if valid == {"a", "b"} and first_in_both:
                assert sides["a"]["bg"] == sides["b"]["bg"]
    assert n_split == 2  # pair 1, side a and side b: "Rome in 1960" / "Tokyo in 1964" cut after "Rome" / "Tokyo"
    assert n_shared == 1  # pair 0, side b: "Chancellor" is the answer of conflicts 1 and 2
    shared = next(e for e in dom["pairs"][0]["conflicts"] if e["side"] == "b" and e["text"] == "Chancellor")
    assert shared["ids"] == "p0-c1 p0-c2" and shared["label"] == "2,3"
    merkel = {(e["side"], e["text"]): e["ids"] for e in dom["pairs"][0]["conflicts"]}
    assert merkel[("a", "Armin Laschet")] == merkel[("b", "Annegret Kramp-Karrenbauer")] == "p0-c0"
    assert merkel[("a", "the leader of the CDU")] == "p0-c1" and merkel[("a", "the CDU")] == "p0-c2"
    rome = {(e["side"], e["text"]): e["ids"] for e in dom["pairs"][1]["conflicts"]}
    assert rome[("a", "in 1960")] == rome[("b", "in 1964")] == "p1-c0"
    # the answer without a valid span is a note, not a highlight
    assert dom["pairs"][4]["unplaced"] == [{"id": "p4-c1", "side": "b", "text": dom["pairs"][4]["unplaced"][0]["text"]}]
    assert "not localised" in dom["pairs"][4]["unplaced"][0]["text"]
    assert next(e for e in dom["pairs"][4]["conflicts"] if e["side"] == "a" and e["ids"] == "p4-c0")["text"] == "in København"


def test_conflict_table(rendered):
    preds, dom, *_ = rendered
    for k, (pred, got) in enumerate(zip(preds, dom["pairs"])):
        assert [r["id"] for r in got["rows"]] == [f"p{k}-c{j}" for j in range(len(pred["conflicts"]))]
        for j, (c, row) in enumerate(zip(pred["conflicts"], got["rows"])):
            cells = row["cells"]
            assert cells["label"] == str(j + 1)
            assert cells["predicate"] == c["predicate"] and cells["role"] == c["role"]
            assert cells["relation"] == c["relation"]
            assert row["qa"] == [[c["a"]["question"], c["a"]["answer"]], [c["b"]["question"], c["b"]["answer"]]]
            flags = [w for w, key in (("numbers", "numbers_differ"), ("names", "names_differ")) if c[key]]
            assert cells["differ"] == (", ".join(flags) or "–")
            assert cells["support"] == f"A {c['a']['support']:.2f} · B {c['b']['support']:.2f}"
    assert dom["pairs"][1]["rows"][0]["cells"]["differ"] == "numbers"
    assert dom["pairs"][4]["rows"][0]["qa"][0] == [f'where was "{IMG}" born?', f"in København {INJECT}"]


def test_differences_muted_and_collapsed(rendered):
    preds, dom, *_, opened = rendered
    assert opened == (True, True)  # hidden until the reader opens it
    for k, (pred, got) in enumerate(zip(preds, dom["pairs"])):
        diffs = pred.get("differences") or []
        if not diffs:
            assert got["details"] == []
            continue
        assert got["conflicts"] == [] and got["rows"] == []  # never highlighted
        (d,) = got["details"]
        assert not d["open"] and d["count"] == len(diffs)
        assert [i["id"] for i in d["items"]] == [f"p{k}-d{j}" for j in range(len(diffs))]
        for x, item in zip(diffs, d["items"]):
            assert x["a"]["answer"] in item["text"] and x["b"]["answer"] in item["text"] and x["role"] in item["text"]
    assert sum(bool(p["details"]) for p in dom["pairs"]) == 1


def test_render_page_plain(tmp_path):
    """No browser: an empty list renders, write_page creates folders, text is escaped."""
    page = render_page([])
    assert "no prediction" in page and 'data-pairs="0"' in page
    page = render_page(make_predictions()[4:5])
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert 'data-id="søren-&lt;b&gt;5&lt;/b&gt;"' in page
    out = write_page(make_predictions()[:1], tmp_path / "a" / "b.html")
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")



def test_random_overlaps_follow_the_rule():
    """No browser: random span sets (equal, nested, crossing) on side a, parsed back with
    html.parser: identical spans share one element, every other span's elements tile it at the
    documented cuts, and every token sits inside exactly its conflicts."""
    rng = random.Random(0)
    for _ in range(300):
        n = rng.randint(1, 9)
        toks = [f"t{i}&" for i in range(n)]
        spans = []
        for _ in range(rng.randint(0, 6)):
            if spans and rng.random() < 0.25:
                spans.append(list(rng.choice(spans)))  # an identical span
            else:
                a = rng.randrange(n)
                spans.append([a, rng.randint(a + 1, n)])
        conflicts = [_c("p", "R0", "disjoint", f"q{j}", "x", sp, "q", "y", [0, 1], 0.1, 0.1) for j, sp in enumerate(spans)]
        pred = prediction(_row("x", " ".join(toks), "y", conflicts), 0.9, 0.5)
        body = render_page([pred])
        w = HighlightWalk("conflict", "data-conflict")
        w.feed(body[body.index('<div class="sentence" data-side="a"'):body.index('<div class="sentence" data-side="b"')])
        want = expected_highlights(0, pred, "a")
        assert {e["data-conflict"] for e in w.elems} == {" ".join(ids) for ids in want.values()}
        for span, ids in want.items():
            els = [e for e in w.elems if e["data-conflict"] == " ".join(ids)]
            cuts = cuts_of(span, list(want))
            bounds = [span[0], *cuts, span[1]]
            if not cuts:
                assert len(els) == 1 and "fragment" not in els[0]["class"]
            else:
                assert [(int(e["data-frag-start"]), int(e["data-frag-end"])) for e in els] == list(zip(bounds, bounds[1:]))
            assert [e["text"] for e in els] == [" ".join(toks[a:b]) for a, b in zip(bounds, bounds[1:])], (spans, ids)
        for i in range(n):
            assert w.tok_ids[i] == sorted(f"p0-c{j}" for j, (s, e) in enumerate(spans) if s <= i < e)
