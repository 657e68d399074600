#!/usr/bin/env bash
# Train the span parser for many epochs on one GPU and write its metrics and logs to a folder ($OUT).
# On a GPU node without internet access, from the repository root, with gpu_bundle/ copied beside it
# (python -m launch.offline_gpu_bundle here first): train the span parser on MiniLM for MINUTES, test it
# once (python -m train.parser +experiment=span_gpu_minilm, then evaluation.parser), and leave the metrics
# and logs in $OUT (run dir R = /tmp/span_gpu):
#   OUT=/path/to/results bash launch/span_one_gpu.sh
# MINUTES=6 by default (training; then dev and test evaluation, about a minute); extra args are Hydra overrides.
# No GPU (a smoke run here): SMOKE=1 bash launch/span_one_gpu.sh (2 steps, 20 dev predicates, CPU).
set -euo pipefail
PACK=${PACK:-gpu_bundle}
OUT=${OUT:-/tmp/span_one_gpu_out}
MINUTES=${MINUTES:-6}
R=${RUN_DIR:-/tmp/span_gpu}
mkdir -p "$OUT"
if [ -z "${SMOKE:-}" ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$PACK"/wheels/*.whl
    export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
    nvidia-smi --query-gpu=name,memory.total --format=csv > "$OUT/gpu.csv" || true
    extra=()
else
    MINUTES=null
    extra=(+trainer.args.max_steps=2 trainer.args.eval_steps=2 data.max_dev=10 trainer.args.use_cpu=true
           trainer.args.dataloader_num_workers=0 trainer.args.per_device_train_batch_size=4)
fi
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 WANDB_MODE=offline TOKENIZERS_PARALLELISM=false
DATA=$(mktemp -d)
tar -xJf "$PACK/processed.tar.xz" -C "$DATA"
python3 -m train.parser +experiment=span_gpu_minilm model.encoder="$PACK/minilm" paths.processed_dir="$DATA" \
    max_train_minutes="$MINUTES" hydra.run.dir="$R" "${extra[@]}" "$@" 2>&1 | tee "$OUT/train.log"
python3 -m evaluation.parser checkpoint="$R/best" paths.processed_dir="$DATA" hydra.run.dir="$R/test" 2>&1 | tee "$OUT/test.log"
cp "$R/all_results.json" "$R/dev_metrics.json" "$OUT/" 2>/dev/null || true
cp "$R/test/metrics.json" "$OUT/test_metrics.json"
cp "$R/best/parser_config.json" "$OUT/" 2>/dev/null || true
echo "results in $OUT: $(ls "$OUT" | tr '\n' ' ')"
