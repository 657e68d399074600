"""Evaluate a parser checkpoint on held-out splits by generation and the QA-SRL metrics.

    python -m evaluation.parser checkpoint=outputs/parser/RUN/best            # GS test + QANom test
    python -m evaluation.parser checkpoint=DIR split=dev logger=wandb

Writes into the run dir: predictions.<set>.<split>.jsonl (records with the predicted QAs and the
generated text) and metrics.json: {"overall": ..., "<set>": ..., each with ua/la/role,
by_predicate_type, and "decode": malformed / unaligned / invalid_question / empty counts}.
"""
from __future__ import annotations

import json
import logging
import random
import time
from pathlib import Path

import hydra
from omegaconf import DictConfig

from data_prep.records import write_jsonl
from metrics.qasrl import evaluate_records
from metrics.report import metrics_table
from models.parser import load_parser
from common.data import load_split, resolve_processed_dir
from common.tracking import init_wandb, log_records_table
from models.progress import run_with_summary

log = logging.getLogger(__name__)


def records_of(cfg: DictConfig, split: str) -> tuple[dict[str, list[dict]], bool]:
    """({set: gold records} of one split: every predicate, or a seeded sample of `max_predicates` per set;
    whether they are the shipped sample, which has one file per split, named "sample")."""
    names = [f"{s}.{split}" for s in cfg.sets]
    folder, is_sample = resolve_processed_dir(cfg.paths, names)
    out = {}
    for set_name, file_name in zip(["sample"] if is_sample else list(cfg.sets), names):
        gold = load_split(folder, [file_name], split, None, cfg.seed, is_sample)
        if cfg.max_predicates and len(gold) > cfg.max_predicates:
            gold = random.Random(cfg.seed).sample(gold, int(cfg.max_predicates))
        out[set_name] = gold
    return out, is_sample


def evaluate(cfg: DictConfig, run_dir: Path) -> dict:
    gold_by_set, is_sample = records_of(cfg, cfg.split)
    parser = load_parser(cfg.checkpoint, batch_size=int(cfg.batch_size), constrained=cfg.constrained,
                         threshold=cfg.threshold, bf16=cfg.bf16)
    if cfg.num_beams and parser.kind == "seq2seq":
        parser.model.generation_config.num_beams = int(cfg.num_beams)
    sets = list(gold_by_set)
    run_dir.mkdir(parents=True, exist_ok=True)
    results, all_gold, all_pred, total_counts = {}, [], [], {}
    for set_name, gold in gold_by_set.items():
        start = time.perf_counter()
        preds, counts = parser.predict(gold)
        seconds = time.perf_counter() - start
        write_jsonl(run_dir / f"predictions.{set_name}.{cfg.split}.jsonl", preds)
        m = evaluate_records(gold, preds, protocol=cfg.protocol, strict=bool(cfg.match_strict))
        m["decode"] = counts
        m["predicates_per_second"] = len(gold) / seconds if seconds else None
        results[set_name] = m
        all_gold += gold
        all_pred += preds
        for k, v in counts.items():
            total_counts[k] = total_counts.get(k, 0) + v
        log.info("%s %s: UA F1 %.3f, LA F1 %.3f (%d predicates, %.1f/s)", set_name, cfg.split,
                 m["ua"]["f1"], m["la"]["f1"], len(gold), len(gold) / max(seconds, 1e-9))
    overall = evaluate_records(all_gold, all_pred, protocol=cfg.protocol, strict=bool(cfg.match_strict))
    overall["decode"] = total_counts
    results = {"overall": overall, **results, "checkpoint": str(cfg.checkpoint), "parser_kind": parser.kind,
               "split": cfg.split,
               "protocol": cfg.protocol, "sample_data": is_sample}
    (run_dir / "metrics.json").write_text(json.dumps(results, indent=2))
    if cfg.hub.push:
        results["hub_url"] = push_results(cfg, results)
    print(metrics_table({k: v for k, v in results.items() if isinstance(v, dict)},
                        title=f"{cfg.checkpoint} on {cfg.split} ({cfg.protocol} protocol)"))

    run = init_wandb(cfg, "eval-parser", str(run_dir))
    if run is not None:
        run.summary.update({f"{s}/{k}/{x}": results[s][k][x] for s in ["overall", *sets]
                            for k in ("ua", "la", "role") for x in ("precision", "recall", "f1")})
        rows = [{"set": p["source"], "sentence": " ".join(p["tokens"]), "predicate": p["predicate"],
                 "generated": p.get("generated", ""),
                 "predicted": " | ".join(f"{qa['question']} {'; '.join(qa['answer_texts'])}" for qa in p["qas"]),
                 "gold": " | ".join(f"{qa['question']} {'; '.join(qa['answer_texts'])}" for qa in g["qas"])}
                for g, p in list(zip(all_gold, all_pred))[:500]]
        log_records_table(run, f"predictions_{cfg.split}", rows, ["set", "sentence", "predicate", "generated",
                                                                   "predicted", "gold"])
        run.finish()
    return results


def push_results(cfg: DictConfig, results: dict) -> str | None:
    """Add these test figures (UA / LA F1 per set) to the model card of the Hub repo `hub.repo_id`
    (where train.parser pushed the checkpoint), with the whole metrics.json as test_metrics.json."""
    from common.hub import add_results
    from common.secrets import mask_overrides, task_overrides

    names = {"qasrl-gs": "QA-SRL GS", "qanom": "QANom", "sample": "shipped sample"}
    # dataset_type per set: the card's model-index groups results by type and split, not by name
    rows = [{"task_type": "text2text-generation", "dataset_type": s, "dataset_name": names.get(s, s),
             "dataset_split": cfg.split, "metric_type": f"{kind}_f1_{cfg.protocol}",
             "metric_name": f"{kind.upper()} F1 ({cfg.protocol} protocol)", "value": results[s][kind]["f1"]}
            for s in results if s in names for kind in ("ua", "la")]
    command = "python -m evaluation.parser " + " ".join(mask_overrides(task_overrides()))
    return add_results(cfg.hub.repo_id, rows, {f"{cfg.split}_metrics.{cfg.protocol}.json": json.dumps(results, indent=2),
                                               f"{cfg.split}_command.txt": command + "\n"},
                       commit_message=f"{cfg.split} results ({cfg.protocol} protocol)", token=cfg.hub.get("token"))


@hydra.main(version_base="1.3", config_path="../conf", config_name="eval_parser")
def main(cfg: DictConfig) -> None:
    from hydra.core.hydra_config import HydraConfig

    run_with_summary(log, "evaluation.parser", cfg, lambda: evaluate(cfg, Path(HydraConfig.get().runtime.output_dir)),
                     lambda r: r["overall"]["predicates"], "predicates")


if __name__ == "__main__":
    from models.memory import use_jemalloc

    use_jemalloc()  # before anything allocates: RSS held down on long runs (models/memory.py)
    main()
