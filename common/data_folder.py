"""Where the raw data releases are, for the commands that read them outside a Hydra config (the release pipeline,
evaluation.pipeline_choice)."""
from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def data_dir() -> Path:
    """$QASEM_DATA_DIR, else ../shared/data beside the repo, else data/raw (python -m data_prep.download)."""
    if os.environ.get("QASEM_DATA_DIR"):
        return Path(os.environ["QASEM_DATA_DIR"]).resolve()
    beside = REPO.parent / "shared" / "data"
    return beside.resolve() if beside.is_dir() else (REPO / "data" / "raw").resolve()
