"""The entailment cascade (models/entailment/judge_cascade.py, benchmarks/entailment_cascade.py): the judge's
evidence, its prompt, the band rule and the grouped-CV choice of the band, on synthetic scores (no model)."""
from __future__ import annotations

import random
from pathlib import Path

import hydra
import pytest
from omegaconf import OmegaConf

from benchmarks.entailment_cascade import cross_validated, figures
from metrics.entailment import best_bacc_threshold
from models.entailment.judge_cascade import EntailmentJudgePrompts, cascade, evidence_window

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ("The fox lived in a wood . It ate berries in summer . A hunter came in 1900 . "
             "The hunter saw the fox near the river .").split()


def test_evidence_is_the_best_matching_sentences_in_order():
    # 3 shared words, then a tie of one each ("fox", "hunter"): the earlier sentence
    assert evidence_window(REFERENCE, "who saw the fox? the hunter", 2) == "The fox lived in a wood. " \
        "The hunter saw the fox near the river."
    assert evidence_window(REFERENCE, "what was eaten in summer? berries", 1) == "It ate berries in summer."
    assert evidence_window([], "who? x", 3) == ""


def test_the_prompt_file_builds_messages():
    prompts = hydra.utils.instantiate(OmegaConf.load(ROOT / "conf" / "chat_prompts" / "entailment_judge.yaml"))
    system, user = prompts.messages(REFERENCE, "what did the fox eat?", "berries")
    assert system["role"] == "system" and user["role"] == "user"
    assert "It ate berries in summer." in user["content"] and "Answer: berries" in user["content"]
    with pytest.raises(ValueError, match=r"\{answer\}"):
        EntailmentJudgePrompts(system="s", user="{evidence} {question}")


def test_the_judge_decides_inside_the_band_only():
    scores, judged = [0.1, 0.45, 0.55, 0.9, 0.5], [0.9, 0.9, 0.1, 0.1, None]
    s, d = cascade(scores, judged, 0.4, 0.6, 0.5, 0.5)
    assert d == [False, True, False, True, True]  # outside, judge yes, judge no, outside, unjudged: classifier
    assert s[0] == 0.1 and s[3] == 0.9 and s[4] == 0.5
    assert s[1] == pytest.approx(0.4 + 0.2 * 0.9) and 0.4 <= s[2] <= 0.6
    assert cascade(scores, judged, 0.5, 0.5, 0.5, 0.5)[1] == [x >= 0.5 for x in scores]  # an empty band


def _synthetic(judge_right: bool, n_groups: int = 40, seed: int = 0):
    rng = random.Random(seed)
    examples, gold, scores, judged = [], [], [], []
    for g in range(n_groups):
        for k in range(10):
            y = rng.random() < 0.6
            confident = rng.random() < 0.6
            s = (rng.uniform(0.75, 1.0) if y else rng.uniform(0.0, 0.25)) if confident else rng.uniform(0.4, 0.6)
            examples.append({"group_id": f"g{g}", "supported": int(y)})
            gold.append(int(y))
            scores.append(s)
            judged.append((0.9 if y else 0.1) if judge_right else None)
    return examples, gold, scores, judged


def test_grouped_cv_takes_a_band_where_the_judge_is_right():
    from train.entailment.data import group_folds

    examples, gold, scores, judged = _synthetic(judge_right=True)
    folds = group_folds(examples, 5, 13)
    s, d, alone, chosen = cross_validated(examples, gold, scores, judged, folds, best_bacc_threshold)
    assert figures(gold, s, d)["bacc"] > figures(gold, scores, alone)["bacc"] + 0.1
    assert all(c["judged_in_band"] > 0 for c in chosen)

    examples, gold, scores, judged = _synthetic(judge_right=False)  # nothing judged: the classifier alone
    s, d, alone, _ = cross_validated(examples, gold, scores, judged, group_folds(examples, 5, 13), best_bacc_threshold)
    assert d == alone and s == scores
