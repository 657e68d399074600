#!/usr/bin/env bash
# The `deepspeed` launcher (one node, or several through a hostfile) running train.parser; pick the
# ZeRO stage with deepspeed=zero2|zero3 (the t5xl experiment already sets zero3).
#   bash launch/deepspeed_launcher.sh +experiment=t5xl                                 # all GPUs here
#   NUM_GPUS=4 bash launch/deepspeed_launcher.sh +experiment=t5xl
#   HOSTFILE=hosts.txt bash launch/deepspeed_launcher.sh +experiment=t5xl               # several nodes
#   NUM_GPUS=2 bash launch/deepspeed_launcher.sh +experiment=tiny deepspeed=zero2       # no GPU: 2 CPU ranks
# --no_local_rank: the launcher would otherwise append --local_rank=N, which Hydra rejects (each rank
# reads LOCAL_RANK from the environment instead). The run directory is chosen here, once, for all ranks.
# It runs the project's .venv (VENV=DIR: another environment; on several nodes, the same path on each).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# The project's environment (bash scripts/setup.sh makes it): its torchrun and its Python, whatever is on PATH.
VENV="${VENV:-$ROOT/.venv}"
[[ -x "$VENV/bin/python" ]] || { echo "no Python environment at $VENV: run bash scripts/setup.sh first (or set VENV=DIR)" >&2; exit 1; }

RUN_DIR="$(realpath -m "${RUN_DIR:-$ROOT/outputs/parser/$(date +%Y-%m-%d_%H-%M-%S)}")"
mkdir -p "$RUN_DIR"
launcher_args=(--master_port "${MASTER_PORT:-29500}")
[[ -n "${NUM_GPUS:-}" ]] && launcher_args+=(--num_gpus "$NUM_GPUS")
[[ -n "${HOSTFILE:-}" ]] && launcher_args+=(--hostfile "$HOSTFILE")
echo "run dir: $RUN_DIR"

cd "$ROOT"
exec "$VENV/bin/deepspeed" "${launcher_args[@]}" --no_local_rank --module "${MODULE:-train.parser}" "$@" \
  "hydra.run.dir=$RUN_DIR"
