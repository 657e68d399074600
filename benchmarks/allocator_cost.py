"""glibc's malloc against jemalloc for the consistency CLI (models/memory.py, use_jemalloc): the same command
on the same responses, the two allocators alternating, each run a fresh process; medians of wall and user
time, and each run's own peak RSS (the kernel's count for that child, os.wait4). The scores must be equal.

    python -m benchmarks.allocator_cost --parser P --detector DET --entailment E [--responses N] [--repeats 3] [--threads 1]

Prints one JSON object: glibc / jemalloc ({wall_s, user_s, peak_rss_mb: medians, runs}), time_ratio
(jemalloc / glibc wall), rss_ratio, and same_metrics (the runs' metrics.json equal but for run times).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import ROOT, machine, median, write_result

ALLOCATORS = ("glibc", "jemalloc")


def run_cli(args: list[str], allocator: str, threads: int, run_dir: Path) -> dict:
    """One consistency-benchmark process under `allocator`: wall, user seconds and peak RSS of that child."""
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    env.update(QASEM_ALLOCATOR=allocator, OMP_NUM_THREADS=str(threads), HF_HUB_OFFLINE="1")
    cmd = [sys.executable, "-m", "evaluation.consistency_benchmark", *args, "html=false", "progress=false",
           f"hydra.run.dir={run_dir}"]
    run_dir.mkdir(parents=True, exist_ok=True)
    log = run_dir / "stderr.log"  # a file, not a pipe: a full pipe would stall the child
    with open(log, "w") as err:
        start = time.monotonic()
        child = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=err)
        # wait4 on the pid the exec keeps: rusage of this child alone, jemalloc's re-execution included
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.monotonic() - start
    # os.wait4 reaped the child: tell Popen, or it would wait on (and warn about) a pid that is gone
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({child.returncode}):\n{log.read_text()[-2000:]}")
    metrics = json.loads((run_dir / "metrics.json").read_text())
    return {"wall_s": round(wall, 2), "user_s": round(usage.ru_utime, 2), "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
            "metrics": metrics}


def scores_of(metrics: dict) -> str:
    """metrics.json without what differs between equal runs (times, paths of the run)."""
    return json.dumps({k: v for k, v in metrics.items() if k in ("benchmark_qas", "parser_qas", "data")}, sort_keys=True)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--parser", required=True)
    ap.add_argument("--detector", required=True)
    ap.add_argument("--entailment", required=True)
    ap.add_argument("--split", default="test")
    ap.add_argument("--responses", type=int, default=None, help="the first N responses (default: all)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    args = [f"parser={a.parser}", f"detector={a.detector}", f"entailment={a.entailment}", f"split={a.split}"]
    if a.responses:
        args.append(f"data.limit={a.responses}")
    runs = {n: [] for n in ALLOCATORS}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(a.repeats):
            for name in (ALLOCATORS if i % 2 == 0 else ALLOCATORS[::-1]):  # alternate who goes first
                runs[name].append(run_cli(args, name, a.threads, Path(tmp) / f"{name}{i}"))
                r = runs[name][-1]
                print(f"{name} run {i + 1}: {r['wall_s']} s wall, {r['user_s']} s user, {r['peak_rss_mb']} MB",
                      file=sys.stderr)
    scores = {scores_of(r["metrics"]) for rs in runs.values() for r in rs}
    summary = {n: {key: median([r[key] for r in runs[n]]) for key in ("wall_s", "user_s", "peak_rss_mb")}
               | {"runs": [{k: v for k, v in r.items() if k != "metrics"} for r in runs[n]]} for n in ALLOCATORS}
    result = {"machine": machine(), "args": vars(a), **summary,
              "time_ratio": round(summary["jemalloc"]["wall_s"] / summary["glibc"]["wall_s"], 3),
              "user_time_ratio": round(summary["jemalloc"]["user_s"] / summary["glibc"]["user_s"], 3),
              "rss_ratio": round(summary["jemalloc"]["peak_rss_mb"] / summary["glibc"]["peak_rss_mb"], 3),
              "same_metrics": len(scores) == 1}
    print(json.dumps(result, indent=2))
    write_result("allocator_cost", result, a.out)
    return result


if __name__ == "__main__":
    main()
