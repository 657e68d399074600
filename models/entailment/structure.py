"""Structure features for QA entailment: check a hypothesis QA against the reference's own QAs.

The reference is split into sentences and parsed (predicate detector + parser, batched, cached per
reference). The hypothesis question's verb gives its predicate (the detector's verb-form tables),
its slots give its role (metrics.roles). Then, with models/qa_alignment.py:

- struct_pred_in_ref:    the reference has that predicate at all;
- struct_role_in_ref:    a reference QA asks the same role of it;
- struct_role_match:     ... and its answer is the same or overlaps the hypothesis answer;
- struct_role_conflict:  ... and no such answer agrees while one is disjoint from it;
- struct_numbers_conflict: an aligned answer states other numbers of the same kind;
- struct_answer_in_args: share of the answer's content words found among that predicate's
  arguments in the reference (any role);
- struct_answer_elsewhere: share found only among other predicates' arguments (an intrinsic error:
  the words are in the reference, attached to something else).

With a sentence embedder (MiniLM), two soft versions of the exact matches above, for paraphrases
("beat" where the reference says "defeated"), which the exact verb-form match counts as absent:

- struct_fact_sim:       cosine of the QA ("question answer") with the most similar reference QA;
- struct_pred_sim:       cosine of the question's verb with the most similar reference predicate
  (1 when the verb form is there).

A reference with no predicate, or a question that is not a QA-SRL template, gives the neutral
values below and `fallback` = 1: the lexical features carry the decision (never a crash).

Scope (what of the reference is parsed): `all` (the exact path) parses every predicate the detector
finds; `relevant` (the fast path) runs the detector over every sentence but parses, for each
hypothesis QA, only the predicates its features can read: those with the question's verb form, and
those in a sentence that holds a content word of the answer. Every exact feature comes out the
same (an answer word among another predicate's arguments is a word of that predicate's sentence);
struct_fact_sim takes its maximum over those QAs only, and struct_pred_sim compares with every
detected predicate's verb form (not only the ones the parser gave a QA). Parsed predicates are
cached per reference, so later QAs of the same reference pay only for what is new.

`verb` (a cheaper classifier, trained with it: two features mean something else) parses only the
predicates with the question's verb form, a predicate or two per QA instead of most of the reference.
Every feature that reads those predicates' QAs alone is the same as in `all`; struct_answer_elsewhere
counts the answer's words found in the reference outside those predicates' arguments (not among other
predicates' arguments), and struct_fact_sim compares the QA with the reference's sentences (not its
QAs), each sentence embedded once. A structure does not switch between `verb` and the other two.
"""
from __future__ import annotations

from typing import Sequence

from metrics.roles import question_to_sem_role
from models.entailment.scorers import EmbeddingScorer
from models.qa_alignment import (answer_relation, content_set, detect_predicates, numbers_conflict, numbers_in,
                                 parse_predicates, verb_form_of)
from models.parser.question_slots import parse_question, verb_word
from models.parser import load_parser
from models.predicates import PredicateDetector

EXACT_FEATURES = ("struct_pred_in_ref", "struct_role_in_ref", "struct_role_match", "struct_role_conflict",
                  "struct_numbers_conflict", "struct_answer_in_args", "struct_answer_elsewhere", "struct_fallback")
SIMILARITY_FEATURES = ("struct_fact_sim", "struct_pred_sim")
STRUCT_FEATURES = EXACT_FEATURES + SIMILARITY_FEATURES
# a QA whose answer is a lone pronoun ("who died? He") is supported when its event is: the pronoun itself is
# always in the reference, so its structure signals mean something else than a named answer's. pron_X =
# answer_pronoun * X lets the stacker weigh them apart (models/entailment/stacked.py)
PRONOUN_FEATURES = tuple(f"pron_{f}" for f in STRUCT_FEATURES if f != "struct_fallback")
NEUTRAL = {f: 0.0 for f in STRUCT_FEATURES}
SENTENCE_END = {".", "!", "?"}
SCOPES = ("all", "relevant", "verb")


def split_sentences(tokens: Sequence[str], max_len: int = 80) -> list[list[str]]:
    """A tokenized reference cut after . ! ? (and every `max_len` words, for the parser's window)."""
    out, cur = [], []
    for t in tokens:
        cur.append(t)
        if t in SENTENCE_END or len(cur) >= max_len:
            out.append(cur)
            cur = []
    return out + ([cur] if cur else [])


