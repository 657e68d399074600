#!/usr/bin/env bash
# One node, N processes (one per GPU): DDP, or DeepSpeed ZeRO-2/3 through the HF Trainer (deepspeed=zero2|zero3).
#   bash launch/torchrun_single_node.sh +experiment=t5xl                         # every GPU of this node
#   NPROC_PER_NODE=4 RUN_DIR=outputs/parser/xl bash launch/torchrun_single_node.sh +experiment=t5xl
#   NPROC_PER_NODE=2 bash launch/torchrun_single_node.sh +experiment=tiny        # no GPU: 2 CPU ranks over gloo
# Arguments are Hydra overrides for train.parser (MODULE=train.entailment picks another entry point).
# The run directory is chosen here, once, and passed to every rank as hydra.run.dir: ranks that
# resolve ${now:} themselves can start a second or two apart and split the run over two folders.
# Starting the same command with the same RUN_DIR again resumes from its last checkpoint. It runs the
# project's .venv (VENV=DIR: another environment), never a torchrun that happens to be on PATH.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# The project's environment (bash scripts/setup.sh makes it): its torchrun and its Python, whatever is on PATH.
VENV="${VENV:-$ROOT/.venv}"
[[ -x "$VENV/bin/python" ]] || { echo "no Python environment at $VENV: run bash scripts/setup.sh first (or set VENV=DIR)" >&2; exit 1; }

if [[ -z "${NPROC_PER_NODE:-}" ]]; then
  NPROC_PER_NODE=$( (nvidia-smi -L 2>/dev/null || true) | grep -c '^GPU' || true)
  [[ "$NPROC_PER_NODE" -gt 0 ]] || NPROC_PER_NODE=1
fi
RUN_DIR="$(realpath -m "${RUN_DIR:-$ROOT/outputs/parser/$(date +%Y-%m-%d_%H-%M-%S)}")"
mkdir -p "$RUN_DIR"
echo "run dir: $RUN_DIR  ($NPROC_PER_NODE processes)"

cd "$ROOT"  # the configs' relative paths (data/processed, outputs) are relative to the repo
exec "$VENV/bin/torchrun" --standalone --nproc_per_node "$NPROC_PER_NODE" -m "${MODULE:-train.parser}" "$@" \
  "hydra.run.dir=$RUN_DIR"
