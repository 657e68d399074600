"""The stacked entailment classifier for train.entailment: a logistic regression over the lexical
signals (models.entailment_features), optionally the embedding similarity and a neural model's
out-of-fold score, cross-validated by the same grouped folds and saved as a `stacked` checkpoint."""
from __future__ import annotations

import shutil
from pathlib import Path

import hydra
from omegaconf import DictConfig

from data_prep.records import read_jsonl
from metrics.entailment import best_threshold, metrics_table
from models import entailment as E
from train.entailment_data import group_folds


def fit_stacker(cfg: DictConfig, examples, oof_neural: list[float] | None, run_dir: Path,
                neural_dir: Path | None) -> dict:
    """Logistic regression over lexical signals (+ the neural out-of-fold score), evaluated by the
    same grouped CV, then fitted on all dev and saved as a `stacked` checkpoint."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    feats = list(cfg.stack.features)
    if oof_neural is not None and "neural" not in feats:
        feats.append("neural")
    if oof_neural is None:
        feats = [f for f in feats if f != "neural"]
    emb = E.EmbeddingScorer() if "embedding" in feats else None
    stacker = E.StackedScorer([f for f in feats], embedding=emb,
                              neural=E.MajorityScorer() if "neural" in feats else None)
    X = [None] * len(examples)
    by_prem: dict[str, list[int]] = {}
    for i, e in enumerate(examples):
        by_prem.setdefault(e["response_id"], []).append(i)
    for idx in by_prem.values():
        e0 = examples[idx[0]]
        rows = stacker.feature_rows(e0["premise_tokens"], [examples[i]["hypothesis"] for i in idx],
                                    [examples[i]["answer"] for i in idx],
                                    neural_scores=[oof_neural[i] for i in idx] if oof_neural is not None else None)
        for i, r in zip(idx, rows):
            X[i] = r
    X = np.asarray(X, dtype=float)
    y = np.asarray([e["supported"] for e in examples])
    mean, std = X.mean(0), X.std(0) + 1e-6
    Z = (X - mean) / std
    C = float(cfg.stack.C)
    oof = np.zeros(len(y))
    for tr, te in group_folds(examples, cfg.cv.folds or 5, cfg.seed):
        lr = LogisticRegression(C=C, class_weight="balanced", max_iter=2000).fit(Z[tr], y[tr])
        oof[te] = lr.predict_proba(Z[te])[:, 1]
    thr = best_threshold(y.tolist(), oof.tolist())
    ds = [e["dataset"] for e in examples]
    info = {"features": feats, "C": C, "threshold": thr,
            "cv": {"at_0.5": metrics_table(ds, y.tolist(), oof.tolist()),
                   "at_threshold": metrics_table(ds, y.tolist(), oof.tolist(), thr)}}
    lr = LogisticRegression(C=C, class_weight="balanced", max_iter=2000).fit(Z, y)
    out = run_dir / "stacked"
    out.mkdir(parents=True, exist_ok=True)
    fmt = {"family": "stacked", "features": feats, "coef": lr.coef_[0].tolist(),
           "intercept": float(lr.intercept_[0]), "mean": mean.tolist(), "std": std.tolist(),
           "threshold": thr, "neural": "neural" if oof_neural is not None else None,
           "embedding": emb is not None}
    if oof_neural is not None and neural_dir is not None:
        shutil.copytree(neural_dir, out / "neural", dirs_exist_ok=True)
    E.save_format(out, fmt)
    info["checkpoint"] = str(out)
    info["weights"] = dict(zip(feats, fmt["coef"]))
    return info


def load_neural_run(run: str, examples: list[dict]) -> tuple[list[float], Path]:
    """A finished neural run's out-of-fold dev scores and checkpoint, to refit a stacker on them."""
    run_dir = Path(hydra.utils.to_absolute_path(str(run)))
    oof_file, ckpt = run_dir / "oof_predictions.jsonl", run_dir / "checkpoint"
    if not oof_file.exists() or not (ckpt / E.FORMAT_FILE).exists():
        raise FileNotFoundError(f"{run_dir}: needs oof_predictions.jsonl and checkpoint/ from a neural train.entailment run")
    by_id = {r["example_id"]: r["score"] for r in read_jsonl(oof_file)}
    missing = [e["example_id"] for e in examples if e["example_id"] not in by_id]
    if missing:
        raise ValueError(f"{oof_file}: no out-of-fold score for {len(missing)} examples (e.g. {missing[0]})")
    return [by_id[e["example_id"]] for e in examples], ckpt
