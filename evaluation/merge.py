"""Join the shards of a sharded scoring run (evaluation/sharding.py) into the files a one-process run writes:

    python -m evaluation.merge SWEEP_DIR out=DIR

Checks that every shard finished (a failed or unfinished one is named with its log), that its outputs are the ones
it wrote (sha256), that the input file has not changed, and that every input record appears exactly once (the
missing and the repeated ids are named). Then the entry point that scored the sweep writes its files from the
records in input order (evaluation.consistency: reports.jsonl, summary.json, report.html; evaluation.contradiction:
predictions.jsonl, metrics.json, report.html; evaluation.self_contradiction: generations, pairs and revised JSONL,
metrics.json, report.html), the same bytes as one process scoring the same input. DIR/shards.json holds each shard's records, seconds and throughput."""
from __future__ import annotations

import importlib
import json
import logging
import sys
from collections import Counter
from pathlib import Path

from evaluation.sharding import Shard, ShardError, file_sha256, finished

log = logging.getLogger("evaluation.merge")

# the entry point that scored a sweep -> its module's merge_outputs(rows in input order, out dir, shard infos)
ENTRIES = ("evaluation.consistency", "evaluation.contradiction", "evaluation.self_contradiction")


class MergeError(ShardError):
    """A sweep that cannot be merged: the message names the shards, records or files."""


def shard_state(shard: Shard) -> tuple[dict | None, str | None]:
    """(done.json, None) for a finished shard, else (None, what happened to it and where its log is)."""
    done = finished(shard)
    if done is not None:
        return done, None
    logs = shard.dir / "shard.log"
    if (shard.dir / "failed.json").exists():
        failed = json.loads((shard.dir / "failed.json").read_text(encoding="utf-8"))
        return None, f"{shard.name} failed ({failed['error']}); log: {', '.join(failed['logs'])}"
    if (shard.dir / "done.json").exists():
        return None, f"{shard.name}: its outputs changed after it finished (sha256); rerun it; log: {logs}"
    if logs.exists():
        return None, f"{shard.name} started but did not finish (killed, or still running); log: {logs}"
    return None, f"{shard.name} never started (no {shard.dir})"


def merge(sweep: Path, out: Path) -> dict:
    record_path = sweep / "sweep.json"
    if not record_path.exists():
        raise MergeError(f"{record_path} not found: {sweep} is not a sweep folder of sharded scoring")
    record = json.loads(record_path.read_text(encoding="utf-8"))
    if record["entry"] not in ENTRIES:
        raise MergeError(f"{record_path}: no merge for {record['entry']!r}")
    source = Path(record["input"])
    if not source.exists():
        log.warning("%s (the sweep's input) is gone: merging by the ids recorded in %s", source, record_path)
    elif file_sha256(source) != record["input_sha256"]:
        raise MergeError(f"{source} changed since the sweep scored it (sha256 differs from {record_path})")

    shards = [Shard(i, record["count"], sweep) for i in range(record["count"])]
    states = [shard_state(s) for s in shards]
    problems = [why for _, why in states if why]
    if problems:
        raise MergeError(f"{len(problems)} of {len(shards)} shard(s) not finished in {sweep}; rerun them alone "
                         "(the finished ones are skipped):\n  " + "\n  ".join(problems))
    rows = [json.loads(line) for s in shards
            for line in (s.dir / "rows.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
    ids = record["ids"]
    seen = Counter(str(r["id"]) for r in rows)
    missing = [i for i in ids if i not in seen]
    repeated = [i for i, n in seen.items() if n > 1]
    unknown = [i for i in seen if i not in set(ids)]
    if missing or repeated or unknown:
        def names(xs):
            return ", ".join(repr(x) for x in xs[:50]) + (" ..." if len(xs) > 50 else "")
        raise MergeError(f"the shards of {sweep} do not hold every input record exactly once:"
                         + (f"\n  {len(missing)} missing: {names(missing)}" if missing else "")
                         + (f"\n  {len(repeated)} repeated: {names(repeated)}" if repeated else "")
                         + (f"\n  {len(unknown)} not in {source}: {names(unknown)}" if unknown else ""))
    by_id = {str(r["id"]): r for r in rows}
    infos = [done for done, _ in states]
    out.mkdir(parents=True, exist_ok=True)
    result = importlib.import_module(record["entry"]).merge_outputs([by_id[i] for i in ids], out,
                                                                    [d["info"] for d in infos])
    throughput = [{k: d[k] for k in ("index", "records", "seconds", "records_per_second")} for d in infos]
    for t in throughput:
        log.info("shard %d/%d: %d records in %.1f s (%.2f records/s)", t["index"] + 1, record["count"], t["records"],
                 t["seconds"], t["records_per_second"] or 0)
    (out / "shards.json").write_text(json.dumps({"sweep": str(sweep.resolve()), "entry": record["entry"],
                                                "input": record["input"], "shards": throughput}, indent=1))
    log.info("merged %d shards of %s: %d records -> %s", record["count"], record["entry"], len(ids), out)
    return result


def parse_args(argv: list[str]) -> tuple[Path, Path]:
    sweeps = [a for a in argv if "=" not in a]
    opts = dict(a.split("=", 1) for a in argv if "=" in a)
    if len(sweeps) != 1 or set(opts) != {"out"}:
        raise MergeError("usage: python -m evaluation.merge SWEEP_DIR out=DIR")
    return Path(sweeps[0]), Path(opts["out"])


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="[%(asctime)s][%(name)s][%(levelname)s] - %(message)s")
    try:
        merge(*parse_args(sys.argv[1:] if argv is None else argv))
    except ShardError as e:  # MergeError, or an entry point's own refusal: the message says what and where
        log.error("%s", e)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
