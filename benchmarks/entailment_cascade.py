"""The entailment cascade, measured on dev: a zero-shot chat judge (models/entailment/judge_cascade.py) decides only
the QAs whose out-of-fold classifier probability lies in a band around the classifier's threshold; the band
and the judge's own threshold are chosen by the grouped 5-fold CV of train.entailment (train/entailment/data.py:
group_folds, one reference document per group), inside each fold on the other four, and the held-out folds'
decisions are pooled, for the cascade and for the classifier alone (its threshold chosen the same way).

    python -m benchmarks.entailment_cascade --run RUN --out DIR --sample 400 --max-minutes 40

RUN is a train.entailment run of the stacked recipe (stacked_oof_predictions.jsonl, metrics.json). The judge
reads only the dev QAs inside the widest band: a seeded sample of --sample of them, in a seeded order, so a run
stopped by --max-minutes (or killed: the answers are kept in DIR/judged.jsonl and a rerun resumes) is a seeded
sample too. The figures are on all dev QAs: an unjudged QA keeps the classifier's score and decision, so a sample
of the band understates what the judge changes. Result: DIR/cascade.json.
"""
from __future__ import annotations

import argparse
import itertools
import json
import random
import time
from pathlib import Path

from benchmarks.common import ROOT
from data_prep.records import read_jsonl

OFFSETS = (0.0, 0.025, 0.05, 0.075, 0.1, 0.15)   # the band: threshold - a .. threshold + b (dev: 368 QAs within 0.15)
JUDGE_THRESHOLDS = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)


