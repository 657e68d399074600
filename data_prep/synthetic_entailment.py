"""A synthetic QA-entailment set from the QA-SRL / QANom TRAINING records.

    python -m data_prep.synthetic_entailment [--processed-dir data/processed] [--seed 13]
        [--context-sentences 2] [--max-qas N] [--out FILE]

writes `<processed_dir>/entailment-synthetic.jsonl`, one row per (premise, hypothesis):
{"id", "sentence_id", "source", "premise", "question", "answer", "hypothesis", "supported",
 "corruption"}, premise = the QA's sentence, or a window of `context_sentences` sentences of the
same document on each side (QASemConsistency premises are whole documents).

- supported (corruption null): a gold QA, "question answer";
- not supported, one per gold QA, the corruption drawn among those that apply:
  `swap_argument` (the answer of another question of the same predicate, not overlapping this
  QA's answers), `random_span` (a span elsewhere in the sentence, away from the answers and the
  predicate), `wh_change` (the question's wh-word replaced: who <-> what, when <-> where, ...),
  `predicate_change` (the question of another predicate of the same sentence with the same
  wh-word, keeping this answer, when that predicate does not have this answer for it).
So the set is balanced (one negative per positive), and deterministic for a seed.

Only training records are read: files `qanom.train.jsonl` and `qasrl-bank.train-offline.jsonl`
(the Bank dev/test minus every evaluation document); any record whose `split` is not a training
split is refused and counted, so no evaluation document can enter the set.
"""
from __future__ import annotations

import argparse
import json
import random
import re
from collections import defaultdict
from pathlib import Path

from data_prep.records import SkipCounter, document_id, read_jsonl, write_jsonl

TRAIN_FILES = ("qanom.train.jsonl", "qasrl-bank.train-offline.jsonl")
TRAIN_SPLITS = {"train", "train-offline"}
CORRUPTIONS = ("swap_argument", "random_span", "wh_change", "predicate_change")
WH_SWAP = {"who": ["what", "where"], "what": ["who", "when"], "when": ["where", "why"], "where": ["when", "who"],
           "why": ["how", "when"], "how": ["why", "where"], "whom": ["what"], "which": ["who"]}
_PUNCT = re.compile(r"^[\W_]+$")


def _sentence_order(sentence_id: str) -> tuple:
    """Sort key of a sentence inside its document (trailing numeric fields)."""
    nums = re.findall(r"\d+", sentence_id)
    return tuple(int(n) for n in nums[-2:]) if nums else (0,)


def _overlaps(a, b) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def _first_answer(qa) -> tuple[list[int], str] | None:
    for span, text in zip(qa["answers"], qa["answer_texts"]):
        if span[1] > span[0] and text.strip():
            return span, text
    return None


def _change_wh(question: str, rng: random.Random) -> str | None:
    m = re.match(r"^(\W*)(\w+)(.*)$", question)
    if not m or m.group(2).lower() not in WH_SWAP:
        return None
    new = rng.choice(WH_SWAP[m.group(2).lower()])
    if m.group(2)[:1].isupper():
        new = new.capitalize()
    return m.group(1) + new + m.group(3)


def load_training_records(paths: list[Path], skipped: SkipCounter) -> list[dict]:
    recs = []
    for path in paths:
        if path.name not in TRAIN_FILES:
            raise ValueError(f"{path}: not a training file ({TRAIN_FILES}); the synthetic set never "
                             "reads evaluation splits")
        for i, rec in enumerate(read_jsonl(path), 1):
            if rec.get("split") not in TRAIN_SPLITS:
                skipped.skip("not_a_training_split", f"{path}:{i}")
                continue
            recs.append(rec)
    return recs


