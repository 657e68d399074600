"""The contradiction recipe's spread over seeds, for the manifest:
python -m release.seeds --release DIR --seeds 13 14 15 [--ensemble E] [--out FILE]

Each seed is the whole recipe again (its encoder folds, encoder training, CV folds): stages
`contradiction` (the recipe's own seed) and `contradiction_seedS`, tested by `eval_contradiction` and
`eval_contradiction_seedS`. Writes eval/contradiction_seeds/metrics.json: each seed's test P / R / F1 /
AUC and threshold, their mean and sd, the threshold rule each run chose, and how much of the F1 spread
the threshold explains: each seed's F1 at its best threshold in hindsight has a spread of its own (the
ranking's), and the share of the F1 variance above that is the threshold's. `shipped_seed` is the seed whose
test F1 lies nearest the mean (the recipe's own seed on ties): what one seed gives. A release with seeds ships
their ensemble instead, which the training entry point assembles (python -m train.contradiction
ensemble.members=[...], train/contradiction/seed_ensemble.py: its threshold chosen on dev).

`seed_mean`: that ensemble (`--ensemble E`, its folder) read from files: its dev-chosen threshold and dev figures
as it records them, and the seeds' test P averaged and decided at that threshold. `common_rule`: one threshold
rule for every seed (the best mean held-out human F1 over the seeds) and each seed's test figures at it. Nothing
is chosen on test, and nothing here chooses a threshold of its own."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from sklearn.metrics import roc_auc_score

from metrics.contradiction import best_f1_threshold, binary_prf
from models.contradiction.ensemble import ENSEMBLE_FILE

FIGURES = ("precision", "recall", "f1", "auc")


def seed_dirs(seeds: list[int]) -> dict[int, tuple[str, str]]:
    """seed -> (its training run folder, its evaluation folder), relative to the release; the first seed is
    the recipe's own (stages contradiction / eval_contradiction)."""
    return {s: ("runs/contradiction", "eval/contradiction") if k == 0 else
            (f"runs/contradiction_seed{s}", f"eval/contradiction_seed{s}") for k, s in enumerate(seeds)}


def _read_predictions(path: Path) -> dict[str, dict]:
    return {r["id"]: r for r in (json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip())}


def _threshold_rule(release: Path, run: str) -> dict:
    """The run's chosen threshold rule as its cv_metrics.json records it (`rule`, `threshold`, `by_rule`)."""
    cv = json.loads((release / run / "cv_metrics.json").read_text())
    return (cv.get("chosen") or {}).get("threshold_rule") or {}


def _flagged(probs: list, t: float) -> list[bool]:
    """The decisions at `t`; a pair no model scored (P None) is never flagged."""
    return [p is not None and p >= t for p in probs]


def hindsight_f1(predictions: Path) -> float | None:
    """F1 at the best threshold on the test pairs themselves (an unscored pair: never flagged); None
    without labels or predictions. Only to split the spread, never to choose anything."""
    if not predictions.exists():
        return None
    rows = list(_read_predictions(predictions).values())
    if not rows or any(r.get("label") is None for r in rows):
        return None
    p = [r["p_contradiction"] if r.get("p_contradiction") is not None else -1.0 for r in rows]
    return best_f1_threshold(p, [int(r["label"]) for r in rows])[1]


def _mean(values: list) -> float | None:
    """The mean of the seeds' P of one pair; None when no seed scored it (empty or non-English: never flagged)."""
    kept = [v for v in values if v is not None]
    return float(np.mean(kept)) if kept else None


def seed_mean(release: Path, dirs: dict[int, tuple[str, str]], ensemble: Path) -> dict:
    """The seeds' ensemble (its folder): the threshold and dev figures its training entry point chose and
    recorded, and the seeds' test P averaged and decided at that threshold."""
    record = json.loads((release / ensemble / ENSEMBLE_FILE).read_text())
    info, t = record.get("info") or {}, float(record["threshold"])
    preds = [_read_predictions(release / ev / "predictions.jsonl") for _, ev in dirs.values()]
    ids = list(preds[0])
    if any(set(p) != set(ids) for p in preds):
        return {"skipped": "the seeds' test predictions are of different pairs"}
    p_test = [_mean([p[i].get("p_contradiction") for p in preds]) for i in ids]
    labels = np.array([preds[0][i]["label"] for i in ids])
    scored = [k for k, p in enumerate(p_test) if p is not None]
    return {**binary_prf(labels, _flagged(p_test, t)), "threshold": t, "threshold_rule": info.get("threshold_rule"),
            "held_out_human_f1": info.get("held_out_human_f1"), "cv_f1": info.get("cv_f1"), "cv_auc": info.get("cv_auc"),
            "auc": float(roc_auc_score(labels[scored], [p_test[k] for k in scored])) if len(set(labels[scored])) > 1 else None,
            "f1_best_threshold": best_f1_threshold([p if p is not None else -1.0 for p in p_test], labels.tolist())[1],
            "seeds": list(dirs), "ensemble": str(ensemble)}


