"""FLAN-T5-XL-sized training throughput and model FLOPs utilisation on one GPU (random init, bf16).
Prepared for whenever a GPU is at hand; finishes in under 8 minutes on an H200 and refuses to run without a GPU.

    python -m benchmarks.gpu_flan_t5_xl                          # batch 16/32/64 x 128+128 tokens, bf16 autocast
    python -m benchmarks.gpu_flan_t5_xl --batch-sizes 32 --grad-ckpt both --precision bf16
    python -m benchmarks.gpu_flan_t5_xl --cpu-smoke              # no GPU: a tiny T5 through the same code (numbers mean nothing)

The model is FLAN-T5-XL's architecture (benchmarks/deepspeed_memory.py builds its config by hand: 2.85B
parameters with the untied LM head of the checkpoint) with random weights, built on the GPU; no download.
One step = forward, backward, clip to 1.0, fused AdamW (lr 5e-5), on random token ids of fixed lengths
(no padding, so every position counts). Precision:
  autocast : fp32 master weights, bf16 autocast: what the HF Trainer does with bf16=true (default)
  bf16     : weights, gradients and Adam states in bf16 (less memory, not the Trainer's recipe)
T5 is never run in fp16 (it overflows).
MFU is reported two ways, over the GPU's dense bf16 peak (H200 / H100 SXM: 989 TFLOPS):
  mfu_6NT    : 6 * N * (source + target tokens) / s, with N all 2.85B parameters: the usual decoder-only
               formula; for an encoder-decoder it counts every parameter for every token, about 2x the real work.
  mfu_encdec : 6 * (N_encoder * source tokens + N_decoder+head * target tokens) / s, embeddings not counted.
Attention score FLOPs (small at these lengths) and gradient-checkpointing recomputation count in neither.
Result (with the date and the GPU): benchmarks/results/gpu_flan_t5_xl-<time>.json.
"""
from __future__ import annotations

import argparse
import contextlib
import sys
import time

PEAK_BF16_TFLOPS = {"H200": 989.0, "H100 PCIe": 756.0, "H100": 989.0, "GH200": 989.0, "A100": 312.0,
                    "L40S": 362.0, "A10G": 70.0}


def peak_for(name: str) -> float | None:
    for key, tflops in PEAK_BF16_TFLOPS.items():  # longest names first where one contains another
        if key in name:
            return tflops
    return None


def build_model(config, device, precision: str):
    import torch
    from transformers import T5ForConditionalGeneration

    with torch.device(device):
        model = T5ForConditionalGeneration(config)
    # transformers 5 ties a fresh T5's lm_head to the embedding; FLAN-T5's checkpoint has its own head
    if model.lm_head.weight is model.shared.weight:
        model.lm_head.weight = torch.nn.Parameter(model.shared.weight.detach().clone())
    if precision == "bf16":
        model.to(torch.bfloat16)
    model.config.use_cache = False
    return model


def side_params(model) -> tuple[int, int, int]:
    """(all parameters, encoder without embeddings, decoder without embeddings + lm_head)."""
    total = sum(p.numel() for p in model.parameters())
    emb = model.shared.weight
    enc = sum(p.numel() for p in model.encoder.parameters() if p is not emb)
    dec = sum(p.numel() for p in model.decoder.parameters() if p is not emb) + model.lm_head.weight.numel()
    return total, enc, dec


