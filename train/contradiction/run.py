"""Train the self-contradiction scorer (models/contradiction/model.py):

    python -m train.contradiction parser=P detector=DET entailment=E hydra.run.dir=R
    python -m train.contradiction ... encoder.model=minilm|mpnet        # + a pair encoder (the shipped: mpnet)
    python -m train.contradiction encoder.model=mpnet alignment=false   # the encoder alone, no parser
    python -m train.contradiction ... encoder.stage=final               # one encoder stage alone (run stages at once)
    python -m train.contradiction +experiment=X "ensemble.members=[R13,R14]" hydra.run.dir=E   # finished seeds as one scorer

Selection pairs: ChatProtect validation (human labels) + `selection.files` (chatgpt.big: the release
detector's labels, 100 other prompts). With `encoder.model`, a cross-encoder (models/contradiction/pair_encoder.py)
is fine-tuned on `encoder.train_files` (chatgpt.big + popqa), and every selection pair gets an
out-of-sample encoder score (train/contradiction/encoder.py: folds over chatgpt.big's prompts; the
final encoder for validation). Then everything is chosen by cross-validation over the selection
pairs grouped by prompt (no prompt in two folds): the feature set (the encoder's logit, the QA
alignment's features, or both), the regularisation C, and the decision threshold (the best
contradiction-class F1 of the pooled out-of-fold probabilities). The figures are also given per
file (validation apart from chatgpt.big). The final model is fit on all selection pairs. Writes
R/contradiction/ (contradiction.json: the model, its threshold, what it was trained with; encoder/:
the final pair encoder when the chosen features use it), R/cv_metrics.json, and R/encoder/ (one
resumable stage per encoder). The test pairs are never read. The parse of each file is cached
(`analysis_cache`), so runs that differ only in the encoder or the grid parse once.

`synthetic.enabled=true` adds a synthetic set from the QA-SRL / QANom training sentences
(data_prep.synthetic_contradiction: an answer replaced by another of its role = contradiction, an
argument dropped or added = none). Its pairs are analysed like validation's and, in the grid's
"with synthetic" cells, ALL of them join every fold's training part (each row weighted
`synthetic.weight` relative to a validation row) and never its evaluated part; so whether to use
them, and at what weight, is chosen by the same validation CV F1. A model trained on the synthetic
set alone is scored on validation as a diagnostic (`synthetic_only` in cv_metrics.json).
"""
from __future__ import annotations

import json
import logging
from collections import Counter
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
import numpy as np
from omegaconf import DictConfig, OmegaConf
from sklearn.metrics import roc_auc_score

from metrics.contradiction import best_f1_threshold, binary_prf
from models.contradiction import add_encoder_scores, analyse_pairs, entailment_only, load_components
from train.contradiction.encoder import encoder_scores
from train.contradiction.fitting import FEATURE_SETS, feature_sets, fit_with, out_of_fold
from train.contradiction.gate import choose_gate
from train.contradiction.grid import nested_selection, report_by_generator, search, synthetic_only_grid
from train.contradiction.inputs import analysed, read_labelled, read_synthetic
from train.contradiction.pairs import SelectionPairs
from train.contradiction.publish import publish
from train.contradiction.seed_ensemble import assemble
from train.contradiction.threshold import check_human, choose_threshold
from train.resume import parse_resume, refuse_path_for_stages

log = logging.getLogger(__name__)


