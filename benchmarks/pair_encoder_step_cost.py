"""What one training step of the contradiction pair encoder costs with another backbone, against MiniLM's: each
backbone built as train.contradiction builds it (train/contradiction/pair_encoder.py: build_encoder, the composed
conf/train_contradiction.yaml's encoder settings: batch, max length, bf16 autocast, AdamW), fed the same seeded
batches of real training pairs, in interleaved rounds; the median seconds per step (wall and process CPU), each
backbone's ratio to the first, and the projected time of one full run (every pair of encoder.train_files, its
epochs, each fold stage and the final one, as the recipe trains them) from the median step.

    python -m benchmarks.pair_encoder_step_cost --models minilm embeddinggemma_300m --rounds 3 --steps 2
    python -m benchmarks.pair_encoder_step_cost --models minilm embeddinggemma_300m \
        --override encoder.freeze_word_embeddings=true   # Gemma's 262k-word embedding table left as pretrained

Result: benchmarks/results/pair_encoder_step_cost-<time>.json.
"""
from __future__ import annotations

import argparse
import random
import statistics
import time

from benchmarks.common import compose_config, machine, write_result


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", nargs="+", default=["minilm", "embeddinggemma_300m"])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=2, help="timed steps per model per round (after one untimed step)")
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--override", nargs="*", default=[], help="Hydra overrides of conf/train_contradiction.yaml")
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)

    import torch
    from transformers import DataCollatorWithPadding

    from models.precision import usable_bf16
    from train.contradiction.inputs import read_labelled
    from train.contradiction.pair_encoder import _Pairs, build_encoder

    cfg = compose_config("train_contradiction", a.override)
    enc = cfg.encoder
    args = enc.trainer.args
    batch = int(args.per_device_train_batch_size)
    pairs = [p for f in enc.train_files for p in read_labelled(f, enc.limit)]
    need = batch * (1 + a.rounds * a.steps)
    sample = random.Random(a.seed).sample(pairs, min(need, len(pairs)))
    bf16 = usable_bf16(args.bf16, "encoder.trainer.args.bf16")
    runs = {}
    for name in a.models:
        enc.model = name
        encoder = build_encoder(enc, a.seed)
        model = encoder.model.train()
        ds = _Pairs(encoder, sample, a.seed)
        collate = DataCollatorWithPadding(encoder.tokenizer)
        params = [p for p in model.parameters() if p.requires_grad]
        opt = torch.optim.AdamW(params, lr=float(args.learning_rate), weight_decay=float(args.weight_decay))
        batches = [collate([ds[i] for i in range(j, min(j + batch, len(ds)))]) for j in range(0, len(ds), batch)]
        runs[name] = {"model": model, "opt": opt, "batches": batches, "next": 0, "wall": [], "cpu": [],
                      "parameters": sum(p.numel() for p in model.parameters()),
                      "trained_parameters": sum(p.numel() for p in params)}

    def step(r, timed: bool):
        b = r["batches"][r["next"] % len(r["batches"])]
        r["next"] += 1
        t0, c0 = time.perf_counter(), time.process_time()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = r["model"](**b).loss
        loss.backward()
        r["opt"].step()
        r["opt"].zero_grad(set_to_none=True)
        if timed:
            r["wall"].append(time.perf_counter() - t0)
            r["cpu"].append(time.process_time() - c0)

    for r in runs.values():
        step(r, timed=False)  # the first step allocates the optimizer's state
    for k in range(a.rounds):
        order = list(runs) if k % 2 == 0 else list(runs)[::-1]  # the order alternates each round
        for name in order:
            for _ in range(a.steps):
                step(runs[name], timed=True)

    from omegaconf import OmegaConf

    stages = int(enc.folds or 0) + (0 if str(enc.final) == "fold_ensemble" else 1)  # fold stages (+ a final one)
    per_stage = len(pairs) * (int(enc.folds) - 1) / int(enc.folds) if enc.folds else len(pairs)
    full_steps = stages * int(-(-per_stage // batch) * float(args.num_train_epochs))
    base = list(runs)[0]
    result = {"machine": machine(), "overrides": a.override, "batch": batch, "bf16": bf16,
              "max_length": int(enc.max_length), "train_pairs": len(pairs), "full_run_steps": full_steps,
              "settings": OmegaConf.to_container(args, resolve=True), "models": {}}
    for name, r in runs.items():
        wall, cpu = statistics.median(r["wall"]), statistics.median(r["cpu"])
        result["models"][name] = {
            "parameters": r["parameters"], "trained_parameters": r["trained_parameters"],
            "steps_timed": len(r["wall"]), "median_step_s": round(wall, 3), "median_step_cpu_s": round(cpu, 3),
            "ratio_to_" + base: round(wall / statistics.median(runs[base]["wall"]), 2),
            "cpu_ratio_to_" + base: round(cpu / statistics.median(runs[base]["cpu"]), 2),
            "projected_full_run_h": round(full_steps * wall / 3600, 2),
            "projected_full_run_cpu_h": round(full_steps * cpu / 3600, 2)}  # a free core: wall close to CPU
    path = write_result("pair_encoder_step_cost", result, a.out)
    import json

    print(json.dumps(result["models"], indent=1), "\n", path)


if __name__ == "__main__":
    main()
