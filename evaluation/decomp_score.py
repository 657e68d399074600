"""Decomposition quality of a parser (DecompScore, Wanner et al. 2024):
python -m evaluation.decomp_score parser=DIR entailment=DIR [split=test]
python -m evaluation.decomp_score parser=null entailment=DIR      # the annotated QAs (reference row)

For each sentence of a QA-SRL GS split, the parser's QAs for the sentence's gold predicates are
scored by the entailment classifier with the sentence itself as the premise. DecompScore = the
average number of QAs per sentence that the sentence supports; we also report the QAs per
sentence and the share the sentence does not support (a decomposition should only state what
the sentence says). Writes metrics.json into the run dir."""
from __future__ import annotations

import json
import logging
import random
from collections import defaultdict
from pathlib import Path

import hydra
from omegaconf import DictConfig

from data_prep.records import read_jsonl
from common.data import resolve_processed_dir
from models.progress import run_with_summary

log = logging.getLogger(__name__)


def sentence_pairs(records: list[dict], gold_qas: bool = False) -> list[dict]:
    """One pipeline pair per sentence: premise = generated = the sentence, predicates = gold ones;
    with gold_qas, the annotated QAs instead of the parser's (the reference row)."""
    by_sentence = defaultdict(list)
    for r in records:
        by_sentence[r["sentence_id"]].append(r)
    pairs = []
    for sid, recs in by_sentence.items():
        tokens = recs[0]["tokens"]
        preds = [{"predicate_index": r["predicate_index"], "predicate": r["predicate"],
                  "predicate_type": r["predicate_type"], "verb_form": r["verb_form"]}
                 for r in sorted(recs, key=lambda r: r["predicate_index"])]
        pair = {"id": sid, "reference": tokens, "generated": [tokens], "predicates": [preds]}
        if gold_qas:
            pair["qas"] = [{"sentence": 0, "predicate_index": r["predicate_index"], "question": qa["question"],
                            "answer_span": span} for r in recs for qa in r["qas"] for span in qa["answers"]]
        pairs.append(pair)
    return pairs


def decomp_metrics(reports: list[dict]) -> dict:
    n = len(reports)
    qas = sum(r["n_qas"] for r in reports)
    supported = sum(r["n_supported"] for r in reports)
    return {"sentences": n, "qas": qas,
            "decomp_score": supported / n if n else None,          # supported QAs per sentence
            "qas_per_sentence": qas / n if n else None,
            "unsupported_share": (qas - supported) / qas if qas else None,
            "sentences_without_qas": sum(r["n_qas"] == 0 for r in reports)}


def run(cfg: DictConfig, run_dir: Path) -> dict:
    from models.consistency import ConsistencyPipeline

    name = f"{cfg.set}.{cfg.split}"
    folder, is_sample = resolve_processed_dir(cfg.paths, [name])
    records = list(read_jsonl(folder / f"{name}.jsonl"))
    pairs = sentence_pairs(records, gold_qas=not cfg.parser)
    if cfg.max_sentences and len(pairs) > cfg.max_sentences:
        pairs = random.Random(cfg.seed).sample(pairs, int(cfg.max_sentences))
    lexicon = None
    if cfg.copulas and cfg.parser:  # the GS predicates are given, so no detector: the table from the data dir
        from data_prep.verb_forms import inflection_rows
        from models.consistency.copula import Lexicon

        lexicon = Lexicon.from_table(inflection_rows(hydra.utils.to_absolute_path(cfg.paths.data_dir)))
    pipe = ConsistencyPipeline.from_pretrained(cfg.entailment, parser=cfg.parser or None, device=cfg.device,
                                               batch_size=int(cfg.batch_size), threshold=float(cfg.threshold),
                                               copulas=lexicon is not None, lexicon=lexicon,
                                               precision=str(cfg.precision),
                                               reference_scope=str(cfg.reference_scope),
                                               reference_cache=cfg.reference_cache)
    reports = pipe.run(pairs)
    metrics = {"set": name, "sample_data": is_sample, "parser": str(cfg.parser), "entailment": str(cfg.entailment),
               "threshold": float(cfg.threshold), **decomp_metrics(reports)}
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "metrics.json").write_text(json.dumps(metrics, indent=1))
    log.info("DecompScore %.2f supported QAs per sentence (%.2f QAs, %.1f%% unsupported) over %d sentences of %s",
             metrics["decomp_score"] or 0, metrics["qas_per_sentence"] or 0,
             100 * (metrics["unsupported_share"] or 0), metrics["sentences"], name)
    return metrics


@hydra.main(version_base="1.3", config_path="../conf", config_name="eval_decomp_score")
def main(cfg: DictConfig) -> None:
    from hydra.core.hydra_config import HydraConfig

    run_with_summary(log, "evaluation.decomp_score", cfg, lambda: run(cfg, Path(HydraConfig.get().runtime.output_dir)),
                     lambda m: m["sentences"], "sentences")


if __name__ == "__main__":
    from models.memory import use_jemalloc

    use_jemalloc()  # before anything allocates: RSS held down on long runs (models/memory.py)
    main()
