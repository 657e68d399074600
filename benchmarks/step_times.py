"""Seconds per training step, read back from a training log's progress bar (tqdm's `N/TOTAL [elapsed<...`):
the mean per window of --window steps, and the profile inside a window in --bucket-step buckets (the median over windows).

    python -m benchmarks.step_times --name span_mpnet_120_lr1e4 outputs/run.log

Why: tqdm shows a smoothed s/it, which swings 1-7 s under `group_by_length` (HF's LengthGroupedSampler sorts
each megabatch of 50 batches longest-first), and read by eye looks like a slowdown. The per-window means say
whether the run really slowed. Windows holding an evaluation are slower; the median of the means ignores them.
Writes benchmarks/results/step_times-NAME-<time>.json.
"""
from __future__ import annotations

import argparse
import re
import statistics
import sys

from benchmarks.common import write_result

# tqdm's "  123/20100 [1:02:03<..." or "[02:03<...": the step and the elapsed wall time.
PROGRESS = re.compile(r"(\d+)/(\d+) \[(?:(\d+):)?(\d+):(\d+)<")


def elapsed_by_step(text: str) -> dict[int, int]:
    """{step: elapsed seconds} from every progress-bar update in the text (the last one per step wins)."""
    out: dict[int, int] = {}
    for m in PROGRESS.finditer(text):
        hours, minutes, seconds = (int(g) if g else 0 for g in m.group(3, 4, 5))
        out[int(m.group(1))] = hours * 3600 + minutes * 60 + seconds
    return out


def mean_step(elapsed: dict[int, int], first: int, steps: int) -> float | None:
    """Mean s/step over steps first+1 .. first+steps, or None where the log lacks either end."""
    if first in elapsed and first + steps in elapsed:
        return (elapsed[first + steps] - elapsed[first]) / steps
    return None


def window_starts(elapsed: dict[int, int], window: int) -> range:
    return range(0, max(elapsed, default=0) - window + 1, window)


def window_means(elapsed: dict[int, int], window: int) -> list[tuple[int, float]]:
    """[(first step, mean s/step)] for each complete window of steps the log shows both ends of."""
    means = ((s, mean_step(elapsed, s, window)) for s in window_starts(elapsed, window))
    return [(s, m) for s, m in means if m is not None]


def profile(elapsed: dict[int, int], window: int, bucket: int) -> list[float]:
    """The sawtooth's shape: for each bucket's offset inside a window, the median over windows of its mean s/step."""
    per_offset = [[mean_step(elapsed, s + k * bucket, bucket) for s in window_starts(elapsed, window)]
                  for k in range(window // bucket)]
    return [round(statistics.median(v), 2) if v else float("nan")
            for v in ([m for m in ms if m is not None] for ms in per_offset)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log", help="a training log holding tqdm's progress bar")
    ap.add_argument("--name", required=True)
    ap.add_argument("--window", type=int, default=50, help="steps per window (LengthGroupedSampler: 50 batches)")
    ap.add_argument("--bucket", type=int, default=10)
    ap.add_argument("--out", default=None, help="result JSON path (default: benchmarks/results/...)")
    args = ap.parse_args(argv)
    with open(args.log, encoding="utf-8", errors="replace") as f:
        elapsed = elapsed_by_step(f.read())
    if len(elapsed) < args.window + 1:
        sys.exit(f"{args.log}: {len(elapsed)} progress-bar steps found, need more than --window {args.window}")
    means = window_means(elapsed, args.window)
    values = [m for _, m in means]
    result = {"log": args.log, "steps": max(elapsed), "window": args.window,
              "median_s_per_step": round(statistics.median(values), 3),
              "first_quarter_median": round(statistics.median(values[: max(1, len(values) // 4)]), 3),
              "last_quarter_median": round(statistics.median(values[-max(1, len(values) // 4):]), 3),
              "profile_in_window": profile(elapsed, args.window, args.bucket),
              "window_means": [[s, round(m, 3)] for s, m in means]}
    path = write_result(f"step_times-{args.name}", result, args.out)
    print({k: v for k, v in result.items() if k != "window_means"}, f"-> {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
