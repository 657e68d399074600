"""The copular-fact rule (models/consistency/copula.py) against the QASemConsistency copula QAs:

    python -m evaluation.copula [split=dev] [paths.data_dir=DIR] hydra.run.dir=D

The benchmark's copula QAs are its QAs whose predicate is a form of "be" (QA-SRL and QANom have
none; the benchmark's authors asked an LLM for them, for FActScore's responses only: `datasets`). Per response sentence, the rule's copular
predicates and QAs are compared with them:
- predicates: precision / recall of the copula tokens (same sentence and index);
- UA / LA: the parser metrics (metrics.qasrl, IOU >= 0.3) over copula predicates;
- recovery: the share of benchmark copula QAs with a rule QA on the same sentence whose answer
  matches (IOU >= 0.3) and whose attribute matches (every content word of the benchmark's
  attribute in the rule's, or content-word Jaccard >= 0.5), and the share of rule QAs that match
  some benchmark QA that way (precision).
Writes D/metrics.json and D/predictions.jsonl (per sentence with a copula on either side).
"""
from __future__ import annotations

import json
import logging
from collections import Counter
from pathlib import Path

import hydra
from omegaconf import DictConfig

from data_prep.records import write_jsonl
from data_prep.verb_forms import inflection_rows
from evaluation.consistency_benchmark import load_responses
from metrics.qasrl import evaluate_records, iou
from models.consistency.copula import BE_FORMS, Lexicon, copular_records
from models.progress import run_with_summary

log = logging.getLogger(__name__)
STOP = frozenset("who what is are was were am be been being a an the of ? , .".split())


def attribute_words(question: str) -> set[str]:
    """The content words of a copula question past its wh-word and be-form."""
    return {w.strip("?,.\"'").lower() for w in question.replace(" - ", "-").split()} - STOP - {""}


def attribute_match(gold_q: str, pred_q: str) -> bool:
    g, p = attribute_words(gold_q), attribute_words(pred_q)
    return bool(g) and (g <= p or len(g & p) / len(g | p) >= 0.5)


def evaluate_copulas(responses: list[dict], lex) -> tuple[dict, list[dict]]:
    gold_recs, pred_recs, rows, counts = [], [], [], Counter()
    found = matched_gold = gold_total = pred_total = matched_pred = 0
    gold_preds = pred_preds = 0
    for r in responses:
        for j, sent in enumerate(r["sentences"]):
            sid = f"{r['id']}:{j}"
            gold = [q for q in r["qas"] if q["sentence"] == j and q["predicate"].lower() in BE_FORMS]
            preds, c = copular_records(sent, lex, sid)
            counts.update(c)
            pred_qas = [qa for rec in preds for qa in rec["qas"]]
            by_index: dict[int, list] = {}
            for q in gold:
                by_index.setdefault(q["predicate_index"], []).append(q)
            gold_preds += len(by_index)
            pred_preds += len(preds)
            found += len(set(by_index) & {p["predicate_index"] for p in preds})
            for idx, qs in by_index.items():
                gold_recs.append({"sentence_id": sid, "tokens": sent, "predicate_index": idx, "predicate": sent[idx],
                                  "predicate_type": "copular", "qas": [
                                      {"question": q["question"], "answers": [q["answer_span"]],
                                       "answer_texts": [q["answer"]], "slots": {"wh": q["question"].split()[0].lower(),
                                                                                "aux": "_", "subj": "_", "verb": "be",
                                                                                "obj": "x", "prep": "_", "obj2": "_"},
                                       "is_passive": False} for q in qs]})
            pred_recs += preds

            def hit(g, p):
                return iou(tuple(g["answer_span"]), tuple(p["answers"][0])) >= 0.3 and attribute_match(g["question"], p["question"])

            gold_total += len(gold)
            pred_total += len(pred_qas)
            matched_gold += sum(any(hit(g, p) for p in pred_qas) for g in gold)
            matched_pred += sum(any(hit(g, p) for g in gold) for p in pred_qas)
            if gold or preds:
                rows.append({"id": sid, "sentence": " ".join(sent),
                             "gold": [{"question": q["question"], "answer": q["answer"]} for q in gold],
                             "predicted": [{"question": qa["question"], "answer": qa["answer_texts"][0],
                                            "negated": qa["is_negated"]} for qa in pred_qas]})
    ua = evaluate_records(gold_recs, pred_recs)
    metrics = {
        "predicates": {"gold": gold_preds, "predicted": pred_preds, "found": found,
                       "precision": found / pred_preds if pred_preds else None,
                       "recall": found / gold_preds if gold_preds else None},
        "ua": ua["ua"], "la": ua["la"],
        "recovery": {"gold_qas": gold_total, "recovered": matched_gold,
                     "recall": matched_gold / gold_total if gold_total else None,
                     "predicted_qas": pred_total, "matching": matched_pred,
                     "precision": matched_pred / pred_total if pred_total else None},
        "rule_counts": dict(counts)}
    return metrics, rows


def run(cfg: DictConfig, run_dir: Path) -> dict:
    data = Path(hydra.utils.to_absolute_path(cfg.paths.data_dir))
    responses, info = load_responses(data / "qasem-consistency" / f"{cfg.split}.jsonl", cfg.split)
    # only FActScore's responses carry the benchmark's copula QAs: elsewhere a copula found is no error
    responses = [r for r in responses if r["dataset"] in cfg.datasets]
    info["scored_responses"] = len(responses)
    metrics, rows = evaluate_copulas(responses, Lexicon.from_table(inflection_rows(data)))
    metrics.update(split=cfg.split, data=info)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "metrics.json").write_text(json.dumps(metrics, indent=1))
    write_jsonl(run_dir / "predictions.jsonl", rows)
    p, rec = metrics["predicates"], metrics["recovery"]
    log.info("copula predicates P %s / R %s (%d gold, %d predicted); QA recovery %d of %d (%.3f), rule QAs matching %d of %d; "
             "UA F1 %.3f LA F1 %.3f", _f(p["precision"]), _f(p["recall"]), p["gold"], p["predicted"], rec["recovered"],
             rec["gold_qas"], rec["recall"] or 0.0, rec["matching"], rec["predicted_qas"], metrics["ua"]["f1"],
             metrics["la"]["f1"])
    return metrics


def _f(x) -> str:
    return "n/a" if x is None else f"{x:.3f}"


@hydra.main(version_base="1.3", config_path="../conf", config_name="eval_copula")
def main(cfg: DictConfig) -> None:
    from hydra.core.hydra_config import HydraConfig

    run_with_summary(log, "evaluation.copula", cfg, lambda: run(cfg, Path(HydraConfig.get().runtime.output_dir)),
                     lambda m: m["data"]["scored_responses"], "responses")


if __name__ == "__main__":
    from models.memory import use_jemalloc

    use_jemalloc()  # before anything allocates: RSS held down on long runs (models/memory.py)
    main()
