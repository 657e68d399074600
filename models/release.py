"""A release: the parser, predicate detector, entailment classifier and contradiction scorer trained
together by `bash scripts/release.sh PROFILE DIR`, in one folder (or Hub repo) with `manifest.json`.

The manifest names each model's folder and the sha256 of every file in it. `release_models` checks all
of them before anything loads, so a release with a missing or corrupt file is refused whole, naming the
model and the file, instead of failing half-way through loading."""
from __future__ import annotations

import json
from pathlib import Path

from data_prep.checksums import sha256_of
from models.checkpoint import checkpoint_folder

MANIFEST = "manifest.json"
MODELS = ("parser", "detector", "entailment", "contradiction")


class ReleaseError(ValueError):
    pass


def release_folder(path_or_hub_id: str | Path) -> Path | None:
    """The local folder of a release (fetched from the Hub for a repo id), or None when the folder or
    repo holds no manifest.json (a single model's checkpoint)."""
    folder = checkpoint_folder(path_or_hub_id)
    return folder if (folder / MANIFEST).is_file() else None


def read_manifest(path_or_hub_id: str | Path) -> tuple[Path, dict]:
    folder = release_folder(path_or_hub_id)
    if folder is None:
        raise ReleaseError(f"{path_or_hub_id}: no {MANIFEST}, so not a release (bash scripts/release.sh PROFILE DIR "
                           "writes one)")
    try:
        return folder, json.loads((folder / MANIFEST).read_text())
    except json.JSONDecodeError as e:
        raise ReleaseError(f"{folder / MANIFEST}: not valid JSON ({e})") from None


def release_models(path_or_hub_id: str | Path) -> dict[str, str]:
    """{parser, detector, entailment, contradiction: local folder}, once every file the manifest lists is
    checked (present, same size, same sha256)."""
    folder, manifest = read_manifest(path_or_hub_id)
    models = manifest.get("models") or {}
    out = {}
    for name in MODELS:
        if name not in models:
            raise ReleaseError(f"{folder / MANIFEST}: names no {name} model")
        model_dir = folder / models[name]["path"]
        if not model_dir.is_dir():
            raise ReleaseError(f"release {path_or_hub_id}: the {name} model's folder {model_dir} is missing")
        for rel, entry in models[name]["files"].items():
            path = folder / rel
            if not path.is_file():
                raise ReleaseError(f"release {path_or_hub_id}: the {name} model's file {rel} is missing")
            if path.stat().st_size != entry["size"] or sha256_of(path) != entry["sha256"]:
                raise ReleaseError(f"release {path_or_hub_id}: the {name} model's file {rel} is corrupt (its "
                                   f"sha256 is not the manifest's {entry['sha256'][:12]}…)")
        out[name] = str(model_dir)
    return out


def apply_release(cfg, keys=MODELS) -> None:
    """Fill the config's model paths (parser=, detector=, ...) that are not given from cfg.release; a
    path given on the command line wins. Mutates cfg (a DictConfig or dict)."""
    release = cfg["release"]
    if not release:
        return
    models = release_models(release)
    for key in keys:
        if not cfg[key]:
            cfg[key] = models[key]
