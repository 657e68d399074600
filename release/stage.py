"""Run one release stage and stamp it: python -m release.stage NAME --out PATH [--out PATH ...] -- CMD ...

Run from the release folder (Snakemake's working directory). The command runs with one thread
(OMP_NUM_THREADS=1: stages run side by side, one per core), its output goes to logs/NAME.log, and on
success stages/NAME.json records the command, the resolved Hydra config of its run, the wall time, the
peak RSS of its largest process, the sha256 of every file under the --out paths, and what the pipeline gave
it to read and run (release/inputs.py). A rerun that leaves every file as it was keeps the figures of the run
that wrote them and lists itself under "reruns". A failed stage
leaves no stamp and exits non-zero, naming the stage and the end of its log; whatever it wrote stays,
so the rerun resumes it by its own resume rule."""
from __future__ import annotations

import argparse
import os
import resource
import shlex
import subprocess
import sys
import time
from pathlib import Path

from release.stamps import built_with, file_entry, files_under, last_stamp, write_stamp

ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false",
              "HF_HUB_OFFLINE": os.environ.get("HF_HUB_OFFLINE", "1")}


def hydra_config(cmd: list[str], root: Path) -> str | None:
    """The resolved config the stage's entry point saved (<hydra.run.dir>/.hydra/config.yaml), as text."""
    run_dirs = [a.split("=", 1)[1] for a in cmd if a.startswith("hydra.run.dir=")]
    path = root / run_dirs[-1] / ".hydra" / "config.yaml" if run_dirs else None
    return path.read_text() if path is not None and path.exists() else None


def log_tail(path: Path, lines: int = 15) -> str:
    text = path.read_text(errors="replace").splitlines() if path.exists() else []
    return "\n".join(text[-lines:])


def run_stage(name: str, outs: list[str], cmd: list[str], root: Path = Path(".")) -> dict:
    log_path = root / "logs" / f"{name}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, **ONE_THREAD}
    start = time.perf_counter()
    with log_path.open("a", encoding="utf-8") as log:
        log.write(f"\n=== {time.strftime('%Y-%m-%d %H:%M:%S')} {shlex.join(cmd)}\n")
        log.flush()
        try:
            code = subprocess.call(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=root)
        except OSError as e:  # the command itself cannot start (a missing interpreter, a full disk)
            raise SystemExit(f"release stage {name} could not start: {e}") from None
    wall = time.perf_counter() - start
    if code != 0:
        tail = log_tail(log_path)
        cause = " (the disk is full)" if "No space left on device" in tail else ""
        raise SystemExit(f"release stage {name} failed with exit code {code}{cause}; the end of {log_path}:\n{tail}\n"
                         f"Finished stages are kept: fix the cause and run the same release command again.")
    # the largest child's peak (ru_maxrss is in KiB on Linux): each stage is one process tree per run
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    before = last_stamp(root, name) or {}
    previous = before.get("files", {})
    files = {str(f.relative_to(root)): file_entry(f, previous.get(str(f.relative_to(root))))
             for f in files_under(outs, root)}
    stamp = {"stage": name, "command": shlex.join(cmd), "config": hydra_config(cmd, root), "outputs": outs,
             "wall_s": round(wall, 1), "peak_rss_mb": round(peak_mb, 1),
             "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "files": files,
             "built_with": built_with(root, name)}  # what the pipeline gave it to read and run (release/inputs.py)
    if same_files(before, files) and before.get("command") == stamp["command"]:
        # the rerun (a resume that found the work done) wrote nothing new: the time and memory that made these
        # files stay the stage's figures, the rerun is listed beside them
        reruns = [*before.get("reruns", []), {"wall_s": stamp["wall_s"], "finished": stamp["finished"]}]
        stamp.update(wall_s=before["wall_s"], peak_rss_mb=before["peak_rss_mb"], finished=before["finished"],
                     reruns=reruns)
    write_stamp(root, name, stamp)
    return stamp


def same_files(before: dict, files: dict) -> bool:
    old = before.get("files") or {}
    return bool(old) and old.keys() == files.keys() and all(old[k]["sha256"] == files[k]["sha256"] for k in files)


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--" not in argv:
        raise SystemExit("usage: python -m release.stage NAME --out PATH [--out PATH ...] -- CMD ...")
    cut = argv.index("--")
    parser = argparse.ArgumentParser(prog="python -m release.stage")
    parser.add_argument("name")
    parser.add_argument("--out", action="append", default=[], required=True)
    args = parser.parse_args(argv[:cut])
    stamp = run_stage(args.name, args.out, argv[cut + 1:])
    print(f"release stage {args.name}: {stamp['wall_s']:.0f} s, peak RSS {stamp['peak_rss_mb']:.0f} MB, "
          f"{len(stamp['files'])} files")


if __name__ == "__main__":
    main()
