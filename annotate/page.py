"""The app's HTML: the annotator's item page, the finished page and the admin page.

Every string from a task file, a model or a person goes through `esc` (stdlib html.escape, quotes
included) here on the server; the page's script (static/annotate.js) only toggles classes and sets
textContent, never innerHTML, so a QA whose text is `<script>` shows as those characters. The state the
script reads is JSON inside <script type="application/json"> with <, > and & written as \\u escapes, so
no string can close that element either.
"""
from __future__ import annotations

import html
import json
import time
from urllib.parse import urlencode

from annotate.votes import predicate_groups
from annotate.words import detokenize, is_content_word, spaced

CSS = """
html,body{height:100%}
body{font:15px/1.45 system-ui,sans-serif;margin:0;color:#222;background:#fafafa}
body.item{display:flex;flex-direction:column;height:100vh;height:100dvh;overflow:hidden}
header{flex:none;display:flex;gap:.8em;align-items:center;padding:.4em .8em;background:#234;color:#fff;
  white-space:nowrap;overflow-x:auto;overflow-y:hidden}
header .steps{display:flex;gap:.3em}
header button{background:transparent;color:#fff;border:1px solid #8ab;border-radius:3px;margin:0;padding:.1em .5em;cursor:pointer}
header .steps button.on{background:#fff;color:#234}
header button:disabled{opacity:.4;cursor:default}
#saved{margin-left:auto}#saved.err{color:#fbb;font-weight:bold}
.cols{flex:none;display:grid;grid-template-columns:1fr 1fr;gap:.8em;padding:.6em .8em;background:#fafafa}
.cols section{background:#fff;border:1px solid #ddd;border-radius:4px;padding:.3em .8em;max-height:30vh;overflow:auto}
.cols h2{font-size:.95em;margin:.1em 0 .3em;color:#555;display:flex;gap:.5em;align-items:center}
.hits{font-weight:normal;font-size:.9em}.hits button{padding:0 .4em;margin:0}
.t.hl{background:#ffe08a}.t.pred{outline:2px solid #c33;border-radius:2px;font-weight:bold}.t.hit{background:#cfe8ff}
.t.hit.on{outline:2px solid #1769c2}
.sent{display:block;margin-bottom:.3em}
#msg{flex:none;margin:0;padding:0 .8em;color:#b00;font-weight:bold}#msg:empty{display:none}
#task{flex:1 1 auto;min-height:0;overflow:auto;padding:0 1em 1em}
.screen{display:none}.screen.on{display:block}
.screen h2{font-size:1.05em}.group{margin:.6em 0}.group h3{font-size:.95em;margin:.3em 0}
mark.p{background:none;outline:2px solid #c33;border-radius:2px;font-weight:bold;padding:0 .15em}
ol{padding-left:2em;margin:.2em 0}li.row{padding:.25em .4em;border-radius:3px;margin:.1em 0}
li.row.cur{background:#fff3c4;outline:2px solid #e0a800}
li.row .q{font-weight:600}li.row .a{color:#035}li.row .v{margin-left:.6em;font-size:.85em;color:#555}
li.row.yes .v::before{content:"\\2713 "}li.row.no .v::before{content:"\\2717 "}
li.row.refused{background:#fdd}li.row.refused .v{color:#b00;font-weight:bold}
li.row.refused .v::before{content:"\\26a0 "}
li.row.auto{opacity:.55}li.row.gone{display:none}
button{font:inherit;padding:.15em .6em;margin-left:.3em}
.sugg{font-size:.8em;color:#777;margin-left:.5em}
textarea{width:100%;min-height:4em;font:inherit;box-sizing:border-box}
#help{font-size:.85em;color:#555}kbd{border:1px solid #bbb;border-radius:3px;padding:0 .3em;background:#fff}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:.2em .5em;text-align:left}
pre{background:#fff;border:1px solid #ddd;padding:.5em}
@media (max-width:700px){body{font-size:14px}.cols{grid-template-columns:1fr;gap:.4em;padding:.4em}
  .cols section{max-height:17vh}header{gap:.4em;padding:.3em .4em}#task{padding:0 .5em .5em}}
@media (max-height:620px){.cols section{max-height:26vh}}
"""


def esc(x) -> str:
    """Any value as HTML text or attribute content."""
    return html.escape("" if x is None else str(x), quote=True)


def script_json(obj) -> str:
    """JSON safe inside a <script> element: no '<', '>' or '&' can end it or open a comment."""
    return json.dumps(obj).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def document(title: str, body: str, script: bool = False, body_class: str = "") -> str:
    # script and style are files of the app (/static/): its Content-Security-Policy allows nothing inline
    js = '<script src="/static/annotate.js" defer></script>' if script else ""
    cls = f' class="{body_class}"' if body_class else ""
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{esc(title)}</title>'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<link rel="stylesheet" href="/static/annotate.css">{js}</head><body{cls}>{body}</body></html>')


