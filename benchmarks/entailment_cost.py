"""What the entailment classifier's features cost: several stacked checkpoints (lexical; + the
reference's QAs; + the similarity features) scoring the same QASemConsistency QAs, side by side in
one process, each run from a cold cache (every reference parsed and embedded again).

    python -m benchmarks.entailment_cost --threads 1 \
        --checkpoint outputs/entailment_stacked/stacked \
        --checkpoint outputs/entailment_struct2/stacked --checkpoint outputs/entailment_struct3/stacked
    python -m benchmarks.entailment_cost --checkpoint A --responses 2 --repeats 1     # smoke run

Dev responses by default (the figures need no labels; the test half stays for quality figures).
Reports seconds per response and QAs/s of each checkpoint (medians over repeats, the order rotating
each repeat) and each one's time relative to the first. Result: benchmarks/results/entailment_cost-<time>.json.
"""
from __future__ import annotations

import argparse
import random


from benchmarks.common import ROOT, add_run_options, machine, median, start_run, timed_rounds, write_result


def forget(scorer) -> None:
    """Drop the parsed and embedded references, so that each run pays for them again (and counts
    the reference predicates it finds and parses from zero)."""
    structure = getattr(scorer, "structure", None)
    if structure is not None:
        structure.forget()


def sampled_run(ap, argv):
    """--data / --responses and the run options parsed and applied: (args, the QAs of a seeded
    sample of responses, their ids)."""
    from data_prep.consistency import read_consistency

    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "qasem-consistency" / "dev.jsonl"))
    ap.add_argument("--responses", type=int, default=12, help="a seeded sample of responses")
    add_run_options(ap, seed=42)
    a = ap.parse_args(argv)
    start_run(a)
    examples, _ = read_consistency(a.data, "dev" if "dev" in a.data else "test")
    ids = sorted({e["response_id"] for e in examples})
    chosen = set(random.Random(a.seed).sample(ids, min(a.responses, len(ids))))
    return a, [e for e in examples if e["response_id"] in chosen], chosen


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", action="append", required=True, help="a stacked checkpoint; the first is the baseline")
    a, examples, chosen = sampled_run(ap, argv)
    from models.entailment import load_scorer

    scorers = [load_scorer(c) for c in a.checkpoint]
    for s in scorers:  # warm-up: lazy imports, first allocations
        s.score_examples(examples[:1])
    def cold(scorer):  # clearing the cache costs microseconds, next to seconds of parsing
        forget(scorer)
        return scorer.score_examples(examples)

    times, _ = timed_rounds({c: (lambda s=s: cold(s)) for c, s in zip(a.checkpoint, scorers)}, a.repeats)
    base = median(times[a.checkpoint[0]])
    rows = {c: {"seconds": median(ts), "seconds_per_response": median(ts) / len(chosen),
                "qas_per_s": len(examples) / median(ts), "relative_time": median(ts) / base, "runs": ts}
            for c, ts in times.items()}
    result = {"machine": machine(), "data": a.data, "responses": len(chosen), "qas": len(examples),
              "references": len({tuple(e["premise_tokens"]) for e in examples}), "checkpoints": rows}
    print(f"{len(chosen)} responses, {len(examples)} QAs, {result['references']} references")
    for c, r in rows.items():
        print(f"{c}: {r['seconds_per_response']:.2f} s/response, {r['qas_per_s']:.1f} QAs/s, "
              f"{r['relative_time']:.1f}x the first (median of {len(r['runs'])})")
    print("wrote", write_result("entailment_cost", result, a.out))
    return result


if __name__ == "__main__":
    main()
