"""Train the self-contradiction scorer (models/contradiction/model.py):

    python -m train.contradiction parser=P detector=DET entailment=E hydra.run.dir=R
    python -m train.contradiction ... encoder.model=minilm|mpnet        # + a pair encoder (the shipped: mpnet)
    python -m train.contradiction encoder.model=mpnet alignment=false   # the encoder alone, no parser
    python -m train.contradiction ... encoder.stage=final               # one encoder stage alone (run stages at once)

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

import hashlib
import json
import logging
import time
from collections import Counter
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
import numpy as np
from omegaconf import DictConfig, OmegaConf
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import StratifiedGroupKFold

from data_prep.chatprotect import read_pairs
from metrics.contradiction import best_threshold, binary_prf
from models.contradiction import (FEATURES, ContradictionModel, add_encoder_scores, analyse_pairs, entailment_only,
                                  gated, load_components, scorable)
from common.hub import push_folder, write_model_card
from common.secrets import command_line, task_overrides
from models.model_paths import base_model_id
from train.contradiction.encoder import encoder_scores
from train.contradiction.gate import choose_gate
from train.contradiction.selection import RULES, nested_cv, pick, threshold_cell

log = logging.getLogger(__name__)

# Feature sets the cross-validation chooses among: all, without the entailment classifier's
# supports, and the alignment alone (what the QAs say, no sentence-level cues).
FEATURE_SETS = {
    "all": FEATURES,
    "no_support": tuple(f for f in FEATURES if "support" not in f),
    "alignment": ("aligned", "shared_predicates", "aligned_numbers_differ", "aligned_names_differ",
                  "aligned_disjoint", "anchored_numbers_differ", "anchored_names_differ", "anchored_disjoint",
                  "aligned_all_same", "negation_differs"),
    # the strongest single cue (numbers of one kind that differ) and what says whether they are of one event
    "numbers": ("sentence_numbers_differ", "aligned_numbers_differ", "anchored_numbers_differ", "event_differs",
                "numbers_differ_same_event", "sentence_jaccard"),
    "numbers_similarity": ("sentence_numbers_differ", "aligned_numbers_differ", "anchored_numbers_differ",
                           "event_differs", "numbers_differ_same_event", "sentence_jaccard", "sentence_similarity",
                           "numbers_differ_similar"),
    # the pair encoder's logit (models/contradiction/pair_encoder.py), alone and beside the alignment
    "encoder": ("encoder",),
}
FEATURE_SETS.update({f"encoder_{k}": ("encoder", *v) for k, v in list(FEATURE_SETS.items()) if k != "encoder"})


def fit(rows: list[dict], labels: np.ndarray, features, C: float, sample_weight=None) -> ContradictionModel:
    """Without sample_weight, classes balanced by sklearn; with it, the weights carry the balance
    (balanced_weights per source: validation's 8% contradictions and the synthetic set's 50% must
    not be pooled before balancing, or the synthetic rows would set validation's class prior)."""
    X = np.array([[r["features"][f] for f in features] for r in rows])
    mean, std = X.mean(0), X.std(0)
    std[std == 0] = 1.0
    clf = LogisticRegression(C=C, class_weight="balanced" if sample_weight is None else None, max_iter=2000)
    clf.fit((X - mean) / std, labels, sample_weight=sample_weight)
    return ContradictionModel(features, clf.coef_[0], clf.intercept_[0], mean, std)


def balanced_weights(labels: np.ndarray) -> np.ndarray:
    """sklearn's class_weight="balanced" as per-row weights: n / (2 * rows of the row's class)."""
    return len(labels) / (2 * np.bincount(labels, minlength=2)[labels])


def fit_with(rows, labels, features, C, synthetic=None) -> ContradictionModel:
    """fit on rows, plus synthetic = (rows, labels, weight) when given: each source balanced on its
    own, a synthetic row weighing `weight` validation rows."""
    if synthetic is None:
        return fit(rows, labels, features, C)
    s_rows, s_labels, weight = synthetic
    w = np.concatenate([balanced_weights(labels), weight * balanced_weights(s_labels)])
    return fit(list(rows) + list(s_rows), np.concatenate([labels, s_labels]), features, C, w)


def out_of_fold(rows, labels, groups, features, C, folds: int, seed: int, synthetic=None, gate=None) -> np.ndarray:
    """Out-of-fold P(contradiction) of validation; synthetic rows (if any) only ever train; with a
    gate, the held-out rows the encoder scores under it are scored unparsed (train/contradiction/gate.py)."""
    oof = np.zeros(len(rows))
    for tr, te in StratifiedGroupKFold(folds, shuffle=True, random_state=seed).split(rows, labels, groups):
        model = fit_with([rows[i] for i in tr], labels[tr], features, C, synthetic)
        oof[te] = model.probabilities([gated(rows[i], gate) for i in te])
    return oof


def synthetic_only_grid(cfg, syn_rows, syn_labels, rows, labels, on_all) -> list[dict]:
    """Diagnostic: what the synthetic set alone teaches, scored on validation (the threshold chosen
    on validation itself, so the F1 is optimistic; the AUC needs no threshold)."""
    grid = []
    for name in cfg.cv.feature_sets:
        for C in cfg.cv.C:
            p = np.array(fit(syn_rows, syn_labels, FEATURE_SETS[name], float(C)).probabilities(rows))
            t, _ = best_threshold(p, labels)
            grid.append({"feature_set": name, "C": float(C), "threshold": t,
                         "auc": float(roc_auc_score(labels, p)), "validation": on_all(p, t)})
    top = max(grid, key=lambda g: g["validation"]["f1"])
    log.info("synthetic only (best of the grid): %s C=%s, validation F1 %.3f (P %.3f / R %.3f), AUC %.3f",
             top["feature_set"], top["C"], top["validation"]["f1"], top["validation"]["precision"],
             top["validation"]["recall"], top["auc"])
    return grid


def read_synthetic(cfg: DictConfig) -> tuple[list[dict], dict]:
    """The first synthetic.limit pairs of the synthetic set, and its size and kinds (for the model info)."""
    path = Path(hydra.utils.to_absolute_path(cfg.synthetic.file))
    if not path.exists():
        raise FileNotFoundError(f"synthetic set {path} not found: build it with python -m data_prep.synthetic_contradiction")
    limit = int(cfg.synthetic.limit) if cfg.synthetic.get("limit") else None
    pairs = read_pairs(path)[:limit]
    if any(p["label"] is None for p in pairs):
        raise ValueError(f"{path}: every synthetic pair needs a label")
    return pairs, {"file": str(cfg.synthetic.file), "pairs": len(pairs), "contradictions": sum(p["label"] for p in pairs),
                   "kinds": dict(Counter(p.get("kind") for p in pairs))}


def read_labelled(path: str, limit=None) -> list[dict]:
    """Labelled pairs of one file (bad lines stop here, before any model), each tagged with its file."""
    pairs = read_pairs(hydra.utils.to_absolute_path(path))[: int(limit) if limit else None]
    if any(p["label"] is None for p in pairs):
        raise ValueError(f"{path}: every training pair needs a label")
    return [dict(p, file=str(path)) for p in pairs]


def analysed(cfg: DictConfig, pairs: list[dict], components) -> list[dict]:
    """analyse_pairs, file by file, cached on disk (cfg.analysis_cache, keyed by the file, its size,
    the limit and the three checkpoints): the parse of 5,000 pairs is the slow part and the same
    for every encoder and grid."""
    cache = cfg.get("analysis_cache")
    rows: list[dict] = []
    for file in dict.fromkeys(p["file"] for p in pairs):
        part = [p for p in pairs if p["file"] == file]
        path = None
        if cache and components[0] is not None:
            src = Path(hydra.utils.to_absolute_path(file))
            key = hashlib.sha1(json.dumps([str(src.resolve()), src.stat().st_size, len(part), str(cfg.parser),
                                           str(cfg.detector), str(cfg.entailment)]).encode()).hexdigest()[:12]
            path = Path(hydra.utils.to_absolute_path(cache)) / f"{src.stem}-{key}.jsonl"
            if path.exists():
                cached = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
                if [r["id"] for r in cached] == [p["id"] for p in part]:
                    log.info("analysis of %s from the cache %s", file, path)
                    rows += cached
                    continue
        start = time.perf_counter()
        new = analyse_pairs(part, *components)
        log.info("analysed %d pairs of %s in %.0f s", len(part), file, time.perf_counter() - start)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp")
            tmp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in new), encoding="utf-8")
            tmp.rename(path)
        rows += new
    return rows


