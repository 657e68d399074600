"""The stacked entailment classifier for train.entailment: a logistic regression over the lexical
signals (models.entailment.features), optionally the embedding similarity and a neural model's
out-of-fold score, cross-validated by the same grouped folds and saved as a `stacked` checkpoint."""
from __future__ import annotations

import shutil
from pathlib import Path

import hydra
from omegaconf import DictConfig

from data_prep.records import read_jsonl, write_jsonl
from metrics.entailment import best_bacc_threshold, metrics_table, response_correlations
from models import entailment as E
from models.entailment.contradiction_signal import FEATURES as SIGNAL_FEATURES
from models.entailment.features import CONTEXT_FEATURES
from models.entailment.structure import EXACT_FEATURES, PRONOUN_FEATURES, SIMILARITY_FEATURES, ReferenceStructure
from train.entailment.data import group_folds


def fit_stacker(cfg: DictConfig, examples, oof_neural: list[float] | None, run_dir: Path,
                neural_dir: Path | None) -> dict:
    """Logistic regression over lexical signals (+ the neural out-of-fold score, + the reference's
    QAs when cfg.parser and cfg.detector are given), evaluated by the same grouped CV, then fitted
    on all dev and saved as a `stacked` checkpoint. The CV chooses (mean balanced accuracy over the
    three subsets) among the recipe's nested candidate sets (cfg.stack.candidates, candidate_sets below):
    the lexical set, + the other QAs of the same predicate, + the exact structure features, + their
    similarity versions when cfg.structure_embedder names a sentence embedder, + the structure features again
    for QAs answered by a lone pronoun (pron_*), + the pair encoder's contradiction signal."""
    import numpy as np

    feats = list(cfg.stack.features)
    if oof_neural is not None and "neural" not in feats:
        feats.append("neural")
    if oof_neural is None:
        feats = [f for f in feats if f != "neural"]
    structure = None
    if cfg.parser and cfg.detector:
        structure = ReferenceStructure.from_pretrained(cfg.parser, cfg.detector, embedder=cfg.structure_embedder,
                                                       scope=cfg.structure_scope or "all")
    signal = contradiction_signal(cfg, structure)
    candidates = candidate_sets(cfg.stack.candidates, feats, structure, bool(cfg.structure_embedder), signal)
    every = candidates[list(candidates)[-1]]
    emb = E.EmbeddingScorer() if "embedding" in every else None
    stacker = E.StackedScorer(every, embedding=emb, neural=E.MajorityScorer() if "neural" in every else None,
                              structure=structure, contradiction=signal)
    X = np.asarray(_feature_matrix(stacker, examples, oof_neural), dtype=float)
    y = np.asarray([e["supported"] for e in examples])
    ds = [e["dataset"] for e in examples]
    C = float(cfg.stack.C)
    save_features(run_dir / FEATURES_FILE, X, every, candidates, examples, cfg)
    results = {}
    for name, cols in candidates.items():
        Z, mean, std = _standardize(X[:, [every.index(f) for f in cols]])
        oof = _out_of_fold(Z, y, examples, C, cfg)
        thr = best_bacc_threshold(oof.tolist(), y.tolist())
        table = metrics_table(ds, y.tolist(), oof.tolist(), thr)
        resp = response_correlations([e["response_id"] for e in examples], ds, y.tolist(), oof.tolist())
        results[name] = {"features": cols, "threshold": thr, "Z": Z, "mean": mean, "std": std, "oof": oof,
                         "cv": {"at_0.5": metrics_table(ds, y.tolist(), oof.tolist()), "at_threshold": table,
                                "responses": resp},
                         "mean_bacc": mean_subset_bacc(table)}
    chosen = max(results, key=lambda n: results[n]["mean_bacc"])
    best = results[chosen]
    feats = best["features"]
    extra = extra_labels(cfg, examples, stacker, every, feats, best, y, C)
    if extra and extra["weight"]:  # the extra labels won on dev: their CV figures are the model's
        best.update(extra.pop("chosen"))
    extra.pop("chosen", None)
    info = {"features": feats, "C": C, "threshold": best["threshold"], "cv": best["cv"], "chosen": chosen,
            "candidates": {n: {"features": r["features"], "mean_bacc": r["mean_bacc"], "cv": r["cv"]}
                           for n, r in results.items()},
            **({"extra": extra} if extra else {})}
    if structure is not None:
        info["structure"] = {**structure.stats, **structure.paths}
    from sklearn.linear_model import LogisticRegression

    Z_fit, y_fit, w_fit = best["Z"], y, None
    if extra and extra["weight"]:
        Z_fit, y_fit = np.vstack([best["Z"], extra["_Z"]]), np.concatenate([y, extra["_y"]])
        w_fit = np.concatenate([np.ones(len(y)), np.full(len(extra["_y"]), extra["weight"])])
    for k in ("_Z", "_y"):
        extra.pop(k, None)
    lr = LogisticRegression(C=C, class_weight="balanced", max_iter=2000).fit(Z_fit, y_fit, sample_weight=w_fit)
    out = run_dir / "stacked"
    out.mkdir(parents=True, exist_ok=True)
    # the chosen model's out-of-fold scores: a dev-side comparison of two classifiers
    # (python -m evaluation.entailment_compare A/stacked_oof_predictions.jsonl B/...)
    write_jsonl(run_dir / "stacked_oof_predictions.jsonl",
                [{"example_id": e["example_id"], "response_id": e["response_id"], "dataset": e["dataset"],
                  "supported": int(e["supported"]), "score": float(p)} for e, p in zip(examples, best["oof"])])
    uses_structure = any(f.startswith("struct_") for f in feats)
    if uses_structure and not set(SIMILARITY_FEATURES) & set(feats):
        structure.paths.pop("embedder", None)  # chosen without the similarity: loading needs no embedder
    fmt = {"family": "stacked", "features": feats, "coef": lr.coef_[0].tolist(),
           "intercept": float(lr.intercept_[0]), "mean": best["mean"].tolist(), "std": best["std"].tolist(),
           "threshold": best["threshold"], "neural": "neural" if oof_neural is not None else None,
           "embedding": "embedding" in feats, "structure": structure.paths if uses_structure else None,
           "contradiction": signal.paths if any(f in feats for f in SIGNAL_FEATURES) else None}
    if oof_neural is not None and neural_dir is not None:
        shutil.copytree(neural_dir, out / "neural", dirs_exist_ok=True)
    E.save_format(out, fmt)
    info["checkpoint"] = str(out)
    info["weights"] = dict(zip(feats, fmt["coef"]))
    return info


