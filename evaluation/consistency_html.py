"""One self-contained HTML page (inline CSS, no script, no external resource) showing consistency
reports (models.consistency): per report a header (id, score, counts, status, messages), then the
generated text sentence by sentence with the predicates and the unsupported answers highlighted,
and under each sentence its QAs listed per predicate, as in the QASemConsistency annotation
interface.

    from evaluation.consistency_html import write_page
    write_page(reports, "report.html")

Markup contract (what tests/test_consistency_html.py checks):
- each report is a `section.report` with `data-report` = its position and `data-id` = its id;
- each token is a `span.tok` with `data-sentence` and `data-index`; a predicate token also has
  class `predicate`;
- each unsupported answer j of report k (the report's `unsupported` list; derived from the QAs
  with `supported` false when the list is absent) is a `span.unsupported` with
  `data-span="r{k}-u{j}"`, `data-sentence`, `data-start`, `data-end` (its `answer_span`, end
  exclusive) and `data-question`, wrapping exactly the tokens of its span; its text is its tokens
  joined by one space. Spans that are disjoint, adjacent, equal or nested each get one element
  (nested elements are nested; `data-depth` 0-2 stacks their underlines). Crossing spans (they
  overlap, neither contains the other) cannot all nest in HTML: a span is split at the end of
  every span that starts before it and ends strictly inside it, into consecutive elements with
  the same `data-span`, class `fragment` and `data-frag-start` / `data-frag-end` (token range of
  the fragment) that tile its span; their texts, in document order, joined by one space, are its
  tokens joined by one space. Only the first fragment carries the HTML `id`;
- each predicate's QA list is a `div.pred-block` (`data-sentence`, `data-index`) with one
  `tr.qa` per QA; an unsupported QA's row has `data-span` pointing at its highlighted answer.
An unsupported answer whose span is missing or outside its sentence is listed in a note under the
sentence instead of being highlighted.
"""
from __future__ import annotations

from pathlib import Path

from evaluation.html_page import document, nest_spans, write
from evaluation.html_page import esc as _e, num as _num, pct as _pct, valid_span as _valid_span

DEFAULT_TITLE = "Factual-consistency report"

CSS = """
:root { --red: #c62828; --red-bg: rgba(229, 57, 53, .20); --blue: #0d47a1; --blue-bg: #dbe9ff;
        --green: #2e7d32; --green-bg: #e3f4e4; --amber: #8a5a00; --amber-bg: #fff2cc; --grey: #5f6368; }
* { box-sizing: border-box; }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", Arial, sans-serif;
       color: #1f2328; background: #f6f7f9; margin: 0; padding: 24px; }
main { max-width: 1040px; margin: 0 auto; }
h1 { font-size: 22px; margin: 0 0 12px; }
h2 { font-size: 18px; margin: 0; }
.legend, .index, .report { background: #fff; border: 1px solid #d8dce1; border-radius: 8px;
                           padding: 12px 16px; margin-bottom: 16px; }
.legend span.item { margin-right: 18px; white-space: nowrap; }
.index table { border-collapse: collapse; }
.index td, .index th { padding: 2px 12px 2px 0; text-align: left; }
.report-head { display: flex; flex-wrap: wrap; align-items: baseline; gap: 6px 16px;
               border-bottom: 1px solid #e4e7eb; padding-bottom: 8px; margin-bottom: 8px; }
.score { font-size: 20px; font-weight: 700; }
.counts { color: var(--grey); }
.status { display: inline-block; padding: 0 8px; border-radius: 10px; font-size: 13px;
          font-family: ui-monospace, "DejaVu Sans Mono", monospace; }
.status.ok { background: var(--green-bg); color: var(--green); }
.status.warn { background: var(--amber-bg); color: var(--amber); }
ul.messages { margin: 4px 0 8px; padding-left: 20px; color: #3c4043; }
.sentence { margin: 12px 0 4px; }
.sent-no { color: var(--grey); font-size: 12px; margin-right: 6px; font-family: ui-monospace, monospace; }
.text { font-size: 17px; line-height: 2.3; }
.tok { white-space: pre-wrap; }
.predicate { color: var(--blue); background: var(--blue-bg); font-weight: 700; border-radius: 3px;
             padding: 1px 2px; outline: 1px solid #9bbcf2; }
.unsupported { background: var(--red-bg); border-bottom: 2px solid var(--red); border-radius: 3px;
               padding: 2px 0 7px; }
.unsupported[data-depth="1"] { padding-bottom: 4px; }
.unsupported[data-depth="2"] { padding-bottom: 1px; border-bottom-style: dotted; }
.unsupported.fragment { border-bottom-style: dashed; }
.note { display: inline-block; margin: 2px 0; padding: 1px 8px; border-radius: 4px;
        background: var(--amber-bg); color: var(--amber); font-size: 13px; }
.qas { margin: 4px 0 10px 28px; }
.pred-block { margin: 6px 0 8px; }
.pred-head { font-weight: 600; }
.pred-head .form { color: var(--grey); font-weight: 400; }
.pred-head .ptype { color: var(--grey); font-weight: 400; font-size: 12px; }
table.qa-table { border-collapse: collapse; margin: 2px 0 0 12px; font-size: 14px; }
table.qa-table td { padding: 2px 14px 2px 0; vertical-align: top; }
td.q { color: #3c4043; }
td.sc { font-family: ui-monospace, "DejaVu Sans Mono", monospace; text-align: right; }
tr.qa.is-unsupported td.a { color: var(--red); font-weight: 600; }
.badge { display: inline-block; padding: 0 7px; border-radius: 10px; font-size: 12px; font-weight: 600; }
.badge.supported { background: var(--green-bg); color: var(--green); }
.badge.unsupported-badge { background: var(--red-bg); color: var(--red); }
.badge.unscored { background: #eceff1; color: var(--grey); }
pre.generated { white-space: pre-wrap; font-size: 12px; background: #f3f4f6; padding: 4px 8px; margin: 2px 0; }
.empty { color: var(--grey); font-style: italic; }
"""

