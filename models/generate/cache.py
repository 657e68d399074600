"""Responses on disk, keyed by model, prompt and sampling settings, so that a rerun costs nothing. One
small JSON file per response (written to a temporary name and renamed: a killed run never leaves a
half-written entry); only successful responses are kept, so a rerun retries the failures."""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path


class ResponseCache:
    def __init__(self, folder: str | Path | None):
        self.folder = Path(folder) if folder else None
        self.hits = self.misses = 0

    @staticmethod
    def key(model: str, prompt: str, settings: dict, kind: str = "text") -> str:
        blob = json.dumps({"model": model, "prompt": prompt, "settings": settings, "kind": kind}, sort_keys=True)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    def get(self, key: str):
        if self.folder is None:
            return None
        path = self._path(key)
        try:
            value = json.loads(path.read_text(encoding="utf-8"))["value"]
        except (OSError, ValueError, KeyError):  # absent, or unreadable: ask again
            self.misses += 1
            return None
        self.hits += 1
        return value

    def put(self, key: str, value) -> None:
        if self.folder is None:
            return
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({"value": value}, f, ensure_ascii=False)
        os.replace(tmp, path)
