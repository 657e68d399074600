"""Synthetic minimal edits of real sentences, the training data of the sentence-support cross-encoder
(FactCC's and MiniCheck's recipe): python -m train.entailment.synthetic_edits paths.processed_dir=DIR

A premise is a window of real sentences of one document (QA-SRL Bank and QANom *training* records only: every
evaluation document is already left out of them), the hypothesis one sentence of that window, rewritten:
- supported: the sentence as it is, or paraphrased (WordNet synonyms in place of 1-3 words, a parenthetical
  or a clause between commas dropped), so that new words alone do not mean "not supported";
- not supported: the sentence, maybe paraphrased, with one minimal edit that changes its meaning: a number
  changed, a name swapped for another of the document (or two names of the sentence swapped), a WordNet
  antonym, a noun swapped for a sibling sense (yellow -> green), a negation added or removed, a phrase from
  another document inserted, or a sentence of another document.
Balanced and deterministic for a seed. Writes `<processed_dir>/entailment-edits.jsonl`, rows
{id, source, premise, hypothesis, answer, supported, corruption}: `answer` is the edited words (what the
trainer's window choice reads)."""
from __future__ import annotations

import logging
import random
import re
from collections import defaultdict
from pathlib import Path

import hydra
from omegaconf import DictConfig

from data_prep.records import SkipCounter, document_id, read_jsonl, write_jsonl
from models.wordnet import wordnet

log = logging.getLogger(__name__)
TRAIN_FILES = ("qasrl-bank.train-offline.jsonl", "qanom.train.jsonl")
TRAIN_SPLITS = {"train", "train-offline"}
# each edit kind and how often it is drawn: names and numbers most (SummEdits' most frequent edit), another
# document's sentence least (an easy negative)
EDITS = {"number": 2.0, "entity_swap": 3.0, "argument_swap": 1.0, "antonym": 2.0, "sibling": 2.0, "negation": 1.5,
         "insertion": 1.5, "other_document": 0.5}
AUX = {"is", "are", "was", "were", "will", "can", "could", "would", "should", "has", "have", "had", "does", "did",
       "do", "may", "might", "must"}
NEGATION = {"not", "n't", "never"}
STOP = set("a an the of to in on at for by with from and or but as be is are was were been being it its this that "
           "these those he she they his her their there which who whom what when where how do does did have has had "
           "get got make made take took go went even also just only very much many more most some any such than then "
           "so up out about into over other same well still yet not no can could will would may might must shall "
           "should one two first new said says say".split())
PTB = {"-LRB-": "(", "-RRB-": ")", "-LSB-": "[", "-RSB-": "]", "-LCB-": "{", "-RCB-": "}"}  # as generated text has them
PREPOSITIONS = {"in", "at", "on", "for", "with", "during", "near", "after", "before", "under"}


def documents(processed: Path, counts: SkipCounter) -> dict[str, list[list[str]]]:
    """document id -> its sentences (tokens, in order, each once) from the training records."""
    sentences: dict[str, dict[str, list[str]]] = defaultdict(dict)
    for name in TRAIN_FILES:
        for rec in read_jsonl(processed / name):
            if rec.get("split") not in TRAIN_SPLITS:
                counts["not_a_training_split"] += 1
                continue
            toks = [PTB.get(t, t) for t in rec["tokens"]]
            sentences[document_id(rec["sentence_id"])].setdefault(rec["sentence_id"], toks)
    order = lambda sid: tuple(int(n) for n in re.findall(r"\d+", sid)[-2:])  # noqa: E731
    return {d: [s[k] for k in sorted(s, key=order)] for d, s in sentences.items()}


