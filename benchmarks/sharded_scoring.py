"""Sharded scoring against one process: `evaluation.consistency` on the same QASemConsistency responses, once as
one process at its default threads, once as N shards through Hydra's submitit_local launcher (real processes, one
thread each, as torchrun gives its ranks) followed by `python -m evaluation.merge`, the two alternating, medians.

    python -m benchmarks.sharded_scoring --release DIR                       # dev + test responses, 2 shards, 3 repeats
    python -m benchmarks.sharded_scoring --release DIR --splits test --repeats 1     # the test split, bytes compared once
    python -m benchmarks.sharded_scoring --release DIR --copies 6 --one-thread      # also one process at one thread: the bound
    python -m benchmarks.sharded_scoring --release DIR --copies 3 --shared-cache    # the shards share parsed references on disk
    python -m benchmarks.sharded_scoring --release DIR --copies 5 --one-thread --ceiling   # and what the machine allows

Every run is a whole command (process start, model loading, scoring, files). The fixed cost is measured apart: the
same one-process command on one response (start, imports, loading), and its share of the one-process time is
reported (the workload must make it small, or the ratio measures loading). `--ceiling` measures what the machine
gives N processes at all: N one-thread one-process runs of the whole workload at once, against one process at its
default threads (`ceiling` = N x its time / theirs). No split into N shards can beat it: the shards load the models as
often, and share the cores, caches and memory bandwidth the same way. Each run records the load average
before it (`uptime`): on a machine shared with other jobs the ratio can mean little, and the result says so.
`same_bytes`: the merged reports.jsonl, summary.json and report.html equal the one-process files in every repeat.
Result: benchmarks/results/sharded_scoring-<time>.json.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import ROOT, machine, median, write_result

OUTPUTS = ("reports.jsonl", "summary.json", "report.html")


def write_pairs(data_dir: Path, splits: list[str], path: Path, limit: int | None = None, copies: int = 1) -> int:
    """The benchmark's responses as evaluation.consistency pairs (reference, the response's sentences: the parser
    finds the QAs, as for a user's own responses); `copies` > 1 repeats them under new ids (`ID#k`), so that a fast
    scorer's workload is large enough for loading to be a small share of it."""
    from evaluation.consistency_benchmark import load_responses

    rows = []
    for split in splits:
        responses, _ = load_responses(data_dir / "qasem-consistency" / f"{split}.jsonl", split)
        rows += [{"id": r["id"], "reference": r["reference"], "generated": r["sentences"]} for r in responses]
    rows = rows[:limit] if limit else rows
    if copies > 1:
        rows = [{**r, "id": f"{r['id']}#{k}"} for k in range(copies) for r in rows]
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return len(rows)


def load_average() -> float:
    return round(os.getloadavg()[0], 2)


def timed_together(cmds: list[list[str]], env: dict, logs: list[Path]) -> float:
    """Seconds until all of `cmds`, started at once, have finished."""
    t0 = time.perf_counter()
    files = [log.open("w") for log in logs]
    procs = [subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=f, stderr=subprocess.STDOUT) for cmd, f in zip(cmds, files)]
    codes = [p.wait() for p in procs]
    seconds = time.perf_counter() - t0
    for f in files:
        f.close()
    if any(codes):
        sys.exit(f"failed ({codes}): {' '.join(cmds[0])}; logs: {', '.join(map(str, logs))}")
    return seconds


