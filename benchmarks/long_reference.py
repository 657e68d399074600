"""Time and memory of the shipped classifier against one reference of growing length (dev references
joined to 1,250 / 2,500 / 5,000 words), the same response's QAs each time, from a cold cache: both must
grow no faster than the length (the detector and parser windows and the embedder batches are bounded).

    python -m benchmarks.long_reference --entailment outputs/entailment_ctx/stacked --threads 1 [--precision bf16]

Reports per length: seconds, seconds per 1,000 words, the peak RSS during that run and its growth over
the RSS before it. Result: benchmarks/results/long_reference-<time>.json.
"""
from __future__ import annotations

import argparse
import json
import sys
import time

from benchmarks.common import ROOT, add_run_options, machine, start_run, write_result
from benchmarks.entailment_cost import forget
from benchmarks.scoring_speed import PeakRSS, load, rss_mb


def main(argv=None) -> dict:
    from data_prep.consistency import read_consistency
    from models.fast_path import PRECISIONS, use_precision

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--entailment", required=True, help="a stacked checkpoint that parses references")
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "qasem-consistency" / "dev.jsonl"))
    ap.add_argument("--words", type=int, nargs="+", default=[1250, 2500, 5000])
    ap.add_argument("--precision", default="fp32", choices=PRECISIONS)
    add_run_options(ap)
    a = ap.parse_args(argv)
    start_run(a)
    examples, _ = read_consistency(a.data, "dev")
    refs = list(dict.fromkeys(tuple(e["premise_tokens"]) for e in examples))
    response = [e for e in examples if e["response_id"] == examples[0]["response_id"]]
    scorer = load(a.entailment, None, None)
    use_precision(scorer, a.precision)
    scorer.score_examples(response[:1])  # warm-up
    rows = []
    for n in sorted(a.words):
        words = [w for r in refs for w in r][:n]
        if len(words) < n:
            raise SystemExit(f"{a.data}: only {len(words)} reference words, fewer than {n}")
        forget(scorer)
        before = rss_mb()
        with PeakRSS() as mem:
            t0 = time.perf_counter()
            scorer.score_examples([dict(e, premise_tokens=words) for e in response])
            seconds = time.perf_counter() - t0
        rows.append({"words": n, "seconds": seconds, "seconds_per_1000_words": 1000 * seconds / n,
                     "peak_rss_mb": mem.peak, "rss_growth_mb": mem.peak - before})
        print(f"{n} words: {seconds:.1f} s, peak RSS {mem.peak:.0f} MB (+{mem.peak - before:.0f})", file=sys.stderr)
    result = {"machine": machine(), "entailment": a.entailment, "precision": a.precision, "qas": len(response),
              "lengths": rows}
    path = write_result("long_reference", result, a.out)
    print(json.dumps(result, indent=1))
    print("wrote", path, file=sys.stderr)
    return result


if __name__ == "__main__":
    main()
