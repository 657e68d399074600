"""The report page of evaluation.self_contradiction: one self-contained HTML page (inline CSS, no script). A
summary of the run's measures, then per text each sentence with the conflicting answers highlighted
(`mark.conflict`), the alternatives or other sentences it conflicts with (P(contradiction), the aligned fact),
and the change mitigation made as a word diff (`del` / `ins`) or the reason it was dropped; the refused
alternatives are listed with their reasons. Every model or user string goes through `esc`."""
from __future__ import annotations

import difflib
from collections import defaultdict

from evaluation.html_page import document, esc, num, pct, valid_span, write

CSS = """body{font:15px/1.45 system-ui,sans-serif;margin:0;background:#fafafa;color:#222}main{max-width:1100px;margin:auto;padding:1em}
.summary{background:#fff;border:1px solid #ddd;padding:.6em 1em}section.text{background:#fff;border:1px solid #ddd;margin:1em 0;padding:.5em 1em}
table{border-collapse:collapse;width:100%}td,th{border-top:1px solid #eee;padding:.3em;vertical-align:top;text-align:left}
mark.conflict{background:#ffd5d5}del{background:#fdd;text-decoration:line-through}ins{background:#dfd;text-decoration:none}
.muted{color:#777}.flag{color:#b00}.dropped{color:#b00;font-style:italic}small{color:#666}"""


def marked(tokens: list[str], spans: list[tuple[int, int]]) -> str:
    """The sentence with each valid span in a mark.conflict (overlapping spans merged)."""
    inside = [False] * len(tokens)
    for sp in spans:
        v = valid_span(sp, len(tokens))
        if v:
            for k in range(*v):
                inside[k] = True
    out, open_ = [], False
    for k, t in enumerate(tokens):
        if inside[k] and not open_:
            out.append('<mark class="conflict">')
            open_ = True
        if not inside[k] and open_:
            out.append("</mark>")
            open_ = False
        out.append(esc(t) + " ")
    if open_:
        out.append("</mark>")
    return "".join(out).strip()


def diff(before: list[str], after: list[str] | None) -> str:
    if after is None:
        return '<span class="dropped">dropped</span>'
    parts = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=before, b=after, autojunk=False).get_opcodes():
        if op == "equal":
            parts.append(esc(" ".join(before[i1:i2])))
        if op in ("delete", "replace"):
            parts.append(f"<del>{esc(' '.join(before[i1:i2]))}</del>")
        if op in ("insert", "replace"):
            parts.append(f"<ins>{esc(' '.join(after[j1:j2]))}</ins>")
    return " ".join(parts)


def pair_line(p: dict) -> str:
    kind = "alternative" if p["kind"] == "trigger" else f"sentence {p['other'] + 1}"
    flag = ' class="flag"' if p.get("decision") else ""
    fact = ""
    if p.get("conflicts"):
        c = p["conflicts"][0]
        fact = (f"<br><small>{esc(c['predicate'])} / {esc(c['role'])}: {esc(c['a']['answer'])} vs "
                f"{esc(c['b']['answer'])}</small>")
    elif p.get("decision"):
        fact = "<br><small>sentence-level conflict (no aligned fact)</small>"
    q = f"<br><small>withheld: {esc(p.get('question'))} {esc(p.get('withheld'))}</small>" if p["kind"] == "trigger" else ""
    return (f'<li data-pair="{esc(p["id"])}"{flag}>{esc(kind)}, P {pct(p.get("p_contradiction"))}: '
            f'{esc(" ".join(p["b_tokens"]))}{q}{fact}</li>')


def text_section(t, pairs: list[dict], fixes: dict, requests: list[dict], per_text: dict) -> str:
    rows = []
    for i, tokens in enumerate(t.sentences):
        mine = [p for p in pairs if p["sentence"] == i]
        spans = [tuple(c["a"]["span"]) for p in mine if p.get("decision") for c in p.get("conflicts") or []]
        f = fixes.get(i)
        change = diff(tokens, f.revised) + f"<br><small>{esc(f.reason)}</small>" if f else '<span class="muted">unchanged</span>'
        alts = "<ul>" + "".join(pair_line(p) for p in mine) + "</ul>" if mine else '<span class="muted">no pair</span>'
        rows.append(f'<tr data-sentence="{i}"><td>{i + 1}</td><td>{marked(tokens, spans)}</td><td>{alts}</td>'
                    f"<td>{change}</td></tr>")
    refused = [r for r in requests if r.get("refused")]
    ref = ""
    if refused:
        ref = (f'<details class="refused"><summary>{len(refused)} refused alternative(s)</summary><ul>' +
               "".join(f'<li>sentence {r["sentence"] + 1}: {esc(r["refused"])}: '
                       f'{esc(r["generation"]["text"] if r["generation"]["text"] is not None else r["generation"]["error"])}</li>'
                       for r in refused) + "</ul></details>")
    return (f'<section class="text" data-id="{esc(t.id)}"><h2>{esc(t.id)}</h2><p class="muted">{esc(t.prompt)}</p>'
            f'<p>self-contradiction rate {pct(per_text["self_contradiction_rate"])}, informativeness kept '
            f'{pct(per_text["informativeness_kept"])}</p><table><tr><th>#</th><th>sentence (conflicting answer marked)'
            f'</th><th>pairs</th><th>after mitigation</th></tr>{"".join(rows)}</table>{ref}</section>')


def write_page(result: dict, metrics: dict, path) -> None:
    by_text, fixes, reqs = defaultdict(list), defaultdict(dict), defaultdict(list)
    for p in result["pairs"]:
        by_text[p["text_id"]].append(p)
    for f in result["fixes"]:
        fixes[f.text_id][f.index] = f
    for r in result["requests"]:
        reqs[r["text_id"]].append(r)
    refused = ", ".join(f"{esc(k)} {v}" for k, v in (metrics.get("alternatives_refused") or {}).items()) or "none"
    note = f'<p class="muted">{esc(metrics["note"])}</p>' if metrics.get("note") else ""
    summary = (f'<div class="summary" data-sentences="{metrics["sentences"]}">{note}<p>generator {esc(metrics.get("generator"))}; '
               f'{metrics["texts"]} texts, {metrics["sentences"]} sentences; self-contradiction rate '
               f'{pct(metrics["self_contradiction_rate"])}; mitigation {esc(metrics["mitigation"])}: removed '
               f'{pct(metrics["mitigation_removed"])}, informativeness kept {pct(metrics["informativeness_kept"])}; '
               f'perplexity {num(metrics.get("perplexity_original"))} → {num(metrics.get("perplexity_revised"))}; '
               f"alternatives refused: {refused}</p></div>")
    body = [summary] + [text_section(t, by_text[t.id], fixes[t.id], reqs[t.id], m)
                        for t, m in zip(result["texts"], result["per_text"])]
    write(document("Self-contradiction report", CSS, body), path)
