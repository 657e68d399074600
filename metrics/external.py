"""Metrics of an external factual-consistency benchmark, per group (a SummEdits domain): pure functions
of (group, target, score) lists.

binary targets (1 consistent): the balanced accuracy at a threshold chosen on the *other* groups (the
threshold that maximises their pooled BAcc), and the ROC AUC; score targets (a human judgment): Pearson
and Spearman. Then the mean over groups, the benchmark's headline figure."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from metrics.entailment import balanced_accuracy, best_bacc_threshold, correlation, roc_auc


def binary_table(groups: Sequence[str], gold: Sequence[float], scores: Sequence[float]) -> dict:
    """{domains: {NAME: {bacc, auc, threshold, n, positives}}, mean_bacc, mean_auc}; null means when nothing was
    scored. With one group, its threshold is chosen on itself."""
    names = sorted(set(groups))
    gold = [int(g) for g in gold]
    out = {}
    for name in names:
        idx = [i for i, g in enumerate(groups) if g == name]
        rest = [i for i, g in enumerate(groups) if g != name] or idx
        t = best_bacc_threshold([scores[i] for i in rest], [gold[i] for i in rest])
        out[name] = {"bacc": balanced_accuracy([gold[i] for i in idx], [scores[i] for i in idx], t),
                     "auc": roc_auc([gold[i] for i in idx], [scores[i] for i in idx]),
                     "threshold": t, "n": len(idx), "positives": sum(gold[i] for i in idx)}
    aucs = [r["auc"] for r in out.values() if r["auc"] is not None]
    return {"domains": out, "mean_bacc": float(np.mean([r["bacc"] for r in out.values()])) if out else None,
            "mean_auc": float(np.mean(aucs)) if aucs else None}


def score_table(groups: Sequence[str], human: Sequence[float], scores: Sequence[float]) -> dict:
    """{domains: {NAME: {pearson, spearman, n}}, mean_pearson, mean_spearman, overall}."""
    out = {}
    for name in sorted(set(groups)):
        idx = [i for i, g in enumerate(groups) if g == name]
        out[name] = {**correlation([scores[i] for i in idx], [human[i] for i in idx]), "n": len(idx)}

    def mean(key):
        vals = [r[key] for r in out.values() if r[key] is not None]
        return float(np.mean(vals)) if vals else None

    return {"domains": out, "mean_pearson": mean("pearson"), "mean_spearman": mean("spearman"),
            "overall": correlation(list(scores), list(human))}


def benchmark_table(target: str, groups: Sequence[str], values: Sequence[float], scores: Sequence[float]) -> dict:
    """The metric the benchmark's paper uses: binary_table for labels, score_table for human scores."""
    return binary_table(groups, values, scores) if target == "binary" else score_table(groups, values, scores)