# the feature groups a candidate set adds to the one before it (conf/train_entailment.yaml `stack.candidates`)
GROUPS = ("features", "context", "structure", "structure_similarity", "pronoun_structure", "sentence_similarity",
          "contradiction")


def candidate_sets(groups, feats: list[str], structure, embedder: bool, signal) -> dict[str, list[str]]:
    """{name: features} from the recipe's candidates (feature groups, in order): each set is the one before plus
    its group, named `lexical` (features) or `with_GROUP`. A set whose signal this run lacks (no parser and
    detector for the structure, no sentence embedder for its similarity, no pair encoders for the
    contradiction signal) is left out."""
    available = {"features": True, "context": True, "structure": structure is not None,
                 "structure_similarity": structure is not None and embedder, "pronoun_structure": structure is not None,
                 "sentence_similarity": signal is not None, "contradiction": signal is not None}
    out, before = {}, []
    for group in groups:
        if group not in GROUPS:
            raise ValueError(f"stack.candidates: unknown feature group {group!r}; one of {list(GROUPS)}")
        if not available[group]:
            continue
        added = {"features": feats, "context": CONTEXT_FEATURES, "structure": EXACT_FEATURES,
                 "structure_similarity": SIMILARITY_FEATURES, "sentence_similarity": ["ctr_sent_sim"],
                 "contradiction": ["ctr_sent_sim", "ctr_max"],
                 # the structure signals of QAs answered by a lone pronoun, weighed apart
                 "pronoun_structure": [p for p in PRONOUN_FEATURES if p[len("pron_"):] in before]}[group]
        before = before + [f for f in added if f not in before]
        out["lexical" if group == "features" else f"with_{group}"] = before
    if not out:
        raise ValueError(f"stack.candidates {list(groups)}: no candidate set this run can build")
    return out


