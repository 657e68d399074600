"""The consistency pipeline end to end on QASemConsistency: python -m evaluation.consistency_benchmark
parser=DIR entailment=DIR detector=DIR [split=test]

(a) the benchmark's own QAs through the classifier, (b) the QAs our detector + parser produce
from the responses. For each: the response-level correlation (Pearson, Spearman) of the predicted
score (share of QAs scored supported) with the human score (share of QAs the annotators judged
supported), per sub-dataset and overall. Also how many benchmark QAs the parser recovers: a
benchmark QA is recovered when our parser, on the same predicate, gives an answer span matching
it (UA: IOU >= 0.3, greedy one-to-one), and how many benchmark predicates the detector finds.
Writes metrics.json and the reports of (b) (reports.parser.jsonl, report.html) into the run dir."""
from __future__ import annotations

import json
import logging
from collections import defaultdict
from pathlib import Path

import hydra
from omegaconf import DictConfig

from data_prep.consistency import DATASETS, flatten_summary, read_consistency, response_id
from metrics.entailment import correlation
from metrics.qasrl import match_spans
from models.progress import run_with_summary

log = logging.getLogger(__name__)
SENTENCE_END = {".", "!", "?"}


def response_sentences(summary) -> list[list[str]]:
    """The response's sentences: its own split when the file has one, else the flat token list
    cut after sentence-final punctuation (verifiability answers come flat)."""
    flat, offsets = flatten_summary(summary)
    if len(offsets) > 1:
        return [flat[a:b] for a, b in zip(offsets, offsets[1:] + [len(flat)])]
    out, cur = [], []
    for w in flat:
        cur.append(w)
        if w in SENTENCE_END:
            out.append(cur)
            cur = []
    return out + ([cur] if cur else [])


