"""Where train.contradiction's decision threshold comes from (`cv.threshold_rule`), and what each
rule is worth on the human-labelled pairs.

The threshold is read off the chosen cell's out-of-fold P(contradiction) of the selection pairs. Those
are validation (45 human-labelled contradictions in 549 pairs) and chatgpt.big (508 contradictions,
silver labels from the release's detector), so with one pooled F1 the silver file decides. The rules:
- `pooled`: the best F1 over every selection pair (the silver file dominates).
- `human`: the best F1 over the human-labelled pairs alone.
- `weighted`: the best weighted F1 over every pair, the human pairs together weighing as much as
  the silver ones.
- `platt`: P calibrated by a logistic fit of the human labels on logit(P) (Platt scaling); then the
  threshold with the best expected F1 over every selection pair's calibrated P (no silver label read).
- `rate`: the threshold that flags the human pairs' contradiction rate of all selection pairs.

`cv.threshold_rule` as a list: the rule with the best held-out human F1 (below) is used. Each rule
is scored by repeated grouped CV over the human pairs' prompts: the threshold comes from the silver
pairs and the other folds' human pairs, and decides the held-out prompts' pairs; the pooled decisions
give one F1 per repeat, reported as mean and sd over the repeats (the spread of the resampled folds).

The same table for any finished run: python -m train.contradiction.threshold_table R/validation_analysis.jsonl
"""
from __future__ import annotations

import numpy as np
from sklearn.model_selection import StratifiedGroupKFold

from metrics.contradiction import best_f1_threshold, binary_prf
from models.contradiction.pair_encoder import apply_platt, fit_platt
from train.contradiction.selection import group_bootstrap_se

RULES = ("pooled", "human", "weighted", "platt", "rate")
NEEDS_HUMAN = {"human", "weighted", "platt", "rate"}


def expected_f1_threshold(q: np.ndarray) -> float:
    """The threshold on calibrated probabilities q with the best expected F1 (expected TP = the sum of q
    above it, FP = the sum of 1 - q above it, FN = the sum of q below it); the midpoint between neighbours."""
    order = np.sort(np.asarray(q, float))[::-1]
    tp = np.cumsum(order)
    flagged = np.arange(1, len(order) + 1)
    f1 = 2 * tp / (flagged + order.sum())
    k = int(np.argmax(f1))
    return float((order[k] + order[k + 1]) / 2) if k + 1 < len(order) else float(order[k] - 1e-6)


def rule_threshold(rule: str, p: np.ndarray, labels: np.ndarray, human: np.ndarray, scored=None) -> float:
    """The threshold `rule` reads off scores p with labels; human marks the human-labelled rows, scored the
    rows with a score (the others carry P 0 and are never flagged; Platt calibrates on scored rows only)."""
    p, labels, human = np.asarray(p, float), np.asarray(labels, int), np.asarray(human, bool)
    scored = np.ones(len(p), bool) if scored is None else np.asarray(scored, bool)
    if rule not in RULES:
        raise ValueError(f"cv.threshold_rule={rule}: one of {RULES}")
    if rule == "pooled":
        return best_f1_threshold(p, labels)[0]
    if rule == "human":
        return best_f1_threshold(p[human], labels[human])[0]
    if rule == "weighted":
        n_h, n_s = human.sum(), (~human).sum()
        w = np.where(human, max(n_s, 1) / n_h, 1.0)
        return best_f1_threshold(p, labels, weights=w)[0]
    if rule == "platt":
        fit = human & scored
        try:
            calib = fit_platt(p[fit], labels[fit])
        except ValueError as e:
            raise ValueError(f"cv.threshold_rule=platt on the scored human-labelled pairs: {e}") from None
        q = np.where(scored, apply_platt(p, calib["slope"], calib["intercept"]), 0.0)
        tq = expected_f1_threshold(q)
        # back to the raw score: the smallest p whose calibrated q reaches tq (calibration is monotone)
        z = (np.log(tq / (1 - tq)) - calib["intercept"]) / calib["slope"]
        return float(1 / (1 + np.exp(-z)))
    # rate: flag the human contradiction rate of every selection pair
    rate = labels[human].mean()
    return float(np.quantile(p, 1 - rate))


