"""Everything a GPU node without internet access (no model hub, no package index) needs to train the
span parser, in one folder small enough to copy beside the repository (under 64 MiB):
python -m launch.offline_gpu_bundle [--out gpu_bundle]

  gpu_bundle/minilm/          all-MiniLM-L6-v2 with its weights in fp16 (45 MB; loaded back as fp32)
  gpu_bundle/processed.tar.xz the processed records data=offline trains and evaluates on (+ the test sets)
  gpu_bundle/wheels/          the Python packages a bare PyTorch image lacks (hydra-core, omegaconf, antlr4, datasets, ...)

launch/span_one_gpu.sh runs there with it. MPNet (219 MB in fp16) does not fit one carry.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tarfile
from pathlib import Path

# missing on a bare PyTorch image (seen: Python 3.12, torch 2.11) or older there (transformers 5.17): pure Python,
# at the versions installed here
WHEELS = ["hydra-core", "omegaconf", "datasets", "dill", "multiprocess", "transformers"]
SDISTS = ["antlr4-python3-runtime"]  # no wheel on PyPI: built here (pure Python)
FILES = ["qanom.train", "qasrl-bank.train-offline", "qasrl-gs.dev", "qanom.dev", "qasrl-gs.test", "qanom.test"]


def pack_minilm(out: Path) -> None:
    import torch
    from transformers import AutoModel, AutoTokenizer

    from models.model_paths import minilm_path

    model = AutoModel.from_pretrained(minilm_path(), dtype=torch.float32)
    model.half().save_pretrained(out)
    model.config.dtype = "float32"  # load it back as fp32 master weights (the trainer's bf16 is autocast)
    model.config.save_pretrained(out)
    AutoTokenizer.from_pretrained(minilm_path()).save_pretrained(out)


def pack_data(processed: Path, out: Path) -> None:
    with tarfile.open(out, "w:xz") as tar:
        for name in FILES:
            f = processed / f"{name}.jsonl"
            if not f.exists():
                raise SystemExit(f"{f}: missing; run python -m data_prep.build first")
            tar.add(f, arcname=f.name)


def pinned(names: list[str]) -> list[str]:
    from importlib.metadata import version

    return [f"{n}=={version(n)}" for n in names]


def pack_wheels(out: Path) -> None:
    platform = ["--python-version", "3.12", "--implementation", "py", "--only-binary=:all:", "--no-deps"]
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "-d", str(out), *platform, *pinned(WHEELS)], check=True)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), *pinned(SDISTS)], check=True)


def main(argv=None) -> Path:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="gpu_bundle")
    ap.add_argument("--processed", default="data/processed")
    ap.add_argument("--no-wheels", action="store_true", help="leave the wheels out (no pip: repack the weights and records only)")
    a = ap.parse_args(argv)
    out = Path(a.out)
    (out / "wheels").mkdir(parents=True, exist_ok=True)
    pack_minilm(out / "minilm")
    pack_data(Path(a.processed), out / "processed.tar.xz")
    if not a.no_wheels:
        pack_wheels(out / "wheels")
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    print(f"{out}: {size / 2**20:.1f} MiB (copied beside the repository to the GPU node)")
    return out


if __name__ == "__main__":
    main()
