"""Progress bars with an ETA (tqdm) on the long loops of inference, and the one summary line each
run ends with. One switch per run: the entry points set it from their `progress` option; tqdm
itself stays silent when stderr is not a terminal (logs, CI), the usual convention. Inner bars
(batches of one call) vanish when done, so only the outer loop stays on screen."""
from __future__ import annotations

import logging
import time

from tqdm.auto import tqdm

_enabled = True


def set_enabled(on: bool) -> None:
    global _enabled
    _enabled = bool(on)


def progress(iterable, desc: str, total: int | None = None, unit: str = "it", enabled: bool = True):
    return tqdm(iterable, desc=desc, total=total, unit=unit, leave=False, mininterval=1.0, dynamic_ncols=True,
                disable=None if _enabled and enabled else True)


def log_summary(logger: logging.Logger, what: str, items: int, unit: str, seconds: float, extra: str = "") -> str:
    """'<what>: N <unit> in T s (R <unit>/s)<extra>', logged and returned."""
    rate = items / seconds if seconds > 0 else float("nan")
    line = f"{what}: {items} {unit} in {seconds:.1f} s ({rate:.2f} {unit}/s){extra}"
    logger.info(line)
    return line


def run_with_summary(logger: logging.Logger, what: str, cfg, run, items, unit: str, extra=None):
    """An entry point's run: the bars switched by `cfg.progress`, `run()` called, and the summary
    line logged from its result (`items(result)` of `unit`, `extra(result)` appended)."""
    set_enabled(cfg.progress)
    start = time.perf_counter()
    out = run()
    log_summary(logger, what, items(out), unit, time.perf_counter() - start, extra(out) if extra else "")
    return out
