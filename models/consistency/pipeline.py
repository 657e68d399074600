"""The consistency pipeline: a reference text and a generated text -> the predicate-argument facts
(QASem QAs) of the generated text -> P(supported by the reference) per QA -> a report with the
unsupported facts localized and the overall score (share of supported QAs).

sentences (models.text) -> predicates (models.predicates, batched) -> QAs (models.parser, batched
over every predicate of every pair) -> scores (the entailment scorer, one call per pair with all
its QAs; long references are chunked by the scorer, score = max over chunks).

A pair can bring its own predicates or its own QAs (the benchmark's), skipping those stages.
Nothing is dropped silently: every sentence and predicate appears in the report with a status,
and `messages` says what happened (no predicate, undecodable parser output, a sentence longer
than the parser's window, non-English script, an empty text)."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from models.checkpoint import is_hub_id
from models.progress import progress
from models.release import release_folder, release_models
from models.consistency.inputs import invalid_report, pair_problems
from models.entailment import load_scorer, score_qas
from models.entailment.features import group_indices
from models.text import as_sentences, as_tokens, script_warnings
from models.fast_path import resolve_precision, use_precision, use_reference_cache, use_reference_scope
from models.memory import release_free_memory
from models.consistency.copula import Lexicon, copular_records
from models.consistency.response_score import RESPONSE_SCORES, response_scores
from models.parser import load_parser
from models.predicates import PredicateDetector


@dataclass
class _Slot:
    """One predicate of one sentence of one pair, on its way through the parser."""
    pair: int
    sentence: int
    predicate: dict
    record: dict | None = None
    predicted: dict | None = None  # the parser's prediction record (qas, and for seq2seq the text)


class ConsistencyPipeline:
    def __init__(self, scorer, parser=None, detector=None, threshold: float = 0.5, copulas: bool = True,
                 lexicon=None, response_score: str = "share_min", share_weight: float = 0.7):
        """copulas: add the copular facts of every sentence the pipeline parses (models/consistency/copula.py:
        "Who is an actor? Andrew Shue"), from the verb-form table `lexicon` (default: the
        detector's); False leaves them out. response_score: what a report's `score` is, one of
        models/consistency/response_score.py's RESPONSE_SCORES (`share`, the share of supported QAs, is in every
        report as its own field too); share_weight: share_min's weight of the share."""
        if response_score not in RESPONSE_SCORES:
            raise ValueError(f"response_score={response_score!r}: give one of {RESPONSE_SCORES}")
        self.scorer, self.parser, self.detector, self.threshold = scorer, parser, detector, float(threshold)
        self.response_score, self.share_weight = response_score, float(share_weight)
        if copulas and lexicon is None and getattr(detector, "verb_forms", None) is not None:
            lexicon = Lexicon.from_lemmas(detector.verb_forms.verbal)
        self.copulas = lexicon if copulas else None

    @classmethod
    def from_pretrained(cls, classifier: str, parser: str | None = None, detector: str | None = None,
                        device: str | None = None, batch_size: int = 32, threshold: float | str = 0.5,
                        copulas: bool = True, lexicon=None, precision: str = "fp32",
                        reference_scope: str = "all", reference_cache: str | None = None,
                        response_score: str = "share_min", share_weight: float = 0.7):
        """Load the published checkpoints by folder or Hub id. threshold: a number, or "dev" for
        the threshold the classifier's cross-validation chose (saved with it). precision: fp32 (the
        exact path), bf16 / int8 for the detectors, parsers and embedders, or auto (bf16 where it is
        native; models/fast_path.py). reference_scope: what of a reference a stacked checkpoint parses,
        all (the exact path), relevant (the predicates each QA's features read; models/entailment/structure.py)
        or auto (relevant where no feature changes: a checkpoint without the similarity features);
        reference_cache: a folder that keeps parsed references across runs (models/entailment/reference_cache.py).
        `classifier` may also be a release (a folder or Hub id with manifest.json, `bash scripts/release.sh`):
        its entailment classifier, parser and detector, every file checked before any loads."""
        if parser is None and detector is None:
            if (Path(str(classifier)).is_dir() or is_hub_id(classifier)) and release_folder(classifier) is not None:
                models = release_models(classifier)
                classifier, parser, detector = models["entailment"], models["parser"], models["detector"]
        scorer = load_scorer(classifier, batch_size=batch_size)
        if threshold == "dev":
            threshold = getattr(scorer, "threshold", None) or 0.5
        qa_parser = det = None
        if parser:
            qa_parser = load_parser(parser, batch_size=batch_size, device=device)
        if detector:
            det = PredicateDetector.from_pretrained(detector, device=device, batch_size=batch_size)
        pipe = cls(scorer, qa_parser, det, float(threshold), copulas=copulas, lexicon=lexicon,
                   response_score=response_score, share_weight=share_weight)
        if resolve_precision(precision) != "fp32":
            use_precision(pipe, precision)
        use_reference_scope(pipe, reference_scope)
        use_reference_cache(pipe, reference_cache)
        return pipe

    # ------------------------------------------------------------------ stages
    def _detect(self, sentences: list[list[str]], batched: bool) -> list[list[dict]]:
        if not sentences:
            return []
        if self.detector is None:
            raise ValueError("no predicate detector loaded: pass detector=PATH or give each pair its predicates")
        if batched:
            return self.detector.detect(sentences)
        return [self.detector.detect([s])[0] for s in sentences]

    def _parse(self, slots: list[_Slot], batched: bool) -> None:
        if not slots:
            return
        if self.parser is None:
            raise ValueError("no parser loaded: pass parser=PATH or give each pair its QAs")
        records = [s.record for s in slots]
        if batched:
            preds = self.parser.predict(records)[0]
        else:
            preds = [self.parser.predict([r])[0][0] for r in records]
        for s, pred in zip(slots, preds):
            s.predicted = pred

    def _score(self, reference: list[str], qas: list[dict], keys: list, batched: bool) -> list[float]:
        """P(supported) of each QA; keys: its predicate occurrence (sentence, predicate index). The
        stacked scorer reads the other QAs of the same predicate, so one at a time means one
        predicate's QAs at a time."""
        if not qas:
            return []
        hyps = [f"{qa['question'].strip()} {qa['answer'].strip()}" for qa in qas]
        answers = [qa["answer"] for qa in qas]
        calls = [list(range(len(qas)))] if batched else list(group_indices(keys).values())
        scores = [0.0] * len(qas)
        for idx in calls:
            out = score_qas(self.scorer, reference, [hyps[i] for i in idx], [answers[i] for i in idx],
                            [keys[i] for i in idx])
            for i, x in zip(idx, out):
                scores[i] = x
        return scores

    def _windows(self, reference: list[str], qas: list[dict]) -> int:
        """How many chunks the scorer splits the reference into (1 for whole-text scorers)."""
        scorer = getattr(self.scorer, "neural", None) or self.scorer
        if not hasattr(scorer, "windows_for") or not reference:
            return 1
        return len(scorer.windows_for(list(reference), [f"{q['question']} {q['answer']}" for q in qas] or [""]))

    # ------------------------------------------------------------------ the run
    def run(self, pairs: Sequence[dict], batched: bool = True) -> list[dict]:
        """pairs: {"id"?, "reference": str | tokens, "generated": str | tokens | [sentence tokens],
        "predicates"?: per sentence [{predicate_index, verb_form?, predicate_type?}],
        "qas"?: [{sentence, predicate_index, question, answer_span [s, e)} ...]} -> reports, in order.
        A pair that is not valid (models/consistency/inputs.py) gets the status invalid_input; the
        others are scored."""
        problems = [pair_problems(p) for p in pairs]
        ids = [str(p.get("id", f"pair-{i}")) if isinstance(p, dict) and isinstance(p.get("id", ""), (str, int))
               else f"pair-{i}" for i, p in enumerate(pairs)]
        done = iter(self._run([dict(p, id=i) for p, i, bad in zip(pairs, ids, problems) if not bad], batched))
        return [invalid_report(i, bad, self.threshold) if bad else next(done) for i, bad in zip(ids, problems)]

    def _run(self, pairs: Sequence[dict], batched: bool) -> list[dict]:
        reports, to_detect = [], []
        for i, pair in enumerate(pairs):
            rep = self._start_report(i, pair)
            reports.append(rep)
            if pair.get("qas") is None and pair.get("predicates") is None:
                to_detect.extend((i, j) for j, s in enumerate(rep["sentences"]) if s["tokens"])
            elif pair.get("predicates") is not None:
                for sent, preds in zip(rep["sentences"], pair["predicates"]):
                    sent["predicates"] = [self._predicate(sent["tokens"], p) for p in preds]
        found = self._detect([reports[i]["sentences"][j]["tokens"] for i, j in to_detect], batched)
        for (i, j), preds in zip(to_detect, found):
            sent = reports[i]["sentences"][j]
            sent["predicates"] = [self._predicate(sent["tokens"], p) for p in preds]
        if self.copulas is not None:
            for pair, rep in zip(pairs, reports):
                if pair.get("qas") is None:
                    self._add_copulas(rep)

        slots = self._slots(pairs, reports)
        self._parse([s for s in slots if s.record is not None], batched)
        for s in slots:
            self._decode(reports[s.pair], s)
        for pair, rep in progress(list(zip(pairs, reports)), "scoring", unit="response"):
            if pair.get("qas") is not None:
                self._given_qas(rep, pair["qas"])
            self._finish(rep, batched)
            release_free_memory()  # RSS follows what is alive, not how many references were scored
        return reports

    def _start_report(self, i: int, pair: dict) -> dict:
        reference = as_tokens(pair.get("reference"))
        sentences = as_sentences(pair.get("generated"))
        rep = {"id": str(pair.get("id", f"pair-{i}")), "score": None, "share": None, "n_qas": 0, "n_supported": 0,
               "status": "ok", "messages": [], "reference_words": len(reference), "reference_chunks": 0,
               "threshold": self.threshold, "sentences": [], "unsupported": [], "_reference": reference}
        for j, toks in enumerate(sentences):
            rep["sentences"].append({"index": j, "tokens": toks, "status": "ok" if toks else "no_tokens",
                                     "predicates": []})
        words = [w for s in sentences for w in s]
        rep["messages"] += [f"generated text: {m}" for m in script_warnings(words)]
        rep["messages"] += [f"reference: {m}" for m in script_warnings(reference)]
        return rep

    @staticmethod
    def _predicate(tokens: list[str], p: dict) -> dict:
        idx = int(p["predicate_index"])
        return {"predicate_index": idx, "predicate": p.get("predicate") or tokens[idx],
                "predicate_type": p.get("predicate_type", "verbal"),
                "verb_form": p.get("verb_form") or tokens[idx].lower(),
                "status": "ok", "generated": "", "qas": []}

    def _add_copulas(self, rep: dict) -> None:
        """The copular predicates of each sentence, with their QAs (no parser needed); what the rule
        skipped ("There is", questions, ...) is counted in the report's messages."""
        counts = Counter()
        for sent in rep["sentences"]:
            if not sent["tokens"]:
                continue
            verbs = {p["predicate_index"] for p in sent["predicates"] if p["predicate_type"] == "verbal"}
            recs, c = copular_records(sent["tokens"], self.copulas, verbs=verbs)
            counts.update(c)
            taken = {p["predicate_index"] for p in sent["predicates"]}
            for rec in recs:
                if rec["predicate_index"] in taken:
                    continue
                p = self._predicate(sent["tokens"], rec)
                p["qas"] = [{"question": qa["question"], "answer": qa["answer_texts"][0], "answer_span": qa["answers"][0],
                             "score": None, "supported": None, "copular": True, "is_negated": qa["is_negated"]}
                            for qa in rec["qas"]]
                sent["predicates"].append(p)
            sent["predicates"].sort(key=lambda p: p["predicate_index"])
        if counts:
            skipped = {k: v for k, v in counts.items() if k not in ("copulas", "negated")}
            rep["messages"].append(f"copulas: {counts['copulas']} with QAs ({counts['negated']} negated)"
                                   + (f"; forms of 'be' without a copular QA: {dict(sorted(skipped.items()))}"
                                      if skipped else ""))

    def _slots(self, pairs, reports) -> list[_Slot]:
        slots = []
        for i, (pair, rep) in enumerate(zip(pairs, reports)):
            if pair.get("qas") is not None:
                continue
            for sent in rep["sentences"]:
                for p in sent["predicates"]:
                    if p["predicate_type"] == "copular":
                        continue  # its QAs come with it (models/consistency/copula.py), not from the parser
                    rec = {"sentence_id": f"{rep['id']}:{sent['index']}", "tokens": sent["tokens"],
                           "predicate_index": p["predicate_index"], "predicate": p["predicate"],
                           "predicate_type": p["predicate_type"], "verb_form": p["verb_form"]}
                    slots.append(_Slot(i, sent["index"], p, rec))
        if slots and self.parser is not None:
            self._note_truncation(reports, slots)
        return slots

    def _note_truncation(self, reports, slots) -> None:
        """A sentence longer than the parser's input window is still parsed (the window holds
        the part the parser reads), but the report says so rather than cut it silently."""
        limit = self.parser.input_limit
        lengths = self.parser.input_lengths([s.record for s in slots])
        seen = set()
        for s, n in zip(slots, lengths):
            if n > limit and (s.pair, s.sentence) not in seen:
                seen.add((s.pair, s.sentence))
                reports[s.pair]["messages"].append(
                    f"sentence {s.sentence}: {n} parser tokens exceed its window of {limit}; "
                    "words outside the part the parser reads cannot be answers")

    def _decode(self, rep: dict, slot: _Slot) -> None:
        p = slot.predicate
        pred = slot.predicted or {"qas": []}
        text = pred.get("generated", "")
        p["generated"] = text
        for qa in pred["qas"]:
            for span, answer in zip(qa["answers"], qa["answer_texts"]):
                p["qas"].append({"question": qa["question"], "answer": answer, "answer_span": list(span),
                                 "score": None, "supported": None})
        if not p["qas"]:
            counts = pred.get("decode", {})
            malformed, unaligned = counts.get("malformed", 0), counts.get("unaligned", 0)
            p["status"] = "undecodable" if malformed + unaligned else "no_qas"
            what = (f"parser output could not be decoded ({malformed} malformed, {unaligned} "
                    f"answers not in the sentence): {text[:120]!r}" if malformed + unaligned
                    else "the parser found no QA")
            rep["messages"].append(f"sentence {slot.sentence}, predicate '{p['predicate']}' "
                                   f"(token {p['predicate_index']}): {what}")

    @staticmethod
    def _given_qas(rep: dict, qas: list[dict]) -> None:
        """Attach QAs the caller brings (the benchmark's) to their sentence and predicate."""
        for qa in qas:
            j, idx = int(qa["sentence"]), int(qa["predicate_index"])
            if not 0 <= j < len(rep["sentences"]):
                rep["messages"].append(f"given QA {qa.get('question')!r}: sentence {j} does not exist (skipped)")
                continue
            sent = rep["sentences"][j]
            pred = next((p for p in sent["predicates"] if p["predicate_index"] == idx), None)
            if pred is None:
                pred = ConsistencyPipeline._predicate(sent["tokens"], {"predicate_index": idx,
                                                                        "predicate": qa.get("predicate")})
                sent["predicates"].append(pred)
            span = qa.get("answer_span")
            answer = qa.get("answer") or " ".join(sent["tokens"][span[0]:span[1]])
            pred["qas"].append({"question": qa["question"], "answer": answer,
                                "answer_span": list(span) if span else None, "score": None, "supported": None,
                                **({"qa_id": qa["qa_id"]} if "qa_id" in qa else {})})
        for sent in rep["sentences"]:
            sent["predicates"].sort(key=lambda p: p["predicate_index"])

    def _finish(self, rep: dict, batched: bool) -> None:
        reference = rep.pop("_reference")
        qas = [(s, p, qa) for s in rep["sentences"] for p in s["predicates"] for qa in p["qas"]]
        for s in rep["sentences"]:
            if s["tokens"] and not s["predicates"]:
                s["status"] = "no_predicate"
                rep["messages"].append(f"sentence {s['index']}: no predicate found")
        rep["n_qas"] = len(qas)
        if not rep["sentences"]:
            rep["status"] = "empty_generated"
            rep["messages"].append("the generated text is empty: nothing to check")
            return
        if not reference:
            rep["status"] = "empty_reference"
            rep["messages"].append("the reference is empty: no QA can be checked against it")
            return
        if not qas:
            rep["status"] = "no_qas" if any(s["predicates"] for s in rep["sentences"]) else "no_predicates"
            rep["messages"].append("no QA was extracted from the generated text: no score")
            return
        scores = self._score(reference, [qa for _, _, qa in qas], [(s["index"], p["predicate_index"]) for s, p, _ in qas],
                             batched)
        rep["reference_chunks"] = self._windows(reference, [qa for _, _, qa in qas])
        if rep["reference_chunks"] > 1:
            rep["messages"].append(f"reference of {len(reference)} words scored in {rep['reference_chunks']} "
                                   "overlapping windows (a QA's score is its best window)")
        for (s, p, qa), score in zip(qas, scores):
            qa["score"], qa["supported"] = round(score, 6), bool(score >= self.threshold)
            if not qa["supported"]:
                rep["unsupported"].append({"sentence": s["index"], "predicate_index": p["predicate_index"],
                                           "predicate": p["predicate"], "question": qa["question"],
                                           "answer": qa["answer"], "answer_span": qa["answer_span"],
                                           "score": qa["score"]})
        rep["n_supported"] = sum(qa["supported"] for _, _, qa in qas)
        rep["share"] = rep["n_supported"] / rep["n_qas"]
        rep["score"] = response_scores(rep, self.threshold, self.share_weight)[self.response_score]
