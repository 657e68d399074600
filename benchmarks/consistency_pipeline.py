"""The whole consistency pipeline (sentences -> predicates -> QAs -> P(supported)) batched against
one item at a time (one sentence through the detector, one predicate through the parser, one
predicate's QAs through the classifier: the stacked one reads a QA's siblings), on the same QASemConsistency test responses and the same checkpoints.

    python -m benchmarks.consistency_pipeline --parser outputs/cpu_offline/best \
        --detector outputs/predicates/checkpoint --entailment outputs/entailment_stacked/stacked
    python -m benchmarks.consistency_pipeline ... --responses 4 --repeats 1          # smoke run

Reports responses/s and QAs/s of each mode (medians over repeats, modes alternating), the ratio,
and whether both modes gave the same QAs (padding can flip a near-tie in greedy decoding).
Result: benchmarks/results/consistency_pipeline-<time>.json.
"""
from __future__ import annotations

import argparse
import random
from pathlib import Path


from benchmarks.common import ROOT, add_run_options, machine, median, start_run, timed_rounds, write_result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--parser", required=True)
    ap.add_argument("--detector", required=True)
    ap.add_argument("--entailment", required=True)
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "qasem-consistency" / "test.jsonl"))
    ap.add_argument("--responses", type=int, default=12, help="a seeded sample of test responses")
    add_run_options(ap, seed=42)
    a = ap.parse_args()
    start_run(a)

    from evaluation.consistency_benchmark import load_responses
    from models.consistency import ConsistencyPipeline

    responses, _ = load_responses(Path(a.data), "test")
    responses = random.Random(a.seed).sample(responses, min(a.responses, len(responses)))
    pairs = [{"id": r["id"], "reference": r["reference"], "generated": r["sentences"]} for r in responses]
    pipe = ConsistencyPipeline.from_pretrained(a.entailment, parser=a.parser, detector=a.detector, device="cpu")
    pipe.run(pairs[:1])  # warm-up: lazy imports, first allocations

    times, outputs = timed_rounds({"batched": lambda: pipe.run(pairs, batched=True),
                                   "one_at_a_time": lambda: pipe.run(pairs, batched=False)}, a.repeats)

    n_qas = sum(r["n_qas"] for r in outputs["batched"])
    qa_key = lambda reps: [(s["index"], p["predicate_index"], q["question"], tuple(q["answer_span"]))
                           for r in reps for s in r["sentences"] for p in s["predicates"] for q in p["qas"]]
    rows = {}
    for mode, ts in times.items():
        t = median(ts)
        rows[mode] = {"seconds": t, "responses_per_s": len(pairs) / t,
                      "qas_per_s": sum(r["n_qas"] for r in outputs[mode]) / t, "runs": ts}
    result = {"machine": machine(), "responses": len(pairs), "sentences": sum(len(p["generated"]) for p in pairs),
              "qas": n_qas, "checkpoints": {"parser": a.parser, "detector": a.detector, "entailment": a.entailment},
              "modes": rows, "speedup": rows["one_at_a_time"]["seconds"] / rows["batched"]["seconds"],
              "same_qas": qa_key(outputs["batched"]) == qa_key(outputs["one_at_a_time"])}
    print(f"{len(pairs)} responses, {n_qas} QAs")
    for mode, r in rows.items():
        print(f"{mode:>14}: {r['responses_per_s']:.2f} responses/s, {r['qas_per_s']:.1f} QAs/s (median of {len(r['runs'])})")
    print(f"batched / one at a time: {result['speedup']:.2f}x; same QAs in both modes: {result['same_qas']}")
    print("wrote", write_result("consistency_pipeline", result, a.out))


if __name__ == "__main__":
    main()
