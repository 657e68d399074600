"""Train the QASem parser: records -> text format -> Seq2SeqTrainer, evaluated by generation with
the QA-SRL metrics on dev, best checkpoint kept by dev UA F1.

    python -m train.parser                       # the README's main job: the span parser, ~6 min on one core
    python -m train.parser +experiment=seq2seq_quick   # its seq2seq counterpart (same data and minutes)
    python -m train.parser +experiment=cpu_offline
    torchrun --nproc_per_node 8 -m train.parser +experiment=t5xl hydra.run.dir=RUN_DIR

Writes into the run directory: checkpoints/ (resumable), best/ (model, tokenizer, generation
config, qa_format.json), all_results.json, dev_metrics.json, dev_predictions.jsonl.
"""
from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import hydra
import numpy as np
from omegaconf import DictConfig, OmegaConf
from transformers import Seq2SeqTrainingArguments, set_seed

from data_prep.records import write_jsonl
from metrics.qasrl import evaluate_records
from models.parser import FORMAT_FILE, PARSER_FILE, QASemParser, decode_texts
from models.qa_format import get_format, save_format
from models.seq2seq import build_model, build_tokenizer, check_model_config, is_t5
from common.data import load_train_dev, tokenize
from train.budget_schedule import budget_callbacks
from train.divergence import divergence_callbacks
from train.run_guard import claim_run_dir
from train.runs import run_dir_of, train_then_evaluate
from train.seq2seq_trainer import IndexedCollator, ParserTrainer, SaveFilesCallback
from common.tracking import init_wandb, log_records_table, prediction_rows
from metrics.report import metrics_table

log = logging.getLogger(__name__)


def check_config(cfg: DictConfig) -> None:
    """Everything that can be wrong before a weight is loaded or a step is taken."""
    if cfg.model.get("kind") == "span":
        from train.span_parser import check_span_config

        return check_span_config(cfg.model)
    check_model_config(cfg.model)
    get_format(OmegaConf.to_container(cfg.format, resolve=True) if OmegaConf.is_config(cfg.format) else cfg.format)
    args = cfg.trainer.args
    if args.get("fp16") and is_t5(cfg.model):
        raise ValueError(f"fp16 requested for the T5-family model {cfg.model.get('name') or cfg.model.kind}: "
                         "T5 overflows to NaN in fp16; use trainer.args.bf16=true (or fp32)")


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
        report_to=["wandb"] if cfg.logger.get("enabled") else [],
        run_name=cfg.get("run_name"),
    )
    if args["save_strategy"] == "steps":
        args["save_steps"] = args.get("eval_steps")
    if cfg.deepspeed.get("config"):
        args["deepspeed"] = OmegaConf.to_container(cfg.deepspeed.config, resolve=True)
    return Seq2SeqTrainingArguments(**args)


# Settings that do not change what a run trains (where it writes, logs or pushes, its time budget):
# a rerun may change them and still resume (train/run_guard.py).
VOLATILE_KEYS = ("paths", "logger", "hub", "run_dir", "run_name", "resume", "max_train_minutes", "divergence",
                 "trainer.args.per_device_eval_batch_size", "trainer.args.logging_steps",
                 "trainer.args.dataloader_num_workers")


def train(cfg: DictConfig) -> dict:
    """Check the config, claim the run directory (lock, same configuration or resume=none), train."""
    check_config(cfg)
    run_dir = run_dir_of(cfg)
    with claim_run_dir(cfg, run_dir, "train.parser", VOLATILE_KEYS):
        if cfg.model.get("kind") == "span":  # the span-first family: same run directory, same rules
            from train.span_parser import train as train_span

            return train_span(cfg)
        return train_seq2seq(cfg)


