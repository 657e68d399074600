"""The pair encoder's part of train.contradiction: out-of-fold encoder scores for every selection
pair, and the final encoder.

A selection pair whose file the encoder also trains on (chatgpt.big) is scored by an encoder that
never saw its prompt: that file's prompts are split in `encoder.folds` parts, and encoder k trains on
all the training pairs except part k's, then scores part k. A selection pair of a file the encoder
never trains on (validation) is scored by the final encoder, trained on all the training pairs.
The stacker and the threshold are then chosen on scores that are all out of sample, as the test's
will be. Each encoder is a stage of its own in RUN/encoder/ (train/contradiction/pair_encoder.py: resumable).
`encoder.stage=fold<k>|final` trains that one stage and stops, so that the stages can train at once
in separate processes (cores, GPUs); the run without it then finds them done and reloads them.

`encoder.final`: `retrain` (a final encoder trained on all the training pairs scores validation and
the test) or `fold_ensemble` (no final stage: the fold encoders together, the mean of their P, score
validation and the test; the threshold is then chosen on the scores of the models that will be used,
the final stage's training time is saved, and scoring costs one pass per fold).
"""
from __future__ import annotations

import logging
import random
from pathlib import Path

import hydra
from omegaconf import DictConfig

from models.contradiction.pair_encoder import PairEncoderEnsemble, fit_platt
from train.contradiction.pair_encoder import train_stage

log = logging.getLogger(__name__)


def prompt_folds(prompts: set[str], folds: int, seed: int) -> dict[str, int]:
    """Each prompt's encoder fold: prompts shuffled (seeded) and dealt round-robin."""
    order = sorted(prompts)
    random.Random(seed).shuffle(order)
    return {p: i % folds for i, p in enumerate(order)}


def encoder_scores(cfg: DictConfig, sel_pairs: list[dict], train_pairs: list[dict], run_dir: Path,
                   calibration_files: set[str] | None = None):
    """(out-of-sample P(contradiction) of every selection pair, the final encoder, info).
    Pairs carry `file` (where they were read) and `group` (their prompt). With `encoder.calibrate`, each
    fold encoder is Platt-calibrated on the pairs of `calibration_files` it scored out of fold (default: every
    selection file), and its scores and the ensemble's are the calibrated ones."""
    enc, seed = cfg.encoder, int(cfg.seed)
    shared_files = {p["file"] for p in train_pairs} & {p["file"] for p in sel_pairs}
    folds = int(enc.folds) if shared_files else 0
    if shared_files and folds < 2:
        raise ValueError(f"encoder.folds={enc.folds}: selection files {sorted(shared_files)} are also encoder "
                         "training files, so their scores need at least 2 folds")
    scores: list[float | None] = [None] * len(sel_pairs)
    fold_of = prompt_folds({p["group"] for p in train_pairs + sel_pairs if p["file"] in shared_files}, folds, seed) \
        if folds else {}
    info = {"folds": folds, "shared_files": sorted(shared_files), "stages": {}}

    def in_fold(p: dict, k: int) -> bool:
        return p["file"] in shared_files and fold_of[p["group"]] == k

    stages_dir = Path(hydra.utils.to_absolute_path(str(enc.stages_from))) if enc.stages_from else run_dir / "encoder"

    def stage(name: str):
        """Train (or reload) one stage: fold k trains on every training pair outside fold k, seed + k;
        the final stage on all of them, seed. With encoder.stages_from, reload it from there (never train)."""
        if enc.stages_from and not (stages_dir / name / "model").is_dir():
            raise FileNotFoundError(f"encoder.stages_from={enc.stages_from}: no finished stage {name} in {stages_dir}")
        if name == "final":
            return train_stage(enc, train_pairs, stages_dir / "final", seed, cfg)
        k = int(name[len("fold"):])
        return train_stage(enc, [p for p in train_pairs if not in_fold(p, k)], stages_dir / name, seed + k, cfg)

    final_mode = str(enc.final or "retrain")
    if final_mode not in ("retrain", "fold_ensemble"):
        raise ValueError(f"encoder.final={final_mode}: retrain | fold_ensemble")
    if final_mode == "fold_ensemble" and folds < 2:
        raise ValueError("encoder.final=fold_ensemble needs encoder folds: no selection file is an encoder training file")
    stages = [f"fold{k}" for k in range(folds)] + (["final"] if final_mode == "retrain" else [])
    only = enc.stage
    if only is not None:  # one stage alone, then stop
        if str(only) not in stages:
            raise ValueError(f"encoder.stage={only}: one of {stages}")
        stage(str(only))
        return None
    members = []
    for k in range(folds):
        encoder = stage(f"fold{k}")
        members.append(encoder)
        info["stages"][f"fold{k}"] = encoder.info
        todo = [i for i, p in enumerate(sel_pairs) if in_fold(p, k)]
        encoder.calibration = None  # the raw P: a calibration is fitted on them below
        fold_scores = encoder.score([sel_pairs[i] for i in todo])
        if enc.calibrate:
            fit_on = [j for j, i in enumerate(todo) if calibration_files is None or sel_pairs[i]["file"] in calibration_files]
            try:
                encoder.calibration = fit_platt([fold_scores[j] for j in fit_on], [sel_pairs[todo[j]]["label"] for j in fit_on])
            except ValueError as e:
                raise ValueError(f"encoder.calibrate: fold {k}'s out-of-fold selection pairs: {e}") from None
            fold_scores = encoder.calibrated(fold_scores)
            info.setdefault("calibration", {})[f"fold{k}"] = encoder.calibration
            log.info("encoder fold %d: Platt calibration %s", k, encoder.calibration)
        for i, s in zip(todo, fold_scores):
            scores[i] = s
        log.info("encoder fold %d: trained on %d pairs, scored %d selection pairs", k, encoder.info.get("train_pairs", -1),
                 len(todo))
    if final_mode == "fold_ensemble":
        final = PairEncoderEnsemble(members, info={"members": [f"fold{k}" for k in range(folds)]})
    else:
        final = stage("final")
    info["stages"]["final"] = final.info
    todo = [i for i, s in enumerate(scores) if s is None]
    for i, s in zip(todo, final.score([sel_pairs[i] for i in todo])):
        scores[i] = s
    return scores, final, info
