"""One self-contained HTML page (inline CSS, no script, no external resource) showing the
predictions of evaluation.contradiction (its predictions.jsonl rows): a summary, then per sentence
pair a header (id, P(contradiction), decision, status, messages), sentence A and sentence B with
the conflicting answers highlighted, a table of the conflicting QA pairs, and the aligned answers
that differ without being judged a conflict in a collapsed list.

    from evaluation.contradiction_html import write_page
    write_page(predictions, "report.html")

Input: the dicts of evaluation.contradiction.prediction(): {id, status, p_contradiction, decision,
a, b (tokens joined by one space), conflicts, differences?, messages, basis?, explanation?}; a conflict (or difference)
is {predicate, role, relation, numbers_differ, names_differ, a: {question, answer, span, support},
b: {...}} with span = [start, end) over the space-split tokens of its side.

Markup contract (what tests/test_contradiction_html.py checks):
- `div.summary` has `data-pairs`, `data-flagged` (decision true), `data-consistent` (decision
  false), `data-no-score` (decision null); one `li.status-count` per status with `data-status` and
  `data-count`;
- each prediction k is a `section.pair` with `id="pair-{k}"`, `data-pair` = k, `data-id`, and
  `data-decision` = "contradiction" | "consistent" | "no-score"; its header shows `.score`
  (P(contradiction) as "73.2%", or "n/a"), `.decision`, `.status` (the status), `.basis` (the
  signals the score rests on, when given) and `ul.messages li` (the messages); a flagged pair
  without a conflict says its `explanation` in `p.empty`;
- sentence A / B is a `div.sentence` with `data-side` "a" / "b"; each token is a `span.tok` with
  `data-side` and `data-index` (its position in the space-split sentence);
- conflict j of prediction k (its `conflicts` list) is highlighted on each side where its span is
  valid (0 <= start < end <= number of tokens) as a `span.conflict` with `data-side`,
  `data-start`, `data-end` (the span, end exclusive) and `data-conflict` = a space-separated list
  of ids "p{k}-c{j}": select with `[data-conflict~="p{k}-c{j}"]`. The element on side a and the one
  on side b of a conflict carry the same id, and the same colour class `col{n}` and label
  (`data-label`, shown as a superscript by CSS, so not part of the text). Overlap rule, per side:
  * conflicts with the identical span share ONE element whose `data-conflict` lists all their ids
    (in conflict order; the element's colour and label follow the first);
  * distinct spans that are disjoint, adjacent or nested each get one element (a nested one
    inside the enclosing one; `data-depth` 0-2 stacks their underlines);
  * crossing spans (they overlap, neither contains the other) cannot all nest: a span is split at
    the end of every span that starts before it and ends strictly inside it, into consecutive
    elements with the same `data-conflict`, class `fragment` and `data-frag-start` /
    `data-frag-end` (the token range of the fragment), tiling its span; only the last fragment
    carries `data-label`.
  So the text of an unsplit element is its span's tokens joined by one space, and the texts of a
  split one's fragments, in document order, joined by one space, are its tokens; every token lies
  inside exactly the elements of the conflicts whose span covers it. A conflict answer whose span
  is missing or outside its sentence is listed as a `div.note.unplaced` (`data-conflict`,
  `data-side`) under the sentence instead;
- the conflicts are listed in `table.conflicts`, one `tr.conflict` per conflict in order, with
  `data-conflict` = its single id and cells `td.label`, `td.predicate`, `td.role`, `td.side-a` /
  `td.side-b` (each with `.q` question, `.ans` answer, `.span`), `td.relation`, `td.differ`
  ("numbers, names" / "numbers" / "names" / "–") and `td.support` ("A 0.12 · B 0.80");
- `differences` (present when the decision is false: aligned answers that differ but were not
  judged a conflict) are never highlighted in the sentences; they are listed, muted, in a closed
  `details.differences` (`data-count`) as one `li.difference` per entry with
  `data-difference="p{k}-d{j}"`.
All text (tokens, questions, answers, ids, messages, the title) is HTML-escaped.
"""
from __future__ import annotations

from pathlib import Path

from evaluation.html_page import document, nest_spans, write
from evaluation.html_page import esc as _e, num as _num, pct as _pct, valid_span as _valid_span

