"""A stage's stamp, `stages/NAME.json` in the release folder: its command, wall time, peak RSS and the
sha256 of every file it wrote. The stamp is the stage's Snakemake output, so a stage is done exactly
when its stamp exists; `stale_stamps` removes the stamp of a stage whose files were deleted or edited
since, so that Snakemake runs that stage again (and, the new stamp being newer, what depends on it)."""
from __future__ import annotations

import json
import os
from pathlib import Path

from data_prep.checksums import sha256_of

STAGES_DIR = "stages"
# in the release folder: what the pipeline gives each stage to read and run now (release/inputs.py writes it)
RECORD = Path(".inputs") / "stages.json"


def files_under(paths: list[str | Path], root: Path) -> list[Path]:
    """Every regular file of the given files and folders (relative to root), sorted; missing ones raise."""
    out = []
    for p in paths:
        full = root / p
        if full.is_dir():
            out += [f for f in full.rglob("*") if f.is_file() and not f.name.startswith(".run.lock")]
        elif full.is_file():
            out.append(full)
        else:
            raise FileNotFoundError(f"{full}: the stage finished but did not write it")
    return sorted(out)


def file_entry(path: Path, previous: dict | None = None) -> dict:
    """{sha256, size, mtime_ns}; the hash is reused from `previous` when size and mtime are unchanged
    (a rerun with nothing changed hashes nothing: gigabytes of weights cost seconds otherwise)."""
    st = path.stat()
    if previous and previous.get("size") == st.st_size and previous.get("mtime_ns") == st.st_mtime_ns:
        return previous
    return {"sha256": sha256_of(path), "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def built_with(root: Path, name: str) -> dict | None:
    """The stage's entry of the record, for its stamp (None outside a release run)."""
    path = Path(root) / RECORD
    return json.loads(path.read_text()).get(name) if path.is_file() else None


def stamp_path(root: Path, name: str) -> Path:
    return Path(root) / STAGES_DIR / f"{name}.json"


def read_stamp(root: Path, name: str) -> dict | None:
    path = stamp_path(root, name)
    return json.loads(path.read_text()) if path.exists() else None


def kept_path(root: Path, name: str) -> Path:
    """A copy of the stamp that Snakemake does not know: it deletes a job's output (the stamp) before running it
    again, and a rerun that finds the work done still needs the figures of the run that did it."""
    return Path(root) / STAGES_DIR / ".kept" / f"{name}.json"


def last_stamp(root: Path, name: str) -> dict | None:
    """The stage's stamp, else the copy kept of it (a stamp Snakemake removed for the rerun now running)."""
    for path in (stamp_path(root, name), kept_path(root, name)):
        if path.exists():
            return json.loads(path.read_text())
    return None


def write_stamp(root: Path, name: str, stamp: dict) -> Path:
    """Written whole (a temporary file renamed), so a killed stage never leaves a stamp that looks done; the
    kept copy first."""
    path = stamp_path(root, name)
    for target in (kept_path(root, name), path):
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(".tmp")
        tmp.write_text(json.dumps(stamp, indent=1))
        os.replace(tmp, target)
    return path


def changed_files(root: Path, stamp: dict) -> list[str]:
    """The stamped files that are gone or whose content differs now (hashed only when size or mtime moved)."""
    changed = []
    for rel, entry in stamp.get("files", {}).items():
        path = Path(root) / rel
        if not path.is_file():
            changed.append(rel)
            continue
        st = path.stat()
        if st.st_size == entry["size"] and st.st_mtime_ns == entry["mtime_ns"]:
            continue
        if st.st_size != entry["size"] or sha256_of(path) != entry["sha256"]:
            changed.append(rel)
    return changed


def stale_stamps(root: Path) -> dict[str, list[str]]:
    """Remove the stamp of every stage whose files changed by hand; {stage: [changed files]}."""
    stale = {}
    for path in sorted((Path(root) / STAGES_DIR).glob("*.json")):
        stamp = json.loads(path.read_text())
        changed = changed_files(root, stamp)
        if changed:
            stale[path.stem] = changed
            path.unlink()
            kept_path(root, path.stem).unlink(missing_ok=True)  # its figures no longer describe these files
    return stale
