"""Distributed training gives the loss of one process, and every rank works in one run directory.

Slow tests (2 CPU processes over gloo, the tiny experiment, 4 steps each): one process with
per-device batch 4 against 2 ranks x 2 through each launcher in launch/:
  DDP        launch/torchrun_single_node.sh          (torchrun --nproc_per_node 2)
  ZeRO-2     launch/deepspeed_launcher.sh            (deepspeed --no_local_rank --module train.parser)
  ZeRO-3     launch/accelerate_deepspeed_zero3.yaml  (accelerate launch ... -m train.parser)
Dropout is 0 and the global batches are the same examples in the same order, so the per-step
losses agree up to one known difference: each rank averages its own tokens and the ranks' means are
averaged, where one process averages all tokens of the batch (about 0.1-0.3% here). A loss scaled
by the world size (transformers 5 with `accepts_loss_kwargs` left on for T5) is off by 100%.
ZeRO-2 / ZeRO-3 must equal DDP to float precision.

Fast tests run the launch scripts against stub commands: one run directory, computed once, passed
to every rank as hydra.run.dir.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
LAUNCH = ROOT / "launch"
BIN = Path(sys.executable).parent

COMMON = ["+experiment=tiny", "model.dropout_rate=0", "data.max_train=8", "trainer.args.max_steps=4",
          "trainer.args.eval_steps=4", "trainer.args.learning_rate=1e-3", "logger=none", "hub=none",
          "resume=never"]
SINGLE_BATCH = ["trainer.args.per_device_train_batch_size=4"]
RANK_BATCH = ["trainer.args.per_device_train_batch_size=2"]
RUN_TIMEOUT = 420  # a first DeepSpeed run JIT-builds its shared-memory op (about a minute)
REL_TO_SINGLE = 1e-2
REL_TO_DDP = 1e-4

# An audit hook every Python process of a run loads (through PYTHONPATH): it records which rank
# opened which file for writing under the run directory.
AUDIT = textwrap.dedent('''
    import atexit, os, sys
    _dir, _log = os.environ.get("QASEM_AUDIT_DIR"), os.environ.get("QASEM_AUDIT_LOG")
    _seen, _busy = set(), [False]
    def _hook(event, args):
        if event != "open" or _busy[0] or not _dir:
            return
        path, mode, flags = (list(args) + [None, None])[:3]
        writing = any(c in mode for c in "wax+") if isinstance(mode, str) else bool((flags or 0) & (os.O_WRONLY | os.O_RDWR))
        if writing and isinstance(path, (str, bytes, os.PathLike)):
            p = os.path.abspath(os.fsdecode(path))
            if p.startswith(_dir):
                _seen.add(p)
    def _dump():
        _busy[0] = True
        if _log and _seen:
            with open(f"{_log}.{os.getpid()}", "w") as f:
                json.dump({"rank": os.environ.get("RANK"), "written": sorted(_seen)}, f)
    import json
    if _dir:
        sys.addaudithook(_hook)
        atexit.register(_dump)
''')


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(tmp: Path, run_dir: Path) -> dict:
    audit = tmp / "audit"
    audit.mkdir(exist_ok=True)
    (audit / "sitecustomize.py").write_text(AUDIT)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_"))}
    env.update(PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}", PYTHONPATH=f"{audit}{os.pathsep}{ROOT}",
               QASEM_AUDIT_DIR=str(run_dir), QASEM_AUDIT_LOG=str(tmp / "writes"),
               CUDA_VISIBLE_DEVICES="", DS_ACCELERATOR="cpu", WANDB_MODE="offline", WANDB_SILENT="true",
               HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false",
               VENV=str(BIN.parent),  # the launchers run this test's own environment
               OMP_NUM_THREADS="1")  # as torchrun sets per rank; 2 threads on 2 busy cores run ~10-90x slower
    return env


def _run(cmd: list[str], tmp: Path, run_dir: Path, extra_env: dict | None = None) -> dict:
    """Run one training command; returns {run_dir, losses per step, results, writes by rank}."""
    env = {**_env(tmp, run_dir), **(extra_env or {})}
    log = tmp / "run.log"
    with open(log, "w") as out:
        try:
            proc = subprocess.run(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, timeout=RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            pytest.fail(f"timed out after {RUN_TIMEOUT}s: {' '.join(cmd)}\n{log.read_text()[-4000:]}")
    if proc.returncode != 0:
        pytest.fail(f"exit {proc.returncode}: {' '.join(cmd)}\n{log.read_text()[-6000:]}")
    states = sorted(run_dir.glob("checkpoints/checkpoint-*/trainer_state.json"),
                    key=lambda p: int(p.parent.name.split("-")[1]))
    history = json.loads(states[-1].read_text())["log_history"]
    writes: dict[str, set[str]] = {}
    for f in tmp.glob("writes.*"):
        rec = json.loads(f.read_text())
        writes.setdefault(str(rec["rank"]), set()).update(Path(p).relative_to(run_dir).as_posix() for p in rec["written"])
    return {"run_dir": run_dir, "log": log,
            "losses": [h["loss"] for h in history if "loss" in h and "step" in h],
            "results": json.loads((run_dir / "all_results.json").read_text()), "writes": writes}


def _launch(tmp_path_factory, name: str, cmd_for) -> dict:
    tmp = tmp_path_factory.mktemp(name)
    run_dir = tmp / "run"
    outputs = tmp / "outputs"  # where a rank that resolved ${now:} by itself would have written
    run = _run(cmd_for(run_dir, [*COMMON, f"paths.output_dir={outputs}"]), tmp, run_dir)
    run["stray_outputs"] = sorted(p.relative_to(outputs).as_posix() for p in outputs.rglob("*")) if outputs.exists() else []
    return run


@pytest.fixture(scope="module")
def single(tmp_path_factory):
    return _launch(tmp_path_factory, "single",
                   lambda rd, ov: [sys.executable, "-m", "train.parser", *ov, *SINGLE_BATCH, f"hydra.run.dir={rd}"])


@pytest.fixture(scope="module")
def ddp(tmp_path_factory):
    def cmd(rd, ov):
        return ["env", "NPROC_PER_NODE=2", f"RUN_DIR={rd}", "bash", str(LAUNCH / "torchrun_single_node.sh"),
                *ov, *RANK_BATCH]
    return _launch(tmp_path_factory, "ddp", cmd)


def _same_losses(run: dict, ref: dict, rel: float, what: str) -> None:
    a, b = run["losses"], ref["losses"]
    assert len(a) == len(b) == 4, f"{what}: expected 4 logged steps, got {a} vs {b}"
    for step, (x, y) in enumerate(zip(a, b), 1):
        assert x == pytest.approx(y, rel=rel), f"{what}: step {step} loss {x} vs {y} (all: {a} vs {b})"
    assert run["results"]["train_loss"] == pytest.approx(ref["results"]["train_loss"], rel=rel)


def _one_run_dir_rank0_writes(run: dict, world: int = 2) -> None:
    assert not run["stray_outputs"], f"a rank wrote outside hydra.run.dir: {run['stray_outputs']}"
    ranks = {r: w for r, w in run["writes"].items() if r not in ("None",)}
    assert set(ranks) == {str(r) for r in range(world)}, f"writes seen from ranks {sorted(run['writes'])}"
    for rank, written in ranks.items():  # every rank's Hydra job (config, log) lives in the one run dir
        assert ".hydra/config.yaml" in written, f"rank {rank} did not run in {run['run_dir']}: {sorted(written)}"
    for name in ("all_results.json", "dev_metrics.json", "dev_predictions.jsonl"):
        by = sorted(r for r, w in ranks.items() if name in w)
        assert by == ["0"], f"{name} written by ranks {by}; only rank 0 may write it"


SPAN = ["+experiment=span_tiny", "data.max_train=8", "trainer.args.max_steps=4", "trainer.args.eval_steps=4",
        "trainer.args.learning_rate=1e-3", "logger=none", "hub=none", "resume=never"]


@pytest.fixture(scope="module")
def span_runs(tmp_path_factory):
    """The span parser (dropout 0 in span_tiny): 1 process x 4 and DDP 2 ranks x 2."""
    def single(rd, ov):
        return [sys.executable, "-m", "train.parser", *ov, *SINGLE_BATCH, f"hydra.run.dir={rd}"]

    def ddp(rd, ov):
        return ["env", "NPROC_PER_NODE=2", f"RUN_DIR={rd}", "bash", str(LAUNCH / "torchrun_single_node.sh"),
                *ov, *RANK_BATCH]
    out = {}
    for name, cmd in (("single", single), ("ddp", ddp)):
        tmp = tmp_path_factory.mktemp(f"span-{name}")
        out[name] = _run(cmd(tmp / "run", [*SPAN, f"paths.output_dir={tmp / 'outputs'}"]), tmp, tmp / "run")
        out[name]["stray_outputs"] = []
    return out


# ---------------------------------------------------------------------------------------- slow
@pytest.mark.slow
def test_span_parser_ddp_matches_single_process(span_runs):
    """The span BCE is a per-predicate sum averaged over the batch (exact across ranks); the
    question cross-entropy is a mean over each rank's answer spans, and the mean of the two ranks'
    means differs from the whole batch's by a few percent of that term: hence 5e-2. A loss scaled by
    the world size would be off by 100%."""
    _same_losses(span_runs["ddp"], span_runs["single"], 5e-2, "span DDP (torchrun, 2 ranks x 2) vs 1 process x 4")
    _one_run_dir_rank0_writes(span_runs["ddp"])


@pytest.mark.slow
def test_single_process_baseline(single):
    losses = single["losses"]
    assert len(losses) == 4 and all(9 < x < 12 for x in losses), losses  # ~ln(30k vocab) for a random tiny T5
    assert single["writes"].get("None") and "all_results.json" in single["writes"]["None"]


@pytest.mark.slow
def test_ddp_torchrun_matches_single_process(ddp, single):
    _same_losses(ddp, single, REL_TO_SINGLE, "DDP (torchrun, 2 ranks x 2) vs 1 process x 4")
    _one_run_dir_rank0_writes(ddp)


@pytest.mark.slow
def test_zero2_deepspeed_launcher_matches(tmp_path_factory, single, ddp):
    def cmd(rd, ov):
        return ["env", "NUM_GPUS=2", f"MASTER_PORT={_free_port()}", f"RUN_DIR={rd}", "bash",
                str(LAUNCH / "deepspeed_launcher.sh"), *ov, *RANK_BATCH, "deepspeed=zero2"]
    run = _launch(tmp_path_factory, "zero2", cmd)
    step = run["run_dir"] / "checkpoints" / "checkpoint-4" / "global_step4"  # a DeepSpeed checkpoint, stage 2:
    assert (step / "mp_rank_00_model_states.pt").exists()                   # one replicated model state
    _same_losses(run, single, REL_TO_SINGLE, "ZeRO-2 vs 1 process")
    _same_losses(run, ddp, REL_TO_DDP, "ZeRO-2 vs DDP")
    _one_run_dir_rank0_writes(run)


@pytest.mark.slow
def test_zero3_accelerate_matches(tmp_path_factory, single, ddp):
    def cmd(rd, ov):
        return ["accelerate", "launch", "--config_file", str(LAUNCH / "accelerate_deepspeed_zero3.yaml"),
                "--num_processes", "2", "--main_process_port", str(_free_port()), "-m", "train.parser",
                *ov, *RANK_BATCH, "deepspeed=zero3", f"hydra.run.dir={rd}"]
    run = _launch(tmp_path_factory, "zero3", cmd)
    _same_losses(run, single, REL_TO_SINGLE, "ZeRO-3 vs 1 process")
    _same_losses(run, ddp, REL_TO_DDP, "ZeRO-3 vs DDP")
    _one_run_dir_rank0_writes(run)
    step = run["run_dir"] / "checkpoints" / "checkpoint-4" / "global_step4"  # stage 3: model states sharded
    assert (step / "zero_pp_rank_1_mp_rank_00_model_states.pt").exists()
    # best/ holds the gathered 16-bit weights (not ZeRO-3's empty placeholders), equal to DDP's
    from safetensors.torch import load_file

    z3 = load_file(str(run["run_dir"] / "best" / "model.safetensors"))
    ref = load_file(str(ddp["run_dir"] / "best" / "model.safetensors"))
    assert set(z3) == set(ref)
    for name, t in ref.items():
        assert z3[name].shape == t.shape, name
        assert (z3[name].float() - t.float()).abs().max().item() < 1e-4, name


def _untied_t5_checkpoint(folder: Path) -> Path:
    """A tiny T5 saved as FLAN-T5 / T5 v1.1 are: config tie_word_embeddings=false and an lm_head.weight
    of its own, different from shared.weight (with the MiniLM tokenizer and the format's tokens)."""
    import torch
    from safetensors.torch import save_file
    from transformers import T5Config, T5ForConditionalGeneration

    from models.parser.qa_format import get_format
    from models.parser.seq2seq_model import build_tokenizer

    tok = build_tokenizer("minilm", get_format("qasem_parser"))
    config = T5Config(vocab_size=len(tok), d_model=16, d_kv=4, d_ff=32, num_layers=1, num_heads=2,
                      feed_forward_proj="gated-gelu", tie_word_embeddings=False, dropout_rate=0.0,
                      decoder_start_token_id=tok.pad_token_id, pad_token_id=tok.pad_token_id,
                      eos_token_id=tok.sep_token_id)
    torch.manual_seed(0)
    state = {k: v.clone().contiguous() for k, v in T5ForConditionalGeneration(config).state_dict().items()
             if not k.endswith("embed_tokens.weight")}
    state["lm_head.weight"] = torch.randn(len(tok), 16) * 0.5 + 0.2
    folder.mkdir(parents=True)
    save_file(state, str(folder / "model.safetensors"), metadata={"format": "pt"})
    cfg = {**config.to_dict(), "tie_word_embeddings": False, "architectures": ["T5ForConditionalGeneration"]}
    (folder / "config.json").write_text(json.dumps(cfg))
    tok.save_pretrained(folder)
    return folder


@pytest.mark.slow
def test_zero3_keeps_untied_lm_head_of_pretrained_t5(tmp_path_factory):
    """Under zero.Init transformers 5.24 ties FLAN-T5's own LM head to the embedding (and on CPU the
    load fails); models.parser.seq2seq_model.full_weights_load loads outside it."""
    from safetensors.torch import load_file

    ckpt = _untied_t5_checkpoint(tmp_path_factory.mktemp("untied") / "ckpt")

    def cmd(rd, ov):
        return ["torchrun", "--standalone", "--nproc_per_node", "2", "-m", "train.parser", *ov, *RANK_BATCH,
                "model=t5_small", f"model.name={ckpt}", "model.generation.max_new_tokens=24", "deepspeed=zero3",
                f"hydra.run.dir={rd}"]
    run = _launch(tmp_path_factory, "zero3_pretrained", cmd)
    saved, ref = load_file(str(run["run_dir"] / "best" / "model.safetensors")), load_file(str(ckpt / "model.safetensors"))
    assert "lm_head.weight" in saved, "the LM head was saved tied to the embedding"
    # 4 AdamW steps at lr 1e-3 move a weight by at most ~4e-3: still the checkpoint's head, not its embedding
    assert (saved["lm_head.weight"].float() - ref["lm_head.weight"]).abs().max() < 0.05


# ---------------------------------------------------------------------------------------- fast

def _stub_bin(tmp: Path, names: list[str]) -> Path:
    """Commands that record their argv (one JSON list per call) instead of running anything."""
    d = tmp / "stubbin"
    d.mkdir(exist_ok=True)
    for name in names:
        p = d / name
        p.write_text(f'#!{sys.executable}\nimport json, os, sys\n'
                     f'open(os.environ["STUB_LOG"], "a").write(json.dumps(["{name}"] + sys.argv[1:]) + "\\n")\n')
        p.chmod(0o755)
    (d / "scontrol").write_text("#!/bin/sh\nprintf 'gpu-node-07\\ngpu-node-08\\n'\n")
    (d / "scontrol").chmod(0o755)
    return d


def _fake_repo(tmp: Path, venv: bool = True) -> Path:
    """A copy of launch/ in a temporary repo root, so default run dirs land under tmp, not outputs/; with `venv`,
    its .venv holds python, torchrun and deepspeed that record their argv as "venv:NAME" (the PATH's stubs do not)."""
    repo = tmp / "repo"
    shutil.copytree(LAUNCH, repo / "launch")
    if venv:
        bin_dir = repo / ".venv" / "bin"
        bin_dir.mkdir(parents=True)
        for name in ("python", "torchrun", "deepspeed"):
            p = bin_dir / name
            p.write_text(f'#!{sys.executable}\nimport json, os, sys\n'
                         f'open(os.environ["STUB_LOG"], "a").write(json.dumps(["venv:{name}"] + sys.argv[1:]) + "\\n")\n')
            p.chmod(0o755)
    return repo


def _stub_run(tmp: Path, script: str, args: list[str], env_extra: dict, cwd: Path) -> list[list[str]]:
    repo = cwd
    stubs = _stub_bin(tmp, ["torchrun", "deepspeed", "srun"])
    log = tmp / "stub.log"
    log.unlink(missing_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "RUN_DIR", "NPROC", "NUM_GPUS", "VENV"))}
    env.update(PATH=f"{stubs}{os.pathsep}/usr/bin{os.pathsep}/bin", STUB_LOG=str(log), **env_extra)
    subprocess.run(["bash", str(repo / "launch" / script), *args], cwd=repo, env=env, check=True,
                   capture_output=True, text=True)
    return [json.loads(line) for line in log.read_text().splitlines()]


