"""Train the QA-entailment classifier on the QASemConsistency dev half.

    python -m train.entailment classifier=stacked                     # LR over lexical signals (shipped here)
    python -m train.entailment classifier=minilm stack.enabled=true   # MiniLM cross-encoder (+ LR on top)
    python -m train.entailment classifier=minilm synthetic.enabled=true  # + synthetic pre-training
    python -m train.entailment classifier=minilm synthetic.enabled=true cv.folds=0 final.train=false
                                                                      # synthetic only -> RUN/pretrained
    python -m train.entailment classifier=stacked stack.neural_fixed=RUN/pretrained  # LR + that model
    python -m train.entailment classifier=gemma2_9b_lora classifier.lora.enabled=false cv.folds=0 \
        final.train=false                                             # zero-shot descriptor folder

Model selection never looks at test: K-fold cross-validation over dev (StratifiedGroupKFold by reference
document, so no response, nor any response to the same reference, is split across folds) gives
out-of-fold predictions; their metrics are the CV estimate and their best threshold is stored in
the checkpoint. Then the model is trained on the whole dev half and saved with its
`entailment_format.json` (and, with `stack.enabled`, a logistic regression over lexical signals
+ the neural out-of-fold score is saved around it). The run dir gets all_results.json (= metrics.json)
and oof_predictions.jsonl; `hub=push hub.repo_id=ORG/NAME` pushes the shipped folder with a model card.

Resume: the same command in the same run dir (hydra.run.dir=RUN) reuses every stage a killed run
finished (synthetic pre-training, each CV fold, the final model) and trains the rest; a stage killed
midway resumes from its newest complete Trainer checkpoint (RUN/trainer/<stage>, every
checkpoint_steps steps), the parser's rule. Each stage seeds itself, so the result equals an
uninterrupted run. Another configuration in that dir is refused. Folds can train on two GPUs or cores at once:
`cv.only_folds=[3,4] hydra.output_subdir=.hydra-folds-3-4` in the same run dir beside the whole run, which
waits for a fold in flight and reuses it (each fold is locked while it trains).

This module runs the stages; the rest of the job lives beside it: train.entailment.families (the
classifier that conf/classifier/NAME.yaml's _target_ names, built once here: model, scorer, encoding),
train.entailment.data (training triples, dataset, grouped folds), train.entailment.fit (one Trainer run),
train.entailment.resume (stage markers, the resume key), train.entailment.stacker (the logistic
regression and a finished neural run's scores).
"""
from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from data_prep.consistency import read_consistency
from data_prep.records import write_jsonl
from metrics.entailment import best_bacc_threshold, metrics_table
from models import entailment as E
from models.checkpoint import is_hub_id
from models.model_paths import resolve_model_path
from train.entailment.data import dev_triples, group_folds, synthetic_triples
from train.entailment.families import Classifier, NeuralClassifier, build_classifier
from train.entailment.fit import fit
from train.entailment.resume import VOLATILE_KEYS, forget_stages, mark_done, stage_done, stage_lock
from train.resume import parse_resume, refuse_path_for_stages
from train.run_guard import claim_run_dir
from train.entailment.stacker import fit_stacker, load_neural_run
from common.tracking import init_wandb
from common.hub import push_folder, write_model_card
from transformers import set_seed

log = logging.getLogger(__name__)


