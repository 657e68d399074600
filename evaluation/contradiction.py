"""Find self-contradictions, fact by fact:

    python -m evaluation.contradiction parser=P detector=DET entailment=E contradiction=R/contradiction pairs=FILE hydra.run.dir=D
    python -m evaluation.contradiction parser=P detector=DET entailment=E contradiction=R/contradiction a=A.txt b=B.txt hydra.run.dir=D

pairs: ChatProtect-style JSONL ({id, prefix, orig, alt, label?}). a / b: two texts (two samples for
one prompt): every sentence of a is paired with every sentence of b that shares a predicate.
Writes D/predictions.jsonl (per pair: id, status, p_contradiction, decision, label, the conflicting QA
pairs with their spans), D/metrics.json (statuses; when the pairs have labels {precision, recall, f1, n,
positives, threshold}, plus the baselines), D/report.html, and D/run.json (seconds, pairs/s).
Sharded like evaluation.consistency (shard.count=N 'shard.index=range(N)' -m, or torchrun; launch/README.md), then
python -m evaluation.merge SWEEP out=DIR.
A pair without a score (empty sentence, no predicate, non-Latin script) has p_contradiction null
and counts as "no contradiction found" in the metrics.
"""
from __future__ import annotations

import json
import logging
import sys
import time
from pathlib import Path

import hydra
import numpy as np
from omegaconf import DictConfig

from data_prep.chatprotect import read_pairs
from data_prep.records import DataFormatError
from evaluation.sharding import ShardError, refuse_repeated_ids, run_shard, settings_of, shard_from_config
from metrics.contradiction import binary_prf
from models.model_paths import resolve_model_path
from sklearn.metrics import roc_auc_score
from models.progress import run_with_summary

log = logging.getLogger(__name__)

# The published ChatGPT detector (chain of thought, 10 votes) on the 1,401 test pairs.
CHATGPT_PUBLISHED = {"precision": 0.842, "recall": 0.832, "f1": 0.837}


def read_input(cfg: DictConfig) -> tuple[list[dict] | None, tuple[str, str] | None]:
    """(pairs, None) for pairs=FILE, (None, (text a, text b)) for a=FILE b=FILE; checked before any model loads."""
    if cfg.pairs:
        limit = int(cfg.limit) if cfg.limit else None
        return read_pairs(hydra.utils.to_absolute_path(cfg.pairs))[:limit], None
    if cfg.a and cfg.b:
        texts = []
        for key in ("a", "b"):
            path = Path(hydra.utils.to_absolute_path(cfg[key]))
            if not path.exists():
                raise DataFormatError(f"{key}={path}: file not found")
            texts.append(path.read_text(encoding="utf-8"))
        return None, (texts[0], texts[1])
    raise DataFormatError("give pairs=FILE.jsonl, or a=FILE and b=FILE")


def sentence_pairs(text_a: str, text_b: str, detector, parser, scorer, embedder) -> tuple[list[dict], list[dict]]:
    """(pairs, analysed rows) for every sentence of a against every sentence of b sharing a
    predicate; without the components (an encoder-only model), every sentence pair. A pair's prefix
    is the text of a before its sentence."""
    from models.contradiction import analyse_pair, analyse_pairs, similarities
    from models.qa_alignment import extract_qas, predicates_of
    from models.text import tokenize_sentences

    sa, sb = tokenize_sentences(text_a), tokenize_sentences(text_b)
    def pair(i: int, j: int) -> dict:
        return {"id": f"a{i}-b{j}", "a": " ".join(sa[i]), "b": " ".join(sb[j]),
                "prefix": " ".join(w for s in sa[:i] for w in s)}

    if detector is None:
        pairs = [pair(i, j) for i in range(len(sa)) for j in range(len(sb))]
        return pairs, analyse_pairs(pairs)
    qas = extract_qas(sa + sb, detector, parser)
    qa, qb = qas[:len(sa)], qas[len(sa):]
    todo = [(i, j) for i in range(len(sa)) for j in range(len(sb)) if predicates_of(qa[i]) & predicates_of(qb[j])]
    sims = similarities(embedder, [" ".join(sa[i]) for i, _ in todo], [" ".join(sb[j]) for _, j in todo])
    pairs = [pair(i, j) for i, j in todo]
    return pairs, [analyse_pair(p["id"], sa[i], sb[j], p["prefix"].split(), qa[i], qb[j], scorer, sim)
                   for p, (i, j), sim in zip(pairs, todo, sims)]


