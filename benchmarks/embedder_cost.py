"""What the similarity features' sentence embedder costs (models.entailment.EmbeddingScorer.embed), several
embedders side by side in one process on the same seeded texts of the structure features: QASemConsistency dev
QAs ("question answer") and reference sentences.

    python -m benchmarks.embedder_cost --threads 1 --models minilm embeddinggemma_300m --texts 300

Reports each embedder's seconds per text, wall and process CPU (medians over repeats, the order rotating each
repeat; on a shared machine the CPU seconds are the cost), and each one's ratio to the first.
Result: benchmarks/results/embedder_cost-<time>.json.
"""
from __future__ import annotations

import argparse
import time

from benchmarks.common import ROOT, add_run_options, machine, median, start_run, timed_rounds, write_result


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "qasem-consistency" / "dev.jsonl"))
    ap.add_argument("--models", nargs="+", default=["minilm", "embeddinggemma_300m"])
    ap.add_argument("--texts", type=int, default=300, help="a seeded sample of texts")
    add_run_options(ap, seed=42)
    a = ap.parse_args(argv)
    start_run(a)

    from benchmarks.embedding_batching import sample_texts
    from models.entailment import EmbeddingScorer

    texts = sample_texts(a.data, a.texts, a.seed)
    cpu: dict[str, list[float]] = {m: [] for m in a.models}

    def run(emb, name):
        def go():
            c0 = time.process_time()
            out = emb.embed(texts)
            cpu[name].append(time.process_time() - c0)
            return out
        return go

    runs = {}
    for m in a.models:
        emb = EmbeddingScorer(m)
        emb.embed(texts[:8])  # warm-up
        runs[m] = run(emb, m)
    times, _ = timed_rounds(runs, a.repeats)
    base = a.models[0]
    rows = {m: {"s_per_text": median(ts) / len(texts), "cpu_s_per_text": median(cpu[m]) / len(texts),
                "wall_ratio": median(ts) / median(times[base]), "cpu_ratio": median(cpu[m]) / median(cpu[base]),
                "runs": ts, "cpu_runs": cpu[m]} for m, ts in times.items()}
    result = {"machine": machine(), "texts": len(texts), "models": rows}
    for m, r in rows.items():
        print(f"{m:>22}: {1000 * r['cpu_s_per_text']:.1f} CPU ms/text ({r['cpu_ratio']:.1f}x {base}), "
              f"{1000 * r['s_per_text']:.1f} wall ms/text")
    print("wrote", write_result("embedder_cost", result, a.out))
    return result


if __name__ == "__main__":
    main()
