"""What a classifier could save the annotators, simulated on the released votes (dev + test, 3 per QA).

    python -m benchmarks.annotate_model_help [--checkpoint DIR] [--target 0.99] [--out F]

Per dataset and overall:
- `classifier_agrees`: share of QAs where the classifier's decision (P(supported) >= 0.5) is the majority
  of the three votes; `bacc` the balanced accuracy of the same decisions;
- the labels each collection strategy needs, replaying the release's votes in their order:
  `fixed3` three votes per QA (the paper); `stop_at_2` the third vote only when the first two disagree
  (no model, same majority labels); `model_vote` for the share f of QAs the classifier is most sure of
  (ordered by |P - 0.5|), its decision counts as a vote: one human vote that agrees with it settles the
  QA, else a second settles it (at most two); the rest as stop_at_2. `random_vote` does the same for a
  random share f (seeded): what the ordering buys.
- `saved_at_target`: the largest f whose labels still equal the 3-vote majority on at least --target of the
  QAs, and the labels it saves against stop_at_2 and fixed3 there.
The classifier is the lexical rule (models.entailment LexicalScorer: needs no checkpoint) unless
--checkpoint names a trained one. Writes benchmarks/results/annotate_model_help-<time>.json.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
from pathlib import Path

from benchmarks.common import write_result

SHARES = [round(0.1 * i, 1) for i in range(11)]


def simulate(votes: list[list[int]], model: list[int], order: list[int], share: float) -> tuple[int, list[int]]:
    """(labels used, final labels) when the first `share` of `order` take the model's decision as a vote.
    Polarity as in the file: 1 = not supported."""
    helped = set(order[: round(share * len(order))])
    used, final = 0, []
    for i, v in enumerate(votes):
        if i in helped:
            if v[0] == model[i]:
                used, label = used + 1, v[0]
            else:  # v0 and the model disagree: the second vote decides
                used, label = used + 2, v[1]
        elif v[0] == v[1]:
            used, label = used + 2, v[0]
        else:
            used, label = used + 3, int(sum(v[:3]) >= 2)
        final.append(label)
    return used, final


def bacc(gold: list[int], pred: list[int]) -> float | None:
    rates = []
    for cls in (0, 1):
        idx = [i for i, g in enumerate(gold) if g == cls]
        if idx:
            rates.append(sum(pred[i] == cls for i in idx) / len(idx))
    return sum(rates) / len(rates) if rates else None


def measure(votes, p_supported, target: float, seed: int) -> dict:
    majority = [int(sum(v) >= 2) for v in votes]
    model = [0 if p >= 0.5 else 1 for p in p_supported]
    n = len(votes)
    by_confidence = sorted(range(n), key=lambda i: -abs(p_supported[i] - 0.5))
    shuffled = list(range(n))
    random.Random(seed).shuffle(shuffled)
    curve = []
    for f in SHARES:
        used, final = simulate(votes, model, by_confidence, f)
        used_r, final_r = simulate(votes, model, shuffled, f)
        curve.append({"share": f, "labels": used, "same_as_majority": sum(a == b for a, b in zip(final, majority)) / n,
                      "random_labels": used_r,
                      "random_same_as_majority": sum(a == b for a, b in zip(final_r, majority)) / n})
    stop2 = curve[0]["labels"]
    ok = [c for c in curve if c["same_as_majority"] >= target]
    best = max(ok, key=lambda c: c["share"])
    ok_r = [c for c in curve if c["random_same_as_majority"] >= target]
    best_r = max(ok_r, key=lambda c: c["share"])
    return {"qas": n, "classifier_agrees": sum(m == g for m, g in zip(model, majority)) / n,
            "bacc": bacc(majority, model), "fixed3": 3 * n, "stop_at_2": stop2,
            "saved_at_target": {"target": target, "share": best["share"], "labels": best["labels"],
                                "saved_vs_stop_at_2": stop2 - best["labels"], "saved_vs_fixed3": 3 * n - best["labels"],
                                "random_share": best_r["share"], "random_saved_vs_stop_at_2": stop2 - best_r["random_labels"]},
            "curve": curve}


def score(examples, checkpoint: str | None) -> list[float]:
    if checkpoint:
        from models.entailment.io import load_scorer

        return list(load_scorer(checkpoint).score_examples(examples))
    from models.entailment.scorers import LexicalScorer

    return list(LexicalScorer().score_examples(examples))


def main(argv=None) -> dict:
    from data_prep.consistency import read_consistency

    ap = argparse.ArgumentParser(prog="python -m benchmarks.annotate_model_help", description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", type=Path, default=Path(os.environ.get("QASEM_DATA_DIR", "../shared/data")))
    ap.add_argument("--checkpoint", default=None, help="a trained entailment classifier (default: the lexical rule)")
    ap.add_argument("--target", type=float, default=0.99, help="share of QAs whose label must equal the 3-vote majority")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    examples = [e for s in ("dev", "test")
                for e in read_consistency(a.data_dir / "qasem-consistency" / f"{s}.jsonl", s)[0]]
    p = score(examples, a.checkpoint)
    result = {"classifier": a.checkpoint or "lexical", "by_dataset": {}}
    for ds in ("cliff", "factscore", "verifiability", None):
        idx = [i for i, e in enumerate(examples) if ds is None or e["dataset"] == ds]
        result["by_dataset"][ds or "overall"] = measure([examples[i]["votes"] for i in idx], [p[i] for i in idx],
                                                        a.target, a.seed)
    path = write_result("annotate_model_help", result, a.out)
    print(f"{'dataset':<14}{'QAs':>6}{'agrees':>8}{'BAcc':>7}{'fixed3':>8}{'stop@2':>8}{'share':>7}{'labels':>8}"
          f"{'saved':>7}{'random':>8}")
    for ds, r in result["by_dataset"].items():
        s = r["saved_at_target"]
        print(f"{ds:<14}{r['qas']:>6}{100 * r['classifier_agrees']:>7.1f}%{100 * r['bacc']:>6.1f}{r['fixed3']:>8}"
              f"{r['stop_at_2']:>8}{s['share']:>7}{s['labels']:>8}{s['saved_vs_stop_at_2']:>7}"
              f"{s['random_saved_vs_stop_at_2']:>8}")
    print(f"wrote {path}", file=sys.stderr)
    return result


if __name__ == "__main__":
    main()