def load_responses(path: Path, split: str, limit: int | None = None) -> tuple[list[dict], dict]:
    """One dict per response: id, dataset, reference tokens, sentences, and the benchmark QAs
    mapped to (sentence, local predicate index, local answer span) with their gold label."""
    examples, skipped = read_consistency(path, split)
    by_response = defaultdict(list)
    for ex in examples:
        by_response[ex["response_id"]].append(ex)
    responses, crossing = [], 0
    with path.open(encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            row = json.loads(line)
            rid = response_id(row)
            if rid not in by_response:
                continue  # counted by the reader (no QAs, empty premise, ...)
            sentences = response_sentences(row["summary"])
            starts = [sum(len(s) for s in sentences[:j]) for j in range(len(sentences))]
            qas = []
            for ex in by_response.pop(rid):
                j = max(k for k, o in enumerate(starts) if o <= ex["predicate_index"])
                a, b = ex["answer_span"]
                la, lb = a - starts[j], b - starts[j]
                if la < 0 or lb > len(sentences[j]):  # an answer outside its predicate's sentence
                    crossing += 1
                    la, lb = max(la, 0), min(lb, len(sentences[j]))
                qas.append({"sentence": j, "predicate_index": ex["predicate_index"] - starts[j],
                            "predicate": ex["predicate"], "question": ex["question"], "answer": ex["answer"],
                            "answer_span": [la, lb], "supported_gold": ex["supported"],
                            "qa_id": ex["example_id"]})
            responses.append({"id": rid, "dataset": ex["dataset"], "reference": ex["premise_tokens"],
                              "sentences": sentences, "qas": qas})
            if limit and len(responses) >= limit:
                break
    info = {"responses": len(responses), "qas": sum(len(r["qas"]) for r in responses),
            "answers_cut_at_sentence_end": crossing, "reader_skipped": dict(skipped)}
    return responses, info


def correlations(responses: list[dict], reports: list[dict]) -> dict:
    """Per sub-dataset and overall: Pearson / Spearman of predicted vs human response scores,
    over the responses that got a predicted score."""
    out = {}
    for ds in list(DATASETS) + ["overall"]:
        pairs = [(rep["score"], sum(q["supported_gold"] for q in r["qas"]) / len(r["qas"]))
                 for r, rep in zip(responses, reports) if ds in ("overall", r["dataset"])]
        scored = [(p, h) for p, h in pairs if p is not None]
        out[ds] = {"n_responses": len(pairs), "n_scored": len(scored),
                   **correlation([p for p, _ in scored], [h for _, h in scored])}
    return out


def recovery(responses: list[dict], reports: list[dict]) -> dict:
    """Share of benchmark QAs whose answer span our parser produced for the same predicate
    (UA, IOU >= 0.3), and share of benchmark predicates our detector found."""
    out = {}
    for ds in list(DATASETS) + ["overall"]:
        qa_total = qa_found = pred_total = pred_found = 0
        for r, rep in zip(responses, reports):
            if ds not in ("overall", r["dataset"]):
                continue
            gold = defaultdict(list)
            for q in r["qas"]:
                gold[(q["sentence"], q["predicate_index"])].append(tuple(q["answer_span"]))
            for (j, idx), spans in gold.items():
                pred_total += 1
                qa_total += len(spans)
                found = next((p for p in rep["sentences"][j]["predicates"] if p["predicate_index"] == idx), None)
                if found is None:
                    continue
                pred_found += 1
                sys_spans = [tuple(qa["answer_span"]) for qa in found["qas"]]
                matched = {spans[g] for _, g in match_spans(sys_spans, spans)}
                qa_found += sum(s in matched for s in spans)
        out[ds] = {"qa_recall": qa_found / qa_total if qa_total else None, "qas": qa_total,
                   "predicate_recall": pred_found / pred_total if pred_total else None, "predicates": pred_total}
    return out


def run(cfg: DictConfig, run_dir: Path) -> dict:
    from models.consistency import ConsistencyPipeline

    responses, info = load_responses(Path(cfg.data.file), cfg.split, cfg.data.limit)
    log.info("%d responses, %d QAs from %s", info["responses"], info["qas"], cfg.data.file)
    pipe = ConsistencyPipeline.from_pretrained(cfg.entailment, parser=cfg.parser, detector=cfg.detector,
                                               device=cfg.device, batch_size=int(cfg.batch_size),
                                               threshold=float(cfg.threshold), copulas=bool(cfg.copulas),
                                               precision=str(cfg.precision),
                                               reference_scope=str(cfg.reference_scope),
                                               reference_cache=cfg.reference_cache,
                                               response_score=str(cfg.response_score),
                                               share_weight=float(cfg.share_weight))
    gold_pairs = [{"id": r["id"], "reference": r["reference"], "generated": r["sentences"], "qas": r["qas"]}
                  for r in responses]
    gold_reports = pipe.run(gold_pairs)
    metrics = {"split": cfg.split, "data": info, "threshold": float(cfg.threshold),
               "entailment": str(cfg.entailment), "parser": str(cfg.parser), "detector": str(cfg.detector),
               "benchmark_qas": correlations(responses, gold_reports)}
    if cfg.parser:
        parser_pairs = [{"id": r["id"], "reference": r["reference"], "generated": r["sentences"]} for r in responses]
        reports = pipe.run(parser_pairs)
        metrics["parser_qas"] = correlations(responses, reports)
        metrics["recovery"] = recovery(responses, reports)
        metrics["parser_qas_per_response"] = sum(r["n_qas"] for r in reports) / max(len(reports), 1)
        run_dir.mkdir(parents=True, exist_ok=True)
        with (run_dir / "reports.parser.jsonl").open("w", encoding="utf-8") as f:
            for rep in reports:
                f.write(json.dumps(rep, ensure_ascii=False) + "\n")
        if cfg.html:
            from evaluation.consistency_html import write_page

            write_page(reports[: int(cfg.html_pairs)], run_dir / "report.html")
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "metrics.json").write_text(json.dumps(metrics, indent=1))
    for key in ("benchmark_qas", "parser_qas"):
        if key in metrics:
            for ds, row in metrics[key].items():
                log.info("%s %-13s pearson %s spearman %s (%d/%d responses scored)", key, ds,
                         _fmt(row["pearson"]), _fmt(row["spearman"]), row["n_scored"], row["n_responses"])
    for ds, row in metrics.get("recovery", {}).items():
        log.info("recovery %-13s QAs %s of %d, predicates %s of %d", ds, _fmt(row["qa_recall"]), row["qas"],
                 _fmt(row["predicate_recall"]), row["predicates"])
    return metrics


def _fmt(x) -> str:
    return "n/a" if x is None else f"{x:.3f}"


@hydra.main(version_base="1.3", config_path="../conf", config_name="eval_consistency_benchmark")
def main(cfg: DictConfig) -> None:
    from hydra.core.hydra_config import HydraConfig

    run_with_summary(log, "evaluation.consistency_benchmark", cfg, lambda: run(cfg, Path(HydraConfig.get().runtime.output_dir)),
                     lambda m: m["data"]["responses"], "responses", lambda m: f", {m['data']['qas']} QAs")


if __name__ == "__main__":
    from models.memory import use_jemalloc

    use_jemalloc()  # before anything allocates: RSS held down on long runs (models/memory.py)
    main()
