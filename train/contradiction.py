"""Train the self-contradiction scorer (models/contradiction.py) on the ChatProtect validation pairs:

    python -m train.contradiction parser=P detector=DET entailment=E hydra.run.dir=R

Everything is chosen by cross-validation on validation, grouped by prompt (no prompt in two folds):
the feature set, the regularisation C, and the decision threshold (the best contradiction-class F1
of the out-of-fold probabilities). The entailment-only baseline's threshold is chosen the same way.
The final model is fit on all of validation. Writes R/contradiction/contradiction.json (the model,
its threshold, and what it was trained with) and R/cv_metrics.json. The test pairs are never read.

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
import numpy as np
from omegaconf import DictConfig, OmegaConf
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import StratifiedGroupKFold

from data_prep.chatprotect import read_pairs
from metrics.contradiction import best_threshold, binary_prf
from models.contradiction import FEATURES, ContradictionModel, analyse_pairs, entailment_only, load_components

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
}


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


def out_of_fold(rows, labels, groups, features, C, folds: int, seed: int, synthetic=None) -> np.ndarray:
    """Out-of-fold P(contradiction) of validation; synthetic rows (if any) only ever train."""
    oof = np.zeros(len(rows))
    for tr, te in StratifiedGroupKFold(folds, shuffle=True, random_state=seed).split(rows, labels, groups):
        model = fit_with([rows[i] for i in tr], labels[tr], features, C, synthetic)
        oof[te] = model.probabilities([rows[i] for i in te])
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


def train(cfg: DictConfig, run_dir: Path) -> dict:
    pairs = read_pairs(hydra.utils.to_absolute_path(cfg.data.train_file))  # bad lines stop here, before any model
    if cfg.data.get("limit"):
        pairs = pairs[: int(cfg.data.limit)]
    if any(p["label"] is None for p in pairs):
        raise ValueError(f"{cfg.data.train_file}: every training pair needs a label")
    syn = cfg.get("synthetic") or {}
    syn_pairs, syn_info = read_synthetic(cfg) if syn.get("enabled") else ([], {})  # a missing file stops here, before any model
    components = load_components(cfg.parser, cfg.detector, cfg.entailment, int(cfg.batch_size))
    rows = analyse_pairs(pairs, *components)
    ok = [i for i, r in enumerate(rows) if r["status"] == "ok"]
    labels = np.array([pairs[i]["label"] for i in ok])
    groups = [pairs[i]["group"] for i in ok]
    ok_rows = [rows[i] for i in ok]
    all_labels = np.array([p["label"] for p in pairs])
    log.info("%d pairs, %d scored (%d contradictions), statuses %s", len(pairs), len(ok), labels.sum(),
             {s: sum(r["status"] == s for r in rows) for s in {r["status"] for r in rows}})

    def on_all(probs_ok: np.ndarray, t: float) -> dict:
        """P/R/F1 over every pair: a pair without a score counts as 'no contradiction' found."""
        decision = np.zeros(len(pairs), bool)
        decision[ok] = probs_ok >= t
        return binary_prf(all_labels, decision)

    weights = [None]  # None: validation only; a number: + the synthetic set at that weight
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
    grid, oofs = [], []
    for name in cfg.cv.feature_sets:
        for C in cfg.cv.C:
            for w in weights:  # without synthetic first: on a tie, max() keeps the simpler model
                extra = None if w is None else (syn_rows, syn_labels, w)
                oofs.append(out_of_fold(ok_rows, labels, groups, FEATURE_SETS[name], float(C), folds, seed, extra))
                t, _ = best_threshold(oofs[-1], labels)
                grid.append({"feature_set": name, "C": float(C), "synthetic": w is not None, "synthetic_weight": w,
                             "threshold": t, "cv": on_all(oofs[-1], t)})
                log.info("CV %-18s C=%-5s synthetic=%-5s F1 %.3f (threshold %.3f)", name, C, w, grid[-1]["cv"]["f1"], t)
    best = max(grid, key=lambda g: g["cv"]["f1"])
    synthetic_only = synthetic_only_grid(cfg, syn_rows, syn_labels, ok_rows, labels, on_all) if syn_pairs else []
    ent = np.array([entailment_only(r) for r in ok_rows])
    t_ent, _ = best_threshold(ent, labels)
    baselines = {"always_contradiction": binary_prf(all_labels, np.ones(len(pairs), bool)),
                 "lexical_numbers_differ": on_all(np.array([r["features"]["sentence_numbers_differ"] for r in ok_rows]), 0.5),
                 "entailment_only": {**on_all(ent, t_ent), "threshold": t_ent}}
    oof_of = dict(zip(ok, oofs[grid.index(best)].tolist()))
    run_dir.mkdir(parents=True, exist_ok=True)
    with (run_dir / "validation_analysis.jsonl").open("w", encoding="utf-8") as f:  # for error analysis
        for i, (p, r) in enumerate(zip(pairs, rows)):
            f.write(json.dumps({"id": p["id"], "label": p["label"], "status": r["status"], "p_oof": oof_of.get(i),
                                "a": p["a"], "b": p["b"], "features": r.get("features"),
                                "conflicts": r.get("conflicts", [])[:3]}, ensure_ascii=False) + "\n")
    extra = (syn_rows, syn_labels, best["synthetic_weight"]) if best["synthetic"] else None
    model = fit_with(ok_rows, labels, FEATURE_SETS[best["feature_set"]], best["C"], extra)
    model.threshold = best["threshold"]
    model.info = {"trained_on": str(cfg.data.train_file), "pairs": len(pairs), "scored": len(ok),
                  "feature_set": best["feature_set"], "C": best["C"], "cv_f1": best["cv"]["f1"],
                  "entailment_only_threshold": t_ent, "parser": str(cfg.parser), "detector": str(cfg.detector),
                  "entailment": str(cfg.entailment),
                  "synthetic": {**syn_info, "used": best["synthetic"], "weight": best["synthetic_weight"]} if syn_info else None}
    model.save(run_dir / "contradiction")
    metrics = {"chosen": best, "grid": grid, "baselines_cv": baselines, "pairs": len(pairs), "scored": len(ok),
               "statuses": {s: sum(r["status"] == s for r in rows) for s in {r["status"] for r in rows}},
               "coef": dict(zip(model.features, model.coef.round(4).tolist()))}
    if syn_info:
        metrics.update(synthetic=syn_info, synthetic_only=synthetic_only)
    (run_dir / "cv_metrics.json").write_text(json.dumps(metrics, indent=1))
    log.info("chosen: %s C=%s synthetic weight %s, CV F1 %.3f (P %.3f / R %.3f) at threshold %.3f; entailment-only CV F1 %.3f",
             best["feature_set"], best["C"], best["synthetic_weight"], best["cv"]["f1"], best["cv"]["precision"], best["cv"]["recall"],
             best["threshold"], baselines["entailment_only"]["f1"])
    return metrics


@hydra.main(version_base="1.3", config_path="../conf", config_name="train_contradiction")
def main(cfg: DictConfig) -> None:
    from hydra.core.hydra_config import HydraConfig

    train(cfg, Path(HydraConfig.get().runtime.output_dir))


if __name__ == "__main__":
    main()