def explanation(row: dict, basis: str | None, flagged: bool) -> str | None:
    """What a flagged pair's decision rests on, in words (never an empty answer for a flagged pair)."""
    if not flagged:
        return None
    if row.get("conflicts"):
        c = row["conflicts"][0]
        return (f"aligned facts differ: {c['predicate']} / {c['role']}: "
                f"{c['a']['answer']!r} vs {c['b']['answer']!r}")
    if row.get("gated"):
        return "sentence-level conflict (pair encoder): the pair was not parsed (encoder score under the gate)"
    if basis == "encoder" and row["status"] == "no_predicate":
        return "sentence-level conflict (pair encoder): a sentence has no predicate, so no fact could be aligned"
    if basis and "encoder" in basis:
        return "sentence-level conflict (pair encoder): no aligned fact differs"
    return "flagged without a conflicting QA pair to show (the score comes from sentence-level features)"


def prediction(row: dict, p: float | None, threshold: float, basis: str | None = None) -> dict:
    flagged = p is not None and p >= threshold
    out = {"id": row["id"], "status": row["status"], "p_contradiction": p,
           "decision": None if p is None else bool(flagged), "basis": basis,
           "encoder_p": row.get("encoder_p"),
           "a": " ".join(row["a_tokens"]), "b": " ".join(row["b_tokens"]),
           "conflicts": row.get("conflicts", []) if flagged else [],
           "explanation": explanation(row, basis, flagged),
           "messages": row["messages"]}
    if p is not None and p < threshold:
        out["differences"] = row.get("conflicts", [])  # aligned answers that differ, not judged a conflict
    return out


def explain_flagged(rows, probs, threshold: float, pairs, models) -> None:
    """For a model scored on the encoder alone: the QA alignment of the flagged pairs only (a few
    percent of all), so that a flagged pair still names the conflicting QA pairs; the score stays
    the encoder's."""
    from models.contradiction import analyse_pairs

    flagged = [i for i, p in enumerate(probs) if p is not None and p >= threshold]
    for i, r in zip(flagged, analyse_pairs([pairs[i] for i in flagged], *models)):
        rows[i].update(qas_a=r.get("qas_a"), qas_b=r.get("qas_b"), conflicts=r.get("conflicts", []),
                       aligned=r.get("aligned", []))
        if r["status"] == "no_predicate":
            rows[i]["messages"] = rows[i]["messages"] + r["messages"]


def by_generator(pairs: list[dict], labels, decided) -> dict:
    """P / R / F1 per generator, when the pairs (or their facts) name more than one."""
    gens = list(dict.fromkeys(str(p.get("generator")) for p in pairs))
    if len(gens) < 2:
        return {}
    of = np.array([str(p.get("generator")) for p in pairs])
    return {g: binary_prf(labels[of == g], decided[of == g]) for g in gens}


def pair_facts(row: dict, pair: dict | None) -> dict:
    """What the metrics read of a pair beyond its prediction: kept per pair, so that the merge of a sharded run
    computes metrics.json from the shards' rows exactly as one process does."""
    from models.contradiction import entailment_only

    return {"gated": bool(row.get("gated")), "entailment_only": entailment_only(row),
            # an encoder-only model computes no lexical features: its pairs never count as numbers differing
            "numbers_differ": bool(row["features"].get("sentence_numbers_differ", 0) > 0)
            if row["status"] == "ok" and "features" in row else False,
            "generator": pair.get("generator") if pair is not None else None}


