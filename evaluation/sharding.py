"""Scoring split into shards that run apart (Hydra multirun on the submitit launcher, torchrun ranks, or plain
processes) and are merged afterwards (evaluation/merge.py). Shared by evaluation.consistency and .contradiction.

A record's shard is a stable hash of its id (sha256 mod N): the same N gives the same shards on every machine and
every rerun. The sweep folder holds:
  sweep.json                          the entry point, the input file (path, sha256, ids), N and the scoring settings;
                                      written by the first shard, checked by every later one
  shards/shard-I-of-N/rows.jsonl      the shard's per-record outputs, in input order
  shards/shard-I-of-N/done.json       written last: records, seconds, records/s, sha256 of rows.jsonl, and what
                                      the merge needs from the loaded models (a threshold)
  shards/shard-I-of-N/shard.log       the shard's own log; failed.json beside it when it raised
A finished shard (done.json whose sha256 matches) is skipped without loading a model."""
from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from omegaconf import DictConfig, OmegaConf

log = logging.getLogger(__name__)

# options that say how or where a shard runs, not what it computes: they may differ between shards of one sweep
RUN_OPTIONS = ("shard", "progress", "paths", "html", "device", "batch_size", "one_at_a_time", "reference_cache")


class ShardError(ValueError):
    """A sweep or an input that cannot be scored as asked: the message names the files and values."""


def shard_of(record_id: str, count: int) -> int:
    return int.from_bytes(hashlib.sha256(str(record_id).encode("utf-8")).digest()[:8], "big") % count


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with Path(path).open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def refuse_repeated_ids(ids: list[str], path) -> None:
    """Ids that repeat in the input are refused, all of them listed: a merge matches records by id."""
    repeated = [i for i, n in Counter(ids).items() if n > 1]
    if repeated:
        raise ShardError(f"{path}: {len(repeated)} id(s) repeat; each record needs its own id: "
                         + ", ".join(repr(i) for i in repeated[:50]) + (" ..." if len(repeated) > 50 else ""))


def duration(seconds: float) -> str:
    if seconds != seconds or seconds == float("inf"):
        return "?"
    m, s = divmod(int(round(seconds)), 60)
    h, m = divmod(m, 60)
    return f"{h}h{m:02d}m{s:02d}s" if h else f"{m}m{s:02d}s"


def torchrun_rank() -> tuple[int, int, int] | None:
    """(rank, world size, local rank) under torchrun (its environment), else None."""
    if "WORLD_SIZE" not in os.environ or "RANK" not in os.environ:
        return None
    return int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), int(os.environ.get("LOCAL_RANK", 0))


def rank_device(device):
    """The configured device; under torchrun with no device given, the rank's own GPU (cuda:LOCAL_RANK) when there is
    one (more ranks than GPUs share them round-robin), else the default (CPU)."""
    ranks = torchrun_rank()
    if device is not None or ranks is None:
        return device
    import torch

    return f"cuda:{ranks[2] % torch.cuda.device_count()}" if torch.cuda.is_available() else None


@dataclass
class Shard:
    index: int
    count: int
    sweep: Path

    @property
    def dir(self) -> Path:
        return shard_dir(self.sweep, self.index, self.count)

    @property
    def name(self) -> str:
        return f"shard {self.index + 1}/{self.count}"


def shard_dir(sweep: Path, index: int, count: int) -> Path:
    return Path(sweep) / "shards" / f"shard-{index:05d}-of-{count:05d}"