def _tokens(tokens, offset: int = 0, mark_stop_words: bool = False) -> str:
    """The tokens as running text (annotate/words.py), each still its own element (a span is a token range);
    data-w holds the token itself for the reading aid, class `sw` marks words it never tints."""
    out = []
    for i, (tok, (shown, space)) in enumerate(zip(tokens, spaced(tokens))):
        sw = " sw" if mark_stop_words and not is_content_word(str(tok)) else ""
        out.append(("&#32;" if space else "")
                   + f'<span class="t{sw}" data-i="{offset + i}" data-w="{esc(str(tok).lower())}">{esc(shown)}</span>')
    return "".join(out)


def _row(kind: str, target, number: int, start: int, end: int, pred, inner: str, yes: str, no: str, extra: str = "") -> str:
    # the number is written out (value=) so that a hidden row never renumbers the rows after it
    return (f'<li class="row" value="{number}" data-kind="{kind}" data-target="{esc(target)}" data-start="{start}" '
            f'data-end="{end}" data-pred="{esc(pred)}"{extra}>{inner} <button class="yes" tabindex="-1">{yes} (y)</button>'
            f'<button class="no" tabindex="-1">{no} (n)</button><span class="v"></span></li>')


def _qa_text(qa) -> str:
    return f'<span class="q">{esc(qa["question"])}</span> <span class="a">{esc(detokenize(qa["answer"]))}</span>'


def item_page(item: dict, state: dict, done: int, total: int) -> str:
    """One item for one annotator. `state`: what the script needs (token, item id, labels, options)."""
    flat = [t for s in item["generated"] for t in s]
    offsets = [sum(map(len, item["generated"][:j])) for j in range(len(item["generated"]))]
    generated = "".join(f'<span class="sent">{_tokens(s, o)}</span>' for s, o in zip(item["generated"], offsets))
    span_of = {}
    for s in item["spans"]:
        for q in s["qa_ids"]:
            span_of.setdefault(str(q), []).append(str(s["span_id"]))
    by_qa = {str(q["qa_id"]): q for q in item["qas"]}

    check = "".join(_row("check", q["qa_id"], n, q["start"], q["end"], q["predicate_idx"], _qa_text(q), "Keep", "Drop")
                    for n, q in enumerate(item["qas"], 1))
    spans = "".join(
        # a span's predicates: those of its QAs (a span may answer questions about several)
        _row("span", s["span_id"], n, s["start"], s["end"],
             " ".join(sorted({str(by_qa[str(q)]["predicate_idx"]) for q in s["qa_ids"]})) or -1,
             f'<span class="a">{esc(detokenize(" ".join(flat[s["start"]:s["end"]])))}</span>'
             + (f' <span class="v2">({esc("; ".join(by_qa[str(q)]["question"] for q in s["qa_ids"]))})</span>'
                if s["qa_ids"] else ""),
             "Covered", "Not covered", f' data-qas="{esc(" ".join(str(q) for q in s["qa_ids"]))}"')
        for n, s in enumerate(item["spans"], 1))
    step2 = ""
    for g, (pidx, pred, qas) in enumerate(predicate_groups(item), 1):  # predicate by predicate, as they first appear
        rows = "".join(
            _row("qa", q["qa_id"], n, q["start"], q["end"], q["predicate_idx"],
                 _qa_text(q) + '<span class="sugg" hidden></span>', "Supported", "Not supported",
                 f' data-spans="{esc(" ".join(span_of.get(str(q["qa_id"]), [])))}"'
                 + ("" if q.get("suggestion") is None else f' data-p="{float(q["suggestion"]):.2f}"'))
            for n, q in enumerate(qas, 1))
        step2 += f'<div class="group"><h3>Predicate {g}: <mark class="p">{esc(pred)}</mark></h3><ol>{rows}</ol></div>'
    steps = (['<button data-step="check">QA check</button>'] if state["qa_check"] else []) + [
        '<button data-step="step1">Step 1: spans</button>', '<button data-step="step2">Step 2: QAs</button>',
        '<button data-step="finish">Note &amp; submit</button>']
    body = f"""
<header><b>Item {done + 1} of {total}</b><button id="back" title="back a step (b)">&larr; Back</button>
<span class="steps">{"".join(steps)}</span><span id="saved" role="status">all saved</span></header>
<div class="cols"><section id="ref"><h2>Reference <span class="hits" hidden>match <span id="hit-n"></span>
<button id="hit-prev" title="previous match">&lsaquo;</button><button id="hit-next" title="next match">&rsaquo;</button></span></h2>
{_tokens(item["reference"], mark_stop_words=True)}</section>
<section id="gen"><h2>Generated text</h2>{generated}</section></div>
<p id="msg" role="alert"></p>
<div id="task">
<section class="screen" id="check"><h2>QA check: keep each QA that makes sense and matches the generated
sentence; drop one that is nonsensical or misrepresents it.</h2><ol>{check}</ol></section>
<section class="screen" id="step1"><h2>Step 1: is each highlighted answer span covered by the reference
(does the reference mention it)?</h2><ol>{spans}</ol></section>
<section class="screen" id="step2"><h2>Step 2: does the reference support each QA? A QA whose span is not
covered is not supported (shown greyed).</h2>{step2}</section>
<section class="screen" id="finish"><h2>Note (optional) and submit</h2>
<textarea id="note" placeholder="anything worth telling the organisers about this item (t to write, Esc to leave)"></textarea>
<p><button id="submit">Submit item (Enter)</button></p></section>
<p id="help"><kbd>y</kbd> yes &nbsp;<kbd>n</kbd> no &nbsp;<kbd>j</kbd>/<kbd>&darr;</kbd> next &nbsp;<kbd>k</kbd>/<kbd>&uarr;</kbd>
previous &nbsp;<kbd>b</kbd> back a step (to step 1 from step 2) &nbsp;<kbd>f</kbd> forward a step &nbsp;<kbd>t</kbd> note
&nbsp;<kbd>Enter</kbd> submit (last screen)</p></div>
<script id="state" type="application/json">{script_json(state)}</script>"""
    return document(f"Item {done + 1} of {total}", body, script=True, body_class="item")