def check_human(rule_or_rules, human: np.ndarray, files: list[str], human_files: list[str]) -> None:
    """A rule that needs human labels stops with an error naming the files when none are selection pairs."""
    rules = [rule_or_rules] if isinstance(rule_or_rules, str) else list(rule_or_rules)
    needing = [r for r in rules if r in NEEDS_HUMAN]
    if needing and not np.asarray(human, bool).any():
        raise ValueError(f"cv.threshold_rule {needing} needs human-labelled selection pairs, but none of the "
                         f"selection files {files} is among selection.human_files {human_files}")


def held_out_human(rule: str, p, labels, human, groups, folds: int = 5, repeats: int = 10, seed: int = 0,
                   scored=None) -> dict:
    """The rule's F1 (and P / R) on the human pairs, each decided by a threshold the rule read without
    its prompt's pairs: grouped CV over the human pairs' prompts, repeated with reshuffled folds."""
    p, labels, human = np.asarray(p, float), np.asarray(labels, int), np.asarray(human, bool)
    scored = np.ones(len(p), bool) if scored is None else np.asarray(scored, bool)
    h_idx = np.flatnonzero(human)
    h_groups = np.asarray(groups)[h_idx]
    folds = min(folds, len(set(h_groups)), int(labels[h_idx].sum()))
    if folds < 2:
        return {"rule": rule, "skipped": f"{len(set(h_groups))} human prompts, {int(labels[h_idx].sum())} contradictions"}
    runs, thresholds, first = [], [], None
    for r in range(repeats):
        decisions = np.zeros(len(h_idx), bool)
        split = StratifiedGroupKFold(folds, shuffle=True, random_state=seed + r)
        for tr, te in split.split(h_idx, labels[h_idx], h_groups):
            keep = np.ones(len(p), bool)
            keep[h_idx[te]] = False  # the held-out human prompts are not read
            t = rule_threshold(rule, p[keep], labels[keep], human[keep], scored[keep])
            thresholds.append(t)
            decisions[te] = p[h_idx[te]] >= t
        runs.append(binary_prf(labels[h_idx], decisions))
        first = decisions if first is None else first
    f1 = np.array([x["f1"] for x in runs])
    return {"rule": rule, "f1_mean": float(f1.mean()), "f1_sd": float(f1.std(ddof=1)) if repeats > 1 else 0.0,
            # the first repeat's F1 when whole human prompts are resampled: how much the few prompts decide
            "f1_se_prompts": group_bootstrap_se(labels[h_idx], first, h_groups, seed=seed),
            "precision_mean": float(np.mean([x["precision"] for x in runs])),
            "recall_mean": float(np.mean([x["recall"] for x in runs])),
            "threshold_mean": float(np.mean(thresholds)), "threshold_sd": float(np.std(thresholds)),
            "folds": folds, "repeats": repeats}


def choose_threshold(rules, p, labels, human, groups, folds: int = 5, repeats: int = 10, seed: int = 0,
                     scored=None) -> dict:
    """{rule, threshold (read off every selection pair), by_rule}. by_rule: every rule's threshold and
    held-out human F1, when there are human pairs. One rule: that rule. A list: the best mean held-out
    F1, the first listed on ties."""
    rules = [rules] if isinstance(rules, str) else list(rules)
    human = np.asarray(human, bool)
    by_rule = {}
    for r in RULES if human.any() else []:
        try:
            by_rule[r] = {"threshold": rule_threshold(r, p, labels, human, scored),
                          **held_out_human(r, p, labels, human, groups, folds, repeats, seed, scored)}
        except ValueError as e:  # e.g. platt where the human pairs (of a fold) hold one class: not a candidate
            by_rule[r] = {"rule": r, "skipped": str(e)}
    chosen = rules[0]
    candidates = [r for r in rules if "f1_mean" in by_rule.get(r, {})]
    if len(rules) > 1 and candidates:
        chosen = max(candidates, key=lambda r: (by_rule[r]["f1_mean"], -rules.index(r)))
    t = by_rule[chosen]["threshold"] if "threshold" in by_rule.get(chosen, {}) else rule_threshold(chosen, p, labels, human, scored)
    return {"rule": chosen, "threshold": t, "by_rule": by_rule}