def train(cfg: DictConfig, run_dir: Path) -> dict:
    refuse_path_for_stages(parse_resume(cfg.resume), "train.contradiction", "R/encoder/<stage>/checkpoints")
    validation = read_labelled(cfg.data.train_file, cfg.data.limit)
    sel_files = list(cfg.selection.files or [])
    pairs = validation + [p for f in sel_files for p in read_labelled(f, cfg.data.limit)]
    enc = cfg.encoder
    with_encoder = bool(enc.model or enc.random_config)
    enc_pairs = [p for f in enc.train_files or [] for p in read_labelled(f, enc.limit)] if with_encoder else []
    report_files = [f for f in enc.report_files or [] if with_encoder]
    report = [p for p in enc_pairs if p["file"] in report_files]
    with_alignment = bool(cfg.alignment)
    syn = cfg.synthetic
    syn_pairs, syn_info = read_synthetic(cfg) if syn.enabled else ([], {})  # a missing file stops here, before any model
    names = feature_sets(cfg, with_encoder, with_alignment)
    rules, human = threshold_rules(cfg, pairs, sel_files)  # a rule needing human labels and finding none stops here
    run_dir.mkdir(parents=True, exist_ok=True)
    final_encoder, enc_info = None, {}
    if with_encoder:  # first: the parse below may come from a cache that another run fills meanwhile
        done = encoder_scores(cfg, pairs + report, enc_pairs, run_dir, calibration_files={p["file"] for p in pairs})
        if done is None:  # encoder.stage: that stage alone
            log.info("encoder stage %s trained; run without encoder.stage to finish", enc.stage)
            return {"encoder_stage": str(enc.stage)}
        scores, final_encoder, enc_info = done
        enc_info["report"] = report_by_generator(report, scores[len(pairs):])
    components = load_components(cfg.parser, cfg.detector, cfg.entailment, int(cfg.batch_size)) if with_alignment \
        else (None, None, None, None)
    rows = analysed(cfg, pairs, components)
    if with_encoder:
        add_encoder_scores(rows, scores[:len(pairs)])
    sel = SelectionPairs(pairs, rows)
    labels_all, groups_all, usable, on_all, by_file = sel.labels, sel.groups, sel.usable, sel.on_all, sel.by_file
    statuses = dict(Counter(r["status"] for r in rows))
    log.info("%d selection pairs (%d contradictions) from %s, statuses %s", len(pairs), labels_all.sum(),
             [cfg.data.train_file, *sel_files], statuses)

    syn_rows, syn_labels, weights = [], np.array([], int), [None]  # None: no synthetic; a number: its weight
    if syn_pairs:
        syn_all = analyse_pairs(syn_pairs, *components)
        syn_ok = [i for i, r in enumerate(syn_all) if r["status"] == "ok"]
        syn_rows, syn_labels = [syn_all[i] for i in syn_ok], np.array([syn_pairs[i]["label"] for i in syn_ok])
        syn_info.update(scored=len(syn_rows), scored_contradictions=int(syn_labels.sum()),
                        statuses=dict(Counter(r["status"] for r in syn_all)))
        log.info("synthetic: %s", syn_info)
        w = syn.weight
        weights += [float(x) for x in (w if OmegaConf.is_list(w) else [w])]

    folds, seed = int(cfg.cv.folds), int(cfg.seed)
    grid, best, chosen_cell = search(cfg, names, rows, labels_all, groups_all, usable, on_all, by_file,
                                     (syn_rows, syn_labels, weights))
    best_idx, best_oof = chosen_cell["idx"], chosen_cell["oof"]
    best = apply_threshold_rule(cfg, rules, best, best_idx, best_oof, labels_all, human, groups_all, on_all, by_file)
    nested = nested_selection(cfg, names, rows, labels_all, groups_all, usable) if cfg.cv.nested else None
    ok = usable(FEATURE_SETS[best["feature_set"]])
    ok_rows, labels = [rows[i] for i in ok], labels_all[ok]
    synthetic_only = synthetic_only_grid(cfg, syn_rows, syn_labels, ok_rows, labels,
                                         lambda p, t: on_all(ok, p, t)) if syn_pairs else []
    baselines, t_ent, t_e = baselines_cv(rows, labels_all, on_all, by_file)
    if t_e is not None:
        enc_info["report_at_selection_threshold"] = report_by_generator(report, scores[len(pairs):], t_e)
    write_analysis(run_dir / "validation_analysis.jsonl", pairs, rows, dict(zip(best_idx, best_oof.tolist())))
    extra = (syn_rows, syn_labels, best["synthetic_weight"]) if best["synthetic"] else None
    model = fit_with(ok_rows, labels, FEATURE_SETS[best["feature_set"]], best["C"], extra)
    model.threshold = best["threshold"]
    if with_encoder and with_alignment and not best["synthetic"]:
        feats, groups = FEATURE_SETS[best["feature_set"]], [groups_all[i] for i in ok]
        gate = choose_gate(cfg, ok_rows, feats, best_oof,
                           lambda g: out_of_fold(ok_rows, labels, groups, feats, best["C"], folds, seed, gate=g),
                           best["threshold"], lambda oof, t: on_all(ok, oof, t))
        model.gate = gate["chosen"]
        enc_info["gate"] = gate
    model.encoder = final_encoder if model.uses_encoder else None
    model.info = {"trained_on": [str(cfg.data.train_file), *sel_files], "pairs": len(pairs), "scored": len(ok),
                  "feature_set": best["feature_set"], "C": best["C"], "cv_f1": best["cv"]["f1"],
                  "entailment_only_threshold": t_ent, "parser": str(cfg.parser) if model.uses_alignment else None,
                  "detector": str(cfg.detector) if model.uses_alignment else None,
                  "entailment": str(cfg.entailment) if model.uses_alignment else None,
                  "encoder": {**dict(OmegaConf.to_container(enc, resolve=True)), "final": enc_info.get("stages", {}).get("final")}
                  if model.uses_encoder else None, "encoder_bf16": bool(enc.trainer.args.bf16) if model.uses_encoder else False,
                  "synthetic": {**syn_info, "used": best["synthetic"], "weight": best["synthetic_weight"]} if syn_info else None}
    model.save(run_dir / "contradiction")
    metrics = {"chosen": best, "nested_cv": nested, "grid": grid, "baselines_cv": baselines, "pairs": len(pairs), "scored": len(ok),
               "statuses": statuses, "coef": dict(zip(model.features, model.coef.round(4).tolist())),
               "encoder": enc_info or None}
    if syn_info:
        metrics.update(synthetic=syn_info, synthetic_only=synthetic_only)
    (run_dir / "cv_metrics.json").write_text(json.dumps(metrics, indent=1))
    if cfg.hub.push:
        metrics["hub_url"] = publish(cfg, model, run_dir / "contradiction", best)  # None when the push failed (logged; folder kept)
        (run_dir / "cv_metrics.json").write_text(json.dumps(metrics, indent=1))
    log.info("chosen: %s C=%s synthetic weight %s, CV F1 %.3f (P %.3f / R %.3f) at threshold %.3f; by file %s",
             best["feature_set"], best["C"], best["synthetic_weight"], best["cv"]["f1"], best["cv"]["precision"],
             best["cv"]["recall"], best["threshold"], {k: round(v["f1"], 3) for k, v in best["cv_by_file"].items()})
    return metrics


