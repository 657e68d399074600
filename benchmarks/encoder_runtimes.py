"""The span parser with its encoder in other runtimes, side by side in one process on the same dev predicates:
PyTorch fp32 (the exact path), bf16 autocast, int8 dynamic quantization (torch.ao), ONNX Runtime fp32 and
ONNX Runtime int8 (the encoder exported by torch.onnx, its weights quantized by
onnxruntime.quantization.quantize_dynamic). The span and question heads stay in PyTorch, so every variant
parses to records: predicates/s of the whole parse (median over repeats, variants alternating), the ratio
to fp32, the largest change in P(answer) against fp32, the predicates whose decoded answers change at the
checkpoint's thresholds, and UA F1 on the sample.

    python -m benchmarks.encoder_runtimes --checkpoint outputs/span_cpu/best --threads 1 [--records 200] [--repeats 3]
    python -m benchmarks.encoder_runtimes --checkpoint C --records 16 --repeats 1      # smoke run

Needs the `onnx` extra (pip install -e ".[onnx]"; scripts/setup.sh installs it).
Result: benchmarks/results/encoder_runtimes-<time>.json.
"""
from __future__ import annotations

import argparse
import copy
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import torch
from torch import nn

from benchmarks.common import add_run_options, compose_parser_config, load_records, machine, median, start_run, write_result


class OrtEncoder(nn.Module):
    """An ONNX Runtime session where the span parser calls its encoder (same arguments, `.last_hidden_state`)."""

    def __init__(self, path: Path, config, threads: int):
        super().__init__()
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = opts.inter_op_num_threads = threads
        self.session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        self.config, self.names = config, [i.name for i in self.session.get_inputs()]

    def forward(self, input_ids, attention_mask, token_type_ids=None):
        feeds = {"input_ids": input_ids, "attention_mask": attention_mask, "token_type_ids": token_type_ids}
        out = self.session.run(None, {n: feeds[n].numpy() for n in self.names})[0]
        return SimpleNamespace(last_hidden_state=torch.from_numpy(out))


class _Exported(nn.Module):
    def __init__(self, encoder, types: bool):
        super().__init__()
        self.encoder, self.types = encoder, types

    def forward(self, input_ids, attention_mask, token_type_ids=None):
        kw = {"token_type_ids": token_type_ids} if self.types else {}
        return self.encoder(input_ids=input_ids, attention_mask=attention_mask, **kw).last_hidden_state


def export_onnx(encoder, folder: Path) -> tuple[Path, Path]:
    """(fp32, int8) ONNX files of an encoder, batch and length dynamic."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    types = getattr(encoder.config, "type_vocab_size", 0) >= 2
    names = ["input_ids", "attention_mask"] + (["token_type_ids"] if types else [])
    example = tuple(torch.ones(2, 8, dtype=torch.long) for _ in names)
    fp32, int8 = folder / "encoder.onnx", folder / "encoder.int8.onnx"
    torch.onnx.export(_Exported(encoder, types), example, str(fp32), dynamo=False, input_names=names,
                      output_names=["last_hidden_state"], opset_version=17,
                      dynamic_axes={n: {0: "batch", 1: "length"} for n in names + ["last_hidden_state"]})
    encoder.eval()  # the TorchScript exporter leaves the module in training mode (dropout on): measured here
    quantize_dynamic(str(fp32), str(int8), weight_type=QuantType.QInt8)
    return fp32, int8


def variants(checkpoint: str, batch_size: int, threads: int, folder: Path) -> dict:
    """name -> a SpanParser; all share the checkpoint's heads, each with its own encoder runtime."""
    from models.parser import load_parser
    from torch.ao.quantization import quantize_dynamic

    def parser(encoder=None, bf16=False):
        p = load_parser(checkpoint, batch_size=batch_size, device="cpu", bf16=bf16)
        if p.kind != "span":
            raise SystemExit(f"{checkpoint}: a {p.kind} checkpoint; this benchmark swaps a span parser's encoder")
        if encoder is not None:
            p.model.encoder = encoder
        return p

    exact = parser()
    fp32, int8 = export_onnx(copy.deepcopy(exact.model.encoder), folder)
    config = exact.model.encoder.config
    return {"torch_fp32": exact, "torch_bf16": parser(bf16=True),
            "torch_int8": parser(quantize_dynamic(copy.deepcopy(exact.model.encoder), {nn.Linear}, dtype=torch.qint8)),
            "ort_fp32": parser(OrtEncoder(fp32, config, threads)), "ort_int8": parser(OrtEncoder(int8, config, threads))}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", required=True, help="a span parser checkpoint")
    ap.add_argument("--records", type=int, default=200, help="dev predicates (GS dev + QANom dev sample)")
    ap.add_argument("--batch-size", type=int, default=32)
    add_run_options(ap, seed=0)
    a = ap.parse_args(argv)
    start_run(a)
    from metrics.qasrl import evaluate_records

    records = load_records(compose_parser_config([]), ["qasrl-gs.dev", "qanom.dev"], a.records, a.seed)
    with tempfile.TemporaryDirectory() as tmp:
        parsers = variants(a.checkpoint, a.batch_size, torch.get_num_threads(), Path(tmp))
        for p in parsers.values():
            p.predict(records[:2])  # warm-up: first-call allocations, kernel selection, ORT's session setup
        times = {n: [] for n in parsers}
        grids, preds = {}, {}
        for rep in range(a.repeats):
            names = list(parsers)[rep % len(parsers):] + list(parsers)[:rep % len(parsers)]  # the order rotates
            for n in names:
                p = parsers[n]
                start = time.perf_counter()
                probs, templates, encs, _ = p.span_probabilities(records, min(p.thresholds.values()))
                preds[n] = p.to_records(records, probs, templates, encs, p.thresholds)[0]
                times[n].append(time.perf_counter() - start)
                grids[n] = probs
    base = "torch_fp32"
    rows = {}
    for n in parsers:
        dp = max(float((x - y).abs().max()) for x, y in zip(grids[n], grids[base]) if x is not None)
        changed = sum([qa["answers"] for qa in p_["qas"]] != [qa["answers"] for qa in q_["qas"]]
                      for p_, q_ in zip(preds[n], preds[base]))
        rows[n] = {"median_s": median(times[n]), "seconds": times[n], "predicates_per_s": len(records) / median(times[n]),
                   "max_abs_dp": dp, "predicates_with_other_answers": changed,
                   "ua_f1_on_sample": evaluate_records(records, preds[n])["ua"]["f1"]}
    for r in rows.values():
        r["speedup"] = rows[base]["median_s"] / r["median_s"]
    print(f"{len(records)} dev predicates, {torch.get_num_threads()} threads, {a.repeats} repeats, {a.checkpoint}")
    print(f"{'variant':12s} {'pred/s':>8s} {'x fp32':>7s} {'max|dP|':>8s} {'changed':>8s} {'UA F1':>6s}")
    for n, r in rows.items():
        print(f"{n:12s} {r['predicates_per_s']:8.1f} {r['speedup']:7.2f} {r['max_abs_dp']:8.4f} "
              f"{r['predicates_with_other_answers']:8d} {100 * r['ua_f1_on_sample']:6.1f}")
    result = {"benchmark": "encoder_runtimes", "machine": machine(), "checkpoint": a.checkpoint,
              "records": len(records), "repeats": a.repeats, "variants": rows}
    path = write_result("encoder_runtimes", result, a.out)
    print("wrote", path)
    return result


if __name__ == "__main__":
    main()