def _run_dirs(argv: list[str]) -> list[str]:
    return [a.split("=", 1)[1] for a in argv if a.startswith("hydra.run.dir=")]


TIMESTAMPED = re.compile(r"/outputs/parser/\d{4}-\d\d-\d\d_\d\d-\d\d-\d\d")


@pytest.mark.parametrize("path", sorted(p for p in LAUNCH.iterdir() if p.suffix in (".sh", ".sbatch", ".yaml")),
                         ids=lambda p: p.name)
def test_launch_file_opens_with_usage(path):
    lines = path.read_text().splitlines()
    body = lines[1:] if lines[0].startswith("#!") else lines
    assert body[0].startswith("# ") and len(body[0]) > 20, f"{path.name}: open with what it is for"
    header = "\n".join(ln for ln in lines[:15] if ln.startswith("#"))
    assert "train.parser" in header or "+experiment=" in header, f"{path.name}: show how to run it"
    if path.suffix != ".yaml":
        subprocess.run(["bash", "-n", str(path)], check=True)


def test_torchrun_script_one_run_dir(tmp_path):
    repo = _fake_repo(tmp_path)
    calls = _stub_run(tmp_path, "torchrun_single_node.sh", ["+experiment=tiny"], {"NPROC_PER_NODE": "2"}, repo)
    assert len(calls) == 1
    argv = calls[0]
    # the project's .venv runs it, not the torchrun on PATH
    assert argv[:5] == ["venv:torchrun", "--standalone", "--nproc_per_node", "2", "-m"] and argv[5] == "train.parser"
    dirs = _run_dirs(argv)
    assert len(dirs) == 1 and TIMESTAMPED.search(dirs[0]) and Path(dirs[0]).is_absolute()
    assert Path(dirs[0]).is_dir() and str(repo) in dirs[0]
    # an explicit RUN_DIR (relative to where the user stands) is honoured as an absolute path
    calls = _stub_run(tmp_path, "torchrun_single_node.sh", ["+experiment=tiny"],
                      {"NPROC_PER_NODE": "2", "RUN_DIR": "mine"}, repo)
    assert _run_dirs(calls[0]) == [str(repo / "mine")]