def build(records: list[dict], seed: int = 13, context_sentences: int = 2, max_qas: int | None = None,
          skipped: SkipCounter | None = None) -> list[dict]:
    skipped = skipped if skipped is not None else SkipCounter()
    rng = random.Random(seed)
    # documents: ordered sentences, to give a premise a few sentences of context
    sent_tokens: dict[str, list[str]] = {}
    docs: dict[str, list[str]] = defaultdict(list)
    by_sentence: dict[str, list[dict]] = defaultdict(list)
    for rec in records:
        sid = rec["sentence_id"]
        if sid not in sent_tokens:
            sent_tokens[sid] = rec["tokens"]
            docs[document_id(sid)].append(sid)
        by_sentence[sid].append(rec)
    for d in docs.values():
        d.sort(key=_sentence_order)
    position = {sid: (doc, i) for doc, sids in docs.items() for i, sid in enumerate(sids)}

    def premise(sid: str) -> str:
        doc, i = position[sid]
        sids = docs[doc][max(0, i - context_sentences): i + context_sentences + 1]
        return " ".join(" ".join(sent_tokens[s]) for s in sids)

    rows: list[dict] = []
    n_qas = 0
    for sid in sorted(by_sentence, key=lambda s: (document_id(s), _sentence_order(s), s)):
        recs = by_sentence[sid]
        tokens = sent_tokens[sid]
        prem = premise(sid)
        for rec in recs:
            qas = rec["qas"]
            for qi, qa in enumerate(qas):
                if max_qas and n_qas >= max_qas:
                    return rows
                first = _first_answer(qa)
                if first is None:
                    skipped.skip("qa_without_answer", f"{sid}:{rec['predicate_index']}:{qi}")
                    continue
                span, ans = first
                n_qas += 1
                base = f"{rec['source']}:{sid}:{rec['predicate_index']}:{qi}"
                rows.append({"id": base + ":pos", "sentence_id": sid, "source": rec["source"], "premise": prem,
                             "question": qa["question"], "answer": ans, "hypothesis": f"{qa['question']} {ans}",
                             "supported": 1, "corruption": None})
                own = [tuple(a) for a in qa["answers"]]
                options = {}
                # 1. another argument of the same predicate
                others = [(tuple(a), t) for j, o in enumerate(qas) if j != qi for a, t in zip(o["answers"], o["answer_texts"])
                          if not any(_overlaps(a, b) for b in own) and t.strip() and t.lower() != ans.lower()]
                if others:
                    options["swap_argument"] = (qa["question"], rng.choice(others)[1])
                # 2. a random span elsewhere in the sentence
                L = max(1, min(span[1] - span[0], 5))
                p = rec["predicate_index"]
                all_ans = [tuple(a) for o in qas for a in o["answers"]]
                cands = [(s, s + L) for s in range(0, len(tokens) - L + 1)
                         if not any(_overlaps((s, s + L), b) for b in all_ans) and not s <= p < s + L
                         and not all(_PUNCT.match(t) for t in tokens[s:s + L])]
                if cands:
                    s, e = rng.choice(cands)
                    options["random_span"] = (qa["question"], " ".join(tokens[s:e]))
                # 3. the wh-word changed
                q2 = _change_wh(qa["question"], rng)
                if q2:
                    options["wh_change"] = (q2, ans)
                # 4. another predicate's question (same wh) with this answer
                wh = qa["slots"].get("wh", "").lower()
                swaps = [o["question"] for r2 in recs if r2 is not rec for o in r2["qas"]
                         if o["slots"].get("wh", "").lower() == wh
                         and not any(_overlaps(a, b) for a in o["answers"] for b in own)]
                if swaps:
                    options["predicate_change"] = (rng.choice(swaps), ans)
                if not options:
                    skipped.skip("no_corruption_applies", base)
                    rows.pop()  # keep the set balanced
                    continue
                kind = rng.choice(sorted(options))
                q, a = options[kind]
                rows.append({"id": base + ":neg", "sentence_id": sid, "source": rec["source"], "premise": prem,
                             "question": q, "answer": a, "hypothesis": f"{q} {a}", "supported": 0,
                             "corruption": kind})
    return rows


def add_input_options(ap) -> None:
    """The options of every synthetic-set builder: where the training records are, the output, the seed."""
    ap.add_argument("--processed-dir", default="data/processed")
    ap.add_argument("--inputs", nargs="*", default=None, help=f"record files (default: {' '.join(TRAIN_FILES)})")
    ap.add_argument("--out", default=None)
    ap.add_argument("--seed", type=int, default=13)


def read_inputs(args) -> tuple[list[dict], SkipCounter]:
    """The training records those options name (missing files stop here), and the skip counter."""
    pdir = Path(args.processed_dir)
    paths = [Path(p) for p in args.inputs] if args.inputs else [pdir / f for f in TRAIN_FILES]
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        raise FileNotFoundError(f"training records not found: {missing} (run python -m data_prep.build first)")
    skipped = SkipCounter()
    return load_training_records(paths, skipped), skipped


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_input_options(ap)
    ap.add_argument("--context-sentences", type=int, default=2)
    ap.add_argument("--max-qas", type=int, default=None)
    args = ap.parse_args(argv)
    records, skipped = read_inputs(args)
    rows = build(records, args.seed, args.context_sentences, args.max_qas, skipped)
    out = Path(args.out) if args.out else Path(args.processed_dir) / "entailment-synthetic.jsonl"
    write_jsonl(out, rows)
    stats = {"rows": len(rows), "supported": sum(r["supported"] for r in rows),
             "corruptions": {c: sum(r["corruption"] == c for r in rows) for c in CORRUPTIONS},
             "skipped": dict(skipped), "out": str(out)}
    print(json.dumps(stats, indent=1))
    return stats


if __name__ == "__main__":
    main()
