"""Other stackers on a stacked run's own dev features, by its grouped folds (dev only, no test):
python -m train.entailment.stacker_compare RUN [--out FILE]

RUN is a `train.entailment classifier=stacked` run dir (its stacked_features.npz). Each of the run's
candidates is refitted out of fold with the logistic regression at several C (the run's own C reproduces
its CV figures), with gradient-boosted trees (scikit-learn's HistGradientBoostingClassifier, class-balanced),
and, for candidates with structure features, with those features' context too (their mean over the other
QAs of the same predicate, as ctx_lex_* does for the lexical ones). Nothing is parsed again: the rows reuse
the run's features, so a comparison takes seconds where the features took minutes. Writes a JSON list of
rows (FILE, default RUN/stacker_compare.json) and prints a table.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from metrics.entailment import best_bacc_threshold, metrics_table, roc_auc
from models.entailment.features import group_indices
from models.entailment.structure import STRUCT_FEATURES
from train.entailment.data import group_folds
from train.entailment.stacker import FEATURES_FILE, _standardize, mean_subset_bacc

SUBSETS = ("cliff", "factscore", "verifiability")
LOGISTIC_C = (0.03, 0.1, 0.3, 1.0, 3.0)
# shallow trees, slow learning: 1,542 QAs and about 30 features
BOOSTED = {"boosted depth 2": dict(max_depth=2, learning_rate=0.05, max_iter=200, l2_regularization=1.0),
           "boosted depth 3": dict(max_depth=3, learning_rate=0.05, max_iter=150, l2_regularization=1.0)}


def load(run: Path) -> dict:
    path = run / FEATURES_FILE if run.is_dir() else run
    if not path.exists():
        raise FileNotFoundError(f"{path}: no saved stacker features; a train.entailment classifier=stacked run "
                                "writes them")
    d = np.load(path)
    return {**{k: d[k] for k in d.files if k != "info"}, "features": [str(f) for f in d["features"]],
            "info": json.loads(str(d["info"]))}


def context_of(X: np.ndarray, keys) -> np.ndarray:
    """Each column's mean over the other rows with the same predicate key (a row alone keeps its own)."""
    out = np.empty_like(X)
    for rows in group_indices([str(k) for k in keys]).values():
        for i in rows:
            others = [j for j in rows if j != i] or [i]
            out[i] = X[others].mean(0)
    return out


def learner(name: str):
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression

    if name.startswith("logistic"):
        return LogisticRegression(C=float(name.split("C=")[1]), class_weight="balanced", max_iter=2000)  # as fit_stacker
    return HistGradientBoostingClassifier(class_weight="balanced", random_state=13, **BOOSTED[name])


def evaluate(Z: np.ndarray, d: dict, folds, name: str) -> dict:
    y, ds = d["y"], [str(x) for x in d["dataset"]]
    Z = _standardize(Z)[0]  # as the stacker does
    oof = np.zeros(len(y))
    for tr, te in folds:
        oof[te] = learner(name).fit(Z[tr], y[tr]).predict_proba(Z[te])[:, 1]
    thr = best_bacc_threshold(oof.tolist(), y.tolist())
    return {"at_0.5": metrics_table(ds, y.tolist(), oof.tolist()), "threshold": thr, "auc": roc_auc(y.tolist(), oof.tolist()),
            # the stacker's own criterion (fit_stacker), at the CV threshold
            "mean_bacc": mean_subset_bacc(metrics_table(ds, y.tolist(), oof.tolist(), thr))}


def compare(d: dict) -> list[dict]:
    info, feats = d["info"], d["features"]
    examples = [{"group_id": str(g), "supported": int(s)} for g, s in zip(d["group_id"], d["y"])]
    folds = group_folds(examples, info["folds"], info["seed"])
    if not folds:
        raise ValueError("too few documents or labels for the grouped folds")
    learners = [f"logistic C={c:g}" for c in sorted({*LOGISTIC_C, info["C"]})] + list(BOOSTED)
    own = f"logistic C={info['C']:g}"
    rows = []
    for cand, cols in info["candidates"].items():
        Z = d["X"][:, [feats.index(f) for f in cols]]
        for name in learners:
            rows.append({"candidate": cand, "learner": name, **evaluate(Z, d, folds, name)})
        struct = [feats.index(f) for f in cols if f in STRUCT_FEATURES and f != "struct_fallback"]
        if struct:
            Zc = np.hstack([Z, context_of(d["X"][:, struct], d["predicate_key"])])
            rows.append({"candidate": cand + " + structure context", "learner": own, **evaluate(Zc, d, folds, own)})
    return rows


def table(rows: list[dict]) -> str:
    pct = lambda x: "-" if x is None else f"{100 * x:.1f}"  # noqa: E731
    lines = ["| candidate | learner | BAcc at 0.5 CLIFF / FActScore / Verifiability | overall | mean at CV threshold | AUC |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        t = r["at_0.5"]
        lines.append(f"| {r['candidate']} | {r['learner']} | {' / '.join(pct(t[s]['bacc']) for s in SUBSETS)} | "
                     f"{pct(t['overall']['bacc'])} | {pct(r['mean_bacc'])} | {pct(r['auc'])} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m train.entailment.stacker_compare", description=__doc__.split("\n")[0])
    ap.add_argument("run", type=Path, help="a stacked train.entailment run dir (or its stacked_features.npz)")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    rows = compare(load(args.run))
    out = args.out or (args.run if args.run.is_dir() else args.run.parent) / "stacker_compare.json"
    out.write_text(json.dumps(rows, indent=1) + "\n")
    print(table(rows))
    print(f"written: {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