def threshold_rules(cfg: DictConfig, pairs: list[dict], sel_files: list) -> tuple:
    """(cv.threshold_rule as a rule or a list, which selection pairs carry human labels)."""
    rule = cfg.cv.threshold_rule or "pooled"
    rules = [str(r) for r in rule] if OmegaConf.is_list(rule) else str(rule)
    human_files = [str(f) for f in (cfg.selection.human_files or [cfg.data.train_file])]
    resolved = {str(Path(hydra.utils.to_absolute_path(f)).resolve()) for f in human_files}
    human = np.array([str(Path(hydra.utils.to_absolute_path(p["file"])).resolve()) in resolved for p in pairs], bool)
    check_human(rules, human, [str(cfg.data.train_file), *map(str, sel_files)], human_files)
    return rules, human


def apply_threshold_rule(cfg, rules, best: dict, idx, oof, labels_all, human, groups_all, on_all, by_file) -> dict:
    """The chosen cell with its threshold from cv.threshold_rule (train/contradiction/threshold.py) and its
    CV figures at that threshold; the pooled-F1 threshold the grid used stays as `pooled_threshold`.
    Every pair takes part: an unscored one with P 0, never flagged, as in the CV's figures."""
    p, scored = np.zeros(len(labels_all)), np.zeros(len(labels_all), bool)
    p[idx], scored[idx] = oof, True
    chosen = choose_threshold(rules, p, labels_all, human, groups_all, int(cfg.cv.folds),
                              int(cfg.cv.threshold_repeats), int(cfg.seed), scored)
    t = chosen["threshold"]
    out = {**best, "pooled_threshold": best["threshold"], "threshold": t, "threshold_rule": chosen,
           "cv": on_all(idx, oof, t), "cv_by_file": by_file(idx, oof, t)}
    for r, v in chosen["by_rule"].items():
        if "f1_mean" in v:
            log.info("threshold rule %-8s %.3f: held-out human F1 %.3f ± %.3f over refolds (± %.3f over prompts), "
                     "P %.3f / R %.3f", r, v["threshold"], v["f1_mean"], v["f1_sd"], v["f1_se_prompts"],
                     v["precision_mean"], v["recall_mean"])
    log.info("cv.threshold_rule=%s: threshold %.3f (pooled F1's %.3f)", chosen["rule"], t, best["threshold"])
    return out


