"""Which consistency pipeline correlates best with the human scores, and why: several
`evaluation.consistency_benchmark` runs on the same split, compared response by response.

    python -m evaluation.pipeline_choice quick=RUN_A full=RUN_B [more NAME=RUN ...] --baseline quick

Each RUN is the run folder of `python -m evaluation.consistency_benchmark parser=.. detector=..
entailment=.. split=dev hydra.run.dir=RUN` (its reports.parser.jsonl and metrics.json). For each run:
- the response-level Pearson with the human score (the share of the benchmark's QAs a person marked
  supported) per sub-dataset, their mean (`macro`, the figure a choice is made on: the sub-datasets
  differ in size and spread) and overall, for the shipped score (share of QAs with P >= threshold), for
  other thresholds and for the mean P;
- the same score recomputed on parts of the QAs: verbal predicates only, nominal only, copular facts left out;
- against the baseline run: the QAs each adds or drops (same sentence, predicate, question and answer
  span), how many per response and how the classifier scores them, and a paired bootstrap over responses
  (resampled within each sub-dataset) of the difference in macro Pearson: its 95 % interval and the
  share of resamples in which the run is better.
Prints and writes one JSON object (--out, default: stdout only). Reads the human scores from the split's
data file, never a model's; nothing here is fitted, so it can be run on dev to choose and on test once.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from common.data_folder import data_dir
from data_prep.records import read_jsonl
from evaluation.consistency_benchmark import load_responses
from metrics.entailment import DATASETS, correlation

THRESHOLDS = (0.3, 0.4, 0.5, 0.6, 0.7)
PARTS = {"all": lambda p, qa: True,
         "verbal": lambda p, qa: p["predicate_type"] == "verbal",
         "nominal": lambda p, qa: p["predicate_type"] == "nominal",
         "no_copular": lambda p, qa: p["predicate_type"] != "copular"}


def read_run(folder: Path) -> tuple[dict, list[dict]]:
    metrics = json.loads((folder / "metrics.json").read_text())
    reports = list(read_jsonl(folder / "reports.parser.jsonl"))
    return metrics, reports


def scored_qas(report: dict, part: str = "all") -> list[tuple[tuple, float, str]]:
    """(key, P(supported), predicate type) of every scored QA of a report, keyed by sentence, predicate,
    question and answer span (copular facts carry the score of their QA too)."""
    keep = PARTS[part]
    out = []
    for s in report.get("sentences", []):
        for p in s.get("predicates", []):
            for qa in p.get("qas", []):
                if qa.get("score") is None or not keep(p, qa):
                    continue
                key = (s["index"], p["predicate_index"], qa["question"], tuple(qa.get("answer_span") or ()))
                out.append((key, float(qa["score"]), p["predicate_type"]))
    return out


def response_score(qas: list, how: str) -> float | None:
    if not qas:
        return None
    ps = np.array([p for _, p, _ in qas])
    return float(ps.mean()) if how == "mean_p" else float((ps >= float(how)).mean())


def pearsons(pred: list, human: list, datasets: list) -> dict:
    out = {}
    for ds in list(DATASETS) + ["overall"]:
        pts = [(p, h) for p, h, d in zip(pred, human, datasets) if p is not None and ds in ("overall", d)]
        out[ds] = correlation([p for p, _ in pts], [h for _, h in pts])["pearson"] if pts else None
    vals = [out[ds] for ds in DATASETS]
    out["macro"] = None if any(v is None for v in vals) else float(np.mean(vals))
    out["scored"] = sum(p is not None for p in pred)
    return out


def macro_pearson(pred: np.ndarray, human: np.ndarray, ds_idx: list[np.ndarray]) -> float:
    vals = []
    for idx in ds_idx:
        x, y = pred[idx], human[idx]
        ok = ~np.isnan(x)
        vals.append(np.corrcoef(x[ok], y[ok])[0, 1] if ok.sum() > 2 and x[ok].std() > 0 else np.nan)
    return float(np.mean(vals))


def bootstrap_difference(a: np.ndarray, b: np.ndarray, human: np.ndarray, datasets: list, n: int,
                         seed: int) -> dict:
    """Macro Pearson of b minus a over resamples of the responses, drawn within each sub-dataset."""
    rng = np.random.default_rng(seed)
    groups = [np.flatnonzero(np.array(datasets) == ds) for ds in DATASETS]
    diffs = []
    for _ in range(n):
        draw = [rng.choice(g, size=len(g), replace=True) for g in groups]
        flat = np.concatenate(draw)
        starts = np.cumsum([0] + [len(g) for g in draw])
        idx = [np.arange(starts[i], starts[i + 1]) for i in range(len(draw))]
        diffs.append(macro_pearson(b[flat], human[flat], idx) - macro_pearson(a[flat], human[flat], idx))
    d = np.array(diffs)
    d = d[~np.isnan(d)]
    return {"mean": float(d.mean()), "ci95": [float(np.percentile(d, 2.5)), float(np.percentile(d, 97.5))],
            "share_better": float((d > 0).mean()), "resamples": int(len(d))}


def qa_changes(base: list[dict], other: list[dict], threshold: float) -> dict:
    """The QAs `other` adds to or drops from `base`, per response and as scored by each run's classifier."""
    added, dropped, common_b, common_o = [], [], [], []
    for rb, ro in zip(base, other):
        qb = {k: (p, t) for k, p, t in scored_qas(rb)}
        qo = {k: (p, t) for k, p, t in scored_qas(ro)}
        added += [qo[k] for k in qo.keys() - qb.keys()]
        dropped += [qb[k] for k in qb.keys() - qo.keys()]
        common_b += [qb[k][0] for k in qb.keys() & qo.keys()]
        common_o += [qo[k][0] for k in qb.keys() & qo.keys()]

    def describe(rows: list) -> dict:
        ps = np.array([p for p, _ in rows]) if rows else np.array([])
        types = {}
        for _, t in rows:
            types[t] = types.get(t, 0) + 1
        return {"qas": len(rows), "per_response": len(rows) / max(len(base), 1),
                "mean_p": float(ps.mean()) if len(ps) else None,
                "supported_share": float((ps >= threshold).mean()) if len(ps) else None, "by_type": types}

    co_b, co_o = np.array(common_b), np.array(common_o)
    return {"added": describe(added), "dropped": describe(dropped),
            "common": {"qas": len(common_b), "mean_p_base": float(co_b.mean()) if len(co_b) else None,
                       "mean_p_run": float(co_o.mean()) if len(co_o) else None,
                       "decision_flips": int(((co_b >= threshold) != (co_o >= threshold)).sum())}}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", help="NAME=RUN_DIR, each an evaluation.consistency_benchmark run folder")
    ap.add_argument("--baseline", default=None, help="the NAME the others are compared with (default: the first)")
    ap.add_argument("--data", default=None, help="the split's data file (default: the one the runs' metrics name)")
    ap.add_argument("--bootstrap", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)

    runs = {}
    for item in a.runs:
        name, sep, folder = item.partition("=")
        if not sep or not (Path(folder) / "reports.parser.jsonl").is_file():
            sys.exit(f"{item!r}: give NAME=RUN_DIR, a folder of evaluation.consistency_benchmark with reports.parser.jsonl")
        runs[name] = read_run(Path(folder))
    base_name = a.baseline or next(iter(runs))
    if base_name not in runs:
        sys.exit(f"--baseline {base_name!r} names no run; runs: {', '.join(runs)}")
    splits = {m["split"] for m, _ in runs.values()}
    if len(splits) != 1:
        sys.exit(f"the runs are on different splits ({sorted(splits)}): compare runs on one split")
    split = splits.pop()
    data = Path(a.data) if a.data else data_dir() / "qasem-consistency" / f"{split}.jsonl"
    responses, _ = load_responses(data, split)
    ids = [r["id"] for r in responses]
    for name, (_, reports) in runs.items():
        if [rep["id"] for rep in reports] != ids:
            sys.exit(f"run {name!r} scored other responses than {data} holds ({len(reports)} vs {len(ids)}): "
                     "rerun it on the whole split")
    human = np.array([sum(q["supported_gold"] for q in r["qas"]) / len(r["qas"]) for r in responses])
    datasets = [r["dataset"] for r in responses]

    result = {"split": split, "responses": len(ids), "baseline": base_name, "runs": {}}
    shipped = {}
    for name, (metrics, reports) in runs.items():
        thr = float(metrics.get("threshold", 0.5))
        row = {"checkpoints": {k: metrics.get(k) for k in ("parser", "detector", "entailment")}, "threshold": thr,
               "qas_per_response": float(np.mean([len(scored_qas(r)) for r in reports]))}
        for part in PARTS:
            row[part] = {how: pearsons([response_score(scored_qas(r, part), how) for r in reports], list(human),
                                       datasets)
                         for how in [*map(str, THRESHOLDS), "mean_p"]}
        shipped[name] = np.array([np.nan if (s := response_score(scored_qas(r), str(thr))) is None else s
                                  for r in reports])
        result["runs"][name] = row
    base_reports = runs[base_name][1]
    for name, (metrics, reports) in runs.items():
        if name == base_name:
            continue
        row = result["runs"][name]
        row["vs_baseline"] = {"qa_changes": qa_changes(base_reports, reports, float(metrics.get("threshold", 0.5))),
                              "macro_pearson_difference": bootstrap_difference(shipped[base_name], shipped[name], human,
                                                                               datasets, a.bootstrap, a.seed)}
    text = json.dumps(result, indent=1)
    if a.out:
        Path(a.out).write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