def test_deepspeed_script_no_local_rank(tmp_path):
    repo = _fake_repo(tmp_path)
    calls = _stub_run(tmp_path, "deepspeed_launcher.sh", ["+experiment=t5xl"], {"NUM_GPUS": "8"}, repo)
    argv = calls[0]
    assert argv[0] == "venv:deepspeed" and "--no_local_rank" in argv
    i = argv.index("--module")
    assert argv[i + 1] == "train.parser" and argv.index("--no_local_rank") < i
    assert argv[argv.index("--num_gpus") + 1] == "8"
    dirs = _run_dirs(argv)
    assert len(dirs) == 1 and TIMESTAMPED.search(dirs[0])


def test_slurm_script_rendezvous_and_requeue(tmp_path):
    repo = _fake_repo(tmp_path)
    env = {"SLURM_JOB_ID": "4242", "SLURM_NNODES": "2", "SLURM_JOB_NODELIST": "gpu-node-[07-08]",
           "SLURM_SUBMIT_DIR": str(repo), "SLURM_GPUS_ON_NODE": "8"}
    argv = _stub_run(tmp_path, "slurm_multinode.sbatch", ["+experiment=t5xl"], env, repo)[0]
    venv_torchrun = str(repo / ".venv" / "bin" / "torchrun")
    assert argv[0] == "srun" and venv_torchrun in argv and "torchrun" not in argv
    t = argv[argv.index(venv_torchrun):]
    flag = lambda name: t[t.index(name) + 1]
    assert flag("--nnodes") == "2" and flag("--nproc_per_node") == "8"
    assert flag("--rdzv_backend") == "c10d" and flag("--rdzv_endpoint") == "gpu-node-07:29500"
    assert flag("--rdzv_id") == "4242" and flag("-m") == "train.parser"
    dirs = _run_dirs(t)
    assert len(dirs) == 1 and TIMESTAMPED.search(dirs[0]) and dirs[0].endswith("_job4242")
    # a requeued job (same id, later) lands in the same run dir, so it resumes
    again = _stub_run(tmp_path, "slurm_multinode.sbatch", ["+experiment=t5xl"], env, repo)[0]
    assert _run_dirs(again) == dirs


