"""Train the self-contradiction scorer (models/contradiction.py) on the ChatProtect validation pairs:

    python -m train.contradiction parser=P detector=DET entailment=E hydra.run.dir=R

Everything is chosen by cross-validation on validation, grouped by prompt (no prompt in two folds):
the feature set, the regularisation C, and the decision threshold (the best contradiction-class F1
of the out-of-fold probabilities). The entailment-only baseline's threshold is chosen the same way.
The final model is fit on all of validation. Writes R/contradiction/contradiction.json (the model,
its threshold, and what it was trained with) and R/cv_metrics.json. The test pairs are never read.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path

import hydra
import numpy as np
from omegaconf import DictConfig
from sklearn.linear_model import LogisticRegression
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


def fit(rows: list[dict], labels: np.ndarray, features, C: float) -> ContradictionModel:
    X = np.array([[r["features"][f] for f in features] for r in rows])
    mean, std = X.mean(0), X.std(0)
    std[std == 0] = 1.0
    clf = LogisticRegression(C=C, class_weight="balanced", max_iter=2000).fit((X - mean) / std, labels)
    return ContradictionModel(features, clf.coef_[0], clf.intercept_[0], mean, std)


def out_of_fold(rows, labels, groups, features, C, folds: int, seed: int) -> np.ndarray:
    oof = np.zeros(len(rows))
    for tr, te in StratifiedGroupKFold(folds, shuffle=True, random_state=seed).split(rows, labels, groups):
        model = fit([rows[i] for i in tr], labels[tr], features, C)
        oof[te] = model.probabilities([rows[i] for i in te])
    return oof


def train(cfg: DictConfig, run_dir: Path) -> dict:
    pairs = read_pairs(hydra.utils.to_absolute_path(cfg.data.train_file))  # bad lines stop here, before any model
    if cfg.data.get("limit"):
        pairs = pairs[: int(cfg.data.limit)]
    if any(p["label"] is None for p in pairs):
        raise ValueError(f"{cfg.data.train_file}: every training pair needs a label")
    rows = analyse_pairs(pairs, *load_components(cfg.parser, cfg.detector, cfg.entailment, int(cfg.batch_size)))
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

    folds, seed = int(cfg.cv.folds), int(cfg.seed)
    grid, oofs = [], []
    for name in cfg.cv.feature_sets:
        for C in cfg.cv.C:
            oofs.append(out_of_fold(ok_rows, labels, groups, FEATURE_SETS[name], float(C), folds, seed))
            t, _ = best_threshold(oofs[-1], labels)
            grid.append({"feature_set": name, "C": float(C), "threshold": t, "cv": on_all(oofs[-1], t)})
            log.info("CV %-10s C=%-5s F1 %.3f (threshold %.3f)", name, C, grid[-1]["cv"]["f1"], t)
    best = max(grid, key=lambda g: g["cv"]["f1"])
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
    model = fit(ok_rows, labels, FEATURE_SETS[best["feature_set"]], best["C"])
    model.threshold = best["threshold"]
    model.info = {"trained_on": str(cfg.data.train_file), "pairs": len(pairs), "scored": len(ok),
                  "feature_set": best["feature_set"], "C": best["C"], "cv_f1": best["cv"]["f1"],
                  "entailment_only_threshold": t_ent, "parser": str(cfg.parser), "detector": str(cfg.detector),
                  "entailment": str(cfg.entailment)}
    model.save(run_dir / "contradiction")
    metrics = {"chosen": best, "grid": grid, "baselines_cv": baselines, "pairs": len(pairs), "scored": len(ok),
               "statuses": {s: sum(r["status"] == s for r in rows) for s in {r["status"] for r in rows}},
               "coef": dict(zip(model.features, model.coef.round(4).tolist()))}
    (run_dir / "cv_metrics.json").write_text(json.dumps(metrics, indent=1))
    log.info("chosen: %s C=%s, CV F1 %.3f (P %.3f / R %.3f) at threshold %.3f; entailment-only CV F1 %.3f",
             best["feature_set"], best["C"], best["cv"]["f1"], best["cv"]["precision"], best["cv"]["recall"],
             best["threshold"], baselines["entailment_only"]["f1"])
    return metrics


@hydra.main(version_base="1.3", config_path="../conf", config_name="train_contradiction")
def main(cfg: DictConfig) -> None:
    from hydra.core.hydra_config import HydraConfig

    train(cfg, Path(HydraConfig.get().runtime.output_dir))


if __name__ == "__main__":
    main()
