"""What keeps a run directory to one live run of one configuration.

- An exclusive lock (`.run.lock.rank<RANK>`, flock): a second live run in the same directory stops
  at once instead of "resuming" the first one's half-written checkpoint. The kernel drops the lock
  when the process dies, so a killed run never leaves a stale one behind.
- The configuration that shapes the result is stored in `run_config.json` at the first start. A
  rerun with another one stops and says what differs, unless told to start afresh (`resume=never`),
  which moves the old checkpoints aside (nothing is deleted).
- Checkpoints count only when complete (train/resume.py decides): the HF Trainer writes
  `trainer_state.json` last, so a checkpoint without a readable one is what a kill during a save leaves behind.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import time
from contextlib import contextmanager
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

# which checkpoints count (complete ones) is the resume rule's; imported here for the trainers that read it here
from train.resume import is_complete, last_complete_checkpoint, parse_resume  # noqa: F401

log = logging.getLogger(__name__)

CONFIG_FILE = "run_config.json"


class RunDirectoryLockedError(RuntimeError):
    pass


class ConfigMismatchError(ValueError):
    pass


@contextmanager
def run_dir_lock(run_dir: Path, part: str | None = None):
    """Hold an exclusive lock on `run_dir` for this process's rank, or raise at once. A `part` (a run that
    trains only some stages of the directory, which lock themselves) holds a lock of its own beside it."""
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / (f".run.lock.rank{os.environ.get('RANK', '0')}" + (f".{part}" if part else ""))
    handle = path.open("a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "another process"
        handle.close()
        raise RunDirectoryLockedError(f"{run_dir} is in use by a live run ({holder}); wait for it to end, or use "
                                      "another hydra.run.dir") from None
    try:
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()} on {os.uname().nodename} since {time.strftime('%Y-%m-%d %H:%M:%S')}\n")
        handle.flush()
        yield
    finally:
        fcntl.flock(handle, fcntl.LOCK_UN)
        handle.close()


def flat_config(cfg: DictConfig, volatile: tuple[str, ...]) -> dict:
    """The resolved configuration as {dotted key: value}, without the keys that do not change what
    is trained (where it is written, logged or pushed; dotted keys or whole groups)."""
    out: dict = {}

    def walk(node, prefix: str) -> None:
        if isinstance(node, dict) and node:
            for k, v in node.items():
                walk(v, f"{prefix}.{k}" if prefix else str(k))
        elif not is_volatile(prefix, volatile):
            out[prefix] = node

    walk(OmegaConf.to_container(cfg, resolve=True), "")
    return out


def is_volatile(key: str, volatile: tuple[str, ...]) -> bool:
    return any(key == v or key.startswith(v + ".") for v in volatile)


def config_hash(flat: dict) -> str:
    return hashlib.sha256(json.dumps(flat, sort_keys=True, default=str).encode()).hexdigest()[:16]


def differences(old: dict, new: dict, limit: int = 12) -> list[str]:
    keys = sorted(k for k in old.keys() | new.keys() if old.get(k, "<unset>") != new.get(k, "<unset>"))
    lines = [f"{k}: {old.get(k, '<unset>')!r} -> {new.get(k, '<unset>')!r}" for k in keys[:limit]]
    return lines + ([f"... and {len(keys) - limit} more"] if len(keys) > limit else [])


def command_line_keys() -> set[str]:
    """The dotted keys this run's command line sets (Hydra's task overrides); none outside a Hydra app."""
    try:
        from hydra.core.hydra_config import HydraConfig

        overrides = HydraConfig.get().overrides.task
    except (ImportError, ValueError):
        return set()
    return {o.split("=", 1)[0].lstrip("+~") for o in overrides if "=" in o}


def added_defaults(old: dict, new: dict, set_keys: set[str]) -> set[str]:
    """Keys of `new` that `old` (a stored run's configuration) lacks and this command line does not set:
    options the code added since, at their defaults. A key set on the command line is a choice, never one."""
    return {k for k in new.keys() - old.keys()
            if not any(k == s or k.startswith(s + ".") or s.startswith(k + ".") for s in set_keys)}


def check_stored_config(cfg: DictConfig, run_dir: Path, trainer: str, volatile: tuple[str, ...], fresh: bool) -> bool:
    """Compare with the configuration stored in `run_dir`. Raises ConfigMismatchError on another one
    unless `fresh`; returns whether an earlier run of another configuration is being replaced.
    Writes the stored configuration (rank 0 only; every rank checks first)."""
    flat = flat_config(cfg, volatile)
    path = run_dir / CONFIG_FILE
    stored = json.loads(path.read_text()) if path.exists() else None
    if stored is not None:  # a key that became volatile since that run was stored no longer counts
        stored["config"] = {k: v for k, v in stored["config"].items() if not is_volatile(k, volatile)}
    replaced = False
    mismatch = stored is not None and config_hash(stored["config"]) != config_hash(flat)
    if mismatch:
        added = added_defaults(stored["config"], flat, command_line_keys())
        # options the code no longer has (a recipe said another way): what they chose is now the recipe's to say
        removed = stored["config"].keys() - flat.keys()
        if (added or removed) and config_hash({k: v for k, v in flat.items() if k not in added}) == \
                config_hash({k: v for k, v in stored["config"].items() if k not in removed}):
            # the code grew options since that run, and this run leaves them at their defaults: the same run
            log.warning("%s: options added since its run, left at their defaults: %s; options removed since: %s", run_dir,
                        ", ".join(f"{k}={flat[k]!r}" for k in sorted(added)) or "none",
                        ", ".join(f"{k}={stored['config'][k]!r}" for k in sorted(removed)) or "none")
            mismatch = False
    if mismatch:
        diff = differences(stored["config"], flat)
        if not fresh:
            raise ConfigMismatchError(
                f"{run_dir} holds a {stored.get('trainer', 'training')} run of another configuration, so it is not "
                "resumed. What differs (stored -> now):\n  " + "\n  ".join(diff) +
                "\nUse another hydra.run.dir, or resume=never to start afresh here (old checkpoints are kept aside).")
        log.warning("starting afresh in %s under another configuration:\n  %s", run_dir, "\n  ".join(diff))
        replaced = True
    if os.environ.get("RANK", "0") == "0":
        tmp = path.with_suffix(".tmp")  # other ranks may be reading it
        tmp.write_text(json.dumps({"trainer": trainer, "hash": config_hash(flat), "config": flat}, indent=1,
                                  default=str) + "\n")
        os.replace(tmp, path)
    return replaced


def move_aside(folder: Path) -> Path | None:
    """Rename `folder` to `<name>.replaced-<time>` (rank 0), so a fresh run cannot resume or rotate
    it away; returns the new path."""
    if not folder.is_dir() or os.environ.get("RANK", "0") != "0":
        return None
    target = folder.with_name(f"{folder.name}.replaced-{time.strftime('%Y%m%d-%H%M%S')}")
    folder.rename(target)
    log.warning("moved the earlier run's %s to %s", folder.name, target)
    return target


@contextmanager
def claim_run_dir(cfg: DictConfig, run_dir: Path, trainer: str, volatile: tuple[str, ...],
                  checkpoints: str | None = "checkpoints", part: str | None = None):
    """Lock `run_dir`, check its stored configuration, and on a fresh start (`resume=never`) move an
    earlier run's checkpoint folder aside. Everything a trainer does with the directory goes inside.
    `part`: this run trains only some of the directory's stages, each under its own lock (run_dir_lock)."""
    with run_dir_lock(run_dir, part):
        fresh = parse_resume(cfg.resume).fresh
        check_stored_config(cfg, run_dir, trainer, volatile, fresh)
        if fresh and checkpoints and (run_dir / checkpoints).is_dir() and any((run_dir / checkpoints).iterdir()):
            move_aside(run_dir / checkpoints)
        yield
