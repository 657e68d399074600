"""What train.contradiction reads: labelled pairs of a file (bad lines stop before any model), the
synthetic set, and each file's parsed pairs, cached on disk by file and checkpoints."""
from __future__ import annotations

import hashlib
import json
import logging
import time
from collections import Counter
from pathlib import Path

import hydra
from omegaconf import DictConfig

from data_prep.chatprotect import read_pairs
from models.contradiction import analyse_pairs

log = logging.getLogger(__name__)


def read_synthetic(cfg: DictConfig) -> tuple[list[dict], dict]:
    """The first synthetic.limit pairs of the synthetic set, and its size and kinds (for the model info)."""
    path = Path(hydra.utils.to_absolute_path(cfg.synthetic.file))
    if not path.exists():
        raise FileNotFoundError(f"synthetic set {path} not found: build it with python -m data_prep.synthetic_contradiction")
    limit = int(cfg.synthetic.limit) if cfg.synthetic.limit else None
    pairs = read_pairs(path)[:limit]
    if any(p["label"] is None for p in pairs):
        raise ValueError(f"{path}: every synthetic pair needs a label")
    return pairs, {"file": str(cfg.synthetic.file), "pairs": len(pairs), "contradictions": sum(p["label"] for p in pairs),
                   "kinds": dict(Counter(p.get("kind") for p in pairs))}


def read_labelled(path: str, limit=None) -> list[dict]:
    """Labelled pairs of one file (bad lines stop here, before any model), each tagged with its file."""
    pairs = read_pairs(hydra.utils.to_absolute_path(path))[: int(limit) if limit else None]
    if any(p["label"] is None for p in pairs):
        raise ValueError(f"{path}: every training pair needs a label")
    return [dict(p, file=str(path)) for p in pairs]


def fingerprint(name: str, edge: int = 1 << 16) -> str:
    """What a checkpoint is, for the cache key: its name, and for a folder every file's path, size and
    first and last 64 KiB. A model retrained into the same folder (a release stage run again) is another
    key; a copy or a restored snapshot of the same files is the same one. A Hub id is its name."""
    path = Path(hydra.utils.to_absolute_path(name)) if name not in ("None", "") else None
    if path is None or not path.is_dir():
        return name
    h = hashlib.sha1(name.encode())
    for f in sorted(x for x in path.rglob("*") if x.is_file()):
        size = f.stat().st_size
        h.update(f"{f.relative_to(path)}:{size}".encode())
        with f.open("rb") as fh:
            h.update(fh.read(edge))
            if size > edge:
                fh.seek(max(edge, size - edge))
                h.update(fh.read(edge))
    return h.hexdigest()


def analysed(cfg: DictConfig, pairs: list[dict], components) -> list[dict]:
    """analyse_pairs, file by file, cached on disk (cfg.analysis_cache, keyed by the file, its size,
    the limit and the three checkpoints' contents, `fingerprint`): the parse of 5,000 pairs is the slow part and the same
    for every encoder and grid."""
    # nothing parsed (the encoder alone): nothing to cache, and no checkpoints named for the key
    cache = cfg.analysis_cache if components[0] is not None else None
    rows: list[dict] = []
    # the three checkpoints read once for every file's key, not once per file
    models = [fingerprint(str(c)) for c in (cfg.parser, cfg.detector, cfg.entailment)] if cache else []
    for file in dict.fromkeys(p["file"] for p in pairs):
        part = [p for p in pairs if p["file"] == file]
        path = None
        if cache and components[0] is not None:
            src = Path(hydra.utils.to_absolute_path(file))
            key = hashlib.sha1(json.dumps([str(src.resolve()), src.stat().st_size, len(part), *models]
                                          ).encode()).hexdigest()[:12]
            path = Path(hydra.utils.to_absolute_path(cache)) / f"{src.stem}-{key}.jsonl"
            if path.exists():
                cached = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
                if [r["id"] for r in cached] == [p["id"] for p in part]:
                    log.info("analysis of %s from the cache %s", file, path)
                    rows += cached
                    continue
        start = time.perf_counter()
        new = analyse_pairs(part, *components)
        log.info("analysed %d pairs of %s in %.0f s", len(part), file, time.perf_counter() - start)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp")
            tmp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in new), encoding="utf-8")
            tmp.rename(path)
        rows += new
    return rows
