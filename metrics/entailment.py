"""QA-entailment metrics: pure functions of (gold, score) lists. Positive class = supported.

- balanced accuracy at a threshold (scikit-learn; mean of the recall of each class, a class
  absent from gold is left out of the mean) and the threshold that maximises it,
- ROC AUC (scikit-learn; None when gold has a single class),
- per sub-dataset and overall tables, a threshold chosen on dev,
- per response: the consistency score (share of supported QAs) under predicted and gold labels,
  and their Pearson / Spearman correlation across responses.
"""
from __future__ import annotations

import math
import warnings
from collections import defaultdict
from typing import Sequence

import numpy as np

DATASETS = ("cliff", "factscore", "verifiability")


def balanced_accuracy(gold: Sequence[int], scores: Sequence[float], threshold: float = 0.5) -> float:
    """gold: 1 = supported. Predicted supported when score >= threshold. scikit-learn's balanced
    accuracy, which leaves a class absent from gold out of the mean (the warnings that say so are silenced)."""
    from sklearn.metrics import balanced_accuracy_score

    gold = np.asarray(gold, dtype=int)
    if not len(gold):
        return float("nan")
    pred = (np.asarray(scores, dtype=float) >= threshold).astype(int)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="y_pred contains classes not in y_true")
        warnings.filterwarnings("ignore", message="A single label was found")
        return float(balanced_accuracy_score(gold, pred))


def roc_auc(gold: Sequence[int], scores: Sequence[float]) -> float | None:
    from sklearn.metrics import roc_auc_score

    gold = np.asarray(gold, dtype=int)
    if len(set(gold.tolist())) < 2:
        return None
    return float(roc_auc_score(gold, np.asarray(scores, dtype=float)))


def roc_curve_points(gold: Sequence[int], scores: Sequence[float]) -> tuple[list[float], list[float]]:
    from sklearn.metrics import roc_curve

    fpr, tpr, _ = roc_curve(np.asarray(gold, dtype=int), np.asarray(scores, dtype=float))
    return fpr.tolist(), tpr.tolist()


def best_bacc_threshold(scores: Sequence[float], gold: Sequence[int]) -> float:
    """The threshold maximising balanced accuracy (candidates: 0.5, the distinct scores, the
    midpoints between neighbours and just above the top score; ties go to the candidate closest to
    0.5, so a calibrated scorer keeps 0.5). One ROC curve gives BAcc = (TPR + TNR) / 2 at every
    distinct score, so the search is O(n log n)."""
    from sklearn.exceptions import UndefinedMetricWarning
    from sklearn.metrics import roc_curve

    gold = np.asarray(gold, dtype=int)
    scores = np.asarray(scores, dtype=float)
    s = np.unique(scores)
    if not len(s):
        return 0.5
    cands = np.concatenate([[0.5], s, [s[-1] + 1e-6], (s[:-1] + s[1:]) / 2])
    with warnings.catch_warnings():  # a class absent from gold: its rate is NaN and left out
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        fpr, tpr, _ = roc_curve(gold, scores, drop_intermediate=False)
        # point j: the j highest distinct scores predicted supported (j = 0: none)
        bacc = np.nanmean(np.vstack([tpr, 1.0 - fpr]), axis=0)
    n_above = len(s) - np.searchsorted(s, cands, side="left")  # distinct scores >= each candidate
    cand_bacc = bacc[n_above]
    best, best_t = -1.0, 0.5
    for i in np.argsort(np.abs(cands - 0.5), kind="stable"):
        if cand_bacc[i] > best + 1e-12:
            best, best_t = float(cand_bacc[i]), float(cands[i])
    return best_t


def metrics_row(gold: Sequence[int], scores: Sequence[float], threshold: float = 0.5) -> dict:
    """{"bacc", "auc", "n", "positive_rate", "predicted_positive_rate"} for one slice."""
    gold = list(map(int, gold))
    scores = list(map(float, scores))
    return {
        "bacc": balanced_accuracy(gold, scores, threshold) if gold else None,
        "auc": roc_auc(gold, scores) if gold else None,
        "n": len(gold),
        "positive_rate": float(np.mean(gold)) if gold else None,
        "predicted_positive_rate": float(np.mean(np.asarray(scores) >= threshold)) if gold else None,
    }


def metrics_table(datasets: Sequence[str], gold: Sequence[int], scores: Sequence[float],
                  threshold: float = 0.5) -> dict:
    """{"cliff": row, "factscore": row, "verifiability": row, "overall": row}; a sub-dataset with
    no examples gets n = 0 and null metrics."""
    table = {}
    for ds in DATASETS:
        idx = [i for i, d in enumerate(datasets) if d == ds]
        table[ds] = metrics_row([gold[i] for i in idx], [scores[i] for i in idx], threshold)
    table["overall"] = metrics_row(gold, scores, threshold)
    return table


