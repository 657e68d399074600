"""Parsed references on disk: a reference's sentences, the detector's predicates, the QAs of the
predicates parsed so far and the embeddings of their texts, kept by content, so that another run
(other responses to the same sources, another model's outputs) pays for a source once.

A file's name is the hash of the reference's tokens and of what made its contents (the parser, the
detector, the embedder and the precision each ran in), so a cache folder can be shared by
checkpoints and paths without a stale hit. Files are written whole (a temporary name, then a
rename); a file that cannot be read is counted and parsed again, never trusted.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Sequence

log = logging.getLogger(__name__)

FORMAT = 1


class ReferenceCache:
    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.stats = {"hits": 0, "misses": 0, "unreadable": 0, "written": 0}

    def _stem(self, tokens: Sequence[str], identity: dict) -> Path:
        digest = hashlib.sha1(json.dumps([FORMAT, list(tokens), identity], sort_keys=True).encode("utf-8")).hexdigest()
        return self.folder / digest

    def load(self, tokens: Sequence[str], identity: dict):
        """(sentences, predicates, {predicate id: QAs}, {text: vector}, the sentences the detector has read:
        None for every one) or None when not cached."""
        import numpy as np

        stem = self._stem(tokens, identity)
        meta, vecs = stem.with_suffix(".json"), stem.with_suffix(".npz")
        if not meta.exists():
            self.stats["misses"] += 1
            return None
        try:
            state = json.loads(meta.read_text(encoding="utf-8"))
            vectors = {}
            if vecs.exists():
                with np.load(vecs, allow_pickle=False) as z:
                    vectors = dict(zip(z["texts"].tolist(), z["vectors"]))
            sentences = state["sentences"]
            predicates = [dict(p, tokens=sentences[p["sentence"]]) for p in state["predicates"]]
            qas = {int(i): [dict(q, tokens=sentences[q["sentence"]]) for q in v] for i, v in state["qas"].items()}
            detected = state.get("detected")  # absent: every sentence (files written before lazy detection)
            detected = None if detected is None else [int(j) for j in detected]
        except (OSError, ValueError, KeyError, IndexError, TypeError) as e:
            self.stats["unreadable"] += 1
            log.warning("reference cache %s: unreadable (%s); parsing again", meta, e)
            return None
        self.stats["hits"] += 1
        return sentences, predicates, qas, vectors, detected

    def save(self, tokens: Sequence[str], identity: dict, sentences, predicates, qas: dict, vectors: dict,
             detected=None) -> None:
        import numpy as np

        stem = self._stem(tokens, identity)
        state = {"format": FORMAT, "identity": identity, "sentences": sentences,
                 "predicates": [{k: v for k, v in p.items() if k != "tokens"} for p in predicates],
                 "qas": {str(i): [{k: v for k, v in q.items() if k != "tokens"} for q in v] for i, v in qas.items()}}
        if detected is not None and len(detected) < len(sentences):
            state["detected"] = sorted(detected)
        if vectors:  # first, so that a .json never points at a half-written .npz
            tmp = stem.with_suffix(f".{os.getpid()}.tmp.npz")
            np.savez(tmp, texts=np.array(list(vectors)), vectors=np.stack([np.asarray(v) for v in vectors.values()]))
            tmp.replace(stem.with_suffix(".npz"))
        tmp = stem.with_suffix(f".{os.getpid()}.tmp.json")
        tmp.write_text(json.dumps(state, ensure_ascii=False), encoding="utf-8")
        tmp.replace(stem.with_suffix(".json"))
        self.stats["written"] += 1