class Editor:
    """The rewrites of one sentence; each returns (tokens, edited words) or None when it does not apply."""

    def __init__(self, rng: random.Random):
        self.rng, self.wn = rng, wordnet()

    def _lemma(self, word: str, pos: str) -> str | None:
        return self.wn.morphy(word.lower(), pos)

    def _sense(self, word: str, pos: str):
        """The word's most frequent sense when it is of `pos` (SemCor counts), else None: a word whose
        commonest sense is of another part of speech is left alone."""
        senses = self.wn.synsets(word.lower())
        if not senses or senses[0].pos().replace("s", "a") != pos:
            return None
        return senses[0]

    @staticmethod
    def _common(lemmas, word: str) -> list[str]:
        return [x.name() for x in lemmas if x.name().isalpha() and x.name().lower() != word.lower() and x.count() > 0]

    def synonym(self, toks: list[str]) -> tuple[list[str], str] | None:
        cands = []
        for i, w in enumerate(toks):
            if not w.isalpha() or w.lower() in STOP or w[0].isupper() or len(w) < 4:
                continue
            for pos in ("n", "v", "a"):
                sense = self._sense(w, pos)
                if sense is not None and self._lemma(w, pos) == w.lower():  # a base form: no inflection needed
                    syns = self._common(sense.lemmas(), w)
                    if syns:
                        cands.append((i, syns))
                    break
        if not cands:
            return None
        i, syns = self.rng.choice(cands)
        new = self.rng.choice(syns)
        return toks[:i] + [new] + toks[i + 1:], new

    def paraphrase(self, toks: list[str]) -> list[str]:
        out = list(toks)
        for _ in range(self.rng.randint(1, 3)):
            done = self.synonym(out)
            if done:
                out = done[0]
        commas = [i for i, t in enumerate(out) if t == ","]
        if len(commas) >= 2 and self.rng.random() < 0.3:  # drop a parenthetical between two commas
            a, b = sorted(self.rng.sample(commas, 2))
            if 2 <= b - a <= 8:
                out = out[:a] + out[b:]
        return out

    def number(self, toks, doc):
        idx = [i for i, w in enumerate(toks) if re.fullmatch(r"\d[\d,.]*", w)]
        if not idx:
            return None
        i = self.rng.choice(idx)
        digits = [j for j, c in enumerate(toks[i]) if c.isdigit()]
        j = self.rng.choice(digits)
        new_digit = self.rng.choice([d for d in "0123456789" if d != toks[i][j] and (j or d != "0")])
        new = toks[i][:j] + new_digit + toks[i][j + 1:]
        return toks[:i] + [new] + toks[i + 1:], new

    def entity_swap(self, toks, doc):
        names = [i for i, w in enumerate(toks) if i > 0 and w[:1].isupper() and w.isalpha()]
        here = set(toks)
        pool = sorted({w for s in doc for k, w in enumerate(s) if k > 0 and w[:1].isupper() and w.isalpha()} - here)
        if not names or not pool:
            return None
        i = self.rng.choice(names)
        new = self.rng.choice(pool)
        return toks[:i] + [new] + toks[i + 1:], new

    def argument_swap(self, toks, doc):
        names = [i for i, w in enumerate(toks) if i > 0 and w[:1].isupper() and w.isalpha()]
        pairs = [(a, b) for a in names for b in names if a < b - 2 and toks[a] != toks[b]]
        if not pairs:
            return None
        a, b = self.rng.choice(pairs)
        out = list(toks)
        out[a], out[b] = toks[b], toks[a]
        return out, f"{toks[b]} {toks[a]}"

    def antonym(self, toks, doc):
        cands = []
        for i, w in enumerate(toks):
            if not w.isalpha() or w.lower() in STOP:
                continue
            for pos in ("a", "v", "r", "n"):
                lem = self._lemma(w, pos)
                if lem != w.lower() or self._sense(w, pos) is None:
                    continue
                ants = [a.name() for s in self.wn.synsets(lem, pos)[:3] for x in s.lemmas() if x.name() == lem
                        for a in x.antonyms() if a.name().isalpha()]
                if ants:
                    cands.append((i, ants))
                    break
        if not cands:
            return None
        i, ants = self.rng.choice(cands)
        new = self.rng.choice(ants)
        return toks[:i] + [new] + toks[i + 1:], new

    def sibling(self, toks, doc):
        cands = []
        for i, w in enumerate(toks):
            sense = self._sense(w, "n") if w.isalpha() and not w[0].isupper() and w.lower() not in STOP else None
            if sense is None or self._lemma(w, "n") != w.lower():
                continue
            sibs = self._common([c.lemmas()[0] for h in sense.hypernyms() for c in h.hyponyms() if c != sense], w)
            if sibs:
                cands.append((i, sibs))
        if not cands:
            return None
        i, sibs = self.rng.choice(cands)
        new = self.rng.choice(sibs)
        return toks[:i] + [new] + toks[i + 1:], new

    def negation(self, toks, doc):
        neg = [i for i, w in enumerate(toks) if w.lower() in NEGATION]
        if neg:
            i = self.rng.choice(neg)
            return toks[:i] + toks[i + 1:], toks[i]
        aux = [i for i, w in enumerate(toks) if w.lower() in AUX]
        if not aux:
            return None
        i = aux[0]
        return toks[:i + 1] + ["not"] + toks[i + 1:], "not"

    def insertion(self, toks, other):
        """A prepositional phrase of another document's sentence, before the final punctuation."""
        starts = [i for i, w in enumerate(other) if w.lower() in PREPOSITIONS]
        self.rng.shuffle(starts)
        for i in starts:
            phrase = []
            for w in other[i:i + 5]:
                if not (w.isalnum() or w[:1].isupper()) and phrase:
                    break
                phrase.append(w)
            if 2 <= len(phrase) <= 5 and any(w[:1].isupper() or w.isdigit() for w in phrase[1:]):
                end = len(toks) - 1 if toks and not toks[-1].isalnum() else len(toks)
                return toks[:end] + phrase + toks[end:], " ".join(phrase)
        return None