class _Reference:
    """One reference: its sentences, their content words, the detector's predicates (of the sentences in
    `detected`: every one, except under scope verb without similarity features), and the QAs of the
    predicates parsed so far (by the predicate's position in `predicates`)."""

    def __init__(self, sentences: list[list[str]], predicates: list[dict], qas: dict | None = None,
                 detected=None):
        self.sentences, self.predicates = sentences, predicates
        self.words = [content_set(s) for s in sentences]
        self.detected = set(range(len(sentences))) if detected is None else set(detected)
        self.qas: dict[int, list[dict]] = dict(qas or {})
        self.changed = qas is None  # not yet as it is on disk (models/entailment/reference_cache.py)
        self.saved_vectors = 0  # how many of its texts' embeddings are on disk

    @property
    def forms(self) -> list[str]:
        return sorted({verb_form_of(p) for p in self.predicates})

    @property
    def all_detected(self) -> bool:
        return len(self.detected) == len(self.sentences)

    def texts(self) -> list[str]:
        """The texts the similarity features embed: the parsed QAs, the verb forms and (scope verb) the sentences."""
        return [f"{q['question']} {q['answer']}" for v in self.qas.values() for q in v] + self.forms + self.sentence_texts()

    def sentence_texts(self) -> list[str]:
        return [" ".join(s) for s in self.sentences]

    def with_forms(self, forms: set[str]) -> list[int]:
        """The predicates with one of these verb forms (what scope verb parses for a QA)."""
        return [i for i, p in enumerate(self.predicates) if verb_form_of(p) in forms]

    def qas_of(self, ids) -> list[dict]:
        return [q for i in ids for q in self.qas[i]]

    def relevant(self, forms: set[str], answer: str) -> list[int]:
        """The predicates a hypothesis QA's features can read: its verb forms', and those of the
        sentences that hold a content word of its answer."""
        words = content_set(answer.split())
        return [i for i, p in enumerate(self.predicates)
                if verb_form_of(p) in forms or self.words[p["sentence"]] & words]


