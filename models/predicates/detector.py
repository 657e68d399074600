"""Predicate detection for raw tokenized text: every verbal and nominal predicate of a sentence
with its verb form, which is what the parser's input needs (predicate_index, predicate_type,
verb_form).

    det = PredicateDetector.from_pretrained("outputs/predicates/checkpoint")
    det.detect([["The", "investigation", "was", "suspended", "."]])
    # [[{"predicate_index": 1, "predicate": "investigation", "predicate_type": "nominal",
    #    "verb_form": "investigate", "score": 0.93}, {"predicate_index": 3, ..., "verbal", "suspend", ...}]]

Model: a BERT token classifier (`AutoModelForTokenClassification`, two outputs per word read
through independent sigmoids: P(verbal predicate), P(nominal predicate)), labelled on each word's
first sub-token. A word is a predicate when a probability passes its type's threshold (chosen on
dev by train.predicates); when both pass, the type with the higher probability wins, so every word
is reported at most once. Sentences longer than the model's window are cut into overlapping word
windows that fit it, and each word is decided in the window where it sits farthest from an edge:
every word gets a decision, nothing is truncated (a single word longer than the whole window keeps
its first sub-tokens, which are the ones the model reads anyway).

Verb forms come from tables saved in the checkpoint (`verb_forms.json`, built by train.predicates
from the QANom / QA-SRL training records, the QANom noun->verb heuristic pairs, CatVar and the
Wiktionary inflection table), so inference needs no data directory. See `VerbForms` for the lookup
order and the fallback when a word is in no table.

A checkpoint folder (train.predicates) holds the model and tokenizer (save_pretrained),
`predicate_detector.json` (thresholds, label names, window settings) and `verb_forms.json`.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

from models.progress import progress
from models.checkpoint import checkpoint_folder
from models.windows import budget_windows

CONFIG_FILE = "predicate_detector.json"
VERB_FORMS_FILE = "verb_forms.json"
LABELS = ("verbal", "nominal")  # output 0, output 1

# nominalising suffix -> verb endings to try; a candidate counts only if it is a known verb stem
_NOMINAL_SUFFIXES = (("ication", ("y",)), ("ation", ("ate", "e", "")), ("ition", ("ite", "e")),
                     ("sion", ("de", "se", "d", "")), ("tion", ("te", "")), ("ment", ("",)),
                     ("ance", ("", "e")), ("ence", ("", "e")), ("ancy", ("",)), ("ency", ("",)),
                     ("ure", ("", "e")), ("al", ("", "e")), ("ing", ("", "e")), ("age", ("",)),
                     ("ery", ("",)), ("y", ("",)))


def singulars(word: str) -> list[str]:
    """Candidate singulars of a (possibly plural) lower-cased noun, most likely first."""
    out = []
    if len(word) > 4 and word.endswith("ies"):
        out.append(word[:-3] + "y")
    if len(word) > 3 and word.endswith("es"):
        out += [word[:-1], word[:-2]]           # releases -> release; approaches -> approach
    if len(word) > 2 and word.endswith("s") and not word.endswith("ss"):
        out.append(word[:-1])
    return list(dict.fromkeys(w for w in out if w != word))


class VerbForms:
    """Word -> verb form lookup.

    verbal: `verbal[word]` (inflected form -> lemma: the QA-SRL Bank stems of the training verbs,
    then the Wiktionary table); a hyphenated word not in it keeps its prefix on its last part's
    lemma (re-elected -> re-elect, as QA-SRL writes it); else the word lower-cased (as
    data_prep.verb_forms).

    nominal, first hit wins: (1) `nominal[noun]` for the word or one of its candidate singulars
    (investigations -> investigation), the most trusted table first (QANom training predicates,
    then CatVar, then the QANom noun->verb heuristic pairs, whose generated plurals such as
    questions -> 'quest' must not beat question -> question), or the same for the last part of a
    hyphenated word, prefix kept; then the fallback: (2) the noun is itself a verb stem ("attack",
    "vote"); (3) the noun is an inflected verb form ("killing" -> kill); (4) a nominalising suffix
    undone to a known verb stem ("-ation" -> "-ate", "-ment" -> "", ...); (5) the word itself,
    lower-cased (a guessed singular would be wrong for "news" or "analysis"). The predicate is always reported; `lookup(..., with_source=True)` says
    whether the form came from a table ("table") or from the fallback ("fallback")."""

    def __init__(self, verbal: dict[str, str], nominal: dict[str, str], nominal_rank: dict[str, int] | None = None):
        self.verbal, self.nominal = verbal, nominal
        self.nominal_rank = nominal_rank or {}  # which table a noun came from (0 = most trusted)
        self.stems = set(verbal.values())

    @classmethod
    def load(cls, path: str | Path) -> "VerbForms":
        d = json.loads(Path(path).read_text(encoding="utf-8"))
        return cls(d["verbal"], d["nominal"], d.get("nominal_rank"))

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps({"verbal": self.verbal, "nominal": self.nominal,
                                          "nominal_rank": self.nominal_rank},
                                         ensure_ascii=False, sort_keys=True), encoding="utf-8")

    def verbal_form(self, word: str) -> tuple[str, str]:
        w = word.lower()
        if w in self.verbal:
            return self.verbal[w], "table"
        prefix, _, head = w.rpartition("-")
        if prefix and head in self.verbal:  # re-elected -> re-elect (QA-SRL keeps the prefix)
            return f"{prefix}-{self.verbal[head]}", "table"
        return w, "fallback"

    def nominal_form(self, word: str) -> tuple[str, str]:
        w = word.lower()
        cands = [w] + singulars(w)
        hits = [c for c in cands if c in self.nominal]
        if hits:  # the most trusted table wins, then the word as written (questions -> question, not 'quest')
            best = min(hits, key=lambda c: (self.nominal_rank.get(c, 0), cands.index(c)))
            return self.nominal[best], "table"
        prefix, _, head = w.rpartition("-")
        if prefix and head:
            form, source = self.nominal_form(head)
            if source == "table":
                return f"{prefix}-{form}", "table"
        for c in cands:
            if c in self.stems:
                return c, "fallback"
        for c in cands:
            if c in self.verbal:
                return self.verbal[c], "fallback"
        for c in cands:
            for suffix, endings in _NOMINAL_SUFFIXES:
                if c.endswith(suffix) and len(c) > len(suffix) + 2:
                    for e in endings:
                        v = c[: -len(suffix)] + e
                        if v in self.stems:
                            return v, "fallback"
        return w, "fallback"

    def lookup(self, word: str, predicate_type: str, with_source: bool = False):
        if predicate_type not in LABELS:
            raise ValueError(f"predicate_type {predicate_type!r}: expected one of {LABELS}")
        form, source = self.verbal_form(word) if predicate_type == "verbal" else self.nominal_form(word)
        return (form, source) if with_source else form


# ---------------------------------------------------------------------------- windows
def word_pieces(tokenizer, sentences: Sequence[Sequence[str]]) -> list[list[list[int]]]:
    """Sub-token ids of every word of every sentence; a word the tokenizer turns into nothing
    (control or zero-width characters) becomes [UNK], so that it still has a first sub-token."""
    sentences = [list(s) for s in sentences]
    out = [[[] for _ in s] for s in sentences]
    todo = [i for i, s in enumerate(sentences) if s]
    if todo:
        # verbose=False: a sentence longer than the model is split into windows below, not an error
        enc = tokenizer([sentences[i] for i in todo], is_split_into_words=True, add_special_tokens=False,
                        verbose=False)
        for b, i in enumerate(todo):
            for tok, w in zip(enc["input_ids"][b], enc.word_ids(b)):
                if w is not None:
                    out[i][w].append(tok)
    for s in out:
        for pieces in s:
            if not pieces:
                pieces.append(tokenizer.unk_token_id)
    return out


def owners(windows: list[tuple[int, int]], n_words: int) -> list[int]:
    """For each word, the window it is decided in: the one where it sits farthest from an edge."""
    best = [(-1, 0)] * n_words
    for k, (s, e) in enumerate(windows):
        for i in range(s, e):
            margin = min(i - s, e - 1 - i)
            if margin > best[i][0]:
                best[i] = (margin, k)
    return [k for _, k in best]


def encode_windows(pieces: list[list[int]], max_length: int, overlap: int, cls_id: int, sep_id: int) -> list[dict]:
    """[CLS] window [SEP] encodings that fit `max_length`: {start, end, input_ids, first} where
    first[j] is the position of word start+j's first sub-token."""
    budget = max(1, max_length - 2)
    pieces = [p[:budget] for p in pieces]  # a word longer than the window keeps its first sub-tokens
    out = []
    for s, e in budget_windows([len(p) for p in pieces], budget, max_words=budget, overlap=overlap):
        ids, first = [cls_id], []
        for p in pieces[s:e]:
            first.append(len(ids))
            ids.extend(p)
        ids.append(sep_id)
        out.append({"start": s, "end": e, "input_ids": ids, "first": first})
    return out


