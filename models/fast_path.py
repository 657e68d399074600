"""The fast scoring path: the neural parts of a loaded scorer or pipeline (predicate detector, span
parser, sentence embedders) run in bf16 autocast, or with their Linear layers in int8 (dynamic
quantization). The exact path is everything as loaded (fp32). The two are measured side by side,
speed and the change in P(supported), in benchmarks/scoring_speed.py."""
from __future__ import annotations

import logging

log = logging.getLogger(__name__)

PRECISIONS = ("fp32", "bf16", "int8")


def resolve_precision(precision: str) -> str:
    """auto: bf16 where it is fast (a CUDA GPU, or a CPU with AVX512-BF16 / AMX, where bf16 matmuls
    run natively), fp32 elsewhere (emulated bf16 would be slower than fp32); any other value as given."""
    if precision != "auto":
        return precision
    from models.precision import native_bf16

    return "bf16" if native_bf16() else "fp32"


def neural_parts(obj, prefix: str = "") -> dict[str, object]:
    """The detector, parser and embedders an entailment scorer, its reference structure or a
    consistency pipeline runs, by dotted name (only the ones it has)."""
    parts = {}
    for name in ("detector", "parser", "embedder", "embedding"):
        part = getattr(obj, name, None)
        if part is not None and hasattr(part, "model"):
            parts[prefix + name] = part
    for name in ("scorer", "structure"):
        if getattr(obj, name, None) is not None:
            parts.update(neural_parts(getattr(obj, name), f"{prefix}{name}."))
    return parts


def use_precision(obj, precision: str) -> list[str]:
    """Switch the neural parts of `obj` to `precision` (fp32 | bf16 | int8 | auto, resolve_precision): the names switched (a
    part without a bf16 switch, e.g. a seq2seq parser, stays fp32 and is logged). int8 replaces
    each part's model by its quantized copy (weights int8, activations fp32): one way, so load
    again for the exact path."""
    precision = resolve_precision(precision)
    if precision not in PRECISIONS:
        raise ValueError(f"precision={precision!r}: one of {PRECISIONS} or auto")
    switched, seen = [], set()
    for name, part in neural_parts(obj).items():
        if id(part) in seen:  # one model serving two roles (the stacked scorer's shared MiniLM): once
            continue
        seen.add(id(part))
        if not hasattr(part, "bf16"):
            log.warning("%s (%s) has no bf16 switch: it stays fp32", name, type(part).__name__)
            continue
        part.bf16 = precision == "bf16"
        if precision == "int8":
            import torch
            from torch.ao.quantization import quantize_dynamic

            part.model = quantize_dynamic(part.model, {torch.nn.Linear}, dtype=torch.qint8)
        switched.append(name)
    return switched


def structures(obj) -> list:
    """The reference structures (models.entailment.structure) an entailment scorer or a consistency
    pipeline parses references with."""
    found = []
    for name in ("scorer", "structure"):
        part = getattr(obj, name, None)
        if part is not None:
            found += [part] if hasattr(part, "scope") else structures(part)
    return found


def use_reference_scope(obj, scope: str) -> int:
    """Parse references in `scope` (all: every predicate, the exact path; relevant: the predicates
    each hypothesis QA's features can read; auto: relevant where that changes no feature, i.e. a
    structure without the similarity features, else all; a structure trained with scope verb keeps it):
    how many structures it set."""
    found = [s for s in structures(obj) if s.scope != "verb"]  # a verb-scope classifier keeps the scope it was trained with
    for s in found:
        s.scope = ("relevant" if s.embedder is None else "all") if scope == "auto" else scope
    return len(found)


def use_reference_cache(obj, folder) -> int:
    """Keep the parsed references of `obj`'s structures in `folder` across runs (None: memory only;
    models/entailment/reference_cache.py): how many structures it set."""
    found = structures(obj)
    for s in found:
        s.use_disk_cache(folder)
    return len(found)