def feature_sets(cfg: DictConfig, with_encoder: bool, with_alignment: bool) -> list[str]:
    """The configured feature sets this run can compute: the encoder's only with an encoder, the
    alignment's only with the parser."""
    names = [n for n in cfg.cv.feature_sets if (with_encoder or "encoder" not in FEATURE_SETS[n])
             and (with_alignment or FEATURE_SETS[n] == ("encoder",))]
    if not names:
        raise ValueError(f"none of cv.feature_sets={list(cfg.cv.feature_sets)} can be computed with "
                         f"encoder={with_encoder}, alignment={with_alignment}")
    return names


def train(cfg: DictConfig, run_dir: Path) -> dict:
    validation = read_labelled(cfg.data.train_file, cfg.data.get("limit"))
    sel_files = list(cfg.get("selection", {}).get("files") or [])
    pairs = validation + [p for f in sel_files for p in read_labelled(f, cfg.data.get("limit"))]
    enc = cfg.get("encoder") or {}
    with_encoder = bool(enc.get("model") or enc.get("random_config"))
    enc_pairs = [p for f in enc.get("train_files") or [] for p in read_labelled(f, enc.get("limit"))] if with_encoder else []
    report_files = [f for f in enc.get("report_files") or [] if with_encoder]
    report = [p for p in enc_pairs if p["file"] in report_files]
    with_alignment = bool(cfg.get("alignment", True))
    syn = cfg.get("synthetic") or {}
    syn_pairs, syn_info = read_synthetic(cfg) if syn.get("enabled") else ([], {})  # a missing file stops here, before any model
    names = feature_sets(cfg, with_encoder, with_alignment)
    run_dir.mkdir(parents=True, exist_ok=True)
    final_encoder, enc_info = None, {}
    if with_encoder:  # first: the parse below may come from a cache that another run fills meanwhile
        done = encoder_scores(cfg, pairs + report, enc_pairs, run_dir)
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
    labels_all = np.array([p["label"] for p in pairs])
    groups_all = [f"{p['file']}|{p['group']}" for p in pairs]
    statuses = dict(Counter(r["status"] for r in rows))
    log.info("%d selection pairs (%d contradictions) from %s, statuses %s", len(pairs), labels_all.sum(),
             [cfg.data.train_file, *sel_files], statuses)

    def usable(features) -> list[int]:
        return [i for i, r in enumerate(rows) if scorable(r, features)]

    def on_all(idx, probs, t: float, files=None) -> dict:
        """P/R/F1 over every pair (of `files`): a pair without a score counts as 'no contradiction' found."""
        decision = np.zeros(len(pairs), bool)
        decision[idx] = np.asarray(probs) >= t
        keep = [i for i, p in enumerate(pairs) if files is None or p["file"] in files]
        return binary_prf(labels_all[keep], decision[keep])

    def by_file(idx, probs, t) -> dict:
        return {Path(f).stem: on_all(idx, probs, t, {f}) for f in dict.fromkeys(p["file"] for p in pairs)}

    syn_rows, syn_labels, weights = [], np.array([], int), [None]  # None: no synthetic; a number: its weight
    if syn_pairs:
        syn_all = analyse_pairs(syn_pairs, *components)
        syn_ok = [i for i, r in enumerate(syn_all) if r["status"] == "ok"]
        syn_rows, syn_labels = [syn_all[i] for i in syn_ok], np.array([syn_pairs[i]["label"] for i in syn_ok])
        syn_info.update(scored=len(syn_rows), scored_contradictions=int(syn_labels.sum()),
                        statuses=dict(Counter(r["status"] for r in syn_all)))
        log.info("synthetic: %s", syn_info)
        w = syn.get("weight")
        weights += [float(x) for x in (w if OmegaConf.is_list(w) else [w])]

    folds, seed = int(cfg.cv.folds), int(cfg.seed)
    pool_all = list(range(len(pairs)))
    grid, cells = [], []
    for name in names:
        feats = FEATURE_SETS[name]
        idx = usable(feats)
        sub_rows, sub_labels, sub_groups = [rows[i] for i in idx], labels_all[idx], [groups_all[i] for i in idx]
        for C in cfg.cv.C:
            for w in weights if "encoder" not in feats else [None]:  # without synthetic first: ties keep the simpler model
                extra = None if w is None else (syn_rows, syn_labels, w)
                oof = out_of_fold(sub_rows, sub_labels, sub_groups, feats, float(C), folds, seed, extra)
                cell = threshold_cell(name, feats, C, idx, oof, labels_all, pool_all)
                cell.update(synthetic=w is not None)
                cells.append(cell)
                t = cell["threshold"]
                grid.append({"feature_set": name, "C": float(C), "synthetic": w is not None, "synthetic_weight": w,
                             "threshold": t, "cv": on_all(idx, oof, t), "cv_by_file": by_file(idx, oof, t),
                             "auc": float(roc_auc_score(sub_labels, oof)) if len(set(sub_labels)) > 1 else None})
                log.info("CV %-28s C=%-5s synthetic=%-5s F1 %.3f (threshold %.3f)", name, C, w, grid[-1]["cv"]["f1"], t)
    rule = str(cfg.cv.get("rule") or "best")
    chosen_cell, how = pick(cells, rule, labels_all, groups_all, seed)
    best = grid[next(k for k, c in enumerate(cells) if c is chosen_cell)]
    best["rule"] = how
    log.info("cv.rule=%s: %s C=%s (CV F1 %.3f; the best cell's %.3f%s)", rule, best["feature_set"], best["C"],
             best["cv"]["f1"], how["best_f1"], f", SE {how['se']:.3f}" if "se" in how else "")
    best_idx, best_oof = chosen_cell["idx"], chosen_cell["oof"]
    nested = nested_selection(cfg, names, rows, labels_all, groups_all, usable) if cfg.cv.get("nested", True) else None
    ok = usable(FEATURE_SETS[best["feature_set"]])
    ok_rows, labels = [rows[i] for i in ok], labels_all[ok]
    synthetic_only = synthetic_only_grid(cfg, syn_rows, syn_labels, ok_rows, labels,
                                         lambda p, t: on_all(ok, p, t)) if syn_pairs else []
    baselines = {"always_contradiction": binary_prf(labels_all, np.ones(len(pairs), bool))}
    plain = [i for i, r in enumerate(rows) if r["status"] == "ok" and "support_a" in r]
    t_ent = None
    if plain:
        ent = np.array([entailment_only(rows[i]) for i in plain])
        t_ent, _ = best_threshold(ent, labels_all[plain])
        baselines.update(lexical_numbers_differ=on_all(plain, [rows[i]["features"]["sentence_numbers_differ"] for i in plain], 0.5),
                         entailment_only={**on_all(plain, ent, t_ent), "threshold": t_ent})
    if with_encoder:
        e_idx = [i for i, r in enumerate(rows) if "encoder_p" in r]
        e_p = np.array([rows[i]["encoder_p"] for i in e_idx])
        t_e, _ = best_threshold(e_p, labels_all[e_idx])
        baselines["encoder_alone"] = {**on_all(e_idx, e_p, t_e), "threshold": t_e, "by_file": by_file(e_idx, e_p, t_e),
                                      "auc": float(roc_auc_score(labels_all[e_idx], e_p))}
        enc_info["report_at_selection_threshold"] = report_by_generator(report, scores[len(pairs):], t_e)
    oof_of = dict(zip(best_idx, best_oof.tolist()))
    with (run_dir / "validation_analysis.jsonl").open("w", encoding="utf-8") as f:  # for error analysis
        for i, (p, r) in enumerate(zip(pairs, rows)):
            f.write(json.dumps({"id": p["id"], "file": Path(p["file"]).stem, "label": p["label"], "status": r["status"],
                                "p_oof": oof_of.get(i), "encoder_p": r.get("encoder_p"), "a": p["a"], "b": p["b"],
                                "features": r.get("features"), "conflicts": r.get("conflicts", [])[:3]},
                               ensure_ascii=False) + "\n")
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
                  if model.uses_encoder else None, "encoder_bf16": bool(enc.get("bf16")) if model.uses_encoder else False,
                  "synthetic": {**syn_info, "used": best["synthetic"], "weight": best["synthetic_weight"]} if syn_info else None}
    model.save(run_dir / "contradiction")
    metrics = {"chosen": best, "nested_cv": nested, "grid": grid, "baselines_cv": baselines, "pairs": len(pairs), "scored": len(ok),
               "statuses": statuses, "coef": dict(zip(model.features, model.coef.round(4).tolist())),
               "encoder": enc_info or None}
    if syn_info:
        metrics.update(synthetic=syn_info, synthetic_only=synthetic_only)
    (run_dir / "cv_metrics.json").write_text(json.dumps(metrics, indent=1))
    if cfg.get("hub") and cfg.hub.get("push"):
        metrics["hub_url"] = publish(cfg, model, run_dir / "contradiction", best)  # None when the push failed (logged; folder kept)
        (run_dir / "cv_metrics.json").write_text(json.dumps(metrics, indent=1))
    log.info("chosen: %s C=%s synthetic weight %s, CV F1 %.3f (P %.3f / R %.3f) at threshold %.3f; by file %s",
             best["feature_set"], best["C"], best["synthetic_weight"], best["cv"]["f1"], best["cv"]["precision"],
             best["cv"]["recall"], best["threshold"], {k: round(v["f1"], 3) for k, v in best["cv_by_file"].items()})
    return metrics


