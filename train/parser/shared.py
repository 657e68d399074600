"""What both parser kinds' trainers share: their TrainingArguments, what a finished run writes, and
the Hub push of its best checkpoint."""
from __future__ import annotations

import json
import logging
from pathlib import Path

from omegaconf import DictConfig, OmegaConf
from transformers import Seq2SeqTrainingArguments

from common.tracking import log_records_table, prediction_rows
from data_prep.records import write_jsonl
from metrics.report import metrics_table
from common.hub import push_folder, write_model_card
from models.precision import usable_bf16
from common.secrets import mask_overrides, task_overrides

log = logging.getLogger(__name__)


def training_arguments(cfg: DictConfig, run_dir: Path, generate: bool = True) -> Seq2SeqTrainingArguments:
    """The trainer group's arguments plus what every parser run needs: checkpoints saved at each
    evaluation (so the best one by dev UA F1 is always on disk), W&B when the logger is on."""
    args = OmegaConf.to_container(cfg.trainer.args, resolve=True)
    for key in ("save_strategy", "save_steps"):
        if key in args:
            log.warning("trainer.args.%s=%s is ignored: checkpoints are saved at every evaluation "
                        "(eval_strategy / eval_steps), so the best one by dev UA F1 is always on disk", key, args[key])
    args.update(
        output_dir=str(run_dir / "checkpoints"),
        predict_with_generate=generate,
        load_best_model_at_end=True,
        metric_for_best_model="ua_f1",
        greater_is_better=True,
        save_strategy=args.get("eval_strategy", "steps"),
        remove_unused_columns=False,  # the eval set carries `idx` for constrained decoding
        seed=int(cfg.seed),
        report_to=["wandb"] if cfg.logger.enabled else [],
        run_name=cfg.run_name,
    )
    if args["save_strategy"] == "steps":
        args["save_steps"] = args.get("eval_steps")
    args["bf16"] = usable_bf16(args.get("bf16"), "trainer.args.bf16")
    if cfg.deepspeed.config:
        args["deepspeed"] = OmegaConf.to_container(cfg.deepspeed.config, resolve=True)
    return Seq2SeqTrainingArguments(**args)


def write_run(cfg: DictConfig, run_dir: Path, predictions: list[dict], dev: dict, metrics: dict, eval_metrics: dict,
              wandb_run, title: str, is_sample: bool) -> None:
    """What every parser run writes after training (rank 0): dev predictions and metrics,
    all_results.json, the dev table, the W&B summary and table, and the Hub push of best/."""
    write_jsonl(run_dir / "dev_predictions.jsonl", predictions)
    (run_dir / "dev_metrics.json").write_text(json.dumps(dev, indent=2))
    if cfg.hub.push:
        metrics["hub_url"] = publish(cfg, run_dir / "best", dev)
    (run_dir / "all_results.json").write_text(json.dumps(metrics, indent=2, default=str))
    print(metrics_table({"dev": dev}, title=title))
    if is_sample:
        log.warning("These figures come from the shipped hand-written sample: THEY MEAN NOTHING.")
    if wandb_run is not None:
        wandb_run.summary.update({f"dev/{k}": v for k, v in eval_metrics.items() if isinstance(v, (int, float))})
        log_records_table(wandb_run, "dev_predictions", prediction_rows(predictions),
                          ["sentence", "predicate", "generated", "qas"])


SEQ2SEQ_CARD = ("QASem parser (seq2seq): reads a sentence with a marked (verbal or nominal) predicate and writes "
                "its QA-SRL question-answer pairs. `qa_format.json` says how to decode.")
SPAN_CARD = ("QASem parser (span-first): an encoder scores every span of the sentence as an answer of the marked "
             "(verbal or nominal) predicate, keeps those above the dev-chosen threshold in `config.json`, and "
             "predicts one QA-SRL question per span. Load with `models.parser.load_parser(repo_id)` of "
             "the qasem-train repository.")


def publish(cfg: DictConfig, best_dir: Path, dev: dict) -> str | None:
    """Push best/ with a model card (dev UA / LA F1 as model-index results, the command that trained it)."""
    command = "python -m train.parser " + " ".join(mask_overrides(task_overrides()))  # hub.token=... masked
    results = [{"task_type": "text2text-generation", "dataset_type": "qasrl", "dataset_name": "QA-SRL GS + QANom dev",
                "dataset_split": "dev", "metric_type": f"{kind}_f1", "metric_name": f"{kind.upper()} F1",
                "value": dev[kind]["f1"]} for kind in ("ua", "la") if kind in dev]
    from train.parser.families import build_family

    family = build_family(cfg.model)
    span, base = family.span, family.base_model
    write_model_card(best_dir, model_name=cfg.hub.repo_id.split("/")[-1], description=SPAN_CARD if span else SEQ2SEQ_CARD,
                     results=results, datasets=["biu-nlp/qa_srl2018", "biu-nlp/qanom"], command=command,
                     base_model=base if base and base != "minilm" else None, tags=["qasrl", "qanom", "qasem"])
    return push_folder(best_dir, cfg.hub.repo_id, private=bool(cfg.hub.private),
                       commit_message=f"QASem parser, dev UA F1 {dev.get('ua', {}).get('f1', 0):.3f}",
                       token=cfg.hub.get("token"))
