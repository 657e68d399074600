"""train.contradiction's selection: the CV grid (feature set, C, synthetic weight, threshold), its
nested CV (what the choice is worth without the grid's optimism), the synthetic-only diagnostic and the
encoder's out-of-fold figures per generator."""
from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np
from omegaconf import DictConfig
from sklearn.metrics import roc_auc_score

from metrics.contradiction import best_f1_threshold, binary_prf
from train.contradiction.fitting import FEATURE_SETS, fit, out_of_fold
from train.contradiction.selection import RULES, nested_cv, pick, threshold_cell

log = logging.getLogger(__name__)


def search(cfg: DictConfig, names, rows, labels_all, groups_all, usable, on_all, by_file, synthetic) -> tuple:
    """The CV grid over the feature sets, C and (with a synthetic set) its weight: each cell's pooled
    out-of-fold F1 at its own best threshold, then the cell `cv.rule` picks. synthetic = (rows, labels,
    weights), weights [None] when there is no synthetic set. Returns (grid rows, the chosen row, its cell)."""
    syn_rows, syn_labels, weights = synthetic
    folds, seed = int(cfg.cv.folds), int(cfg.seed)
    pool_all = list(range(len(rows)))
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
    rule = str(cfg.cv.rule or "best")
    chosen_cell, how = pick(cells, rule, labels_all, groups_all, seed)
    best = grid[next(k for k, c in enumerate(cells) if c is chosen_cell)]
    best["rule"] = how
    log.info("cv.rule=%s: %s C=%s (CV F1 %.3f; the best cell's %.3f%s)", rule, best["feature_set"], best["C"],
             best["cv"]["f1"], how["best_f1"], f", SE {how['se']:.3f}" if "se" in how else "")
    return grid, best, chosen_cell


def synthetic_only_grid(cfg, syn_rows, syn_labels, rows, labels, on_all) -> list[dict]:
    """Diagnostic: what the synthetic set alone teaches, scored on validation (the threshold chosen
    on validation itself, so the F1 is optimistic; the AUC needs no threshold)."""
    grid = []
    for name in cfg.cv.feature_sets:
        for C in cfg.cv.C:
            p = np.array(fit(syn_rows, syn_labels, FEATURE_SETS[name], float(C)).probabilities(rows))
            t, _ = best_f1_threshold(p, labels)
            grid.append({"feature_set": name, "C": float(C), "threshold": t,
                         "auc": float(roc_auc_score(labels, p)), "validation": on_all(p, t)})
    top = max(grid, key=lambda g: g["validation"]["f1"])
    log.info("synthetic only (best of the grid): %s C=%s, validation F1 %.3f (P %.3f / R %.3f), AUC %.3f",
             top["feature_set"], top["C"], top["validation"]["f1"], top["validation"]["precision"],
             top["validation"]["recall"], top["auc"])
    return grid


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
