"""Which models score the loop: `release=DIR` (a release folder or Hub id: models.release, every file checked
against its manifest), or the four paths given one by one; a path given on its own wins over the release's."""
from __future__ import annotations

from models.release import MODELS, ReleaseError, release_models


class ReleaseConfigError(ReleaseError):
    """Neither a release nor every model path: the message names what is missing."""


def model_paths(release: str | None, given: dict[str, str | None]) -> dict[str, str]:
    """The four model paths: the given ones, the rest from the release; an error names what is missing."""
    paths = release_models(release) if release else {}
    paths.update({k: v for k, v in given.items() if v})
    missing = [k for k in MODELS if not paths.get(k)]
    if missing:
        raise ReleaseConfigError("give release=DIR, or " + " ".join(f"{k}=PATH" for k in missing) + f" (missing: {', '.join(missing)})")
    return paths


def load_scorer_components(paths: dict[str, str], batch_size: int = 32):
    """(detector, parser, ContradictionScorer) from the model paths."""
    from models.contradiction import load_components, load_contradiction_model
    from models.model_paths import resolve_model_path
    from models.self_contradiction.detect import ContradictionScorer

    detector, parser, entailment, embedder = load_components(paths["parser"], paths["detector"], paths["entailment"],
                                                             batch_size)
    model = load_contradiction_model(resolve_model_path(paths["contradiction"]), batch_size=batch_size)
    return detector, parser, ContradictionScorer(model, entailment, embedder)
