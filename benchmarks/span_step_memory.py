"""What one span-parser training step holds, by batch length: the memory a forward + backward adds over
the process's baseline, for a median, a 90th-percentile and the longest batch of the training set.

    MALLOC_MMAP_THRESHOLD_=65536 python -m benchmarks.span_step_memory [--chunk-words 16] [--checkpointing]

Run it with glibc's mmap threshold low, as above: every tensor is then mapped and unmapped on its own,
so the resident size follows what is alive (without it, the heap keeps freed blocks and the figure
is the allocator's, not the step's). The peak is sampled every 2 ms. Result:
benchmarks/results/span_step_memory-<time>.json.
"""
from __future__ import annotations

import argparse
import sys
import time

from benchmarks.common import add_run_options, compose_parser_config, machine, median, start_run, write_result
from benchmarks.scoring_speed import PeakRSS, rss_mb


def step_peak(model, batch, optimizer) -> tuple[float, float]:
    """(MB a training step adds at its peak over the RSS before it, seconds)."""
    import torch

    base = rss_mb()
    with PeakRSS(every=0.002) as mem:
        t = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = model(**batch)["loss"]
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        seconds = time.perf_counter() - t
    return mem.peak - base, seconds


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--experiment", default="span_cpu")
    ap.add_argument("--chunk-words", type=int, default=0, help="model.train_chunk_words")
    ap.add_argument("--checkpointing", action="store_true", help="the encoder's activation checkpointing")
    ap.add_argument("--records", type=int, default=2000, help="training records to draw the batches from")
    add_run_options(ap, seed=0)
    a = ap.parse_args(argv)
    start_run(a)
    import torch

    from common.data import load_train_dev
    from models.parser.span_features import Encoder, collate
    from train.parser.span import build_model, featurize

    cfg = compose_parser_config([f"+experiment={a.experiment}"])
    records = load_train_dev(cfg)[0][:a.records]
    model, tokenizer, _ = build_model(cfg.model, records)
    c = model.config
    feats, _ = featurize(records, Encoder(tokenizer, c.markers, c.max_subwords, c.max_span_width), c.templates)
    feats = sorted(feats, key=lambda f: len(f["input_ids"]))
    model.train_chunk_words = a.chunk_words
    if a.checkpointing:
        model.activation_checkpointing_enable()
    model.train()
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-5)
    bs = int(cfg.trainer.args.per_device_train_batch_size)
    rows = []
    for name, start in (("median", len(feats) // 2), ("p90", int(len(feats) * 0.9)), ("longest", len(feats) - bs)):
        batch = collate(feats[start:start + bs], tokenizer.pad_token_id, c.max_span_width)
        runs = [step_peak(model, batch, optimizer) for _ in range(a.repeats)]
        rows.append({"batch": name, "shape": list(batch["input_ids"].shape), "words": batch["word_index"].shape[1],
                     "step_peak_mb": round(median([r[0] for r in runs])),
                     "seconds": round(median([r[1] for r in runs]), 2)})
        print(rows[-1], file=sys.stderr)
    result = {"machine": machine(), "experiment": a.experiment, "chunk_words": a.chunk_words,
              "checkpointing": a.checkpointing, "batches": rows}
    print(write_result("span_step_memory", result, a.out))


if __name__ == "__main__":
    main()
