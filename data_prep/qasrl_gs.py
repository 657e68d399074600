"""QA-SRL Gold Standard CSVs (gold/{domain}.{split}.gold.csv + sentences/{domain}.{split}.full.csv)
-> canonical records, one per (sentence, verb)."""
from __future__ import annotations

from pathlib import Path

from data_prep.csv_qas import add_qa, read_csv_rows
from data_prep.records import DataFormatError, SkipCounter
from data_prep.verb_forms import verb_stem

DOMAINS = ("wikinews", "wikipedia")
GOLD_COLUMNS = ("qasrl_id", "verb_idx", "verb", "question", "answer_range", "answer",
                "wh", "subj", "obj", "obj2", "aux", "prep", "verb_prefix", "is_passive", "is_negated")


def read_gs_tokens(path: str | Path) -> dict[str, list[str]]:
    return {row["qasrl_id"]: row["tokens"].split(" ") for _, row in read_csv_rows(path, ("qasrl_id", "tokens"))}


def read_qasrl_gs(gs_dir: str | Path, split: str, data_dir: str | Path | None = None,
                  source: str = "qasrl-gs"):
    """Returns (records, skipped, n_sentences, merged_duplicate_questions)."""
    gs_dir = Path(gs_dir)
    if not gs_dir.is_dir():
        raise DataFormatError(f"{gs_dir}: QA-SRL GS folder not found")
    preds: dict[tuple[str, int], dict] = {}
    skipped, merged = SkipCounter(), 0
    for domain in DOMAINS:
        tokens_of = read_gs_tokens(gs_dir / "sentences" / f"{domain}.{split}.full.csv")
        gold = gs_dir / "gold" / f"{domain}.{split}.gold.csv"
        for lineno, row in read_csv_rows(gold, GOLD_COLUMNS):
            where = f"{gold}:{lineno}"
            sid = row["qasrl_id"]
            tokens = tokens_of.get(sid)
            if tokens is None:
                skipped.skip("sentence_not_in_sentences_file", where)
                continue
            try:
                idx = int(row["verb_idx"])
            except ValueError:
                skipped.skip("unparsable_predicate_index", f"{where} ({row['verb_idx']!r})")
                continue
            if not 0 <= idx < len(tokens):
                skipped.skip("predicate_outside_sentence", where)
                continue
            rec = preds.get((sid, idx))
            if rec is None:
                rec = preds[(sid, idx)] = {
                    "sentence_id": sid, "tokens": tokens, "predicate_index": idx,
                    "predicate": tokens[idx], "predicate_type": "verbal",
                    "verb_form": verb_stem(tokens[idx], data_dir), "qas": {}, "source": source,
                    "split": split,
                }
            question = row["question"].strip()
            if not question:
                skipped.skip("empty_question", where)
                continue
            merged += add_qa(rec["qas"], row, question, tokens, where, skipped)
    records = [dict(rec, qas=list(rec["qas"].values())) for rec in preds.values()]
    n_sentences = len({r["sentence_id"] for r in records})
    return records, skipped, n_sentences, merged
