"""Train the predicate detector (models/predicates/detector.py): verbal and nominal predicates of raw text.

    python -m train.predicates paths.data_dir=../shared/data hydra.run.dir=outputs/predicates
    python -m train.predicates detector_model=tiny data.max_train_sentences=64     # the test model
    python -m train.predicates ... hub=push hub.repo_id=ORG/NAME                   # also publish checkpoint/

A BERT token classifier with two independent sigmoid outputs per word (verbal, nominal), trained
with the HF Trainer on a masked binary cross-entropy (train/predicates/trainer.py) over the QA-SRL
Bank offline set (verbal labels) and the QANom predicate-detector sentences (nominal labels)
(train/predicates/data.py, with the leakage checks). Each type's threshold is the one with the best
F1 on dev = QA-SRL GS dev verbs + QANom detector dev (train/predicates/scores.py); test = GS test verbs
+ QANom detector test.

The run dir gets checkpoints/ (the Trainer's, one per evaluation: the same command resumes from
the last one; `resume=PATH` names one, `resume=never` starts afresh), checkpoint/ (model, tokenizer,
predicate_detector.json with the thresholds, verb_forms.json: PredicateDetector.from_pretrained
loads it) and metrics.json (= all_results.json).
"""
from __future__ import annotations

import json
import logging
from collections import Counter
from pathlib import Path

import hydra
from omegaconf import DictConfig

from models.model_paths import base_model_id
from models.predicates import LABELS, PredicateDetector
from train.divergence import divergence_callbacks
from train.run_guard import claim_run_dir
from train.runs import resume_checkpoint, run_dir_of
from train.predicates.data import build_verb_forms, check_inputs, encode_training, load_data
from train.predicates.scores import choose_thresholds, evaluate, score
from train.predicates.trainer import PredicateTrainer, TokenLabelCollator, build_model, training_arguments
from train.budget_schedule import TimeBudgetCallback
from common.secrets import command_line, task_overrides
from common.hub import push_folder, write_model_card

log = logging.getLogger(__name__)


# Settings a rerun may change and still resume (train/run_guard.py): where it writes or pushes, its time budget.
VOLATILE_KEYS = ("paths", "hub", "output_dir", "resume", "max_train_minutes", "divergence",
                 "trainer.args.per_device_eval_batch_size", "trainer.args.logging_steps",
                 "trainer.args.dataloader_num_workers")


def train(cfg: DictConfig, run_dir: str | Path | None = None) -> dict:
    """Check inputs, train (resuming when a checkpoint is there), choose the thresholds on dev, score
    test, save checkpoint/ and metrics.json (and push checkpoint/ with hub=push); returns the metrics."""
    from hydra.core.hydra_config import HydraConfig

    check_inputs(cfg)
    run_dir = run_dir or cfg.output_dir or (run_dir_of(cfg) if HydraConfig.initialized() else None)
    if run_dir is None:
        raise ValueError("no run directory: pass run_dir, or set output_dir")
    run_dir = Path(run_dir)
    with claim_run_dir(cfg, run_dir, "train.predicates", VOLATILE_KEYS):
        return _train(cfg, run_dir)


def _train(cfg: DictConfig, run_dir: Path) -> dict:
    from transformers import set_seed

    data = load_data(cfg)
    verb_forms, table_stats = build_verb_forms(cfg, data.pop("bank_records"))
    run_dir.mkdir(parents=True, exist_ok=True)
    set_seed(int(cfg.seed))
    args = training_arguments(cfg, run_dir)
    model, tokenizer = build_model(cfg)
    checkpoint = resume_checkpoint(cfg, Path(args.output_dir), model)  # the parser's rule; a bad resume=PATH fails here
    c = cfg.detector_model
    train_ds = encode_training(data["train"], tokenizer, int(c.max_length), int(c.window_overlap))
    dev_ds = encode_training(data["dev"], tokenizer, int(c.max_length), int(c.window_overlap))
    log.info("training on %d sentences (%d windows); dev %d, test %d sentences", len(data["train"]),
             len(train_ds), len(data["dev"]), len(data["test"]))
    callbacks = [TimeBudgetCallback(float(cfg.max_train_minutes))] if cfg.max_train_minutes else []
    callbacks += divergence_callbacks(cfg)
    trainer = PredicateTrainer(model=model, args=args, train_dataset=train_ds, eval_dataset=dev_ds,
                               processing_class=tokenizer, data_collator=TokenLabelCollator(tokenizer),
                               callbacks=callbacks)
    if checkpoint:
        log.info("resuming from %s", checkpoint)
    result = trainer.train(resume_from_checkpoint=checkpoint)

    # the plain model: under bf16 the Trainer's accelerator wraps forward in autocast, and thresholds
    # must be chosen on the fp32 probabilities a loaded checkpoint gives
    model = trainer.accelerator.unwrap_model(trainer.model, keep_fp32_wrapper=False)
    detector = PredicateDetector(model, tokenizer, verb_forms, max_length=int(c.max_length),
                                 window_overlap=int(c.window_overlap),
                                 batch_size=int(args.per_device_eval_batch_size), device=str(args.device))
    dev_probs = detector.word_probs([it["tokens"] for it in data["dev"]])
    thresholds = choose_thresholds(data["dev"], dev_probs)
    detector.thresholds = thresholds
    dev = score(data["dev"], dev_probs, thresholds, verb_forms, data["gold_forms"]["dev"])
    test = evaluate(detector, data["test"], thresholds, data["gold_forms"]["test"])

    ckpt = detector.save_pretrained(run_dir / "checkpoint", extra={
        "trained_on": "QA-SRL Bank offline set (verbal) + QANom predicate-detector train (nominal)",
        "thresholds_chosen_on": "QA-SRL GS dev verbs + QANom predicate-detector dev (best F1 per type)",
        "command": _command()})
    metrics = {"dev": dev, "test": test, "thresholds": thresholds,
               "train": {"sentences": len(data["train"]), "by_source": dict(Counter(it["source"] for it in data["train"])),
                         **_fit_stats(trainer, result, len(train_ds)), "resumed_from": checkpoint},
               "leakage": data["leakage"], "verb_form_tables": table_stats, "detector": c.name,
               "checkpoint": str(ckpt)}
    _write(run_dir, metrics)
    if cfg.hub.push:
        metrics["hub_url"] = publish(cfg, ckpt, metrics)  # None when the push failed (logged; checkpoint/ kept)
        _write(run_dir, metrics)
    return metrics