def response_scores(response_ids: Sequence[str], gold: Sequence[int], scores: Sequence[float],
                    threshold: float = 0.5) -> dict[str, dict]:
    """Per response: {"gold": share of supported QAs, "pred": share predicted supported,
    "mean_prob": mean P(supported), "n": QAs}."""
    by = defaultdict(list)
    for r, g, s in zip(response_ids, gold, scores):
        by[r].append((int(g), float(s)))
    out = {}
    for r, rows in by.items():
        out[r] = {"gold": sum(g for g, _ in rows) / len(rows),
                  "pred": sum(s >= threshold for _, s in rows) / len(rows),
                  "mean_prob": sum(s for _, s in rows) / len(rows),
                  "n": len(rows)}
    return out


def correlation(x: Sequence[float], y: Sequence[float]) -> dict:
    """{"pearson", "spearman"} of two paired lists; None where undefined (under 3 points, a constant list)."""
    from scipy.stats import pearsonr, spearmanr

    if len(x) < 3 or np.std(x) == 0 or np.std(y) == 0:
        return {"pearson": None, "spearman": None}
    p = float(pearsonr(x, y)[0])
    s = float(spearmanr(x, y)[0])
    return {"pearson": None if math.isnan(p) else p, "spearman": None if math.isnan(s) else s}


def response_correlations(response_ids: Sequence[str], datasets: Sequence[str], gold: Sequence[int],
                          scores: Sequence[float], threshold: float = 0.5) -> dict:
    """Correlation across responses of the predicted consistency score (share predicted supported,
    and mean probability) with the gold score; per sub-dataset and overall."""
    per = response_scores(response_ids, gold, scores, threshold)
    ds_of = {r: d for r, d in zip(response_ids, datasets)}
    out = {}
    for ds in list(DATASETS) + ["overall"]:
        rs = [r for r in per if ds == "overall" or ds_of[r] == ds]
        g = [per[r]["gold"] for r in rs]
        out[ds] = {"n_responses": len(rs),
                   "share": correlation([per[r]["pred"] for r in rs], g),
                   "mean_prob": correlation([per[r]["mean_prob"] for r in rs], g)}
    return out


def paired_bootstrap(response_ids: Sequence[str], gold: Sequence[int], scores_a: Sequence[float],
                     scores_b: Sequence[float], threshold: float = 0.5, samples: int = 2000, seed: int = 0) -> dict:
    """B - A on the same QAs, responses resampled with replacement (a response's QAs stay together: they
    share a reference): overall balanced accuracy at `threshold` and the Pearson correlation across responses
    of the predicted consistency score (share predicted supported) with the gold one. Each as
    {"delta", "ci95": [low, high]}; a CI that holds 0 is a difference within resampling noise."""
    gold = np.asarray(gold, dtype=int)
    a, b = np.asarray(scores_a, dtype=float), np.asarray(scores_b, dtype=float)
    if not (len(gold) == len(a) == len(b) == len(response_ids)):
        raise ValueError(f"paired_bootstrap: {len(response_ids)} ids, {len(gold)} gold, {len(a)} / {len(b)} scores")
    rows: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(response_ids):
        rows[r].append(i)
    resp = sorted(rows)
    # each response's gold and predicted consistency scores, once; a resample picks them by position
    per = [response_scores(response_ids, gold, s, threshold) for s in (a, b)]
    gold_share = np.array([per[0][r]["gold"] for r in resp])
    pred_share = [np.array([p[r]["pred"] for r in resp]) for p in per]
    qa_rows = [np.asarray(rows[r]) for r in resp]

    def deltas(chosen: np.ndarray) -> tuple[float, float]:
        idx = np.concatenate([qa_rows[k] for k in chosen])
        out = []
        for s, share in zip((a, b), pred_share):
            pearson = correlation(share[chosen], gold_share[chosen])["pearson"]
            out.append((balanced_accuracy(gold[idx], s[idx], threshold), np.nan if pearson is None else pearson))
        return out[1][0] - out[0][0], out[1][1] - out[0][1]

    rng = np.random.default_rng(seed)
    boot = np.array([deltas(rng.integers(0, len(resp), len(resp))) for _ in range(samples)])
    point = deltas(np.arange(len(resp)))
    return {name: {"delta": point[k], "ci95": [float(np.nanpercentile(boot[:, k], 2.5)),
                                               float(np.nanpercentile(boot[:, k], 97.5))]}
            for k, name in enumerate(("bacc", "pearson"))} | {"responses": len(resp), "qas": len(gold),
                                                              "same_decisions": float(((a >= threshold) ==
                                                                                       (b >= threshold)).mean())}
