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

CSS = """
body{font:15px/1.45 system-ui,sans-serif;margin:0;color:#222;background:#fafafa}
header{display:flex;gap:1.5em;align-items:center;padding:.5em 1em;background:#234;color:#fff;position:sticky;top:0;z-index:2}
header .steps span{padding:.15em .6em;border-radius:3px;margin-right:.3em;opacity:.6}
header .steps span.on{background:#fff;color:#234;opacity:1}
#saved{margin-left:auto}#saved.err{color:#fbb;font-weight:bold}
.cols{display:grid;grid-template-columns:1fr 1fr;gap:1em;padding:1em;position:sticky;top:2.2em;z-index:1;background:#fafafa}
.cols section{background:#fff;border:1px solid #ddd;border-radius:4px;padding:.5em 1em;max-height:38vh;overflow:auto}
.cols h2{font-size:1em;margin:.2em 0 .5em;color:#555}
.t.hl{background:#ffe08a}.t.pred{outline:2px solid #c33;border-radius:2px;font-weight:bold}.t.hit{background:#cfe8ff}
.sent{display:block;margin-bottom:.3em}
#task{padding:0 1em 2em}.screen{display:none}.screen.on{display:block}
.screen h2{font-size:1.05em}.group{margin:.6em 0}.group h3{font-size:.95em;margin:.3em 0}
mark.p{background:none;outline:2px solid #c33;border-radius:2px;font-weight:bold;padding:0 .15em}
ol{padding-left:1.6em;margin:.2em 0}li.row{padding:.25em .4em;border-radius:3px;margin:.1em 0}
li.row.cur{background:#fff3c4;outline:2px solid #e0a800}
li.row .q{font-weight:600}li.row .a{color:#035}li.row .v{margin-left:.6em;font-size:.85em;color:#555}
li.row.yes .v::before{content:"\\2713 "}li.row.no .v::before{content:"\\2717 "}
li.row.auto{opacity:.55}li.row.gone{display:none}
button{font:inherit;padding:.15em .6em;margin-left:.3em}
.sugg{font-size:.8em;color:#777;margin-left:.5em}
textarea{width:100%;min-height:4em;font:inherit}
#help{font-size:.85em;color:#555}kbd{border:1px solid #bbb;border-radius:3px;padding:0 .3em;background:#fff}
#msg{color:#b00;font-weight:bold}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:.2em .5em;text-align:left}
pre{background:#fff;border:1px solid #ddd;padding:.5em}
"""


def esc(x) -> str:
    """Any value as HTML text or attribute content."""
    return html.escape("" if x is None else str(x), quote=True)


def script_json(obj) -> str:
    """JSON safe inside a <script> element: no '<', '>' or '&' can end it or open a comment."""
    return json.dumps(obj).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def document(title: str, body: str, script: bool = False) -> str:
    js = '<script src="/static/annotate.js" defer></script>' if script else ""
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{esc(title)}</title>'
            f'<meta name="viewport" content="width=device-width, initial-scale=1"><style>{CSS}</style>{js}</head>'
            f"<body>{body}</body></html>")


def _tokens(tokens, offset: int = 0) -> str:
    return " ".join(f'<span class="t" data-i="{offset + i}">{esc(t)}</span>' for i, t in enumerate(tokens))


def _row(kind: str, target, start: int, end: int, pred, inner: str, yes: str, no: str, extra: str = "") -> str:
    return (f'<li class="row" data-kind="{kind}" data-target="{esc(target)}" data-start="{start}" data-end="{end}" '
            f'data-pred="{esc(pred)}"{extra}>{inner} <button class="yes" tabindex="-1">{yes} (y)</button>'
            f'<button class="no" tabindex="-1">{no} (n)</button><span class="v"></span></li>')


