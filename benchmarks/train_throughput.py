"""Training throughput of this trainer's data path against a plain baseline, same model, same data.

    python -m benchmarks.train_throughput                          # MiniLM enc-dec, ~4 min on 2 free cores
    python -m benchmarks.train_throughput --steps 3 --repeats 1    # smoke run
    python -m benchmarks.train_throughput --model tiny_t5          # a small stand-in model
    python -m benchmarks.train_throughput --override +experiment=cpu_offline   # another recipe's sizes

trainer  : what `python -m train.parser` does per step: the trainer's tokenization
           (common.data.tokenize), its collator (DataCollatorForSeq2Seq: pads each batch to its
           longest row), the Trainer's length-grouped sampler (train_sampling_strategy=group_by_length:
           LengthGroupedSampler over source lengths), bf16 autocast when trainer.args.bf16.
baseline : run_summarization's --pad_to_max_length: every row padded to max_source_length /
           max_target_length, random order, fp32.
Both run the same step (collate, forward, backward, clip to 1.0, AdamW) on the same model object
and the same records. Length grouping sorts each megabatch longest first, so timing the first
k batches of an epoch would see only the longest ones: both variants instead time k batches spread
evenly over one epoch of their own sampler. Variants alternate within each repeat; medians over
repeats are reported with the ratio trainer / baseline of examples/s and of target tokens/s
(real target tokens, padding not counted). Result: benchmarks/results/train_throughput-<time>.json.
"""
from __future__ import annotations

import argparse
import contextlib
import time

import torch
from torch.utils.data import RandomSampler
from transformers import default_data_collator
from transformers.trainer_pt_utils import LengthGroupedSampler

from benchmarks.common import add_run_options, compose_parser_config, load_records, machine, median, start_run, write_result


def spread(batches: list, k: int) -> list:
    """k batches evenly spaced over the epoch (first, ..., last)."""
    if k >= len(batches):
        return batches
    return [batches[round(i * (len(batches) - 1) / max(k - 1, 1))] for i in range(k)]


def trainer_batches(records, fmt, tok, model, cfg, batch_size, seed):
    from common.data import tokenize
    from train.parser.seq2seq_trainer import IndexedCollator

    ds = tokenize(records, fmt, tok, int(cfg.max_source_length), int(cfg.max_target_length))
    rows = ds.to_list()
    sampler = LengthGroupedSampler(batch_size, dataset=ds, generator=torch.Generator().manual_seed(seed))
    order = list(sampler)
    batches = [[rows[i] for i in order[b:b + batch_size]] for b in range(0, len(order) - batch_size + 1, batch_size)]
    return batches, IndexedCollator(tok, model)


def baseline_batches(records, fmt, tok, cfg, batch_size, seed):
    src, tgt = zip(*(fmt.encode(r) for r in records))
    enc = tok(list(src), max_length=int(cfg.max_source_length), truncation=True, padding="max_length")
    lab = tok(text_target=list(tgt), max_length=int(cfg.max_target_length), truncation=True, padding="max_length")
    pad = tok.pad_token_id
    rows = [{"input_ids": i, "attention_mask": a, "labels": [t if t != pad else -100 for t in l]}
            for i, a, l in zip(enc["input_ids"], enc["attention_mask"], lab["input_ids"])]
    order = list(RandomSampler(rows, generator=torch.Generator().manual_seed(seed)))
    batches = [[rows[i] for i in order[b:b + batch_size]] for b in range(0, len(order) - batch_size + 1, batch_size)]
    return batches, default_data_collator