def train_seq2seq(cfg: DictConfig) -> dict:
    run_dir = run_dir_of(cfg)
    set_seed(int(cfg.seed))
    fmt = get_format(OmegaConf.to_container(cfg.format, resolve=True) if OmegaConf.is_config(cfg.format) else cfg.format)

    train_records, dev_records, is_sample = load_train_dev(cfg)

    # Under ZeRO-3 the arguments must exist before the model is built (weights load sharded).
    args = training_arguments(cfg, run_dir)
    tokenizer = build_tokenizer(cfg.model, fmt)
    model = build_model(cfg.model, tokenizer)
    if cfg.get("lora"):
        model = add_lora(model, cfg.lora)
    train_ds = tokenize(train_records, fmt, tokenizer, cfg.max_source_length, cfg.max_target_length)
    dev_ds = tokenize(dev_records, fmt, tokenizer, cfg.max_source_length, cfg.max_target_length, with_index=True)
    parser = QASemParser(model, tokenizer, fmt, constrained=bool(cfg.constrained_decoding),
                         max_source_length=int(cfg.max_source_length), device="keep")
    parser_settings = {"constrained": parser.constrained, "max_source_length": int(cfg.max_source_length)}

    wandb_run = init_wandb(cfg, "train-parser", str(run_dir), name=cfg.get("run_name")) \
        if int(os.environ.get("RANK", "0")) == 0 else None
    last_eval: dict = {}

    def compute_metrics(pred) -> dict:
        # label_ids hold each prediction's dev record index (see ParserTrainer.prediction_step)
        ids = np.where(pred.predictions < 0, tokenizer.pad_token_id, pred.predictions)
        texts = tokenizer.batch_decode(ids, skip_special_tokens=False)
        first = {}
        for row, i in enumerate(np.asarray(pred.label_ids).reshape(len(texts), -1)[:, 0].tolist()):
            first.setdefault(int(i), row)  # a distributed sampler may repeat the last records
        order = sorted(first)
        gold = [dev_records[i] for i in order]
        preds, counts = decode_texts(fmt, gold, [texts[first[i]] for i in order])
        m = evaluate_records(gold, preds)
        last_eval.update(predictions=preds, metrics=m, counts=counts)
        out = {f"{kind}_{k}": m[kind][k] for kind in ("ua", "la") for k in ("precision", "recall", "f1")}
        out.update({f"decode_{k}": v for k, v in counts.items()})
        return out

    callbacks = [SaveFilesCallback({FORMAT_FILE: fmt.to_json(), PARSER_FILE: json.dumps(parser_settings)}),
                 *divergence_callbacks(cfg)]
    callbacks += budget_callbacks(cfg)
    trainer = ParserTrainer(
        model=model, args=args, train_dataset=train_ds, eval_dataset=dev_ds, processing_class=tokenizer,
        data_collator=IndexedCollator(tokenizer, model), compute_metrics=compute_metrics,
        callbacks=callbacks,
        parser=parser, eval_records=dev_records,
    )
    # The best checkpoint (by dev UA F1) is evaluated once more at the end, for its predictions.
    train_metrics, eval_metrics = train_then_evaluate(trainer, cfg)
    metrics = {**train_metrics, **eval_metrics, "best_checkpoint": trainer.state.best_model_checkpoint,
               "train_predicates": len(train_records), "dev_predicates": len(dev_records),
               "sample_data": is_sample}
    best_dir = run_dir / "best"
    if cfg.get("lora"):  # publish a plain model: the adapter merged into its base
        trainer.model.merge_and_unload().save_pretrained(best_dir)
    else:
        trainer.save_model(str(best_dir))  # under ZeRO-3 this gathers the 16-bit weights
    if trainer.is_world_process_zero():
        tokenizer.save_pretrained(best_dir)
        save_format(fmt, best_dir / FORMAT_FILE)
        (best_dir / PARSER_FILE).write_text(json.dumps(parser_settings))
        dev = {**last_eval.get("metrics", {}), "decode": last_eval.get("counts", {})}
        write_run(cfg, run_dir, last_eval.get("predictions", []), dev, metrics, eval_metrics, wandb_run,
                  title=f"dev ({len(dev_records)} predicates)", is_sample=is_sample)
    if wandb_run is not None:
        wandb_run.finish()
    return metrics