DEFAULT_TITLE = "Self-contradiction report"
N_COLOURS = 6
DECISION_TEXT = {"contradiction": "contradiction", "consistent": "no contradiction", "no-score": "no score"}

CSS = """
:root { --red: #c62828; --red-bg: #fde4e4; --green: #2e7d32; --green-bg: #e3f4e4;
        --amber: #8a5a00; --amber-bg: #fff2cc; --grey: #5f6368; --grey-bg: #eceff1; }
* { box-sizing: border-box; }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", Arial, sans-serif;
       color: #1f2328; background: #f6f7f9; margin: 0; padding: 24px; }
main { max-width: 1080px; margin: 0 auto; }
h1 { font-size: 22px; margin: 0 0 12px; }
h2 { font-size: 18px; margin: 0; }
.legend, .summary, .index, .pair { background: #fff; border: 1px solid #d8dce1; border-radius: 8px;
                                   padding: 12px 16px; margin-bottom: 16px; }
.pair[data-decision="contradiction"] { border-left: 5px solid var(--red); }
.pair[data-decision="consistent"] { border-left: 5px solid var(--green); }
.pair[data-decision="no-score"] { border-left: 5px solid #b0b6bd; }
.legend span.item { margin-right: 18px; white-space: nowrap; }
.summary .big { font-size: 17px; font-weight: 600; margin-right: 14px; }
ul.statuses { display: inline; list-style: none; padding: 0; margin: 0; }
ul.statuses li { display: inline-block; margin-right: 10px; }
.index table { border-collapse: collapse; }
.index td, .index th { padding: 2px 14px 2px 0; text-align: left; }
.pair-head { display: flex; flex-wrap: wrap; align-items: baseline; gap: 6px 16px;
             border-bottom: 1px solid #e4e7eb; padding-bottom: 8px; margin-bottom: 8px; }
.score { font-size: 20px; font-weight: 700; }
.badge, .status, .decision { display: inline-block; padding: 0 8px; border-radius: 10px; font-size: 13px; }
.status, .basis { font-family: ui-monospace, "DejaVu Sans Mono", monospace; }
.basis { color: var(--grey); font-size: 13px; }
.status.ok { background: var(--green-bg); color: var(--green); }
.status.warn { background: var(--amber-bg); color: var(--amber); }
.decision.contradiction { background: var(--red-bg); color: var(--red); font-weight: 700; }
.decision.consistent { background: var(--green-bg); color: var(--green); }
.decision.no-score { background: var(--grey-bg); color: var(--grey); }
ul.messages { margin: 4px 0 8px; padding-left: 20px; color: #3c4043; }
.sentence { margin: 8px 0 2px; }
.side-tag { display: inline-block; width: 22px; color: var(--grey); font-weight: 700;
            font-family: ui-monospace, monospace; }
.text { font-size: 17px; line-height: 2.4; }
.tok { white-space: pre-wrap; }
span.conflict { border-radius: 3px; border-bottom: 2px solid; padding: 2px 0 7px; }
span.conflict[data-depth="1"] { padding-bottom: 4px; }
span.conflict[data-depth="2"] { padding-bottom: 1px; border-bottom-style: dotted; }
span.conflict.fragment { border-bottom-style: dashed; }
span.conflict[data-label]::after { content: attr(data-label); font-size: 10px; font-weight: 700;
                               vertical-align: super; margin-left: 1px; }
.col0 { background: rgba(229, 57, 53, .20); border-color: #c62828; }
.col1 { background: rgba(30, 136, 229, .20); border-color: #1565c0; }
.col2 { background: rgba(251, 140, 0, .25); border-color: #e65100; }
.col3 { background: rgba(142, 36, 170, .18); border-color: #6a1b9a; }
.col4 { background: rgba(0, 137, 123, .20); border-color: #00695c; }
.col5 { background: rgba(109, 76, 65, .20); border-color: #4e342e; }
.swatch { display: inline-block; min-width: 26px; text-align: center; border-radius: 3px;
          border-bottom: 2px solid; font-weight: 700; font-size: 13px; }
.note { display: inline-block; margin: 2px 0; padding: 1px 8px; border-radius: 4px;
        background: var(--amber-bg); color: var(--amber); font-size: 13px; }
table.conflicts { border-collapse: collapse; margin: 10px 0 4px; font-size: 14px; width: 100%; }
table.conflicts th { text-align: left; font-weight: 600; color: var(--grey); font-size: 12px;
                     border-bottom: 1px solid #e4e7eb; padding: 2px 10px 2px 0; }
table.conflicts td { padding: 4px 10px 4px 0; vertical-align: top; border-bottom: 1px solid #f0f1f3; }
td .q { color: #3c4043; }
td .ans { font-weight: 600; }
td .span, .counts { color: var(--grey); font-size: 12px; }
td.role, td.support { font-family: ui-monospace, "DejaVu Sans Mono", monospace; white-space: nowrap; }
td.differ { color: var(--red); }
td.differ .none { color: var(--grey); }
.empty { color: var(--grey); font-style: italic; }
details.differences { margin: 10px 0 2px; color: var(--grey); font-size: 13px; }
details.differences summary { cursor: pointer; }
ul.diff-list { margin: 4px 0; padding-left: 20px; }
li.difference .ans { color: #4a4f55; }
"""


