"""The seq2seq parser's training: records -> text format -> Seq2SeqTrainer, evaluated by generation with
the QA-SRL metrics on dev, best checkpoint kept by dev UA F1 (LoRA through PEFT when configured)."""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
from omegaconf import DictConfig

from common.data import tokenize
from common.tracking import init_wandb
from metrics.qasrl import evaluate_records
from models.parser import FORMAT_FILE, PARSER_FILE, QASemParser, decode_texts
from models.parser.qa_format import QAFormat, save_format
from train.parser.families import Seq2SeqFamily
from train.parser.seq2seq_trainer import IndexedCollator, ParserTrainer
from train.parser.shared import write_run
from train.runs import SaveFilesCallback, train_then_evaluate


def train_seq2seq(cfg: DictConfig, family: Seq2SeqFamily, fmt: QAFormat, run_dir: Path, data: tuple, args,
                  callbacks: list) -> dict:
    train_records, dev_records, is_sample = data
    tokenizer = family.build_tokenizer(fmt)
    model = family.build_model(tokenizer)
    if cfg.lora:
        model = add_lora(model, cfg.lora)
    train_ds = tokenize(train_records, fmt, tokenizer, cfg.max_source_length, cfg.max_target_length)
    dev_ds = tokenize(dev_records, fmt, tokenizer, cfg.max_source_length, cfg.max_target_length, with_index=True)
    parser = QASemParser(model, tokenizer, fmt, constrained=bool(cfg.constrained_decoding),
                         max_source_length=int(cfg.max_source_length), device="keep")
    parser_settings = {"constrained": parser.constrained, "max_source_length": int(cfg.max_source_length)}

    wandb_run = init_wandb(cfg, "train-parser", str(run_dir), name=cfg.run_name) \
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

    callbacks = [SaveFilesCallback({FORMAT_FILE: fmt.to_json(), PARSER_FILE: json.dumps(parser_settings)}), *callbacks]
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
    if cfg.lora:  # publish a plain model: the adapter merged into its base
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


def add_lora(model, lora_cfg):
    """Wrap the model with LoRA adapters (PEFT); only the adapters train."""
    from peft import LoraConfig, TaskType, get_peft_model

    config = LoraConfig(task_type=TaskType.SEQ_2_SEQ_LM, r=int(lora_cfg.r), lora_alpha=int(lora_cfg.alpha),
                        lora_dropout=float(lora_cfg.dropout), target_modules=list(lora_cfg.target_modules))
    model = get_peft_model(model, config)
    model.print_trainable_parameters()
    model.accepts_loss_kwargs = False
    return model
