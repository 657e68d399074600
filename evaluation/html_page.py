"""What the report pages (evaluation/consistency_html.py, evaluation/contradiction_html.py) share:
the page around their sections, and highlighted spans over a sentence's tokens.

Spans that are disjoint, adjacent, equal or nested each become one element (nested ones inside the
outer one, with their depth). Crossing spans (they overlap, neither contains the other) cannot all
nest in HTML: a span is split at the end of every span that starts before it and ends strictly
inside it, into consecutive fragments that tile it.
"""
from __future__ import annotations

import html
from pathlib import Path
from typing import Callable, Sequence


def esc(x) -> str:
    """Escape any value as HTML text or attribute content (quotes included)."""
    return html.escape("" if x is None else str(x), quote=True)


def pct(p) -> str:
    return "n/a" if p is None else f"{100 * float(p):.1f}%"


def num(x) -> str:
    return "–" if x is None else f"{float(x):.2f}"


def valid_span(span, n_tokens: int) -> tuple[int, int] | None:
    """(start, end) when `span` is a token range of an n-token sentence, else None."""
    try:
        s, e = int(span[0]), int(span[1])
    except (TypeError, ValueError, IndexError, KeyError):
        return None
    return (s, e) if 0 <= s < e <= n_tokens else None


def document(title: str, css: str, body: Sequence[str]) -> str:
    """One self-contained page: inline CSS, no script, no external resource."""
    e = html.escape(title, quote=True)
    return "\n".join(["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
                      '<meta name="viewport" content="width=device-width, initial-scale=1">',
                      f"<title>{e}</title>", f"<style>{css}</style></head><body><main>", f"<h1>{e}</h1>",
                      *body, "</main></body></html>"]) + "\n"


def write(text: str, path) -> Path:
    """Write a page (parent folders created); returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def nest_spans(token_html: Sequence[str], spans: Sequence[tuple[int, int]],
               open_tag: Callable[[int, dict], str]) -> str:
    """The tokens (already rendered), one space apart, inside the spans' elements.

    spans: valid (start, end) token ranges, end exclusive. open_tag(k, fragment) writes the opening
    tag of span k's fragment {start, end, depth, split, first, last}; each is closed by </span>.
    Spans open in order of start, longer first, so an enclosing span is the outer element. At a
    token where spans end, every span still open above one that ends there crosses it: it is closed
    and reopened as a new fragment after the separating space."""
    order = sorted(range(len(spans)), key=lambda k: (spans[k][0], -spans[k][1], k))
    starts: dict[int, list[int]] = {}
    for k in order:
        starts.setdefault(spans[k][0], []).append(k)
    parts: list = []
    frags: list[dict] = []  # {k, part: index of its open tag in parts, start, end, depth}
    stack: list[dict] = []  # open fragments, outermost first
    split: set[int] = set()

    def open_(k: int, at: int) -> None:
        f = {"k": k, "part": len(parts), "start": at, "end": None, "depth": len(stack)}
        parts.append(None)  # the open tag, written at the end once we know whether k is split
        frags.append(f)
        stack.append(f)

    def close_top(at: int) -> int:
        f = stack.pop()
        f["end"] = at
        parts.append("</span>")
        return f["k"]

    for i, tok in enumerate(token_html):
        reopen: list[int] = []
        while any(spans[f["k"]][1] == i for f in stack):
            if spans[stack[-1]["k"]][1] == i:
                close_top(i)
            else:
                k = close_top(i)
                split.add(k)
                reopen.insert(0, k)
        if i:
            parts.append(" ")
        for k in reopen + starts.get(i, []):
            open_(k, i)
        parts.append(tok)
    while stack:
        close_top(len(token_html))

    first = {f["k"]: n for n, f in reversed(list(enumerate(frags)))}
    last = {f["k"]: n for n, f in enumerate(frags)}
    for n, f in enumerate(frags):
        k = f["k"]
        parts[f["part"]] = open_tag(k, {"start": f["start"], "end": f["end"], "depth": f["depth"],
                                        "split": k in split, "first": first[k] == n, "last": last[k] == n})
    return "".join(parts)