def metrics_of(preds: list[dict], facts: list[dict], info: dict) -> dict:
    """metrics.json: a function of the predictions, their facts and the model's thresholds alone."""
    threshold, gate = info["threshold"], info["gate"]
    statuses = {s: sum(p["status"] == s for p in preds) for s in sorted({p["status"] for p in preds})}
    bases = {str(b): sum(p["basis"] == b for p in preds) for b in dict.fromkeys(p["basis"] for p in preds)}
    summary = {"pairs": len(preds), "statuses": statuses, "basis": bases, "flagged": sum(bool(p["decision"]) for p in preds),
               "flagged_without_aligned_fact": sum(bool(p["decision"]) and not p["conflicts"] for p in preds),
               "gate": gate, "parsed": sum(not f["gated"] for f in facts) if gate else None, "threshold": threshold}
    if info["labelled"] and all(p.get("label") is not None for p in preds):
        labels = np.array([p["label"] for p in preds])
        decided = np.array([bool(p["decision"]) for p in preds])
        probs = [p["p_contradiction"] for p in preds]
        t_ent = info["entailment_only_threshold"] or 0.5
        scored = [i for i, p in enumerate(probs) if p is not None]
        auc = float(roc_auc_score(labels[scored], [probs[i] for i in scored])) if len(set(labels[scored])) > 1 else None
        baselines = {"always_contradiction": binary_prf(labels, np.ones(len(labels), bool)),
                     "chatgpt_published": CHATGPT_PUBLISHED}
        if info["uses_alignment"] and not gate:  # they need every pair parsed (gate=0)
            ent = [f["entailment_only"] for f in facts]
            baselines.update(
                lexical_numbers_differ=binary_prf(labels, [f["numbers_differ"] for f in facts]),
                entailment_only={**binary_prf(labels, [e is not None and e >= t_ent for e in ent]), "threshold": t_ent})
        summary = {**binary_prf(labels, decided), "threshold": threshold, "auc": auc, **summary,
                   "by_generator": by_generator(facts, labels, decided), "baselines": baselines}
    return summary


def write_outputs(preds: list[dict], facts: list[dict], info: dict, out_dir: Path, html: bool = True) -> dict:
    """predictions.jsonl, metrics.json and report.html: the one-process run and the merge of a sharded one write
    them here, so the same predictions give the same bytes."""
    out_dir.mkdir(parents=True, exist_ok=True)
    with (out_dir / "predictions.jsonl").open("w", encoding="utf-8") as f:
        for p in preds:
            f.write(json.dumps(p, ensure_ascii=False) + "\n")
    summary = metrics_of(preds, facts, info)
    (out_dir / "metrics.json").write_text(json.dumps(summary, indent=1))
    if html:
        from evaluation.contradiction_html import write_page

        write_page(preds, out_dir / "report.html")
    return summary


def merge_outputs(rows: list[dict], out_dir: Path, infos: list[dict]) -> dict:
    """evaluation.merge's writer for a sweep of this entry point: the one-process files from the shards' rows."""
    if any(i != infos[0] for i in infos):
        raise ShardError(f"the shards scored with different thresholds or gates: {infos}")
    return write_outputs([r["prediction"] for r in rows], [r["facts"] for r in rows], infos[0], out_dir)


class Scorer:
    """The contradiction model and the components it reads, loaded once (on the first call), and the scoring of a
    list of pairs, or of two texts' sentence pairs."""

    def __init__(self, cfg: DictConfig):
        self.cfg, self.loaded = cfg, False

    def load(self) -> None:
        from models.contradiction import load_components, load_contradiction_model

        cfg = self.cfg
        # one model, or a seed ensemble (models/contradiction/ensemble.py): scored the same way
        self.model = load_contradiction_model(resolve_model_path(cfg.contradiction), batch_size=int(cfg.batch_size))
        self.threshold = float(cfg.threshold) if cfg.threshold is not None else self.model.threshold
        # an encoder-only model needs no detector, parser or entailment classifier to score; given them,
        # it aligns the QAs of the pairs it flags, to say which fact conflicts
        self.have_components = bool(cfg.parser and cfg.detector and cfg.entailment)
        if self.model.uses_alignment and not self.have_components:
            raise DataFormatError(f"{cfg.contradiction} uses the QA alignment: give parser=, detector= and entailment=")
        self.models = load_components(cfg.parser, cfg.detector, cfg.entailment, int(cfg.batch_size)) \
            if self.have_components else (None, None, None, None)
        self.gate = self.model.gate if cfg.gate is None else (float(cfg.gate) or None)
        self.loaded = True

    def info(self, labelled: bool) -> dict:
        return {"threshold": self.threshold, "gate": self.gate, "uses_alignment": self.model.uses_alignment,
                "entailment_only_threshold": self.model.info.get("entailment_only_threshold"), "labelled": labelled}

    def score(self, pairs: list[dict] | None, texts: tuple[str, str] | None = None) -> tuple[list[dict], list[dict]]:
        """(predictions, facts) of the pairs (or of the sentence pairs of two texts), in order."""
        from models.contradiction import add_encoder_scores, align_passing, analyse_pairs, encoder_probs

        if not self.loaded:
            self.load()
        model = self.model
        scoring_models = self.models if model.uses_alignment else (None, None, None, None)
        if pairs is not None and self.gate and model.uses_alignment and model.encoder is not None:
            # the encoder first; only the pairs it scores at or over the gate are parsed
            rows = analyse_pairs(pairs)
            add_encoder_scores(rows, encoder_probs(rows, pairs, model.encoder))
            rows = align_passing(rows, pairs, self.gate, scoring_models)
        else:
            if pairs is not None:
                rows = analyse_pairs(pairs, *scoring_models)
            else:
                pairs_in, rows = sentence_pairs(*texts, *scoring_models)
            if model.encoder is not None:
                add_encoder_scores(rows, encoder_probs(rows, pairs if pairs is not None else pairs_in, model.encoder))
        probs = model.probabilities(rows)
        if not model.uses_alignment and self.have_components:
            explain_flagged(rows, probs, self.threshold, pairs if pairs is not None else pairs_in, self.models)
        preds = [prediction(r, p, self.threshold, model.basis(r)) for r, p in zip(rows, probs)]
        if pairs is not None:  # the gold label beside each decision (null where the file has none)
            for pred, pair in zip(preds, pairs):
                pred["label"] = pair["label"]
        facts = [pair_facts(r, pair) for r, pair in zip(rows, pairs if pairs is not None else [None] * len(rows))]
        return preds, facts


