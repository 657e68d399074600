"""bf16 only where it is fast. On a CUDA GPU, or a CPU with AVX512-BF16 or AMX, bf16 matmuls run natively
(1.6-2.7x fp32 on the Xeon these figures were first taken on). On a CPU without them (an AMD EPYC without
AVX512, older Xeons) PyTorch emulates them: the predicate detector's first training steps took 131 s and
103 s each in bf16 autocast on such a machine (2026-12-02). So a run that asks for bf16 (the CPU
configs do: `trainer.args.bf16`, `encoder.trainer.args.bf16`, a checkpoint trained with it) gets it only where it is
native, and fp32 elsewhere, with one warning that says why."""
from __future__ import annotations

import functools
import logging

log = logging.getLogger(__name__)


def native_bf16() -> bool:
    """Whether bf16 matmuls run natively here: a CUDA GPU, or a CPU with AVX512-BF16 or AMX."""
    import torch

    if torch.cuda.is_available():
        return True
    cpu = torch.cpu
    return bool(getattr(cpu, "_is_avx512_bf16_supported", lambda: False)()
                or getattr(cpu, "_is_amx_tile_supported", lambda: False)())


@functools.cache
def _warn(what: str) -> None:
    log.warning("%s: bf16 asked for, but this CPU has no AVX512-BF16 or AMX (bf16 would be emulated, many times "
                "slower than fp32): running in fp32 (models/precision.py)", what)


def usable_bf16(requested, what: str = "bf16") -> bool:
    """`requested` where bf16 is native here, else False (warned once per `what`)."""
    if not requested:
        return False
    if native_bf16():
        return True
    _warn(what)
    return False
