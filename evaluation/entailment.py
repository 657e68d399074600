"""Score a QA-entailment baseline or checkpoint on a QASemConsistency split.

    python -m evaluation.entailment scorer=NAME data.split=test hydra.run.dir=DIR
    python -m evaluation.entailment scorer=checkpoint checkpoint=PATH data.split=test hydra.run.dir=DIR

NAME: majority | lexical | embedding | checkpoint. Writes into DIR:
- metrics.json: {"cliff": {"bacc", "auc", "n", ...}, "factscore": ..., "verifiability": ...,
  "overall": ..., "tuned_threshold": {"threshold", "source", <dataset>: {"bacc", ...}},
  "responses": per-response consistency-score correlations, "scorer", "split", "skipped"}
  (fractions in [0, 1]; BAcc at 0.5, positive class = supported);
- predictions.jsonl (one line per QA: example_id, response_id, dataset, supported, score);
- roc.png (when matplotlib is installed); everything is logged to W&B with logger=wandb.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path

import hydra
from omegaconf import DictConfig, OmegaConf

from data_prep.consistency import read_consistency
from data_prep.records import write_jsonl
from metrics.entailment import (DATASETS, best_bacc_threshold, metrics_table, response_correlations,
                                roc_curve_points)
from models.progress import run_with_summary

log = logging.getLogger(__name__)


def build_scorer(cfg: DictConfig):
    """The scorer that cfg.scorer describes (its `_target_` and constructor arguments, from
    conf/scorer/NAME.yaml), plus the threshold a checkpoint chose by CV (or None)."""
    from hydra.utils import instantiate

    from models import entailment as E

    args = OmegaConf.to_container(cfg.scorer, resolve=True)
    name = args.pop("name", None)  # labels the scorer in metrics.json and W&B; not an argument
    if "_target_" not in args:
        raise ValueError(f"scorer {name!r} has no _target_: each conf/scorer/*.yaml names the class "
                         "(or function) that builds it")
    if "folder" not in args:  # a baseline: its arguments are all it needs
        return instantiate(args), None
    if not args["folder"]:
        raise ValueError("scorer=checkpoint needs checkpoint=PATH (a train.entailment output folder)")
    path = Path(hydra.utils.to_absolute_path(str(args["folder"])))
    threshold = E.load_format(path).get("threshold")  # FileNotFoundError when not a checkpoint
    return instantiate(args, folder=str(path)), threshold


def _load(path: str, split: str, limit=None):
    examples, skipped = read_consistency(hydra.utils.to_absolute_path(path), split)
    if limit:
        examples = examples[: int(limit)]
    return examples, skipped


def _roc_png(path: Path, gold, scores, datasets, title: str) -> Path | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log.warning("matplotlib is not installed: no ROC curve image")
        return None
    fig, ax = plt.subplots(figsize=(5, 5))
    for ds in list(DATASETS) + ["overall"]:
        idx = [i for i, d in enumerate(datasets) if ds == "overall" or d == ds]
        g = [gold[i] for i in idx]
        if len(set(g)) < 2:
            continue
        fpr, tpr = roc_curve_points(g, [scores[i] for i in idx])
        ax.plot(fpr, tpr, label=ds, lw=2 if ds == "overall" else 1)
    ax.plot([0, 1], [0, 1], "k:", lw=0.8)
    ax.set_xlabel("false positive rate (unsupported called supported)")
    ax.set_ylabel("true positive rate (supported)")
    ax.set_title(title)
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def evaluate(cfg: DictConfig, run_dir: str | Path) -> dict:
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    examples, skipped = _load(cfg.data.file, cfg.data.split, cfg.data.limit)
    if not examples:
        raise ValueError(f"{cfg.data.file}: no usable examples (skipped: {dict(skipped)})")
    scorer, cv_threshold = build_scorer(cfg)
    from models.fast_path import resolve_precision, use_precision, use_reference_cache, use_reference_scope

    precision = resolve_precision(str(cfg.precision))  # fp32: the exact path
    if precision != "fp32":
        log.info("precision %s for %s", precision, use_precision(scorer, precision) or "no neural part")
    use_reference_scope(scorer, str(cfg.reference_scope))
    use_reference_cache(scorer, cfg.reference_cache)
    log.info("scoring %d %s examples with %s", len(examples), cfg.data.split, cfg.scorer.name)
    scores = scorer.score_examples(examples, progress=True)
    gold = [e["supported"] for e in examples]
    datasets = [e["dataset"] for e in examples]
    rids = [e["response_id"] for e in examples]
    metrics = metrics_table(datasets, gold, scores, 0.5)

    # the extra row: a threshold chosen without looking at the evaluated split
    if cfg.tune_threshold:
        threshold, source = None, None
        if cv_threshold is not None:
            threshold, source = float(cv_threshold), "cross-validation on dev (stored in the checkpoint)"
        elif cfg.data.split != "dev" and cfg.data.dev_file:
            dev, _ = _load(cfg.data.dev_file, "dev", cfg.data.limit)
            threshold = best_bacc_threshold(scorer.score_examples(dev), [e["supported"] for e in dev])
            source = "dev"
        if threshold is not None:
            row = metrics_table(datasets, gold, scores, threshold)
            metrics["tuned_threshold"] = {"threshold": threshold, "source": source,
                                          **{k: {"bacc": v["bacc"], "n": v["n"]} for k, v in row.items()}}
    for name, comp in (getattr(scorer, "component_scores", None) or {}).items():
        if len(comp) == len(examples):  # a stacked scorer's signals, each on its own
            metrics.setdefault("components", {})[name] = metrics_table(datasets, gold, comp, 0.5)
    metrics["responses"] = response_correlations(rids, datasets, gold, scores, 0.5)
    metrics["scorer"] = cfg.scorer.name if cfg.scorer.name != "checkpoint" else str(cfg.checkpoint)
    metrics["split"] = cfg.data.split
    metrics["skipped"] = dict(skipped)
    metrics["scorer_stats"] = dict(getattr(scorer, "stats", {}))

    (run_dir / "metrics.json").write_text(json.dumps(metrics, indent=1))
    write_jsonl(run_dir / "predictions.jsonl",
                ({"example_id": e["example_id"], "response_id": e["response_id"], "dataset": e["dataset"],
                  "question": e["question"], "answer": e["answer"], "supported": e["supported"], "score": s}
                 for e, s in zip(examples, scores)))
    png = _roc_png(run_dir / "roc.png", gold, scores, datasets, f"{metrics['scorer']} on {cfg.data.split}") \
        if cfg.roc_png else None
    log.info("%s", format_table(metrics))

    from common.tracking import init_wandb, log_records_table

    run = init_wandb(cfg, "eval-entailment", str(run_dir), name=f"eval-{cfg.scorer.name}-{cfg.data.split}")
    if run is not None:
        rows = [{"subset": k, "bacc": metrics[k]["bacc"], "auc": metrics[k]["auc"], "n": metrics[k]["n"]}
                for k in list(DATASETS) + ["overall"]]
        log_records_table(run, "entailment/table", rows, ["subset", "bacc", "auc", "n"])
        run.summary.update({f"{k}/{m}": metrics[k][m] for k in list(DATASETS) + ["overall"]
                            for m in ("bacc", "auc") if metrics[k][m] is not None})
        if png is not None:
            import wandb

            run.log({"entailment/roc": wandb.Image(str(png))})
        run.finish()
    return metrics


def format_table(metrics: dict) -> str:
    lines = ["subset         BAcc    AUC     n"]
    for k in list(DATASETS) + ["overall"]:
        r = metrics[k]
        f = lambda v: "  -  " if v is None else f"{100 * v:5.1f}"
        lines.append(f"{k:<14} {f(r['bacc'])}  {f(r['auc'])}  {r['n']}")
    if "tuned_threshold" in metrics:
        t = metrics["tuned_threshold"]
        lines.append(f"tuned t={t['threshold']:.3f}: " + " / ".join(
            f"{100 * t[k]['bacc']:.1f}" if t[k]["bacc"] is not None else "-" for k in list(DATASETS) + ["overall"]))
    return "\n".join(lines)


@hydra.main(version_base="1.3", config_path="../conf", config_name="eval_entailment")
def main(cfg: DictConfig) -> None:
    from hydra.core.hydra_config import HydraConfig

    run_with_summary(log, "evaluation.entailment", cfg, lambda: evaluate(cfg, HydraConfig.get().runtime.output_dir),
                     lambda m: m["overall"]["n"], "QAs")


if __name__ == "__main__":
    from models.memory import use_jemalloc

    use_jemalloc()  # before anything allocates: RSS held down on long runs (models/memory.py)
    main()