def message_page(title: str, text: str, extra_html: str = "") -> str:
    """A plain page (all done, refused); `extra_html` is built by the caller from escaped parts."""
    return document(title, f"<div id=\"task\"><h1>{esc(title)}</h1><p id=\"message\">{esc(text)}</p>{extra_html}</div>")


PAGE_SIZE = 50  # items per page of the admin's item table


def admin_page(overview: dict, k: int, agreement_table: str, admin_token: str, links: dict[str, str],
               others: dict[str, dict], gold: dict[str, dict] | None = None, datasets: dict[str, str] | None = None,
               notes: list[dict] | None = None, view: dict | None = None, refused_entries: list | None = None) -> str:
    """others / gold: {annotator name: {"qas", "agree"}} (annotate/quality.py); no gold column without gold.
    datasets: {item_id: dataset}; notes: Store.notes(); view: the item table's filter and page
    ({"dataset", "status": ""|open|complete, "page"}); refused_entries: Store.refused_entries()."""
    datasets, notes, view, refused_entries = datasets or {}, notes or [], view or {}, refused_entries or []
    admin = f"/admin/{esc(admin_token)}"

    def agree(table, name):
        q = table.get(name)
        return "" if not q or q["agree"] is None else f"{100 * q['agree']:.1f}% of {q['qas']}"

    def revoke_button(a):
        if a["revoked"]:
            return "revoked"
        return (f'<form method="post" action="{admin}/revoke"><input type="hidden" name="name" value="{esc(a["name"])}">'
                f'<button>revoke</button></form>')

    ann = "".join(
        f"<tr><td>{esc(a['name'])}</td><td>{esc(a['platform'] or '')}</td><td>{a['done'] or 0}</td>"
        f"<td>{a['open'] or 0}</td><td>{agree(others, a['name'])}</td>"
        + (f"<td>{agree(gold, a['name'])}</td>" if gold is not None else "")
        + f"<td>{revoke_button(a)}</td><td>{esc(links.get(a['name'], ''))}</td></tr>"
        for a in overview["annotators"])
    gold_th = '<th title="QA votes equal to the gold label">on gold</th>' if gold is not None else ""
    why_empty = ("" if k >= 3 else
                 f'<p id="agree-note">"agrees with others" compares each QA vote with the majority of the other '
                 f"annotators of the same item, which needs two others: with k={k} it stays empty. The agreement "
                 f"table above compares the votes of each item instead.</p>")
    items = overview["items"]
    complete = sum((i["done"] or 0) >= k for i in items)
    by_set: dict[str, list[int]] = {}
    for i in items:
        c = by_set.setdefault(datasets.get(i["item_id"], ""), [0, 0, 0, 0])
        c[0] += 1
        c[1] += (i["done"] or 0) >= k
        c[2] += i["done"] or 0
        c[3] += i["assigned"] - (i["done"] or 0)
    summary = "".join(f"<tr><td>{esc(d)}</td><td>{n}</td><td>{c}</td><td>{sub}</td><td>{op}</td></tr>"
                      for d, (n, c, sub, op) in sorted(by_set.items()))
    # the item table: filtered, then one page of it
    shown = [i for i in items if (not view.get("dataset") or datasets.get(i["item_id"]) == view["dataset"])
             and (view.get("status") != "complete" or (i["done"] or 0) >= k)
             and (view.get("status") != "open" or (i["done"] or 0) < k)]
    pages = max(1, -(-len(shown) // PAGE_SIZE))
    page_no = min(max(1, int(view.get("page") or 1)), pages)
    rows = "".join(f"<tr><td>{esc(i['item_id'])}</td><td>{esc(datasets.get(i['item_id'], ''))}</td>"
                   f"<td>{i['assigned']}</td><td>{i['done'] or 0}</td></tr>"
                   for i in shown[(page_no - 1) * PAGE_SIZE:page_no * PAGE_SIZE])

    def link(page_to: int, text: str) -> str:
        q = urlencode({"dataset": view.get("dataset") or "", "status": view.get("status") or "", "page": page_to})
        return f'<a href="{admin}?{esc(q)}#by-item">{text}</a>'

    nav = (f'<p id="pages">page {page_no} of {pages} ({len(shown)} items) '
           + (link(page_no - 1, "&larr; previous") + " " if page_no > 1 else "")
           + (link(page_no + 1, "next &rarr;") if page_no < pages else "") + "</p>")
    options = "".join(f'<option{" selected" if d == view.get("dataset") else ""}>{esc(d)}</option>' for d in sorted(by_set))
    statuses = "".join(f'<option value="{v}"{" selected" if v == (view.get("status") or "") else ""}>{t}</option>'
                       for v, t in (("", "all"), ("open", f"fewer than {k} submitted"), ("complete", "complete")))
    filter_form = (f'<form method="get" action="{admin}#by-item">dataset <select name="dataset"><option value="">all</option>'
                   f'{options}</select> status <select name="status">{statuses}</select> <button>show</button></form>')
    refused_rows = "".join(
        f"<tr><td>{esc(r['platform'])}</td><td>{esc(r['worker_id'])}</td><td>{r['attempts']}</td>"
        f"<td>{time.strftime('%Y-%m-%d %H:%M', time.gmtime(r['first']))}</td>"
        f"<td>{time.strftime('%Y-%m-%d %H:%M', time.gmtime(r['last']))}</td></tr>" for r in refused_entries)
    refused = ("" if not refused_entries else
               f'<h2>Worker ids used from another browser ({len(refused_entries)})</h2><p>Each was refused: the id '
               f'is bound to the browser of its first visit. One the worker reports could be theirs on a second '
               f'device; one they did not is someone trying their id.</p><table id="refused-entries"><tr><th>platform'
               f'</th><th>worker id</th><th>attempts</th><th>first (UTC)</th><th>last (UTC)</th></tr>{refused_rows}</table>')
    note_rows = "".join(f"<tr><td>{esc(n['item_id'])}</td><td>{esc(n['annotator'])}</td>"
                        f"<td>{'submitted' if n['submitted'] else 'open'}</td><td>{esc(n['note'])}</td></tr>" for n in notes)
    body = f"""<div id="task"><h1>Annotation: admin</h1>
<p>{complete} of {len(items)} items have all {k} annotators. <a id="export" href="{admin}/export.jsonl">Export (benchmark JSONL)</a>
&middot; <a id="notes-export" href="{admin}/notes.jsonl">Notes (JSONL)</a></p>
<h2>By dataset</h2><table id="by-dataset"><tr><th>dataset</th><th>items</th><th>complete (all {k} submitted)</th>
<th>submissions</th><th>open assignments</th></tr>{summary}</table>
<h2>Agreement so far (items with all {k} votes)</h2><pre id="agreement">{esc(agreement_table)}</pre>
<h2>By annotator</h2><table id="by-annotator"><tr><th>name</th><th>platform</th><th>submitted</th><th>open</th><th title="QA votes equal to the majority of the other annotators' votes">agrees with others</th>{gold_th}<th>access</th><th>link</th></tr>{ann}</table>
{why_empty}
<form id="add-annotator" method="post" action="{admin}/annotators">Add an annotator: <input name="name" placeholder="name" required maxlength="100">
<button>add</button> (their personal link appears in the table)</form>
{refused}
<h2>Notes ({len(notes)})</h2><table id="notes"><tr><th>item</th><th>annotator</th><th>item status</th><th>note</th></tr>{note_rows}</table>
<h2>By item</h2>{filter_form}{nav}<table id="by-item"><tr><th>item</th><th>dataset</th><th>assigned</th><th>submitted</th></tr>{rows}</table></div>"""
    return document("Annotation: admin", body)