@pytest.mark.parametrize("script", ["torchrun_single_node.sh", "deepspeed_launcher.sh", "slurm_multinode.sbatch"])
def test_a_launcher_without_the_venv_says_how_to_make_it(tmp_path, script):
    repo = _fake_repo(tmp_path, venv=False)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "RUN_DIR", "VENV"))}
    env.update(SLURM_JOB_ID="1", SLURM_NNODES="1", SLURM_JOB_NODELIST="n1", SLURM_SUBMIT_DIR=str(repo),
               PATH=f"{_stub_bin(tmp_path, ['torchrun', 'deepspeed', 'srun'])}{os.pathsep}/usr/bin{os.pathsep}/bin",
               STUB_LOG=str(tmp_path / "stub.log"))
    out = subprocess.run(["bash", str(repo / "launch" / script), "+experiment=tiny"], cwd=repo, env=env,
                         capture_output=True, text=True)
    assert out.returncode != 0 and not (tmp_path / "stub.log").exists()  # nothing started
    assert f"no Python environment at {repo / '.venv'}: run bash scripts/setup.sh first" in out.stderr


ACCELERATE_DS_KEYS_OWNED_BY_TRAINER = {  # accelerate raises when these come from both places
    "gradient_accumulation_steps", "gradient_clipping", "zero_stage", "offload_optimizer_device",
    "offload_param_device", "offload_param_nvme_path", "offload_optimizer_nvme_path", "zero3_save_16bit_model"}


@pytest.mark.parametrize("stage", [2, 3])
def test_accelerate_configs(stage):
    path = LAUNCH / f"accelerate_deepspeed_zero{stage}.yaml"
    cfg = yaml.safe_load(path.read_text())
    assert cfg["distributed_type"] == "DEEPSPEED" and cfg["num_processes"] >= 1
    assert not set(cfg["deepspeed_config"]) & ACCELERATE_DS_KEYS_OWNED_BY_TRAINER
    assert "mixed_precision" not in cfg  # bf16 comes from trainer.args (conf/deepspeed/zero*.yaml: auto)
    assert cfg["deepspeed_config"].get("zero3_init_flag", False) is (stage == 3)
    header = path.read_text()
    assert (f"accelerate launch --config_file launch/accelerate_deepspeed_zero{stage}.yaml -m train.parser" in header
            and f"deepspeed=zero{stage}" in header and "hydra.run.dir=" in header)
