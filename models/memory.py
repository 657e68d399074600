"""Resident memory of a long scoring run. Tensors of a new shape for every reference and batch leave
glibc's heap fragmented: freed blocks stay in the process, so RSS climbs with the number of references
scored. QASEM_MALLOC_TRIM=1 hands the free pages back once per response (malloc_trim): on 24 test
responses +229 MB instead of +897 MB, but it costs CPU time (15 % more user time on 25 CLI responses:
every response faults its pages in again), so it is off by default. Measured in docs/scoring.md ("Memory")."""
from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os


@functools.cache
def _trim():
    try:
        return ctypes.CDLL(ctypes.util.find_library("c")).malloc_trim
    except (OSError, AttributeError, TypeError):  # not glibc: nothing to hand back this way
        return None


def release_free_memory() -> bool:
    """Hand the heap's free pages back to the system (glibc malloc_trim); False where the C library
    has no malloc_trim (nothing changes) or QASEM_MALLOC_TRIM=1 does not turn it on."""
    trim = _trim() if os.environ.get("QASEM_MALLOC_TRIM", "0") == "1" else None
    return bool(trim(0)) if trim is not None else False
