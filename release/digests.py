"""Content digests of the release's input files (code, configs, data), the files Snakemake compares.

Snakemake reruns a stage when an input is newer than its stamp. Compared on the files themselves, a
fresh checkout, a copied data folder or a machine restored from a snapshot (every mtime new, no byte
changed) would retrain every model. So each input stands in the DAG as `DIR/.inputs/<kind>/<path>.sha256`,
a file rewritten only when the input's content changes: touching a file reruns nothing, editing it reruns
what reads it. Keys are relative to the repo or the data folder, so another clone of the same code resumes
the same release. Hashes are cached by (size, mtime) in `DIR/.inputs/index.json`: a rerun hashes only
what moved."""
from __future__ import annotations

import json
import os
from pathlib import Path

from release.stamps import file_entry

FOLDER = ".inputs"


class Digests:
    """digest(path, base, kind) -> the digest file standing for `path` (a path relative to the release folder)."""

    def __init__(self, release: Path):
        self.release = Path(release)
        self.folder = self.release / FOLDER
        index = self.folder / "index.json"
        self.index = json.loads(index.read_text()) if index.exists() else {}
        self.done: dict[str, str] = {}

    def sha256(self, path: Path) -> str:
        entry = file_entry(path, self.index.get(str(path)))  # hashed again only when size or mtime moved
        self.index[str(path)] = entry
        return entry["sha256"]

    def digest(self, path: str | Path, base: Path, kind: str) -> str:
        path = Path(path).resolve()
        if str(path) in self.done:
            return self.done[str(path)]
        rel = Path(FOLDER) / kind / f"{path.relative_to(Path(base).resolve())}.sha256"
        out = self.release / rel
        digest = self.sha256(path)
        if not out.exists() or out.read_text().strip() != digest:  # only a change of content moves its mtime
            out.parent.mkdir(parents=True, exist_ok=True)
            tmp = out.with_suffix(".tmp")
            tmp.write_text(digest + "\n")
            os.replace(tmp, out)
        self.done[str(path)] = str(rel)
        return str(rel)

    def save(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        tmp = self.folder / "index.json.tmp"
        tmp.write_text(json.dumps(self.index))
        os.replace(tmp, self.folder / "index.json")
