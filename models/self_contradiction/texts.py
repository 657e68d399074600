"""A text as the loop sees it: its sentences (tokens, and the words as a reader sees them) and the QAs of each
sentence (predicate detector + parser, batched over every text at once)."""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from models.qa_alignment import extract_qas
from models.text import tokenize_sentences


@lru_cache(maxsize=1)
def _detokenizer():
    from nltk.tokenize.treebank import TreebankWordDetokenizer

    return TreebankWordDetokenizer()


def detokenize(tokens) -> str:
    """Treebank tokens back to text ("Lovelace , born" -> "Lovelace, born")."""
    return _detokenizer().detokenize(list(tokens)) if tokens else ""


@dataclass
class AnalysedText:
    id: str
    prompt: str
    text: str
    sentences: list[list[str]] = field(default_factory=list)
    qas: list[list[dict]] = field(default_factory=list)  # per sentence, models.qa_alignment's QA dicts
    origin: list[int] = field(default_factory=list)       # a revised text: each sentence's index in the original
    changed: set[int] = field(default_factory=set)        # a revised text: the original indices that changed

    def sentence_text(self, i: int) -> str:
        return detokenize(self.sentences[i])

    def prefix(self, i: int) -> str:
        """The text written before sentence i (ChatProtect's prefix)."""
        return " ".join(self.sentence_text(k) for k in range(i))


def analyse_texts(rows: list[dict], detector, parser) -> list[AnalysedText]:
    """{id, prompt, text} rows -> AnalysedText with sentences and QAs (one parser pass over all sentences)."""
    texts = [AnalysedText(str(r["id"]), str(r.get("prompt") or ""), str(r.get("text") or ""),
                          tokenize_sentences(str(r.get("text") or ""))) for r in rows]
    parse_sentences(texts, detector, parser)
    return texts


def parse_sentences(texts: list[AnalysedText], detector, parser) -> None:
    """Fill `qas` of every text from its sentences."""
    flat = [s for t in texts for s in t.sentences]
    qas = extract_qas(flat, detector, parser) if flat else []
    k = 0
    for t in texts:
        t.qas = qas[k:k + len(t.sentences)]
        k += len(t.sentences)