def _qa_text(qa) -> str:
    return f'<span class="q">{esc(qa["question"])}</span> <span class="a">{esc(qa["answer"])}</span>'


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

    check = "".join(_row("check", q["qa_id"], q["start"], q["end"], q["predicate_idx"], _qa_text(q), "Keep", "Drop")
                    for q in item["qas"])
    spans = "".join(
        # a span's predicates: those of its QAs (a span may answer questions about several)
        _row("span", s["span_id"], s["start"], s["end"],
             " ".join(sorted({str(by_qa[str(q)]["predicate_idx"]) for q in s["qa_ids"]})) or -1,
             f'<span class="a">{esc(" ".join(flat[s["start"]:s["end"]]))}</span>'
             + (f' <span class="v2">({esc("; ".join(by_qa[str(q)]["question"] for q in s["qa_ids"]))})</span>'
                if s["qa_ids"] else ""),
             "Covered", "Not covered", f' data-qas="{esc(" ".join(str(q) for q in s["qa_ids"]))}"')
        for s in item["spans"])
    groups, order = {}, []
    for q in item["qas"]:  # step 2 goes predicate by predicate, in the order the predicates first appear
        key = (q["predicate_idx"], q["predicate"])
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(q)
    step2 = ""
    for pidx, pred in order:
        rows = "".join(
            _row("qa", q["qa_id"], q["start"], q["end"], q["predicate_idx"],
                 _qa_text(q) + '<span class="sugg" hidden></span>', "Supported", "Not supported",
                 f' data-spans="{esc(" ".join(span_of.get(str(q["qa_id"]), [])))}"'
                 + ("" if q.get("suggestion") is None else f' data-p="{float(q["suggestion"]):.2f}"'))
            for q in groups[(pidx, pred)])
        step2 += f'<div class="group"><h3>Predicate <mark class="p">{esc(pred)}</mark></h3><ol>{rows}</ol></div>'
    steps = (["<span data-step=\"check\">QA check</span>"] if state["qa_check"] else []) + [
        '<span data-step="step1">Step 1: spans</span>', '<span data-step="step2">Step 2: QAs</span>',
        '<span data-step="finish">Note &amp; submit</span>']
    body = f"""
<header><b>Item {done + 1} of {total}</b><span class="steps">{"".join(steps)}</span><span id="saved">all saved</span></header>
<div class="cols"><section id="ref"><h2>Reference</h2>{_tokens(item["reference"])}</section>
<section id="gen"><h2>Generated text</h2>{generated}</section></div>
<div id="task"><p id="msg" role="alert"></p>
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
    return document(f"Item {done + 1} of {total}", body, script=True)


def message_page(title: str, text: str, extra_html: str = "") -> str:
    """A plain page (all done, refused); `extra_html` is built by the caller from escaped parts."""
    return document(title, f"<div id=\"task\"><h1>{esc(title)}</h1><p id=\"message\">{esc(text)}</p>{extra_html}</div>")


def admin_page(overview: dict, k: int, agreement_table: str, admin_token: str, links: dict[str, str],
               others: dict[str, dict], gold: dict[str, dict] | None = None) -> str:
    """others / gold: {annotator name: {"qas", "agree"}} (annotate/quality.py); no gold column without gold."""
    def agree(table, name):
        q = table.get(name)
        return "" if not q or q["agree"] is None else f"{100 * q['agree']:.1f}% of {q['qas']}"

    ann = "".join(
        f"<tr><td>{esc(a['name'])}</td><td>{esc(a['platform'] or '')}</td><td>{a['done'] or 0}</td>"
        f"<td>{a['open'] or 0}</td><td>{agree(others, a['name'])}</td>"
        + (f"<td>{agree(gold, a['name'])}</td>" if gold is not None else "")
        + f"<td>{'revoked' if a['revoked'] else ''}</td><td>{esc(links.get(a['name'], ''))}</td></tr>"
        for a in overview["annotators"])
    gold_th = '<th title="QA votes equal to the gold label">on gold</th>' if gold is not None else ""
    items = overview["items"]
    complete = sum((i["done"] or 0) >= k for i in items)
    rows = "".join(f"<tr><td>{esc(i['item_id'])}</td><td>{i['assigned']}</td><td>{i['done'] or 0}</td></tr>"
                   for i in items)
    body = f"""<div id="task"><h1>Annotation: admin</h1>
<p>{complete} of {len(items)} items have all {k} annotators. <a id="export" href="/admin/{esc(admin_token)}/export.jsonl">Export (benchmark JSONL)</a></p>
<h2>Agreement so far (items with all {k} votes)</h2><pre id="agreement">{esc(agreement_table)}</pre>
<h2>By annotator</h2><table id="by-annotator"><tr><th>name</th><th>platform</th><th>submitted</th><th>open</th><th title="QA votes equal to the majority of the other annotators' votes">agrees with others</th>{gold_th}<th></th><th>link</th></tr>{ann}</table>
<h2>By item</h2><table id="by-item"><tr><th>item</th><th>assigned</th><th>submitted</th></tr>{rows}</table></div>"""
    return document("Annotation: admin", body)
