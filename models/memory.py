"""Resident memory of a long scoring run. Tensors of a new shape for every reference and batch leave
glibc's heap fragmented: freed blocks stay in the process, so RSS climbs with the number of references
scored. QASEM_MALLOC_TRIM=1 hands the free pages back once per response (malloc_trim): on 24 test
responses +229 MB instead of +897 MB, but it costs CPU time (15 % more user time on 25 CLI responses:
every response faults its pages in again), so it is off by default. Measured in docs/experiments/scoring.md ("Memory").

QASEM_PAD_MULTIPLE=N pads inference batches to a multiple of N (subwords, and words for the parser's span
grid), so that a long run allocates tensors of a few sizes instead of one per batch length and glibc can
reuse its freed blocks: the consistency CLI on the benchmark's test split peaked at 1.35 GB with N=32 and
2.26 GB with N=8, instead of 2.80 GB, with the same correlations, at 1.37x / 1.07x the scoring time
(benchmarks/padding_cost.py; docs/experiments/scoring.md, "Memory"). Padding is masked: the scores do not change
(tested). Off by default (1: each batch's own length): time is the scarcer resource on these machines.

jemalloc instead of glibc's malloc (use_jemalloc, called by every evaluation CLI before it starts): it hands
freed pages back on its own, so the blocks of past shapes do not pile up. The consistency CLI on the
benchmark's test split peaks at 1.91 GB instead of 3.29 GB, with the same scores, at 1.07-1.10x the wall
time (benchmarks/allocator_cost.py; docs/experiments/scoring.md, "Memory").
QASEM_ALLOCATOR=glibc keeps glibc's."""
from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import sys


@functools.cache
def _trim():
    try:
        return ctypes.CDLL(ctypes.util.find_library("c")).malloc_trim
    except (OSError, AttributeError, TypeError):  # not glibc: nothing to hand back this way
        return None


def pad_multiple() -> int | None:
    """QASEM_PAD_MULTIPLE as a tokenizer's pad_to_multiple_of (None: unset or 1, no bucketing)."""
    m = int(os.environ.get("QASEM_PAD_MULTIPLE", "1") or 1)
    return m if m > 1 else None


def padded_length(n: int, multiple: int | None = None) -> int:
    """n rounded up to a multiple of `multiple`, or of QASEM_PAD_MULTIPLE when not given (1: n itself)."""
    m = (multiple if multiple is not None else pad_multiple()) or 1
    return -(-int(n) // m) * m


def release_free_memory() -> bool:
    """Hand the heap's free pages back to the system (glibc malloc_trim); False where the C library
    has no malloc_trim (nothing changes) or QASEM_MALLOC_TRIM=1 does not turn it on."""
    trim = _trim() if os.environ.get("QASEM_MALLOC_TRIM", "0") == "1" else None
    return bool(trim(0)) if trim is not None else False


# Debian / Ubuntu's libjemalloc2 (scripts/system_packages.sh installs it where the user may), then other usual places
JEMALLOC_PATHS = ("/usr/lib/x86_64-linux-gnu/libjemalloc.so.2", "/usr/lib/aarch64-linux-gnu/libjemalloc.so.2",
                  "/usr/lib64/libjemalloc.so.2", "/usr/lib/libjemalloc.so.2", "/usr/local/lib/libjemalloc.so.2")


def jemalloc_path(candidates=JEMALLOC_PATHS) -> str | None:
    """The jemalloc shared library: QASEM_JEMALLOC if set (it must exist), else the first of `candidates`."""
    given = os.environ.get("QASEM_JEMALLOC")
    if given:
        if not os.path.isfile(given):
            raise FileNotFoundError(f"QASEM_JEMALLOC={given}: no such file")
        return given
    return next((c for c in candidates if os.path.isfile(c)), None)


def use_jemalloc(candidates=JEMALLOC_PATHS) -> str:
    """Run this command under jemalloc: re-execute it (the same interpreter and arguments) with the library in
    LD_PRELOAD, which must be set before the process starts. Returns what the process uses, when it does not
    re-execute: "jemalloc" (already preloaded), "glibc" (QASEM_ALLOCATOR=glibc), or "glibc (no jemalloc found)",
    which it also says on stderr. Call it first in a script's __main__ block, never from library code."""
    choice = os.environ.get("QASEM_ALLOCATOR", "jemalloc")
    if choice not in ("jemalloc", "glibc"):
        raise ValueError(f"QASEM_ALLOCATOR={choice!r}: use jemalloc or glibc")
    if choice == "glibc":
        return "glibc"
    preload = os.environ.get("LD_PRELOAD", "")
    if "libjemalloc" in preload:  # preloaded (by us or the caller); also what stops a second re-execution
        return "jemalloc"
    path = jemalloc_path(candidates)
    if path is None:
        print("QASEM_ALLOCATOR: no jemalloc found (apt-get install libjemalloc2): glibc's malloc, whose resident "
              "memory grows further on long runs (models/memory.py)", file=sys.stderr)
        return "glibc (no jemalloc found)"
    env = {**os.environ, "LD_PRELOAD": " ".join(filter(None, [path, preload]))}
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, *sys.orig_argv[1:]], env)
    raise AssertionError("unreachable: execve returned")  # pragma: no cover
