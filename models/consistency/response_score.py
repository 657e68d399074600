"""Ways to turn the P(supported) of a text's QAs into one score for the text. `share` counts the QAs at or above
the threshold; the others read the probabilities themselves, so one QA that the classifier is sure is wrong can
weigh more than several it is unsure about. The pipeline's `score` is the one its `response_score` names."""
from __future__ import annotations

import numpy as np

RESPONSE_SCORES = ("share", "mean_p", "min_p", "sentence_min_mean", "mean_log_p", "share_min")


def qa_probabilities(report: dict) -> list[tuple[int, float]]:
    """(sentence index, P(supported)) of every scored QA of a pipeline report."""
    return [(s["index"], float(qa["score"])) for s in report["sentences"] for p in s["predicates"]
            for qa in p["qas"] if qa.get("score") is not None]


def response_scores(report: dict, threshold: float, share_weight: float) -> dict[str, float | None]:
    """Every score of RESPONSE_SCORES for one report; None for all when no QA was scored. share_min mixes the
    share with the least supported QA's P: share_weight * share + (1 - share_weight) * min_p."""
    qas = qa_probabilities(report)
    if not qas:
        return {name: None for name in RESPONSE_SCORES}
    p = np.array([x for _, x in qas])
    by_sentence: dict[int, list[float]] = {}
    for j, x in qas:
        by_sentence.setdefault(j, []).append(x)
    share = float(np.mean(p >= threshold))
    return {"share": share, "mean_p": float(p.mean()), "min_p": float(p.min()),
            "sentence_min_mean": float(np.mean([min(v) for v in by_sentence.values()])),
            "mean_log_p": float(np.mean(np.log(np.clip(p, 1e-6, 1.0)))),
            "share_min": share_weight * share + (1 - share_weight) * float(p.min())}
