"""Span parsers on held-out data with their thresholds chosen on every dev predicate, alone and averaged.

    python -m evaluation.parser_ensemble "checkpoints=[outputs/span_cpu/best,outputs/span_mpnet_100/best]" hydra.run.dir=D

A training run chooses a checkpoint's decoding thresholds on its dev sample (`span_cpu`: 300 GS + 300
QANom predicates). Here, for each span checkpoint, P(answer) of every span of every dev and test
predicate is computed once (and kept in `grid_cache`, so a second call, or one process per checkpoint
at once, pays once); then, for each checkpoint alone and, with two or more, for the mean of their
probabilities ("ensemble": one grid per predicate, the same words for every encoder), the threshold of
each predicate type is chosen on every dev predicate (the training run's 0.05 grid, UA F1), and test
is decoded once at it. A span's question is the first checkpoint's template for it, else the next one's.

Writes metrics.json ({"thresholds": {name: ...}, "dev": {name: metrics}, "test": {name: metrics}},
each metrics as evaluation.parser's: overall and per set, ua / la / role) and
predictions.<name>.<set>.test.jsonl; prints one table per split.
"""
from __future__ import annotations

import hashlib
import json
import logging
import time
from pathlib import Path

import hydra
import torch
from omegaconf import DictConfig

from data_prep.records import write_jsonl
from evaluation.parser import records_of
from metrics.qasrl import evaluate_records
from metrics.report import metrics_table
from models.parser import load_parser
from models.parser.span_thresholds import THRESHOLDS, choose_thresholds
from models.progress import run_with_summary

log = logging.getLogger(__name__)
MIN_KEEP = min(THRESHOLDS)  # a cell under the lowest threshold of the grid in every model is never kept


def cache_key(checkpoint: str, split: str, records: list[dict], bf16: bool) -> str:
    """What a grid depends on: the checkpoint's weights (path and modification time), the records, bf16."""
    folder = Path(checkpoint)
    stamp = [str(folder.resolve())] + [f"{p.name}:{p.stat().st_mtime_ns}" for p in sorted(folder.glob("*.safetensors"))]
    text = json.dumps([stamp, split, [(r.get("sentence_id"), r.get("predicate_index"), len(r["tokens"]))
                                      for r in records], bool(bf16)])
    return hashlib.sha1(text.encode()).hexdigest()[:16]


def grids(parser, checkpoint: str, split: str, records: list[dict], cfg: DictConfig) -> dict:
    """P(answer) grids, the question template (as its text) of every cell >= MIN_KEEP, and each record's
    word offset (None: not encodable); from grid_cache when it holds them."""
    path = Path(cfg.grid_cache) / f"{cache_key(checkpoint, split, records, parser.bf16)}.pt" if cfg.grid_cache else None
    if path is not None and path.exists():
        log.info("%s %s: grids from %s", checkpoint, split, path)
        return torch.load(path)
    start = time.perf_counter()
    probs, templates, encs, errors = parser.span_probabilities(records, MIN_KEEP)
    seconds = time.perf_counter() - start
    names = parser.model.config.templates
    out = {"probs": probs, "offsets": [None if e is None else e["offset"] for e in encs],
           "templates": [{cell: json.dumps(names[t]) for cell, t in cells.items()} for cells in templates],
           "errors": dict(errors), "seconds": seconds, "predicates_per_second": len(records) / max(seconds, 1e-9)}
    log.info("%s %s: %d predicates in %.0f s (%.1f/s)", checkpoint, split, len(records), seconds,
             out["predicates_per_second"])
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        torch.save(out, path)
    return out


def combine(parts: list[dict], weights: list[float] | None = None) -> dict:
    """The (weighted) mean grid of several checkpoints' (a record whose words differ between them, read
    through different windows, keeps the first's grid: counted), templates from the first that has the cell."""
    first = parts[0]
    weights = [1.0] * len(parts) if weights is None else [float(w) for w in weights]
    probs, templates, offsets, differ = [], [], [], 0
    for i in range(len(first["probs"])):
        same = [(p, w) for p, w in zip(parts, weights) if p["offsets"][i] == first["offsets"][i]
                and p["probs"][i] is not None and first["probs"][i] is not None
                and p["probs"][i].shape == first["probs"][i].shape]
        differ += len(same) < len(parts)
        probs.append(None if first["probs"][i] is None else
                     sum(p["probs"][i] * w for p, w in same) / sum(w for _, w in same))
        same = [p for p, _ in same]
        cells = {}
        for p in reversed(same):
            cells.update(p["templates"][i])
        templates.append(cells)
        offsets.append(first["offsets"][i])
    return {"probs": probs, "templates": templates, "offsets": offsets, "differ": differ}


def decode_inputs(parser, grid: dict) -> tuple[list, list, list]:
    """(probs, templates as the parser's ids, encs) for SpanParser.to_records / choose_thresholds."""
    ids = {json.dumps(t): i for i, t in enumerate(parser.model.config.templates)}
    templates = [{cell: ids.get(t, -1) for cell, t in cells.items()} for cells in grid["templates"]]
    encs = [None if o is None else {"offset": o} for o in grid["offsets"]]
    return grid["probs"], templates, encs


def score(parser, gold_by_set: dict, grid: dict, thresholds, cfg: DictConfig) -> tuple[dict, dict]:
    """(metrics as evaluation.parser's: overall and per set, predictions per set) at `thresholds`."""
    probs, templates, encs = decode_inputs(parser, grid)
    results, preds_by_set, at = {}, {}, 0
    all_gold, all_pred = [], []
    for set_name, gold in gold_by_set.items():
        sl = slice(at, at + len(gold))
        at += len(gold)
        preds, counts = parser.to_records(gold, probs[sl], templates[sl], encs[sl], thresholds)
        m = evaluate_records(gold, preds, protocol=cfg.protocol)
        m["decode"] = counts
        results[set_name], preds_by_set[set_name] = m, preds
        all_gold += gold
        all_pred += preds
    results["overall"] = evaluate_records(all_gold, all_pred, protocol=cfg.protocol)
    return results, preds_by_set