def make_rows(docs: dict[str, list[list[str]]], n: int, seed: int, window: int, max_words: int,
              counts: SkipCounter) -> list[dict]:
    rng = random.Random(seed)
    editor = Editor(rng)
    ids = sorted(d for d, s in docs.items() if len(s) >= 2)
    rows = []
    while len(rows) < n:
        doc_id = rng.choice(ids)
        sents = docs[doc_id]
        k = rng.randrange(len(sents))
        toks = sents[k]
        if not 6 <= len(toks) <= max_words:
            counts["sentence_length"] += 1
            continue
        premise = [w for s in sents[max(0, k - window): k + window + 1] for w in s]
        supported = len(rows) % 2 == 0
        base = editor.paraphrase(toks) if rng.random() < 0.7 else list(toks)
        if supported:
            hyp, answer, kind = base, "", "paraphrase" if base != toks else "copy"
        else:
            for kind in rng.choices(list(EDITS), weights=list(EDITS.values()), k=4):  # the first that applies
                if kind == "other_document":
                    hyp = rng.choice(docs[rng.choice(ids)])
                    done = (hyp, " ".join(hyp)) if len(hyp) <= max_words else None
                else:
                    other = rng.choice(docs[rng.choice(ids)]) if kind == "insertion" else sents
                    done = getattr(editor, kind)(base, other)
                if done is not None:
                    break
                counts[f"no_{kind}"] += 1
            if done is None:
                continue
            hyp, answer = done
        rows.append({"id": f"{doc_id}:{k}:{len(rows)}", "source": doc_id, "premise": " ".join(premise),
                     "hypothesis": " ".join(hyp), "answer": answer, "supported": int(supported), "corruption": kind})
    return rows


@hydra.main(version_base="1.3", config_path="../../conf", config_name="synthetic_edits")
def main(cfg: DictConfig) -> None:
    counts = SkipCounter()
    processed = Path(hydra.utils.to_absolute_path(cfg.paths.processed_dir))
    docs = documents(processed, counts)
    rows = make_rows(docs, int(cfg.rows), int(cfg.seed), int(cfg.window), int(cfg.max_words), counts)
    out = Path(hydra.utils.to_absolute_path(cfg.out or processed / "entailment-edits.jsonl"))
    write_jsonl(out, rows)
    kinds = defaultdict(int)
    for r in rows:
        kinds[r["corruption"]] += 1
    log.info("wrote %d rows from %d documents to %s; kinds %s; skipped %s", len(rows), len(docs), out, dict(kinds),
             dict(counts))


if __name__ == "__main__":
    main()