def shard_from_config(cfg: DictConfig, run_dir: Path) -> Shard | None:
    """The shard this process scores, or None for a one-process run (shard.count 1, not under torchrun).
    shard.index null takes torchrun's RANK; shard.count 1 under torchrun takes its WORLD_SIZE."""
    count, index = int(cfg.shard.count), cfg.shard.index
    ranks = torchrun_rank()
    if ranks is not None and ranks[1] > 1:
        if count == 1:
            count = ranks[1]
        elif count != ranks[1]:
            raise ShardError(f"shard.count={count} but torchrun runs {ranks[1]} ranks: give one shard per rank")
        index = ranks[0] if index is None else index
    if count < 1:
        raise ShardError(f"shard.count={count}: give 1 or more")
    if count == 1:
        return None
    if index is None:
        raise ShardError(f"shard.count={count} needs shard.index (0..{count - 1}); all of them at once: "
                         f"-m shard.count={count} 'shard.index=range({count})'")
    index = int(index)
    if not 0 <= index < count:
        raise ShardError(f"shard.index={index} is outside 0..{count - 1} (shard.count={count})")
    return Shard(index, count, Path(cfg.shard.dir) if cfg.shard.dir else sweep_dir(run_dir))


def sweep_dir(run_dir: Path) -> Path:
    """Hydra's sweep folder under -m (every job of the sweep shares it), else the run folder (torchrun ranks share it
    when the launcher passes hydra.run.dir)."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    try:
        hc = HydraConfig.get()
    except ValueError:  # called as a function, not through @hydra.main
        return Path(run_dir)
    if hc.mode == RunMode.MULTIRUN:
        return Path(hc.sweep.dir)
    if torchrun_rank() is not None and not any(o.startswith("hydra.run.dir=") for o in hc.overrides.hydra):
        raise ShardError("under torchrun every rank must write into one sweep folder: give hydra.run.dir=DIR "
                         "(or shard.dir=DIR)")
    return Path(run_dir)


def settings_of(cfg: DictConfig) -> dict:
    """What a shard computes with: the config without the options of where and how it runs."""
    return {k: v for k, v in OmegaConf.to_container(cfg, resolve=True).items() if k not in RUN_OPTIONS}


def open_sweep(shard: Shard, entry: str, input_path: Path, ids: list[str], settings: dict) -> None:
    """Write sweep.json, or check this shard against the one there: another N, input file, changed input or other
    settings refuse, naming both."""
    record = {"entry": entry, "count": shard.count, "input": str(Path(input_path).resolve()),
              "input_sha256": file_sha256(input_path), "records": len(ids), "ids": ids, "settings": settings}
    path = shard.sweep / "sweep.json"
    shard.sweep.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".sweep.json.{os.getpid()}")
    tmp.write_text(json.dumps(record, indent=1, ensure_ascii=False))
    try:
        os.link(tmp, path)  # the first shard's record wins; the others compare against it
    except FileExistsError:
        pass
    finally:
        tmp.unlink()
    have = json.loads(path.read_text(encoding="utf-8"))
    if have["entry"] != entry:
        raise ShardError(f"{path} is a sweep of {have['entry']}, not {entry}")
    if have["count"] != shard.count:
        raise ShardError(f"{path} was split into shard.count={have['count']}; this run asks for shard.count="
                         f"{shard.count}: rerun with shard.count={have['count']}, or give another sweep folder")
    if have["input"] != record["input"]:
        raise ShardError(f"{path} scores {have['input']}; this run was given {record['input']}: "
                         "give the same file, or another sweep folder")
    if have["input_sha256"] != record["input_sha256"]:
        raise ShardError(f"{record['input']} changed since the sweep in {shard.sweep} started (sha256 "
                         f"{have['input_sha256'][:12]}... then, {record['input_sha256'][:12]}... now): its shards "
                         "would not fit together; restore the file or start another sweep folder")
    before = have["settings"]
    differ = sorted(k for k in set(before) | set(settings) if before.get(k) != settings.get(k))
    if differ:
        both = ", ".join(f"{k}={before.get(k)!r} there, {settings.get(k)!r} here" for k in differ)
        raise ShardError(f"{path} was started with other settings for {', '.join(differ)} ({both})")


def finished(shard: Shard) -> dict | None:
    """The shard's done.json when its outputs are still the ones it wrote (sha256), else None."""
    done = shard.dir / "done.json"
    if not done.exists():
        return None
    info = json.loads(done.read_text(encoding="utf-8"))
    for name, digest in info["sha256"].items():
        f = shard.dir / name
        if not f.exists() or file_sha256(f) != digest:
            log.warning("%s: %s is missing or changed since the shard finished: scoring the shard again", shard.name, f)
            return None
    return info