def nested_selection(cfg: DictConfig, names, rows, labels_all, groups_all, usable) -> dict:
    """Nested CV of the grid under each cv.rule (train/contradiction/selection.py): the selection
    procedure's own F1, without the optimism of reading the best of many cells on the same folds.
    Synthetic cells are left out. Needs twice cv.folds prompts (the inner grid still splits)."""
    folds, seed = int(cfg.cv.folds), int(cfg.seed)
    if len(set(groups_all)) < 2 * folds or labels_all.sum() < 2 * folds:
        log.info("nested CV skipped: %d prompts, %d contradictions (needs %d of each)", len(set(groups_all)),
                 labels_all.sum(), 2 * folds)
        return {"skipped": f"{len(set(groups_all))} prompts, {int(labels_all.sum())} contradictions"}

    def grid(pool: list[int]) -> list[dict]:
        cells, keep = [], set(pool)
        for name in names:
            feats = FEATURE_SETS[name]
            idx = [i for i in usable(feats) if i in keep]
            for C in cfg.cv.C:
                oof = out_of_fold([rows[i] for i in idx], labels_all[idx], [groups_all[i] for i in idx], feats,
                                  float(C), folds, seed)
                cells.append(threshold_cell(name, feats, C, idx, oof, labels_all, pool))
        return cells

    def decide(cell: dict, train_pool: list[int], test_pool: list[int]) -> np.ndarray:
        feats, keep = FEATURE_SETS[cell["feature_set"]], set(usable(FEATURE_SETS[cell["feature_set"]]))
        tr = [i for i in train_pool if i in keep]
        model = fit([rows[i] for i in tr], labels_all[tr], feats, cell["C"])
        te = [k for k, i in enumerate(test_pool) if i in keep]
        out = np.zeros(len(test_pool), bool)
        out[te] = np.array(model.probabilities([rows[test_pool[k]] for k in te])) >= cell["threshold"]
        return out

    start = time.perf_counter()
    result = nested_cv(len(rows), labels_all, groups_all, grid, decide, RULES, folds, seed)
    for r, v in result.items():
        log.info("nested CV, rule %s: F1 %.3f (P %.3f / R %.3f); outer folds chose %s", r, v["f1"], v["precision"],
                 v["recall"], [f"{c['feature_set']}@{c['C']:g}" for c in v["chosen"]])
    log.info("nested CV: %.0f s", time.perf_counter() - start)
    return result


