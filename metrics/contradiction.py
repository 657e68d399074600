"""Self-contradiction metrics: precision / recall / F1 of the contradiction class (about 13% of
ChatProtect pairs contradict, so accuracy says little), and the threshold with the best F1."""
from __future__ import annotations

from typing import Sequence

import numpy as np


def binary_prf(labels: Sequence[int], decisions: Sequence[bool]) -> dict:
    """P / R / F1 of the positive class (1 = contradiction), with the counts."""
    from sklearn.metrics import precision_recall_fscore_support

    y, d = np.asarray(labels, int), np.asarray(decisions, bool).astype(int)
    p, r, f, _ = precision_recall_fscore_support(y, d, average="binary", zero_division=0)
    return {"precision": float(p), "recall": float(r), "f1": float(f), "n": int(len(y)),
            "positives": int(y.sum()), "predicted": int(d.sum())}


def best_f1_threshold(scores: Sequence[float], labels: Sequence[int], weights: Sequence[float] | None = None) -> tuple[float, float]:
    """(threshold, F1) with the best F1 when `score >= threshold` decides contradiction (with `weights`,
    the F1 of weighted counts: a row counts as `weight` rows); the
    threshold is the midpoint between neighbouring scores, so it generalises past the ties; among
    equal F1s the highest threshold. Every candidate at once, from cumulative counts (a loop over
    5,000 candidates took seconds per call)."""
    s, y = np.asarray(scores, float), np.asarray(labels, int)
    w = np.ones(len(s)) if weights is None else np.asarray(weights, float)
    if not len(s):
        return 0.5, 0.0
    cands, inverse = np.unique(s, return_inverse=True)
    mids = np.concatenate([[cands[0] - 1e-6], (cands[1:] + cands[:-1]) / 2])
    # mids[k] lies just below cands[k]: "score >= mids[k]" keeps the scores of cands[k:]
    n_at = np.bincount(inverse, weights=w, minlength=len(cands))
    pos_at = np.bincount(inverse, weights=w * y, minlength=len(cands))
    predicted = np.cumsum(n_at[::-1])[::-1]
    tp = np.cumsum(pos_at[::-1])[::-1]
    f1 = np.where(tp > 0, 2 * tp / np.maximum(predicted + (w * y).sum(), 1e-12), 0.0)
    k = max(range(len(mids)), key=lambda i: (f1[i], mids[i]))
    return float(mids[k]), float(f1[k])
