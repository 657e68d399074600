"""The release's dry run (`python -m release PROFILE DIR --dry-run`) of this checkout against another checkout of
the repo (the baseline, e.g. `git worktree add B COMMIT` or `git archive COMMIT | tar -x -C B`), alternating, each
run a fresh process: in a new folder (cold: nothing of an earlier run kept) and again in the same folder (warm: what
the first run kept). Medians of wall and CPU seconds (the children's user + sys), the ratio baseline / this, and
whether both computed the same stages (`.inputs/stages.json`: each stage's inputs and command, byte for byte).

    python -m benchmarks.release_dry_run --baseline B --label COMMIT [--profile full] [--repeats 3]
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import ROOT, machine, write_result


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def dry_run(repo: Path, profile: str, release: Path) -> tuple[float, float]:
    """(wall s, CPU s) of one dry run of `repo`'s release pipeline in `release`."""
    env = {**os.environ, "PYTHONPATH": str(repo)}
    cpu, start = children_cpu(), time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "release", profile, str(release), "--dry-run"], cwd=repo, env=env,
                          capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{repo}: the dry run failed:\n{done.stderr[-3000:]}")
    return wall, children_cpu() - cpu


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", type=Path, required=True, help="another checkout of the repo")
    ap.add_argument("--profile", default="full")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--label", default="baseline", help="what the baseline is (a commit), for the result")
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args(argv)
    repos = {"baseline": a.baseline.resolve(), "this": ROOT}
    runs = {name: {"cold": [], "warm": []} for name in repos}
    records = {}
    work = Path(tempfile.mkdtemp(prefix="release-dry-run-"))
    try:
        for i in range(a.repeats):
            for name in (list(repos) if i % 2 == 0 else list(repos)[::-1]):  # the order alternates
                release = work / f"{name}-{i}"
                for state in ("cold", "warm"):
                    wall, cpu = dry_run(repos[name], a.profile, release)
                    runs[name][state].append({"wall_s": round(wall, 2), "cpu_s": round(cpu, 2)})
                records.setdefault(name, (release / ".inputs" / "stages.json").read_text())
    finally:
        shutil.rmtree(work, ignore_errors=True)
    out = {"machine": machine(), "profile": a.profile, "repeats": a.repeats, "baseline": a.label, "runs": runs,
           "same_stages": records["baseline"] == records["this"]}
    for state in ("cold", "warm"):
        for measure in ("wall_s", "cpu_s"):
            med = {n: statistics.median(r[measure] for r in runs[n][state]) for n in repos}
            out[f"{state}_{measure}_median"] = med
            out[f"{state}_{measure}_ratio"] = round(med["baseline"] / med["this"], 2)
    path = write_result("release_dry_run", out, a.out)
    for state in ("cold", "warm"):
        print(f"{state}: wall {out[f'{state}_wall_s_median']} (baseline / this {out[f'{state}_wall_s_ratio']}x), "
              f"CPU {out[f'{state}_cpu_s_median']} ({out[f'{state}_cpu_s_ratio']}x)")
    print(f"same stages: {out['same_stages']}; written to {path}")
    return out


if __name__ == "__main__":
    main()
