"""W&B glue shared by the entry points: one run per job, the resolved config without secrets."""
from __future__ import annotations

import os
from typing import Any

from omegaconf import DictConfig, OmegaConf

from common.secrets import mask_config, masked_argv


def redact(obj: Any) -> Any:
    """A copy of a (nested) config dict with every secret-looking key's value replaced (the rule:
    common.secrets.is_secret_key)."""
    return mask_config(obj)


def resolved_config(cfg: DictConfig) -> dict:
    return redact(OmegaConf.to_container(cfg, resolve=True, throw_on_missing=False))


def init_wandb(cfg: DictConfig, job_type: str, run_dir: str, name: str | None = None):
    """Start a W&B run when `cfg.logger.enabled`; returns the run or None. Never blocks on the
    network in offline mode (the run files land in `run_dir/wandb`)."""
    logger_cfg = cfg.logger
    if not logger_cfg.enabled:
        return None
    import wandb

    os.environ.setdefault("WANDB_SILENT", "true")
    # W&B records the command line (run metadata: args) at init: give it the masked one.
    with masked_argv():
        run = wandb.init(
            project=logger_cfg.project,
            entity=logger_cfg.entity,
            group=logger_cfg.group,
            tags=list(logger_cfg.tags or []),
            mode=os.environ.get("WANDB_MODE", logger_cfg.mode),
            job_type=job_type,
            name=name,
            dir=run_dir,
            config=resolved_config(cfg),
            reinit="finish_previous",
        )
    return run


def log_records_table(run, key: str, rows: list[dict], columns: list[str]) -> None:
    """Log a list of dicts as a W&B table a reviewer can read."""
    if run is None:
        return
    import wandb

    table = wandb.Table(columns=columns)
    for row in rows:
        table.add_data(*[row.get(c) for c in columns])
    run.log({key: table})


def prediction_rows(preds: list[dict], limit: int = 200) -> list[dict]:
    """Rows of a W&B table of parser predictions: sentence, predicate, generated text, QAs."""
    return [{"sentence": " ".join(p["tokens"]), "predicate": p["predicate"], "generated": p.get("generated", ""),
             "qas": " | ".join(f"{qa['question']} {'; '.join(qa['answer_texts'])}" for qa in p["qas"])}
            for p in preds[:limit]]
