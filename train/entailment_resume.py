"""Resume by stage for train.entailment.

One resume rule: the same command in the same run dir reuses every stage an earlier (killed) run
finished (synthetic pre-training, each CV fold, the final model). A stage counts as finished only
once its marker file is written, after everything else of it; each stage seeds itself, so a
resumed run equals an uninterrupted one. A run dir holds the stages of one configuration only.
"""
from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

log = logging.getLogger(__name__)

STAGE_FILE = "stage_done.json"
# settings that do not change what a stage computes (where it is written, logged or pushed)
VOLATILE_KEYS = ("output_dir", "logger", "hub")


def stage_done(folder: Path) -> dict | None:
    """The info a finished stage saved in `folder`, or None when it did not finish."""
    path = Path(folder) / STAGE_FILE
    return json.loads(path.read_text()) if path.exists() else None


def mark_done(folder: Path, info: dict) -> dict:
    """Mark the stage in `folder` finished (its last write) and return `info`."""
    Path(folder).mkdir(parents=True, exist_ok=True)
    (Path(folder) / STAGE_FILE).write_text(json.dumps(info))
    return info


def check_resume(cfg: DictConfig, run_dir: Path) -> None:
    """Stages of a run dir are reused only by the same configuration: another one is an error."""
    conf = {k: v for k, v in OmegaConf.to_container(cfg, resolve=True).items() if k not in VOLATILE_KEYS}
    key = hashlib.sha256(json.dumps(conf, sort_keys=True, default=str).encode()).hexdigest()[:16]
    path = run_dir / "resume_key.json"
    if path.exists() and json.loads(path.read_text())["config"] != key:
        raise ValueError(f"{run_dir} holds the stages of a train.entailment run with another configuration; "
                         "use a new hydra.run.dir (or delete that one) to start over")
    if path.exists():
        log.info("resuming in %s: finished stages are reused", run_dir)
    path.write_text(json.dumps({"config": key}))
