"""What the benchmarks share: the composed train_parser config, real records, the machine's
description, and one place results are written (benchmarks/results/NAME-<time>.json)."""
from __future__ import annotations

import datetime as dt
import json
import os
import platform
import random
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
# the build reads the raw releases from paths.data_dir: $QASEM_DATA_DIR when set, else data/raw (conf/paths/default.yaml)
BUILD_HINT = ("python -m data_prep.download (the raw releases into data/raw), then python -m data_prep.build "
              "(or paths.data_dir=DIR, or QASEM_DATA_DIR=DIR, for a copy of the releases elsewhere)")


def compose_config(name: str, overrides: list[str]):
    """conf/NAME.yaml with Hydra overrides, exactly as its entry point sees it."""
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        return compose(config_name=name, overrides=list(overrides))


def compose_parser_config(overrides: list[str]):
    """conf/train_parser.yaml with Hydra overrides, exactly as `python -m train.parser` sees it."""
    return compose_config("train_parser", overrides)


def processed_dir(cfg) -> Path:
    p = Path(cfg.paths.processed_dir)
    return p if p.is_absolute() else ROOT / p


def load_records(cfg, names: list[str], n: int, seed: int) -> list[dict]:
    """A seeded sample of n records from the union of `<processed_dir>/<name>.jsonl` files."""
    from data_prep.records import read_jsonl

    folder = processed_dir(cfg)
    missing = [name for name in names if not (folder / f"{name}.jsonl").exists()]
    if missing:
        raise SystemExit(f"records {missing} are not in {folder}; build them first: {BUILD_HINT}")
    records = [r for name in names for r in read_jsonl(folder / f"{name}.jsonl")]
    return random.Random(seed).sample(records, min(n, len(records)))


def machine() -> dict:
    import torch

    cpu = ""
    try:
        cpu = next(ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name"))
    except (OSError, StopIteration):
        pass
    info = {"date": dt.datetime.now().isoformat(timespec="seconds"), "host": platform.node(), "cpu": cpu,
            "cpu_count": os.cpu_count(), "torch_threads": torch.get_num_threads(), "torch": torch.__version__,
            "python": platform.python_version()}
    if hasattr(os, "getloadavg"):
        info["loadavg_1m_at_start"] = round(os.getloadavg()[0], 2)  # another job on the cores skews everything
    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(0)
    return info


def add_run_options(ap, seed: int = 0) -> None:
    """The options every CPU benchmark takes: --repeats (medians over them), --threads, --seed, --out."""
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=None, help="torch threads (1 beside another busy job)")
    ap.add_argument("--seed", type=int, default=seed)
    ap.add_argument("--out", default=None, help="result JSON path (default: benchmarks/results/...)")


def start_run(a) -> None:
    """Apply --threads and say whether the machine is busy, before anything is timed."""
    import torch

    if a.threads:
        torch.set_num_threads(a.threads)
    warn_if_busy()


def warn_if_busy() -> None:
    """Two torch threads on two cores that another job also uses can run 10-90x slower (the OpenMP
    threads wait on each other): say so, since every figure would be skewed."""
    import torch

    if hasattr(os, "getloadavg") and os.getloadavg()[0] > 0.5 * (os.cpu_count() or 1):
        print(f"WARNING: the CPU is busy (load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores): figures will be "
              f"skewed; rerun when it is free{' or pass --threads 1' if torch.get_num_threads() > 1 else ''}.",
              file=sys.stderr)


def timed_rounds(runs: dict, repeats: int) -> tuple[dict[str, list[float]], dict]:
    """Each run (name -> a function of no arguments) once per repeat, the order rotating by one every
    repeat so that no run is always first: the seconds of each, and each run's last output."""
    import time

    names = list(runs)
    times: dict[str, list[float]] = {n: [] for n in names}
    outputs = {}
    for rep in range(repeats):
        k = rep % len(names)
        for n in names[k:] + names[:k]:
            t0 = time.perf_counter()
            outputs[n] = runs[n]()
            times[n].append(time.perf_counter() - t0)
            print(f"repeat {rep} {n}: {times[n][-1]:.1f} s")
    return times, outputs


def median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def write_result(name: str, result: dict, out: str | None = None) -> Path:
    path = Path(out) if out else RESULTS / f"{name}-{dt.datetime.now().strftime('%Y%m%d-%H%M%S')}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2, default=str) + "\n")
    return path