def run_config(model, batch: int, src: int, tgt: int, steps: int, warmup: int, precision: str, ckpt: bool,
               device: str) -> dict:
    import torch

    cuda = device == "cuda"
    # transformers 5 renames gradient_checkpointing_* to activation_checkpointing_*
    if ckpt and hasattr(model, "activation_checkpointing_enable"):
        model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
    elif ckpt:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    else:
        (getattr(model, "activation_checkpointing_disable", None) or model.gradient_checkpointing_disable)()
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=5e-5, weight_decay=0.0, fused=cuda)
    vocab = model.config.vocab_size
    gen = torch.Generator(device=device).manual_seed(0)
    ids = torch.randint(100, vocab, (batch, src), device=device, generator=gen)
    labels = torch.randint(100, vocab, (batch, tgt), device=device, generator=gen)
    mask = torch.ones_like(ids)
    autocast = torch.autocast(device, dtype=torch.bfloat16) if precision == "autocast" else contextlib.nullcontext()
    if cuda:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    times, losses = [], []
    try:
        for step in range(warmup + steps):
            sync()
            t0 = time.perf_counter()
            with autocast:
                loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            opt.zero_grad(set_to_none=True)
            sync()
            if step >= warmup:
                times.append(time.perf_counter() - t0)
                losses.append(float(loss.detach()))
    except torch.OutOfMemoryError:
        return {"batch": batch, "grad_ckpt": ckpt, "oom": True}
    finally:
        del opt
    times.sort()
    step_s = times[len(times) // 2]  # median step
    return {"batch": batch, "source_len": src, "target_len": tgt, "grad_ckpt": ckpt, "precision": precision,
            "steps": steps, "median_step_s": step_s, "examples_per_s": batch / step_s,
            "tokens_per_s": batch * (src + tgt) / step_s, "target_tokens_per_s": batch * tgt / step_s,
            "peak_mem_gib": torch.cuda.max_memory_allocated() / 2**30 if cuda else None,
            "loss_first_last": [losses[0], losses[-1]], "oom": False}


def main(argv=None) -> dict | None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch-sizes", default="16,32,64")
    ap.add_argument("--source-len", type=int, default=128)
    ap.add_argument("--target-len", type=int, default=128)
    ap.add_argument("--steps", type=int, default=10, help="timed steps per configuration (median reported)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--precision", choices=["autocast", "bf16"], default="autocast")
    ap.add_argument("--grad-ckpt", choices=["off", "on", "both"], default="off")
    ap.add_argument("--peak-tflops", type=float, default=None, help="dense bf16 peak (default: from the GPU's name)")
    ap.add_argument("--budget-s", type=float, default=400, help="start no new configuration after this many seconds")
    ap.add_argument("--cpu-smoke", action="store_true", help="no GPU: a tiny T5 on the CPU, to test this script")
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)

    import torch

    from benchmarks.common import machine, write_result
    from benchmarks.deepspeed_memory import flan_t5_xl_config

    start = time.perf_counter()
    if a.cpu_smoke:
        from transformers import T5Config

        device, gpu = "cpu", "none (CPU smoke run: the numbers mean nothing)"
        config = T5Config(vocab_size=512, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4,
                          feed_forward_proj="gated-gelu", tie_word_embeddings=False,
                          decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)
        a.batch_sizes, a.source_len, a.target_len, a.steps, a.warmup = "2", 16, 16, 2, 1
        peak = a.peak_tflops or 1.0
    else:
        if not torch.cuda.is_available():
            print("gpu_flan_t5_xl: no CUDA GPU is visible (torch.cuda.is_available() is False); this benchmark "
                  "measures a 2.85B model on a GPU and does not run on the CPU. On a GPU machine: "
                  "python -m benchmarks.gpu_flan_t5_xl  (or --cpu-smoke to test the script here).", file=sys.stderr)
            raise SystemExit(2)
        device, gpu = "cuda", torch.cuda.get_device_name(0)
        config = flan_t5_xl_config()
        peak = a.peak_tflops or peak_for(gpu)
        torch.backends.cuda.matmul.allow_tf32 = True
    print(f"device: {gpu}; dense bf16 peak: {peak} TFLOPS" if peak else f"device: {gpu}; peak unknown (--peak-tflops)")

    t0 = time.perf_counter()
    model = build_model(config, device, a.precision)
    total, n_enc, n_dec = side_params(model)
    print(f"model: {total / 1e9:.3f}B parameters (encoder {n_enc / 1e9:.2f}B, decoder+head {n_dec / 1e9:.2f}B "
          f"without embeddings), {a.precision}, built in {time.perf_counter() - t0:.0f} s")

    ckpts = {"off": [False], "on": [True], "both": [False, True]}[a.grad_ckpt]
    rows = []
    for ckpt in ckpts:
        for bs in [int(x) for x in a.batch_sizes.split(",")]:
            if time.perf_counter() - start > a.budget_s:
                print(f"  budget of {a.budget_s:.0f} s spent: skipping batch {bs}, grad_ckpt={ckpt}")
                continue
            r = run_config(model, bs, a.source_len, a.target_len, a.steps, a.warmup, a.precision, ckpt, device)
            if not r["oom"]:
                per_seq_encdec = 6 * (n_enc * a.source_len + n_dec * a.target_len)
                r["model_tflops_6NT"] = 6 * total * r["tokens_per_s"] / 1e12
                r["model_tflops_encdec"] = per_seq_encdec * r["examples_per_s"] / 1e12
                r["mfu_6NT"] = r["model_tflops_6NT"] / peak if peak else None
                r["mfu_encdec"] = r["model_tflops_encdec"] / peak if peak else None
                print(f"  batch {bs:3d} ckpt={'on ' if ckpt else 'off'}  {r['median_step_s']:.3f} s/step  "
                      f"{r['tokens_per_s']:9.0f} tok/s  {r['examples_per_s']:6.1f} ex/s  "
                      f"MFU 6NT {r['mfu_6NT'] or 0:.1%}  enc-dec {r['mfu_encdec'] or 0:.1%}  "
                      f"peak mem {r['peak_mem_gib'] or 0:.1f} GiB")
            else:
                print(f"  batch {bs:3d} ckpt={'on ' if ckpt else 'off'}  out of memory")
            rows.append(r)

    info = machine()
    if device == "cuda":
        info.update(cuda=torch.version.cuda, gpu_memory_gib=torch.cuda.get_device_properties(0).total_memory / 2**30)
    result = {"benchmark": "gpu_flan_t5_xl", "date": info["date"], "machine": info, "gpu": gpu,
              "peak_bf16_tflops": peak, "smoke": a.cpu_smoke, "params": total, "params_encoder": n_enc,
              "params_decoder_head": n_dec, "precision": a.precision, "source_len": a.source_len,
              "target_len": a.target_len, "results": rows, "wall_s": time.perf_counter() - start}
    out = a.out
    if a.cpu_smoke and not out:
        import tempfile

        out = f"{tempfile.gettempdir()}/gpu_flan_t5_xl-cpu-smoke.json"  # keep benchmarks/results/ for real runs
    print(f"wrote {write_result('gpu_flan_t5_xl', result, out)}  ({result['wall_s']:.0f} s)")
    return result


if __name__ == "__main__":
    main()