def common_rule(release: Path, dirs: dict[int, tuple[str, str]]) -> dict:
    """One threshold rule for every seed, chosen on dev: the rule whose held-out human F1 (each run's
    cv_metrics.json, chosen.threshold_rule.by_rule) has the best mean over the seeds; then each seed's test
    figures at its own threshold by that rule, and their mean and sd."""
    by = {s: _threshold_rule(release, run).get("by_rule") for s, (run, _) in dirs.items()}
    first = next(iter(by.values())) or {}  # the rules in the order the runs scored them
    rules = [r for r in first if all(b and "f1_mean" in b.get(r, {}) for b in by.values())]
    if not rules:
        return {"skipped": "no seed's run scored its threshold rules on human pairs"}
    dev = {r: float(np.mean([by[s][r]["f1_mean"] for s in dirs])) for r in rules}
    rule = max(rules, key=lambda r: dev[r])
    per = {}
    for s, (_, ev) in dirs.items():
        rows = list(_read_predictions(release / ev / "predictions.jsonl").values())
        t = by[s][rule]["threshold"]
        per[str(s)] = {**binary_prf([r["label"] for r in rows], _flagged([r.get("p_contradiction") for r in rows], t)),
                       "threshold": t}
    f1 = np.array([v["f1"] for v in per.values()])
    return {"rule": rule, "dev_held_out_human_f1_mean": dev, "seeds": per, "f1_mean": float(f1.mean()),
            "f1_sd": float(f1.std(ddof=1)) if len(f1) > 1 else None}


def summarise(release: Path, seeds: list[int], ensemble: Path | None = None) -> dict:
    per = {}
    for s, (run, ev) in seed_dirs(seeds).items():
        metrics_file = release / ev / "metrics.json"
        if not metrics_file.exists():
            raise FileNotFoundError(f"{metrics_file}: seed {s}'s test evaluation wrote no metrics")
        m = json.loads(metrics_file.read_text())
        per[s] = {**{k: m.get(k) for k in FIGURES}, "threshold": m.get("threshold"),
                  "threshold_rule": _threshold_rule(release, run).get("rule", "pooled"),
                  "f1_best_threshold": hindsight_f1(release / ev / "predictions.jsonl"),
                  "model": f"{run}/contradiction", "run": run, "evaluation": ev}
    out = {"seeds": {str(s): v for s, v in per.items()}, "n": len(per)}
    for k in (*FIGURES, "f1_best_threshold"):
        vals = np.array([v[k] for v in per.values() if v[k] is not None], float)
        out[f"{k}_mean"] = float(vals.mean()) if len(vals) else None
        out[f"{k}_sd"] = float(vals.std(ddof=1)) if len(vals) > 1 else None
    if out["f1_sd"] and out["f1_best_threshold_sd"] is not None:
        # the F1 variance the ranking does not account for: the threshold's (0 when the ranking's is larger)
        out["threshold_share_of_f1_variance"] = float(max(0.0, 1 - out["f1_best_threshold_sd"] ** 2 / out["f1_sd"] ** 2))
    shipped = min(per, key=lambda s: (abs(per[s]["f1"] - out["f1_mean"]), seeds.index(s)))
    out.update(shipped_seed=shipped, shipped_model=per[shipped]["model"],
               threshold_rules=sorted({v["threshold_rule"] for v in per.values()}))
    if len(per) > 1:
        if ensemble is not None:
            out["seed_mean"] = seed_mean(release, seed_dirs(seeds), ensemble)
        out["common_rule"] = common_rule(release, seed_dirs(seeds))
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m release.seeds")
    ap.add_argument("--release", type=Path, default=Path("."))
    ap.add_argument("--seeds", type=int, nargs="+", required=True, help="the recipe's own seed first")
    ap.add_argument("--out", type=Path, default=None, help="default: RELEASE/eval/contradiction_seeds/metrics.json")
    ap.add_argument("--ensemble", type=Path, default=None,
                    help="the seeds' ensemble folder (python -m train.contradiction ensemble.members=...), relative to RELEASE")
    a = ap.parse_args(argv)
    out = summarise(a.release, a.seeds, a.ensemble)
    target = a.out or a.release / "eval" / "contradiction_seeds" / "metrics.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(out, indent=1))
    print(f"{target}: F1 {100 * out['f1_mean']:.1f} ± {100 * (out['f1_sd'] or 0):.1f} over {out['n']} seeds; "
          f"shipped: seed {out['shipped_seed']}")
    mean = out.get("seed_mean") or {}
    if "f1" in mean:
        print(f"the seeds' mean P: P / R / F1 {100 * mean['precision']:.1f} / {100 * mean['recall']:.1f} / {100 * mean['f1']:.1f}, "
              f"AUC {100 * mean['auc']:.1f}, threshold {mean['threshold']:.3f} ({mean['threshold_rule']})")


if __name__ == "__main__":
    main()
