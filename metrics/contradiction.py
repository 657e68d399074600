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


def best_threshold(scores: Sequence[float], labels: Sequence[int]) -> tuple[float, float]:
    """(threshold, F1) with the best F1 when `score >= threshold` decides contradiction; the
    threshold is the midpoint between neighbouring scores, so it generalises past the ties."""
    s, y = np.asarray(scores, float), np.asarray(labels, int)
    cands = np.unique(s)
    mids = np.concatenate([[cands[0] - 1e-6], (cands[1:] + cands[:-1]) / 2]) if len(cands) else np.array([0.5])
    best = max(((float(t), binary_prf(y, s >= t)["f1"]) for t in mids), key=lambda x: (x[1], x[0]))
    return best
