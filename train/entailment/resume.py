"""Resume by stage for train.entailment.

One resume rule: the same command in the same run dir reuses every stage an earlier (killed) run
finished (synthetic pre-training, each CV fold, the final model). A stage counts as finished only
once its marker file is written, after everything else of it; each stage seeds itself, so a
resumed run equals an uninterrupted one. A run dir holds the stages of one configuration only:
train/run_guard.py locks it and refuses another configuration (resume=never starts afresh). What the
`resume` setting means is train/resume.py's, as for every trainer.
"""
from __future__ import annotations

import fcntl
import json
import logging
from contextlib import contextmanager
from pathlib import Path

log = logging.getLogger(__name__)

STAGE_FILE = "stage_done.json"
# settings that do not change what a stage computes (where it is written, logged or pushed)
# and the switch of the final stage: it chooses whether that stage runs, not what any stage computes, so a
# CV-only run (final.train=false) gains its final model in place when run again with final.train=true
# cv.only_folds likewise chooses which folds this process trains, not what a fold computes
VOLATILE_KEYS = ("output_dir", "logger", "hub", "resume", "paths", "final.train", "cv.only_folds")


@contextmanager
def stage_lock(folder: Path):
    """Hold `folder`'s stage lock, waiting while another process of the same run dir trains that stage
    (cv.only_folds runs folds beside the whole run); check stage_done inside, after the wait."""
    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    with (folder.parent / f".{folder.name}.lock").open("a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log.info("%s is being trained by another process of this run dir: waiting for it", folder)
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def stage_done(folder: Path) -> dict | None:
    """The info a finished stage saved in `folder`, or None when it did not finish."""
    path = Path(folder) / STAGE_FILE
    return json.loads(path.read_text()) if path.exists() else None


def mark_done(folder: Path, info: dict) -> dict:
    """Mark the stage in `folder` finished (its last write) and return `info`."""
    Path(folder).mkdir(parents=True, exist_ok=True)
    (Path(folder) / STAGE_FILE).write_text(json.dumps(info))
    return info


def forget_stages(run_dir: Path) -> int:
    """Start afresh (resume=never): drop every stage marker, so each stage runs again and overwrites
    its folder. Returns how many finished stages were dropped."""
    markers = list(Path(run_dir).rglob(STAGE_FILE))
    for m in markers:
        m.unlink()
    if markers:
        log.warning("resume=never: %d finished stages in %s will run again", len(markers), run_dir)
    return len(markers)