def publish(cfg: DictConfig, model, folder: Path, best: dict) -> str | None:
    """The model card (CV figures by file) and a push of R/contradiction to hub.repo_id; a failed
    push keeps the folder and returns None (common.hub logs why)."""
    results = [{"task_type": "text-classification", "dataset_type": "chatprotect", "dataset_name": f"ChatProtect {name} (CV)",
                "dataset_split": "validation", "metric_type": "f1", "metric_name": f"contradiction F1 ({name}, CV)",
                "value": row["f1"]} for name, row in best["cv_by_file"].items()]
    needs = (f" It aligns QAs with the parser {model.info['parser']}, the detector {model.info['detector']} and the "
             f"entailment classifier {model.info['entailment']}.") if model.uses_alignment else ""
    write_model_card(folder, model_name=cfg.hub.repo_id.split("/")[-1],
                     description="Self-contradiction scorer: two sentences one model wrote in one context -> "
                                 "P(contradiction) and the conflicting QA pairs. Load with "
                                 "models.contradiction.ContradictionModel.load(REPO_ID)." + needs,
                     results=results, datasets=["eth-sri/chatprotect"], command=command_line("train.contradiction", task_overrides()),
                     base_model=base_model_id(cfg.encoder.get("model")) if model.uses_encoder else None,
                     tags=["qasem", "self-contradiction"])
    return push_folder(folder, cfg.hub.repo_id, private=bool(cfg.hub.get("private", True)),
                       commit_message=f"contradiction scorer, CV F1 {best['cv']['f1']:.3f}")


def report_by_generator(pairs: list[dict], scores: list[float], threshold: float | None = None) -> dict:
    """The encoder's out-of-fold AUC (and P/R/F1 at `threshold`) on report-only pairs, per file and generator."""
    out = {}
    for key in dict.fromkeys((Path(p["file"]).stem, p.get("generator")) for p in pairs):
        idx = [i for i, p in enumerate(pairs) if (Path(p["file"]).stem, p.get("generator")) == key]
        y, s = np.array([pairs[i]["label"] for i in idx]), np.array([scores[i] for i in idx])
        out[f"{key[0]}/{key[1]}"] = {"pairs": len(idx), "positives": int(y.sum()),
                                     "auc": float(roc_auc_score(y, s)) if len(set(y)) > 1 else None,
                                     **(binary_prf(y, s >= threshold) if threshold is not None else {})}
    return out


@hydra.main(version_base="1.3", config_path="../../conf", config_name="train_contradiction")
def main(cfg: DictConfig) -> None:
    train(cfg, Path(HydraConfig.get().runtime.output_dir))
