"""Memory DeepSpeed estimates for FLAN-T5-XL's model states (weights, gradients, Adam states) under
ZeRO-2 and ZeRO-3 on one node of 8 GPUs, from DeepSpeed's own estimators; no GPU and no download.

    python -m benchmarks.deepspeed_memory                     # 8 GPUs x 1 node
    python -m benchmarks.deepspeed_memory --gpus 4 --nodes 2

The parameter count comes from FLAN-T5-XL's config built by hand (d_model 2048, d_ff 5120, 24+24
layers, 32 heads of 64, vocabulary 32128, gated-GELU, untied LM head) and a model instantiated on
the meta device. The estimates cover model states only: activations (batch x length, less with
gradient checkpointing), the CUDA context and fragmentation come on top.
Result: benchmarks/results/deepspeed_memory-<time>.json.
"""
from __future__ import annotations

import argparse
import contextlib
import io

GiB = 2**30
GPUS_GB = {"H200 (141 GB)": 141e9, "H100/A100 (80 GB)": 80e9, "A100 (40 GB)": 40e9}


def flan_t5_xl_config():
    from transformers import T5Config

    return T5Config(vocab_size=32128, d_model=2048, d_kv=64, d_ff=5120, num_layers=24, num_decoder_layers=24,
                    num_heads=32, relative_attention_num_buckets=32, relative_attention_max_distance=128,
                    dropout_rate=0.1, feed_forward_proj="gated-gelu", tie_word_embeddings=False,
                    decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)


def count_params(config) -> tuple[int, int]:
    """(total parameters, largest single module's own parameters), as DeepSpeed's model_to_params counts
    them (its data_ptr de-duplication does not work on the meta device; parameters() is already unique).

    transformers 5 forces T5Config.tie_word_embeddings to True (the flag now only turns off the decoder
    output scaling), so a freshly built model shares lm_head with the embedding; the FLAN-T5 checkpoints
    hold a separate lm_head.weight, which from_pretrained keeps untied. It is counted here as in the
    checkpoint (2.85B, the published size)."""
    import torch
    from transformers import T5ForConditionalGeneration

    with torch.device("meta"):
        model = T5ForConditionalGeneration(config)
    total = sum(p.numel() for p in model.parameters())
    if model.lm_head.weight is model.shared.weight:
        total += model.lm_head.weight.numel()
    largest = max(sum(p.numel() for p in m.parameters(recurse=False)) for m in model.modules())
    return total, largest


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gpus", type=int, default=8, help="GPUs per node")
    ap.add_argument("--nodes", type=int, default=1)
    ap.add_argument("--buffer-factor", type=float, default=1.5, help="DeepSpeed's additional_buffer_factor (CPU side)")
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)

    from deepspeed.runtime.zero.stage3 import (estimate_zero3_model_states_mem_needs,
                                               estimate_zero3_model_states_mem_needs_all_cold)
    from deepspeed.runtime.zero.stage_1_and_2 import (estimate_zero2_model_states_mem_needs,
                                                      estimate_zero2_model_states_mem_needs_all_cold)

    from benchmarks.common import machine, write_result

    total, largest = count_params(flan_t5_xl_config())
    print(f"FLAN-T5-XL: {total:,} parameters ({total / 1e9:.3f}B); largest layer {largest:,} (an embedding / LM head)")
    print(f"setup: {a.nodes} node(s) x {a.gpus} GPUs\n")

    printed = io.StringIO()  # DeepSpeed's own tables, kept verbatim in the result
    with contextlib.redirect_stdout(printed):
        estimate_zero2_model_states_mem_needs_all_cold(total, a.gpus, a.nodes, a.buffer_factor)
        print()
        estimate_zero3_model_states_mem_needs_all_cold(total, largest, a.gpus, a.nodes, a.buffer_factor)
    print(printed.getvalue())

    rows = []
    for off in (False, True):
        cpu, gpu = estimate_zero2_model_states_mem_needs(total, a.gpus, a.nodes, cpu_offload=off,
                                                         additional_buffer_factor=a.buffer_factor)
        rows.append({"stage": 2, "offload_optimizer": "cpu" if off else "none", "offload_param": "none",
                     "zero_init": None, "gpu_bytes": gpu, "cpu_bytes": cpu})
    for off_opt, off_param in ((False, False), (True, False), (True, True)):
        for zero_init in (True, False):
            cpu, gpu, _ = estimate_zero3_model_states_mem_needs(total, largest, a.gpus, a.nodes, cpu_offload=off_opt,
                                                                cpu_offload_params=off_param, zero_init=zero_init,
                                                                additional_buffer_factor=a.buffer_factor)
            rows.append({"stage": 3, "offload_optimizer": "cpu" if off_opt else "none",
                         "offload_param": "cpu" if off_param else "none", "zero_init": zero_init,
                         "gpu_bytes": gpu, "cpu_bytes": cpu})

    print(f"{'stage':>5} {'offload opt':>11} {'offload param':>13} {'zero_init':>9} {'per GPU GiB':>11} "
          f"{'per CPU GiB':>11}  fits (model states) on")
    for r in rows:
        r["per_gpu_gib"], r["per_cpu_gib"] = round(r["gpu_bytes"] / GiB, 2), round(r["cpu_bytes"] / GiB, 2)
        r["fits"] = [name for name, cap in GPUS_GB.items() if r["gpu_bytes"] < cap]
        zi = "-" if r["zero_init"] is None else str(int(r["zero_init"]))
        print(f"{r['stage']:>5} {r['offload_optimizer']:>11} {r['offload_param']:>13} {zi:>9} {r['per_gpu_gib']:>11.2f} "
              f"{r['per_cpu_gib']:>11.2f}  {', '.join(r['fits'])}")
    plain = 16 * total  # one GPU, no ZeRO: fp32 weights + grads (8 B) + Adam m, v (8 B), bf16 autocast
    print(f"\nno ZeRO (one GPU, fp32 master weights + grads + Adam states, bf16 autocast): {plain / GiB:.1f} GiB")
    print("Model states only: activations, the CUDA context and fragmentation come on top.")

    result = {"benchmark": "deepspeed_memory", "machine": machine(), "model": "google/flan-t5-xl (config by hand)",
              "total_params": total, "largest_layer_params": largest, "gpus_per_node": a.gpus, "nodes": a.nodes,
              "additional_buffer_factor": a.buffer_factor, "estimates": rows, "no_zero_single_gpu_bytes": plain,
              "deepspeed_tables": printed.getvalue()}
    print(f"wrote {write_result('deepspeed_memory', result, a.out)}")
    return result


if __name__ == "__main__":
    main()