def run(cfg: DictConfig, run_dir: Path) -> dict:
    from models.release import apply_release

    pairs, texts = read_input(cfg)
    if pairs is not None:  # a merge matches predictions to pairs by id
        try:
            refuse_repeated_ids([str(p["id"]) for p in pairs], cfg.pairs)
        except ShardError as e:
            raise DataFormatError(f"{e}; nothing was scored") from None
    try:
        shard = shard_from_config(cfg, run_dir)
    except ShardError as e:
        raise DataFormatError(str(e)) from None
    if shard is not None and pairs is None:
        raise DataFormatError("sharded scoring reads a pairs file: give pairs=FILE.jsonl")
    settings = settings_of(cfg)
    apply_release(cfg)  # release=DIR: the four checkpoints from its manifest, checked before any loads
    if not cfg.contradiction:
        raise DataFormatError("give release=DIR (bash scripts/release.sh), or contradiction=R/contradiction")
    scorer = Scorer(cfg)
    labelled = pairs is not None

    if shard is not None:
        def score(chunk: list[dict]) -> tuple[list[dict], dict]:
            if not scorer.loaded:
                scorer.load()
            preds, facts = scorer.score(chunk) if chunk else ([], [])
            return [{"id": p["id"], "prediction": p, "facts": f} for p, f in zip(preds, facts)], scorer.info(labelled)

        try:
            done = run_shard(shard, "evaluation.contradiction", Path(hydra.utils.to_absolute_path(cfg.pairs)), pairs,
                             [str(p["id"]) for p in pairs], settings, score, int(cfg.shard.chunk))
        except ShardError as e:
            raise DataFormatError(str(e)) from None
        return {"pairs": done["records"], "shard": done["index"], "shards": done["count"]}

    scorer.load()
    start = time.perf_counter()
    preds, facts = scorer.score(pairs, texts)
    seconds = time.perf_counter() - start
    summary = write_outputs(preds, facts, scorer.info(labelled), run_dir, bool(cfg.html))
    # the time it took stays out of metrics.json (the same predictions, the same bytes), in run.json
    rate = len(preds) / seconds if seconds else None
    (run_dir / "run.json").write_text(json.dumps({"seconds": round(seconds, 3), "pairs_per_second": rate}, indent=1))
    if "f1" in summary:
        log.info("contradiction P %.3f / R %.3f / F1 %.3f on %d pairs (%d positives); %.1f pairs/s",
                 summary["precision"], summary["recall"], summary["f1"], summary["n"], summary["positives"], rate or 0)
    log.info("wrote %s (%d pairs, %d flagged, statuses %s)", run_dir, len(preds), summary["flagged"], summary["statuses"])
    return {**summary, "pairs_per_second": rate}


@hydra.main(version_base="1.3", config_path="../conf", config_name="eval_contradiction")
def main(cfg: DictConfig) -> None:
    from hydra.core.hydra_config import HydraConfig

    try:
        run_with_summary(log, "evaluation.contradiction", cfg, lambda: run(cfg, Path(HydraConfig.get().runtime.output_dir)),
                         lambda s: s["pairs"], "pairs")
    except DataFormatError as e:  # names the file and line: a traceback adds nothing
        log.error("%s", e)
        sys.exit(1)


if __name__ == "__main__":
    from models.memory import use_jemalloc

    use_jemalloc()  # before anything allocates: RSS held down on long runs (models/memory.py)
    main()
