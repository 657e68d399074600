"""QANom CSV (annot.{split}.csv) -> canonical records for the nominal predicates, and the
predicate-detection candidates (every candidate noun with its is_verbal label) kept apart."""
from __future__ import annotations

from pathlib import Path

from data_prep.csv_qas import add_qa, read_csv_rows
from data_prep.records import SkipCounter

COLUMNS = ("qasrl_id", "sentence", "target_idx", "noun", "is_verbal", "verb_form", "question",
           "answer_range", "answer", "wh", "subj", "obj", "obj2", "aux", "prep", "verb_prefix",
           "is_passive", "is_negated")


def read_qanom(path: str | Path, split: str, source: str = "qanom"):
    """Returns (records, candidates, skipped, n_sentences, merged_duplicate_questions).

    A predicate (is_verbal=True) whose rows carry no question is a record with `qas: []`;
    a non-predicate (is_verbal=False) is only a candidate."""
    path = Path(path)
    preds: dict[tuple[str, int], dict] = {}
    candidates: dict[tuple[str, int], dict] = {}
    sentences: set[str] = set()
    skipped, merged = SkipCounter(), 0
    for lineno, row in read_csv_rows(path, COLUMNS):
        where = f"{path}:{lineno}"
        sid, tokens = row["qasrl_id"], row["sentence"].split(" ")
        sentences.add(sid)
        try:
            idx = int(row["target_idx"])
        except ValueError:
            skipped.skip("unparsable_predicate_index", f"{where} ({row['target_idx']!r})")
            continue
        if not 0 <= idx < len(tokens):
            skipped.skip("predicate_outside_sentence", where)
            continue
        if row["is_verbal"] not in ("True", "False"):
            skipped.skip("unknown_is_verbal", f"{where} ({row['is_verbal']!r})")
            continue
        is_verbal = row["is_verbal"] == "True"
        candidates.setdefault((sid, idx), {
            "sentence_id": sid, "tokens": tokens, "candidate_index": idx, "noun": row["noun"],
            "verb_form": row["verb_form"], "is_verbal": is_verbal, "split": split})
        if not is_verbal:
            continue
        rec = preds.get((sid, idx))
        if rec is None:
            rec = preds[(sid, idx)] = {
                "sentence_id": sid, "tokens": tokens, "predicate_index": idx,
                "predicate": tokens[idx], "predicate_type": "nominal",
                "verb_form": row["verb_form"], "qas": {}, "source": source, "split": split,
            }
        question = row["question"].strip()
        if not question:
            if row["answer_range"].strip():
                skipped.skip("answer_without_question", where)
            continue  # a predicate with no arguments: the record stays, its qas may stay empty
        merged += add_qa(rec["qas"], row, question, tokens, where, skipped)
    records = [dict(rec, qas=list(rec["qas"].values())) for rec in preds.values()]
    return records, list(candidates.values()), skipped, len(sentences), merged