FEATURES_FILE = "stacked_features.npz"


def save_features(path: Path, X, every: list[str], candidates: dict, examples, cfg: DictConfig) -> None:
    """The dev feature matrix the CV read (every candidate's columns), with labels, folds and predicate keys:
    other stackers are compared on it without parsing again (python -m train.entailment.stacker_compare RUN)."""
    import json

    import numpy as np

    keys = E.predicate_keys(examples)
    keys = [f"{e['response_id']}|{k[0]}|{k[1]}" for e, k in zip(examples, keys)] if keys is not None else \
        [f"{e['response_id']}|qa{i}" for i, e in enumerate(examples)]  # no predicate known: each QA alone
    np.savez_compressed(path, X=X, features=np.array(every), y=np.asarray([int(e["supported"]) for e in examples]),
                        dataset=np.array([e["dataset"] for e in examples]),
                        example_id=np.array([e["example_id"] for e in examples]),
                        response_id=np.array([e["response_id"] for e in examples]),
                        group_id=np.array([str(e["group_id"]) for e in examples]), predicate_key=np.array(keys),
                        info=np.array(json.dumps({"candidates": candidates, "C": float(cfg.stack.C),
                                                  "folds": int(cfg.cv.folds or 5), "seed": int(cfg.seed)})))


def contradiction_signal(cfg: DictConfig, structure):
    """The pair encoder signal when cfg.contradiction_signal.encoders names encoder folders, else None; its
    embedder is the structure's when they are the same model (one in memory)."""
    sig = cfg.contradiction_signal
    if not sig.encoders:
        return None
    from models.entailment.contradiction_signal import ContradictionSignal

    name = sig.embedder or cfg.structure_embedder or "minilm"
    shared = structure.embedder if structure is not None and structure.embedder is not None and \
        structure.paths.get("embedder") == name else None
    return ContradictionSignal.from_pretrained([str(e) for e in sig.encoders], name, int(sig.k),
                                               embedder_model=shared)


def _feature_matrix(stacker, examples, oof_neural) -> list:
    """One row per example, computed one premise at a time (the reference is parsed once)."""
    X = [None] * len(examples)
    by_prem: dict[str, list[int]] = {}
    for i, e in enumerate(examples):
        by_prem.setdefault(e["response_id"], []).append(i)
    for idx in by_prem.values():
        e0 = examples[idx[0]]
        rows = stacker.feature_rows(e0["premise_tokens"], [examples[i]["hypothesis"] for i in idx],
                                    [examples[i]["answer"] for i in idx],
                                    predicate_keys=E.predicate_keys([examples[i] for i in idx]),
                                    neural_scores=[oof_neural[i] for i in idx] if oof_neural is not None else None)
        for i, r in zip(idx, rows):
            X[i] = r
    return X


def mean_subset_bacc(table: dict) -> float:
    """The CV's criterion: the mean BAcc of the sub-datasets present (a dev slice may hold one or two of them)."""
    import numpy as np

    return float(np.mean([table[d]["bacc"] for d in ("cliff", "factscore", "verifiability") if table[d]["bacc"] is not None]))


def _standardize(X):
    mean, std = X.mean(0), X.std(0) + 1e-6
    return (X - mean) / std, mean, std


