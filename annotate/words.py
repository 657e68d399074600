"""How the page shows tokens: as running text, and which reference words the reading aid may tint.

The texts stay lists of tokens (a span is a token range), but the page joins them as written text: no
space before a clitic or closing punctuation ("year 's" -> "year's", "do n't" -> "don't", "end ." ->
"end."), none after an opening bracket or quote, and the Penn Treebank's bracket and quote tokens shown
as the characters they stand for. The token's own text stays in the page for matching.

The reading aid tints in the reference the content words of the current answer: a word in scikit-learn's
English stop-word list (a dependency already; nltk's list needs a corpus download), a clitic, or a token
with fewer than two letters or digits is never tinted.
"""
from __future__ import annotations

import re

from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

SHOWN_AS = {"-LRB-": "(", "-RRB-": ")", "-LSB-": "[", "-RSB-": "]", "-LCB-": "{", "-RCB-": "}",
            "``": "\u201c", "''": "\u201d"}
NO_SPACE_BEFORE = {".", ",", ";", ":", "!", "?", "%", ")", "]", "}", "...", "''", "\u201d", "-RRB-", "-RSB-", "-RCB-", "-"}
NO_SPACE_AFTER = {"(", "[", "{", "$", "#", "``", "\u201c", "-LRB-", "-LSB-", "-LCB-", "-"}  # "24 - year" -> "24-year"
CLITIC = re.compile(r"^(n't|'(s|re|ve|ll|d|m|S|RE|VE|LL|D|M)|N'T|')$")
HAS_WORD = re.compile(r"\w")


def spaced(tokens: list[str]) -> list[tuple[str, bool]]:
    """(text to show, whether a space goes before it) for each token, in order."""
    out, open_quote = [], False
    for i, tok in enumerate(tokens):
        tok = str(tok)
        space = i > 0
        if tok in NO_SPACE_BEFORE or CLITIC.match(tok):
            space = False
        if i > 0 and str(tokens[i - 1]) in NO_SPACE_AFTER:
            space = False
        if tok == '"':  # a straight quote opens, then closes
            if open_quote:
                space = False
            open_quote = not open_quote
        elif i > 0 and str(tokens[i - 1]) == '"' and open_quote:
            space = False  # just after an opening straight quote
        out.append((SHOWN_AS.get(tok, tok), space))
    return out


def detokenize(text: str) -> str:
    """A whitespace-tokenised string (an answer, a span's words) as running text."""
    return "".join((" " if space else "") + shown for shown, space in spaced(text.split()))


def is_content_word(token: str) -> bool:
    """Whether the reading aid may tint this reference token."""
    word = token.lower()
    return len(HAS_WORD.findall(word)) >= 2 and not CLITIC.match(token) and word not in ENGLISH_STOP_WORDS
