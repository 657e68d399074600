"""MiniLM sentence embeddings (models.entailment.EmbeddingScorer.embed) batched by length against
batched in the given order, on the same texts in one process: the QASemConsistency dev QAs
("question answer", as the structure features embed them) and the reference sentences, shuffled.

    python -m benchmarks.embedding_batching --threads 1
    python -m benchmarks.embedding_batching --texts 200 --repeats 1       # smoke run

Reports texts/s of each mode (medians over repeats, modes alternating), the ratio, and the largest
difference between the two modes' vectors (padding is masked out, so only float noise).
Result: benchmarks/results/embedding_batching-<time>.json.
"""
from __future__ import annotations

import argparse
import random

from benchmarks.common import ROOT, add_run_options, machine, median, start_run, timed_rounds, write_result


def sample_texts(data: str, n: int, seed: int) -> list[str]:
    """A seeded sample of what the entailment features embed: the dev QAs (question + answer) and the sentences
    of their references."""
    from data_prep.consistency import read_consistency
    from models.entailment.structure import split_sentences

    examples, _ = read_consistency(data, "dev")
    refs = {tuple(e["premise_tokens"]) for e in examples}
    texts = sorted({f"{e['question']} {e['answer']}" for e in examples}
                   | {" ".join(s) for r in refs for s in split_sentences(list(r))})
    return random.Random(seed).sample(texts, min(n, len(texts)))


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "qasem-consistency" / "dev.jsonl"))
    ap.add_argument("--texts", type=int, default=3000, help="a seeded sample of texts")
    add_run_options(ap, seed=42)
    a = ap.parse_args(argv)
    start_run(a)

    from models.entailment import EmbeddingScorer

    texts = sample_texts(a.data, a.texts, a.seed)
    emb = EmbeddingScorer()
    emb.embed(texts[:8])  # warm-up
    times, vectors = timed_rounds({"by_length": lambda: emb.embed(texts, sort_by_length=True),
                                   "given_order": lambda: emb.embed(texts, sort_by_length=False)}, a.repeats)
    rows = {m: {"seconds": median(ts), "texts_per_s": len(texts) / median(ts), "runs": ts} for m, ts in times.items()}
    result = {"machine": machine(), "texts": len(texts), "modes": rows,
              "speedup": rows["given_order"]["seconds"] / rows["by_length"]["seconds"],
              "max_abs_difference": float((vectors["by_length"] - vectors["given_order"]).abs().max())}
    for m, r in rows.items():
        print(f"{m:>12}: {r['texts_per_s']:.0f} texts/s (median of {len(r['runs'])})")
    print(f"by length / given order: {result['speedup']:.2f}x; largest vector difference {result['max_abs_difference']:.1e}")
    print("wrote", write_result("embedding_batching", result, a.out))
    return result


if __name__ == "__main__":
    main()