SENTENCE_NOTES = {
    "no_predicate": "no predicate found in this sentence",
    "no_tokens": "empty sentence (no tokens)",
}
PREDICATE_NOTES = {
    "no_qas": "the parser found no QA for this predicate",
    "undecodable": "the parser output could not be decoded",
}


def _unsupported_list(report: dict) -> list[dict]:
    """The report's `unsupported` entries; derived from the QAs when the list is absent."""
    if report.get("unsupported") is not None:
        return list(report["unsupported"])
    out = []
    for s in report.get("sentences") or []:
        for p in s.get("predicates") or []:
            for qa in p.get("qas") or []:
                if qa.get("supported") is False:
                    out.append({"sentence": s.get("index"), "predicate_index": p.get("predicate_index"),
                                "predicate": p.get("predicate"), "question": qa.get("question"),
                                "answer": qa.get("answer"), "answer_span": qa.get("answer_span"),
                                "score": qa.get("score")})
    return out


def _render_tokens(tokens: list[str], sent_idx, predicates: set[int], spans: list[dict]) -> str:
    """The sentence's tokens, one space apart, with the unsupported spans as (possibly nested,
    possibly fragmented) elements (evaluation/html_spans.py). spans: [{id, start, end, question, score}], all valid."""
    def token(i: int, tok: str) -> str:
        cls = "tok predicate" if i in predicates else "tok"
        return f'<span class="{cls}" data-sentence="{_e(sent_idx)}" data-index="{i}">{_e(tok)}</span>'

    def open_tag(k: int, f: dict) -> str:
        sp = spans[k]
        title = f"unsupported: {sp['question'] or ''} (score {_num(sp['score'])})"
        attrs = [f'class="unsupported{" fragment" if f["split"] else ""}"', f'data-span="{_e(sp["id"])}"',
                 f'data-sentence="{_e(sent_idx)}"', f'data-start="{sp["start"]}"', f'data-end="{sp["end"]}"',
                 f'data-question="{_e(sp["question"])}"', f'data-depth="{min(f["depth"], 2)}"',
                 f'title="{_e(title)}"']
        if f["split"]:
            attrs.append(f'data-frag-start="{f["start"]}" data-frag-end="{f["end"]}"')
        if f["first"]:
            attrs.append(f'id="{_e(sp["id"])}"')
        return f"<span {' '.join(attrs)}>"

    return nest_spans([token(i, t) for i, t in enumerate(tokens)], [(sp["start"], sp["end"]) for sp in spans], open_tag)


