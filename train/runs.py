"""What every trainer shares about its run directory: where it is, and the one resume rule
(an explicit checkpoint path, else the last checkpoint in <run dir>/checkpoints)."""
from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig
from transformers.trainer_utils import get_last_checkpoint


def run_dir_of(cfg: DictConfig) -> Path:
    """Hydra's run directory; `run_dir` when train(cfg) is called without Hydra (tests)."""
    from hydra.core.hydra_config import HydraConfig

    if HydraConfig.initialized():
        return Path(HydraConfig.get().runtime.output_dir)
    return Path(cfg.get("run_dir") or "outputs/parser")


def resume_checkpoint(cfg: DictConfig, output_dir: Path) -> str | None:
    """One rule: an explicit checkpoint path, else the last checkpoint in the run dir."""
    resume = cfg.get("resume", "auto")
    if resume in (None, False, "none"):
        return None
    if resume != "auto":
        if not Path(resume).is_dir():
            raise FileNotFoundError(f"resume={resume}: no such checkpoint folder")
        return str(resume)
    return get_last_checkpoint(str(output_dir)) if output_dir.is_dir() else None
