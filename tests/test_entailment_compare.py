"""evaluation.entailment_compare: a paired bootstrap over responses of two classifiers' predictions."""
import json

import numpy as np
import pytest


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def _rows(scores, gold, per_response=5):
    return [{"example_id": f"r{i // per_response}:{i}", "response_id": f"r{i // per_response}", "supported": int(g),
             "score": float(s)} for i, (s, g) in enumerate(zip(scores, gold))]


def test_the_same_predictions_differ_by_nothing_and_a_better_classifier_shows(tmp_path):
    from evaluation.entailment_compare import compare

    rng = np.random.default_rng(1)
    gold = rng.integers(0, 2, 400)
    noisy = np.clip(gold * 0.6 + rng.normal(0.2, 0.3, 400), 0, 1)   # right about 80 % of the time
    exact = np.where(gold == 1, 0.9, 0.1)                           # always right
    a = _write(tmp_path / "a.jsonl", _rows(noisy, gold))
    same = compare(a, a, samples=200)
    assert same["bacc"] == {"delta": 0.0, "ci95": [0.0, 0.0]} and same["same_decisions"] == 1.0
    better = compare(a, _write(tmp_path / "b.jsonl", _rows(exact, gold)), samples=200)
    assert better["bacc"]["delta"] > 0.1 and better["bacc"]["ci95"][0] > 0  # outside the noise
    assert better["pearson"]["delta"] > 0 and better["responses"] == 80 and better["qas"] == 400


def test_predictions_of_other_qas_or_other_gold_are_refused(tmp_path):
    from evaluation.entailment_compare import compare

    gold = [1, 0, 1, 0, 1, 0]
    a = _write(tmp_path / "a.jsonl", _rows([0.9] * 6, gold, 2))
    with pytest.raises(ValueError, match="different QAs"):
        compare(a, _write(tmp_path / "b.jsonl", _rows([0.9] * 5, gold[:5], 2)))
    with pytest.raises(ValueError, match="gold label"):
        compare(a, _write(tmp_path / "c.jsonl", _rows([0.9] * 6, [0] + gold[1:], 2)))
    bad = tmp_path / "d.jsonl"
    bad.write_text(json.dumps({"example_id": "x", "score": 0.5}) + "\n")
    with pytest.raises(ValueError, match=r"d.jsonl, line 1: no \['response_id', 'supported'\]"):
        compare(str(bad), a)