def write_run(cfg: DictConfig, run_dir: Path, predictions: list[dict], dev: dict, metrics: dict, eval_metrics: dict,
              wandb_run, title: str, is_sample: bool) -> None:
    """What every parser run writes after training (rank 0): dev predictions and metrics,
    all_results.json, the dev table, the W&B summary and table, and the Hub push of best/."""
    write_jsonl(run_dir / "dev_predictions.jsonl", predictions)
    (run_dir / "dev_metrics.json").write_text(json.dumps(dev, indent=2))
    if cfg.hub.get("push"):
        metrics["hub_url"] = publish(cfg, run_dir / "best", dev)
    (run_dir / "all_results.json").write_text(json.dumps(metrics, indent=2, default=str))
    print(metrics_table({"dev": dev}, title=title))
    if is_sample:
        log.warning("These figures come from the shipped hand-written sample: THEY MEAN NOTHING.")
    if wandb_run is not None:
        wandb_run.summary.update({f"dev/{k}": v for k, v in eval_metrics.items() if isinstance(v, (int, float))})
        log_records_table(wandb_run, "dev_predictions", prediction_rows(predictions),
                          ["sentence", "predicate", "generated", "qas"])


def add_lora(model, lora_cfg):
    """Wrap the model with LoRA adapters (PEFT); only the adapters train."""
    from peft import LoraConfig, TaskType, get_peft_model

    config = LoraConfig(task_type=TaskType.SEQ_2_SEQ_LM, r=int(lora_cfg.r), lora_alpha=int(lora_cfg.alpha),
                        lora_dropout=float(lora_cfg.dropout), target_modules=list(lora_cfg.target_modules))
    model = get_peft_model(model, config)
    model.print_trainable_parameters()
    model.accepts_loss_kwargs = False
    return model


SEQ2SEQ_CARD = ("QASem parser (seq2seq): reads a sentence with a marked (verbal or nominal) predicate and writes "
                "its QA-SRL question-answer pairs. `qa_format.json` says how to decode.")
SPAN_CARD = ("QASem parser (span-first): an encoder scores every span of the sentence as an answer of the marked "
             "(verbal or nominal) predicate, keeps those above the dev-chosen threshold in `config.json`, and "
             "predicts one QA-SRL question per span. Load with `models.parser.load_parser(repo_id)` of "
             "the qasem-train repository.")


def publish(cfg: DictConfig, best_dir: Path, dev: dict) -> str | None:
    """Push best/ with a model card (dev UA / LA F1 as model-index results, the command that trained it)."""
    from common.hub import push_folder, write_model_card
    from common.secrets import mask_overrides, task_overrides

    command = "python -m train.parser " + " ".join(mask_overrides(task_overrides()))  # hub.token=... masked
    results = [{"task_type": "text2text-generation", "dataset_type": "qasrl", "dataset_name": "QA-SRL GS + QANom dev",
                "dataset_split": "dev", "metric_type": f"{kind}_f1", "metric_name": f"{kind.upper()} F1",
                "value": dev[kind]["f1"]} for kind in ("ua", "la") if kind in dev]
    span = cfg.model.get("kind") == "span"
    base = cfg.model.get("encoder") if span else cfg.model.get("name")
    write_model_card(best_dir, model_name=cfg.hub.repo_id.split("/")[-1], description=SPAN_CARD if span else SEQ2SEQ_CARD,
                     results=results, datasets=["biu-nlp/qa_srl2018", "biu-nlp/qanom"], command=command,
                     base_model=base if base and base != "minilm" else None, tags=["qasrl", "qanom", "qasem"])
    return push_folder(best_dir, cfg.hub.repo_id, private=bool(cfg.hub.get("private", True)),
                       commit_message=f"QASem parser, dev UA F1 {dev.get('ua', {}).get('f1', 0):.3f}",
                       token=cfg.hub.get("token"))


@hydra.main(version_base="1.3", config_path="../conf", config_name="train_parser")
def main(cfg: DictConfig) -> None:
    train(cfg)


if __name__ == "__main__":
    main()
