"""How train.contradiction picks one cell (feature set, C, threshold) of its CV grid, and what that
choice is worth when measured honestly.

`cv.rule`:
- `best`: the cell with the best pooled out-of-fold F1. With 40 cells on the same folds, the best
  cell's F1 is an optimistic estimate (it was the maximum of 40 noisy figures).
- `one_se`: the one-standard-error rule (Breiman et al. 1984; Hastie et al., ESL 7.10): the simplest
  cell (fewest features, then the smallest C) whose F1 lies within one standard error of the best.
  The SE is the spread of the best cell's F1 under a bootstrap over prompts (the unit the folds
  keep apart: pairs of one prompt are not independent).

Nested CV measures each rule without that optimism: in each outer fold (grouped by prompt) the whole
grid is rerun on the other folds, the rule picks a cell there, and the cell, fit on those folds,
decides the outer fold's pairs at its own threshold; the pooled outer decisions give one F1 per rule.
Comparing two rules on it is a choice between two, not forty.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
from sklearn.model_selection import StratifiedGroupKFold

from metrics.contradiction import best_f1_threshold, binary_prf

RULES = ("best", "one_se")


def group_bootstrap_se(labels: np.ndarray, decisions: np.ndarray, groups: Sequence[str], samples: int = 200,
                       seed: int = 0) -> float:
    """Standard error of the positive-class F1 when whole groups (prompts) are resampled with replacement."""
    names, inverse = np.unique(np.asarray(groups), return_inverse=True)
    y, d = np.asarray(labels, int), np.asarray(decisions, bool)
    tp = np.bincount(inverse, weights=y & d, minlength=len(names))
    fp = np.bincount(inverse, weights=~y.astype(bool) & d, minlength=len(names))
    fn = np.bincount(inverse, weights=y.astype(bool) & ~d, minlength=len(names))
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(names), size=(samples, len(names)))
    TP, FP, FN = tp[draws].sum(1), fp[draws].sum(1), fn[draws].sum(1)
    f1 = np.where(TP > 0, 2 * TP / np.maximum(2 * TP + FP + FN, 1), 0.0)
    return float(f1.std(ddof=1))


def pick(cells: list[dict], rule: str, labels: np.ndarray, groups: Sequence[str], seed: int = 0) -> tuple[dict, dict]:
    """(the chosen cell, how: {rule, best_f1, se, eligible}). Cells: {feature_set, n_features, C, f1,
    decisions (over all the pooled pairs)}; the first best cell wins ties, as in the grid's order."""
    if rule not in RULES:
        raise ValueError(f"cv.rule={rule}: one of {RULES}")
    best = max(cells, key=lambda c: c["f1"])
    if rule == "best":
        return best, {"rule": rule, "best_f1": best["f1"]}
    se = group_bootstrap_se(labels, best["decisions"], groups, seed=seed)
    eligible = [c for c in cells if c["f1"] >= best["f1"] - se]
    chosen = min(eligible, key=lambda c: (c["n_features"], c["C"], -c["f1"]))
    return chosen, {"rule": rule, "best_f1": best["f1"], "se": se, "eligible": len(eligible)}


def nested_cv(n: int, labels: np.ndarray, groups: Sequence[str], grid: Callable, decide: Callable, rules: Sequence[str],
              folds: int, seed: int) -> dict:
    """Per rule: P/R/F1 of the pooled outer-fold decisions, and the cells each outer fold chose.
    grid(pool) -> cells over the pairs `pool` (indices; the grid's own inner CV runs inside it);
    decide(cell, train_pool, test_pool) -> decisions of test_pool from the cell fit on train_pool."""
    labels = np.asarray(labels)
    out = {r: {"decisions": np.zeros(n, bool), "chosen": []} for r in rules}
    outer = StratifiedGroupKFold(folds, shuffle=True, random_state=seed + 1)  # not the grid's own folds
    for tr, te in outer.split(np.zeros(n), labels, groups):
        cells = grid(list(tr))
        for r in rules:
            cell, how = pick(cells, r, labels[tr], [groups[i] for i in tr], seed)
            out[r]["decisions"][te] = decide(cell, list(tr), list(te))
            out[r]["chosen"].append({"feature_set": cell["feature_set"], "C": cell["C"], "inner_f1": cell["f1"], **how})
    return {r: {**binary_prf(labels, v["decisions"]), "chosen": v["chosen"]} for r, v in out.items()}


def threshold_cell(name: str, features: Sequence[str], C: float, idx: list[int], oof: np.ndarray, labels: np.ndarray,
                   pool: list[int]) -> dict:
    """A grid cell over the pairs `pool`: its threshold (best F1 of the out-of-fold P of its scorable
    pairs `idx`) and its decisions over the whole pool (an unscored pair decides 'no contradiction')."""
    t, _ = best_f1_threshold(oof, labels[idx])
    where = {i: k for k, i in enumerate(pool)}
    decisions = np.zeros(len(pool), bool)
    decisions[[where[i] for i in idx]] = np.asarray(oof) >= t
    return {"feature_set": name, "n_features": len(features), "C": float(C), "threshold": t, "idx": idx, "oof": oof,
            "decisions": decisions, "f1": binary_prf(labels[pool], decisions)["f1"]}
