"""Score an external factual-consistency benchmark (a document, a summary, a label or a human score per
record; conf/benchmark/NAME.yaml) with the consistency pipeline:
python -m evaluation.external benchmark=summedits split=evaluation release=DIR hydra.run.dir=D

Writes into the run dir:
- metrics.json: the headline response score's table (binary: domains {NAME: {bacc, auc, threshold, n}},
  mean_bacc, mean_auc, each threshold chosen on the other domains; score: Pearson / Spearman), the same table
  for the word-overlap baseline of the same run (baseline_word_overlap: the share of the summary's content
  words found in the document), and for every other response score (response_scores); fractions, not %;
- predictions.jsonl: per record its group, target, every response score and the baseline;
- reports.jsonl: the pipeline's report of each record (its QAs with P(supported));
and, for a minimal-edit benchmark (records with original_summary and edit_types), metrics.json's `analysis`:
where the score fails (evaluation/external_analysis.py).
The benchmark file is checked whole before any model loads."""
from __future__ import annotations

import json
import logging
import sys
import time
from pathlib import Path

import hydra
from omegaconf import DictConfig

from data_prep.external import read_external
from data_prep.records import DataFormatError
from metrics.external import benchmark_table
from models.consistency.response_score import RESPONSE_SCORES, response_scores
from models.entailment.features import content_words
from models.progress import progress, run_with_summary
from models.text import as_tokens, layout_notes

log = logging.getLogger(__name__)


class InputError(ValueError):
    pass


def word_overlap(document: str, summary: str) -> float:
    """The share of the summary's content words (no stopwords, no punctuation) found in the document."""
    doc = set(content_words(as_tokens(document), drop_stopwords=True))
    words = content_words(as_tokens(summary), drop_stopwords=True)
    return sum(w in doc for w in words) / len(words) if words else 1.0


def read_benchmark(cfg: DictConfig) -> list[dict]:
    bench = cfg.benchmark
    if cfg.split not in bench.splits:
        raise InputError(f"benchmark {bench.name}: split {cfg.split!r} is not one this repo may read "
                         f"(its splits: {list(bench.splits)}; a held-out split judges the scorer from outside)")
    try:
        return read_external(bench.file, dict(bench.fields), str(bench.target), cfg.limit)
    except DataFormatError as e:
        raise InputError(str(e)) from None


def tables(rows: list[dict], predictions: list[dict], target: str, headline: str) -> dict:
    """The metrics of the headline score, the baseline and every response score, over the scored records."""
    def table(key):
        kept = [(r, p) for r, p in zip(rows, predictions) if p[key] is not None]
        return {**benchmark_table(target, [r["group"] for r, _ in kept], [r["target"] for r, _ in kept],
                                  [p[key] for _, p in kept]), "unscored": len(rows) - len(kept)}

    every = {name: table(name) for name in RESPONSE_SCORES}  # the headline is one of them
    return {**every[headline], "score": headline, "baseline_word_overlap": table("word_overlap"),
            "response_scores": every}


def run(cfg: DictConfig, run_dir: Path) -> dict:
    from evaluation.consistency import build_pipeline
    from models.release import apply_release

    start = time.perf_counter()
    if cfg.response_score not in RESPONSE_SCORES:
        raise InputError(f"response_score={cfg.response_score}: give one of {RESPONSE_SCORES}")
    rows = read_benchmark(cfg)  # every line checked before any model loads
    apply_release(cfg, ("parser", "detector", "entailment"))
    if not cfg.entailment:
        raise InputError("give release=DIR (bash scripts/release.sh), or entailment=DIR with parser= and detector=")
    log.info("%s %s: %d records in %d groups from %s", cfg.benchmark.name, cfg.split, len(rows),
             len({r["group"] for r in rows}), cfg.benchmark.file)
    pipe = build_pipeline(cfg)
    notes = {}
    reports, predictions = [], []
    for r in progress(rows, f"scoring {cfg.benchmark.name}", unit="record"):
        if r["document"] not in notes:
            notes[r["document"]] = layout_notes(r["document"], int(cfg.long_document_words))
        rep, = pipe.run([{"id": r["id"], "reference": r["document"], "generated": r["summary"]}],
                        batched=not cfg.one_at_a_time)
        rep["messages"] += [f"document: {m}" for m in notes[r["document"]]]
        rep["response_scores"] = response_scores(rep, pipe.threshold, pipe.share_weight)
        reports.append(rep)
        predictions.append({"id": r["id"], "group": r["group"], "target": r["target"], "status": rep["status"],
                            "n_qas": rep["n_qas"], **rep["response_scores"],
                            "word_overlap": word_overlap(r["document"], r["summary"]), **r["extra"]})
    metrics = {"benchmark": cfg.benchmark.name, "split": cfg.split, "records": len(rows),
               "release": cfg.release, "entailment": str(cfg.entailment), "threshold": pipe.threshold,
               **tables(rows, predictions, str(cfg.benchmark.target), str(cfg.response_score)),
               "seconds": round(time.perf_counter() - start, 1)}
    if all(k in (rows[0]["extra"] or {}) for k in ("original_summary", "edit_types")):
        from evaluation.external_analysis import edit_analysis

        metrics["analysis"] = edit_analysis(rows, reports, predictions, pipe.threshold, str(cfg.response_score))
    run_dir.mkdir(parents=True, exist_ok=True)
    for name, items in (("predictions.jsonl", predictions), ("reports.jsonl", reports)):
        with (run_dir / name).open("w", encoding="utf-8") as f:
            for x in items:
                f.write(json.dumps(x, ensure_ascii=False) + "\n")
    (run_dir / "metrics.json").write_text(json.dumps(metrics, indent=1))
    log_table(metrics)
    return metrics


def log_table(metrics: dict) -> None:
    base = metrics["baseline_word_overlap"]
    for name, row in metrics["domains"].items():
        b = base["domains"].get(name, {})
        figures = [f"{k} {row[k]:.3f} (overlap {b[k]:.3f})" for k in ("bacc", "auc", "pearson", "spearman")
                   if row.get(k) is not None and b.get(k) is not None]
        log.info("%-12s n %4d  %s", name, row["n"], "  ".join(figures))
    for key in ("mean_bacc", "mean_auc", "mean_pearson", "mean_spearman"):
        if metrics.get(key) is not None:
            log.info("%s %.3f (word overlap %.3f)", key, metrics[key], base[key])


@hydra.main(version_base="1.3", config_path="../conf", config_name="eval_external")
def main(cfg: DictConfig) -> None:
    from hydra.core.hydra_config import HydraConfig

    try:
        run_with_summary(log, "evaluation.external", cfg, lambda: run(cfg, Path(HydraConfig.get().runtime.output_dir)),
                         lambda m: m["records"], "records")
    except InputError as e:  # names the file and line: a traceback adds nothing
        log.error("%s", e)
        sys.exit(1)


if __name__ == "__main__":
    from models.memory import use_jemalloc

    use_jemalloc()  # before anything allocates: RSS held down on long runs (models/memory.py)
    main()
