"""The one way to find a saved artifact (parser, predicate detector, entailment scorer, and the
next ones): a local folder, else a Hub repo id fetched whole with `snapshot_download`. Errors are
never swallowed: a folder that is missing and a Hub repo that cannot be fetched both raise, with
the reason."""
from __future__ import annotations

import json
from pathlib import Path


class CheckpointNotFoundError(FileNotFoundError):
    pass


def is_hub_id(name: str | Path) -> bool:
    """ORG/NAME that is not a local path: what a published checkpoint may refer to."""
    name = str(name)
    return not Path(name).exists() and not name.startswith((".", "/", "~")) and name.count("/") == 1


def checkpoint_folder(path_or_hub_id: str | Path) -> Path:
    """The local folder of a checkpoint (downloaded from the Hub when given a repo id)."""
    folder = Path(path_or_hub_id)
    if folder.is_dir():
        return folder
    name = str(path_or_hub_id)
    if not is_hub_id(name):
        raise CheckpointNotFoundError(f"{name}: no such checkpoint folder (and not a Hub id of the form ORG/NAME)")
    from huggingface_hub import snapshot_download

    try:
        return Path(snapshot_download(name))
    except Exception as e:  # re-raised with the id: a bare 404 / offline error names no checkpoint
        raise CheckpointNotFoundError(f"{name}: not a local folder, and the Hub repo could not be fetched: "
                                      f"{type(e).__name__}: {e}") from e


def read_json(folder: Path, filename: str) -> dict | None:
    """A JSON file of a checkpoint folder, or None when the checkpoint has none."""
    path = Path(folder) / filename
    return json.loads(path.read_text()) if path.exists() else None
