"""The seeds of one contradiction recipe as one scorer (python -m train.contradiction +experiment=X
"ensemble.members=[R13,R14,R15]" hydra.run.dir=E): each member is a finished run of the recipe (its
contradiction/ model and validation_analysis.jsonl, the selection pairs' out-of-fold P). Their mean P is
the ensemble's; its threshold is read off the members' averaged out-of-fold P by the recipe's own rule
(cv.threshold_rule, train/contradiction/threshold.py), so dev alone decides it. Writes E/contradiction/
(models/contradiction/ensemble.py: members hard-linked) and E/ensemble_metrics.json. No test pair is read."""
from __future__ import annotations

import json
import logging
from pathlib import Path

import hydra
import numpy as np
from omegaconf import DictConfig, OmegaConf
from sklearn.metrics import roc_auc_score

from metrics.contradiction import binary_prf
from models.contradiction import write_ensemble
from train.contradiction.threshold import choose_threshold
from train.contradiction.threshold_table import read_analysis

log = logging.getLogger(__name__)
ANALYSIS = "validation_analysis.jsonl"


def _mean(values: list) -> float | None:
    """The members' mean P of one pair; None when no member scored it (never flagged)."""
    kept = [v for v in values if v is not None]
    return float(np.mean(kept)) if kept else None


def members_mean(runs: list[Path]) -> tuple[list[dict], list[float | None]]:
    """(the first member's selection rows, the members' mean out-of-fold P of each); the members must have
    scored the same selection pairs in the same order."""
    missing = [str(r / ANALYSIS) for r in runs if not (r / ANALYSIS).is_file()]
    if missing:
        raise FileNotFoundError(f"ensemble.members: no out-of-fold scores in {missing} (a finished run of the recipe "
                                "writes them)")
    analyses = [read_analysis(r / ANALYSIS) for r in runs]
    for run, a in zip(runs[1:], analyses[1:]):
        if [x["id"] for x in a] != [x["id"] for x in analyses[0]]:
            raise ValueError(f"ensemble.members: {run / ANALYSIS} scored other selection pairs than {runs[0] / ANALYSIS} "
                             "(another selection file or data.limit)")
    return analyses[0], [_mean([a[i]["p"] for a in analyses]) for i in range(len(analyses[0]))]


def assemble(cfg: DictConfig, run_dir: Path) -> dict:
    runs = [Path(hydra.utils.to_absolute_path(str(m))) for m in cfg.ensemble.members]
    rows, p_sel = members_mean(runs)
    rule = cfg.cv.threshold_rule
    rules = [str(r) for r in rule] if OmegaConf.is_list(rule) else str(rule)
    human_stems = {Path(str(f)).stem for f in cfg.selection.human_files}
    labels = np.array([x["label"] for x in rows])
    scored = np.array([p is not None for p in p_sel])
    p = np.array([v if v is not None else 0.0 for v in p_sel])
    chosen = choose_threshold(rules, p, labels, np.array([x["file"] in human_stems for x in rows]),
                              [x["group"] for x in rows], int(cfg.cv.folds), int(cfg.cv.threshold_repeats),
                              int(cfg.seed), scored)
    t = chosen["threshold"]
    by = chosen["by_rule"].get(chosen["rule"], {})
    dev = {"cv_f1": binary_prf(labels, scored & (p >= t))["f1"],
           "cv_auc": float(roc_auc_score(labels[scored], p[scored])) if len(set(labels[scored])) > 1 else None,
           "held_out_human_f1": by.get("f1_mean")}
    folder = write_ensemble(run_dir / "contradiction", [r / "contradiction" for r in runs], t,
                            {"members": [str(m) for m in cfg.ensemble.members], "threshold_rule": chosen["rule"], **dev})
    metrics = {"threshold": t, "threshold_rule": chosen["rule"], **dev, "members": [str(m) for m in cfg.ensemble.members],
               "selection_pairs": len(rows), "by_rule": chosen["by_rule"]}
    (run_dir / "ensemble_metrics.json").write_text(json.dumps(metrics, indent=1))
    log.info("the %d members' mean P: threshold %.3f (%s), out-of-fold F1 %.3f, AUC %s; %s", len(runs), t,
             chosen["rule"], dev["cv_f1"], dev["cv_auc"], folder)
    return metrics
