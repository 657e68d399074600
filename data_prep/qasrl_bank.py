"""QA-SRL Bank 2.0 JSONL(.gz) -> canonical records (one per verb entry).

Judgment aggregation (the Bank has ~3 crowd judgments per question):
- a question is kept when at least two of its judgments are valid AND valid judgments are a
  strict majority; otherwise it is counted under `skipped["invalid_question"]`;
- its answers are the distinct spans of the valid judgments, most-chosen first (ties: shorter,
  then earlier), each kept only when it does not overlap a span already kept. Annotators mostly
  agree up to a word or two; keeping every variant would turn one argument into three
  overlapping ones, which neither the gold-standard sets nor a parser's output look like.
"""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from data_prep.records import (EMPTY_SLOT, SLOT_NAMES, DataFormatError, SkipCounter, check_not_cut, span_problem,
                                span_text, text_lines)

INFLECTIONS = ("stem", "presentSingular3rd", "presentParticiple", "past", "pastParticiple")
MIN_VALID = 2


def aggregate_answers(judgments: list[dict]) -> list[list[int]] | None:
    """The aggregation rule above; None when the question is not valid."""
    valid = [j for j in judgments if j.get("isValid")]
    if len(valid) < MIN_VALID or 2 * len(valid) <= len(judgments):
        return None
    votes = Counter(tuple(s) for j in valid for s in j.get("spans", []))
    ranked = sorted(votes, key=lambda s: (-votes[s], s[1] - s[0], s[0]))
    kept: list[tuple[int, int]] = []
    for s in ranked:
        if all(s[1] <= k[0] or k[1] <= s[0] for k in kept):
            kept.append(s)
    return [list(s) for s in sorted(kept)]


def fill_verb_slot(abstract: str, forms: dict) -> str:
    """`been pastParticiple` -> `been researched`: the Bank's verb slot names an inflection."""
    return " ".join(forms.get(w, w) if w in INFLECTIONS else w for w in abstract.split())


def read_qasrl_bank(path: str | Path, split: str, source: str = "qasrl-bank"):
    """Returns (records, skipped, n_sentences)."""
    path = Path(path)
    if not path.exists():
        raise DataFormatError(f"{path}: QA-SRL Bank file not found")
    records, skipped, n_sent = [], SkipCounter(), 0
    for lineno, line in text_lines(path):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        try:
            sent = json.loads(line)
            sid, tokens, entries = sent["sentenceId"], sent["sentenceTokens"], sent["verbEntries"]
        except (json.JSONDecodeError, KeyError, TypeError) as e:
            if isinstance(e, json.JSONDecodeError):
                check_not_cut(line, where)
            skipped.skip("malformed_sentence", f"{where} ({type(e).__name__}: {e})")
            continue
        n_sent += 1
        for key in sorted(entries, key=int):
            rec = _verb_record(entries[key], sid, tokens, split, source, f"{where} verb {key}", skipped)
            if rec is not None:
                records.append(rec)
    return records, skipped, n_sent


def _verb_record(entry: dict, sid: str, tokens: list[str], split: str, source: str, where: str,
                 skipped: SkipCounter):
    try:
        idx, forms, labels = entry["verbIndex"], entry["verbInflectedForms"], entry["questionLabels"]
    except KeyError as e:
        skipped.skip("malformed_verb_entry", f"{where} (missing {e})")
        return None
    if not 0 <= idx < len(tokens):
        skipped.skip("predicate_outside_sentence", where)
        return None
    qas = []
    for question, label in labels.items():
        answers = aggregate_answers(label.get("answerJudgments", []))
        if answers is None:
            skipped.skip("invalid_question", f"{where} {question!r}")
            continue
        problem = next((p for s, e in answers if (p := span_problem(s, e, len(tokens)))), None)
        if problem:
            skipped.skip(problem, f"{where} {question!r}")
            continue
        raw = label.get("questionSlots", {})
        slots = {k: raw.get(k, EMPTY_SLOT) or EMPTY_SLOT for k in SLOT_NAMES}
        slots["verb"] = fill_verb_slot(slots["verb"], forms)
        qas.append({
            "question": label.get("questionString", question),
            "slots": slots,
            "is_passive": bool(label.get("isPassive", False)),
            "is_negated": bool(label.get("isNegated", False)),
            "answers": answers,
            "answer_texts": [span_text(tokens, a) for a in answers],
        })
    return {
        "sentence_id": sid, "tokens": tokens, "predicate_index": idx, "predicate": tokens[idx],
        "predicate_type": "verbal", "verb_form": forms.get("stem", tokens[idx].lower()),
        "qas": qas, "source": source, "split": split,
    }
