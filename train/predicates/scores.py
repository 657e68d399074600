"""Scoring the predicate detector: per-type P / R / F1 under detect()'s decision rule, the dev
threshold of each type, and verb-form accuracy on gold predicates."""
from __future__ import annotations

import numpy as np

from metrics.qasrl import prf as qasrl_prf
from models.predicates import LABELS, PredicateDetector, VerbForms, decide
from train.predicates.data import IGNORE

THRESHOLD_GRID = np.arange(1, 100) / 100  # 0.01 .. 0.99


def prf(tp: int, n_pred: int, n_gold: int) -> dict:
    """The QA-SRL metrics' P/R/F1 (0 when undefined) with the predicted and gold counts."""
    m = qasrl_prf(tp, n_pred - tp, n_gold - tp)
    return {"precision": m["precision"], "recall": m["recall"], "f1": m["f1"], "n_gold": n_gold, "n_pred": n_pred}


def threshold_for_best_f1(scores, gold) -> float:
    """The detection threshold of one type, chosen on dev. (Not metrics.entailment.best_bacc_threshold,
    which takes (gold, scores) in that order and tunes balanced accuracy.)

    Semantics: a word is predicted when its score >= the threshold; the threshold is the point of
    the grid 0.01, 0.02, ..., 0.99 with the best F1; among equal F1, the one nearest 0.5 (then
    the lower); with no positive in `gold`, 0.5. F1 at every grid point is read off scikit-learn's
    precision_recall_curve: its thresholds are the distinct scores in ascending order, and the
    predicted set at a grid point t is the one at the first of them >= t (none above t: nothing
    predicted, F1 0)."""
    from sklearn.metrics import precision_recall_curve

    scores, gold = np.asarray(scores, dtype=float), np.asarray(gold, dtype=int)
    if not gold.any():
        return 0.5
    precision, recall, cuts = precision_recall_curve(gold, scores)  # precision[-1] = 1, recall[-1] = 0: no prediction
    at = np.searchsorted(cuts, THRESHOLD_GRID, side="left")
    p, r = precision[at], recall[at]
    f1 = np.divide(2 * p * r, p + r, out=np.zeros_like(p), where=(p + r) > 0)
    best = np.flatnonzero(f1 == f1.max())
    return float(THRESHOLD_GRID[best[np.argmin(np.abs(THRESHOLD_GRID[best] - 0.5))]])


def head_scores(items, probs, head: int) -> tuple[list[float], list[int]]:
    """(scores, gold) of one output over the words whose label of that type is known."""
    scores, gold = [], []
    for it, ps in zip(items, probs):
        for lab, p in zip(it["labels"], ps):
            if lab[head] != IGNORE:
                scores.append(p[head])
                gold.append(int(lab[head]))
    return scores, gold


def choose_thresholds(items, probs) -> dict[str, float]:
    return {name: threshold_for_best_f1(*head_scores(items, probs, h)) for h, name in enumerate(LABELS)}


def detection_metrics(items, probs, thresholds: dict) -> dict:
    """Per type: a word counts as predicted of that type when `decide` (detect()'s rule) says so;
    only words whose label of that type is known are scored."""
    out = {}
    for head, name in enumerate(LABELS):
        tp = n_pred = n_gold = 0
        for it, ps in zip(items, probs):
            for lab, (pv, pn) in zip(it["labels"], ps):
                if lab[head] == IGNORE:
                    continue
                d = decide(pv, pn, thresholds)
                pred = d is not None and d[0] == name
                n_pred += pred
                n_gold += lab[head] == 1
                tp += pred and lab[head] == 1
        out[name] = {**prf(tp, n_pred, n_gold),
                     "n_sentences": sum(1 for it in items if any(lab[head] != IGNORE for lab in it["labels"]))}
    return out


def verb_form_accuracy(verb_forms: VerbForms, gold: dict) -> tuple[dict, dict, dict]:
    """Share of gold predicates whose looked-up verb form equals the gold one (lower-cased)."""
    acc, n, fallback = {}, {}, {}
    for ptype in LABELS:
        pairs = gold.get(ptype, [])
        looked = [verb_forms.lookup(w, ptype, with_source=True) for w, _ in pairs]
        hits = sum(1 for (f, _), (_, g) in zip(looked, pairs) if f == g.lower())
        acc[ptype] = hits / len(pairs) if pairs else None
        n[ptype] = len(pairs)
        fallback[ptype] = sum(1 for _, s in looked if s == "fallback")
    return acc, n, fallback


def score(items, probs, thresholds: dict, verb_forms: VerbForms, gold_forms: dict) -> dict:
    """detection_metrics plus verb_form_accuracy / _n / _fallback: one metrics.json split."""
    m = detection_metrics(items, probs, thresholds)
    m["verb_form_accuracy"], m["verb_form_n"], m["verb_form_fallback"] = verb_form_accuracy(verb_forms, gold_forms)
    return m


def evaluate(detector: PredicateDetector, items, thresholds, gold_forms) -> dict:
    return score(items, detector.word_probs([it["tokens"] for it in items]), thresholds, detector.verb_forms,
                 gold_forms)