def log_paths(shard: Shard) -> list[str]:
    paths = [str(shard.dir / "shard.log")]
    try:  # under the submitit launcher its own stderr also holds what the process printed before dying
        import submitit

        paths.append(str(submitit.JobEnvironment().paths.stderr))
    except Exception:  # not a submitit job
        pass
    return paths


def run_shard(shard: Shard, entry: str, input_path: Path, records: list[dict], ids: list[str], settings: dict,
              score: Callable[[list[dict]], tuple[list[dict], dict]], chunk: int) -> dict:
    """Score this shard's records (score(records) -> (per-record rows, what the merge needs from the models)) in
    chunks of `chunk`, logging progress with an ETA after each, and write rows.jsonl then done.json.
    `score` is called again per chunk: it loads its models once (on the first call)."""
    open_sweep(shard, entry, input_path, ids, settings)
    shard.dir.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(shard.dir / "shard.log", encoding="utf-8")
    handler.setFormatter(logging.Formatter("[%(asctime)s][%(name)s][%(levelname)s] - %(message)s"))
    logging.getLogger().addHandler(handler)
    log.setLevel(min(log.getEffectiveLevel(), logging.INFO))  # the progress lines reach shard.log whatever the root's level
    try:
        done = finished(shard)
        if done is not None:
            log.info("%s already finished (%d records, outputs checked by sha256): skipped", shard.name, done["records"])
            return done
        (shard.dir / "failed.json").unlink(missing_ok=True)
        (shard.dir / "done.json").unlink(missing_ok=True)
        mine = [r for r, i in zip(records, ids) if shard_of(i, shard.count) == shard.index]
        log.info("%s: %d of %d records (%s)", shard.name, len(mine), len(records), shard.dir)
        try:
            rows, info, start = [], {}, time.perf_counter()
            for lo in range(0, len(mine), max(1, chunk)):
                out, info = score(mine[lo:lo + chunk])
                rows += out
                elapsed = time.perf_counter() - start
                rate = len(rows) / elapsed if elapsed else float("nan")
                eta = (len(mine) - len(rows)) / rate if rate else float("nan")
                log.info("%s: %d/%d records, %.2f records/s, ETA %s", shard.name, len(rows), len(mine), rate,
                         duration(eta))
            if not mine:
                _, info = score([])
        except BaseException as e:  # KeyboardInterrupt too: the merge then names this shard and its log
            (shard.dir / "failed.json").write_text(json.dumps({"error": f"{type(e).__name__}: {e}",
                                                              "logs": log_paths(shard)}, indent=1))
            raise
        seconds = time.perf_counter() - start
        with (shard.dir / "rows.jsonl").open("w", encoding="utf-8") as f:
            for r in rows:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
        done = {"index": shard.index, "count": shard.count, "records": len(rows), "seconds": round(seconds, 3),
                "records_per_second": round(len(rows) / seconds, 4) if seconds else None,
                "info": info, "logs": log_paths(shard), "sha256": {"rows.jsonl": file_sha256(shard.dir / "rows.jsonl")}}
        tmp = shard.dir / "done.json.tmp"
        tmp.write_text(json.dumps(done, indent=1, ensure_ascii=False))
        tmp.replace(shard.dir / "done.json")  # written last, in one step: a killed shard has none
        log.info("%s done: %d records in %.1f s (%.2f records/s)", shard.name, len(rows), seconds,
                 done["records_per_second"] or 0)
        return done
    finally:
        logging.getLogger().removeHandler(handler)
        handler.close()
