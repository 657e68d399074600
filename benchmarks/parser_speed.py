"""Parsing speed of several parser checkpoints (seq2seq or span, any mix) on the same dev predicates,
in one process: predicates/s of each (median over repeats, checkpoints alternating within each
repeat), and the ratio of each to the first.

    python -m benchmarks.parser_speed --checkpoint outputs/main_seq2seq/best --checkpoint outputs/span_cpu/best --threads 1
    python -m benchmarks.parser_speed --checkpoint A --checkpoint B --records 16 --repeats 1    # smoke run
    python -m benchmarks.parser_speed ... --bf16     # span parsers under bf16 autocast

Each checkpoint parses the whole sample batched (its own batch size), as evaluation.parser does;
the sample is a seeded mix of GS dev and QANom dev predicates. UA F1 on the sample is reported
beside the speed (so a fast parser that finds nothing shows). Result:
benchmarks/results/parser_speed-<time>.json.
"""
from __future__ import annotations

import argparse
import time

import torch

from benchmarks.common import add_run_options, compose_parser_config, load_records, machine, median, start_run, write_result


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", action="append", required=True, help="a parser checkpoint (repeat the option)")
    ap.add_argument("--records", type=int, default=200, help="dev predicates (GS dev + QANom dev sample)")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--bf16", action="store_true", help="span parsers: bf16 autocast (seq2seq ones run as saved)")
    add_run_options(ap, seed=0)
    a = ap.parse_args(argv)
    start_run(a)
    from metrics.qasrl import evaluate_records
    from models.parser import load_parser

    cfg = compose_parser_config([])
    records = load_records(cfg, ["qasrl-gs.dev", "qanom.dev"], a.records, a.seed)
    parsers = [load_parser(c, batch_size=a.batch_size, device="cpu", bf16=a.bf16) for c in a.checkpoint]
    for p in parsers:
        p.predict(records[:2])  # warm-up: first-call allocations and kernel selection
    times: list[list[float]] = [[] for _ in parsers]
    f1 = [None] * len(parsers)
    for _ in range(a.repeats):
        for k, p in enumerate(parsers):
            start = time.perf_counter()
            preds, _ = p.predict(records)
            times[k].append(time.perf_counter() - start)
            f1[k] = evaluate_records(records, preds)["ua"]["f1"]
    rows = []
    for c, p, ts, f in zip(a.checkpoint, parsers, times, f1):
        rows.append({"checkpoint": c, "kind": p.kind, "median_s": median(ts), "seconds": ts,
                     "predicates_per_s": len(records) / median(ts), "ua_f1_on_sample": f})
    for r in rows:
        r["ratio_to_first"] = r["predicates_per_s"] / rows[0]["predicates_per_s"]
    print(f"{len(records)} dev predicates, {torch.get_num_threads()} threads, {a.repeats} repeats")
    print(f"{'checkpoint':50s} {'kind':8s} {'pred/s':>8s} {'x first':>8s} {'UA F1':>6s}")
    for r in rows:
        print(f"{r['checkpoint'][-50:]:50s} {r['kind']:8s} {r['predicates_per_s']:8.1f} {r['ratio_to_first']:8.1f} "
              f"{100 * r['ua_f1_on_sample']:6.1f}")
    result = {"benchmark": "parser_speed", "machine": machine(), "records": len(records), "repeats": a.repeats,
              "bf16_span": a.bf16,
              "batch_size": a.batch_size, "results": rows}
    print("wrote", write_result("parser_speed", result, a.out))
    return result


if __name__ == "__main__":
    main()