def _out_of_fold(Z, y, examples, C: float, cfg, extra=None):
    """Out-of-fold P(supported) of dev by the grouped folds; extra = (Z, y, groups, weight): labelled rows
    from other files that join each fold's training part (never one of the held-out fold's documents),
    each weighing `weight` dev rows."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    oof = np.zeros(len(y))
    for tr, te in group_folds(examples, cfg.cv.folds or 5, cfg.seed):
        Z_tr, y_tr, w_tr = Z[tr], y[tr], np.ones(len(tr))
        if extra is not None:
            eZ, ey, egroups, weight = extra
            held_out = {examples[i]["group_id"] for i in te}
            keep = [i for i, g in enumerate(egroups) if g not in held_out]
            Z_tr, y_tr = np.vstack([Z_tr, eZ[keep]]), np.concatenate([y_tr, ey[keep]])
            w_tr = np.concatenate([w_tr, np.full(len(keep), weight)])
        lr = LogisticRegression(C=C, class_weight="balanced", max_iter=2000).fit(Z_tr, y_tr, sample_weight=w_tr)
        oof[te] = lr.predict_proba(Z[te])[:, 1]
    return oof


def extra_labels(cfg: DictConfig, examples, stacker, every, feats, best, y, C: float) -> dict:
    """cfg.extra.files (benchmark-format JSONL, e.g. python -m annotate.export): labelled QAs that join the
    training part of every CV fold at each weight of cfg.extra.weights; the weight (0 = leave them out)
    with the best mean dev BAcc wins, ties to 0. A file holding responses of the test split
    (cfg.extra.exclude) is refused. Returns {} without extra files."""
    import numpy as np

    from data_prep.consistency import read_consistency

    files = list(cfg.extra.files or [])
    if not files:
        return {}
    if "neural" in feats:
        raise ValueError("extra.files with a neural feature: the extra rows have no out-of-fold neural score")
    test_ids = set()
    if cfg.extra.exclude:
        test, _ = read_consistency(hydra.utils.to_absolute_path(cfg.extra.exclude), "test")
        test_ids = {e["response_id"] for e in test}
    rows = []
    for f in files:
        got, skipped = read_consistency(hydra.utils.to_absolute_path(str(f)), "extra")
        leaked = sorted({e["response_id"] for e in got} & test_ids)
        if leaked:
            raise ValueError(f"{f}: {len(leaked)} responses of the test split {cfg.extra.exclude} (e.g. {leaked[0]}): "
                             "training on them would leak the test")
        rows += got
    X = np.asarray(_feature_matrix(stacker, rows, None), dtype=float)[:, [every.index(f) for f in feats]]
    eZ, ey = (X - best["mean"]) / best["std"], np.asarray([e["supported"] for e in rows])
    groups = [e["group_id"] for e in rows]
    ds = [e["dataset"] for e in examples]
    by_weight, cells = {0.0: best["mean_bacc"]}, {}
    for w in [float(x) for x in cfg.extra.weights]:
        oof = _out_of_fold(best["Z"], y, examples, C, cfg, (eZ, ey, groups, w))
        thr = best_bacc_threshold(oof.tolist(), y.tolist())
        table = metrics_table(ds, y.tolist(), oof.tolist(), thr)
        by_weight[w] = mean_subset_bacc(table)
        cells[w] = {"threshold": thr, "oof": oof, "mean_bacc": by_weight[w],
                    "cv": {"at_0.5": metrics_table(ds, y.tolist(), oof.tolist()), "at_threshold": table,
                           "responses": response_correlations([e["response_id"] for e in examples], ds,
                                                              y.tolist(), oof.tolist())}}
    weight = max(by_weight, key=lambda w: (by_weight[w], -w))  # ties: fewer extra labels
    return {"files": [str(f) for f in files], "examples": len(rows), "cv_mean_bacc_by_weight": by_weight,
            "weight": weight, "chosen": cells.get(weight, {}), "_Z": eZ, "_y": ey}


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
