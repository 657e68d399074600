"""The test QAs two entailment classifiers score wrongly, by kind, side by side:

    python -m evaluation.entailment_errors BEFORE/predictions.jsonl AFTER/predictions.jsonl [--examples 2]

(predictions.jsonl of `evaluation.entailment` runs on the same split). A QA is scored wrongly when
`score >= threshold` disagrees with its gold label. Its kind, by a fixed rule checked in this order
(a heuristic, not a human judgement):
- annotation disagreement: the three annotators split 2-1;
- predicate error: no word of the reference starts like the predicate (first 4 letters);
- extrinsic: under half of the answer's content words occur in the reference;
- intrinsic: the words are in the reference, attached to something else (the rest).
Prints one JSON object: counts per kind before / after, and examples of each kind the second
classifier scores wrongly (and of those it fixed).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from data_prep.records import read_jsonl
from models.entailment.features import content_words

KINDS = ("annotation disagreement", "predicate error", "extrinsic", "intrinsic")


def kind_of(example: dict) -> str:
    votes = example["votes"]
    if 0 < sum(votes) < len(votes) and min(sum(votes), len(votes) - sum(votes)) == 1:
        return "annotation disagreement"
    ref = {w.lower() for w in example["premise_tokens"]}
    stem = (example.get("predicate") or "").lower()[:4]
    if stem and not any(w.startswith(stem) for w in ref):
        return "predicate error"
    words = content_words(example["answer"], drop_stopwords=True)
    covered = sum(w in ref for w in words) / len(words) if words else 1.0
    return "extrinsic" if covered < 0.5 else "intrinsic"


def distinct(rows: list[dict], n: int) -> list[dict]:
    """The first n rows with distinct (question, answer): responses of one document repeat QAs."""
    seen, out = set(), []
    for r in rows:
        if (r["question"], r["answer"]) not in seen and len(out) < n:
            seen.add((r["question"], r["answer"]))
            out.append(r)
    return out


def wrong(predictions: list[dict], threshold: float) -> set[str]:
    return {p["example_id"] for p in predictions if (p["score"] >= threshold) != bool(p["supported"])}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m evaluation.entailment_errors", description=__doc__.split("\n")[0])
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--examples-file", default="data/processed/consistency.test.jsonl")
    ap.add_argument("--threshold", type=float, default=0.5)
    ap.add_argument("--examples", type=int, default=2)
    a = ap.parse_args(argv)
    examples = {e["example_id"]: e for e in read_jsonl(a.examples_file)}
    runs = [list(read_jsonl(Path(p))) for p in (a.before, a.after)]
    missing = [p["example_id"] for run in runs for p in run if p["example_id"] not in examples]
    if missing:
        print(f"{len(missing)} predictions are not in {a.examples_file} (e.g. {missing[0]})", file=sys.stderr)
        return 2
    before, after = (wrong(r, a.threshold) for r in runs)
    out = {"threshold": a.threshold, "qas": len(runs[1]), "wrong": {"before": len(before), "after": len(after)},
           "by_kind": {}, "examples": {}}
    for k in KINDS:
        b = sorted(i for i in before if kind_of(examples[i]) == k)
        f = sorted(i for i in after if kind_of(examples[i]) == k)
        out["by_kind"][k] = {"before": len(b), "after": len(f), "fixed": len(set(b) - set(f)), "new": len(set(f) - set(b))}
        show = lambda ids: distinct([{"id": i, "question": examples[i]["question"], "answer": examples[i]["answer"],  # noqa: E731
                                      "supported": examples[i]["supported"], "votes": examples[i]["votes"]} for i in ids], a.examples)
        out["examples"][k] = {"still_wrong": show(f), "fixed": show(sorted(set(b) - set(f)))}
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