# ---------------------------------------------------------------------------- config checks
def check_config(cfg: DictConfig, clf: Classifier | None = None) -> None:
    """Fail before any training on an unknown family, an unloadable model or missing data (`clf`: the
    classifier train() built; None: the one cfg.classifier describes)."""
    refuse_path_for_stages(parse_resume(cfg.resume), "train.entailment", "RUN/trainer/<stage>")
    clf = clf or build_classifier(cfg.classifier)
    train_file = Path(hydra.utils.to_absolute_path(cfg.data.train_file))
    if not train_file.exists():
        raise FileNotFoundError(f"training data {train_file} not found (set paths.data_dir or QASEM_DATA_DIR)")
    if clf.neural and cfg.synthetic.enabled:  # synthetic.* is a neural classifier's (conf/classifier_training/)
        syn = Path(hydra.utils.to_absolute_path(cfg.synthetic.file))
        if not syn.exists():
            raise FileNotFoundError(f"synthetic set {syn} not found: build it with python -m data_prep.synthetic_entailment")
    if cfg.hub.push and cfg.parser and cfg.detector:
        # the checkpoint names the parser and detector it parses references with: a local folder
        # there would publish a classifier that loads nowhere else
        local = [f"{k}={cfg[k]}" for k in ("parser", "detector")
                 if not is_hub_id(cfg[k]) or Path(hydra.utils.to_absolute_path(str(cfg[k]))).exists()]
        if local:
            raise ValueError(f"hub=push with local {', '.join(local)}: push them first and give their Hub ids "
                             "(parser=ORG/NAME detector=ORG/NAME), so that the published classifier can load them")
    only = only_folds(cfg)
    if only is not None:
        bad = [i for i in only if not 0 <= i < (cfg.cv.folds or 0)]
        if not clf.neural or bad or parse_resume(cfg.resume).mode != "auto":
            raise ValueError(f"cv.only_folds={only}: trains some CV folds of a neural classifier beside the run of "
                             f"every fold in the same run dir; needs indices in 0..{(cfg.cv.folds or 0) - 1} "
                             f"(cv.folds={cfg.cv.folds}), a neural family (not {clf.family!r}) and resume=auto"
                             + (f"; out of range: {bad}" if bad else ""))
    clf.check()


# ---------------------------------------------------------------------------- neural stages
def stage_saved(run_dir: Path, stage: str, info: dict) -> dict:
    """The stage is saved and marked: its Trainer checkpoints (RUN/trainer/<stage>) are not needed."""
    shutil.rmtree(run_dir / "trainer" / stage, ignore_errors=True)
    return info


def pretrain_synthetic(cfg: DictConfig, clf: NeuralClassifier, run_dir: Path) -> dict:
    """Stage 1: pre-train on the synthetic set and save RUN/pretrained, a complete checkpoint on
    its own (scored zero-shot on the benchmark, or used as a stacked feature)."""
    init = str(run_dir / "pretrained")
    with stage_lock(run_dir / "pretrained"):  # a cv.only_folds run beside this one needs it too: one of them trains it
        done = stage_done(run_dir / "pretrained")
        return done if done is not None else _pretrain_synthetic(cfg, clf, run_dir, init)


def _pretrain_synthetic(cfg: DictConfig, clf: NeuralClassifier, run_dir: Path, init: str) -> dict:
    log.info("pre-training on the synthetic set %s", cfg.synthetic.file)
    set_seed(cfg.seed)
    model, tok = clf.build(cfg.seed)
    triples = synthetic_triples(cfg, clf.scorer(model, tok, cfg.eval_batch_size))
    stats = fit(cfg, clf, model, tok, triples, run_dir / "trainer" / "pretrained", cfg.synthetic.trainer.args)
    model.save_pretrained(init)
    tok.save_pretrained(init)
    fmt = clf.scorer(model, tok, cfg.eval_batch_size).format_dict()
    fmt.update(threshold=None, trained_on="synthetic QA-SRL/QANom entailment set only")
    E.save_format(init, fmt)
    return stage_saved(run_dir, "pretrained", mark_done(run_dir / "pretrained", {**stats, "pretrained_dir": init}))


def train_fold(cfg: DictConfig, clf: NeuralClassifier, examples: list[dict], fi: int, n_folds: int, train_idx: list[int],
               test_idx: list[int], init: str | None, run_dir: Path) -> dict:
    """Stage 2, one CV fold: train on `train_idx`, score `test_idx`; {"test", "scores", "stats"}.
    A finished fold is reused when it held out the same examples."""
    fold_dir = run_dir / "folds" / f"fold-{fi}"
    with stage_lock(fold_dir):  # a cv.only_folds run beside this one may be training it: wait, then reuse it
        return _train_fold(cfg, clf, examples, fi, n_folds, train_idx, test_idx, init, run_dir, fold_dir)


def _train_fold(cfg: DictConfig, clf: NeuralClassifier, examples: list[dict], fi: int, n_folds: int, train_idx: list[int],
                test_idx: list[int], init: str | None, run_dir: Path, fold_dir: Path) -> dict:
    done = stage_done(fold_dir)
    if done is not None and done["test"] == test_idx:
        return done
    set_seed(cfg.seed + 1 + fi)  # each stage seeds itself, so a resumed run trains it identically
    model, tok = clf.build(cfg.seed, init)
    sc = clf.scorer(model, tok, cfg.eval_batch_size)
    stats = fit(cfg, clf, model, tok, dev_triples(sc, [examples[i] for i in train_idx]), run_dir / "trainer" / f"fold-{fi}")
    scores = clf.scorer(model, tok, cfg.eval_batch_size).score_examples([examples[i] for i in test_idx])
    done = stage_saved(run_dir, f"fold-{fi}", mark_done(fold_dir, {"test": test_idx, "scores": scores, "stats": stats}))
    log.info("fold %d/%d: trained on %d QAs (%s), scored %d", fi + 1, n_folds, len(train_idx), stats, len(test_idx))
    return done


