"""What train.contradiction fits: the feature sets the cross-validation chooses among, the
standardised logistic regression (classes balanced, or per-source weights with a synthetic set) and its
out-of-fold probabilities grouped by prompt."""
from __future__ import annotations

import numpy as np
from omegaconf import DictConfig
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedGroupKFold

from models.contradiction import FEATURES, ContradictionModel, gated

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


def feature_sets(cfg: DictConfig, with_encoder: bool, with_alignment: bool) -> list[str]:
    """The configured feature sets this run can compute: the encoder's only with an encoder, the
    alignment's only with the parser."""
    names = [n for n in cfg.cv.feature_sets if (with_encoder or "encoder" not in FEATURE_SETS[n])
             and (with_alignment or FEATURE_SETS[n] == ("encoder",))]
    if not names:
        raise ValueError(f"none of cv.feature_sets={list(cfg.cv.feature_sets)} can be computed with "
                         f"encoder={with_encoder}, alignment={with_alignment}")
    return names