def timed(cmd: list[str], env: dict, log: Path) -> float:
    return timed_together([cmd], env, [log])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--release", default=None, help="a release folder (bash scripts/release.sh PROFILE DIR)")
    ap.add_argument("overrides", nargs="*", help="more evaluation.consistency options (parser=DIR entailment=DIR "
                    "detector=DIR in place of --release)")
    ap.add_argument("--data", default=os.environ.get("QASEM_DATA_DIR", "data/raw"), help="the raw data folder")
    ap.add_argument("--splits", default="dev,test", help="QASemConsistency splits whose responses are scored")
    ap.add_argument("--responses", type=int, default=None, help="the first N responses (smoke runs)")
    ap.add_argument("--copies", type=int, default=1, help="each response this many times, under new ids (a larger "
                    "workload, so that loading stays under 5 %% of the one-process time)")
    ap.add_argument("--shards", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--shared-cache", action="store_true", help="the shards share one reference_cache folder (new "
                    "each repeat), as one process shares its references in memory")
    ap.add_argument("--one-thread", action="store_true", help="also one process at one thread: how much its default "
                    "threads gain over one (`threads_gain`), which bounds what N one-thread shards can gain over it")
    ap.add_argument("--ceiling", action="store_true", help="also N one-thread one-process runs of the whole workload at "
                    "once: the most N processes get from this machine (`ceiling`)")
    ap.add_argument("--work", default=None, help="where the runs write (default: a temporary folder, removed)")
    ap.add_argument("--out", default=None, help="result JSON path (default: benchmarks/results/...)")
    a = ap.parse_args()

    work = Path(a.work or tempfile.mkdtemp(prefix="sharded_scoring-"))
    work.mkdir(parents=True, exist_ok=True)
    pairs = work / "pairs.jsonl"
    n = write_pairs(Path(a.data), a.splits.split(","), pairs, a.responses, a.copies)
    one_pair = work / "one_pair.jsonl"
    one_pair.write_text(pairs.read_text(encoding="utf-8").splitlines(True)[0], encoding="utf-8")
    base = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}  # one process: torch's default threads
    sharded_env = {**base, "OMP_NUM_THREADS": "1"}  # one thread per shard, as torchrun sets per rank
    score = [sys.executable, "-m", "evaluation.consistency", *([f"release={a.release}"] if a.release else []),
             "progress=false", *a.overrides]

    runs = {"one_process": [], "sharded": [], "fixed_cost": []}
    if a.one_thread:
        runs["one_process_one_thread"] = []
    if a.ceiling:
        runs["together"] = []
    for rep in range(a.repeats):
        d = work / f"r{rep}"
        plan = {"one_process": lambda: timed([*score, f"pairs={pairs}", f"hydra.run.dir={d / 'one'}"], base,
                                             d / "one.log"),
                "sharded": lambda: timed([*score[:3], "-m", *score[3:], f"pairs={pairs}", f"shard.count={a.shards}",
                                          *([f"reference_cache={d / 'shared_cache'}"] if a.shared_cache else []),
                                          f"shard.index=range({a.shards})", "hydra/launcher=submitit_local",
                                          f"hydra.sweep.dir={d / 'sweep'}"], sharded_env, d / "sweep.log")
                + timed([sys.executable, "-m", "evaluation.merge", str(d / "sweep"), f"out={d / 'merged'}"], base,
                        d / "merge.log"),
                "fixed_cost": lambda: timed([*score, f"pairs={one_pair}", f"hydra.run.dir={d / 'fixed'}"], base,
                                            d / "fixed.log"),
                "one_process_one_thread": lambda: timed([*score, f"pairs={pairs}", f"hydra.run.dir={d / 'one1'}"],
                                                        sharded_env, d / "one1.log"),
                "together": lambda: timed_together(
                    [[*score, f"pairs={pairs}", f"hydra.run.dir={d / f'together{k}'}"] for k in range(a.shards)],
                    sharded_env, [d / f"together{k}.log" for k in range(a.shards)])}
        plan = {k: v for k, v in plan.items() if k in runs}
        d.mkdir(parents=True, exist_ok=True)
        names = list(plan)
        for name in names[rep % 2:] + names[:rep % 2]:  # the order alternates: neither is always first
            load = load_average()
            seconds = plan[name]()
            runs[name].append({"seconds": round(seconds, 2), "load_before": load})
            print(f"repeat {rep} {name}: {seconds:.1f} s (load before {load})", flush=True)
        same = all((d / "one" / f).read_bytes() == (d / "merged" / f).read_bytes() for f in OUTPUTS)
        runs["sharded"][-1]["same_bytes"] = same
        shards = json.loads((d / "merged" / "shards.json").read_text())["shards"]
        runs["sharded"][-1]["shards"] = shards

    t = {k: median([r["seconds"] for r in v]) for k, v in runs.items()}
    loads = [r["load_before"] for v in runs.values() for r in v]
    result = {"machine": machine(), "release": a.release, "overrides": a.overrides, "splits": a.splits, "responses": n,
              "shards": a.shards, "repeats": a.repeats, "shared_cache": a.shared_cache,
              "one_process": {"seconds": t["one_process"], "responses_per_s": n / t["one_process"]},
              "sharded": {"seconds": t["sharded"], "responses_per_s": n / t["sharded"]},
              "speedup": t["one_process"] / t["sharded"],
              "fixed_cost_seconds": t["fixed_cost"], "fixed_cost_share": t["fixed_cost"] / t["one_process"],
              "same_bytes": all(r["same_bytes"] for r in runs["sharded"]),
              **({"one_process_one_thread": {"seconds": t["one_process_one_thread"]},
                  "speedup_vs_one_thread": t["one_process_one_thread"] / t["sharded"],
                  "threads_gain": t["one_process_one_thread"] / t["one_process"],
                  # N one-thread shards gain at most N x over one thread, so over the default threads at most
                  # N / threads_gain (less the merge and the loading each shard repeats)
                  "speedup_bound": a.shards * t["one_process"] / t["one_process_one_thread"]}
                 if a.one_thread else {}),
              **({"together": {"seconds": t["together"], "processes": a.shards},
                  # N processes did N times the one-process work in this time: the most N shards can gain
                  "ceiling": a.shards * t["one_process"] / t["together"],
                  "share_of_ceiling": t["together"] / (a.shards * t["sharded"])}
                 if a.ceiling else {}),
              "load_before_runs": {"min": min(loads), "max": max(loads)}, "cpu_count": os.cpu_count(), "runs": runs}
    print(f"{n} responses ({a.splits}); one process {t['one_process']:.1f} s, {a.shards} shards + merge "
          f"{t['sharded']:.1f} s (medians of {a.repeats}): {result['speedup']:.2f}x")
    if a.one_thread:
        print(f"one process at one thread {t['one_process_one_thread']:.1f} s: its default threads gain "
              f"{result['threads_gain']:.2f}x, so {a.shards} one-thread shards can gain at most "
              f"{result['speedup_bound']:.2f}x over it; the shards reach {result['speedup_vs_one_thread']:.2f}x "
              "over one thread")
    if a.ceiling:
        print(f"{a.shards} one-thread processes, each the whole workload, at once: {t['together']:.1f} s, so this "
              f"machine gives {a.shards} processes at most {result['ceiling']:.2f}x one process; the shards reach "
              f"{100 * result['share_of_ceiling']:.0f}% of it")
    print(f"fixed cost (start + load + 1 response) {t['fixed_cost']:.1f} s = {100 * result['fixed_cost_share']:.1f}% "
          f"of the one-process time; merged bytes equal one process: {result['same_bytes']}")
    if max(loads) > 0.5 * (os.cpu_count() or 1):
        print(f"WARNING: load average before the runs {min(loads)}-{max(loads)} on {os.cpu_count()} cores: other jobs "
              "shared the cores, the ratio measures them too", file=sys.stderr)
    print("wrote", write_result("sharded_scoring", result, a.out))
    if not a.work:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