class ReferenceStructure:
    """The QAs of references, parsed once each (keyed by their tokens), and the features of
    hypothesis QAs against them."""

    def __init__(self, detector, parser, parser_path: str | None = None, detector_path: str | None = None,
                 embedder=None, embedder_path: str | None = None, scope: str = "all"):
        self.detector, self.parser, self.embedder = detector, parser, embedder
        self.paths = {"parser": parser_path, "detector": detector_path}
        if embedder is not None:
            self.paths["embedder"] = embedder_path
        if scope == "verb":  # what a checkpoint saves and loads with: its features were computed so
            self.paths["scope"] = scope
        self.scope = scope
        # scope verb without the similarity features reads only the predicates with the question's verb
        # form (and whether the reference has any predicate): the detector then reads only the sentences
        # holding a word whose verb form is one of those (the form is the detector's table lookup of the
        # word, models/predicates/detector.py), not every sentence. False: every sentence, always.
        self.detect_lazily = True
        self._word_forms: dict[str, set[str]] = {}
        self.disk = None  # a ReferenceCache: parsed references kept on disk by content (use_disk_cache)
        self.cache: dict[tuple, _Reference] = {}
        self.vectors: dict[str, object] = {}  # text -> unit embedding (reference QAs, predicates)
        # each sentence through the detector and each of its predicates through the parser once, whatever
        # reference it is in: a response's earlier sentences recur in the premise of every later one
        # (models/qa_alignment.py; a reference's QAs do not depend on its other sentences)
        self.remember_sentences = True  # False: each reference read on its own (benchmarks/contradiction_analysis.py)
        self.detected_sentences: dict[tuple, list[dict]] = {}
        self.parsed_predicates: dict[tuple, list[dict]] = {}
        self.stats = {"references": 0, "no_predicate": 0, "unparsed_questions": 0, "predicates_found": 0,
                      "predicates_parsed": 0}

    def forget(self) -> None:
        """Drop every parsed and embedded reference and sentence, and the counts (a cold start)."""
        for kept in (self.cache, self.vectors, self.detected_sentences, self.parsed_predicates):
            kept.clear()
        self.stats.update(dict.fromkeys(self.stats, 0))

    @property
    def scope(self) -> str:
        return self._scope

    @scope.setter
    def scope(self, value: str) -> None:
        if value not in SCOPES:
            raise ValueError(f"reference scope {value!r}: one of {SCOPES}")
        now = getattr(self, "_scope", None)
        if now is not None and (now == "verb") != (value == "verb"):
            raise ValueError(f"reference scope {now!r} -> {value!r}: under scope verb two features mean something "
                             "else; a classifier reads the scope it was trained with")
        self._scope = value

    @classmethod
    def from_pretrained(cls, parser: str, detector: str, batch_size: int = 32,
                        embedder: str | None = None, embedder_model=None, scope: str = "all") -> "ReferenceStructure":
        """embedder: a sentence-embedding model name or path ("minilm") for the similarity
        features; None for the exact ones only. embedder_model: that model already loaded (shared).
        scope: `verb` for a classifier trained with it (saved in its checkpoint), else the exact `all`."""
        emb = (embedder_model or EmbeddingScorer(embedder)) if embedder else None
        return cls(PredicateDetector.from_pretrained(detector, batch_size=batch_size),
                   load_parser(parser, batch_size=batch_size), parser, detector, emb, embedder, scope)

    def use_disk_cache(self, folder) -> None:
        """Keep parsed references in `folder` (None: in memory only)."""
        from models.entailment.reference_cache import ReferenceCache

        self.disk = ReferenceCache(folder) if folder else None

    def identity(self) -> dict:
        """What a parsed reference depends on: the checkpoints and the precision each part ran in."""
        parts = {"parser": self.parser, "detector": self.detector, "embedder": self.embedder}
        return {"paths": {k: str(v) for k, v in self.paths.items()},
                "bf16": {k: bool(getattr(v, "bf16", False)) for k, v in parts.items() if v is not None}}

    @property
    def lazy(self) -> bool:
        """Whether the detector reads only the sentences a QA's verb forms can be in (see __init__)."""
        return self.detect_lazily and self.scope == "verb" and self.embedder is None

    def reference(self, tokens: Sequence[str]) -> _Reference:
        """A reference split and run through the detector, once (cached by its tokens; with a disk
        cache, once across runs); lazily, the detector reads sentences as QAs need them (detect)."""
        key = tuple(tokens)
        if key not in self.cache:
            loaded = self.disk.load(key, self.identity()) if self.disk is not None else None
            if loaded is not None:
                sentences, predicates, qas, vectors, detected = loaded
                ref = self.cache[key] = _Reference(sentences, predicates, qas, detected)
                self.vectors.update((t, v) for t, v in vectors.items() if t not in self.vectors)
                ref.saved_vectors = len(vectors)
            else:
                ref = self.cache[key] = _Reference(split_sentences(list(tokens)), [], detected=())
            if not self.lazy:  # every sentence: a new reference, or one a lazy structure left on disk
                self.detect(ref, range(len(ref.sentences)))
            self.stats["references"] += 1
            self.stats["no_predicate"] += ref.all_detected and not ref.predicates
        return self.cache[key]

    def detect(self, ref: _Reference, sentence_ids) -> None:
        """Run the detector over the sentences `sentence_ids` of a reference it has not read yet (one batch)."""
        todo = [j for j in dict.fromkeys(sentence_ids) if j not in ref.detected]
        if not todo:
            return
        memo = self.detected_sentences if self.remember_sentences else None
        for p in detect_predicates([ref.sentences[j] for j in todo], self.detector, memo):
            j = todo[p["sentence"]]
            ref.predicates.append(dict(p, sentence=j, sentence_id=str(j)))
            self.stats["predicates_found"] += 1
        ref.detected.update(todo)
        ref.changed = True

    def word_forms(self, word: str) -> set[str]:
        """The verb forms a word would have as a verbal or a nominal predicate (the detector's lookup)."""
        if word not in self._word_forms:
            lookup = self.detector.verb_forms.lookup
            self._word_forms[word] = {verb_form_of({"verb_form": lookup(word, t), "predicate": word})
                                      for t in ("verbal", "nominal")}
        return self._word_forms[word]

    def detect_for(self, ref: _Reference, forms: set[str]) -> None:
        """Lazily: the sentences that can hold a predicate with one of `forms`, and, while the reference has no
        predicate yet, every other one (the features read whether it has any)."""
        self.detect(ref, [j for j, s in enumerate(ref.sentences) if j not in ref.detected
                          and any(self.word_forms(w) & forms for w in s)])
        if not ref.predicates and not ref.all_detected:
            self.detect(ref, range(len(ref.sentences)))
            self.stats["no_predicate"] += not ref.predicates

    def _keep(self, tokens: Sequence[str], ref: _Reference) -> None:
        """Write a reference that gained parses or embeddings to the disk cache."""
        if self.disk is None:
            return
        vectors = {t: self.vectors[t] for t in dict.fromkeys(ref.texts()) if t in self.vectors}
        if ref.changed or len(vectors) > ref.saved_vectors:
            self.disk.save(tuple(tokens), self.identity(), ref.sentences, ref.predicates, ref.qas, vectors, ref.detected)
            ref.changed, ref.saved_vectors = False, len(vectors)

    def parse(self, ref: _Reference, ids) -> None:
        """Parse the predicates `ids` of a reference that are not parsed yet (one batch)."""
        todo = [i for i in dict.fromkeys(ids) if i not in ref.qas]
        memo = self.parsed_predicates if self.remember_sentences else None
        for i, qas in zip(todo, parse_predicates([ref.predicates[i] for i in todo], self.parser, memo)):
            j = ref.predicates[i]["sentence"]
            ref.qas[i] = [dict(q, sentence=j, tokens=ref.sentences[j]) for q in qas]
        self.stats["predicates_parsed"] += len(todo)
        ref.changed |= bool(todo)

    def reference_qas(self, tokens: Sequence[str]) -> list[dict]:
        """Every QA of a reference (every predicate parsed), in sentence order."""
        ref = self.reference(tokens)
        self.parse(ref, range(len(ref.predicates)))
        return ref.qas_of(range(len(ref.predicates)))

    def hypothesis_predicate(self, question: str) -> tuple[set[str], str | None] | None:
        """(verb forms, role) of a hypothesis question, or None when it is not a template question.
        Both the question's verb word and its lemma count: the word is often the stem already ("what
        did someone found?"), which the lemma tables would read as the past of another verb (find)."""
        parsed = parse_question(question)
        if parsed is None:
            self.stats["unparsed_questions"] += 1
            return None
        slots = parsed.slots
        word = verb_word(slots)
        forms = {word, (self.detector.verb_forms.lookup(word, "verbal") or word).lower()} if word else set()
        return forms, question_to_sem_role(slots, parsed.is_passive)

    def embed(self, texts: Sequence[str]):
        """Unit vectors of texts (numpy, one row each), each text embedded once per scorer."""
        import numpy as np

        new = [t for t in dict.fromkeys(texts) if t not in self.vectors]
        if new:
            self.vectors.update(zip(new, np.asarray(self.embedder.embed(new), dtype=float)))
        return np.array([self.vectors[t] for t in texts]).reshape(len(texts), -1)

    def features_many(self, premise: Sequence[str], questions: Sequence[str], answers: Sequence[str]) -> list[dict]:
        """features() of several QAs against one reference: the parse and the embeddings batched."""
        hyps = [self.hypothesis_predicate(q) for q in questions]
        if self.scope == "all":
            ref_qas = self.reference_qas(premise)
            if self.embedder is not None and ref_qas:
                self.embed([f"{q} {a}" for q, a in zip(questions, answers)])  # features() finds them cached
            forms = sorted({q["verb_form"] for q in ref_qas})
            out = [self._features(ref_qas, forms, h, q, a) for h, q, a in zip(hyps, questions, answers)]
        elif self.scope == "verb":
            ref = self.reference(premise)
            if self.lazy:
                self.detect_for(ref, set().union(*(h[0] for h in hyps if h is not None)))
            ids = [ref.with_forms(h[0]) if h is not None else [] for h in hyps]
            self.parse(ref, sorted(set().union(*ids)))
            if self.embedder is not None and ref.predicates:
                self.embed([f"{q} {a}" for q, a in zip(questions, answers)] + ref.sentence_texts())
            out = [self._features(ref.qas_of(i), ref.forms, h, q, a, any_predicate=bool(ref.predicates), whole=ref)
                   for i, h, q, a in zip(ids, hyps, questions, answers)]
        else:
            ref = self.reference(premise)
            ids = [ref.relevant(h[0], a) if h is not None else [] for h, a in zip(hyps, answers)]
            needed = sorted(set().union(*ids))
            self.parse(ref, needed)
            if self.embedder is not None and ref.predicates:
                self.embed([f"{q} {a}" for q, a in zip(questions, answers)])
                self.embed([f"{q['question']} {q['answer']}" for q in ref.qas_of(needed)])
            out = [self._features(ref.qas_of(i), ref.forms, h, q, a, any_predicate=bool(ref.predicates))
                   for i, h, q, a in zip(ids, hyps, questions, answers)]
        if self.disk is not None:
            self._keep(premise, self.cache[tuple(premise)])
        return out

    def features(self, premise: Sequence[str], question: str, answer: str) -> dict:
        return self.features_many(premise, [question], [answer])[0]

    def similarity(self, ref: list[dict], preds: list[str], forms: set[str], question: str, answer: str,
                   sentences: list[str] | None = None) -> dict:
        """struct_fact_sim and struct_pred_sim of one QA against the reference's QAs (or, scope verb, its
        `sentences`) and verb forms."""
        texts = sentences or [f"{q['question']} {q['answer']}" for q in ref]
        if texts:
            fact_sim = float((self.embed(texts) @ self.embed([f"{question} {answer}"])[0]).max())
        else:  # relevant scope: no reference QA shares a word or the verb with this one
            fact_sim = 0.0
        if forms & set(preds):
            pred_sim = 1.0
        else:  # the shortest form (the lemma "beat", not "beaten") against the reference's verb forms
            word = min(forms, key=lambda f: (len(f), f)) if forms else ""
            pred_sim = float((self.embed(preds) @ self.embed([word])[0]).max()) if word and preds else 0.0
        return {"struct_fact_sim": fact_sim, "struct_pred_sim": pred_sim}

    def _features(self, ref: list[dict], preds: list[str], hyp, question: str, answer: str,
                  any_predicate: bool | None = None, whole: _Reference | None = None) -> dict:
        """The features of one hypothesis QA (hyp: hypothesis_predicate's answer) against the
        reference QAs `ref` and the reference's verb forms `preds`; any_predicate: whether the
        reference has a predicate at all (default: whether `ref` has a QA); whole: scope verb's
        reference, whose words and sentences stand for the other predicates' arguments and QAs."""
        if not (bool(ref) if any_predicate is None else any_predicate) or hyp is None:
            return {**NEUTRAL, "struct_fallback": 1.0}
        forms, role = hyp
        answer_toks = answer.split()
        words = content_set(answer_toks)
        same_pred = [q for q in ref if q["verb_form"] in forms]
        same_role = [q for q in same_pred if q["role"] == role]
        rels = [answer_relation(answer_toks, q["tokens"][q["answer_span"][0]:q["answer_span"][1]]) for q in same_role]
        match = any(r["relation"] in ("same", "overlap") for r in rels)
        pred_args = set().union(*(content_set(q["answer"].split()) for q in same_pred)) if same_pred else set()
        other_args = set().union(*whole.words) if whole is not None else \
            set().union(*(content_set(q["answer"].split()) for q in ref if q["verb_form"] not in forms))
        nums = numbers_in(answer_toks)
        return {
            "struct_pred_in_ref": float(bool(same_pred)),
            "struct_role_in_ref": float(bool(same_role)),
            "struct_role_match": float(match),
            "struct_role_conflict": float(not match and any(r["relation"] == "disjoint" for r in rels)),
            "struct_numbers_conflict": float(bool(nums) and any(numbers_conflict(nums, numbers_in(q["answer"].split()))
                                                                for q in same_role)),
            "struct_answer_in_args": len(words & pred_args) / len(words) if words else 0.0,
            "struct_answer_elsewhere": len((words & other_args) - pred_args) / len(words) if words else 0.0,
            "struct_fallback": 0.0,
            **(self.similarity(ref, preds, forms, question, answer,
                               whole.sentence_texts() if whole is not None else None) if self.embedder is not None else
               {f: 0.0 for f in SIMILARITY_FEATURES}),
        }
