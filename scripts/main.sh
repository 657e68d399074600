#!/usr/bin/env bash
# Set up (if needed), build the processed records and run the main job, the ~6-minute CPU span-parser run: bash scripts/main.sh [hydra overrides]
# The data directory is $QASEM_DATA_DIR, else ../shared/data beside the repo; without releases the
# trainer falls back, loudly, to the shipped hand-written sample.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. .venv/bin/activate
if [ -z "${QASEM_DATA_DIR:-}" ] && [ -d ../shared/data ]; then export QASEM_DATA_DIR="$(cd .. && pwd)/shared/data"; fi
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
if [ -n "${QASEM_DATA_DIR:-}" ]; then python -m data_prep.build; fi
python -m train.parser "$@"
