#!/usr/bin/env bash
# Set up (if needed) and run the whole test suite against the real data: bash scripts/test.sh [pytest args]
# The data directory is $QASEM_DATA_DIR, else ../shared/data beside the repo.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. .venv/bin/activate
export QASEM_DATA_DIR="${QASEM_DATA_DIR:-$(cd .. && pwd)/shared/data}"
export WANDB_MODE=offline WANDB_SILENT=true HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
python -m pytest -q "$@"