def decide(p_verbal: float, p_nominal: float, thresholds: dict) -> tuple[str, float] | None:
    """(type, score) of a word, or None: a type counts when its probability reaches its threshold;
    when both do, the higher probability wins."""
    passing = [(p, t) for p, t in ((p_verbal, "verbal"), (p_nominal, "nominal")) if p >= thresholds[t]]
    if not passing:
        return None
    p, t = max(passing)
    return t, float(p)


# ---------------------------------------------------------------------------- detector
class PredicateDetector:
    def __init__(self, model, tokenizer, verb_forms: VerbForms, thresholds: dict | None = None, *,
                 max_length: int = 128, window_overlap: int = 16, batch_size: int = 32, device: str | None = None,
                 bf16: bool = False):
        import torch

        self.model, self.tokenizer, self.verb_forms = model, tokenizer, verb_forms
        self.bf16 = bool(bf16)  # autocast at inference (models/fast_path.py); the weights stay fp32
        self.thresholds = dict(thresholds or {"verbal": 0.5, "nominal": 0.5})
        self.max_length = min(int(max_length), int(getattr(model.config, "max_position_embeddings", max_length)))
        self.window_overlap, self.batch_size = int(window_overlap), int(batch_size)
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        if self.device != "keep":  # "keep": a model a training loop owns and places
            self.model.to(self.device)

    # -------------------------------------------------------------- save / load
    def config_dict(self) -> dict:
        return {"labels": list(LABELS), "thresholds": self.thresholds, "max_length": self.max_length,
                "window_overlap": self.window_overlap}

    def save_pretrained(self, folder: str | Path, extra: dict | None = None) -> Path:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(folder)
        self.tokenizer.save_pretrained(folder)
        self.verb_forms.save(folder / VERB_FORMS_FILE)
        (folder / CONFIG_FILE).write_text(json.dumps({**self.config_dict(), **(extra or {})}, indent=1))
        return folder

    @classmethod
    def from_pretrained(cls, path_or_hub_id: str | Path, device: str | None = None, batch_size: int = 32) -> "PredicateDetector":
        from transformers import AutoModelForTokenClassification, AutoTokenizer

        folder = checkpoint_folder(path_or_hub_id)
        for name in (CONFIG_FILE, VERB_FORMS_FILE, "config.json"):
            if not (folder / name).exists():
                raise FileNotFoundError(f"{folder}: not a predicate-detector checkpoint (missing {name}; "
                                        "was it saved by train.predicates?)")
        saved = json.loads((folder / CONFIG_FILE).read_text())  # the checkpoint's file, not a Hydra config
        if list(saved.get("labels", [])) != list(LABELS):
            raise ValueError(f"{folder / CONFIG_FILE}: labels {saved.get('labels')} != {list(LABELS)}")
        model = AutoModelForTokenClassification.from_pretrained(folder).eval()
        tokenizer = AutoTokenizer.from_pretrained(folder)
        return cls(model, tokenizer, VerbForms.load(folder / VERB_FORMS_FILE), saved["thresholds"],
                   # checkpoints saved before these were recorded used the defaults of that time
                   max_length=saved.get("max_length", 128), window_overlap=saved.get("window_overlap", 16),
                   batch_size=batch_size, device=device)

    # -------------------------------------------------------------- inference
    def encode(self, sentences: Sequence[Sequence[str]]) -> list[list[dict]]:
        """Per sentence, its windows (see encode_windows)."""
        t = self.tokenizer
        return [encode_windows(p, self.max_length, self.window_overlap, t.cls_token_id, t.sep_token_id)
                if p else [] for p in word_pieces(t, sentences)]

    def word_probs(self, sentences: Sequence[Sequence[str]]) -> list[list[tuple[float, float]]]:
        """Per sentence, (P(verbal), P(nominal)) of every word, in word order."""
        import torch

        sentences = _check_sentences(sentences)
        windows = self.encode(sentences)
        flat = [(i, k, w) for i, ws in enumerate(windows) for k, w in enumerate(ws)]
        flat.sort(key=lambda x: len(x[2]["input_ids"]))  # similar lengths share a batch: less padding
        probs: dict[tuple[int, int], list] = {}
        was_training = self.model.training
        self.model.eval()
        with torch.no_grad(), torch.autocast(torch.device(self.device).type, dtype=torch.bfloat16, enabled=self.bf16):
            for b in progress(range(0, len(flat), self.batch_size), "detector", unit="batch"):
                chunk = flat[b: b + self.batch_size]
                ids, mask = pad_batch([w["input_ids"] for _, _, w in chunk], self.tokenizer.pad_token_id)
                logits = self.model(input_ids=ids.to(self.device), attention_mask=mask.to(self.device)).logits
                p = torch.sigmoid(logits.float()).cpu()
                for row, (i, k, w) in enumerate(chunk):
                    probs[(i, k)] = p[row, w["first"]].tolist()
        self.model.train(was_training)
        out = []
        for i, s in enumerate(sentences):
            ws = windows[i]
            own = owners([(w["start"], w["end"]) for w in ws], len(s))
            out.append([tuple(probs[(i, own[j])][j - ws[own[j]]["start"]]) for j in range(len(s))])
        return out

    def detect(self, sentences: Sequence[Sequence[str]]) -> list[list[dict]]:
        """Per sentence, its predicates sorted by index: {predicate_index, predicate, predicate_type,
        verb_form, score}. An empty sentence gives []."""
        sentences = _check_sentences(sentences)
        out = []
        for words, probs in zip(sentences, self.word_probs(sentences)):
            preds = []
            for i, (pv, pn) in enumerate(probs):
                d = decide(pv, pn, self.thresholds)
                if d is None:
                    continue
                ptype, score = d
                preds.append({"predicate_index": i, "predicate": words[i], "predicate_type": ptype,
                              "verb_form": self.verb_forms.lookup(words[i], ptype), "score": score})
            out.append(preds)
        return out


def _check_sentences(sentences) -> list[list[str]]:
    if isinstance(sentences, str):
        raise TypeError("detect() takes a list of sentences, each a list of word tokens (not strings)")
    sentences = list(sentences)
    if any(isinstance(s, str) for s in sentences):
        raise TypeError("detect() takes a list of sentences, each a list of word tokens (not strings)")
    return [list(s) for s in sentences]


def pad_batch(seqs: list[list[int]], pad_id: int):
    """ids and attention mask of a batch, its length rounded up to the shape bucket (models.memory)."""
    import torch

    from models.memory import padded_length

    n = padded_length(max(len(s) for s in seqs))
    ids = torch.full((len(seqs), n), pad_id, dtype=torch.long)
    mask = torch.zeros((len(seqs), n), dtype=torch.long)
    for r, s in enumerate(seqs):
        ids[r, : len(s)] = torch.tensor(s)
        mask[r, : len(s)] = 1
    return ids, mask
