"""Raw text -> sentences of word tokens, the way the QA-SRL / QANom records are tokenized (Penn
Treebank style: "didn't" -> "did n't", punctuation split off). NLTK's Punkt splitter and Treebank
word tokenizer need no downloaded model; Punkt gets the common English abbreviations so that
"Dr. Smith" or "the U.S. economy" do not end a sentence."""
from __future__ import annotations

import unicodedata
from functools import lru_cache

ABBREVIATIONS = (
    "dr mr mrs ms prof sen rep gov gen col lt sgt capt st jr sr inc co corp ltd vs etc e.g i.e u.s u.k u.n "
    "jan feb mar apr jun jul aug sep sept oct nov dec no nos fig al approx dept est mt ave").split()


@lru_cache(maxsize=1)
def _splitters():
    from nltk.tokenize import NLTKWordTokenizer
    from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer

    params = PunktParameters()
    params.abbrev_types = set(ABBREVIATIONS)
    return PunktSentenceTokenizer(params), NLTKWordTokenizer()


def tokenize_sentences(text: str) -> list[list[str]]:
    """Sentences of tokens; blank text gives []. PTB quote tokens (`` '') become plain quotes."""
    if not text or not text.strip():
        return []
    sent_tok, word_tok = _splitters()
    out = []
    for paragraph in text.splitlines():
        for start, end in sent_tok.span_tokenize(paragraph):
            words = ['"' if w in ("``", "''") else w for w in word_tok.tokenize(paragraph[start:end])]
            if words:
                out.append(words)
    return out


def as_sentences(text) -> list[list[str]]:
    """Generated text given as a string, one token list (one sentence) or a list of token lists."""
    if text is None:
        return []
    if isinstance(text, str):
        return tokenize_sentences(text)
    if all(isinstance(s, str) for s in text):
        return [list(text)] if text else []
    return [[str(t) for t in s] for s in text if s]


def as_tokens(text) -> list[str]:
    """A reference as one flat token list (a string is tokenized; token lists are kept)."""
    if text is None:
        return []
    if isinstance(text, str):
        return [w for s in tokenize_sentences(text) for w in s]
    if text and all(isinstance(s, list) for s in text):
        return [str(w) for s in text for w in s]
    return [str(w) for w in text]


def script_warnings(tokens: list[str], long_token: int = 40) -> list[str]:
    """Notes on text the English-only models cannot read well: mostly non-Latin letters, or
    tokens so long that the text probably has no spaces."""
    notes = []
    letters = [ch for w in tokens for ch in w if ch.isalpha()]
    if letters:
        latin = sum("LATIN" in unicodedata.name(ch, "") for ch in letters)
        if latin / len(letters) < 0.5:
            notes.append(f"{100 * (1 - latin / len(letters)):.0f}% of the letters are not Latin: "
                         "the models are English-only")
    longest = max((len(w) for w in tokens), default=0)
    if longest > long_token:
        notes.append(f"a token of {longest} characters: a text without spaces cannot be split into words")
    return notes


def layout_notes(text: str, long_words: int) -> list[str]:
    """What of a raw document's layout the tokenizer flattens, said once each: blank lines, speaker turns
    ("Speaker 1: ..."), bullet lists, and a length over `long_words` words (scored in windows)."""
    import re

    lines = text.splitlines()
    notes = []
    blank = sum(1 for line in lines[1:-1] if not line.strip())
    if blank:
        notes.append(f"{blank} blank line(s): paragraphs are read as one text")
    turns = sum(1 for line in lines if re.match(r"^\s*[A-Z][\w .'-]{0,40}:\s", line))
    if turns:
        notes.append(f"{turns} speaker turn(s) ('Name: ...'): each turn is read as sentences of the text")
    bullets = sum(1 for line in lines if re.match(r"^\s*([-*\u2022]|\d+[.)])\s", line))
    if bullets:
        notes.append(f"{bullets} bullet or numbered line(s): each item is read as a sentence")
    words = len(text.split())
    if words > long_words:
        notes.append(f"{words} words (over {long_words}): scored in windows, the document parsed sentence by sentence")
    return notes