def _tokens(text) -> list[str]:
    """The tokens of a prediction's sentence: it is its tokens joined by one space."""
    return str(text).split(" ") if text else []


def _decision(pred: dict) -> str:
    d = pred.get("decision")
    return "no-score" if d is None else "contradiction" if d else "consistent"


def _span_txt(span) -> str:
    try:
        return f"[{int(span[0])}, {int(span[1])})"
    except (TypeError, ValueError, IndexError, KeyError):
        return "(no span)"


def _side(conflict: dict, side: str) -> dict:
    x = conflict.get(side)
    return x if isinstance(x, dict) else {}


def _differ(c: dict) -> str:
    what = [w for w, key in (("numbers", "numbers_differ"), ("names", "names_differ")) if c.get(key)]
    return ", ".join(what) or "–"


def _render_tokens(tokens: list[str], side: str, groups: list[dict]) -> str:
    """The tokens, one space apart, with the highlight groups as (possibly nested, possibly
    fragmented) elements (evaluation/html_spans.py). groups: [{ids, j, start, end, title}], valid
    and with distinct spans; the last fragment of a group carries its label."""
    def open_tag(g: int, f: dict) -> str:
        gr = groups[g]
        cls = f"conflict col{gr['j'] % N_COLOURS}" + (" fragment" if f["split"] else "")
        attrs = [f'class="{cls}"', f'data-conflict="{_e(" ".join(gr["ids"]))}"', f'data-side="{side}"',
                 f'data-start="{gr["start"]}"', f'data-end="{gr["end"]}"', f'data-depth="{min(f["depth"], 2)}"',
                 f'title="{_e(gr["title"])}"']
        if f["split"]:
            attrs.append(f'data-frag-start="{f["start"]}" data-frag-end="{f["end"]}"')
        if f["last"]:
            attrs.append(f'data-label="{_e(gr["label"])}"')
        return f"<span {' '.join(attrs)}>"

    toks = [f'<span class="tok" data-side="{side}" data-index="{i}">{_e(t)}</span>' for i, t in enumerate(tokens)]
    return nest_spans(toks, [(gr["start"], gr["end"]) for gr in groups], open_tag)


def _sentence(k: int, side: str, tokens: list[str], conflicts: list[dict]) -> str:
    """Sentence A or B with its conflict answers highlighted (equal spans share one element)."""
    by_span: dict[tuple[int, int], dict] = {}
    unplaced = []
    for j, c in enumerate(conflicts):
        x = _side(c, side)
        span = _valid_span(x.get("span"), len(tokens))
        cid = f"p{k}-c{j}"
        if span is None:
            unplaced.append((cid, j, x))
            continue
        desc = f"#{j + 1} {c.get('predicate', '')} {c.get('role', '')}: {x.get('question', '')} → {x.get('answer', '')}"
        gr = by_span.setdefault(span, {"ids": [], "j": j, "start": span[0], "end": span[1], "labels": [], "titles": []})
        gr["ids"].append(cid)
        gr["labels"].append(str(j + 1))
        gr["titles"].append(desc)
    groups = [{**gr, "label": ",".join(gr["labels"]), "title": "conflict " + "; ".join(gr["titles"])}
              for gr in by_span.values()]
    out = [f'<div class="sentence" data-side="{side}"><div class="text">'
           f'<span class="side-tag">{side.upper()}</span>',
           _render_tokens(tokens, side, groups) if tokens else '<span class="empty">(empty sentence)</span>',
           "</div>"]
    for cid, j, x in unplaced:
        out.append(f'<div class="note unplaced" data-conflict="{cid}" data-side="{side}">conflict #{j + 1}: '
                   f'answer {side.upper()} not localised (span '
                   f'{_e("missing" if x.get("span") is None else x.get("span"))}): '
                   f'{_e(x.get("question"))} → {_e(x.get("answer"))}</div>')
    out.append("</div>")
    return "".join(out)