def _median(xs):
    return sorted(xs)[len(xs) // 2] if xs else None


def figures(gold, scores, decisions) -> dict:
    from sklearn.metrics import accuracy_score, balanced_accuracy_score, f1_score, roc_auc_score

    return {"n": len(gold), "auc": roc_auc_score(gold, scores), "bacc": balanced_accuracy_score(gold, decisions),
            "f1": f1_score(gold, decisions), "accuracy": accuracy_score(gold, decisions)}


def choose(idx, gold, scores, judged, threshold_of):
    """The (a, b, judge threshold) of the highest balanced accuracy on the QAs idx (the classifier's threshold
    chosen on them first: threshold_of); (0, 0, -) is the classifier alone, and wins ties."""
    import numpy as np

    from models.entailment.judge_cascade import cascade

    t = threshold_of([scores[i] for i in idx], [gold[i] for i in idx])
    y = np.asarray([gold[i] for i in idx], dtype=bool)
    best, best_params = -1.0, (0.0, 0.0, 0.5)
    for a, b, tj in itertools.product(OFFSETS, OFFSETS, JUDGE_THRESHOLDS):
        _, dec = cascade([scores[i] for i in idx], [judged[i] for i in idx], t - a, t + b, tj, t)
        d = np.asarray(dec, dtype=bool)
        bacc = ((d & y).sum() / max(y.sum(), 1) + (~d & ~y).sum() / max((~y).sum(), 1)) / 2  # balanced accuracy
        if bacc > best + 1e-12:
            best, best_params = bacc, (a, b, tj)
    return t, best_params


def cross_validated(examples, gold, scores, judged, folds, threshold_of):
    """Pooled held-out (score, decision) of the cascade and of the classifier alone, and each fold's choice."""
    from models.entailment.judge_cascade import cascade

    n = len(examples)
    casc_s, casc_d, alone_d, chosen = [0.0] * n, [False] * n, [False] * n, []
    for tr, te in folds:
        t, (a, b, tj) = choose(tr, gold, scores, judged, threshold_of)
        s, d = cascade([scores[i] for i in te], [judged[i] for i in te], t - a, t + b, tj, t)
        for k, i in enumerate(te):
            casc_s[i], casc_d[i], alone_d[i] = s[k], d[k], scores[i] >= t
        chosen.append({"threshold": t, "band": [t - a, t + b], "judge_threshold": tj,
                       "judged_in_band": sum(judged[i] is not None and t - a <= scores[i] <= t + b for i in te)})
    return casc_s, casc_d, alone_d, chosen


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--run", required=True, help="a train.entailment run folder of the stacked recipe")
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "qasem-consistency" / "dev.jsonl"))
    ap.add_argument("--out", required=True)
    ap.add_argument("--judge", default="qwen2_5_coder_0_5b_instruct")
    ap.add_argument("--prompts", default=str(ROOT / "conf" / "chat_prompts" / "entailment_judge.yaml"))
    ap.add_argument("--sample", type=int, default=400, help="judged QAs at most, a seeded sample of the widest band")
    ap.add_argument("--max-minutes", type=float, default=30.0, help="stop judging after this long (then choose)")
    ap.add_argument("--seed", type=int, default=13, help="the grouped folds' seed (train.entailment's)")
    ap.add_argument("--folds", type=int, default=5)
    a = ap.parse_args(argv)

    import hydra
    from omegaconf import OmegaConf

    from data_prep.consistency import read_consistency
    from metrics.entailment import best_bacc_threshold
    from train.entailment.data import group_folds

    run, out = Path(a.run), Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    examples, skipped = read_consistency(a.data, "dev")
    oof = {r["example_id"]: r for r in read_jsonl(run / "stacked_oof_predictions.jsonl")}
    missing = [e["example_id"] for e in examples if e["example_id"] not in oof]
    if missing:
        raise ValueError(f"{run / 'stacked_oof_predictions.jsonl'}: no score for {len(missing)} dev QAs "
                         f"(first {missing[0]}): a run of another dev file?")
    threshold = float(json.loads((run / "metrics.json").read_text())["stacked"]["threshold"])
    scores = [float(oof[e["example_id"]]["score"]) for e in examples]
    gold = [int(e["supported"]) for e in examples]
    wide = [i for i, s in enumerate(scores) if threshold - max(OFFSETS) <= s <= threshold + max(OFFSETS)]
    order = random.Random(a.seed).sample(wide, len(wide))[: a.sample]

    cache_path = out / "judged.jsonl"
    judged_by_id = {r["example_id"]: r for r in read_jsonl(cache_path)} if cache_path.exists() else {}
    todo = [i for i in order if examples[i]["example_id"] not in judged_by_id]
    if todo:
        from models.generate.local import LocalGenerator

        prompts = hydra.utils.instantiate(OmegaConf.load(a.prompts))
        judge = LocalGenerator(a.judge)
        start = time.perf_counter()
        with open(cache_path, "a") as f:
            for done, i in enumerate(todo):
                if time.perf_counter() - start > a.max_minutes * 60:
                    print(f"stopped after {done} new answers ({a.max_minutes} min)")
                    break
                e = examples[i]
                t0, c0 = time.perf_counter(), time.process_time()
                p = judge.yes_probability([prompts.messages(e["premise_tokens"], e["question"], e["answer"])])[0]
                # wall and this process's CPU seconds: on a shared machine the CPU time is the cost
                row = {"example_id": e["example_id"], "p_yes": p, "seconds": round(time.perf_counter() - t0, 3),
                       "cpu_seconds": round(time.process_time() - c0, 3)}
                judged_by_id[e["example_id"]] = row
                f.write(json.dumps(row) + "\n")
                f.flush()
                if done % 25 == 0:
                    print(f"judged {len(judged_by_id)}/{len(order)}, {row['seconds']} s")
    judged = [judged_by_id.get(e["example_id"], {}).get("p_yes") for e in examples]
    # all dev: an unjudged QA (or a judge with no Yes/No answer) keeps the classifier's score
    g, s, j = gold, scores, judged
    folds = group_folds(examples, a.folds, a.seed)
    casc_s, casc_d, alone_d, chosen = cross_validated(examples, g, s, j, folds, best_bacc_threshold)
    judged_pairs = [(gold[i], judged[i]) for i in range(len(examples)) if judged[i] is not None]
    from sklearn.metrics import roc_auc_score

    result = {
        "command": "python -m benchmarks.entailment_cascade " + " ".join(argv or __import__("sys").argv[1:]),
        "judge": a.judge, "classifier_threshold": threshold, "widest_band": [threshold - max(OFFSETS),
                                                                            threshold + max(OFFSETS)],
        "dev_qas": len(examples), "skipped": dict(skipped), "in_widest_band": len(wide), "judged": len(judged_by_id),
        "judge_no_answer": sum(r["p_yes"] is None for r in judged_by_id.values()),
        "judge_seconds_per_qa": {k: _median([r[k] for r in judged_by_id.values() if k in r])
                                 for k in ("seconds", "cpu_seconds")},
        "judge_auc_on_judged": roc_auc_score(*zip(*judged_pairs)) if len({x for x, _ in judged_pairs}) == 2 else None,
        "classifier_auc_on_judged": roc_auc_score([gold[i] for i in range(len(examples)) if judged[i] is not None],
                                                  [scores[i] for i in range(len(examples)) if judged[i] is not None])
        if len({x for x, _ in judged_pairs}) == 2 else None,
        "judged_of_band": f"{len(judged_by_id)} of {len(wide)}",
        "classifier_alone": figures(g, s, alone_d),
        "cascade": figures(g, casc_s, casc_d),
        "folds": chosen,
        "classifier_alone_all_dev_at_its_threshold": figures(gold, scores, [x >= threshold for x in scores]),
    }
    (out / "cascade.json").write_text(json.dumps(result, indent=1))
    print(json.dumps({k: v for k, v in result.items() if k != "folds"}, indent=1))
    print(json.dumps(chosen))


if __name__ == "__main__":
    main()
