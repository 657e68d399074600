"""Fold encoders on one scale (`encoder.calibrate`): each fold encoder of train.contradiction is Platt-calibrated
on the selection pairs it scored out of fold, so that the stacker and the threshold read one scale from both folds
and from their mean (models/contradiction/pair_encoder.py, train/contradiction/encoder.py)."""
import math
from pathlib import Path

import numpy as np
import pytest

from parser_helpers import compose_cfg
from test_contradiction_encoder import _tiny_encoder


def _sigmoid(z):
    return 1 / (1 + np.exp(-np.asarray(z, float)))


def test_platt_puts_two_scales_of_one_ranking_on_one_scale():
    from models.contradiction.pair_encoder import apply_platt, fit_platt

    rng = np.random.default_rng(0)
    y = (rng.random(2000) < 0.12).astype(int)
    z = 2.5 * y + rng.normal(0, 1, len(y)) - 2
    shy, bold = _sigmoid(z - 3), _sigmoid(3 * z + 4)  # one conservative encoder, one confident: the same ranking
    assert np.median(shy[y == 1]) < 0.2 < 0.9 < np.median(bold[y == 1])
    cal = [apply_platt(p, **{k: c[k] for k in ("slope", "intercept")}) for p, c in
           ((shy, fit_platt(shy, y)), (bold, fit_platt(bold, y)))]
    assert cal[0] == pytest.approx(cal[1], abs=1e-3)
    assert np.mean(cal[0]) == pytest.approx(y.mean(), abs=1e-3)  # the fit's mean P is the pairs' contradiction rate


def test_platt_refuses_one_class_and_a_decreasing_fit():
    from models.contradiction.pair_encoder import fit_platt

    with pytest.raises(ValueError, match="one class"):
        fit_platt([0.1, 0.5, 0.9], [0, 0, 0])
    with pytest.raises(ValueError, match="not increasing"):
        fit_platt([0.9, 0.8, 0.7, 0.2, 0.1, 0.15], [0, 0, 0, 1, 1, 1])


def test_a_calibrated_encoder_scores_through_its_map_and_keeps_it_when_saved(tmp_path):
    from models.contradiction.pair_encoder import PairEncoder, PairEncoderEnsemble, apply_platt

    pairs = [{"group": "x", "a": "He won in 1990 .", "b": f"He lost in {y} ."} for y in (1991, 1992, 1993)]
    calibrated, raw = _tiny_encoder(context="prompt"), _tiny_encoder(context="prompt")
    before = calibrated.score(pairs)
    calibrated.calibration = {"slope": 2.0, "intercept": -1.0}
    assert calibrated.score(pairs) == pytest.approx(apply_platt(before, 2.0, -1.0), abs=1e-6)
    ens = PairEncoderEnsemble([calibrated, raw])
    expected = [(x + y) / 2 for x, y in zip(calibrated.score(pairs), raw.score(pairs))]
    ens.save_pretrained(tmp_path / "ens")
    back = PairEncoder.from_pretrained(tmp_path / "ens")
    assert [m.calibration for m in back.members] == [{"slope": 2.0, "intercept": -1.0}, None]
    assert back.score(pairs) == pytest.approx(expected, abs=1e-5)


class _ScriptedFold:
    """A fold encoder whose P depends on the label (and a little on the pair), on the fold's own scale: fold 0 is
    shy (contradictions near P 0.1), fold 1 bold (near 0.95). Scripted like test_contradiction's parser, so that the
    test knows which scale each pair got."""
    def __init__(self, offset: float):
        from models.contradiction.pair_encoder import PairEncoder

        self.offset, self.info, self.calibration, self.symmetric = offset, {"train_pairs": 0}, None, False
        self.calibrated = PairEncoder.calibrated.__get__(self)

    def score(self, pairs):
        raw = [float(_sigmoid(3 * p["label"] - 1.5 + 0.8 * math.sin(7 * i) + self.offset)) for i, p in
               enumerate(pairs)]
        return self.calibrated(raw)


def test_each_fold_is_calibrated_on_its_own_out_of_fold_selection_pairs(tmp_path, monkeypatch):
    import train.contradiction.encoder as te

    offsets = {"fold0": -3.0, "fold1": 3.0}
    monkeypatch.setattr(te, "train_stage", lambda enc, pairs, stage_dir, seed, cfg: _ScriptedFold(offsets[Path(stage_dir).name]))

    def pairs(file, prompts, rate):
        return [{"file": file, "group": f"{file}-{g}", "label": int(i < rate * 10), "a": "a", "b": "b", "id": f"{file}-{g}-{i}"}
                for g in range(prompts) for i in range(10)]

    val, big, popqa = pairs("val", 4, 0.1), pairs("big", 40, 0.2), pairs("popqa", 20, 0.8)
    cfg = compose_cfg("train_contradiction", ["encoder.model=x", "encoder.final=fold_ensemble", "encoder.calibrate=true"])
    scores, final, info = te.encoder_scores(cfg, val + big + popqa, big + popqa, tmp_path, calibration_files={"val", "big"})
    fold_of = te.prompt_folds({p["group"] for p in big + popqa}, 2, int(cfg.seed))
    # each fold's map is fitted on its own big pairs only: popqa (a report file, 80 % contradictions) is not selection
    for k in (0, 1):
        assert info["calibration"][f"fold{k}"]["pairs"] == sum(fold_of[p["group"]] == k for p in big)
    s = np.array(scores)
    n_val = len(val)
    pos_by_fold = [[s[n_val + i] for i, p in enumerate(big) if p["label"] and fold_of[p["group"]] == k] for k in (0, 1)]
    raw_pos = [_sigmoid(1.5 + offsets[f"fold{k}"]) for k in (0, 1)]
    assert raw_pos[1] - raw_pos[0] > 0.8  # the raw folds are far apart on the contradictions...
    assert abs(np.median(pos_by_fold[0]) - np.median(pos_by_fold[1])) < 0.1  # ...calibrated, on one scale
    # validation, never trained on, is scored by the ensemble: the mean of the calibrated folds
    members = [m.score(val) for m in final.members]
    assert scores[:n_val] == pytest.approx([(x + y) / 2 for x, y in zip(*members)], abs=1e-9)
    assert all(m.calibration for m in final.members)
    # without calibrate, the folds keep their raw scales
    cfg.encoder.calibrate = False
    raw_scores, _, raw_info = te.encoder_scores(cfg, val + big + popqa, big + popqa, tmp_path, calibration_files={"val", "big"})
    assert "calibration" not in raw_info
    raw_by_fold = [[raw_scores[n_val + i] for i, p in enumerate(big) if p["label"] and fold_of[p["group"]] == k] for k in (0, 1)]
    assert np.median(raw_by_fold[1]) - np.median(raw_by_fold[0]) > 0.5