def _qa_rows(sent_idx, pred: dict, span_ids: dict) -> str:
    rows = []
    for qa in pred.get("qas") or []:
        sup = qa.get("supported")
        key = (sent_idx, pred.get("predicate_index"), qa.get("question"), _span_key(qa.get("answer_span")))
        sid = span_ids.get(key, [])
        span_attr = ""
        if sup is False and sid:
            span_attr = f' data-span="{_e(sid.pop(0))}"'
        if sup is True:
            badge, rcls = '<span class="badge supported">supported</span>', "is-supported"
        elif sup is False:
            badge, rcls = '<span class="badge unsupported-badge">unsupported</span>', "is-unsupported"
        else:
            badge, rcls = '<span class="badge unscored">not scored</span>', "is-unscored"
        span_txt = ""
        if qa.get("answer_span") is not None:
            span_txt = f' <span class="counts">[{_e(_span_key(qa.get("answer_span")))})</span>'
        rows.append(f'<tr class="qa {rcls}"{span_attr}><td class="q">{_e(qa.get("question"))}</td>'
                    f'<td class="a">{_e(qa.get("answer"))}{span_txt}</td>'
                    f'<td class="sc">{_num(qa.get("score"))}</td><td>{badge}</td></tr>')
    return "".join(rows)


def _span_key(span):
    try:
        return f"{int(span[0])}, {int(span[1])}"
    except (TypeError, ValueError, IndexError, KeyError):
        return None


def _render_report(k: int, report: dict) -> str:
    status = str(report.get("status") or "ok")
    n_qas, n_sup = report.get("n_qas", 0), report.get("n_supported", 0)
    head = [f'<section class="report" id="report-{k}" data-report="{k}" data-id="{_e(report.get("id"))}">',
            '<div class="report-head">',
            f'<h2>{_e(report.get("id", f"report {k}"))}</h2>',
            f'<span class="score" data-score="{_e(report.get("score"))}">{_pct(report.get("score"))}</span>',
            f'<span class="counts">{_e(n_sup)} of {_e(n_qas)} QAs supported'
            + (f' · reference: {_e(report["reference_words"])} words' if "reference_words" in report else "")
            + (f', {_e(report["reference_chunks"])} chunk(s)' if "reference_chunks" in report else "")
            + (f' · threshold {_e(report["threshold"])}' if "threshold" in report else "")
            + '</span>',
            f'<span class="status {"ok" if status == "ok" else "warn"}">{_e(status)}</span>',
            '</div>']
    msgs = report.get("messages") or []
    if msgs:
        head.append('<ul class="messages">' + "".join(f"<li>{_e(m)}</li>" for m in msgs) + "</ul>")

    sentences = report.get("sentences") or []
    by_index = {s.get("index", j): s for j, s in enumerate(sentences)}
    spans_by_sent: dict = {}
    unplaced: dict = {}
    span_ids: dict = {}  # (sentence, predicate, question, span) -> [ids], to link QA rows
    for j, u in enumerate(_unsupported_list(report)):
        sid = f"r{k}-u{j}"
        sent = by_index.get(u.get("sentence"))
        span = _valid_span(u.get("answer_span"), len(sent.get("tokens") or [])) if sent else None
        if span is None:
            unplaced.setdefault(u.get("sentence"), []).append(u)
            continue
        spans_by_sent.setdefault(u.get("sentence"), []).append(
            {"id": sid, "start": span[0], "end": span[1], "question": u.get("question"), "score": u.get("score")})
        key = (u.get("sentence"), u.get("predicate_index"), u.get("question"), _span_key(span))
        span_ids.setdefault(key, []).append(sid)

    body = []
    if not sentences:
        body.append('<p class="empty">no generated sentence to show</p>')
    for j, s in enumerate(sentences):
        idx = s.get("index", j)
        tokens = [str(t) for t in (s.get("tokens") or [])]
        preds = s.get("predicates") or []
        pred_idx = {int(p["predicate_index"]) for p in preds
                    if isinstance(p.get("predicate_index"), int) and 0 <= p["predicate_index"] < len(tokens)}
        sstatus = str(s.get("status") or "ok")
        line = [f'<div class="sentence" data-sentence="{_e(idx)}" data-status="{_e(sstatus)}">',
                f'<div class="text"><span class="sent-no">{_e(idx)}</span>',
                _render_tokens(tokens, idx, pred_idx, spans_by_sent.get(idx, [])) if tokens
                else '<span class="empty">(no tokens)</span>', "</div>"]
        if sstatus != "ok":
            line.append(f'<div class="note sentence-note" data-status="{_e(sstatus)}">{_e(sstatus)}: '
                        f'{_e(SENTENCE_NOTES.get(sstatus, "see the messages above"))}</div>')
        for u in unplaced.get(idx, []):
            line.append(f'<div class="note unplaced">unsupported answer not localised (answer span '
                        f'{_e("missing" if u.get("answer_span") is None else u.get("answer_span"))}): {_e(u.get("question"))} → {_e(u.get("answer"))}</div>')
        line.append("</div>")
        qas = ['<div class="qas">']
        for p in preds:
            pst = str(p.get("status") or "ok")
            form = f' <span class="form">({_e(p.get("verb_form"))})</span>' if p.get("verb_form") else ""
            ptype = f' <span class="ptype">{_e(p.get("predicate_type"))}, token {_e(p.get("predicate_index"))}</span>'
            block = [f'<div class="pred-block" data-sentence="{_e(idx)}" data-index="{_e(p.get("predicate_index"))}"'
                     f' data-status="{_e(pst)}">',
                     f'<div class="pred-head">{_e(p.get("predicate"))}{form}{ptype}</div>']
            if pst != "ok":
                block.append(f'<div class="note pred-note">{_e(pst)}: {_e(PREDICATE_NOTES.get(pst, ""))}</div>')
                if p.get("generated"):
                    block.append(f'<pre class="generated">{_e(p.get("generated"))}</pre>')
            rows = _qa_rows(idx, p, span_ids)
            if rows:
                block.append(f'<table class="qa-table"><tbody>{rows}</tbody></table>')
            block.append("</div>")
            qas.append("".join(block))
        qas.append("</div>")
        body.append("".join(line) + "".join(qas))
    for si, us in unplaced.items():
        if si not in by_index:
            for u in us:
                body.append(f'<div class="note unplaced">unsupported answer in unknown sentence {_e(si)}: '
                            f'{_e(u.get("question"))} → {_e(u.get("answer"))}</div>')
    return "\n".join(head + body + ["</section>"])


