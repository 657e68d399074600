"""train/contradiction/threshold.py: where the decision threshold comes from when the selection pairs mix
a few human-labelled prompts with many silver ones whose scores run higher."""
import numpy as np
import pytest

from metrics.contradiction import best_f1_threshold
from train.contradiction.threshold import (RULES, check_human, choose_threshold, expected_f1_threshold,
                                           held_out_human, rule_threshold)


def _mixed(seed=0):
    """Silver pairs (4,000, 11% contradictions, scored with the encoder's confidence on its own style) and
    human ones (600 over 30 prompts, 8%, whose contradictions score lower): the pooled threshold sits too high."""
    rng = np.random.default_rng(seed)
    n_s, n_h = 4000, 600
    y_s, y_h = (rng.random(n_s) < 0.11).astype(int), (rng.random(n_h) < 0.08).astype(int)
    p_s = 1 / (1 + np.exp(-(np.where(y_s, 3.0, -2.0) + rng.normal(0, 1.2, n_s))))
    p_h = 1 / (1 + np.exp(-(np.where(y_h, 0.5, -2.5) + rng.normal(0, 1.0, n_h))))
    p, y = np.concatenate([p_s, p_h]), np.concatenate([y_s, y_h])
    human = np.arange(n_s + n_h) >= n_s
    groups = [f"s{i // 40}" for i in range(n_s)] + [f"h{i // 20}" for i in range(n_h)]
    return p, y, human, groups


def test_weighted_best_threshold_equals_the_exhaustive_weighted_search():
    rng = np.random.default_rng(3)
    s, y, w = rng.random(200).round(2), (rng.random(200) < 0.3).astype(int), rng.choice([1.0, 7.5], 200)
    cands = np.unique(s)
    mids = np.concatenate([[cands[0] - 1e-6], (cands[1:] + cands[:-1]) / 2])

    def wf1(t):
        d = s >= t
        tp, fp, fn = (w * (d & (y == 1))).sum(), (w * (d & (y == 0))).sum(), (w * (~d & (y == 1))).sum()
        return 2 * tp / (2 * tp + fp + fn) if tp else 0.0

    want = max(((float(t), wf1(t)) for t in mids), key=lambda x: (x[1], x[0]))
    got = best_f1_threshold(s, y, weights=w)
    assert got[0] == pytest.approx(want[0]) and got[1] == pytest.approx(want[1])
    assert best_f1_threshold(s, y, weights=np.ones(200)) == best_f1_threshold(s, y)


def test_rules_that_read_the_human_labels_lower_the_threshold_and_raise_held_out_human_f1():
    p, y, human, groups = _mixed()
    pooled = rule_threshold("pooled", p, y, human)
    for rule in ("human", "weighted", "platt"):
        assert rule_threshold(rule, p, y, human) < pooled, rule
    scores = {r: held_out_human(r, p, y, human, groups, folds=5, repeats=4) for r in RULES}
    assert scores["weighted"]["f1_mean"] > scores["pooled"]["f1_mean"]
    assert scores["pooled"]["precision_mean"] > scores["pooled"]["recall_mean"]  # the symptom of the issue
    for v in scores.values():
        assert 0 <= v["f1_sd"] < 0.1 and v["f1_se_prompts"] > 0 and v["repeats"] == 4
    chosen = choose_threshold(list(RULES), p, y, human, groups, repeats=4)
    assert chosen["rule"] != "pooled" and chosen["rule"] == max(RULES, key=lambda r: chosen["by_rule"][r]["f1_mean"])
    assert chosen["threshold"] == pytest.approx(rule_threshold(chosen["rule"], p, y, human))
    one = choose_threshold("pooled", p, y, human, groups, repeats=2)  # one rule: used even when another scores higher
    assert one["rule"] == "pooled" and set(one["by_rule"]) == set(RULES)