def choose_weights(cfg: DictConfig, parser, dev: list[dict], parts: list[dict]) -> list[float]:
    """weights=dev (two checkpoints): the first's weight from `weight_grid` with the best dev UA F1, each
    weight at its own dev-chosen thresholds per type."""
    if len(parts) != 2:
        raise ValueError(f"weights=dev chooses between two checkpoints, got {len(parts)}: give weights=[...]")
    scored = []
    for w in cfg.weight_grid:
        grid = combine(parts, [float(w), 1.0 - float(w)])
        probs, templates, encs = decode_inputs(parser, grid)
        chosen, _ = choose_thresholds(parser, dev, probs, templates, encs)
        f1 = evaluate_records(dev, parser.to_records(dev, probs, templates, encs, chosen)[0])["ua"]["f1"]
        log.info("ensemble weight %.2f / %.2f: dev UA F1 %.4f at %s", w, 1 - w, f1, chosen)
        scored.append((f1, float(w)))
    w = max(scored)[1]
    return [w, 1.0 - w]


def evaluate(cfg: DictConfig, run_dir: Path) -> dict:
    checkpoints = [str(c) for c in cfg.checkpoints]
    if not checkpoints:
        raise ValueError("checkpoints=[...]: at least one span parser checkpoint")
    data = {split: records_of(cfg, split)[0] for split in ("dev", "test")}
    flat = {split: [r for recs in sets.values() for r in recs] for split, sets in data.items()}
    parsers, found = [], {split: [] for split in data}
    for c in checkpoints:
        parser = load_parser(c, batch_size=int(cfg.batch_size), bf16=bool(cfg.bf16), device="cpu")
        if parser.kind != "span":
            raise ValueError(f"{c}: a {parser.kind} checkpoint; this tool averages span parsers' probabilities")
        parsers.append(parser)
        for split in data:
            found[split].append(grids(parser, c, split, flat[split], cfg))
    names = [f"model{i}" for i in range(len(checkpoints))] if len(set(map(_short, checkpoints))) < len(checkpoints) \
        else [_short(c) for c in checkpoints]
    candidates = {n: (p, {s: found[s][i] for s in data}) for i, (n, p) in enumerate(zip(names, parsers))}
    weights = None
    if len(parsers) > 1:
        weights = choose_weights(cfg, parsers[0], flat["dev"], found["dev"]) if cfg.weights == "dev" else \
            (None if cfg.weights is None else [float(w) for w in cfg.weights])
        candidates["ensemble"] = (parsers[0], {s: combine(found[s], weights) for s in data})
        for s in data:
            log.info("ensemble %s: %d predicates read through different windows keep the first's grid", s,
                     candidates["ensemble"][1][s]["differ"])
    run_dir.mkdir(parents=True, exist_ok=True)
    out = {"checkpoints": dict(zip(names, checkpoints)), "bf16": bool(cfg.bf16), "protocol": cfg.protocol,
           "dev_predicates": len(flat["dev"]), "test_predicates": len(flat["test"]),
           "predicates_per_second": {n: found["test"][i]["predicates_per_second"] for i, n in enumerate(names)},
           "ensemble_weights": weights, "thresholds": {}, "single_threshold": {}, "dev": {}, "test": {}}
    for name, (parser, g) in candidates.items():
        probs, templates, encs = decode_inputs(parser, g["dev"])
        chosen, single = choose_thresholds(parser, flat["dev"], probs, templates, encs)
        out["thresholds"][name], out["single_threshold"][name] = chosen, single
        out["dev"][name] = score(parser, data["dev"], g["dev"], chosen, cfg)[0]
        out["test"][name], preds = score(parser, data["test"], g["test"], chosen, cfg)
        for set_name, p in preds.items():
            write_jsonl(run_dir / f"predictions.{name}.{set_name}.test.jsonl", p)
        log.info("%s: thresholds %s; test %s", name, chosen,
                 {s: round(m["ua"]["f1"], 4) for s, m in out["test"][name].items()})
    (run_dir / "metrics.json").write_text(json.dumps(out, indent=2))
    for split in ("dev", "test"):
        rows = {f"{n} {s}": m for n, ms in out[split].items() for s, m in ms.items()}
        print(metrics_table(rows, title=f"{split} ({cfg.protocol} protocol, thresholds chosen on every dev predicate)"))
    return out


def _short(checkpoint: str) -> str:
    """A readable name: the run folder (outputs/span_cpu/best -> span_cpu; .../R/checkpoints/checkpoint-500 ->
    R-checkpoint-500)."""
    p = Path(checkpoint)
    if p.name == "best":
        return p.parent.name
    if p.name.startswith("checkpoint-") and p.parent.name == "checkpoints":
        return f"{p.parent.parent.name}-{p.name}"
    return p.name


@hydra.main(version_base="1.3", config_path="../conf", config_name="eval_parser_ensemble")
def main(cfg: DictConfig) -> None:
    from hydra.core.hydra_config import HydraConfig

    run_with_summary(log, "evaluation.parser_ensemble", cfg,
                     lambda: evaluate(cfg, Path(HydraConfig.get().runtime.output_dir)),
                     lambda r: r["dev_predicates"] + r["test_predicates"], "predicates")


if __name__ == "__main__":
    from models.memory import use_jemalloc

    use_jemalloc()  # before anything allocates: RSS held down on long runs (models/memory.py)
    main()
