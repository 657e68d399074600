"""Resident memory of a whole command, sampled while it runs (training, evaluation): the process and its
children, every --every seconds, from psutil.

    python -m benchmarks.process_memory --name span_cpu -- python -m train.parser +experiment=span_cpu ...

Writes benchmarks/results/process_memory-NAME-<time>.json: the command, its exit code, wall seconds, peak
RSS (MB), and the sampled series [seconds, MB] so that growth (a leak) and plateaus (a cache) show.
The command's own output goes where it would; this script prints only its result JSON.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

import psutil

from benchmarks.common import machine, write_result


def tree_rss_mb(proc: psutil.Process) -> float:
    """RSS of a process and all its children (dataloader workers, torchrun ranks), MB."""
    total = 0
    for p in [proc, *proc.children(recursive=True)]:
        try:
            total += p.memory_info().rss
        except psutil.Error:  # a child that ended between listing and reading
            pass
    return total / 2**20


def sample(cmd: list[str], every: float) -> dict:
    start = time.monotonic()
    child = subprocess.Popen(cmd)
    proc, series = psutil.Process(child.pid), []
    while child.poll() is None:
        try:
            series.append([round(time.monotonic() - start, 1), round(tree_rss_mb(proc), 1)])
        except psutil.NoSuchProcess:
            break
        time.sleep(every)
    wall = time.monotonic() - start
    peak = max((mb for _, mb in series), default=0.0)
    return {"command": cmd, "returncode": child.wait(), "wall_s": round(wall, 1), "peak_rss_mb": peak,
            "samples": len(series), "every_s": every, "series": series}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--name", required=True, help="names the result file")
    ap.add_argument("--every", type=float, default=5.0, help="seconds between samples")
    ap.add_argument("--out", default=None)
    ap.add_argument("cmd", nargs=argparse.REMAINDER, help="-- then the command")
    a = ap.parse_args(argv)
    cmd = a.cmd[1:] if a.cmd[:1] == ["--"] else a.cmd
    if not cmd:
        ap.error("give the command after --")
    result = {"machine": machine(), **sample(cmd, a.every)}
    path = write_result(f"process_memory-{a.name}", result, a.out)
    print(json.dumps({k: v for k, v in result.items() if k != "series"} | {"result": str(path)}))
    sys.exit(result["returncode"])


if __name__ == "__main__":
    main()