def cross_validate(cfg: DictConfig, clf: NeuralClassifier, examples: list[dict], init: str | None,
                   run_dir: Path) -> tuple[list, int]:
    """(out-of-fold score per example, None where no fold scored it; the number of folds)."""
    oof = [None] * len(examples)
    folds = group_folds(examples, cfg.cv.folds, cfg.seed) if cfg.cv.folds else []
    only = only_folds(cfg)
    for fi, (tr, te) in enumerate(folds):
        if cfg.cv.max_folds and fi >= cfg.cv.max_folds:
            break
        if only is not None and fi not in only:
            continue
        te = [int(i) for i in te]
        done = train_fold(cfg, clf, examples, fi, len(folds), tr, te, init, run_dir)
        for i, s in zip(te, done["scores"]):
            oof[i] = s
    return oof, len(folds)


def only_folds(cfg: DictConfig) -> list[int] | None:
    """cv.only_folds as a list of fold indices, or None when the run trains every fold."""
    only = cfg.cv.only_folds
    return None if only is None else [int(i) for i in only]


def cv_summary(examples: list[dict], oof: list, n_folds: int, run_dir: Path) -> dict | None:
    """The CV estimate (metrics at 0.5 and at the best threshold of the out-of-fold scores), or
    None when no fold ran; the scores are kept in oof_predictions.jsonl so that a stacker can be
    refit later without retraining."""
    done = [i for i, s in enumerate(oof) if s is not None]
    if not done:
        return None
    sub = [examples[i] for i in done]
    scores = [oof[i] for i in done]
    thr = best_bacc_threshold(scores, [e["supported"] for e in sub])
    cv = {"folds": n_folds, "n": len(done), "threshold": thr,
          "at_0.5": metrics_table([e["dataset"] for e in sub], [e["supported"] for e in sub], scores),
          "at_threshold": metrics_table([e["dataset"] for e in sub], [e["supported"] for e in sub], scores, thr)}
    write_jsonl(run_dir / "oof_predictions.jsonl",
                ({"example_id": e["example_id"], "dataset": e["dataset"], "supported": e["supported"],
                  "score": s} for e, s in zip(examples, oof) if s is not None))
    return cv


def train_final(cfg: DictConfig, clf: NeuralClassifier, examples: list[dict], init: str | None, n_folds: int,
                threshold: float | None, run_dir: Path) -> dict:
    """Stage 3: the model trained on all of dev, saved as RUN/checkpoint with the CV threshold."""
    ckpt = run_dir / "checkpoint"
    done = stage_done(ckpt)
    if done is not None:
        return done
    set_seed(cfg.seed + 1 + n_folds)
    model, tok = clf.build(cfg.seed, init)
    sc = clf.scorer(model, tok, cfg.eval_batch_size)
    stats = fit(cfg, clf, model, tok, dev_triples(sc, examples), run_dir / "trainer" / "final")
    lora = bool(clf.lora["enabled"])
    if lora and (clf.random_config or clf.lora.get("merge", False)):
        model = model.merge_and_unload()  # no base model to load an adapter onto: save it whole
        lora = False
    model.save_pretrained(ckpt)
    tok.save_pretrained(ckpt)
    fmt = clf.scorer(model, tok, cfg.eval_batch_size).format_dict()
    fmt["threshold"] = threshold
    fmt["trained_on"] = "qasem-consistency dev" + (" after synthetic pre-training" if init else "")
    if lora:  # an adapter folder: load_scorer puts it on the base model again
        fmt["base_model"] = resolve_model_path(clf.model_name_or_path)
    E.save_format(ckpt, fmt)
    return stage_saved(run_dir, "final", mark_done(ckpt, stats))


