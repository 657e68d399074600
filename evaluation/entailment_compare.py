"""Two entailment classifiers on the same QAs, told apart from resampling noise: a paired bootstrap over
responses of the difference in balanced accuracy and in the response-level correlation with the human
scores (metrics/entailment.py, paired_bootstrap). Reads two `predictions.jsonl` of evaluation.entailment.

    python -m evaluation.entailment_compare A/predictions.jsonl B/predictions.jsonl [--threshold 0.5] [--samples 2000] [--out F]

Prints one JSON object (B - A) and writes it to --out when given.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from data_prep.records import read_jsonl
from metrics.entailment import paired_bootstrap


def load(path: str) -> dict[str, dict]:
    rows = {}
    for n, r in enumerate(read_jsonl(path), 1):
        missing = {"example_id", "response_id", "supported", "score"} - set(r)
        if missing:
            raise ValueError(f"{path}, line {n}: no {sorted(missing)} (a predictions.jsonl of evaluation.entailment)")
        rows[r["example_id"]] = r
    return rows


def compare(path_a: str, path_b: str, threshold: float = 0.5, samples: int = 2000) -> dict:
    a, b = load(path_a), load(path_b)
    if set(a) != set(b):
        raise ValueError(f"{path_a} and {path_b} hold different QAs ({len(set(a) ^ set(b))} in one only): "
                         "compare predictions of the same split")
    ids = sorted(a)
    for i in ids:
        if a[i]["supported"] != b[i]["supported"]:
            raise ValueError(f"{i}: gold label {a[i]['supported']} in {path_a}, {b[i]['supported']} in {path_b}")
    out = paired_bootstrap([a[i]["response_id"] for i in ids], [a[i]["supported"] for i in ids],
                           [a[i]["score"] for i in ids], [b[i]["score"] for i in ids], threshold, samples)
    return {"a": path_a, "b": path_b, "threshold": threshold, "samples": samples, **out}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--threshold", type=float, default=0.5)
    ap.add_argument("--samples", type=int, default=2000)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    result = compare(args.a, args.b, args.threshold, args.samples)
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return result


if __name__ == "__main__":
    main()
