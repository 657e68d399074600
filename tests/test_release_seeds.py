"""release/seeds.py: the mean and sd over seeds of the contradiction recipe, the share of the F1 spread
the threshold explains, and the shipped seed (nearest the mean), from the evaluations' own files."""
import json

import numpy as np
import pytest

from release.seeds import main, summarise


def _seed(release, run, ev, f1, auc, rule, labels, probs, threshold):
    (release / run).mkdir(parents=True)
    (release / run / "cv_metrics.json").write_text(json.dumps({"chosen": {"threshold_rule": {"rule": rule}}}))
    (release / ev).mkdir(parents=True)
    (release / ev / "metrics.json").write_text(json.dumps({"precision": f1 + 0.05, "recall": f1 - 0.05, "f1": f1, "auc": auc,
                                                           "threshold": threshold}))
    rows = [{"id": str(i), "p_contradiction": p, "label": y} for i, (p, y) in enumerate(zip(probs, labels))]
    (release / ev / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_the_summary_and_the_seed_nearest_the_mean(tmp_path):
    rng = np.random.default_rng(0)
    labels = (rng.random(200) < 0.15).astype(int).tolist()
    probs = [float(x) for x in np.clip(np.array(labels) * 0.5 + rng.random(200) * 0.6, 0, 1)]
    probs[3] = None  # an unscored pair: never flagged
    _seed(tmp_path, "runs/contradiction", "eval/contradiction", 0.70, 0.92, "weighted", labels, probs, 0.6)
    _seed(tmp_path, "runs/contradiction_seed14", "eval/contradiction_seed14", 0.66, 0.91, "weighted", labels, probs, 0.7)
    _seed(tmp_path, "runs/contradiction_seed15", "eval/contradiction_seed15", 0.75, 0.93, "platt", labels, probs, 0.5)
    out = summarise(tmp_path, [13, 14, 15])
    assert out["n"] == 3 and out["f1_mean"] == pytest.approx(0.70333, abs=1e-4)
    assert out["f1_sd"] == pytest.approx(np.std([0.70, 0.66, 0.75], ddof=1))
    assert out["shipped_seed"] == 13 and out["shipped_model"] == "runs/contradiction/contradiction"
    assert out["threshold_rules"] == ["platt", "weighted"]
    # the three share one ranking here: its spread is 0, so the threshold explains all of the F1 spread
    assert out["f1_best_threshold_sd"] == 0 and out["threshold_share_of_f1_variance"] == 1.0
    main(["--release", str(tmp_path), "--seeds", "13", "14", "15"])
    assert json.loads((tmp_path / "eval" / "contradiction_seeds" / "metrics.json").read_text())["shipped_seed"] == 13


def test_a_seed_without_its_evaluation_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="contradiction_seed14/metrics.json: seed 14"):
        (tmp_path / "eval" / "contradiction").mkdir(parents=True)
        (tmp_path / "runs" / "contradiction").mkdir(parents=True)
        (tmp_path / "eval" / "contradiction" / "metrics.json").write_text(json.dumps({"f1": 0.5}))
        (tmp_path / "runs" / "contradiction" / "cv_metrics.json").write_text("{}")
        summarise(tmp_path, [13, 14])
