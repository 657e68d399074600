"""One rule for a configured model name in the training entry points: `minilm` is the offline
all-MiniLM-L6-v2 package (models.seq2seq.resolve_name); a path relative to where the command was
started is a folder; anything else is a Hub id."""
from __future__ import annotations

from pathlib import Path

import hydra

from models.seq2seq import resolve_name


def resolve_model_path(name: str | None) -> str | None:
    if name in (None, ""):
        return None
    if name == "minilm":
        return resolve_name(name)
    p = Path(hydra.utils.to_absolute_path(str(name)))
    return str(p) if p.exists() else name