def measure(model, batches, collate, bf16: bool, warmup: int, lr: float, weight_decay: float) -> dict:
    """Time collate + one optimizer step per batch; the first `warmup` steps are not counted."""
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay)
    autocast = torch.autocast("cpu", dtype=torch.bfloat16) if bf16 else contextlib.nullcontext()
    n_ex = n_tgt = n_real = n_padded = 0
    seconds = 0.0
    for step, feats in enumerate(batches[:warmup] + batches):
        t0 = time.perf_counter()
        batch = collate([dict(f) for f in feats])
        batch.pop("idx", None)
        with autocast:
            loss = model(**batch).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        dt = time.perf_counter() - t0
        if step >= warmup:
            seconds += dt
            n_ex += batch["input_ids"].shape[0]
            n_tgt += int((batch["labels"] != -100).sum())
            n_real += int(batch["attention_mask"].sum()) + int((batch["labels"] != -100).sum())
            n_padded += batch["input_ids"].numel() + batch["labels"].numel()
    return {"examples": n_ex, "target_tokens": n_tgt, "padded_tokens": n_padded, "seconds": round(seconds, 3),
            "examples_per_s": n_ex / seconds, "target_tokens_per_s": n_tgt / seconds,
            "padding_share": 1 - n_real / max(n_padded, 1)}  # of source + target positions


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="minilm_ed", help="a conf/model/ option (tiny_t5: a small stand-in)")
    ap.add_argument("--override", action="append", default=[], help="more Hydra overrides of train_parser")
    ap.add_argument("--examples", type=int, default=4000, help="records sampled from the training files")
    ap.add_argument("--batch-size", type=int, default=None, help="default: trainer.args.per_device_train_batch_size")
    ap.add_argument("--steps", type=int, default=6, help="timed steps per measurement")
    ap.add_argument("--warmup", type=int, default=1)
    add_run_options(ap, seed=0)
    a = ap.parse_args(argv)
    start_run(a)

    from train.parser import qa_format_of
    from train.parser.families import build_family

    cfg = compose_parser_config([f"model={a.model}", "data=offline", *a.override])
    fmt = qa_format_of(cfg)
    targs = cfg.trainer.args
    batch_size = a.batch_size or int(targs.per_device_train_batch_size)
    bf16 = bool(targs.get("bf16", False))
    if not bf16:
        print("note: trainer.args.bf16 is false in this config, so the trainer variant runs fp32 too")
    records = load_records(cfg, list(cfg.data.train), a.examples, a.seed)
    family = build_family(cfg.model)
    tok = family.build_tokenizer(fmt)
    model = family.build_model(tok)
    n_params = sum(p.numel() for p in model.parameters())
    variants = {
        "trainer": (*trainer_batches(records, fmt, tok, model, cfg, batch_size, a.seed), bf16),
        "baseline": (*baseline_batches(records, fmt, tok, cfg, batch_size, a.seed), False),
    }
    print(f"model {a.model} ({n_params / 1e6:.1f}M), {len(records)} records from {list(cfg.data.train)}, "
          f"batch {batch_size}, max lengths {cfg.max_source_length}/{cfg.max_target_length}, "
          f"{a.steps} timed steps x {a.repeats} repeats, {torch.get_num_threads()} threads")

    runs = {name: [] for name in variants}
    for r in range(a.repeats):
        for name in (list(variants) if r % 2 == 0 else list(variants)[::-1]):
            batches, collate, use_bf16 = variants[name]
            m = measure(model, spread(batches, a.steps), collate, use_bf16, a.warmup,
                        float(targs.learning_rate), float(targs.get("weight_decay", 0.0)))
            runs[name].append(m)
            print(f"  repeat {r + 1} {name:8s} {m['examples_per_s']:7.2f} ex/s  {m['target_tokens_per_s']:8.1f} "
                  f"target tok/s  (padding {m['padding_share']:.0%} of positions)")

    summary = {name: {"examples_per_s": median([m["examples_per_s"] for m in ms]),
                      "target_tokens_per_s": median([m["target_tokens_per_s"] for m in ms]),
                      "padding_share": median([m["padding_share"] for m in ms])} for name, ms in runs.items()}
    ratio = {k: summary["trainer"][k] / summary["baseline"][k] for k in ("examples_per_s", "target_tokens_per_s")}
    print(f"\n{'variant':10s} {'ex/s':>8s} {'target tok/s':>13s} {'padding':>8s}   (medians of {a.repeats})")
    for name, s in summary.items():
        print(f"{name:10s} {s['examples_per_s']:8.2f} {s['target_tokens_per_s']:13.1f} {s['padding_share']:8.0%}")
    print(f"{'ratio':10s} {ratio['examples_per_s']:7.2f}x {ratio['target_tokens_per_s']:12.2f}x   trainer / baseline")

    result = {"benchmark": "train_throughput", "machine": machine(), "model": a.model, "params": n_params,
              "records": len(records), "data": list(cfg.data.train), "batch_size": batch_size,
              "max_source_length": int(cfg.max_source_length), "max_target_length": int(cfg.max_target_length),
              "steps": a.steps, "warmup": a.warmup, "repeats": a.repeats, "overrides": a.override,
              "variants": {"trainer": f"dynamic padding, group_by_length, {'bf16 autocast' if bf16 else 'fp32'}",
                           "baseline": "pad to max length, random order, fp32"},
              "runs": runs, "median": summary, "ratio_trainer_over_baseline": ratio}
    print(f"wrote {write_result('train_throughput', result, a.out)}")
    return result


if __name__ == "__main__":
    main()