def _legend() -> str:
    return ('<div class="legend"><strong>Legend</strong> &nbsp; '
            '<span class="item"><span class="predicate">predicate</span> predicate token</span>'
            '<span class="item"><span class="unsupported" data-depth="1">unsupported answer</span> '
            'answer of a QA the reference does not support (overlapping answers stack, darker)</span>'
            '<span class="item"><span class="badge supported">supported</span> '
            '<span class="badge unsupported-badge">unsupported</span> '
            '<span class="badge unscored">not scored</span> QA verdicts</span>'
            '<span class="item"><span class="note">note</span> status of a sentence or predicate</span>'
            '</div>')


def _index(reports: list[dict]) -> str:
    rows = "".join(f'<tr><td><a href="#report-{k}">{_e(r.get("id", f"report {k}"))}</a></td>'
                   f'<td>{_pct(r.get("score"))}</td><td>{_e(r.get("n_supported", 0))} / {_e(r.get("n_qas", 0))}</td>'
                   f'<td>{_e(r.get("status", "ok"))}</td></tr>' for k, r in enumerate(reports))
    return ('<div class="index"><table><thead><tr><th>report</th><th>score</th><th>supported / QAs</th>'
            f'<th>status</th></tr></thead><tbody>{rows}</tbody></table></div>')


def render_page(reports: list[dict], title: str = DEFAULT_TITLE) -> str:
    """The whole page for these reports, as one HTML string."""
    reports = list(reports)
    body = [_legend(), *([_index(reports)] if len(reports) > 1 else []),
            *([] if reports else ['<p class="empty">no report</p>']),
            *(_render_report(k, r) for k, r in enumerate(reports))]
    return document(title, CSS, body)


def write_page(reports: list[dict], path, title: str = DEFAULT_TITLE) -> Path:
    """Write render_page(reports) to path (parent folders created); returns the path."""
    return write(render_page(reports, title), path)
