"""Publishing the contradiction scorer alone: its model card (CV figures by file) and a Hub push."""
from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig

from common.hub import push_folder, write_model_card
from common.secrets import command_line, task_overrides
from models.model_paths import base_model_id

def publish(cfg: DictConfig, model, folder: Path, best: dict) -> str | None:
    """The model card (CV figures by file) and a push of R/contradiction to hub.repo_id; a failed
    push keeps the folder and returns None (common.hub logs why)."""
    results = [{"task_type": "text-classification", "dataset_type": "chatprotect", "dataset_name": f"ChatProtect {name} (CV)",
                "dataset_split": "validation", "metric_type": "f1", "metric_name": f"contradiction F1 ({name}, CV)",
                "value": row["f1"]} for name, row in best["cv_by_file"].items()]
    needs = (f" It aligns QAs with the parser {model.info['parser']}, the detector {model.info['detector']} and the "
             f"entailment classifier {model.info['entailment']}.") if model.uses_alignment else ""
    write_model_card(folder, model_name=cfg.hub.repo_id.split("/")[-1],
                     description="Self-contradiction scorer: two sentences one model wrote in one context -> "
                                 "P(contradiction) and the conflicting QA pairs. Load with "
                                 "models.contradiction.ContradictionModel.load(REPO_ID)." + needs,
                     results=results, datasets=["eth-sri/chatprotect"], command=command_line("train.contradiction", task_overrides()),
                     base_model=base_model_id(cfg.encoder.model) if model.uses_encoder else None,
                     tags=["qasem", "self-contradiction"])
    return push_folder(folder, cfg.hub.repo_id, private=bool(cfg.hub.private),
                       commit_message=f"contradiction scorer, CV F1 {best['cv']['f1']:.3f}")