def _side_cell(c: dict, side: str) -> str:
    x = _side(c, side)
    return (f'<td class="side-{side}"><div class="q">{_e(x.get("question"))}</div>'
            f'<div class="ans">{_e(x.get("answer"))}</div><div class="span">{_e(_span_txt(x.get("span")))}</div></td>')


def _conflict_table(k: int, conflicts: list[dict]) -> str:
    rows = []
    for j, c in enumerate(conflicts):
        differ = _differ(c)
        differ_html = differ if differ != "–" else '<span class="none">–</span>'
        rows.append(f'<tr class="conflict" data-conflict="p{k}-c{j}">'
                    f'<td class="label"><span class="swatch col{j % N_COLOURS}">{j + 1}</span></td>'
                    f'<td class="predicate">{_e(c.get("predicate"))}</td><td class="role">{_e(c.get("role"))}</td>'
                    + _side_cell(c, "a") + _side_cell(c, "b")
                    + f'<td class="relation">{_e(c.get("relation"))}</td>'
                    f'<td class="differ">{differ_html}</td>'
                    f'<td class="support">A {_num(_side(c, "a").get("support"))} · '
                    f'B {_num(_side(c, "b").get("support"))}</td></tr>')
    return ('<table class="conflicts"><thead><tr><th>#</th><th>predicate</th><th>role</th>'
            '<th>A: question / answer</th><th>B: question / answer</th><th>relation</th><th>differ</th>'
            f'<th>support</th></tr></thead><tbody>{"".join(rows)}</tbody></table>')


def _differences(k: int, diffs: list[dict]) -> str:
    items = []
    for j, d in enumerate(diffs):
        a, b = _side(d, "a"), _side(d, "b")
        differ = _differ(d)
        items.append(f'<li class="difference" data-difference="p{k}-d{j}">'
                     f'{_e(d.get("predicate"))} <span class="role">{_e(d.get("role"))}</span>: '
                     f'<span class="ans">“{_e(a.get("answer"))}”</span> {_e(_span_txt(a.get("span")))} vs '
                     f'<span class="ans">“{_e(b.get("answer"))}”</span> {_e(_span_txt(b.get("span")))} '
                     f'({_e(d.get("relation"))}{"; " + differ + " differ" if differ != "–" else ""}; '
                     f'support A {_num(a.get("support"))} · B {_num(b.get("support"))}) — '
                     f'<span class="q">{_e(a.get("question"))} / {_e(b.get("question"))}</span></li>')
    n = len(diffs)
    return (f'<details class="differences" data-count="{n}"><summary>{n} aligned answer pair{"s" if n != 1 else ""} '
            f'differ{"s" if n == 1 else ""} but {"was" if n == 1 else "were"} not judged a conflict</summary>'
            f'<ul class="diff-list">{"".join(items)}</ul></details>')


