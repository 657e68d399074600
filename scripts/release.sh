#!/usr/bin/env bash
# Train, evaluate and gather every shipped model into one folder with manifest.json: bash scripts/release.sh PROFILE DIR [--dry-run] [--extra-seeds S ..] [resume=auto|never] [hub=push hub.repo_id=ORG/NAME]
# PROFILE: quick (smoke runs, ~40 min on 2 cores), full (the shipped models, three contradiction seeds included; its time: the README) or tiny (tests); release/profiles/.
# Run again, it trains nothing; killed, it continues where it stopped. Data: $QASEM_DATA_DIR, else ../shared/data.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || bash scripts/setup.sh   # a fresh clone: install first
. .venv/bin/activate
export TOKENIZERS_PARALLELISM=false WANDB_MODE="${WANDB_MODE:-offline}"   # the stages run with HF_HUB_OFFLINE=1
python -m release "$@"
