"""Where the shipped classifier's time goes, by stage: the stacked checkpoint with the reference's
QAs scoring QASemConsistency QAs from a cold cache, with each stage's calls timed in place.

    python -m benchmarks.scoring_profile --checkpoint outputs/entailment_ctx/stacked --threads 1 [--precision bf16]

Stages: the predicate detector and the parser on the reference's sentences, the sentence embedder
(the reference's QAs and predicates, the hypotheses), and the rest (features and the logistic
regression). Dev responses by default; medians over repeats. Result:
benchmarks/results/scoring_profile-<time>.json.
"""
from __future__ import annotations

import argparse
import json
import time

from benchmarks.common import machine, median, write_result
from benchmarks.entailment_cost import forget, sampled_run
from models.fast_path import PRECISIONS, use_precision


class Timed:
    """Wraps obj.method so that every call adds its wall time to `seconds`."""

    def __init__(self, obj, method: str):
        self.seconds, self.calls = 0.0, 0
        inner = getattr(obj, method)

        def timed(*a, **k):
            start = time.perf_counter()
            try:
                return inner(*a, **k)
            finally:
                self.seconds += time.perf_counter() - start
                self.calls += 1

        setattr(obj, method, timed)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", required=True, help="a stacked checkpoint that parses references")
    ap.add_argument("--precision", default="fp32", choices=PRECISIONS, help="fp32 (the exact path), bf16 or int8: "
                    "the fast path's detector, parser and embedder (models/fast_path.py)")
    a, examples, chosen = sampled_run(ap, argv)
    from models.entailment import load_scorer

    scorer = load_scorer(a.checkpoint)
    use_precision(scorer, a.precision)
    structure = getattr(scorer, "structure", None)
    if structure is None:
        raise SystemExit(f"{a.checkpoint}: no reference structure (a lexical checkpoint has no stages to profile)")
    scorer.score_examples(examples[:1])  # warm-up: lazy imports, first allocations
    runs = []
    for _ in range(a.repeats):
        forget(scorer)
        stages = {"detector": Timed(structure.detector, "detect"), "parser": Timed(structure.parser, "predict")}
        if structure.embedder is not None:
            stages["embedder"] = Timed(structure.embedder, "embed")
        start = time.perf_counter()
        scorer.score_examples(examples)
        total = time.perf_counter() - start
        for name in ("detect", "predict"):  # unwrap: the instance attribute shadows the method again
            for obj in (structure.detector, structure.parser):
                obj.__dict__.pop(name, None)
        if structure.embedder is not None:
            structure.embedder.__dict__.pop("embed", None)
        row = {k: v.seconds for k, v in stages.items()}
        row["features_and_classifier"] = total - sum(row.values())
        row["total"] = total
        runs.append(row)
    stages = {k: median([r[k] for r in runs]) for k in runs[0]}
    result = {"machine": machine(), "checkpoint": a.checkpoint, "precision": a.precision, "data": a.data, "responses": len(chosen),
              "qas": len(examples), "references": len({tuple(e["premise_tokens"]) for e in examples}),
              "seconds": stages, "share": {k: v / stages["total"] for k, v in stages.items() if k != "total"},
              "seconds_per_response": stages["total"] / len(chosen), "runs": runs}
    print(json.dumps({k: result[k] for k in ("responses", "qas", "seconds", "share", "seconds_per_response")}, indent=1))
    print(write_result("scoring_profile", result, a.out))
    return result


if __name__ == "__main__":
    main()