def _render_pair(k: int, pred: dict) -> str:
    status = str(pred.get("status") or "ok")
    decision = _decision(pred)
    p = pred.get("p_contradiction")
    dec_txt = DECISION_TEXT[decision] + (f" ({status})" if decision == "no-score" else "")
    parts = [f'<section class="pair" id="pair-{k}" data-pair="{k}" data-id="{_e(pred.get("id"))}" '
             f'data-decision="{decision}">',
             '<div class="pair-head">',
             f'<h2>{_e(pred.get("id", f"pair {k}"))}</h2>',
             f'<span class="score" data-p="{_e(p)}" title="P(contradiction)">{_pct(p)}</span>',
             f'<span class="decision {decision}">{_e(dec_txt)}</span>',
             f'<span class="status {"ok" if status == "ok" else "warn"}">{_e(status)}</span>',
             *([f'<span class="basis" title="the signals the score rests on">{_e(pred["basis"])}</span>']
               if pred.get("basis") else []),
             '</div>']
    msgs = pred.get("messages") or []
    if msgs:
        parts.append('<ul class="messages">' + "".join(f"<li>{_e(m)}</li>" for m in msgs) + "</ul>")
    conflicts = [c for c in (pred.get("conflicts") or []) if isinstance(c, dict)]
    for side in ("a", "b"):
        parts.append(_sentence(k, side, _tokens(pred.get(side)), conflicts))
    if conflicts:
        parts.append(_conflict_table(k, conflicts))
    elif decision == "contradiction":
        parts.append(f'<p class="empty">{_e(pred.get("explanation") or "flagged without a conflicting QA pair to show")}</p>')
    diffs = [d for d in (pred.get("differences") or []) if isinstance(d, dict)]
    if diffs:
        parts.append(_differences(k, diffs))
    parts.append("</section>")
    return "\n".join(parts)


def _summary(preds: list[dict]) -> str:
    decisions = [_decision(p) for p in preds]
    n_flag, n_cons, n_none = (decisions.count(d) for d in ("contradiction", "consistent", "no-score"))
    statuses: dict[str, int] = {}
    for p in preds:
        s = str(p.get("status") or "ok")
        statuses[s] = statuses.get(s, 0) + 1
    items = "".join(f'<li class="status-count" data-status="{_e(s)}" data-count="{n}">'
                    f'<span class="status {"ok" if s == "ok" else "warn"}">{_e(s)}</span> {n}</li>'
                    for s, n in sorted(statuses.items()))
    return (f'<div class="summary" data-pairs="{len(preds)}" data-flagged="{n_flag}" data-consistent="{n_cons}" '
            f'data-no-score="{n_none}"><span class="big">{len(preds)} pair{"s" if len(preds) != 1 else ""}</span>'
            f'<span class="big">{n_flag} flagged as contradiction</span>'
            f'<span class="counts">{n_cons} without contradiction · {n_none} without a score</span>'
            f'<div>statuses: <ul class="statuses">{items}</ul></div></div>')


def _index(preds: list[dict]) -> str:
    rows = "".join(f'<tr><td><a href="#pair-{k}">{_e(p.get("id", f"pair {k}"))}</a></td>'
                   f'<td>{_pct(p.get("p_contradiction"))}</td>'
                   f'<td><span class="decision {_decision(p)}">{DECISION_TEXT[_decision(p)]}</span></td>'
                   f'<td>{len(p.get("conflicts") or [])}</td><td>{_e(p.get("status", "ok"))}</td></tr>'
                   for k, p in enumerate(preds))
    return ('<div class="index"><table><thead><tr><th>pair</th><th>P(contradiction)</th><th>decision</th>'
            f'<th>conflicts</th><th>status</th></tr></thead><tbody>{rows}</tbody></table></div>')


def _legend() -> str:
    return ('<div class="legend"><strong>Legend</strong> &nbsp; '
            '<span class="item"><span class="conflict col0" data-label="1">answer A</span> … '
            '<span class="conflict col0" data-label="1">answer B</span> '
            'the two answers of conflict 1 (same colour and number on both sentences)</span>'
            '<span class="item"><span class="decision contradiction">contradiction</span> '
            '<span class="decision consistent">no contradiction</span> '
            '<span class="decision no-score">no score</span> decision</span>'
            '<span class="item"><span class="note">note</span> answer that could not be localised</span>'
            '</div>')


def render_page(predictions: list[dict], title: str = DEFAULT_TITLE) -> str:
    """The whole page for these predictions, as one HTML string."""
    preds = list(predictions)
    body = [_summary(preds), _legend(), *([_index(preds)] if len(preds) > 1 else []),
            *([] if preds else ['<p class="empty">no prediction</p>']),
            *(_render_pair(k, p) for k, p in enumerate(preds))]
    return document(title, CSS, body)


def write_page(predictions: list[dict], path, title: str = DEFAULT_TITLE) -> Path:
    """Write render_page(predictions) to path (parent folders created); returns the path."""
    return write(render_page(predictions, title), path)
