"""Which models score the loop: `release=DIR` (the release folder: its manifest.json's model paths, else its
parser/, detector/, entailment/ and contradiction/ subfolders), or the four paths given one by one; a path given
on its own wins over the release's. One function resolves them, so the shared release loader can take its place."""
from __future__ import annotations

import json
from pathlib import Path

MODELS = ("parser", "detector", "entailment", "contradiction")


class ReleaseConfigError(ValueError):
    """A release folder or a model path that cannot be used: the message names it."""


def release_model_paths(folder: str | Path) -> dict[str, str]:
    """{parser, detector, entailment, contradiction: folder} of a release folder."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ReleaseConfigError(f"release={folder}: no such folder")
    manifest = folder / "manifest.json"
    if manifest.is_file():
        try:
            models = json.loads(manifest.read_text()).get("models") or {}
        except json.JSONDecodeError as e:
            raise ReleaseConfigError(f"{manifest}: not valid JSON ({e})") from None
        out = {}
        for name in MODELS:
            entry = models.get(name)
            path = entry.get("path") if isinstance(entry, dict) else entry
            if not path:
                raise ReleaseConfigError(f"{manifest}: names no {name} model")
            out[name] = str(folder / path)
    else:
        out = {name: str(folder / name) for name in MODELS}
    missing = [f"{k} ({v})" for k, v in out.items() if not Path(v).is_dir()]
    if missing:
        raise ReleaseConfigError(f"release={folder}: missing model folders: {', '.join(missing)}")
    return out


def model_paths(release: str | None, given: dict[str, str | None]) -> dict[str, str]:
    """The four model paths: the given ones, the rest from the release; an error names what is missing."""
    paths = release_model_paths(release) if release else {}
    paths.update({k: v for k, v in given.items() if v})
    missing = [k for k in MODELS if not paths.get(k)]
    if missing:
        raise ReleaseConfigError("give release=DIR, or " + " ".join(f"{k}=PATH" for k in missing) + f" (missing: {', '.join(missing)})")
    return paths


def load_scorer_components(paths: dict[str, str], batch_size: int = 32):
    """(detector, parser, ContradictionScorer) from the model paths."""
    from models.contradiction import ContradictionModel, load_components
    from models.model_paths import resolve_model_path
    from models.self_contradiction.detect import ContradictionScorer

    detector, parser, entailment, embedder = load_components(paths["parser"], paths["detector"], paths["entailment"],
                                                             batch_size)
    model = ContradictionModel.load(resolve_model_path(paths["contradiction"]), batch_size=batch_size)
    return detector, parser, ContradictionScorer(model, entailment, embedder)
