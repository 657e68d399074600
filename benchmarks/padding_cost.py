"""What padding inference batches to a multiple of N costs in time (models/memory.py, QASEM_PAD_MULTIPLE;
it bounds the tensor shapes a long run allocates, which holds its resident memory down): the shipped
classifier's scoring path on the same QASemConsistency responses, batches at their own lengths (1) and
padded (N), alternating in one process, from a cold reference cache each run; medians.

    python -m benchmarks.padding_cost --entailment E [--multiple 32] [--responses N] [--repeats 3] [--threads 1]

Prints one JSON object: own_length / padded ({s_per_response, runs}), time_ratio (padded / own length) and
max_abs_dp (0: the padding is masked). Peak memory is not compared here (one process keeps the blocks of
both); the consistency CLI's peak RSS under each setting is in docs/experiments/scoring.md.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

from benchmarks.common import machine, median, write_result
from benchmarks.entailment_cost import forget, sampled_run
from benchmarks.scoring_speed import load


def main(argv=None) -> dict:
    from models.fast_path import resolve_precision, use_precision, use_reference_scope

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--entailment", required=True, help="a stacked checkpoint that parses references")
    ap.add_argument("--multiple", type=int, default=32)
    a, examples, chosen = sampled_run(ap, argv)
    scorer = load(a.entailment, None, None)
    precision = resolve_precision("auto")
    if precision != "fp32":
        use_precision(scorer, precision)
    use_reference_scope(scorer, "relevant")
    settings = {"own_length": "1", "padded": str(a.multiple)}
    os.environ["QASEM_PAD_MULTIPLE"] = "1"
    scorer.score_examples(examples[:1])  # warm-up
    times, scores = {n: [] for n in settings}, {}
    for rep in range(a.repeats):
        for name in list(settings)[rep % 2:] + list(settings)[:rep % 2]:  # the order rotates
            os.environ["QASEM_PAD_MULTIPLE"] = settings[name]
            forget(scorer)
            t0 = time.perf_counter()
            scores[name] = scorer.score_examples(examples)
            times[name].append(time.perf_counter() - t0)
            print(f"repeat {rep} {name}: {times[name][-1]:.1f} s", file=sys.stderr)
    result = {"machine": machine(), "entailment": a.entailment, "precision": precision, "multiple": a.multiple,
              "responses": len(chosen), "qas": len(examples)}
    for name, ts in times.items():
        result[name] = {"s_per_response": median(ts) / len(chosen), "runs": ts}
    result.update(time_ratio=median(times["padded"]) / median(times["own_length"]),
                  max_abs_dp=max(abs(x - y) for x, y in zip(scores["own_length"], scores["padded"])))
    path = write_result("padding_cost", result, a.out)
    print(json.dumps(result, indent=1, default=str))
    print("wrote", path, file=sys.stderr)
    return result


if __name__ == "__main__":
    main()