def _fit_stats(trainer, result, n_windows: int) -> dict:
    state = trainer.state
    losses = [h["loss"] for h in state.log_history if "loss" in h]
    evals = [h["eval_loss"] for h in state.log_history if "eval_loss" in h]
    return {"steps": state.global_step, "planned_steps": state.max_steps, "epochs_done": round(state.epoch or 0, 3),
            "windows": n_windows, "minutes": round(result.metrics.get("train_runtime", 0.0) / 60, 2),
            "stopped_by": "max_train_minutes" if state.global_step < state.max_steps else "steps",
            "first_loss": losses[0] if losses else None, "final_loss": losses[-1] if losses else None,
            "dev_loss": evals[-1] if evals else None}


def _write(run_dir: Path, metrics: dict) -> None:
    for name in ("metrics.json", "all_results.json"):
        (run_dir / name).write_text(json.dumps(metrics, indent=1))


def _command() -> str:
    """The command line (secret overrides masked); no overrides when called as a function (tests)."""
    return command_line("train.predicates", task_overrides())


def publish(cfg: DictConfig, folder: Path, metrics: dict) -> str | None:
    """Write the model card (test F1 per type) into `folder` and push it to `hub.repo_id`. Returns
    the commit URL, or None when the push failed (common.hub logs why; the folder stays)."""
    test = metrics["test"]
    results = [{"task_type": "token-classification", "dataset_type": source, "dataset_name": name,
                "dataset_split": "test", "metric_type": f"{t}_f1", "metric_name": f"{t} predicate F1",
                "value": test[t]["f1"]}
               for t, source, name in (("verbal", "qasrl-gs", "QA-SRL GS (verbs)"),
                                       ("nominal", "qanom", "QANom predicate detector"))]
    name = cfg.detector_model.model_name_or_path
    write_model_card(folder, model_name=cfg.hub.repo_id.split("/")[-1],
                     description="QASem predicate detector: every verbal and nominal predicate of a tokenized "
                                 "sentence, with its verb form. Load with "
                                 "`models.predicates.PredicateDetector.from_pretrained(REPO_ID)`; "
                                 f"dev-chosen thresholds: {metrics['thresholds']}.",
                     results=results, datasets=["biu-nlp/qa_srl2018", "biu-nlp/qanom"], command=_command(),
                     base_model=base_model_id(name),
                     tags=["qasrl", "qanom", "qasem", "predicate-detection"])
    return push_folder(folder, cfg.hub.repo_id, private=bool(cfg.hub.private),
                       commit_message="QASem predicate detector, test F1 " + " / ".join(
                           f"{t} {test[t]['f1']:.3f}" for t in LABELS))


def _line(m: dict) -> str:
    return "  ".join(f"{k} P {m[k]['precision']:.3f} R {m[k]['recall']:.3f} F1 {m[k]['f1']:.3f}" for k in LABELS)


@hydra.main(version_base="1.3", config_path="../../conf", config_name="train_predicates")
def main(cfg: DictConfig) -> None:
    metrics = train(cfg)
    log.info("thresholds %s", metrics["thresholds"])
    log.info("dev:  %s  verb forms %s", _line(metrics["dev"]), metrics["dev"]["verb_form_accuracy"])
    log.info("test: %s  verb forms %s", _line(metrics["test"]), metrics["test"]["verb_form_accuracy"])