def baselines_cv(rows, labels_all, on_all, by_file) -> tuple[dict, float | None, float | None]:
    """The simple rules on the selection pairs, each at its best threshold: always contradiction, the
    numbers-differ cue, the entailment classifier alone, the pair encoder alone (where rows have its P).
    Returns (baselines, the entailment-only threshold, the encoder-alone threshold)."""
    baselines = {"always_contradiction": binary_prf(labels_all, np.ones(len(rows), bool))}
    plain = [i for i, r in enumerate(rows) if r["status"] == "ok" and "support_a" in r]
    t_ent = t_e = None
    if plain:
        ent = np.array([entailment_only(rows[i]) for i in plain])
        t_ent, _ = best_f1_threshold(ent, labels_all[plain])
        baselines.update(lexical_numbers_differ=on_all(plain, [rows[i]["features"]["sentence_numbers_differ"] for i in plain], 0.5),
                         entailment_only={**on_all(plain, ent, t_ent), "threshold": t_ent})
    e_idx = [i for i, r in enumerate(rows) if "encoder_p" in r]
    if e_idx:
        e_p = np.array([rows[i]["encoder_p"] for i in e_idx])
        t_e, _ = best_f1_threshold(e_p, labels_all[e_idx])
        baselines["encoder_alone"] = {**on_all(e_idx, e_p, t_e), "threshold": t_e, "by_file": by_file(e_idx, e_p, t_e),
                                      "auc": float(roc_auc_score(labels_all[e_idx], e_p))}
    return baselines, t_ent, t_e


def write_analysis(path: Path, pairs: list[dict], rows: list[dict], oof_of: dict) -> None:
    """Every selection pair with its label, status, out-of-fold P and features, for error analysis."""
    with path.open("w", encoding="utf-8") as f:
        for i, (p, r) in enumerate(zip(pairs, rows)):
            f.write(json.dumps({"id": p["id"], "file": Path(p["file"]).stem, "label": p["label"], "status": r["status"],
                                "p_oof": oof_of.get(i), "encoder_p": r.get("encoder_p"), "a": p["a"], "b": p["b"],
                                "features": r.get("features"), "conflicts": r.get("conflicts", [])[:3]},
                               ensure_ascii=False) + "\n")


@hydra.main(version_base="1.3", config_path="../../conf", config_name="train_contradiction")
def main(cfg: DictConfig) -> None:
    run_dir = Path(HydraConfig.get().runtime.output_dir)
    if cfg.ensemble.members:  # the recipe's finished seeds as one scorer (train/contradiction/seed_ensemble.py)
        assemble(cfg, run_dir)
    else:
        train(cfg, run_dir)