def zero_shot_descriptor(cfg: DictConfig, clf: NeuralClassifier, run_dir: Path) -> str:
    """No training at all: RUN/checkpoint is a descriptor naming the base model (a random model,
    having no name, is saved whole)."""
    model, tok = clf.build(cfg.seed)
    ckpt = run_dir / "checkpoint"
    tok.save_pretrained(ckpt)
    fmt = clf.scorer(model, tok, cfg.eval_batch_size).format_dict()
    fmt.update(threshold=None, trained_on="nothing (zero-shot)", base_model=resolve_model_path(clf.model_name_or_path))
    if clf.random_config:
        model.save_pretrained(ckpt)  # a random model has no name to load it by
        fmt.pop("base_model")
    E.save_format(ckpt, fmt)
    return str(ckpt)


def run_neural(cfg: DictConfig, clf: NeuralClassifier, examples: list[dict], run_dir: Path) -> dict:
    """The neural stages in order: synthetic pre-training (synthetic.enabled), the CV folds, the
    final model (final.train), or a zero-shot descriptor when nothing is trained."""
    info: dict = {}
    init = None
    if cfg.synthetic.enabled:
        info["synthetic"] = pretrain_synthetic(cfg, clf, run_dir)
        init = str(run_dir / "pretrained")
    oof, n_folds = cross_validate(cfg, clf, examples, init, run_dir)
    if only_folds(cfg) is not None:  # a part of the CV: the run of every fold summarizes it and trains the final model
        return {"folds_trained": only_folds(cfg), "oof_scores": oof}
    cv = cv_summary(examples, oof, n_folds, run_dir)
    if cv is not None:
        info["cv"] = cv
    info["oof_scores"] = oof
    if cfg.final.train:
        info["final"] = train_final(cfg, clf, examples, init, n_folds, info.get("cv", {}).get("threshold"), run_dir)
        info["checkpoint"] = str(run_dir / "checkpoint")
    elif init is None and not n_folds:
        info["checkpoint"] = zero_shot_descriptor(cfg, clf, run_dir)
    return info


# ---------------------------------------------------------------------------- the run
def stacker_neural_scores(cfg: DictConfig, examples: list[dict], metrics: dict) -> tuple[list[float] | None, Path | None]:
    """classifier=stacked: the 'neural' feature's dev scores and checkpoint, from stack.neural_fixed
    or stack.neural_from (None, None without either); what was used is recorded in `metrics`."""
    if cfg.stack.neural_fixed:
        # a neural checkpoint that never saw dev (e.g. synthetic-only): its dev scores are honest
        # features for the stacker's cross-validation as they are
        neural_dir = Path(hydra.utils.to_absolute_path(str(cfg.stack.neural_fixed)))
        oof = E.load_scorer(neural_dir, batch_size=cfg.eval_batch_size).score_examples(examples, progress=True)
        metrics["neural_fixed"] = str(neural_dir)
        metrics["neural_fixed_dev"] = metrics_table([e["dataset"] for e in examples],
                                                    [e["supported"] for e in examples], oof)
        return oof, neural_dir
    if cfg.stack.neural_from:
        oof, neural_dir = load_neural_run(cfg.stack.neural_from, examples)
        metrics["neural_from"] = str(neural_dir)
        return oof, neural_dir
    return None, None


def wandb_summary(metrics: dict) -> dict:
    """The CV figures (BAcc, AUC per sub-dataset at 0.5) as flat W&B summary keys."""
    flat = {}
    for key in ("cv",):
        if key in metrics:
            for sub, row in metrics[key]["at_0.5"].items():
                flat[f"cv/{sub}/bacc"], flat[f"cv/{sub}/auc"] = row["bacc"], row["auc"]
    if "stacked" in metrics:
        for sub, row in metrics["stacked"]["cv"]["at_0.5"].items():
            flat[f"cv_stacked/{sub}/bacc"], flat[f"cv_stacked/{sub}/auc"] = row["bacc"], row["auc"]
    return flat


def train(cfg: DictConfig, run_dir: str | Path | None = None) -> dict:
    """Train (CV + final model) and return the metrics dict also written to all_results.json."""
    clf = build_classifier(cfg.classifier)  # built once here: every stage below takes this object
    check_config(cfg, clf)
    run_dir = Path(run_dir or cfg.output_dir or ".")
    part = None if only_folds(cfg) is None else "folds-" + "-".join(map(str, only_folds(cfg)))
    with claim_run_dir(cfg, run_dir, "train.entailment", VOLATILE_KEYS, checkpoints=None, part=part):
        if parse_resume(cfg.resume).fresh:
            forget_stages(run_dir)
            shutil.rmtree(run_dir / "trainer", ignore_errors=True)  # and a killed stage's checkpoints
        return _train(cfg, clf, run_dir)


