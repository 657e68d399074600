"""release/seeds.py: the mean and sd over seeds of the contradiction recipe, the share of the F1 spread
the threshold explains, and the shipped seed (nearest the mean), from the evaluations' own files."""
import json
from pathlib import Path

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


def test_the_seeds_ensemble_comes_out_of_the_trainer_and_the_summary_reads_its_threshold(tmp_path):
    """python -m train.contradiction ensemble.members=[...]: the selection pairs' out-of-fold P averaged over the
    seeds gives the threshold (the recipe's rule); the summary decides the seeds' averaged test P at that
    threshold and chooses nothing itself."""
    from parser_helpers import compose_cfg
    from metrics.contradiction import best_f1_threshold
    from models.contradiction import ContradictionEnsemble, ContradictionModel, load_contradiction_model
    from release.seeds import _read_predictions
    from train.contradiction.seed_ensemble import assemble
    from train.contradiction.threshold_table import read_analysis

    rng = np.random.default_rng(1)
    labels = (rng.random(300) < 0.2).astype(int)
    runs = [("runs/contradiction", "eval/contradiction"), ("runs/contradiction_seed14", "eval/contradiction_seed14")]
    for run, ev in runs:
        test_p = np.clip(labels * 0.4 + rng.random(300) * 0.6, 0, 1)
        _seed(tmp_path, run, ev, 0.7, 0.9, "pooled", labels.tolist(), test_p.tolist(), 0.5)
        sel = [{"id": f"chatgpt/P{i % 30}/{i}", "file": "chatgpt.validation" if i < 100 else "chatgpt.big", "label": int(y),
                "p_oof": float(np.clip(y * 0.5 + rng.random() * 0.5, 0, 1))} for i, y in enumerate(labels)]
        (tmp_path / run / "validation_analysis.jsonl").write_text("".join(json.dumps(r) + "\n" for r in sel))
        ContradictionModel(["aligned"], [1.0], 0.0, [0.0], [1.0], threshold=0.9).save(tmp_path / run / "contradiction")
    members = ",".join(str(tmp_path / run) for run, _ in runs)
    cfg = compose_cfg("train_contradiction", ["+experiment=contradiction_mpnet", f"ensemble.members=[{members}]"])
    made = assemble(cfg, tmp_path / "runs" / "contradiction_seeds")
    sel = [read_analysis(tmp_path / r / "validation_analysis.jsonl") for r, _ in runs]
    mean_sel = [(a["p"] + b["p"]) / 2 for a, b in zip(*sel)]
    t, f1 = best_f1_threshold(mean_sel, labels.tolist())
    assert made["threshold_rule"] == "pooled" and made["threshold"] == pytest.approx(t) and made["cv_f1"] == pytest.approx(f1)
    ens = load_contradiction_model(tmp_path / "runs" / "contradiction_seeds" / "contradiction")
    assert isinstance(ens, ContradictionEnsemble) and len(ens.members) == 2 and ens.threshold == pytest.approx(t)

    out = summarise(tmp_path, [13, 14], Path("runs/contradiction_seeds/contradiction"))["seed_mean"]
    assert out["threshold"] == pytest.approx(t) and out["threshold_rule"] == "pooled" and out["cv_f1"] == pytest.approx(f1)
    preds = [_read_predictions(tmp_path / e / "predictions.jsonl") for _, e in runs]
    mean_test = np.array([(preds[0][str(i)]["p_contradiction"] + preds[1][str(i)]["p_contradiction"]) / 2 for i in range(300)])
    flagged = mean_test >= t
    assert out["predicted"] == flagged.sum() and out["recall"] == pytest.approx((flagged & (labels == 1)).sum() / labels.sum())


def test_members_that_scored_other_pairs_are_refused_naming_both(tmp_path):
    from train.contradiction.seed_ensemble import members_mean

    for k, n in enumerate((5, 6)):
        (tmp_path / f"R{k}").mkdir()
        rows = [{"id": f"chatgpt/P1/{i}", "file": "chatgpt.validation", "label": 0, "p_oof": 0.1} for i in range(n)]
        (tmp_path / f"R{k}" / "validation_analysis.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(ValueError, match=r"R1/validation_analysis.jsonl scored other selection pairs than .*R0"):
        members_mean([tmp_path / "R0", tmp_path / "R1"])
    with pytest.raises(FileNotFoundError, match="no out-of-fold scores in .*R2"):
        members_mean([tmp_path / "R0", tmp_path / "R2"])


def test_one_rule_for_every_seed_is_chosen_by_its_mean_held_out_f1_over_the_seeds(tmp_path):
    from release.seeds import common_rule, seed_dirs

    labels = [1, 1, 0, 0, 0, 0]
    probs = [0.9, 0.6, 0.55, 0.3, 0.2, 0.1]
    rules = {13: {"pooled": (0.5, 0.60), "platt": (0.8, 0.50)}, 14: {"pooled": (0.58, 0.55), "platt": (0.85, 0.62)}}
    for s, (run, ev) in seed_dirs([13, 14]).items():
        _seed(tmp_path, run, ev, 0.7, 0.9, "pooled", labels, probs, 0.5)
        by = {r: {"threshold": t, "f1_mean": f} for r, (t, f) in rules[s].items()}
        (tmp_path / run / "cv_metrics.json").write_text(json.dumps({"chosen": {"threshold_rule": {"by_rule": by}}}))
    out = common_rule(tmp_path, seed_dirs([13, 14]))
    assert out["rule"] == "pooled" and out["dev_held_out_human_f1_mean"]["platt"] == pytest.approx(0.56)  # 0.575 > 0.56
    assert out["seeds"]["13"]["predicted"] == 3 and out["seeds"]["14"]["predicted"] == 2  # 0.5 flags 0.55 too, 0.58 not
    assert out["seeds"]["14"]["f1"] == 1.0 and out["f1_mean"] == pytest.approx((0.8 + 1.0) / 2)