def test_held_out_scoring_never_reads_the_held_out_prompts():
    """The human rule's in-sample F1 on the human pairs is the best any threshold gets; held out, it is lower."""
    p, y, human, groups = _mixed(1)
    in_sample = best_f1_threshold(p[human], y[human])[1]
    assert held_out_human("human", p, y, human, groups, repeats=3)["f1_mean"] < in_sample


def test_platt_calibrates_on_the_scored_pairs_only():
    """Unscored pairs carry P 0 (never flagged); fitted as if the model gave them P 0 they would bend the
    calibration. A model that leaves a third of the human pairs unscored keeps its Platt threshold."""
    p, y, human, groups = _mixed(4)
    t = rule_threshold("platt", p, y, human)
    extra = 300  # unscored human pairs, a quarter of them contradictions
    p2 = np.concatenate([p, np.zeros(extra)])
    y2 = np.concatenate([y, (np.arange(extra) % 4 == 0).astype(int)])
    h2, s2 = np.concatenate([human, np.ones(extra, bool)]), np.concatenate([np.ones(len(p), bool), np.zeros(extra, bool)])
    assert rule_threshold("platt", p2, y2, h2, s2) == pytest.approx(t, abs=0.02)
    with pytest.raises(ValueError, match="not increasing"):  # fitted on them, P 0 would look like 25 % contradictions
        rule_threshold("platt", p2, y2, h2)
    g2 = groups + [f"u{i // 20}" for i in range(extra)]
    assert choose_threshold(["platt", "pooled"], p2, y2, h2, g2, repeats=2, scored=s2)["by_rule"]["platt"]["f1_mean"] > 0


def test_rate_flags_the_human_rate_and_platt_maximises_expected_f1():
    p, y, human, groups = _mixed(2)
    t = rule_threshold("rate", p, y, human)
    assert (p >= t).mean() == pytest.approx(y[human].mean(), abs=0.002)
    q = np.random.default_rng(0).random(300)
    tq = expected_f1_threshold(q)

    def expected_f1(t):
        d = q >= t
        return 2 * q[d].sum() / (d.sum() + q.sum())

    assert expected_f1(tq) == pytest.approx(max(expected_f1(t) for t in np.unique(q)))


def test_a_rule_that_needs_human_labels_and_finds_none_names_the_files():
    with pytest.raises(ValueError, match=r"needs human-labelled.*big\.jsonl.*human_files.*validation\.jsonl"):
        check_human(["pooled", "human"], np.zeros(5, bool), ["big.jsonl"], ["validation.jsonl"])
    check_human("pooled", np.zeros(5, bool), ["big.jsonl"], ["validation.jsonl"])  # pooled needs none
    with pytest.raises(ValueError, match="cv.threshold_rule=median"):
        rule_threshold("median", np.ones(3), np.ones(3, int), np.ones(3, bool))


def test_the_table_of_a_finished_run_reads_its_analysis_file(tmp_path, capsys):
    import json

    from train.contradiction.threshold_table import main

    p, y, human, groups = _mixed(5)
    lines = [json.dumps({"id": f"chatgpt/{g}/{i}", "file": "chatgpt.validation" if h else "chatgpt.big", "label": int(l),
                         "p_oof": None if i % 50 == 0 else float(s)})
             for i, (s, l, h, g) in enumerate(zip(p, y, human, groups))]
    good = tmp_path / "validation_analysis.jsonl"
    good.write_text("\n".join(lines) + "\n")
    main([str(good), "--repeats", "2"])
    out = capsys.readouterr().out
    assert all(f"| `{r}` |" in out for r in RULES) and "best held-out F1" in out
    bad = tmp_path / "bad.jsonl"
    bad.write_text(lines[0] + "\n" + '{"id": "x"}\n')
    with pytest.raises(SystemExit, match=r"bad.jsonl:2: not a validation_analysis row"):
        main([str(bad)])
    with pytest.raises(SystemExit, match="no pair of the human-labelled files"):
        main([str(good), "--human", "popqa"])