def _train(cfg: DictConfig, clf: Classifier, run_dir: Path) -> dict:
    set_seed(cfg.seed)
    examples, skipped = read_consistency(hydra.utils.to_absolute_path(cfg.data.train_file), "dev")
    if cfg.data.limit:
        examples = examples[: int(cfg.data.limit)]
    if not examples:
        raise ValueError(f"{cfg.data.train_file}: no usable examples (skipped {dict(skipped)})")
    run = init_wandb(cfg, "train-entailment", str(run_dir), name=f"entailment-{clf.name}")
    metrics: dict = {"classifier": clf.name, "family": clf.family,
                     "train_examples": len(examples), "skipped": dict(skipped)}
    oof, neural_dir = None, None
    if clf.neural:
        info = run_neural(cfg, clf, examples, run_dir)
        oof = info.pop("oof_scores")
        if "folds_trained" in info:  # cv.only_folds: no summary of its own beside the whole run's
            log.info("trained folds %s of %s; the run of every fold in this run dir summarizes them",
                     info["folds_trained"], run_dir)
            if run is not None:
                run.finish()
            return {**metrics, **info}
        if any(s is None for s in oof):
            oof = None
        metrics.update(info)
        neural_dir = Path(info["checkpoint"]) if "checkpoint" in info else None
    else:
        oof, neural_dir = stacker_neural_scores(cfg, examples, metrics)
    if not clf.neural or cfg.stack.enabled:
        metrics["stacked"] = fit_stacker(cfg, examples, oof, run_dir, neural_dir)
    (run_dir / "all_results.json").write_text(json.dumps(metrics, indent=1))
    (run_dir / "metrics.json").write_text(json.dumps(metrics, indent=1))
    if run is not None:
        run.summary.update(wandb_summary(metrics))
        run.finish()
    if cfg.hub.push:
        publish(cfg, clf, metrics, run_dir)
    return metrics


def publish(cfg: DictConfig, clf: Classifier, metrics: dict, run_dir: Path) -> None:
    folder = Path(metrics.get("stacked", {}).get("checkpoint") or metrics.get("checkpoint"))
    cv = metrics.get("stacked", {}).get("cv") or metrics.get("cv") or {}
    results = [{"task_type": "text-classification", "dataset_type": "qasem-consistency",
                "dataset_name": f"QASemConsistency {sub} (dev CV)", "dataset_split": "dev",
                "metric_type": m, "metric_name": f"{m.upper()} ({sub})", "value": row[m]}
               for sub, row in cv.get("at_0.5", {}).items() for m in ("bacc", "auc") if row.get(m) is not None]
    structure = json.loads((folder / E.FORMAT_FILE).read_text()).get("structure")
    needs = (f" It parses each reference with the parser {structure['parser']} and the predicate detector "
             f"{structure['detector']}, which load_scorer fetches.") if structure else ""
    write_model_card(folder, model_name=f"qasem-entailment-{clf.name}",
                     description="QA-entailment classifier: premise = reference, hypothesis = QASem question + answer; "
                                 "outputs P(supported). Load with models.entailment.load_scorer(folder)." + needs,
                     results=results, datasets=["ariecattan/qasem_consistency"],
                     command=f"python -m train.entailment classifier={clf.name}",
                     base_model=clf.card_base_model,
                     tags=["qasem", "factual-consistency"])
    push_folder(folder, cfg.hub.repo_id, private=cfg.hub.private)


def _brief(table: dict) -> dict:
    return {k: None if v["bacc"] is None else round(v["bacc"], 3) for k, v in table.items()}


@hydra.main(version_base="1.3", config_path="../../conf", config_name="train_entailment")
def main(cfg: DictConfig) -> None:
    metrics = train(cfg, HydraConfig.get().runtime.output_dir)
    for key in ("cv",):
        if key in metrics:
            log.info("CV (dev, out-of-fold) at 0.5: %s", _brief(metrics[key]["at_0.5"]))
    if "stacked" in metrics:
        log.info("stacked CV at 0.5: %s", _brief(metrics["stacked"]["cv"]["at_0.5"]))
