"""The shipped entailment classifier's scoring path, exact and fast, side by side in one process on
the same QASemConsistency responses: speed, memory and how much the fast path moves the scores.

    python -m benchmarks.scoring_speed --parser P --detector DET --entailment E [--responses N] [--threads 1] [--out F]
    python -m benchmarks.scoring_speed --entailment outputs/entailment_ctx/stacked --threads 1   # its own parser / detector

exact: the checkpoint as loaded (fp32, every predicate of a reference parsed). fast: its detector,
parser and embedders in `--precision` (bf16 autocast by default, or int8 dynamic quantization;
models/fast_path.py), and references parsed in `--scope` (relevant by default: only the predicates each
QA's structure features can read; all: every predicate; models/entailment/structure.py); with
--fast-entailment E2, the fast path is another classifier (one trained with structure_scope=verb, whose scope it
keeps), compared with E's exact path on the same QAs. Each run starts from a
cold cache (every reference parsed and embedded again); the order rotates each repeat; medians.
Prints one JSON object (stdout; progress on stderr) and writes it to --out (default benchmarks/results/scoring_speed-<time>.json):
exact / fast ({s_per_response, qas_per_s, peak_rss_mb, runs}), speedup (exact time / fast time),
with --reference-cache DIR fast_warm (the fast path reading the references a first run left on disk),
decision_agreement (share of QAs with the same decision at 0.5), max_abs_dp, and the balanced
accuracy of both on the sampled QAs when they have labels.
"""
from __future__ import annotations

import argparse
import json
import sys
import threading
import time

from benchmarks.common import machine, median, write_result
from benchmarks.entailment_cost import forget, sampled_run


class PeakRSS:
    """The largest resident set size of this process while the block runs (MB), sampled every `every`
    seconds from /proc (both paths' models stay loaded, so each figure includes the other's weights)."""

    def __init__(self, every: float = 0.01):
        self.every = every

    def __enter__(self):
        self.peak, self._stop = rss_mb(), threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()
        return self

    def _watch(self):
        while not self._stop.wait(self.every):
            self.peak = max(self.peak, rss_mb())

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, rss_mb())


def rss_mb() -> float:
    import os

    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def load(entailment: str, parser: str | None, detector: str | None):
    """The stacked scorer; with parser / detector, its reference structure rebuilt from them."""
    from models.entailment import load_scorer

    scorer = load_scorer(entailment)
    structure = getattr(scorer, "structure", None)
    if structure is None:
        raise SystemExit(f"{entailment}: no reference structure (a lexical checkpoint has no neural path to speed up)")
    if parser or detector:
        from models.entailment.structure import ReferenceStructure

        scorer.structure = ReferenceStructure.from_pretrained(parser or structure.paths["parser"],
                                                              detector or structure.paths["detector"],
                                                              embedder=structure.paths.get("embedder"))
    return scorer


def main(argv=None) -> dict:
    from metrics.entailment import balanced_accuracy
    from models.entailment.structure import SCOPES
    from models.fast_path import PRECISIONS, use_precision, use_reference_scope

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--entailment", required=True, help="a stacked checkpoint that parses references")
    ap.add_argument("--parser", default=None, help="default: the one the checkpoint was trained with")
    ap.add_argument("--detector", default=None, help="default: the one the checkpoint was trained with")
    ap.add_argument("--precision", default="bf16", choices=[p for p in PRECISIONS if p != "fp32"])
    ap.add_argument("--scope", default="relevant", choices=[x for x in SCOPES if x != "verb"],
                    help="what of a reference the fast path parses (a checkpoint trained with scope verb keeps it)")
    ap.add_argument("--fast-entailment", default=None, help="the fast path's checkpoint, when it is another "
                    "classifier (e.g. one trained with structure_scope=verb); default: --entailment")
    ap.add_argument("--reference-cache", default=None, help="also time the fast path reading references a first "
                    "run left in this (empty) folder: fast_warm, another model's outputs on the same sources")
    a, examples, chosen = sampled_run(ap, argv)
    scorers = {"exact": load(a.entailment, a.parser, a.detector),
               "fast": load(a.fast_entailment or a.entailment, a.parser, a.detector)}
    switched = use_precision(scorers["fast"], a.precision)
    use_reference_scope(scorers["fast"], a.scope)
    for s in scorers.values():  # warm-up: lazy imports, first allocations, oneDNN kernels
        s.score_examples(examples[:1])
    times, scores, peaks, parsed = {n: [] for n in scorers}, {}, {n: 0.0 for n in scorers}, {}
    for rep in range(a.repeats):
        for name in list(scorers)[rep % 2:] + list(scorers)[:rep % 2]:  # the order rotates
            forget(scorers[name])
            with PeakRSS() as mem:
                t0 = time.perf_counter()
                scores[name] = scorers[name].score_examples(examples)
                times[name].append(time.perf_counter() - t0)
            st = scorers[name].structure.stats
            parsed[name] = {"found": st["predicates_found"], "parsed": st["predicates_parsed"]}
            peaks[name] = max(peaks[name], mem.peak)
            print(f"repeat {rep} {name}: {times[name][-1]:.1f} s", file=sys.stderr)
    if a.reference_cache:  # a run that fills the disk cache, then the timed one that reads it (a new process would)
        from models.fast_path import use_reference_cache

        use_reference_cache(scorers["fast"], a.reference_cache)
        forget(scorers["fast"])
        scorers["fast"].score_examples(examples)
        forget(scorers["fast"])
        with PeakRSS() as mem:
            t0 = time.perf_counter()
            warm = scorers["fast"].score_examples(examples)
            times["fast_warm"] = [time.perf_counter() - t0]
        peaks["fast_warm"], parsed["fast_warm"] = mem.peak, scorers["fast"].structure.disk.stats
        warm_dp = max(abs(x - y) for x, y in zip(warm, scores["fast"]))  # 0: the disk gives back what was parsed
        print(f"fast_warm: {times['fast_warm'][0]:.1f} s", file=sys.stderr)
    labels = [e.get("supported") for e in examples]
    result = {"machine": machine(), "entailment": a.entailment, "parser": a.parser, "detector": a.detector,
              "data": a.data, "responses": len(chosen), "qas": len(examples),
              "references": len({tuple(e["premise_tokens"]) for e in examples}),
              "fast_entailment": a.fast_entailment or a.entailment, "fast_precision": a.precision,
              "fast_parts": switched, "fast_scope": scorers["fast"].structure.scope}
    for name, ts in times.items():
        result[name] = {"s_per_response": median(ts) / len(chosen), "qas_per_s": len(examples) / median(ts),
                        "peak_rss_mb": peaks[name], "runs": ts, "reference_predicates": parsed[name]}
        if all(x is not None for x in labels) and name in scores:
            result[name]["bacc"] = balanced_accuracy([int(x) for x in labels], scores[name])
    ex, fa = scores["exact"], scores["fast"]
    result.update(speedup=median(times["exact"]) / median(times["fast"]),
                  decision_agreement=sum((x >= 0.5) == (y >= 0.5) for x, y in zip(ex, fa)) / len(ex),
                  max_abs_dp=max(abs(x - y) for x, y in zip(ex, fa)))
    if a.reference_cache:
        result.update(warm_speedup=median(times["exact"]) / times["fast_warm"][0], warm_max_abs_dp_vs_fast=warm_dp)
    path = write_result("scoring_speed", result, a.out)
    print(json.dumps(result, indent=1, default=str))  # stdout holds this one object; the rest goes to stderr
    print("wrote", path, file=sys.stderr)
    return result


if __name__ == "__main__":
    main()
