"""Publish a release folder to the Hub as one repo: the four model folders, manifest.json and the
model card, nothing of the training runs' checkpoints or logs. The files are hard-linked into a
staging folder (no copy of the weights) and pushed in one commit; a failed push keeps everything local."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from common.hub import push_folder
from models.release import MANIFEST, release_models


def staged(release: Path) -> Path:
    """release/.publish: manifest.json, README.md and every model file the manifest lists, linked."""
    release_models(release)  # refuses a release with a missing or corrupt model before anything is pushed
    manifest = json.loads((release / MANIFEST).read_text())
    stage = release / ".publish"
    shutil.rmtree(stage, ignore_errors=True)
    for rel in [MANIFEST, "README.md", *(f for m in manifest["models"].values() for f in m["files"])]:
        target = stage / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(release / rel, target)
        except OSError:  # another file system: copy
            shutil.copy2(release / rel, target)
    return stage


def publish(release: Path, repo_id: str, private: bool = True) -> str | None:
    manifest = json.loads((release / MANIFEST).read_text())
    return push_folder(staged(release), repo_id, private=private,
                       commit_message=f"QASem scoring set, {manifest['profile']} release of {manifest['date']}")
